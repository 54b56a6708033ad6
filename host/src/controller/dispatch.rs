//! The copies step of a pass (docs/sync.md#dispatch-and-prune): collect the providers'
//! slices, then in every ready member at once apply the copies the component computes for it
//! (when it is a consumer) and delete those its `prune` names; and withdrawing every copy of
//! an MCS that has none any more.

use std::collections::BTreeMap;
use std::time::Instant;

use futures::future::join_all;
use k8s_openapi::api::discovery::v1 as discovery;

use super::Context;
use super::apply::{apply_copy, delete_slice};
use super::read::{ReadError, list_slice_objects, list_slices};
use super::report::Report;
use super::stale::kept_sources;
use crate::clusters::Cluster;
use crate::engine::convert;
use crate::engine::types::{EndpointSlice, McsRef, ServicePort, SyncPlan};

/// Collect from the providers; then, in every ready member at once, filter and apply the
/// copies it must hold (when it is a consumer) and prune the stale ones.
pub(super) async fn dispatch(
    ctx: &Context,
    object: &str,
    key: &str,
    plan: &SyncPlan,
    ready: &[String],
    service_ports: Option<&[ServicePort]>,
) -> Report {
    let mut report = Report::default();
    let (provided, unreadable) = collect(ctx, object, plan, ready, &mut report).await;
    // A provider we could not read keeps its copies in the consumers, unless it has been
    // unreadable past `--stale-endpoint-timeout`; everything else is pruned as usual.
    let kept = match ctx.unreadable.lock() {
        Ok(mut memory) => {
            let since = memory.entry(key.to_string()).or_default();
            let kept = kept_sources(since, &unreadable, ctx.stale_timeout, Instant::now());
            if since.is_empty() {
                memory.remove(key);
            }
            kept
        }
        Err(_) => unreadable,
    };
    for consumer in plan.consumers.iter().filter(|c| !ready.contains(c)) {
        // Skipped this pass; caught up when it answers again (docs/sync.md#unready-and-unreachable-clusters).
        if ctx.registry.member(consumer).is_some() && !plan.providers.contains(consumer) {
            report.fail(object, consumer, &not_ready(ctx, consumer));
        }
    }
    let members = ready.iter().filter_map(|m| ctx.registry.member(m));
    let parts = join_all(members.map(|cluster| {
        let target = MemberPass {
            ctx,
            object,
            plan,
            cluster,
        };
        target.sync_copies(&provided, service_ports, &kept)
    }))
    .await;
    report.absorb(Report::merged(parts));
    report
}

/// One member in one pass of one MCS.
struct MemberPass<'a> {
    ctx: &'a Context,
    object: &'a str,
    plan: &'a SyncPlan,
    cluster: &'a Cluster,
}

impl MemberPass<'_> {
    /// Applies the copies of `provided` (the providers' slices) this member must hold, when
    /// it is a consumer, and prunes the stale ones; a consumer keeps the copies of the `kept`
    /// providers (unreadable this pass).
    async fn sync_copies(
        self,
        provided: &[Provided],
        service_ports: Option<&[ServicePort]>,
        kept: &[String],
    ) -> Report {
        let (ctx, object, member) = (self.ctx, self.object, self.cluster.name.as_str());
        let mut report = Report::default();
        let mcs = &self.plan.mcs;
        let client = &self.cluster.client;
        let is_consumer = self.plan.consumers.iter().any(|c| c == member);
        // A provider's slices of this Service were listed moments ago: the same list.
        let listed;
        let existing = match provided.iter().find(|p| p.cluster == member) {
            Some(own) => &own.objects,
            None => match list_slice_objects(client, member, &mcs.namespace, &mcs.name).await {
                Ok(objects) => {
                    listed = objects;
                    &listed
                }
                Err(err) => {
                    let role = if is_consumer { "Consumer" } else { "Provider" };
                    report.fail_list(object, role, member, &err);
                    return report;
                }
            },
        };
        let versions: BTreeMap<&str, Option<&String>> = existing
            .iter()
            .map(|s| {
                let meta = &s.metadata;
                (
                    meta.name.as_deref().unwrap_or_default(),
                    meta.resource_version.as_ref(),
                )
            })
            .collect();
        let held: Vec<EndpointSlice> = existing.iter().map(convert::slice_to_wit).collect();
        let mut desired = Vec::new();
        // A member that is no longer a consumer keeps nothing, whoever could be read; a
        // consumer keeps the copies of the providers that could not be read, and of those
        // whose copies the component could not compute this pass.
        let mut sources = if is_consumer {
            kept.to_vec()
        } else {
            Vec::new()
        };
        if is_consumer {
            for Provided {
                cluster: provider,
                slices,
                ..
            } in provided.iter().filter(|p| p.cluster != member)
            {
                let copies = match ctx
                    .decider
                    .filter(mcs, service_ports, provider, member, slices)
                    .await
                {
                    Ok(copies) => copies,
                    Err(err) => {
                        report.fail(object, member, &err);
                        sources.push(provider.clone());
                        continue;
                    }
                };
                for copy in copies {
                    let name = copy.name.clone();
                    // A copy the member already holds as the component wants it is not
                    // written again (a resync then costs one list per member, not an apply
                    // per copy).
                    let canonical = convert::canonical(&copy);
                    if !held.contains(&canonical) {
                        let before = versions.get(name.as_str()).copied().flatten();
                        match apply_copy(client, member, &ctx.field_manager, copy).await {
                            Ok(version) if version.as_ref() != before => report.applied += 1,
                            Ok(_) => {}
                            Err(err) => report.fail(object, member, &err),
                        }
                    }
                    desired.push(name);
                }
            }
        }
        let keep = Keep { desired, sources };
        prune(ctx, object, mcs, self.cluster, held, keep, &mut report).await;
        report
    }
}

/// The error of a member skipped because it is not ready.
fn not_ready(ctx: &Context, cluster: &str) -> ReadError {
    ReadError::NotReady {
        cluster: cluster.to_string(),
        why: ctx.not_ready,
    }
}

/// One provider's slices of the Service as read this pass.
struct Provided {
    cluster: String,
    /// As listed.
    objects: Vec<discovery::EndpointSlice>,
    /// The same, as the component's records.
    slices: Vec<EndpointSlice>,
}

/// The slices of every ready provider (read at once), and the providers that could not be
/// read.
async fn collect(
    ctx: &Context,
    object: &str,
    plan: &SyncPlan,
    ready: &[String],
    report: &mut Report,
) -> (Vec<Provided>, Vec<String>) {
    let mut unreadable = Vec::new();
    let mut readable = Vec::new();
    for provider in &plan.providers {
        let Some(cluster) = ctx.registry.member(provider) else {
            continue;
        };
        if ready.contains(provider) {
            readable.push(cluster);
        } else {
            report.fail(object, provider, &not_ready(ctx, provider));
            unreadable.push(provider.clone());
        }
    }
    let (ns, name) = (&plan.mcs.namespace, &plan.mcs.name);
    let lists = join_all(readable.into_iter().map(|cluster| async move {
        let objects = list_slice_objects(&cluster.client, &cluster.name, ns, name).await;
        (cluster.name.clone(), objects)
    }))
    .await;
    let mut read = Vec::new();
    for (provider, objects) in lists {
        match objects {
            Ok(objects) => read.push(Provided {
                slices: objects.iter().map(convert::slice_to_wit).collect(),
                cluster: provider,
                objects,
            }),
            Err(err) => {
                report.fail_list(object, "Provider", &provider, &err);
                unreadable.push(provider);
            }
        }
    }
    (read, unreadable)
}

/// What stays of our copies in a member: the `desired` names and whatever was copied from the
/// `sources` (providers unreadable this pass).
#[derive(Default)]
pub struct Keep {
    pub desired: Vec<String>,
    pub sources: Vec<String>,
}

/// Deletes from `cluster` the copies of `mcs` among `existing` that the component says are
/// stale given what to `keep`.
pub(super) async fn prune(
    ctx: &Context,
    object: &str,
    mcs: &McsRef,
    cluster: &Cluster,
    existing: Vec<EndpointSlice>,
    keep: Keep,
    report: &mut Report,
) {
    let member = cluster.name.as_str();
    let Keep { desired, sources } = keep;
    let stale = match ctx.decider.prune(mcs, existing, desired, sources).await {
        Ok(stale) => stale,
        Err(err) => return report.fail(object, member, &err),
    };
    for name in stale {
        match delete_slice(&cluster.client, member, &mcs.namespace, &name).await {
            Ok(()) => report.deleted += 1,
            Err(err) => report.fail(object, member, &err),
        }
    }
}

/// Removes every copy of `mcs` from every ready member at once (deletion, or no longer
/// CrossCluster).
pub(super) async fn withdraw(ctx: &Context, mcs: &McsRef, ready: &[String]) -> Report {
    let object = format!("{}/{}", mcs.namespace, mcs.name);
    let object = object.as_str();
    let members = ready.iter().filter_map(|m| ctx.registry.member(m));
    let parts = join_all(members.map(|cluster| async move {
        let mut report = Report::default();
        let member = cluster.name.as_str();
        match list_slices(&cluster.client, member, &mcs.namespace, &mcs.name).await {
            Ok(existing) => {
                prune(
                    ctx,
                    object,
                    mcs,
                    cluster,
                    existing,
                    Keep::default(),
                    &mut report,
                )
                .await
            }
            Err(err) => report.fail(object, member, &err),
        }
        report
    }))
    .await;
    Report::merged(parts)
}
