//! Copies left behind in a member that could not be reached when they stopped being wanted.
//! While a member is down, nothing can be deleted in it: if meanwhile its MultiClusterService
//! was deleted (its finalizer is released once the reachable members are clean) or stopped
//! being CrossCluster, no later pass of that MCS looks at the member again, and Karmada's users
//! would find its copies there for ever. So when a member becomes ready (and at start), the
//! controller [`sweep`]s it: it lists the slices labelled as our copies, and for each MCS they
//! belong to that is gone from the hub, or is there but no longer syncs, the component's `prune`
//! names the copies to delete (on all of its markers; a slice without them is never touched).
//! A member that is still a consumer but no longer wanted by an MCS that syncs is cleaned by
//! that MCS's own pass, which the catch-up triggers.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use kube::api::DynamicObject;

use super::Context;
use super::apply::delete_slice;
use super::read::{SERVICE_NAME_LABEL, list_copies, list_mcs, mcs_json, object_name};
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

/// The copies in `cluster` of MCSs that no longer want them there, removed.
async fn sweep_member(ctx: &Context, cluster: &Cluster) -> Report {
    let mut report = Report::default();
    // The copies first, then the hub: a copy listed here was made for an MCS that existed
    // before this hub list, so an MCS missing from it was deleted, not yet to come.
    let copies = match list_copies(&cluster.client, &cluster.name).await {
        Ok(copies) => copies,
        Err(err) => {
            let failure = Failure::logged("(every multiclusterservice)", &cluster.name, &err);
            report.failures.push(failure);
            return report;
        }
    };
    if copies.is_empty() {
        return report;
    }
    let hub = &ctx.registry.hub;
    let all = match list_mcs(&hub.client, &hub.name).await {
        Ok(all) => all,
        Err(err) => {
            let failure = Failure::logged("(every multiclusterservice)", &hub.name, &err);
            report.failures.push(failure);
            return report;
        }
    };
    let in_hub: HashMap<String, &DynamicObject> = all.iter().map(|m| (object_name(m), m)).collect();
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
        let existing = existing.iter().map(convert::slice_to_wit).collect();
        let stale = match ctx
            .decider
            .prune(&mcs, existing, Vec::new(), Vec::new())
            .await
        {
            Ok(stale) => stale,
            Err(err) => {
                report
                    .failures
                    .push(Failure::logged(&key, &cluster.name, &err));
                continue;
            }
        };
        for name in stale {
            match delete_slice(&cluster.client, &cluster.name, &mcs.namespace, &name).await {
                Ok(()) => report.deleted += 1,
                Err(err) => report
                    .failures
                    .push(Failure::logged(&key, &cluster.name, &err)),
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
fn by_service(copies: Vec<EndpointSlice>) -> BTreeMap<(String, String), Vec<EndpointSlice>> {
    let mut groups: BTreeMap<(String, String), Vec<EndpointSlice>> = BTreeMap::new();
    for copy in copies {
        let Some(service) = copy.labels().get(SERVICE_NAME_LABEL).cloned() else {
            continue;
        };
        let namespace = copy.namespace().unwrap_or_default();
        groups.entry((namespace, service)).or_default().push(copy);
    }
    groups
}
