//! Copies left behind in a member that could not be reached when they stopped being wanted.
//! While a member is down, nothing can be deleted in it: if meanwhile its MultiClusterService
//! was deleted (its finalizer is released once the reachable members are clean) or stopped
//! being CrossCluster, no later pass of that MCS looks at the member again, and Karmada's users
//! would find its copies there for ever. So when a member becomes ready (and at start), the
//! controller [`sweep`]s it: it takes the slices labelled as our copies from the member's cache,
//! and for each MCS they belong to that is gone from the hub's cache, or is there but no longer
//! syncs, the component's `prune` names the copies to delete (on all of its markers; a slice
//! without them is never touched). Each deletion carries the uid and resourceVersion of the
//! slice as cached, so a slice re-created or changed since is left alone.
//! A member that is still a consumer but no longer wanted by an MCS that syncs is cleaned by
//! that MCS's own pass, which the catch-up triggers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube::api::DynamicObject;

use super::Context;
use super::apply::delete_slice;
use super::cache::{Cached, Health, KeptSlice};
use super::read::{DISPATCH_MANAGER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, mcs_json, object_name};
use super::report::{Failure, Report, chain};
use crate::clusters::Cluster;
use crate::engine::convert;
use crate::engine::types::McsRef;

/// Sweeps every member of `members` (concurrently), logging what it removed.
pub async fn sweep(ctx: &Context, members: &[String]) {
    let clusters: Vec<&Cluster> = members
        .iter()
        .filter_map(|m| ctx.registry.member(m))
        .collect();
    let reports = futures::future::join_all(clusters.iter().map(|c| sweep_member(ctx, c))).await;
    for (cluster, report) in clusters.iter().zip(reports) {
        ctx.metrics.deleted(report.deleted);
        for failure in &report.failures {
            ctx.metrics.cluster_error(&failure.cluster, failure.kind);
        }
        if report.deleted > 0 || !report.failures.is_empty() {
            tracing::info!(
                cluster = %cluster.name,
                deleted = report.deleted,
                errors = ?report.failures.iter().map(|f| &f.message).collect::<Vec<_>>(),
                "removed copies left behind while the member was unreachable"
            );
        }
    }
}

/// The copies in `cluster` of MCSs that no longer want them there, removed. Only when the
/// member's and the hub's caches are synced: a copy cached here was made for an MCS the hub's
/// cache has seen, so an MCS missing from it was deleted, not yet to come.
async fn sweep_member(ctx: &Context, cluster: &Cluster) -> Report {
    let mut report = Report::default();
    let Some(cache) = ctx.caches.member(&cluster.name) else {
        return report;
    };
    if cache.unreadable().is_some() || ctx.caches.hub.mcs.health() != Health::Synced {
        tracing::debug!(cluster = %cluster.name, "caches not synced: no sweep now");
        return report;
    }
    let copies: Vec<Arc<KeptSlice>> = cache
        .slices
        .all()
        .into_iter()
        .filter(|s| s.label(MANAGED_BY_LABEL) == Some(DISPATCH_MANAGER))
        .collect();
    if copies.is_empty() {
        return report;
    }
    let all = ctx.caches.hub.mcs.all();
    let in_hub: HashMap<String, &DynamicObject> =
        all.iter().map(|m| (object_name(m), &**m)).collect();
    for ((namespace, name), existing) in by_service(copies) {
        let key = format!("{namespace}/{name}");
        if let Some(mcs) = in_hub.get(&key)
            && still_syncs(ctx, mcs).await
        {
            continue;
        }
        let mcs = McsRef {
            name,
            namespace,
            ports: Vec::new(),
        };
        let wit = existing
            .iter()
            .map(|s| convert::slice_to_wit(&s.to_slice()))
            .collect();
        let stale = match ctx.decider.prune(&mcs, wit, Vec::new(), Vec::new()).await {
            Ok(stale) => stale,
            Err(err) => {
                report
                    .failures
                    .push(Failure::logged(&key, &cluster.name, &err));
                continue;
            }
        };
        for name in stale {
            let read = existing.iter().find(|s| s.name() == name);
            let uid = read.and_then(|s| s.uid()).map(str::to_string);
            let version = read.and_then(|s| s.resource_version()).map(str::to_string);
            cache.slices.writing(&mcs.namespace, &name);
            let deleted = delete_slice(
                &cluster.client,
                &cluster.name,
                &mcs.namespace,
                &name,
                uid.clone(),
                version,
            )
            .await;
            match deleted {
                Ok(()) => {
                    report.deleted += 1;
                    cache.slices.deleted(&mcs.namespace, &name, &mcs.name, uid);
                }
                Err(err) => {
                    cache.slices.abandoned(&mcs.namespace, &name);
                    report
                        .failures
                        .push(Failure::logged(&key, &cluster.name, &err));
                }
            }
        }
    }
    report
}

/// Whether an MCS still in the hub is one whose own passes look after its copies (the
/// component's `plan` says whether it is `sweepable`). An MCS the component cannot plan is left
/// alone too.
async fn still_syncs(ctx: &Context, mcs: &DynamicObject) -> bool {
    let object = object_name(mcs);
    let Ok(json) = mcs_json(mcs) else {
        return true;
    };
    match ctx
        .decider
        .plan(&object, json, ctx.registry.member_names())
        .await
    {
        Ok(plan) => !plan.sweepable,
        Err(err) => {
            tracing::warn!(mcs = %object, error = %chain(&err), "cannot plan; its copies stay");
            true
        }
    }
}

/// Copies grouped by the Service (and so the MCS) they belong to: `(namespace, name)`.
fn by_service(copies: Vec<Arc<KeptSlice>>) -> BTreeMap<(String, String), Vec<Arc<KeptSlice>>> {
    let mut groups: BTreeMap<(String, String), Vec<Arc<KeptSlice>>> = BTreeMap::new();
    for copy in copies {
        let Some(service) = copy.label(SERVICE_NAME_LABEL).map(str::to_string) else {
            continue;
        };
        let namespace = copy.namespace().to_string();
        groups.entry((namespace, service)).or_default().push(copy);
    }
    groups
}
