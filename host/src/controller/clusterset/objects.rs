//! One object of the clusterset side written in one member, through its store's
//! [`Store::writing`] guard (its own watch event is not news; anybody else's change meanwhile
//! triggers the name again): server-side applies, deletes with uid and resourceVersion
//! preconditions, the ServiceExport's conditions. [`write`](super::write) decides which, in
//! what order.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::keys::Keys;
use super::names::export_resource;
use super::read::Read;
use crate::controller::cache::watched::WatchedSlice;
use crate::controller::cache::{Cached, Store, kept};
use crate::controller::pass::conflict::on_conflict;
use crate::controller::probes::metrics::Metrics;

/// Where a pass writes: the clients and what the writes need.
pub struct Target<'a> {
    pub clients: Vec<(String, Client)>,
    pub field_manager: &'a str,
    pub keys: &'a Keys,
    pub metrics: &'a Metrics,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Server-side applies an imported slice (retried on a conflict, as the MultiClusterService
/// side's copies are); never creates the namespace, unlike the copies' writes.
pub(super) async fn apply_slice(
    client: &Client,
    field_manager: &str,
    object: EndpointSlice,
) -> Result<WatchedSlice, kube::Error> {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let api: Api<WatchedSlice> = Api::namespaced(client.clone(), &namespace);
    let params = PatchParams::apply(field_manager).force();
    let patch = Patch::Apply(&object);
    on_conflict(|| api.patch(&name, &params, &patch)).await
}

/// The kube error under an apply or delete error of the MultiClusterService side's writes.
pub(super) fn source_of(err: crate::controller::pass::write::apply::ApplyError) -> kube::Error {
    use crate::controller::pass::write::apply::ApplyError;
    match err {
        ApplyError::Apply { source, .. }
        | ApplyError::Delete { source, .. }
        | ApplyError::Finalizer { source, .. } => *source,
        ApplyError::Assemble { message, .. } => kube::Error::Service(message.into()),
    }
}

/// Patches the ServiceExport's `status.conditions` to `conditions` (JSON text of the list),
/// conditional on the resourceVersion read.
pub(super) async fn export_status(
    target: &Target<'_>,
    client: &Client,
    read: &Read,
    conditions: &str,
) -> Result<bool, kube::Error> {
    let (namespace, name) = (target.namespace, target.name);
    let store = &read.stores.exports;
    let Some(export) = store.get(namespace, name) else {
        return Ok(false);
    };
    let conditions: Value = serde_json::from_str(conditions).map_err(kube::Error::SerdeError)?;
    let patch = json!({
        "metadata": {"resourceVersion": export.resource_version()},
        "status": {"conditions": conditions},
    });
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &export_resource());
    let writing = store.writing(namespace, name);
    match api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(written) => {
            if writing.wrote(kept::mcs(written)) {
                target.keys.trigger(namespace, name);
            }
            Ok(true)
        }
        Err(err) => {
            if writing.abandoned() {
                target.keys.trigger(namespace, name);
            }
            Err(err)
        }
    }
}

/// A kind whose writes go through a store: what the store keeps of the written object.
pub(super) trait Keep:
    Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize
{
    type Kept: Cached;
    fn keep(self) -> Self::Kept;
    fn version(&self) -> Option<&str>;
}

impl Keep for DynamicObject {
    type Kept = DynamicObject;
    fn keep(self) -> DynamicObject {
        kept::mcs(self)
    }
    fn version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

impl Keep for Service {
    type Kept = kept::KeptService;
    fn keep(self) -> kept::KeptService {
        kept::service(self)
    }
    fn version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

/// Server-side applies `body` (JSON text) through `api`, or to its status subresource
/// (`status`); whether the object changed.
pub(super) async fn apply<K>(
    target: &Target<'_>,
    api: &Api<K>,
    store: &Store<K::Kept>,
    body: &str,
    status: bool,
) -> Result<bool, kube::Error>
where
    K: Keep + kube::Resource + Send + Sync + 'static,
{
    let body: Value = serde_json::from_str(body).map_err(kube::Error::SerdeError)?;
    let object_name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let namespace = target.namespace;
    let before = store
        .get(namespace, &object_name)
        .and_then(|o| o.resource_version().map(str::to_string));
    let params = PatchParams::apply(target.field_manager).force();
    let patch = Patch::Apply(&body);
    let writing = store.writing(namespace, &object_name);
    // Never creates the namespace: a write into a missing one is refused, and the member
    // skipped (see the module's documentation).
    let result = if status {
        api.patch_status(&object_name, &params, &patch).await
    } else {
        api.patch(&object_name, &params, &patch).await
    };
    match result {
        Ok(written) => {
            let changed = written.version() != before.as_deref();
            if writing.wrote(written.keep()) {
                target.keys.trigger(namespace, target.name);
            }
            Ok(changed)
        }
        Err(err) => {
            if writing.abandoned() {
                target.keys.trigger(namespace, target.name);
            }
            Err(err)
        }
    }
}

/// Deletes `name` through `api` with the uid and resourceVersion read; already gone is done.
pub(super) async fn delete<K>(
    target: &Target<'_>,
    api: &Api<K>,
    store: &Store<K::Kept>,
    group: &str,
    only: &crate::engine::types::DeletePrecondition,
) -> Result<bool, kube::Error>
where
    K: Keep + kube::Resource + Send + Sync + 'static,
{
    let namespace = target.namespace;
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(only.uid.clone()),
            resource_version: Some(only.resource_version.clone()),
        }),
        ..DeleteParams::default()
    };
    let writing = store.writing(namespace, &only.name);
    match api.delete(&only.name, &params).await {
        Ok(_) => {
            if writing.deleted(group, Some(only.uid.clone())) {
                target.keys.trigger(namespace, target.name);
            }
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            writing.abandoned();
            Ok(false)
        }
        Err(err) => {
            if writing.abandoned() {
                target.keys.trigger(namespace, target.name);
            }
            Err(err)
        }
    }
}
