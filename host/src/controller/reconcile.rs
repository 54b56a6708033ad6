//! One MultiClusterService, one pass: read (client) → plan (component) → apply/prune (client)
//! → status (client). A failing member cluster is reported and skipped, never fatal.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use futures::future::join_all;
use k8s_openapi::api::discovery::v1 as discovery;
use kube::api::DynamicObject;

use super::Context;
use super::apply::{apply_copy, delete_slice, has_finalizer, set_finalizer};
use super::events::{Seen, due, emit, incompatible};
use super::messages;
use super::plan::PlanError;
use super::read::{ReadError, list_slice_objects, list_slices, mcs_json, object_name};
use super::service::{Outcome, ServiceError, ensure, read_template, service_ports};
use super::stale::kept_sources;
use super::status::{Condition, StatusError, set_conditions};
use crate::clusters::Cluster;
pub use crate::clusters::api_error::chain;
use crate::clusters::api_error::{Kind, classify};
use crate::engine::convert;
use crate::engine::types::{EndpointSlice, McsRef, ServicePort, SyncPlan};

/// A failure that stops the pass for this MCS (the hub side: plan, finalizer, status).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Apply(#[from] super::apply::ApplyError),
    #[error(transparent)]
    Status(#[from] StatusError),
}

/// What a pass did for one MCS.
#[derive(Debug, Default)]
pub struct Report {
    /// Copies applied.
    pub applied: usize,
    /// Stale copies deleted.
    pub deleted: usize,
    /// Member-cluster failures, rendered with their causes.
    pub errors: Vec<String>,
    /// The cluster and kind of each failure in `errors`.
    pub failures: Vec<(String, Kind)>,
    /// `APIIncompatible` messages: clusters that answered 404 to a list of EndpointSlices,
    /// i.e. do not serve them.
    pub incompatible: BTreeSet<String>,
    /// The Service could not be propagated to some member (a missing template does not count:
    /// the hub's Service watch reports its arrival).
    pub service_failed: bool,
}

impl Report {
    /// Whether every step succeeded (otherwise the MCS is retried after a backoff).
    pub fn succeeded(&self) -> bool {
        self.errors.is_empty() && !self.service_failed
    }

    pub(super) fn fail(
        &mut self,
        mcs: &str,
        cluster: &str,
        err: &(dyn std::error::Error + 'static),
    ) {
        let message = chain(err);
        let kind = classify(err);
        if kind.is_credentials() {
            tracing::warn!(mcs, cluster, error = %message, "member cluster refuses our credentials (SPEC §5): fix its kubeconfig or secret, or its RBAC");
        } else {
            tracing::warn!(mcs, cluster, error = %message, "member cluster step failed");
        }
        self.errors.push(message);
        self.failures.push((cluster.to_string(), kind));
    }

    /// Adds what another part of the same pass did.
    fn absorb(&mut self, other: Report) {
        self.applied += other.applied;
        self.deleted += other.deleted;
        self.errors.extend(other.errors);
        self.failures.extend(other.failures);
        self.incompatible.extend(other.incompatible);
        self.service_failed |= other.service_failed;
    }

    /// Fails a list of EndpointSlices in `cluster` (a `role` cluster); a 404 there means the
    /// cluster does not serve EndpointSlices at all.
    fn fail_list(&mut self, mcs: &str, role: &str, cluster: &str, err: &ReadError) {
        if classify(err) == Kind::NotFound {
            self.incompatible.insert(incompatible(role, cluster));
        }
        self.fail(mcs, cluster, err);
    }

    /// The reports of parts of one pass, as one.
    fn merged(parts: impl IntoIterator<Item = Report>) -> Report {
        let mut all = Report::default();
        for part in parts {
            all.absorb(part);
        }
        all
    }
}

/// Reconciles one MCS against the members that are `ready` now.
pub async fn reconcile(
    ctx: &Context,
    mcs: &DynamicObject,
    ready: &[String],
) -> Result<Report, ReconcileError> {
    let object = object_name(mcs);
    let plan = ctx
        .planner
        .plan(&object, mcs_json(mcs)?, ctx.registry.member_names())
        .await?;
    let hub = &ctx.registry.hub.client;
    if plan.deleting || !plan.active {
        if let (Some(invalid), false) = (&plan.invalid, plan.deleting) {
            set_conditions(hub, mcs, &[Condition::valid(Some(invalid.clone()))]).await?;
            return Ok(Report::default());
        }
        // Deleted, or no longer CrossCluster: withdraw every copy, then release the object.
        if !has_finalizer(mcs) {
            return Ok(Report::default());
        }
        let report = withdraw(ctx, &plan.mcs, ready).await;
        if report.errors.is_empty() {
            set_finalizer(hub, mcs, false).await?;
        }
        return Ok(report);
    }
    if !has_finalizer(mcs) {
        set_finalizer(hub, mcs, true).await?;
    }
    for name in &plan.unknown_providers {
        tracing::warn!(mcs = %object, "Provider cluster {name} is not found");
    }
    for name in &plan.unknown_consumers {
        tracing::warn!(mcs = %object, "Consumer cluster {name} is not found");
    }
    let unknown = plan
        .unknown_providers
        .iter()
        .map(|n| format!("provider {n}"))
        .chain(
            plan.unknown_consumers
                .iter()
                .map(|n| format!("consumer {n}")),
        )
        .collect();
    let template = read_template(hub, &plan.mcs.namespace, &plan.mcs.name).await;
    let ports = match &template {
        Ok(Some(t)) => Some(service_ports(t)),
        _ => None,
    };
    let template_missing = matches!(template, Ok(None));
    let service_errors = sync_service(ctx, &object, &plan, ready, template).await;
    let key = mcs.metadata.uid.clone().unwrap_or_else(|| object.clone());
    let mut report = dispatch(ctx, &object, &key, &plan, ready, ports.as_deref()).await;
    report.service_failed = !service_errors.is_empty() && !template_missing;
    set_conditions(
        hub,
        mcs,
        &[
            Condition::valid(None),
            Condition::service_applied(messages::condition(&service_errors)),
            Condition::dispatched(messages::condition(&report.errors)),
        ],
    )
    .await?;
    let now = Seen {
        unknown,
        incompatible: report.incompatible.clone(),
        service_applied: Some(service_errors.is_empty()),
        dispatched: Some(report.errors.is_empty()),
    };
    let (service_event, dispatch_event) = (
        messages::event(&service_errors),
        messages::event(&report.errors),
    );
    report_events(ctx, mcs, &plan, now, service_event, dispatch_event).await;
    Ok(report)
}

/// Emits the Events due for what changed since the last pass (SPEC §4.3, §4.9); remembers
/// the new state only when every Event was written, so a failed one is retried.
async fn report_events(
    ctx: &Context,
    mcs: &DynamicObject,
    plan: &SyncPlan,
    now: Seen,
    service_error: Option<String>,
    dispatch_error: Option<String>,
) {
    let Some(uid) = mcs.metadata.uid.clone() else {
        return;
    };
    let seen = match ctx.events.lock() {
        Ok(memory) => memory.get(&uid).cloned().unwrap_or_default(),
        Err(_) => return,
    };
    let notes = due(
        &seen,
        &now,
        &plan.unknown_providers,
        &plan.unknown_consumers,
        service_error.as_deref(),
        dispatch_error.as_deref(),
    );
    let mut written = true;
    for note in &notes {
        if let Err(err) = emit(&ctx.registry.hub.client, mcs, note).await {
            tracing::warn!(mcs = %object_name(mcs), error = %chain(&err), "event not written");
            written = false;
        }
    }
    if written && let Ok(mut memory) = ctx.events.lock() {
        memory.insert(uid, now);
    }
}

/// Ensures the hub's Service template in every ready cluster of P ∪ C (SPEC §4.7); returns
/// the failures of the `ServiceApplied` condition (none: it succeeded).
async fn sync_service(
    ctx: &Context,
    object: &str,
    plan: &SyncPlan,
    ready: &[String],
    template: Result<Option<k8s_openapi::api::core::v1::Service>, ServiceError>,
) -> Vec<String> {
    let template = match template {
        Ok(Some(template)) => template,
        Ok(None) => {
            let err = ServiceError::TemplateMissing {
                namespace: plan.mcs.namespace.clone(),
                name: plan.mcs.name.clone(),
            };
            return vec![chain(&err)];
        }
        Err(err) => return vec![chain(&err)],
    };
    let mut targets: Vec<&String> = plan.providers.iter().chain(&plan.consumers).collect();
    targets.sort();
    targets.dedup();
    let clusters = targets
        .into_iter()
        .filter(|m| ready.contains(m))
        .filter_map(|m| ctx.registry.member(m));
    let template = &template;
    let outcomes = join_all(clusters.map(|cluster| async move {
        let outcome = ensure(&ctx.planner, &cluster.client, &cluster.name, template).await;
        (cluster, outcome)
    }))
    .await;
    let mut errors = Vec::new();
    for (cluster, outcome) in outcomes {
        match outcome {
            Ok(Outcome::Unchanged) => {}
            Ok(outcome) => {
                tracing::info!(mcs = object, cluster = %cluster.name, ?outcome, "service")
            }
            Err(err) => {
                let message = chain(&err);
                tracing::warn!(mcs = object, error = %message, "service propagation failed");
                errors.push(message);
            }
        }
    }
    errors
}

/// Collect from the providers; then, in every ready member at once, filter and apply the
/// copies it must hold (when it is a consumer) and prune the stale ones.
async fn dispatch(
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
        // Skipped this pass; caught up when it answers again (SPEC §4.8).
        if ctx.registry.member(consumer).is_some() && !plan.providers.contains(consumer) {
            report.fail(object, consumer, &not_ready(ctx, consumer));
        }
    }
    let members = ready.iter().filter_map(|m| ctx.registry.member(m));
    let parts = join_all(members.map(|cluster| {
        let target = Target {
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
struct Target<'a> {
    ctx: &'a Context,
    object: &'a str,
    plan: &'a SyncPlan,
    cluster: &'a Cluster,
}

impl Target<'_> {
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
                    .planner
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
    let stale = match ctx.planner.prune(mcs, existing, desired, sources).await {
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
async fn withdraw(ctx: &Context, mcs: &McsRef, ready: &[String]) -> Report {
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
