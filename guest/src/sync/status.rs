//! The end of a pass (WIT `conclude`; docs/sync.md#status-conditions-and-events): the
//! MultiClusterService's conditions, with Karmada's types, reasons and messages and the metav1
//! rules (one condition per type; `lastTransitionTime` moves only when `status` does); the
//! Events due, emitted only when what they report changes (the status of a condition, the set
//! of unknown clusters or of clusters not synced, a new cluster without EndpointSlices), so a
//! resync does not repeat them; the bounds on message sizes; and whether the pass is retried.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::balancer;
pub use crate::condition::{Condition, join_bounded, merge};
use crate::{
    EventNote, LoadBalancerReport, Reported, StatusBasis, StatusNow, StatusUpdate, UnsyncedCluster,
    WriteFailures,
};

/// Condition type of the dispatch outcome.
pub const DISPATCHED: &str = "EndpointSliceDispatched";
/// Condition type of the Service propagation outcome.
pub const SERVICE_APPLIED: &str = "ServiceApplied";
/// Condition type of the validation outcome.
pub const VALID: &str = "Valid";
/// Condition type saying whether every cluster the MCS lists that exists is synced: ours, not
/// Karmada's (docs/sync.md#conditions).
pub const CLUSTERS_SYNCED: &str = "ClustersSynced";
/// Reason of `ClustersSynced=False`, and of the Event about each cluster not synced.
pub const CLUSTER_NOT_SYNCED: &str = "ClusterNotSynced";

/// Longest condition message, in bytes. The MultiClusterService CRD caps a condition's
/// `message` at 32768 characters: a real API server refuses a longer one (422), and the status
/// would then never update.
pub const CONDITION_LIMIT: usize = 32 * 1024;
/// Longest Event message, in bytes: Events are read by people (`kubectl describe`), and
/// events.k8s.io caps its `note` at 1 KiB.
pub const EVENT_LIMIT: usize = 1024;

impl Condition {
    /// `EndpointSliceDispatched` for a step that succeeded, or failed with `failures`.
    fn dispatched(failures: &[String]) -> Self {
        match bounded(failures, CONDITION_LIMIT) {
            None => Condition::new(
                DISPATCHED,
                true,
                "EndpointSliceDispatchedSucceed",
                "EndpointSlice are dispatched successfully",
            ),
            Some(message) => {
                Condition::new(DISPATCHED, false, "EndpointSliceDispatchedFailed", &message)
            }
        }
    }

    /// `ServiceApplied` for a step that succeeded, or failed with `failures`.
    fn service_applied(failures: &[String]) -> Self {
        match bounded(failures, CONDITION_LIMIT) {
            None => Condition::new(
                SERVICE_APPLIED,
                true,
                "ServiceAppliedSucceed",
                "Service is propagated to target clusters.",
            ),
            Some(message) => {
                Condition::new(SERVICE_APPLIED, false, "ServiceAppliedFailed", &message)
            }
        }
    }

    /// `ClustersSynced`: True, or False naming every listed cluster that is not synced.
    fn clusters_synced(unsynced: &[UnsyncedCluster]) -> Self {
        if unsynced.is_empty() {
            return Condition::new(
                CLUSTERS_SYNCED,
                true,
                "AllClustersSynced",
                "Every listed cluster that exists is synced",
            );
        }
        let messages: Vec<String> = unsynced.iter().map(not_synced).collect();
        let message = join_bounded(&messages, CONDITION_LIMIT);
        Condition::new(CLUSTERS_SYNCED, false, CLUSTER_NOT_SYNCED, &message)
    }

    /// `LoadBalancerStatusReported` as the load balancer report says.
    fn load_balancer(report: &LoadBalancerReport) -> Self {
        let message = join_bounded(std::slice::from_ref(&report.message), CONDITION_LIMIT);
        Condition::new(
            balancer::CONDITION,
            report.complete,
            &report.reason,
            &message,
        )
    }

    /// `Valid`: True, or False with the rendered validation errors (within the CRD's bound: an
    /// MCS can break rules without end, e.g. thousands of repeated port names).
    fn valid(invalid: Option<&str>) -> Self {
        match invalid {
            None => Condition::new(VALID, true, "ValidationSucceed", ""),
            Some(message) => {
                let message = join_bounded(&[message.to_string()], CONDITION_LIMIT);
                Condition::new(VALID, false, "ValidationFailed", &message)
            }
        }
    }
}

/// See WIT `conclude`.
pub fn conclude(
    basis: &StatusBasis,
    written: &WriteFailures,
    current: &StatusNow,
    reported: Option<&Reported>,
) -> StatusUpdate {
    let service: Vec<String> = [&basis.service_failures[..], &written.service[..]].concat();
    let dispatch: Vec<String> = [&basis.dispatch_failures[..], &written.dispatch[..]].concat();
    // A missing template is not retried: the hub's Service watch reports its arrival.
    let retry = !dispatch.is_empty()
        || !basis.load_balancer_failures.is_empty()
        || (!service.is_empty() && !basis.template_missing);
    let before = reported.cloned().unwrap_or_else(nothing_reported);
    let unchanged = |retry| StatusUpdate {
        conditions: None,
        events: Vec::new(),
        reported: before.clone(),
        retry,
    };
    if !basis.report {
        return unchanged(retry);
    }
    if let Some(invalid) = &basis.invalid {
        return StatusUpdate {
            conditions: merged(current, &[Condition::valid(Some(invalid))]),
            ..unchanged(false)
        };
    }
    let mut wanted = vec![Condition::valid(None), Condition::service_applied(&service)];
    if basis.dispatches {
        wanted.push(Condition::dispatched(&dispatch));
    }
    let load_balancer = basis.load_balancer.as_ref().map(Condition::load_balancer);
    wanted.extend(load_balancer.clone());
    // Ours, not Karmada's: added only once a listed cluster is not synced, then kept up to date.
    if !basis.unsynced.is_empty() || has_condition(current, CLUSTERS_SYNCED) {
        wanted.push(Condition::clusters_synced(&basis.unsynced));
    }
    let unsynced: Vec<String> = basis.unsynced.iter().map(not_synced).collect();
    let now = Reported {
        unknown: unknown(basis),
        incompatible: sorted(&basis.incompatible),
        unsynced: sorted(&unsynced),
        service_applied: Some(service.is_empty()),
        dispatched: basis.dispatches.then_some(dispatch.is_empty()),
        load_balancer: load_balancer.as_ref().map(|c| c.status),
    };
    let events = due(
        &before,
        &now,
        basis,
        &service,
        &dispatch,
        load_balancer.as_ref(),
    );
    StatusUpdate {
        conditions: merged(current, &wanted),
        events,
        reported: now,
        retry,
    }
}

fn nothing_reported() -> Reported {
    Reported {
        unknown: Vec::new(),
        incompatible: Vec::new(),
        unsynced: Vec::new(),
        service_applied: None,
        dispatched: None,
        load_balancer: None,
    }
}

/// The unknown names, as one sorted set over both roles.
fn unknown(basis: &StatusBasis) -> Vec<String> {
    let providers = basis
        .unknown_providers
        .iter()
        .map(|n| format!("provider {n}"));
    let consumers = basis
        .unknown_consumers
        .iter()
        .map(|n| format!("consumer {n}"));
    providers
        .chain(consumers)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn sorted(items: &[String]) -> Vec<String> {
    items
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The `ClusterNotSynced` message (and part of the condition's) of a cluster that exists but
/// is not synced.
pub fn not_synced(cluster: &UnsyncedCluster) -> String {
    format!(
        "Cluster {} is not synced: {}",
        cluster.cluster, cluster.reason
    )
}

/// Whether the current conditions have one of type `type_`.
fn has_condition(current: &StatusNow, type_: &str) -> bool {
    serde_json::from_str::<Vec<Value>>(&current.conditions)
        .is_ok_and(|conditions| conditions.iter().any(|c| c["type"] == type_))
}

/// The `APIIncompatible` message of a `role` (`Provider`, `Consumer`) cluster that does not
/// serve `discovery.k8s.io/v1` EndpointSlices (Karmada's wording).
pub fn incompatible(role: &str, cluster: &str) -> String {
    format!("{role} cluster {cluster} does not support EndpointSlice")
}

/// The Events due given what was reported `before` and what is reported `now`.
fn due(
    before: &Reported,
    now: &Reported,
    basis: &StatusBasis,
    service: &[String],
    dispatch: &[String],
    load_balancer: Option<&Condition>,
) -> Vec<EventNote> {
    let note = |warning: bool, reason: &str, message: String| EventNote {
        warning,
        reason: reason.to_string(),
        message,
    };
    let mut out = Vec::new();
    if now.unknown != before.unknown {
        for (role, names) in [
            ("Provider", &basis.unknown_providers),
            ("Consumer", &basis.unknown_consumers),
        ] {
            for name in names {
                let message = format!("{role} cluster {name} is not found");
                out.push(note(true, "ClusterNotFound", message));
            }
        }
    }
    if now.unsynced != before.unsynced {
        for cluster in &basis.unsynced {
            let message = join_bounded(&[not_synced(cluster)], EVENT_LIMIT);
            out.push(note(true, CLUSTER_NOT_SYNCED, message));
        }
    }
    for message in &now.incompatible {
        if !before.incompatible.contains(message) {
            out.push(note(true, "APIIncompatible", message.clone()));
        }
    }
    if now.service_applied != before.service_applied {
        out.push(match bounded(service, EVENT_LIMIT) {
            None => note(
                false,
                "SyncServiceSucceed",
                "Service is propagated to target clusters.".into(),
            ),
            Some(message) => note(true, "SyncServiceFailed", message),
        });
    }
    if now.dispatched.is_some() && now.dispatched != before.dispatched {
        out.push(match bounded(dispatch, EVENT_LIMIT) {
            None => note(
                false,
                "DispatchEndpointSliceSucceed",
                "EndpointSlice are dispatched successfully".into(),
            ),
            Some(message) => note(true, "DispatchEndpointSliceFailed", message),
        });
    }
    if let Some(c) = load_balancer.filter(|_| now.load_balancer != before.load_balancer) {
        // Named like the condition's reason; the message is the condition's, within an Event's
        // size.
        let message = join_bounded(std::slice::from_ref(&c.message), EVENT_LIMIT);
        out.push(note(!c.status, &c.reason, message));
    }
    out
}

/// The conditions of `current` after setting `wanted`, as JSON text; `None` when nothing would
/// change (or the current conditions are not a JSON array, which the CRD does not allow).
fn merged(current: &StatusNow, wanted: &[Condition]) -> Option<String> {
    let conditions: Vec<Value> = serde_json::from_str(&current.conditions).ok()?;
    merge(&conditions, wanted, current.generation, &current.now).map(|c| json!(c).to_string())
}

/// The message of a step that failed with `failures` (`None`: it did not fail), within `limit`.
fn bounded(failures: &[String], limit: usize) -> Option<String> {
    (!failures.is_empty()).then(|| join_bounded(failures, limit))
}

#[cfg(test)]
mod tests;
