//! The *apply* step of a pass: carries out what the component's `decide` answered — the
//! Services to create, replace or recreate, and in every member the copies to apply and the
//! stale copies to delete — every member at once. A write that fails is a fact for `conclude`;
//! the others go on.

use std::collections::BTreeMap;

use futures::future::join_all;

use super::Context;
use super::apply::{ApplyError, apply_copy, delete_slice};
use super::report::Failure;
use super::service::{Propagated, write};
use super::snapshot::Snapshot;
use crate::clusters::Cluster;
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
        let cluster = ctx.registry.member(cluster)?;
        Some(member.write(ctx, object, namespace, cluster, snapshot))
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
        snapshot: &Snapshot,
    ) -> Written {
        let mut written = Written::default();
        let member = cluster.name.as_str();
        for write in self.apply {
            let key = (member.to_string(), write.copy.name.clone());
            let before = snapshot.versions.get(&key).cloned().flatten();
            let copy = match snapshot.slices.copy(write) {
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
            match apply_copy(&cluster.client, member, &ctx.field_manager, copy).await {
                Ok(version) if version != before => written.applied += 1,
                Ok(_) => {}
                Err(err) => written.slices.push(Failure::logged(object, member, &err)),
            }
        }
        for name in self.delete {
            match delete_slice(&cluster.client, member, namespace, name).await {
                Ok(()) => written.deleted += 1,
                Err(err) => written.slices.push(Failure::logged(object, member, &err)),
            }
        }
        written
    }
}

/// Creates, replaces or recreates one member's Service; the failure, if any.
async fn write_service(
    ctx: &Context,
    object: &str,
    snapshot: &Snapshot,
    service: &ServiceWrite,
) -> Option<Failure> {
    let cluster = ctx.registry.member(&service.cluster)?;
    let template = snapshot.template.as_ref()?;
    let uid = snapshot.service_uids.get(&cluster.name).cloned().flatten();
    let outcome = match convert::service_change(service.action.clone()) {
        Ok(change) => {
            let client = &cluster.client;
            write(&ctx.decider, client, &cluster.name, template, change, uid).await
        }
        Err(e) => Err(super::service::ServiceError::NotAService {
            cluster: cluster.name.clone(),
            namespace: template.metadata.namespace.clone().unwrap_or_default(),
            name: template.metadata.name.clone().unwrap_or_default(),
            why: e.to_string(),
        }),
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
