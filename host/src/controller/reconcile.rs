//! One MultiClusterService, one pass: read (client) → plan (component) → the Service step and
//! the copies ([`dispatch`](super::dispatch)) (clients, component decisions) → status
//! (client). A failing member cluster is reported and skipped, never fatal.

use futures::future::join_all;
use kube::api::DynamicObject;

use super::Context;
use super::apply::{has_finalizer, set_finalizer};
use super::balancer;
use super::decide::DecideError;
use super::dispatch::{dispatch, withdraw};
use super::events::{Reported, due, emit};
use super::messages;
use super::read::{ReadError, mcs_json, object_name};
pub use super::report::{Report, chain};
use super::service::{Propagated, ServiceError, ensure, read_template, service_ports};
use super::status::{Condition, StatusError, set_conditions, set_status};
use crate::engine::types::SyncPlan;

/// A failure that stops the pass for this MCS (the hub side: plan, finalizer, status).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Plan(#[from] DecideError),
    #[error(transparent)]
    Apply(#[from] super::apply::ApplyError),
    #[error(transparent)]
    Status(#[from] StatusError),
}

/// Reconciles one MCS against the members that are `ready` now.
pub async fn reconcile(
    ctx: &Context,
    mcs: &DynamicObject,
    ready: &[String],
) -> Result<Report, ReconcileError> {
    let object = object_name(mcs);
    let plan = ctx
        .decider
        .plan(&object, mcs_json(mcs)?, ctx.registry.member_names())
        .await?;
    let hub = &ctx.registry.hub.client;
    if plan.deleting || !(plan.active || plan.load_balancer) {
        if let (Some(invalid), false) = (&plan.invalid, plan.deleting) {
            set_conditions(hub, mcs, &[Condition::valid(Some(invalid.clone()))]).await?;
            return Ok(Report::default());
        }
        // Deleted, or no longer CrossCluster: withdraw every copy, then release the object.
        return release(ctx, mcs, &plan, ready).await;
    }
    // Copies are made only for CrossCluster. A LoadBalancer MCS holding our finalizer had
    // copies made (its types changed while no webhook guarded them): withdraw them.
    let mut report = if plan.active {
        if !has_finalizer(mcs) {
            set_finalizer(hub, mcs, true).await?;
        }
        Report::default()
    } else {
        release(ctx, mcs, &plan, ready).await?
    };
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
    if plan.active {
        let dispatched = dispatch(ctx, &object, &key, &plan, ready, ports.as_deref()).await;
        report.absorb(dispatched);
    }
    report.service_failed = !service_errors.is_empty() && !template_missing;
    let balancer = if plan.load_balancer {
        let outcome = balancer::status(ctx, &key, mcs, &plan, ready).await?;
        report.load_balancer_failed = !outcome.failures.is_empty();
        Some(outcome)
    } else {
        None
    };
    let mut wanted = vec![
        Condition::valid(None),
        Condition::service_applied(messages::condition(&service_errors)),
    ];
    if plan.active {
        wanted.push(Condition::dispatched(messages::condition(&report.errors)));
    }
    let load_balancer = balancer
        .as_ref()
        .map(|b| Condition::load_balancer(&b.report));
    wanted.extend(load_balancer.clone());
    let ingress = balancer.and_then(|b| b.write);
    set_status(hub, mcs, &wanted, ingress).await?;
    let now = Reported {
        unknown,
        incompatible: report.incompatible.clone(),
        service_applied: Some(service_errors.is_empty()),
        dispatched: plan.active.then_some(report.errors.is_empty()),
        load_balancer: load_balancer.as_ref().map(|c| c.status),
    };
    let events = Due {
        service_error: messages::event(&service_errors),
        dispatch_error: messages::event(&report.errors),
        load_balancer,
    };
    report_events(ctx, mcs, &plan, now, events).await;
    Ok(report)
}

/// The Events' inputs besides what is seen: the failures of the steps, and the load balancer
/// condition.
struct Due {
    service_error: Option<String>,
    dispatch_error: Option<String>,
    load_balancer: Option<Condition>,
}

/// Withdraws every copy of an MCS that no longer has any (deleted, or not CrossCluster), then
/// releases it, when it carries our finalizer.
async fn release(
    ctx: &Context,
    mcs: &DynamicObject,
    plan: &SyncPlan,
    ready: &[String],
) -> Result<Report, ReconcileError> {
    if !has_finalizer(mcs) {
        return Ok(Report::default());
    }
    let report = withdraw(ctx, &plan.mcs, ready).await;
    if report.errors.is_empty() {
        set_finalizer(&ctx.registry.hub.client, mcs, false).await?;
    }
    Ok(report)
}

/// Emits the Events due for what changed since the last pass (docs/sync.md#provider-and-consumer-sets, docs/sync.md#status-conditions-and-events); remembers
/// the new state only when every Event was written, so a failed one is retried.
async fn report_events(
    ctx: &Context,
    mcs: &DynamicObject,
    plan: &SyncPlan,
    now: Reported,
    events: Due,
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
        events.service_error.as_deref(),
        events.dispatch_error.as_deref(),
        events.load_balancer.as_ref(),
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

/// Ensures the hub's Service template in every ready cluster of P ∪ C (docs/sync.md#service-propagation); returns
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
    // Consumers get the Service only for CrossCluster; a LoadBalancer MCS needs it in the
    // providers, where a member's cloud controller gives it a load balancer.
    let consumers: &[String] = if plan.active { &plan.consumers } else { &[] };
    let mut targets: Vec<&String> = plan.providers.iter().chain(consumers).collect();
    targets.sort();
    targets.dedup();
    let clusters = targets
        .into_iter()
        .filter(|m| ready.contains(m))
        .filter_map(|m| ctx.registry.member(m));
    let template = &template;
    let outcomes = join_all(clusters.map(|cluster| async move {
        let outcome = ensure(&ctx.decider, &cluster.client, &cluster.name, template).await;
        (cluster, outcome)
    }))
    .await;
    let mut errors = Vec::new();
    for (cluster, outcome) in outcomes {
        match outcome {
            Ok(Propagated::Unchanged) => {}
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
