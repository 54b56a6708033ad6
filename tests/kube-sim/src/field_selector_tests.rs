//! Unit tests of field selectors: syntax, per-kind conversion and matching.

use super::*;
use crate::builtin;
use crate::registry::Registry;
use serde_json::json;

fn fields_of(group: &str, plural: &str) -> SelectableFields {
    let registry = Registry::with_types(builtin::builtin_types());
    let rt = registry.lookup(group, "v1", plural).unwrap();
    SelectableFields::of(&rt, None)
}

fn custom(namespaced: bool, crd: &Value) -> SelectableFields {
    let mut rt = (*Registry::with_types(builtin::builtin_types())
        .lookup("", "v1", "configmaps")
        .unwrap())
    .clone();
    rt.defined_by = Some("widgets.example.com".to_owned());
    rt.namespaced = namespaced;
    SelectableFields::of(&rt, Some(crd))
}

fn error(text: &str, fields: &SelectableFields) -> String {
    let error = FieldSelector::parse(text, fields).unwrap_err();
    assert_eq!(error.code, 400);
    error.message
}

#[test]
fn kinds_accept_only_their_selectable_fields() {
    let slices = fields_of("discovery.k8s.io", "endpointslices");
    assert!(FieldSelector::parse("metadata.name=a,metadata.namespace!=b", &slices).is_ok());
    assert_eq!(
        error("addressType=IPv4", &slices),
        "\"addressType\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    let services = fields_of("", "services");
    assert!(FieldSelector::parse("spec.type=ClusterIP,spec.clusterIP=None", &services).is_ok());
    assert_eq!(
        error("spec.selector=x", &services),
        "field label not supported: spec.selector"
    );
    let namespaces = fields_of("", "namespaces");
    assert!(FieldSelector::parse("status.phase=Active", &namespaces).is_ok());
    assert_eq!(
        error("metadata.namespace=x", &namespaces),
        "field label not supported: metadata.namespace"
    );
    assert!(FieldSelector::parse("type=Opaque", &fields_of("", "secrets")).is_ok());
    let events = fields_of("", "events");
    assert!(
        FieldSelector::parse(
            "involvedObject.name=a,source=b,reportingComponent=c",
            &events
        )
        .is_ok()
    );
    let new_events = fields_of("events.k8s.io", "events");
    assert!(FieldSelector::parse("regarding.name=a,reportingController=c", &new_events).is_ok());
    assert_eq!(
        error("involvedObject.name=a", &new_events),
        "field label not supported: involvedObject.name"
    );
}

#[test]
fn custom_resources_add_the_crd_selectable_fields() {
    let crd = json!({"spec": {"versions": [{"name": "v1", "selectableFields": [{"jsonPath": ".spec.color"}]}]}});
    let namespaced = custom(true, &crd);
    assert!(FieldSelector::parse("spec.color=red,metadata.namespace=a", &namespaced).is_ok());
    assert_eq!(
        error("spec.size=1", &namespaced),
        "field label not supported: spec.size"
    );
    let cluster = custom(false, &crd);
    assert_eq!(
        error("metadata.namespace=a", &cluster),
        "field label not supported: metadata.namespace"
    );
}

#[test]
fn syntax_errors_are_worded_as_fields_parse_selector_words_them() {
    let any = fields_of("", "configmaps");
    assert_eq!(
        error("metadata.name", &any),
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    );
    assert_eq!(
        error("metadata.name=a=b", &any),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        error("metadata.name=a\\x", &any),
        "invalid field selector: invalid escape sequence: \\x"
    );
    let escaped = FieldSelector::parse("metadata.name=a\\,b", &any).unwrap();
    assert_eq!(escaped.0[0].value, "a,b");
    assert!(FieldSelector::parse("", &any).unwrap().is_empty());
}

#[test]
fn fields_are_read_where_the_kind_keeps_them() {
    let events = fields_of("", "events");
    let event = Stored::new(
        json!({"metadata": {"name": "e", "namespace": "ns"}, "source": {"component": "kubelet"}, "count": 3}),
    );
    let matches = |text: &str| {
        FieldSelector::parse(text, &events)
            .unwrap()
            .matches_stored(&event)
    };
    assert!(matches(
        "source=kubelet,metadata.name=e,metadata.namespace==ns"
    ));
    assert!(matches("reason=,type!=Warning"));
    assert!(!matches("source!=kubelet"));
    assert_eq!(field_text(&event.value, "count"), "3");
}

#[test]
fn events_k8s_io_labels_read_the_stored_core_event() {
    let new_events = fields_of("events.k8s.io", "events");
    let stored = Stored::new(json!({"metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Service", "name": "web"},
        "reportingComponent": "ctl", "source": {"component": "kubelet"}}));
    let matches = |text: &str| {
        FieldSelector::parse(text, &new_events)
            .unwrap()
            .matches_stored(&stored)
    };
    assert!(matches(
        "regarding.kind=Service,regarding.name=web,reportingController=ctl,source=kubelet"
    ));
    assert!(!matches("regarding.name=other"));
}

#[test]
fn exact_matches_are_the_first_equality_term_of_the_label() {
    assert_eq!(
        exact_match("metadata.name=a", "metadata.name").as_deref(),
        Some("a")
    );
    assert_eq!(
        exact_match("spec.x=1,metadata.name==b\\,c", "metadata.name").as_deref(),
        Some("b,c")
    );
    assert_eq!(exact_match("metadata.name!=a", "metadata.name"), None);
    assert_eq!(exact_match("metadata.name", "metadata.name"), None);
    assert_eq!(exact_match("", "metadata.name"), None);
}
