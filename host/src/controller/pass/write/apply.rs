//! The *apply/prune* step: server-side apply of copies, deletion of stale copies, and the
//! finalizer on the MultiClusterService.

use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::{Api, Client};
use serde_json::json;

use crate::controller::cache::watched::WatchedSlice;
use crate::controller::names::{mcs_resource, object_name};
use crate::controller::pass::conflict::on_conflict;
use crate::controller::pass::write::namespace::with_namespace;

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
/// the member lacks it); returns the object as the member holds it afterwards (its
/// resourceVersion unchanged when the copy was already there), decoded as the caches keep it.
pub async fn apply_copy(
    client: &Client,
    cluster: &str,
    field_manager: &str,
    object: EndpointSlice,
) -> Result<WatchedSlice, ApplyError> {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let api: Api<WatchedSlice> = Api::namespaced(client.clone(), &namespace);
    let params = PatchParams::apply(field_manager).force();
    let patch = Patch::Apply(&object);
    on_conflict(|| with_namespace(client, &namespace, || api.patch(&name, &params, &patch)))
        .await
        .map_err(|source| ApplyError::Apply {
            cluster: cluster.to_string(),
            namespace,
            name,
            source: Box::new(source),
        })
}

/// Deletes `namespace/name` from `cluster` if it is still the object read (`uid`,
/// `resource_version`: the server refuses with 409 an object re-created or changed since);
/// already gone counts as done.
pub async fn delete_slice(
    client: &Client,
    cluster: &str,
    namespace: &str,
    name: &str,
    uid: Option<String>,
    resource_version: Option<String>,
) -> Result<(), ApplyError> {
    let api: Api<WatchedSlice> = Api::namespaced(client.clone(), namespace);
    let only_what_was_read = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &only_what_was_read).await {
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
/// Returns the MCS as the hub holds it afterwards, when it was written.
pub async fn set_finalizer(
    hub: &Client,
    mcs: &DynamicObject,
    finalizer: &str,
    present: bool,
) -> Result<Option<DynamicObject>, ApplyError> {
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
            return Ok(None);
        }
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&finalizer_patch(current, finalizer, present)),
        )
        .await
        .map(Some)
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
