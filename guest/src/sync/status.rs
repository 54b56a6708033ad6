//! The end of a pass (WIT `conclude`; docs/sync.md#status-conditions-and-events): the
//! MultiClusterService's conditions, with Karmada's types, reasons and messages and the metav1
//! rules (one condition per type; `lastTransitionTime` moves only when `status` does); the
//! Events due, emitted only when what they report changes (the status of a condition, the set
//! of unknown clusters or of clusters not synced, a new cluster without EndpointSlices), so a
//! resync does not repeat them; the bounds on message sizes; and whether the pass is retried.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::balancer;
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

const SEPARATOR: &str = "; ";
/// Room kept for the tail `"; and N more failures"`.
const TAIL_ROOM: usize = 40;

/// One condition to set (the time fields are filled in by [`merge`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

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

    fn new(type_: &'static str, status: bool, reason: &str, message: &str) -> Self {
        Condition {
            type_,
            status,
            reason: reason.to_string(),
            message: message.to_string(),
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

/// The conditions after setting `wanted` on `current`, or `None` when nothing would change.
/// Conditions of other types are kept as they are.
pub fn merge(
    current: &[Value],
    wanted: &[Condition],
    generation: Option<i64>,
    now: &str,
) -> Option<Vec<Value>> {
    let mut out = current.to_vec();
    let mut changed = false;
    for c in wanted {
        let status = if c.status { "True" } else { "False" };
        let existing = out.iter().position(|v| v["type"] == c.type_);
        let old = existing.map(|i| &out[i]);
        let same = old.is_some_and(|o| {
            o["status"] == status
                && o["reason"] == c.reason.as_str()
                && o["message"] == c.message.as_str()
                && o.get("observedGeneration").and_then(Value::as_i64) == generation
        });
        if same {
            continue;
        }
        let transition = match old {
            Some(o) if o["status"] == status => o["lastTransitionTime"].clone(),
            _ => json!(now),
        };
        let mut value = json!({
            "type": c.type_, "status": status, "reason": c.reason,
            "message": c.message, "lastTransitionTime": transition,
        });
        if let Some(g) = generation {
            value["observedGeneration"] = json!(g);
        }
        match existing {
            Some(i) => out[i] = value,
            None => out.push(value),
        }
        changed = true;
    }
    changed.then_some(out)
}

/// The message of a step that failed with `failures` (`None`: it did not fail), within `limit`.
fn bounded(failures: &[String], limit: usize) -> Option<String> {
    (!failures.is_empty()).then(|| join_bounded(failures, limit))
}

/// `parts` joined with `"; "` in at most `limit` bytes: as many whole parts as fit (the first
/// one cut if even it does not), then `"; and N more failures"` for the rest. A pass can fail
/// for every copy in every member: unbounded, the text would outgrow what the API server
/// accepts.
pub fn join_bounded(parts: &[String], limit: usize) -> String {
    let mut out = String::new();
    let mut kept = 0;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let room = if last { limit } else { limit - TAIL_ROOM };
        let separator = if kept == 0 { "" } else { SEPARATOR };
        if out.len() + separator.len() + part.len() <= room {
            out.push_str(separator);
            out.push_str(part);
            kept += 1;
            continue;
        }
        if kept == 0 {
            out.push_str(cut(part, limit - TAIL_ROOM - 3));
            out.push_str("...");
            kept = 1;
        }
        break;
    }
    let left = parts.len() - kept;
    if left > 0 {
        let noun = if left == 1 { "failure" } else { "failures" };
        out.push_str(&format!("{SEPARATOR}and {left} more {noun}"));
    }
    out
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests;
