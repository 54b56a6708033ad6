//! The *read* step: MultiClusterServices from the hub and EndpointSlices from the members.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::{Api, Client};

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
    #[error("listing multiclusterservices in the hub cluster {cluster}")]
    ListMcs {
        cluster: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("listing endpointslices of {namespace}/{service} in cluster {cluster}")]
    ListSlices {
        cluster: String,
        namespace: String,
        service: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("listing the endpointslice copies in cluster {cluster}")]
    ListCopies {
        cluster: String,
        #[source]
        source: Box<kube::Error>,
    },
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

/// Every MultiClusterService in the hub, with `apiVersion` and `kind` set (list items may lack
/// them, and the component decodes the object as sent).
pub async fn list_mcs(hub: &Client, hub_name: &str) -> Result<Vec<DynamicObject>, ReadError> {
    let resource = mcs_resource();
    let api: Api<DynamicObject> = Api::all_with(hub.clone(), &resource);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| ReadError::ListMcs {
            cluster: hub_name.to_string(),
            source: Box::new(source),
        })?;
    Ok(list
        .items
        .into_iter()
        .map(|mut o| {
            o.types = Some(kube::core::TypeMeta {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
            });
            o
        })
        .collect())
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

/// Every EndpointSlice in `cluster` labelled as one of our copies, in every namespace.
pub async fn list_copies(client: &Client, cluster: &str) -> Result<Vec<EndpointSlice>, ReadError> {
    let api: Api<EndpointSlice> = Api::all(client.clone());
    let selector = format!("{MANAGED_BY_LABEL}={DISPATCH_MANAGER}");
    let list = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| ReadError::ListCopies {
            cluster: cluster.to_string(),
            source: Box::new(source),
        })?;
    Ok(list.items)
}

/// The EndpointSlices of Service `namespace/service` in `cluster`, as Kubernetes objects.
pub async fn list_slice_objects(
    client: &Client,
    cluster: &str,
    namespace: &str,
    service: &str,
) -> Result<Vec<EndpointSlice>, ReadError> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{SERVICE_NAME_LABEL}={service}");
    let list = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| ReadError::ListSlices {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
            service: service.to_string(),
            source: Box::new(source),
        })?;
    Ok(list.items)
}
