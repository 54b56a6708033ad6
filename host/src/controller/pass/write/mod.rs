//! The *apply* step of a pass: carries out what the component's `decide` answered — the
//! Services to create, replace or recreate, and in every member the copies to apply and the
//! stale copies to delete — every member at once. A write that fails is a fact for `conclude`;
//! the others go on. Every write is recorded in the member's cache (read your writes, see
//! [`crate::controller::cache::store`]), and every deletion carries the uid and resourceVersion the pass
//! read, so an object re-created or changed since is never deleted; a copy the pass did not
//! read (no uid known) is never deleted. A deletion refused on its preconditions (409: someone
//! changed the copy) is a failure of the pass: it is retried after its backoff on what the
//! caches hold then, and the change's own watch event brings a pass sooner.

pub mod apply;
pub mod namespace;
pub mod service;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::future::join_all;
use kube::api::Preconditions;

use crate::clusters::Cluster;
use crate::controller::Context;
use crate::controller::cache::{self, Cached};
use crate::controller::pass::read::snapshot::Snapshot;
use crate::controller::pass::report::Failure;
use crate::controller::pass::write::apply::{ApplyError, apply_copy, delete_slice};
use crate::controller::pass::write::service::{Propagated, Target, write};
use crate::engine::convert;
use crate::engine::types::{PassDecision, ServiceWrite, SliceWrite, WriteFailures};

/// What the writes of a pass did.
#[derive(Debug, Default)]
pub struct Written {
    /// Copies applied that changed the member's object.
    pub applied: usize,
    /// Stale copies deleted.
    pub deleted: usize,
    /// The Service writes that failed.
    pub services: Vec<Failure>,
    /// The applies and deletions that failed.
    pub slices: Vec<Failure>,
}

impl Written {
    /// The failures as `conclude` takes them.
    pub fn failures(&self) -> WriteFailures {
        let messages = |f: &[Failure]| f.iter().map(|f| f.message.clone()).collect();
        WriteFailures {
            service: messages(&self.services),
            dispatch: messages(&self.slices),
        }
    }
}

/// Carries out `decision`'s Service and EndpointSlice writes for the MCS `object`.
pub async fn write_all(
    ctx: &Context,
    object: &str,
    decision: &PassDecision,
    snapshot: &Snapshot,
) -> Written {
    let mut copies: BTreeMap<&str, Member<'_>> = BTreeMap::new();
    for write in &decision.copies {
        copies.entry(&write.cluster).or_default().apply.push(write);
    }
    for delete in &decision.deletions {
        copies
            .entry(&delete.cluster)
            .or_default()
            .delete
            .push(&delete.name);
    }
    let namespace = decision.plan.mcs.namespace.as_str();
    let services = join_all(
        decision
            .services
            .iter()
            .map(|w| write_service(ctx, object, snapshot, w)),
    );
    let slices = join_all(copies.into_iter().filter_map(|(cluster, member)| {
        let cache = ctx.caches.member(cluster)?;
        let cluster = ctx.registry.member(cluster)?;
        Some(member.write(ctx, object, namespace, cluster, cache, snapshot))
    }));
    let (services, slices) = futures::join!(services, slices);
    let mut written = Written {
        services: services.into_iter().flatten().collect(),
        ..Written::default()
    };
    for part in slices {
        written.applied += part.applied;
        written.deleted += part.deleted;
        written.slices.extend(part.slices);
    }
    written
}

/// One member's slice writes.
#[derive(Default)]
struct Member<'a> {
    apply: Vec<&'a SliceWrite>,
    delete: Vec<&'a String>,
}

impl Member<'_> {
    async fn write(
        self,
        ctx: &Context,
        object: &str,
        namespace: &str,
        cluster: &Cluster,
        cache: cache::Member,
        snapshot: &Snapshot,
    ) -> Written {
        let mut written = Written::default();
        let member = cluster.name.as_str();
        for write in self.apply {
            let copy = match snapshot.pass.copy(write) {
                Ok(copy) => copy,
                // A bug of the component's; nothing to apply.
                Err(message) => {
                    let err = ApplyError::Assemble {
                        cluster: member.to_string(),
                        message,
                    };
                    written.slices.push(Failure::logged(object, member, &err));
                    continue;
                }
            };
            let (namespace, name) = (namespace.to_string(), write.copy.name.clone());
            let before = snapshot
                .slice(member, &name)
                .and_then(|s| s.resource_version().map(str::to_string));
            let writing = cache
                .slices
                .writing(&namespace, &name)
                .or_else(look_again(ctx, object));
            match apply_copy(&cluster.client, member, &ctx.field_manager, copy).await {
                Ok(applied) => {
                    if applied.metadata.resource_version != before {
                        written.applied += 1;
                    }
                    if writing.wrote(cache::kept::slice(applied)) {
                        // Changed or deleted by someone else meanwhile: look again.
                        ctx.triggers.send(object, Instant::now());
                    }
                }
                Err(err) => {
                    if writing.abandoned() {
                        ctx.triggers.send(object, Instant::now());
                    }
                    written.slices.push(Failure::logged(object, member, &err));
                }
            }
        }
        let service = object.split_once('/').map_or(object, |(_, name)| name);
        for name in self.delete {
            // Never a deletion without the uid of what the pass read: a copy the snapshot does
            // not hold is not known to exist; its watch event, if it does, brings a new pass.
            let Some(only) = preconditions(snapshot.slice(member, name).map(|s| &**s)) else {
                tracing::debug!(mcs = object, cluster = member, %name,
                    "not in the caches: not deleted without its uid");
                continue;
            };
            let uid = only.uid.clone();
            let writing = cache
                .slices
                .writing(namespace, name)
                .or_else(look_again(ctx, object));
            match delete_slice(
                &cluster.client,
                member,
                namespace,
                name,
                only.uid,
                only.resource_version,
            )
            .await
            {
                Ok(()) => {
                    written.deleted += 1;
                    if writing.deleted(service, uid) {
                        // Re-created or changed by someone else meanwhile: look again.
                        ctx.triggers.send(object, Instant::now());
                    }
                }
                Err(err) => {
                    if writing.abandoned() {
                        ctx.triggers.send(object, Instant::now());
                    }
                    written.slices.push(Failure::logged(object, member, &err));
                }
            }
        }
        written
    }
}

/// The preconditions of deleting `read`, the object as read: its uid and, where known, its
/// resourceVersion. `None` when it was not read or its uid is not known: then it is not
/// deleted (a deletion without a uid could remove an object re-created since).
pub(crate) fn preconditions<K: Cached>(read: Option<&K>) -> Option<Preconditions> {
    let read = read?;
    Some(Preconditions {
        uid: Some(read.uid()?.to_string()),
        resource_version: read.resource_version().map(str::to_string),
    })
}

/// A pass of MCS `object` (`namespace/name`), asked for when a write ends without an answer
/// while someone else's changes of its object arrived ([`cache::Writing::or_else`]).
fn look_again(ctx: &Context, object: &str) -> impl FnOnce() + Send + Sync + 'static {
    let (triggers, object) = (ctx.triggers.clone(), object.to_string());
    move || triggers.send(&object, Instant::now())
}

/// Creates, replaces or recreates one member's Service; the failure, if any.
async fn write_service(
    ctx: &Context,
    object: &str,
    snapshot: &Snapshot,
    service: &ServiceWrite,
) -> Option<Failure> {
    let cluster = ctx.registry.member(&service.cluster)?;
    let cache = ctx.caches.member(&service.cluster)?;
    let kept = snapshot.template.as_ref()?;
    let template = match kept.decode() {
        Ok(template) => template,
        Err(err) => {
            let err = crate::controller::pass::write::service::ServiceError::NotAService {
                cluster: cluster.name.clone(),
                namespace: kept.namespace().to_string(),
                name: kept.name().to_string(),
                why: format!("the hub's template does not decode: {err}"),
            };
            return Some(Failure::logged(object, &cluster.name, &err));
        }
    };
    let template = &template;
    let read = snapshot.services.get(&cluster.name);
    let precondition = Preconditions {
        uid: read.and_then(|s| s.uid()).map(str::to_string),
        resource_version: read.and_then(|s| s.resource_version()).map(str::to_string),
    };
    let outcome = match convert::service_change(service.action.clone()) {
        Ok(change) => {
            let target = Target {
                client: &cluster.client,
                cluster: &cluster.name,
                cache: &cache.services,
                overtaken: AtomicBool::new(false),
            };
            let outcome = write(&ctx.decider, &target, template, change, precondition).await;
            if target.overtaken.load(Ordering::Relaxed) {
                // Changed by someone else right after our write: look again.
                ctx.triggers.send(object, Instant::now());
            }
            outcome
        }
        Err(e) => Err(
            crate::controller::pass::write::service::ServiceError::NotAService {
                cluster: cluster.name.clone(),
                namespace: template.metadata.namespace.clone().unwrap_or_default(),
                name: template.metadata.name.clone().unwrap_or_default(),
                why: e.to_string(),
            },
        ),
    };
    match outcome {
        Ok(Propagated::Unchanged) => None,
        Ok(outcome) => {
            tracing::info!(mcs = object, cluster = %cluster.name, ?outcome, "service");
            None
        }
        Err(err) => Some(Failure::logged(object, &cluster.name, &err)),
    }
}

#[cfg(test)]
mod tests {
    use kube::api::{DynamicObject, ObjectMeta};

    use super::*;

    fn object(uid: Option<&str>, version: Option<&str>) -> DynamicObject {
        DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some("member1-web-abc".into()),
                namespace: Some("shop".into()),
                uid: uid.map(str::to_string),
                resource_version: version.map(str::to_string),
                ..ObjectMeta::default()
            },
            data: serde_json::json!({}),
        }
    }

    #[test]
    fn a_deletion_carries_the_uid_and_version_read() {
        let read = object(Some("u-1"), Some("42"));
        let only = preconditions(Some(&read)).unwrap();
        assert_eq!(only.uid.as_deref(), Some("u-1"));
        assert_eq!(only.resource_version.as_deref(), Some("42"));
        let unversioned = object(Some("u-1"), None);
        let only = preconditions(Some(&unversioned)).unwrap();
        assert_eq!(only.uid.as_deref(), Some("u-1"));
        assert_eq!(only.resource_version, None);
    }

    #[test]
    fn nothing_is_deleted_without_a_uid() {
        assert!(preconditions::<DynamicObject>(None).is_none());
        assert!(preconditions(Some(&object(None, Some("42")))).is_none());
    }
}
