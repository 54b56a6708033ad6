//! The clusterset side's kube-runtime `Controller` (one synthetic object per key), its timers
//! (the clusterset caches follow the membership; the resync), and one pass over one exported
//! name: read (caches) → `clusterset-decide` → write.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{StreamExt, future};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::watcher;

use super::{Clusterset, cache, keys, read, resync, write};
use crate::clusters::Membership;
use crate::clusters::api_error::chain;
use crate::controller::Context;
use crate::controller::cache::triggers::Changes;
use crate::controller::names::object_name;
use crate::controller::schedule::backlog::Bulk;
use crate::controller::schedule::retries::Retries;
use crate::engine::types::{ClustersetMemberState, ClustersetRead};
use keys::Keys;

/// How often the clusterset caches follow the membership (which the MCS side refreshes every
/// 2 s; reading it is cheap).
const FOLLOW_INTERVAL: Duration = Duration::from_millis(500);

/// What every clusterset pass shares.
pub(super) struct Shared {
    pub(super) ctx: Context,
    membership: Arc<RwLock<Membership>>,
    pub(super) stores: Arc<RwLock<HashMap<String, cache::Stores>>>,
    pub(super) keys: Arc<Keys>,
    /// Failed passes in a row, per key: the MCS passes' backoff.
    pub(super) retries: Retries,
    /// Passes over every key, behind the live changes.
    pub(super) bulk: Arc<Bulk>,
    /// The live changes waiting for their pass.
    pub(super) changes: Arc<Changes>,
    /// Since when each member has been unreadable (`--stale-endpoint-timeout`).
    pub(super) outages: read::Outages,
}

/// Why a clusterset pass is run again after a backoff.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error(transparent)]
    Decide(#[from] crate::controller::pass::decide::DecideError),
    #[error("{0} write(s) failed; the log says which")]
    Incomplete(usize),
    #[error("{0} member(s) could not be read")]
    Unreadable(usize),
}

/// Syncs the exported names of `clusterset` for ever: its caches follow `membership`, the
/// Controller runs the passes (live triggers at once, the rest through the backlog), every key
/// is passed over at every `resync`.
pub async fn run(
    clusterset: Clusterset,
    ctx: Context,
    membership: Arc<RwLock<Membership>>,
    resync: Duration,
) {
    let Clusterset {
        keys,
        heard,
        store,
        requests,
        bulk,
        changes,
        workers,
    } = clusterset;
    // The component this controller runs names the derived Services.
    super::names::use_component(&ctx.decider.engine);
    let patience = ctx.caches.hub.mcs.patience();
    let mut members = cache::Members::default();
    let shared = Arc::new(Shared {
        ctx: ctx.clone(),
        membership: membership.clone(),
        stores: members.shared.clone(),
        keys: keys.clone(),
        retries: Retries::default(),
        bulk: bulk.clone(),
        changes,
        outages: read::Outages::default(),
    });
    let (fed, from_backlog) = mpsc::unbounded();
    let controller = Controller::for_stream_with(
        futures::stream::pending::<Result<DynamicObject, watcher::Error>>(),
        store,
        keys::key_resource(),
    )
    .with_config(controller::Config::default().concurrency(workers))
    .reconcile_on(requests)
    .reconcile_on(from_backlog)
    .run(reconcile, error_policy, shared.clone())
    .for_each(|outcome| {
        match outcome {
            Err(controller::Error::ObjectNotFound(reference)) => {
                let namespace = reference.namespace.as_deref().unwrap_or_default();
                bulk.not_found(&format!("{namespace}/{}", reference.name));
            }
            Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
            Err(err) => tracing::warn!(error = %chain(&err), "clusterset controller failure"),
        }
        future::ready(())
    });
    let feeder = shared.bulk.feed(fed);
    let mut follow = tokio::time::interval(FOLLOW_INTERVAL.min(resync));
    follow.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut resyncs = tokio::time::interval(resync);
    resyncs.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut followed: Vec<(String, u64)> = Vec::new();
    let mut told_no_mcs = false;
    let timers = async {
        loop {
            tokio::select! {
                _ = follow.tick() => {
                    let Membership { registry, ready } = current(&membership);
                    members.follow(&registry, patience, &heard);
                    let now: Vec<(String, u64)> = registry
                        .members
                        .iter()
                        .map(|m| (m.name.clone(), m.client_id))
                        .collect();
                    let ready_now: Vec<(String, u64)> = now
                        .iter()
                        .filter(|(n, _)| ready.contains(n))
                        .cloned()
                        .collect();
                    if ready_now != followed {
                        // A member came, went or turned ready: every name may change.
                        followed = ready_now;
                        heard.everything();
                    }
                    told_no_mcs |= resync::idle_without_mcs(&ctx, told_no_mcs);
                }
                _ = resyncs.tick() => {
                    resync::retain_keys(&shared);
                    heard.everything();
                }
            }
        }
    };
    tokio::select! {
        () = controller => tracing::warn!("the clusterset controller's stream ended"),
        () = timers => {}
        () = feeder => {}
    }
}

/// The membership now.
fn current(membership: &RwLock<Membership>) -> Membership {
    match membership.read() {
        Ok(m) => m.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// The time now as `metav1.Time` text.
fn now() -> String {
    serde_json::to_value(Time(Timestamp::now()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One pass over the exported name `key`: read (caches), decide (component), write.
async fn reconcile(key: Arc<DynamicObject>, shared: Arc<Shared>) -> Result<Action, PassError> {
    let namespace = key.metadata.namespace.as_deref().unwrap_or_default();
    let name = key.metadata.name.as_deref().unwrap_or_default();
    let object = object_name(&key);
    // The pass carries the key's live change, and satisfies its place in the backlog.
    let changed_at = shared.changes.take(&object);
    let _running = shared.bulk.running(&object);
    let ctx = &shared.ctx;
    let membership = current(&shared.membership);
    ctx.metrics.clusterset_pass();
    let (read, snapshot) = read::read(
        &ctx.caches,
        &shared.stores,
        &membership,
        ctx.not_ready,
        &read::Staleness {
            outages: &shared.outages,
            timeout: ctx.stale_timeout,
        },
        namespace,
        name,
        now(),
    );
    if read.members.is_empty() {
        return Ok(Action::await_change());
    }
    if let Some(wait) = until_stale(&read, ctx.stale_timeout) {
        // A member turns stale then: what it exported is withdrawn by the pass after.
        let keys = shared.keys.clone();
        let (namespace, name) = (namespace.to_string(), name.to_string());
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            keys.trigger(&namespace, &name);
        });
    }
    let decision = match ctx.decider.clusterset_decide(&object, read).await {
        Ok(decision) => decision,
        Err(err) => {
            tracing::warn!(export = %object, error = %chain(&err), "clusterset pass failed");
            return Err(err.into());
        }
    };
    tracing::debug!(export = %object, ?decision, "clusterset decision");
    let clients = membership
        .registry
        .members
        .iter()
        .map(|m| (m.name.clone(), m.client.clone()))
        .collect();
    let target = write::Target {
        clients,
        field_manager: &ctx.field_manager,
        keys: &shared.keys,
        metrics: &ctx.metrics,
        namespace,
        name,
    };
    let outcome = write::write_all(&target, &decision, &snapshot).await;
    if let Some(at) = changed_at {
        ctx.metrics.clusterset_propagated(at.elapsed());
    }
    for (cluster, kind) in &outcome.failures {
        ctx.metrics.cluster_error(cluster, *kind);
    }
    if outcome.written > 0 || !outcome.failures.is_empty() {
        tracing::info!(export = %object, exporters = ?decision.exporters, winner = ?decision.winner,
            conflicts = ?decision.conflicts, written = outcome.written,
            errors = outcome.failures.len(), "clusterset synced");
    }
    if !outcome.failures.is_empty() {
        return Err(PassError::Incomplete(outcome.failures.len()));
    }
    let unreadable = snapshot.members.iter().filter(|m| !m.readable).count();
    if unreadable > 0 {
        // Its caches' list or fill triggers the key too; this is the safety net.
        return Err(PassError::Unreadable(unreadable));
    }
    shared.retries.succeeded(&object);
    if outcome.conflicts > 0 {
        // A ServiceExport changed since the cache showed it: decide again on what the cache
        // holds in a moment (its watch event is on the way).
        return Ok(Action::requeue(Duration::from_millis(200)));
    }
    if let Some(wait) = outcome.waiting {
        // A member lacks the namespace: try again when its gate opens (gates.rs).
        return Ok(Action::requeue(wait + Duration::from_millis(50)));
    }
    Ok(Action::await_change())
}

/// How long until the first unreadable member of `read` is unreadable for longer than
/// `timeout` (a millisecond past it), `None` without a timeout or such a member.
fn until_stale(read: &ClustersetRead, timeout: Option<Duration>) -> Option<Duration> {
    let timeout = u64::try_from(timeout?.as_millis()).unwrap_or(u64::MAX);
    read.members
        .iter()
        .filter(|m| matches!(m.state, ClustersetMemberState::Unreadable(_)))
        .filter(|m| m.unreadable_ms <= timeout)
        .map(|m| Duration::from_millis(timeout - m.unreadable_ms + 1))
        .min()
}

/// Retries a failed pass after its key's backoff.
fn error_policy(key: Arc<DynamicObject>, _: &PassError, shared: Arc<Shared>) -> Action {
    shared.retries.failed(&object_name(&key))
}
