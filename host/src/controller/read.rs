//! What the controller reads, named: the MultiClusterService resource, the labels that choose
//! which slices are watched and swept, and the errors of the read step.

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

/// Label that ties an EndpointSlice to its Service (and so to the MCS of the same name).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// `endpointslice.kubernetes.io/managed-by`.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The managed-by value of the copies the component makes. The host uses it only to choose
/// what to read (which slices may be our copies); which of them are stale is the component's
/// `prune` decision, on all of its markers.
pub const DISPATCH_MANAGER: &str = "endpointslice-dispatch-controller.karmada.io";

/// What could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cluster {cluster} is not ready: {why}")]
    NotReady {
        cluster: String,
        /// What "ready" means for the cluster source ([`crate::clusters::Source::not_ready`]).
        why: &'static str,
    },
    #[error("encoding multiclusterservice {object} as JSON")]
    Encode {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

/// `networking.karmada.io/v1alpha1` `MultiClusterService`, for dynamic clients.
pub fn mcs_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("networking.karmada.io", "v1alpha1", "MultiClusterService"),
        "multiclusterservices",
    )
}

/// The MCS as the JSON text `plan` takes.
pub fn mcs_json(mcs: &DynamicObject) -> Result<String, ReadError> {
    serde_json::to_string(mcs).map_err(|source| ReadError::Encode {
        object: object_name(mcs),
        source,
    })
}

/// `namespace/name` of an object, for messages.
pub fn object_name(mcs: &DynamicObject) -> String {
    format!(
        "{}/{}",
        mcs.metadata.namespace.as_deref().unwrap_or_default(),
        mcs.metadata.name.as_deref().unwrap_or_default()
    )
}
