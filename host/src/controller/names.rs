//! What the controller reads and writes, named: the MultiClusterService resource and the labels
//! that choose which slices are watched and swept. Every part of the controller (the caches,
//! the passes, the sweeps) uses these names; they depend on nothing.

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

/// Label that ties an EndpointSlice to its Service (and so to the MCS of the same name).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// `endpointslice.kubernetes.io/managed-by`.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The managed-by value of the copies the component makes. The host uses it only to choose
/// what to read (which slices may be our copies); which of them are stale is the component's
/// `prune` decision, on all of its markers.
pub const DISPATCH_MANAGER: &str = "endpointslice-dispatch-controller.karmada.io";

/// `networking.karmada.io/v1alpha1` `MultiClusterService`, for dynamic clients.
pub fn mcs_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("networking.karmada.io", "v1alpha1", "MultiClusterService"),
        "multiclusterservices",
    )
}

/// `namespace/name` of an object, for messages.
pub fn object_name(mcs: &DynamicObject) -> String {
    format!(
        "{}/{}",
        mcs.metadata.namespace.as_deref().unwrap_or_default(),
        mcs.metadata.name.as_deref().unwrap_or_default()
    )
}
