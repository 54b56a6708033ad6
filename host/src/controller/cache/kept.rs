//! What the caches keep of each object: what a pass reads or writes back, in a compact form
//! (kube-runtime's examples clear `managedFields` the same way; the k8s-openapi types as they
//! are decoded cost 2.6–2.8 KB an object, mostly spare vector capacity and map nodes). Measured
//! per object in BENCHMARKS.md ("Sync controller at scale").
//!
//! - **EndpointSlices** are read by the component as their facts (namespace, labels,
//!   annotations, ports, and a digest of address type and endpoints: `decide`'s input, made
//!   once when the slice arrives), copied with their address type and endpoints, and deleted
//!   with a uid and resourceVersion precondition; the controller never writes one back from
//!   the cache, so the rest of the metadata goes, and every vector is cut to its length.
//! - **Services** are kept as their JSON text, which is what the component takes: a member's
//!   Service is replaced (PUT) with the component's object, made from that text, so everything
//!   but `managedFields` stays (a PUT without `finalizers`, `ownerReferences` or an
//!   annotation would remove them from the user's object).
//! - **MultiClusterServices** keep everything but `managedFields`: the component reads the
//!   whole object (spec, metadata, status conditions).
//!
//! [`Cached`] is what a store needs of every object it keeps: its identity ([`Key`]) and its
//! resourceVersion, whose order [`is_later`] says. It lives here, below the store, so that
//! the store and what it keeps import in one direction.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;

use super::interner::Interner;
use super::watched::WatchedSlice;
use crate::engine::SliceSource;
use crate::engine::convert::{self, SliceFacts};
use crate::engine::types::SliceCopy;

/// What a store needs of an object it keeps.
pub trait Cached: Send + Sync + 'static {
    /// `metadata.namespace`.
    fn namespace(&self) -> &str;
    /// `metadata.name`.
    fn name(&self) -> &str;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
}

/// `(namespace, name)` of an object, or `(namespace, group)` of a group.
pub type Key = (Box<str>, Box<str>);

/// The key of `namespace/name`.
pub fn key(namespace: &str, name: &str) -> Key {
    (namespace.into(), name.into())
}

/// The key of `object`.
pub fn key_of<K: Cached>(object: &K) -> Key {
    key(object.namespace(), object.name())
}

/// Whether resourceVersion `seen` is later than `written`: as integers (Kubernetes v1.35 made
/// resource versions of one resource comparable so); either not an integer counts as later,
/// so an own write is never laid over a store for longer than it must be.
pub fn is_later(seen: Option<&str>, written: Option<&str>) -> bool {
    match (
        seen.and_then(|s| s.parse::<u64>().ok()),
        written.and_then(|w| w.parse::<u64>().ok()),
    ) {
        (Some(seen), Some(written)) => seen > written,
        _ => true,
    }
}

/// An EndpointSlice as the caches keep it: its identity, and what it has in common with the
/// other copies of the same slice (kept once for all of them).
#[derive(Clone, Debug, PartialEq)]
pub struct KeptSlice {
    name: Box<str>,
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    shared: Arc<SharedSlice>,
}

/// What `decide` reads of a slice (its facts, made once here rather than at every pass) and
/// what a copy of it carries: equal in every copy of one provider's slice, so the caches keep
/// one of each ([`SHARED_SLICES`]).
#[derive(Debug, PartialEq)]
struct SharedSlice {
    /// Namespace, labels, annotations, ports and the content digest.
    facts: SliceFacts,
    address_type: Box<str>,
    /// As watched, each one's vectors cut to length.
    endpoints: Box<[Endpoint]>,
}

// `Endpoint` has no floating-point field, so its `PartialEq` is an equivalence.
impl Eq for SharedSlice {}

/// Hashed by the facts alone, which equal values share (their content digest covers the
/// address type and the endpoints as a copy carries them).
impl Hash for SharedSlice {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.facts.hash(state);
    }
}

/// The shared parts of every cached slice, of every cluster.
static SHARED_SLICES: LazyLock<Interner<SharedSlice>> = LazyLock::new(Interner::default);

impl KeptSlice {
    /// What `decide` reads of the slice.
    pub fn facts(&self) -> &SliceFacts {
        &self.shared.facts
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = &self.shared.facts.labels;
        let i = labels.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok()?;
        Some(&labels[i].1)
    }

    /// The slice as a Kubernetes object (its identity, labels, annotations, address type,
    /// endpoints and ports): for a copy of it, or a sweep's `prune`.
    pub fn to_slice(&self) -> EndpointSlice {
        let SharedSlice {
            facts,
            address_type,
            endpoints,
        } = &*self.shared;
        EndpointSlice {
            metadata: ObjectMeta {
                name: Some(self.name.to_string()),
                namespace: Some(facts.namespace.clone()),
                uid: self.uid.as_deref().map(str::to_string),
                resource_version: self.resource_version.as_deref().map(str::to_string),
                labels: convert::map(facts.labels.clone()),
                annotations: convert::map(facts.annotations.clone()),
                ..ObjectMeta::default()
            },
            address_type: address_type.to_string(),
            endpoints: Some(endpoints.to_vec()),
            ports: Some(
                facts
                    .ports
                    .iter()
                    .cloned()
                    .map(convert::port_from_wit)
                    .collect(),
            ),
        }
    }
}

/// An EndpointSlice as the caches keep it.
pub fn slice(slice: WatchedSlice) -> KeptSlice {
    let slice = EndpointSlice::from(slice);
    let facts = shrunk(convert::slice_facts(&slice));
    let boxed = |s: Option<String>| s.map(String::into_boxed_str);
    let meta = slice.metadata;
    let mut endpoints = slice.endpoints.unwrap_or_default();
    for endpoint in &mut endpoints {
        endpoint.addresses.shrink_to_fit();
    }
    KeptSlice {
        name: meta.name.unwrap_or_default().into_boxed_str(),
        uid: boxed(meta.uid),
        resource_version: boxed(meta.resource_version),
        shared: SHARED_SLICES.intern(SharedSlice {
            facts,
            address_type: slice.address_type.into_boxed_str(),
            endpoints: endpoints.into_boxed_slice(),
        }),
    }
}

/// `facts` with every vector cut to its length.
fn shrunk(mut facts: SliceFacts) -> SliceFacts {
    facts.labels.shrink_to_fit();
    facts.annotations.shrink_to_fit();
    facts.ports.shrink_to_fit();
    facts
}

impl Cached for KeptSlice {
    fn namespace(&self) -> &str {
        &self.shared.facts.namespace
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

impl SliceSource for KeptSlice {
    fn slice_name(&self) -> &str {
        &self.name
    }

    fn copy_of(&self, copy: &SliceCopy) -> Result<EndpointSlice, String> {
        convert::copy_slice(copy, &self.to_slice())
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
mod tests;
