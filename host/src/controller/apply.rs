//! The *apply/prune* step: server-side apply of copies, deletion of stale copies, and the
//! finalizer on the MultiClusterService.

use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use super::namespace::with_namespace;
use super::read::{mcs_resource, object_name};
use super::retry::on_conflict;

/// What could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("applying endpointslice {namespace}/{name} to cluster {cluster}")]
    Apply {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("deleting endpointslice {namespace}/{name} from cluster {cluster}")]
    Delete {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("making a copy for cluster {cluster}: {message}")]
    Assemble { cluster: String, message: String },
    #[error("updating the finalizers of multiclusterservice {object} in the hub")]
    Finalizer {
        object: String,
        #[source]
        source: Box<kube::Error>,
    },
}

/// Server-side applies one copy `decide` asked for into `cluster` (creating its namespace when
/// the member lacks it); returns the resourceVersion the object has afterwards (unchanged
/// when the copy was already there).
pub async fn apply_copy(
    client: &Client,
    cluster: &str,
    field_manager: &str,
    object: EndpointSlice,
) -> Result<Option<String>, ApplyError> {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), &namespace);
    let params = PatchParams::apply(field_manager).force();
    let patch = Patch::Apply(&object);
    on_conflict(|| with_namespace(client, &namespace, || api.patch(&name, &params, &patch)))
        .await
        .map(|applied| applied.metadata.resource_version)
        .map_err(|source| ApplyError::Apply {
            cluster: cluster.to_string(),
            namespace,
            name,
            source: Box::new(source),
        })
}

/// Deletes `namespace/name` from `cluster`; already gone counts as done.
pub async fn delete_slice(
    client: &Client,
    cluster: &str,
    namespace: &str,
    name: &str,
) -> Result<(), ApplyError> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(source) => Err(ApplyError::Delete {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            source: Box::new(source),
        }),
    }
}

/// Adds (`present`) or removes the finalizer `finalizer` (named by the component), keeping the
/// others. Conditional on the resourceVersion read, so a concurrent change of the list is never
/// lost: on 409 Conflict the MCS is read again and the change made on what it holds now.
pub async fn set_finalizer(
    hub: &Client,
    mcs: &DynamicObject,
    finalizer: &str,
    present: bool,
) -> Result<(), ApplyError> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        hub.clone(),
        mcs.metadata.namespace.as_deref().unwrap_or_default(),
        &mcs_resource(),
    );
    let name = mcs.metadata.name.as_deref().unwrap_or_default();
    let first = AtomicBool::new(true);
    on_conflict(|| async {
        let fresh;
        let current = if first.swap(false, Ordering::Relaxed) {
            mcs
        } else {
            fresh = api.get(name).await?;
            &fresh
        };
        if has_finalizer(current, finalizer) == present {
            return Ok(());
        }
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&finalizer_patch(current, finalizer, present)),
        )
        .await
        .map(drop)
    })
    .await
    .map_err(|source| ApplyError::Finalizer {
        object: object_name(mcs),
        source: Box::new(source),
    })
}

/// Whether `mcs` carries `finalizer`.
fn has_finalizer(mcs: &DynamicObject, finalizer: &str) -> bool {
    mcs.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// The merge patch that sets `mcs`'s finalizers with (`present`) or without `finalizer`,
/// conditional on its resourceVersion.
fn finalizer_patch(mcs: &DynamicObject, finalizer: &str, present: bool) -> serde_json::Value {
    let mut finalizers: Vec<String> = mcs
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    if present {
        finalizers.push(finalizer.to_string());
    }
    json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": mcs.metadata.resource_version,
    }})
}
