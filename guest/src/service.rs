//! The Service step's decision ([Service propagation](../../docs/sync.md#service-propagation)):
//! how a member cluster's copy of the hub Service looks. The hub's Service is the template; a
//! member without it gets a copy minus the fields the member assigns, and a member whose ports,
//! type or selector differ gets the template's spec with its own assigned fields kept. Objects are `v1` Service JSON; `null` means absent, as
//! when the host decodes them into typed objects.
//!
//! Headless Services (`clusterIP: None`) stay headless: the copy keeps `clusterIP: None`. An API
//! server changes headlessness in neither direction in place (an update to `None` or to an
//! address is refused as immutable, and an empty `clusterIP` keeps `None`), so when the member's
//! Service is headless and the template is not, or the other way round, the member's Service
//! must be deleted and created again. Only a Service this controller created (labelled
//! [`CREATED_BY_LABEL`]) is ever deleted; another one is left alone and reported.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::{ServiceAction, ServicePort};

/// Fields of `spec` the member cluster assigns.
const ASSIGNED: [&str; 3] = ["clusterIP", "clusterIPs", "healthCheckNodePort"];

/// `spec.clusterIP` of a headless Service.
const HEADLESS: &str = "None";

/// The label, and its value, on the objects the sync controller creates in member clusters
/// (Services and Namespaces). A Service carrying it may be deleted and created again; nothing
/// without it is ever deleted.
pub const CREATED_BY_LABEL: &str = "networking.karmada.io/created-by";
pub const CREATED_BY: &str = "mcs-policy";

/// The decision for a member holding `existing` (`None`: no such Service) given `template`.
pub fn service(template: &str, existing: Option<&str>) -> Result<ServiceAction, String> {
    service_for(&decode_template(template)?, existing)
}

/// The hub's Service (JSON text) decoded, or why it is not a `v1` Service.
pub fn decode_template(template: &str) -> Result<Map<String, Value>, String> {
    decode(template, "template")
}

/// [`service`] with the template already decoded ([`decode_template`]): a sync pass decides
/// every member's Service from one template.
pub fn service_for(
    template: &Map<String, Value>,
    existing: Option<&str>,
) -> Result<ServiceAction, String> {
    let Some(existing) = existing else {
        return Ok(ServiceAction::Create(member_copy(template).to_string()));
    };
    let existing = decode(existing, "existing service")?;
    if !differs(template, &existing) {
        return Ok(ServiceAction::Unchanged);
    }
    if is_headless(template) == is_headless(&existing) {
        return Ok(ServiceAction::Replace(
            updated(template, &existing).to_string(),
        ));
    }
    if created_by_us(&existing) {
        return Ok(ServiceAction::Recreate(member_copy(template).to_string()));
    }
    Ok(ServiceAction::Conflict(headlessness_conflict(template)))
}

/// The ports of a decoded Service as the endpoint filter takes them: `spec.ports[]`'s `name`
/// (empty when absent) and `port`.
pub fn service_ports(service: &Map<String, Value>) -> Vec<ServicePort> {
    object(service, "spec")
        .map(|spec| {
            ports(spec)
                .into_iter()
                .filter_map(|p| {
                    Some(ServicePort {
                        name: p
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        port: i32::try_from(p.get("port")?.as_i64()?).ok()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a Service is headless (`spec.clusterIP: None`).
fn is_headless(service: &Map<String, Value>) -> bool {
    object(service, "spec")
        .and_then(|spec| present(spec, "clusterIP"))
        .is_some_and(|ip| ip == HEADLESS)
}

/// Whether the controller created this Service (it carries [`CREATED_BY_LABEL`]).
fn created_by_us(service: &Map<String, Value>) -> bool {
    object(service, "metadata")
        .and_then(|meta| object(meta, "labels"))
        .and_then(|labels| present(labels, CREATED_BY_LABEL))
        .is_some_and(|value| value == CREATED_BY)
}

/// Why a member's Service whose headlessness differs from the template's is left alone.
fn headlessness_conflict(template: &Map<String, Value>) -> String {
    let (want, have) = if is_headless(template) {
        ("headless (clusterIP: None)", "has a cluster IP")
    } else {
        ("not headless", "is headless (clusterIP: None)")
    };
    format!(
        "the hub's Service is {want} but the member's {have}; an API server cannot change that \
         in place and the member's Service was not created by mcs-policy (no \
         {CREATED_BY_LABEL}={CREATED_BY} label), so it is left alone: delete it to have it \
         created again"
    )
}

/// The object created in a member: the template's name, namespace, labels (plus
/// [`CREATED_BY_LABEL`]) and annotations, and its spec without the fields the member assigns
/// (a headless template's `clusterIP: None` is kept: it is a choice, not an assignment).
fn member_copy(template: &Map<String, Value>) -> Value {
    let mut metadata = Map::new();
    if let Some(meta) = object(template, "metadata") {
        for key in ["name", "namespace", "labels", "annotations"] {
            if let Some(value) = meta.get(key).filter(|v| !v.is_null()) {
                metadata.insert(key.to_string(), value.clone());
            }
        }
    }
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(CREATED_BY_LABEL.to_string(), CREATED_BY.into());
    }
    let headless = is_headless(template);
    let mut spec = object(template, "spec").cloned().unwrap_or_default();
    for key in ASSIGNED {
        spec.remove(key);
    }
    if headless {
        spec.insert("clusterIP".to_string(), HEADLESS.into());
    }
    for port in ports_mut(&mut spec) {
        port.remove("nodePort");
    }
    service_object(metadata, spec, None)
}

/// The member's Service (metadata, resourceVersion and status kept) with the template's spec,
/// keeping the member's clusterIP(s), healthCheckNodePort and the nodePort of each port it
/// already had (matched by name and port).
fn updated(template: &Map<String, Value>, existing: &Map<String, Value>) -> Value {
    let old = object(existing, "spec").cloned().unwrap_or_default();
    let copy = member_copy(template);
    let mut spec = copy
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for key in ASSIGNED {
        if let Some(value) = present(&old, key) {
            spec.insert(key.to_string(), value.clone());
        }
    }
    // The nodePort of the first old port with each name and number.
    let mut node_ports: BTreeMap<PortKey<'_>, Option<&Value>> = BTreeMap::new();
    for o in ports(&old) {
        node_ports
            .entry(port_key(o))
            .or_insert_with(|| present(o, "nodePort"));
    }
    let node_ports: BTreeMap<PortKey<'_>, Value> = node_ports
        .into_iter()
        .filter_map(|(key, node_port)| Some((key, node_port?.clone())))
        .collect();
    for port in ports_mut(&mut spec) {
        if let Some(node_port) = node_ports.get(&port_key(port)) {
            port.insert("nodePort".to_string(), node_port.clone());
        }
    }
    let metadata = object(existing, "metadata").cloned().unwrap_or_default();
    let status = object(existing, "status").cloned();
    service_object(metadata, spec, status)
}

/// Whether the template's ports, type, selector or headlessness differ from the member's
/// (API-server defaults and member-assigned nodePorts ignored).
fn differs(template: &Map<String, Value>, existing: &Map<String, Value>) -> bool {
    let empty = Map::new();
    let t = object(template, "spec").unwrap_or(&empty);
    let e = object(existing, "spec").unwrap_or(&empty);
    is_headless(template) != is_headless(existing)
        || compared_ports(t) != compared_ports(e)
        || kind(t) != kind(e)
        || object(t, "selector").unwrap_or(&empty) != object(e, "selector").unwrap_or(&empty)
}

fn kind(spec: &Map<String, Value>) -> &str {
    present(spec, "type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

/// The ports as compared: no nodePort, no null fields, `protocol` defaulting to `TCP` and
/// `targetPort` to the port.
fn compared_ports(spec: &Map<String, Value>) -> Vec<Map<String, Value>> {
    ports(spec)
        .into_iter()
        .map(|p| {
            let mut port: Map<String, Value> = p
                .iter()
                .filter(|(k, v)| !v.is_null() && k.as_str() != "nodePort")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            port.entry("protocol").or_insert_with(|| "TCP".into());
            if let Some(number) = present(p, "port").cloned() {
                port.entry("targetPort").or_insert(number);
            }
            port
        })
        .collect()
}

fn service_object(
    metadata: Map<String, Value>,
    spec: Map<String, Value>,
    status: Option<Map<String, Value>>,
) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), "v1".into());
    out.insert("kind".into(), "Service".into());
    out.insert("metadata".into(), Value::Object(metadata));
    out.insert("spec".into(), Value::Object(spec));
    if let Some(status) = status {
        out.insert("status".into(), Value::Object(status));
    }
    let mut out = Value::Object(out);
    strip_nulls(&mut out);
    out
}

/// `null` fields are absent fields: drop them everywhere in an object we write.
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn present<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

fn object<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    present(map, key).and_then(Value::as_object)
}

fn ports(spec: &Map<String, Value>) -> Vec<&Map<String, Value>> {
    present(spec, "ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect()
}

fn ports_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    spec.get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// A port's name and number, which identify it across the template and the member's Service.
type PortKey<'a> = (Option<&'a str>, Option<i64>);

fn port_key(port: &Map<String, Value>) -> PortKey<'_> {
    (
        present(port, "name").and_then(Value::as_str),
        port.get("port").and_then(Value::as_i64),
    )
}

// ---------------------------------------------------------------------------------------------
// Decoding: a `v1` Service whose fields the rules read have their Kubernetes types.

fn decode(text: &str, what: &str) -> Result<Map<String, Value>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("{what} does not decode: {e}"))?;
    let Value::Object(object) = value else {
        return Err(format!("{what} is not a Service: not a JSON object"));
    };
    check(&object).map_err(|e| format!("{what} is not a Service: {e}"))?;
    Ok(object)
}

fn check(service: &Map<String, Value>) -> Result<(), String> {
    for (key, want) in [("apiVersion", "v1"), ("kind", "Service")] {
        match present(service, key) {
            None => {}
            Some(Value::String(s)) if s == want => {}
            Some(other) => return Err(format!("{key}: got {other}, want \"{want}\"")),
        }
    }
    expect(service, "metadata", "", is_object)?;
    if let Some(meta) = object(service, "metadata") {
        for key in ["name", "namespace"] {
            expect(meta, key, "metadata.", Value::is_string)?;
        }
        for key in ["labels", "annotations"] {
            expect(meta, key, "metadata.", is_string_map)?;
        }
    }
    expect(service, "spec", "", is_object)?;
    let Some(spec) = object(service, "spec") else {
        return Ok(());
    };
    expect(spec, "type", "spec.", Value::is_string)?;
    expect(spec, "clusterIP", "spec.", Value::is_string)?;
    expect(spec, "clusterIPs", "spec.", is_string_list)?;
    expect(spec, "healthCheckNodePort", "spec.", is_i32)?;
    expect(spec, "selector", "spec.", is_string_map)?;
    expect(spec, "ports", "spec.", Value::is_array)?;
    let items = present(spec, "ports").and_then(Value::as_array);
    for (i, item) in items.into_iter().flatten().enumerate() {
        let path = format!("spec.ports[{i}].");
        let Some(port) = item.as_object() else {
            return Err(format!("spec.ports[{i}]: expected an object, got {item}"));
        };
        if present(port, "port").is_none() {
            return Err(format!("{path}port: required"));
        }
        expect(port, "port", &path, is_i32)?;
        expect(port, "nodePort", &path, is_i32)?;
        expect(port, "name", &path, Value::is_string)?;
        expect(port, "protocol", &path, Value::is_string)?;
        expect(port, "targetPort", &path, |v| v.is_string() || is_i32(v))?;
    }
    Ok(())
}

/// `map[key]`, when present, passes `ok`.
fn expect(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
    ok: impl Fn(&Value) -> bool,
) -> Result<(), String> {
    match present(map, key) {
        Some(value) if !ok(value) => Err(format!("{path}{key}: unexpected value {value}")),
        _ => Ok(()),
    }
}

fn is_object(v: &Value) -> bool {
    v.is_object()
}

fn is_i32(v: &Value) -> bool {
    v.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
}

fn is_string_map(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.values().all(Value::is_string))
}

fn is_string_list(v: &Value) -> bool {
    v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decide(template: &Value, existing: Option<&Value>) -> Result<ServiceAction, String> {
        service(
            &template.to_string(),
            existing.map(Value::to_string).as_deref(),
        )
    }

    fn object_of(action: ServiceAction) -> Value {
        match action {
            ServiceAction::Create(text)
            | ServiceAction::Replace(text)
            | ServiceAction::Recreate(text) => serde_json::from_str(&text).unwrap(),
            ServiceAction::Unchanged | ServiceAction::Conflict(_) => {
                panic!("no object in {action:?}")
            }
        }
    }

    fn template() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                         "labels": {"a": "b"}, "annotations": {"note": "n"},
                         "finalizers": ["f"], "generation": 2},
            "spec": {"type": "NodePort", "clusterIP": "10.9.9.9", "clusterIPs": ["10.9.9.9"],
                     "healthCheckNodePort": 31999, "externalTrafficPolicy": "Local",
                     "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "nodePort": 30080}]},
            "status": {"loadBalancer": {}}
        })
    }

    fn member() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "3",
                         "uid": "member-uid", "labels": {"member": "own"}},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.99", "clusterIPs": ["10.0.0.99"],
                     "healthCheckNodePort": 32000, "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "nodePort": 31000,
                                "protocol": "TCP", "targetPort": 80}]},
            "status": {"loadBalancer": {}}
        })
    }

    #[test]
    fn the_copy_keeps_only_name_namespace_labels_annotations_and_the_spec() {
        let copy = object_of(decide(&template(), None).unwrap());
        assert_eq!(
            copy,
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "shop",
                             "labels": {"a": "b", CREATED_BY_LABEL: CREATED_BY},
                             "annotations": {"note": "n"}},
                "spec": {"type": "NodePort", "externalTrafficPolicy": "Local",
                         "selector": {"app": "web"},
                         "ports": [{"name": "http", "port": 80}]}
            })
        );
    }

    #[test]
    fn a_replaced_port_keeps_the_node_port_of_the_first_member_port_with_its_name_and_number() {
        let t = json!({"spec": {"type": "NodePort", "ports": [
            {"name": "http", "port": 80}, {"port": 81}, {"name": "grpc", "port": 82}]}});
        let member = json!({"spec": {"type": "LoadBalancer", "ports": [
            {"name": "http", "port": 8080, "nodePort": 30001},
            {"name": "http", "port": 80},
            {"name": "http", "port": 80, "nodePort": 30003},
            {"port": 81, "nodePort": 30004},
            {"name": "grpc", "port": 82, "nodePort": 30005}]}});
        let spec = object_of(decide(&t, Some(&member)).unwrap())["spec"].clone();
        // http/80 matches the member's second port first, which has none.
        assert_eq!(
            spec["ports"],
            json!([{"name": "http", "port": 80}, {"port": 81, "nodePort": 30004},
                   {"name": "grpc", "port": 82, "nodePort": 30005}])
        );
    }

    #[test]
    fn the_copy_of_a_template_without_spec_has_an_empty_spec() {
        let t = json!({"metadata": {"name": "web", "namespace": "shop", "labels": null}});
        let copy = object_of(decide(&t, None).unwrap());
        assert_eq!(copy["spec"], json!({}));
        assert_eq!(
            copy["metadata"],
            json!({"name": "web", "namespace": "shop", "labels": {CREATED_BY_LABEL: CREATED_BY}})
        );
    }

    fn headless(labels: Value) -> Value {
        json!({"metadata": {"name": "hl", "namespace": "shop", "labels": labels},
               "spec": {"clusterIP": "None", "clusterIPs": ["None"], "selector": {"app": "db"},
                        "ports": [{"name": "pg", "port": 5432}]}})
    }

    fn with_cluster_ip(labels: Value) -> Value {
        json!({"metadata": {"name": "hl", "namespace": "shop", "labels": labels},
               "spec": {"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"],
                        "selector": {"app": "db"}, "ports": [{"name": "pg", "port": 5432}]}})
    }

    #[test]
    fn a_headless_template_is_copied_headless() {
        let copy = object_of(decide(&headless(json!({})), None).unwrap());
        assert_eq!(copy["spec"]["clusterIP"], "None");
        assert_eq!(copy["spec"].get("clusterIPs"), None);
        let same = headless(json!({"member": "own"}));
        assert_eq!(
            decide(&headless(json!({})), Some(&same)).unwrap(),
            ServiceAction::Unchanged
        );
    }

    #[test]
    fn a_change_of_headlessness_recreates_our_service_and_leaves_others_alone() {
        let ours = json!({CREATED_BY_LABEL: CREATED_BY});
        let to_headless = decide(&headless(json!({})), Some(&with_cluster_ip(ours.clone())));
        let copy = object_of(to_headless.unwrap());
        assert_eq!(copy["spec"]["clusterIP"], "None");
        let from_headless = decide(&with_cluster_ip(json!({})), Some(&headless(ours)));
        let ServiceAction::Recreate(text) = from_headless.unwrap() else {
            panic!("recreate expected");
        };
        let copy: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(copy["spec"].get("clusterIP"), None);
        for (template, member) in [
            (headless(json!({})), with_cluster_ip(json!({"other": "x"}))),
            (with_cluster_ip(json!({})), headless(Value::Null)),
        ] {
            let ServiceAction::Conflict(why) = decide(&template, Some(&member)).unwrap() else {
                panic!("conflict expected for {member}");
            };
            assert!(why.contains("not created by mcs-policy"), "{why}");
        }
    }

    #[test]
    fn only_api_server_defaults_and_assigned_fields_differing_is_unchanged() {
        assert_eq!(
            decide(&template(), Some(&member())).unwrap(),
            ServiceAction::Unchanged
        );
    }

    #[test]
    fn a_missing_type_is_cluster_ip_and_a_missing_selector_is_empty() {
        let t = json!({"spec": {"ports": [{"port": 80}]}});
        let m = json!({"spec": {"type": "ClusterIP", "selector": {},
                                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}});
        assert_eq!(decide(&t, Some(&m)).unwrap(), ServiceAction::Unchanged);
        let nulls = json!({"spec": {"type": null, "selector": null, "ports": [{"port": 80}]}});
        assert_eq!(decide(&nulls, Some(&m)).unwrap(), ServiceAction::Unchanged);
    }

    #[test]
    fn a_changed_selector_type_or_port_is_replaced() {
        let mut selector = template();
        selector["spec"]["selector"] = Value::Null;
        let mut kind = template();
        kind["spec"]["type"] = "LoadBalancer".into();
        let mut target = template();
        target["spec"]["ports"][0]["targetPort"] = "http".into();
        let mut protocol = template();
        protocol["spec"]["ports"][0]["protocol"] = "UDP".into();
        let mut more = template();
        more["spec"]["ports"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "https", "port": 443}));
        for t in [selector, kind, target, protocol, more] {
            assert!(
                matches!(
                    decide(&t, Some(&member())).unwrap(),
                    ServiceAction::Replace(_)
                ),
                "{t}"
            );
        }
    }

    #[test]
    fn the_replacement_keeps_the_members_metadata_and_assigned_fields() {
        let mut changed = template();
        changed["spec"]["selector"] = Value::Null;
        let out = object_of(decide(&changed, Some(&member())).unwrap());
        assert_eq!(out["metadata"], member()["metadata"]);
        assert_eq!(out["metadata"]["resourceVersion"], "3");
        assert_eq!(out["status"], member()["status"]);
        let spec = &out["spec"];
        assert_eq!(spec["clusterIP"], "10.0.0.99");
        assert_eq!(spec["clusterIPs"], json!(["10.0.0.99"]));
        assert_eq!(spec["healthCheckNodePort"], 32000);
        assert_eq!(
            spec["ports"],
            json!([{"name": "http", "port": 80, "nodePort": 31000}])
        );
        assert_eq!(spec.get("selector"), None);
        assert_eq!(spec["externalTrafficPolicy"], "Local");
    }

    #[test]
    fn a_node_port_is_kept_only_for_a_port_with_the_same_name_and_number() {
        let t = json!({"spec": {"type": "NodePort", "ports": [
            {"name": "http", "port": 8080, "nodePort": 30001},
            {"name": "metrics", "port": 80},
            {"port": 9090}]}});
        let m = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.1", "ports": [
            {"name": "http", "port": 80, "nodePort": 31000},
            {"name": "metrics", "port": 80, "nodePort": 31001},
            {"port": 9090, "nodePort": 31002}]}});
        let out = object_of(decide(&t, Some(&m)).unwrap());
        assert_eq!(
            out["spec"]["ports"],
            json!([{"name": "http", "port": 8080},
                   {"name": "metrics", "port": 80, "nodePort": 31001},
                   {"port": 9090, "nodePort": 31002}])
        );
    }

    #[test]
    fn a_member_without_assigned_fields_leaves_them_absent() {
        let mut changed = template();
        changed["spec"]["type"] = "ClusterIP".into();
        let m = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}});
        let out = object_of(decide(&changed, Some(&m)).unwrap());
        for key in ASSIGNED {
            assert_eq!(out["spec"].get(key), None, "{key}");
        }
        assert_eq!(out["spec"]["ports"][0].get("nodePort"), None);
        assert_eq!(out.get("status"), None);
    }

    #[test]
    fn what_is_not_a_service_is_an_error() {
        let bad = [
            ("{", None, "template does not decode"),
            ("[]", None, "template is not a Service"),
            (r#"{"kind":"Pod"}"#, None, "kind"),
            (
                r#"{"apiVersion":"apps/v1","kind":"Service"}"#,
                None,
                "apiVersion",
            ),
            (r#"{"spec":[]}"#, None, "spec"),
            (
                r#"{"spec":{"ports":[{"name":"a"}]}}"#,
                None,
                "spec.ports[0].port: required",
            ),
            (
                r#"{"spec":{"ports":[{"port":"80"}]}}"#,
                None,
                "spec.ports[0].port",
            ),
            (r#"{"spec":{"selector":{"a":1}}}"#, None, "spec.selector"),
            ("{}", Some("nope"), "existing service does not decode"),
            (
                "{}",
                Some(r#"{"metadata":"x"}"#),
                "existing service is not a Service",
            ),
        ];
        for (template, existing, needle) in bad {
            let err = service(template, existing).unwrap_err();
            assert!(err.contains(needle), "{template} {existing:?}: {err}");
        }
    }

    #[test]
    fn a_copy_holding_a_long_number_is_unchanged_when_compared_again() {
        // Found by fuzzing: a number written with 192 digits, parsed, written in its shortest
        // form and parsed again must be the same number, or the copy never converges.
        let digits = format!("9{}6", "1234567890987654321".repeat(10));
        let template = format!(
            r#"{{"metadata":{{"name":"web","namespace":"shop"}},
                "spec":{{"ports":[{{"name":"http","port":80,"weight":{digits}}}]}}}}"#
        );
        let ServiceAction::Create(copy) = service(&template, None).unwrap() else {
            panic!("no Service yet: created");
        };
        assert_eq!(
            service(&template, Some(&copy)).unwrap(),
            ServiceAction::Unchanged,
            "{copy}"
        );
    }
}
