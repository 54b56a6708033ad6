//! The empty object of each kind, as Go's `encoding/json` writes a zero-valued typed object:
//! what a watch BOOKMARK carries (the cacher's `newFunc()` with only its resourceVersion set).
//!
//! Go writes every field without `omitempty`, a nil slice or map as `null`, a zero string as
//! `""`, a zero `metav1.Time` as `null`, and a struct as `{}` (structs are never omitted),
//! so the empty object of a kind depends on its type's JSON tags. Custom resources are
//! unstructured: theirs has no fields at all.

use serde_json::{Value, json};

use crate::registry::ResourceType;

/// The fields (besides `kind`, `apiVersion` and `metadata`) of `rt`'s zero-valued object.
fn zero_fields(rt: &ResourceType) -> Value {
    if rt.defined_by.is_some() {
        return json!({});
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        // NamespaceSpec and NamespaceStatus only have omitempty fields.
        ("", "Namespace") => json!({"spec": {}, "status": {}}),
        // ServiceStatus.loadBalancer is a struct.
        ("", "Service") => json!({"spec": {}, "status": {"loadBalancer": {}}}),
        ("", "Event") => json!({
            "involvedObject": {},
            "source": {},
            "firstTimestamp": null,
            "lastTimestamp": null,
            "eventTime": null,
            "reportingComponent": "",
            "reportingInstance": "",
        }),
        ("events.k8s.io", "Event") => json!({
            "eventTime": null,
            "regarding": {},
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null,
        }),
        ("discovery.k8s.io", "EndpointSlice") => {
            json!({"addressType": "", "endpoints": null, "ports": null})
        }
        ("coordination.k8s.io", "Lease") => json!({"spec": {}}),
        // JobSpec.template and PodTemplateSpec.spec are structs, PodSpec.containers has no
        // omitempty; JobStatus only has omitempty fields.
        ("batch", "Job") => json!({
            "spec": {"template": {"metadata": {}, "spec": {"containers": null}}},
            "status": {},
        }),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => json!({
            "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null},
            "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null},
        }),
        // ConfigMap, Secret and the webhook configurations have only omitempty fields.
        _ => json!({}),
    }
}

/// The empty object of `rt` with `metadata` (the bookmark's resourceVersion and annotations).
pub fn object_with_metadata(rt: &ResourceType, metadata: Value) -> Value {
    let mut object = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata});
    if let (Some(map), Value::Object(fields)) = (object.as_object_mut(), zero_fields(rt)) {
        map.extend(fields);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;
    use crate::registry::Registry;

    #[test]
    fn bookmarks_carry_the_kinds_zero_values() {
        let registry = Registry::with_types(builtin::builtin_types());
        let slices = registry
            .lookup("discovery.k8s.io", "v1", "endpointslices")
            .unwrap();
        let metadata = json!({"resourceVersion": "7"});
        assert_eq!(
            object_with_metadata(&slices, metadata.clone()),
            json!({"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1", "metadata": {"resourceVersion": "7"}, "addressType": "", "endpoints": null, "ports": null})
        );
        let maps = registry.lookup("", "v1", "configmaps").unwrap();
        assert_eq!(
            object_with_metadata(&maps, metadata),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}})
        );
    }
}
