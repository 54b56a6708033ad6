//! Copies left behind in a member that could not be reached when they stopped being wanted.
//! While a member is down, nothing can be deleted in it: if meanwhile its MultiClusterService
//! was deleted (its finalizer is released once the reachable members are clean) or stopped
//! being CrossCluster, no later pass of that MCS looks at the member again, and Karmada's users
//! would find its copies there for ever. So the controller [`sweep`]s a member: it takes the
//! slices labelled as our copies from the member's cache, and for each MCS they belong to that
//! is gone from the hub's cache, or is there but no longer syncs, the component's `prune` names
//! the copies to delete (on all of its markers; a slice without them is never touched). Each
//! deletion carries the uid and resourceVersion of the slice as cached, so a slice re-created
//! or changed since is left alone; a copy whose uid the cache does not hold is not deleted.
//! A member that is still a consumer but no longer wanted by an MCS that syncs is cleaned by
//! that MCS's own pass, which the catch-up triggers.
//!
//! When: a member is owed a sweep ([`Sweeps`]) when it becomes ready (and at start), when its
//! cache lists again, when the hub's cache lists again (every ready member), and every
//! [`SWEEP_INTERVAL`] (every ready member). An owed member whose caches, or the hub's MCS
//! cache, are not synced stays owed and is swept once they are (the runtime offers the owed
//! sweeps again at every membership probe). A sweep whose deletions failed (or met a
//! precondition conflict: someone changed the copy) is retried on what the caches hold then,
//! after a jittered exponential backoff ([`retry_wait`]), [`SWEEP_ATTEMPTS`] attempts at most;
//! what is left after them waits for the next periodic sweep.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::DynamicObject;

use crate::clusters::{Cluster, Registry};
use crate::controller::Context;
use crate::controller::cache::{Cached, Health, KeptSlice};
use crate::controller::names::{
    DISPATCH_MANAGER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, object_name,
};
use crate::controller::pass::read::mcs_json;
use crate::controller::pass::report::{Failure, Report, chain};
use crate::controller::pass::write::apply::delete_slice;
use crate::controller::pass::write::preconditions;
use crate::engine::convert;
use crate::engine::types::McsRef;

/// How often every ready member is swept even when nothing asked for it: a copy left behind
/// by something no event reports (a pass stopped between its deletions, a deletion whose
/// retries ran out) goes within this long. A sweep runs the component's `plan` for every MCS
/// with copies in the member, so not at every resync.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(300);
/// Attempts of one member's sweep whose deletions fail.
pub const SWEEP_ATTEMPTS: u32 = 6;
/// The wait before the second attempt; each further one doubles it, up to [`SWEEP_RETRY_MAX`].
pub const SWEEP_RETRY_BASE: Duration = Duration::from_millis(500);
/// The longest wait between two attempts.
pub const SWEEP_RETRY_MAX: Duration = Duration::from_secs(8);

/// The wait after the `failures`-th failed attempt (1-based): [`SWEEP_RETRY_BASE`] doubling,
/// at most [`SWEEP_RETRY_MAX`], of which a random part (`jitter`, 0 to 1) of the upper half is
/// taken off, so members failing together do not retry together: between half and all of it.
pub fn retry_wait(failures: u32, jitter: f64) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    let full = SWEEP_RETRY_BASE
        .saturating_mul(1 << doublings)
        .min(SWEEP_RETRY_MAX);
    full.mul_f64(1.0 - jitter.clamp(0.0, 1.0) / 2.0)
}

/// A random number in `[0, 1)`.
fn jitter() -> f64 {
    let bits = RandomState::new().build_hasher().finish() >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// The members owed a sweep, and the sweep running now (one at a time).
pub struct Sweeps {
    owed: Arc<Mutex<BTreeSet<String>>>,
    running: Option<tokio::task::JoinHandle<()>>,
    last_full: Instant,
}

impl Default for Sweeps {
    fn default() -> Self {
        Sweeps {
            owed: Arc::default(),
            running: None,
            last_full: Instant::now(),
        }
    }
}

impl Sweeps {
    /// `members` are owed a sweep.
    pub fn owe(&self, members: impl IntoIterator<Item = String>) {
        if let Ok(mut owed) = self.owed.lock() {
            owed.extend(members);
        }
    }

    /// When [`SWEEP_INTERVAL`] has passed since the last time, owes every member of `ready`
    /// a sweep.
    pub fn periodic(&mut self, ready: &[String]) {
        if self.last_full.elapsed() >= SWEEP_INTERVAL {
            self.last_full = Instant::now();
            self.owe(ready.iter().cloned());
        }
    }

    /// Sweeps the owed members of `registry` in the background, unless a sweep is running or
    /// the hub's MCS cache is not synced (they stay owed: offered again later). A member is no
    /// longer owed once swept, or once it is no member.
    pub fn start(&mut self, base: &Context, registry: &Registry) {
        if self.running.as_ref().is_some_and(|r| !r.is_finished()) {
            return;
        }
        if base.caches.hub.mcs.health() != Health::Synced {
            return;
        }
        let members: Vec<String> = match self.owed.lock() {
            Ok(mut owed) => {
                owed.retain(|m| registry.member(m).is_some());
                std::mem::take(&mut *owed).into_iter().collect()
            }
            Err(_) => return,
        };
        if members.is_empty() {
            return;
        }
        let ctx = Context {
            registry: registry.clone(),
            ..base.clone()
        };
        let owed = self.owed.clone();
        self.running = Some(tokio::spawn(async move {
            let unswept = sweep(&ctx, &members).await;
            if let Ok(mut owed) = owed.lock() {
                owed.extend(unswept);
            }
        }));
    }
}

impl Drop for Sweeps {
    fn drop(&mut self) {
        if let Some(running) = &self.running {
            running.abort();
        }
    }
}

/// Sweeps every member of `members` (concurrently), logging what it removed. Returns the
/// members not swept because their caches or the hub's were not synced: still owed a sweep.
pub async fn sweep(ctx: &Context, members: &[String]) -> Vec<String> {
    let clusters: Vec<&Cluster> = members
        .iter()
        .filter_map(|m| ctx.registry.member(m))
        .collect();
    let reports = futures::future::join_all(clusters.iter().map(|c| sweep_retrying(ctx, c))).await;
    let mut unswept = Vec::new();
    for (cluster, report) in clusters.iter().zip(reports) {
        let Some(report) = report else {
            unswept.push(cluster.name.clone());
            continue;
        };
        if report.deleted > 0 || !report.failures.is_empty() {
            tracing::info!(
                cluster = %cluster.name,
                deleted = report.deleted,
                errors = ?report.failures.iter().map(|f| &f.message).collect::<Vec<_>>(),
                "removed copies left behind while the member was unreachable"
            );
        }
    }
    unswept
}

/// Sweeps `cluster`, again after a backoff while deletions fail or meet someone else's change,
/// [`SWEEP_ATTEMPTS`] times at most; `None` when the caches are not synced. The report sums the
/// deletions of every attempt and keeps the last attempt's failures.
async fn sweep_retrying(ctx: &Context, cluster: &Cluster) -> Option<Report> {
    let mut total = Report::default();
    for attempt in 1..=SWEEP_ATTEMPTS {
        let (report, again) = sweep_member(ctx, cluster).await?;
        ctx.metrics.deleted(report.deleted);
        for failure in &report.failures {
            ctx.metrics.cluster_error(&failure.cluster, failure.kind);
        }
        total.deleted += report.deleted;
        total.failures = report.failures;
        if !again {
            return Some(total);
        }
        if attempt == SWEEP_ATTEMPTS {
            tracing::warn!(cluster = %cluster.name, attempts = attempt,
                "copies left behind could not all be removed; the next periodic sweep tries again");
            break;
        }
        let wait = retry_wait(attempt, jitter());
        tracing::debug!(cluster = %cluster.name, ?wait, "sweeping again after a failure");
        tokio::time::sleep(wait).await;
    }
    Some(total)
}

/// The copies in `cluster` of MCSs that no longer want them there, removed, and whether to try
/// again (a deletion failed, or someone else changed a copy meanwhile). `None` unless the
/// member's and the hub's caches are synced: a copy cached here was made for an MCS the hub's
/// cache has seen, so an MCS missing from it was deleted, not yet to come.
async fn sweep_member(ctx: &Context, cluster: &Cluster) -> Option<(Report, bool)> {
    let mut report = Report::default();
    let mut again = false;
    let cache = ctx.caches.member(&cluster.name)?;
    if cache.unreadable().is_some() || ctx.caches.hub.mcs.health() != Health::Synced {
        tracing::debug!(cluster = %cluster.name, "caches not synced: swept once they are");
        return None;
    }
    let copies: Vec<Arc<KeptSlice>> = cache
        .slices
        .all()
        .into_iter()
        .filter(|s| s.label(MANAGED_BY_LABEL) == Some(DISPATCH_MANAGER))
        .collect();
    if copies.is_empty() {
        return Some((report, again));
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
            let read = existing.iter().find(|s| s.name() == name).map(|s| &**s);
            // Never a deletion without the uid of what was read.
            let Some(only) = preconditions(read) else {
                tracing::debug!(cluster = %cluster.name, namespace = %mcs.namespace, %name,
                    "no uid cached: not deleted");
                continue;
            };
            let uid = only.uid.clone();
            let writing = cache.slices.writing(&mcs.namespace, &name);
            let deleted = delete_slice(
                &cluster.client,
                &cluster.name,
                &mcs.namespace,
                &name,
                only.uid,
                only.resource_version,
            )
            .await;
            match deleted {
                Ok(()) => {
                    report.deleted += 1;
                    // Re-created or changed by someone else meanwhile: decide again.
                    again |= writing.deleted(&mcs.name, uid);
                }
                Err(err) => {
                    // A conflict included: someone changed the copy; the next attempt reads
                    // the cache again and decides again, never forcing.
                    writing.abandoned();
                    again = true;
                    report
                        .failures
                        .push(Failure::logged(&key, &cluster.name, &err));
                }
            }
        }
    }
    Some((report, again))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_wait_doubles_up_to_its_cap() {
        assert_eq!(retry_wait(1, 0.0), Duration::from_millis(500));
        assert_eq!(retry_wait(2, 0.0), Duration::from_secs(1));
        assert_eq!(retry_wait(5, 0.0), Duration::from_secs(8));
        assert_eq!(retry_wait(40, 0.0), SWEEP_RETRY_MAX);
    }

    #[test]
    fn the_jitter_takes_off_at_most_half() {
        assert_eq!(retry_wait(3, 1.0), Duration::from_secs(1));
        assert_eq!(retry_wait(3, 0.5), Duration::from_millis(1500));
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
            let wait = retry_wait(2, j);
            assert!(wait > Duration::from_millis(500) && wait <= Duration::from_secs(1));
        }
    }

    #[test]
    fn attempts_are_bounded() {
        let worst: Duration = (1..SWEEP_ATTEMPTS).map(|n| retry_wait(n, 0.0)).sum();
        assert_eq!(worst, Duration::from_millis(15_500));
    }
}
