//! The Go types of the built-in kinds (`k8s.io/api` 1.36: `core/v1`, `discovery/v1`,
//! `coordination/v1`, `events/v1`, `admissionregistration/v1`, `apiextensions/v1`), field by
//! field in declaration order.
//!
//! This module has the lookup and the building blocks (`ObjectMeta`, the inlined `TypeMeta`);
//! the kinds themselves are in [`super::kinds`].

use std::sync::{Arc, LazyLock};

use super::kinds::{
    config_map, core_event, crd, endpoint_slice, events_event, lease,
    mutating_webhook_configuration, namespace, secret, service, validating_webhook_configuration,
};
use super::{Custom, GoStruct, GoType};

/// The Go type of the built-in `kind` of `group`, if kube-sim serves it.
pub fn lookup(group: &str, kind: &str) -> Option<&'static GoType> {
    static TYPES: LazyLock<Vec<(&str, &str, GoType)>> = LazyLock::new(|| {
        vec![
            ("", "Namespace", namespace()),
            ("", "Service", service()),
            ("", "ConfigMap", config_map()),
            ("", "Secret", secret()),
            ("", "Event", core_event()),
            ("discovery.k8s.io", "EndpointSlice", endpoint_slice()),
            ("coordination.k8s.io", "Lease", lease()),
            ("events.k8s.io", "Event", events_event()),
            ("apiextensions.k8s.io", "CustomResourceDefinition", crd()),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                validating_webhook_configuration(),
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
                mutating_webhook_configuration(),
            ),
        ]
    });
    TYPES
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, t)| t)
}

pub(super) fn string() -> GoType {
    GoType::Str("string")
}

pub(super) fn named(name: &'static str) -> GoType {
    GoType::Str(name)
}

pub(super) fn int32() -> GoType {
    GoType::Int("int32")
}

pub(super) fn int64() -> GoType {
    GoType::Int("int64")
}

pub(super) fn ptr(t: GoType) -> GoType {
    GoType::Ptr(Box::new(t))
}

pub(super) fn slice(t: GoType) -> GoType {
    GoType::Slice(Box::new(t))
}

pub(super) fn map(t: GoType) -> GoType {
    GoType::Map(Box::new(t))
}

pub(super) fn time() -> GoType {
    GoType::Custom(Custom::Time)
}

pub(super) fn micro_time() -> GoType {
    GoType::Custom(Custom::MicroTime)
}

pub(super) fn any() -> GoType {
    GoType::Custom(Custom::Any)
}

pub(super) fn structure(name: &'static str, fields: Vec<(&'static str, GoType)>) -> GoType {
    GoType::Struct(Arc::new(GoStruct { name, fields }))
}

/// A top-level kind: the inlined `TypeMeta` (`kind`, `apiVersion`), `metadata`, then `fields`.
pub(super) fn object(name: &'static str, fields: Vec<(&'static str, GoType)>) -> GoType {
    let mut all = vec![
        ("kind", string()),
        ("apiVersion", string()),
        ("metadata", object_meta()),
    ];
    all.extend(fields);
    structure(name, all)
}

fn object_meta() -> GoType {
    let owner = structure(
        "v1.OwnerReference",
        vec![
            ("apiVersion", string()),
            ("kind", string()),
            ("name", string()),
            ("uid", named("types.UID")),
            ("controller", ptr(GoType::Bool)),
            ("blockOwnerDeletion", ptr(GoType::Bool)),
        ],
    );
    let managed = structure(
        "v1.ManagedFieldsEntry",
        vec![
            ("manager", string()),
            ("operation", named("v1.ManagedFieldsOperationType")),
            ("apiVersion", string()),
            ("time", ptr(time())),
            ("fieldsType", string()),
            ("fieldsV1", ptr(GoType::Custom(Custom::FieldsV1))),
            ("subresource", string()),
        ],
    );
    structure(
        "v1.ObjectMeta",
        vec![
            ("name", string()),
            ("generateName", string()),
            ("namespace", string()),
            ("selfLink", string()),
            ("uid", named("types.UID")),
            ("resourceVersion", string()),
            ("generation", int64()),
            ("creationTimestamp", time()),
            ("deletionTimestamp", ptr(time())),
            ("deletionGracePeriodSeconds", ptr(int64())),
            ("labels", map(string())),
            ("annotations", map(string())),
            ("ownerReferences", slice(owner)),
            ("finalizers", slice(string())),
            ("managedFields", slice(managed)),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_start_with_their_type_and_metadata_in_go_order() {
        let Some(GoType::Struct(service)) = lookup("", "Service") else {
            panic!("Service is a struct");
        };
        let names: Vec<&str> = service.fields.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["kind", "apiVersion", "metadata", "spec", "status"]);
        let Some(GoType::Struct(spec)) = service.field("spec") else {
            panic!("spec is a struct");
        };
        assert_eq!(spec.field("ports").unwrap().go_name(), "[]v1.ServicePort");
        assert_eq!(
            spec.field("ipFamilyPolicy").unwrap().go_name(),
            "*v1.IPFamilyPolicy"
        );
        assert!(lookup("discovery.k8s.io", "EndpointSlice").is_some());
        assert!(lookup("example.com", "Widget").is_none());
    }
}
