//! What the caches keep of each object: what a pass reads or writes back, nothing more
//! (kube-runtime's examples clear `managedFields` the same way). Measured per object in
//! BENCHMARKS.md ("Sync controller at scale").
//!
//! - **EndpointSlices** are read by the component (name, namespace, labels, annotations,
//!   `addressType`, endpoints, ports) and deleted with a uid and resourceVersion
//!   precondition; the controller never writes one back from the cache, so the rest of the
//!   metadata goes.
//! - **Services** keep everything but `managedFields`: a member's Service is replaced (PUT)
//!   with the component's object, made from the cached one, and a PUT without `finalizers`,
//!   `ownerReferences` or an annotation would remove them from the user's object.
//! - **MultiClusterServices** keep everything but `managedFields`: the component reads the
//!   whole object (spec, metadata, status conditions).

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;

/// An EndpointSlice as the caches keep it.
pub fn slice(slice: &mut EndpointSlice) {
    let meta = std::mem::take(&mut slice.metadata);
    slice.metadata = ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        annotations: meta.annotations,
        ..ObjectMeta::default()
    };
}

/// A Service as the caches keep it.
pub fn service(service: &mut Service) {
    service.metadata.managed_fields = None;
}

/// A MultiClusterService as the caches keep it.
pub fn mcs(mcs: &mut DynamicObject) {
    mcs.metadata.managed_fields = None;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_cached_slice_keeps_what_a_pass_reads_and_its_delete_preconditions() {
        let mut s: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                "generation": 3, "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"kubernetes.io/service-name": "web"}, "annotations": {"a": "b"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "s"}],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "zone": "a"}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
        }))
        .unwrap();
        let before = s.clone();
        slice(&mut s);
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "web-1", "namespace": "shop", "uid": "u",
                    "resourceVersion": "7", "labels": {"kubernetes.io/service-name": "web"},
                    "annotations": {"a": "b"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "zone": "a"}],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
            })
        );
        assert_eq!(s.endpoints, before.endpoints);
    }

    #[test]
    fn a_cached_service_loses_only_its_managed_fields() {
        let mut s: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "finalizers": ["x"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"}],
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"ports": [{"port": 80}]}
        }))
        .unwrap();
        let mut expected = s.clone();
        expected.metadata.managed_fields = None;
        service(&mut s);
        assert_eq!(s, expected);
    }
}
