//! What the caches keep of each object: what a pass reads or writes back, in a compact form
//! (kube-runtime's examples clear `managedFields` the same way; the k8s-openapi types as they
//! are decoded cost 2.6–2.8 KB an object, mostly spare vector capacity and map nodes). Measured
//! per object in BENCHMARKS.md ("Sync controller at scale").
//!
//! - **EndpointSlices** are read by the component (name, namespace, labels, annotations,
//!   `addressType`, endpoints, ports) and deleted with a uid and resourceVersion
//!   precondition; the controller never writes one back from the cache, so the rest of the
//!   metadata goes, and every vector is cut to its length.
//! - **Services** are kept as their JSON text, which is what the component takes: a member's
//!   Service is replaced (PUT) with the component's object, made from that text, so everything
//!   but `managedFields` stays (a PUT without `finalizers`, `ownerReferences` or an
//!   annotation would remove them from the user's object).
//! - **MultiClusterServices** keep everything but `managedFields`: the component reads the
//!   whole object (spec, metadata, status conditions).

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::DynamicObject;

use super::store::Cached;
use super::watched::WatchedSlice;

/// An EndpointSlice as the caches keep it.
pub fn slice(slice: WatchedSlice) -> EndpointSlice {
    let mut slice = EndpointSlice::from(slice);
    if let Some(endpoints) = slice.endpoints.as_mut() {
        for endpoint in endpoints.iter_mut() {
            endpoint.addresses.shrink_to_fit();
        }
        endpoints.shrink_to_fit();
    }
    if let Some(ports) = slice.ports.as_mut() {
        ports.shrink_to_fit();
    }
    slice
}

impl Cached for EndpointSlice {
    fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn uid(&self) -> Option<&str> {
        self.metadata.uid.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

/// A Service as the caches keep it: its identity and its JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptService {
    namespace: Box<str>,
    name: Box<str>,
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    /// The Service as JSON, without `managedFields`.
    json: Box<str>,
}

impl KeptService {
    /// The Service as JSON text (what the component's `service` and `decide` take).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The Service as a Kubernetes object.
    pub fn decode(&self) -> Result<Service, serde_json::Error> {
        serde_json::from_str(&self.json)
    }
}

/// A Service as the caches keep it.
pub fn service(mut service: Service) -> KeptService {
    service.metadata.managed_fields = None;
    let meta = &service.metadata;
    let boxed = |s: &Option<String>| s.as_deref().map(Box::from);
    KeptService {
        namespace: meta.namespace.as_deref().unwrap_or_default().into(),
        name: meta.name.as_deref().unwrap_or_default().into(),
        uid: boxed(&meta.uid),
        resource_version: boxed(&meta.resource_version),
        json: serde_json::to_string(&service)
            .expect("a decoded Service encodes as JSON")
            .into_boxed_str(),
    }
}

impl Cached for KeptService {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
}

/// A MultiClusterService as the caches keep it.
pub fn mcs(mut mcs: DynamicObject) -> DynamicObject {
    mcs.metadata.managed_fields = None;
    mcs
}

impl Cached for DynamicObject {
    fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn uid(&self) -> Option<&str> {
        self.metadata.uid.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_cached_slice_keeps_what_a_pass_reads_and_its_delete_preconditions() {
        let s: WatchedSlice = serde_json::from_value(json!({
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
        let before = s.endpoints.clone();
        let s = slice(s);
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
        assert_eq!(s.endpoints, before);
    }

    #[test]
    fn a_cached_service_loses_only_its_managed_fields() {
        let s: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "finalizers": ["x"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"}],
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"ports": [{"port": 80}]}
        }))
        .unwrap();
        let mut expected = s.clone();
        expected.metadata.managed_fields = None;
        let kept = service(s);
        assert_eq!(kept.decode().unwrap(), expected);
        assert_eq!(kept.name(), "web");
        assert!(!kept.json().contains("managedFields"));
    }
}
