//! The *write* step of a clusterset pass: what `clusterset-decide` answered, member by member
//! (every member at once, each member's writes in order: the ServiceExport's conditions, the
//! ServiceImport, its status, the derived Service, the imported slices). A failure is logged,
//! counted and makes the pass be retried; the member's other writes and the other members go on.
//!
//! - ServiceExport conditions: a merge patch of `/status` carrying the resourceVersion read; a
//!   409 (someone else wrote the export since the cache showed it) ends the write, and the
//!   pass is run again on what the cache holds then ([`Outcome::conflicts`]).
//! - ServiceImport, its status, the derived Service, imported slices: server-side apply with
//!   the controller's field manager.
//! - Deletions carry the uid and resourceVersion the pass read as preconditions.
//!
//! **A member without the namespace** gets nothing: the clusterset side never creates a
//! namespace (who may export a Service in one member must not create namespaces fleet-wide;
//! the import arrives where the namespace exists, as KEP-1645 has it). The first write refused
//! with `404 namespaces "<ns>" not found` ends that member's writes for the pass without
//! failing it, and shuts a gate for the member and namespace ([`gate`]): until it opens, the
//! passes over that namespace's names write nothing there and ask to be run again when it
//! opens (after 1 s, then twice as long each time the namespace is still missing, at most
//! 60 s), so whatever the number of names, a member is asked at most once per wait whether
//! the namespace exists, and the import arrives within that wait of its creation.
//!
//! Every write goes through its store's [`Store::writing`] guard: its own watch event is not
//! news, anybody else's change meanwhile asks for another pass.

use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::keys::Keys;
use super::names::{derived_name, export_resource, import_resource};
use super::read::{Read, Snapshot};
use crate::clusters::api_error::{Kind, chain, kind_of};
use crate::controller::cache::watched::WatchedSlice;
use crate::controller::cache::{Cached, Store, kept};
use crate::controller::pass::conflict::on_conflict;
use crate::controller::pass::write::apply::delete_slice;
use crate::controller::pass::write::namespace::is_missing_namespace;
use crate::controller::probes::metrics::Metrics;
use crate::engine::convert;
use crate::engine::types::{ClustersetDecision, ClustersetMemberDecision, ObjectWrite};

/// What the writes of a pass did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Objects written (applied, patched or deleted).
    pub written: usize,
    /// Writes that failed, with the cluster and the kind of failure.
    pub failures: Vec<(String, Kind)>,
    /// ServiceExport status writes refused on their resourceVersion: run the pass again.
    pub conflicts: usize,
    /// Some member lacks the namespace: run the pass again after this long (the soonest).
    pub waiting: Option<Duration>,
}

/// Where a pass writes: the clients and what the writes need.
pub struct Target<'a> {
    pub clients: Vec<(String, Client)>,
    pub field_manager: &'a str,
    pub keys: &'a Keys,
    pub metrics: &'a Metrics,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Carries out `decision` in every member it names.
pub async fn write_all(
    target: &Target<'_>,
    decision: &ClustersetDecision,
    snapshot: &Snapshot,
) -> Outcome {
    let members = decision.members.iter().filter_map(|d| {
        let read = snapshot.members.iter().find(|m| m.cluster == d.cluster)?;
        let (_, client) = target.clients.iter().find(|(n, _)| *n == d.cluster)?;
        for note in &d.notes {
            tracing::info!(export = %format!("{}/{}", target.namespace, target.name),
                cluster = %d.cluster, note = %note, "left alone");
        }
        read.readable.then(|| member(target, client, d, read))
    });
    let mut outcome = Outcome::default();
    for part in join_all(members).await {
        outcome.written += part.written;
        outcome.failures.extend(part.failures);
        outcome.conflicts += part.conflicts;
        outcome.waiting = match (outcome.waiting, part.waiting) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    outcome
}

/// One member's writes, in order.
async fn member(
    target: &Target<'_>,
    client: &Client,
    decision: &ClustersetMemberDecision,
    read: &Read,
) -> Outcome {
    let mut outcome = Outcome::default();
    let cluster = decision.cluster.as_str();
    let (namespace, name) = (target.namespace, target.name);
    let gate = gate::Key::new(target.keys, cluster, namespace);
    if let Some(wait) = gate::closed(&gate) {
        tracing::debug!(cluster, %namespace, %name, "namespace missing in the member: nothing written there");
        outcome.waiting = Some(wait);
        return outcome;
    }
    // Whether the member lacks the namespace: its writes end, the pass goes on.
    let mut missing = false;
    let mut done = |what: &'static str, result: Result<bool, kube::Error>| -> bool {
        match result {
            Ok(wrote) => {
                gate::open(&gate);
                if wrote {
                    outcome.written += 1;
                    target.metrics.clusterset_write(what);
                }
            }
            Err(err) if is_missing_namespace(&err, namespace) => {
                let wait = gate::shut(&gate);
                tracing::info!(cluster, %namespace, %name, retry_in = ?wait,
                    "namespace missing in the member: not imported there until it exists");
                outcome.waiting = Some(wait);
                missing = true;
            }
            Err(err) => {
                let kind = kind_of(&err);
                if what == "export_status" && kind == Kind::Conflict {
                    tracing::debug!(cluster, %namespace, %name, "serviceexport changed since read: deciding again");
                    outcome.conflicts += 1;
                    return true;
                }
                tracing::warn!(cluster, %namespace, %name, write = what, error = %chain(&err),
                    "clusterset write failed");
                outcome.failures.push((cluster.to_string(), kind));
            }
        }
        !missing
    };
    if let Some(conditions) = &decision.export_conditions
        && !done(
            "export_status",
            export_status(target, client, read, conditions).await,
        )
    {
        return outcome;
    }
    let imports = &read.stores.imports;
    match &decision.service_import {
        ObjectWrite::Leave => {}
        ObjectWrite::Apply(body) => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &import_resource());
            if !done("import", apply(target, &api, imports, body, false).await) {
                return outcome;
            }
        }
        ObjectWrite::Delete(only) => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &import_resource());
            let result = delete(target, &api, imports, name, only).await;
            done("import_delete", result);
        }
    }
    if let Some(status) = &decision.service_import_status {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), namespace, &import_resource());
        if !done(
            "import_status",
            apply(target, &api, imports, status, true).await,
        ) {
            return outcome;
        }
    }
    if let Some(cache) = &read.cache {
        let derived = derived_name(namespace, name);
        let api: Api<Service> = Api::namespaced(client.clone(), namespace);
        match &decision.derived_service {
            ObjectWrite::Leave => {}
            ObjectWrite::Apply(body) => {
                let result = apply(target, &api, &cache.services, body, false).await;
                if matches!(result, Ok(true)) {
                    // The import lists the IP the API server gave it: the next pass reads it.
                    target.keys.trigger(namespace, name);
                }
                if !done("derived_service", result) {
                    return outcome;
                }
            }
            ObjectWrite::Delete(only) => {
                let result = delete(target, &api, &cache.services, &derived, only).await;
                done("derived_service_delete", result);
            }
        }
        for slice in &decision.apply_slices {
            let object = convert::slice_from_wit(slice.clone());
            let slice_name = object.metadata.name.clone().unwrap_or_default();
            let before = cache.slices.get(namespace, &slice_name);
            let writing = cache.slices.writing(namespace, &slice_name);
            let result = match apply_slice(client, target.field_manager, object).await {
                Ok(applied) => {
                    let changed = applied.metadata.resource_version.as_deref()
                        != before.as_ref().and_then(|b| b.resource_version());
                    if writing.wrote(kept::slice(applied)) {
                        target.keys.trigger(namespace, name);
                    }
                    Ok(changed)
                }
                Err(err) => {
                    if writing.abandoned() {
                        target.keys.trigger(namespace, name);
                    }
                    Err(err)
                }
            };
            if !done("slice", result) {
                return outcome;
            }
        }
        for only in &decision.delete_slices {
            let writing = cache.slices.writing(namespace, &only.name);
            let result = delete_slice(
                client,
                cluster,
                namespace,
                &only.name,
                Some(only.uid.clone()),
                Some(only.resource_version.clone()),
            )
            .await;
            let result = match result {
                Ok(()) => {
                    if writing.deleted(&derived, Some(only.uid.clone())) {
                        target.keys.trigger(namespace, name);
                    }
                    Ok(true)
                }
                Err(err) => {
                    if writing.abandoned() {
                        target.keys.trigger(namespace, name);
                    }
                    Err(source_of(err))
                }
            };
            done("slice_delete", result);
        }
    }
    outcome
}

/// Server-side applies an imported slice (retried on a conflict, as the MultiClusterService
/// side's copies are); never creates the namespace, unlike the copies' writes.
async fn apply_slice(
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
fn source_of(err: crate::controller::pass::write::apply::ApplyError) -> kube::Error {
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
async fn export_status(
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
trait Keep: Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize {
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
async fn apply<K>(
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
async fn delete<K>(
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

/// Which members lack which namespaces, as the clusterset side's writes found: per member and
/// namespace, when to try again and how long the wait after that will be. Keyed also by the
/// controller (its [`Keys`]), so two controllers in one process never share a gate.
pub mod gate {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    use std::time::{Duration, Instant};

    use super::Keys;

    /// The first wait, and the longest.
    pub const FIRST: Duration = Duration::from_secs(1);
    pub const LONGEST: Duration = Duration::from_secs(60);

    /// A member's namespace, for one controller.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    pub struct Key {
        controller: usize,
        cluster: String,
        namespace: String,
    }

    impl Key {
        pub fn new(keys: &Keys, cluster: &str, namespace: &str) -> Key {
            Key {
                controller: std::ptr::from_ref(keys) as usize,
                cluster: cluster.to_string(),
                namespace: namespace.to_string(),
            }
        }
    }

    #[cfg(test)]
    impl Key {
        pub fn for_test(controller: usize, cluster: &str, namespace: &str) -> Key {
            Key {
                controller,
                cluster: cluster.to_string(),
                namespace: namespace.to_string(),
            }
        }
    }

    struct Shut {
        until: Instant,
        wait: Duration,
    }

    fn gates() -> std::sync::MutexGuard<'static, HashMap<Key, Shut>> {
        static GATES: OnceLock<Mutex<HashMap<Key, Shut>>> = OnceLock::new();
        let gates = GATES.get_or_init(|| Mutex::new(HashMap::new()));
        gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How long until the gate opens, `None` when it is open. A shut gate whose time has come
    /// lets this pass through and stays shut for the others (this pass tries the namespace).
    pub fn closed(key: &Key) -> Option<Duration> {
        let mut gates = gates();
        let gate = gates.get_mut(key)?;
        let now = Instant::now();
        if now >= gate.until {
            gate.until = now + gate.wait;
            return None;
        }
        Some(gate.until - now)
    }

    /// The namespace is missing: shuts the gate, or doubles its wait (at most [`LONGEST`]);
    /// answers the wait.
    pub fn shut(key: &Key) -> Duration {
        let mut gates = gates();
        let now = Instant::now();
        let wait = match gates.get(key) {
            None => FIRST,
            Some(gate) => (gate.wait * 2).min(LONGEST),
        };
        gates.insert(
            key.clone(),
            Shut {
                until: now + wait,
                wait,
            },
        );
        wait
    }

    /// A write went through: the namespace exists.
    pub fn open(key: &Key) {
        let mut gates = gates();
        if !gates.is_empty() {
            gates.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::gate::{self, Key};

    #[test]
    fn a_missing_namespace_shuts_its_gate_doubling_the_wait_up_to_a_minute_until_a_write_goes_through()
     {
        let key = Key::for_test(1, "member2", "payments");
        let other = Key::for_test(2, "member2", "payments");
        assert_eq!(gate::closed(&key), None, "open at first");
        assert_eq!(gate::shut(&key), gate::FIRST);
        let wait = gate::closed(&key).expect("shut");
        assert!(wait <= gate::FIRST);
        assert_eq!(
            gate::closed(&other),
            None,
            "another controller's gate is its own"
        );
        let mut waits = Vec::new();
        for _ in 0..8 {
            waits.push(gate::shut(&key));
        }
        assert_eq!(waits[0], Duration::from_secs(2));
        assert_eq!(waits[1], Duration::from_secs(4));
        assert_eq!(*waits.last().unwrap(), gate::LONGEST);
        gate::open(&key);
        assert_eq!(gate::closed(&key), None, "open once a write went through");
        assert_eq!(gate::shut(&key), gate::FIRST, "and the wait starts over");
        gate::open(&key);
    }
}
