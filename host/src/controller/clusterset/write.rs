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
//! failing it, and shuts a gate for the member and namespace
//! ([`NamespaceGates`](super::gates::NamespaceGates)): until it opens, the passes over that
//! namespace's names write nothing there and ask to be run again when it opens (after 1 s, then twice as long each time the namespace is still missing, at most
//! 60 s), so whatever the number of names, a member is asked at most once per wait whether
//! the namespace exists, and the import arrives within that wait of its creation.
//!
//! Every write goes through its store's [`Store::writing`] guard: its own watch event is not
//! news, anybody else's change meanwhile asks for another pass.

use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::DynamicObject;
use kube::{Api, Client};

use super::names::{derived_name, import_resource};
pub use super::objects::Target;
use super::objects::{apply, apply_slice, delete, export_status, source_of};
use super::read::{Read, Snapshot};
use crate::clusters::api_error::{Kind, chain, kind_of};
use crate::controller::cache::{Cached, kept};
use crate::controller::pass::write::apply::delete_slice;
use crate::controller::pass::write::namespace::is_missing_namespace;
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
    let gates = target.keys.namespace_gates();
    if let Some(wait) = gates.closed(cluster, namespace) {
        tracing::debug!(cluster, %namespace, %name, "namespace missing in the member: nothing written there");
        outcome.waiting = Some(wait);
        return outcome;
    }
    // Whether the member lacks the namespace: its writes end, the pass goes on.
    let mut missing = false;
    let mut done = |what: &'static str, result: Result<bool, kube::Error>| -> bool {
        match result {
            Ok(wrote) => {
                gates.open(cluster, namespace);
                if wrote {
                    outcome.written += 1;
                    target.metrics.clusterset_write(what);
                }
            }
            Err(err) if is_missing_namespace(&err, namespace) => {
                let wait = gates.shut(cluster, namespace);
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
            let result = apply(target, &api, imports, body, false).await;
            if matches!(result, Ok(true)) && decision.slice_owner.is_none() {
                // A new import: its uid, which the derived Service and the slices name as
                // their owner, is read by the next pass.
                target.keys.trigger(namespace, name);
            }
            if !done("import", result) {
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
                let result = delete(target, &api, &cache.services, &only.name, only).await;
                done("derived_service_delete", result);
            }
        }
        let owner: Option<OwnerReference> = match decision
            .slice_owner
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
        {
            Ok(owner) => owner,
            Err(err) => {
                done("slice", Err(kube::Error::SerdeError(err)));
                return outcome;
            }
        };
        for slice in &decision.apply_slices {
            let mut object = convert::slice_from_wit(slice.clone());
            object.metadata.owner_references = owner.clone().map(|o| vec![o]);
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
