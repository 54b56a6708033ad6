//! What the slice watches and the copies' applies decode: an EndpointSlice without the
//! metadata the controller never reads. Decoded as a k8s-openapi `EndpointSlice`, every object
//! would also build its `managedFields` (a JSON tree per field manager, as many allocations as
//! the object has fields) only for the cache to drop them; serde skips a field this type does
//! not declare without building anything. Every watch event of a member's slices and every
//! answer to an apply goes through here: at a cold start of 20 members × 1,000
//! MultiClusterServices, 78,000 objects.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Deserializer};

/// An EndpointSlice as watched: its name, namespace, uid, resourceVersion, labels and
/// annotations, address type, endpoints and ports.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchedSlice {
    #[serde(deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
    pub address_type: String,
    #[serde(default)]
    pub endpoints: Option<Vec<Endpoint>>,
    #[serde(default)]
    pub ports: Option<Vec<EndpointPort>>,
}

/// The metadata a slice keeps; every other field of the object's metadata is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
}

fn lean_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let meta = LeanMeta::deserialize(deserializer)?;
    Ok(ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        annotations: meta.annotations,
        ..ObjectMeta::default()
    })
}

impl From<WatchedSlice> for EndpointSlice {
    fn from(slice: WatchedSlice) -> Self {
        EndpointSlice {
            metadata: slice.metadata,
            address_type: slice.address_type,
            endpoints: slice.endpoints,
            ports: slice.ports,
        }
    }
}

impl Resource for WatchedSlice {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        EndpointSlice::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        EndpointSlice::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        EndpointSlice::version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        EndpointSlice::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_watched_slice_is_the_slice_without_the_metadata_nobody_reads() {
        let full = json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                "generation": 3, "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"kubernetes.io/service-name": "web"}, "annotations": {"a": "b"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "s"}],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:endpoints": {}}}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "zone": "a"}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
        });
        let watched: WatchedSlice = serde_json::from_value(full.clone()).unwrap();
        let decoded: EndpointSlice = serde_json::from_value(full).unwrap();
        let slice = EndpointSlice::from(watched);
        assert_eq!(slice.endpoints, decoded.endpoints);
        assert_eq!(slice.ports, decoded.ports);
        assert_eq!(slice.address_type, "IPv4");
        assert_eq!(slice.metadata.labels, decoded.metadata.labels);
        assert_eq!(slice.metadata.annotations, decoded.metadata.annotations);
        assert_eq!(slice.metadata.uid.as_deref(), Some("u"));
        assert_eq!(slice.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(slice.metadata.managed_fields, None);
        assert_eq!(slice.metadata.owner_references, None);
        assert_eq!(
            WatchedSlice::url_path(&(), Some("shop")),
            EndpointSlice::url_path(&(), Some("shop"))
        );
    }
}
