//! The controller on kube-runtime: a [`Controller`] over the hub's MultiClusterServices, with
//! `reconcile` and `error_policy` as in kube-rs's controller-rs, and what kube-runtime cannot
//! know about: member clusters that come and go.
//!
//! - **Caches** ([`cache`](crate::controller::cache)): the hub's MCSs and Services and every member's
//!   EndpointSlices and Services, each filled by a watch; member caches start and stop with the
//!   membership. Nothing is reconciled before the caches have listed once (or failed to), and
//!   a pass reads only caches.
//! - **Triggers** ([`triggers`](crate::controller::cache::triggers)): the Controller's own stream is the hub's MCS
//!   watch filtered to spec and deletion changes; `reconcile_on` carries every other cache's
//!   changes (live changes). kube-runtime never reconciles one MCS twice at once, and merges
//!   triggers that arrive while it runs into one more pass. The resync reads the caches too:
//!   it lists nothing.
//! - **Backlog** ([`backlog`]): bulk passes (the start, the resync, the catch-up when a member
//!   becomes ready or a cache lists again) wait in a first-in first-out queue of ours and go to
//!   the Controller (a second `reconcile_on`) a few at a time, never ahead of a live change.
//! - **Membership**: refreshed every probe interval (2 s, or the resync interval if shorter);
//!   each pass syncs against the membership of its start.
//! - **Retries**: `error_policy` requeues a failed pass after a per-MCS backoff
//!   ([`retries`](crate::controller::schedule::retries)).
//! - **Finalizer**: not kube-runtime's `finalizer()` helper. That helper adds the finalizer to
//!   every object it sees and then waits for the finalizer write's own watch event; ours goes
//!   only on MCSs that sync (an invalid or LoadBalancer-only MCS must not carry it), and the
//!   controller's own metadata writes are filtered out as not news. The add and the release
//!   stay in the pass ([`apply`](crate::controller::pass::write::apply)).
//!
//! kube's `unstable-runtime` feature gives `for_stream_with` and `reconcile_on`.

pub mod backlog;
pub mod orphans;
pub mod retries;

#[cfg(test)]
mod scheduling_tests;

use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{StreamExt, future};
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::store::Writer;

use crate::clusters::api_error::classify;
use crate::clusters::{Membership, Registry, Source};
use crate::controller::cache::triggers::Reactions;
use crate::controller::cache::triggers::{Changes, watch_mcs};
use crate::controller::cache::{Caches, Health, Members};
use crate::controller::clusterset::Clusterset;
use crate::controller::names::{mcs_resource, object_name};
use crate::controller::pass::{self, chain};
use crate::controller::{Context, SyncArgs};
use backlog::Bulk;
use retries::Retries;

/// How often the membership (and each member's readiness) is refreshed, at most.
const PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// What every reconcile shares: the Controller's context.
pub struct Shared {
    /// Everything a pass needs but the members; `registry` is replaced per pass.
    base: Context,
    /// The members and which of them are ready, as last refreshed.
    membership: Arc<RwLock<Membership>>,
    /// Failed passes in a row, per MCS.
    retries: Retries,
    /// When each MCS's oldest unreconciled watched change was seen.
    changes: Arc<Changes>,
    /// Bulk passes not yet handed to the Controller, and the passes running.
    bulk: Bulk,
}

/// The longest wait at start for the caches to list once before the first passes; a cache
/// still listing then is unreadable to the passes until it has listed.
const FIRST_LIST_WAIT: Duration = Duration::from_secs(30);

/// Why a pass is retried after a backoff.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The hub's cache of MultiClusterServices cannot be read.
    #[error("the hub's multiclusterservices are not readable: {0}")]
    HubUnreadable(String),
    /// The pass stopped on the hub side (plan, finalizer, status).
    #[error(transparent)]
    Stopped(#[from] pass::ReconcileError),
    /// The pass ran, but a member, Service or load balancer step failed.
    #[error("{0} step(s) failed; the log and the MCS's conditions say which")]
    Incomplete(usize),
    /// The pass's task ended without an answer (a panic: a bug).
    #[error("the pass did not finish: {0}")]
    Lost(String),
}

/// Syncs for ever: the caches, the Controller, and the membership and resync timers. Passes
/// are requested through `changed` (the receiving end of `ctx.triggers`). Dropping the future
/// stops everything it started.
pub async fn sync(
    ctx: Context,
    changed: mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
    source: Source,
    args: &SyncArgs,
) {
    let resource = mcs_resource();
    let writer = Writer::new(resource.clone());
    let store = writer.as_reader();
    let changes = ctx.triggers.changes.clone();
    let membership = Arc::new(RwLock::new(Membership {
        registry: ctx.registry.clone(),
        ready: Vec::new(),
    }));
    let (relisted_tx, mut relisted) = mpsc::unbounded::<String>();
    let reactions = Reactions {
        triggers: ctx.triggers.clone(),
        mcs: ctx.caches.hub.mcs.clone(),
        relisted: relisted_tx,
        metrics: ctx.metrics.clone(),
    };
    let hub = source.hub();
    let (mcs_watch, mcs) = watch_mcs(hub, ctx.caches.hub.mcs.clone(), writer, reactions.clone());
    let services_watch = ctx.caches.hub.watch_services(hub, &reactions);
    let _tasks = Tasks(vec![mcs_watch, services_watch]);
    // The upstream Multi-Cluster Services API over the same members: it hears the member
    // caches too, and runs beside the MCS Controller.
    let clusterset = Clusterset::new(
        ctx.triggers.scope.clone(),
        ctx.metrics.clone(),
        args.workers,
    );
    let listener = clusterset.listener(reactions.clone());
    let _clusterset = clusterset.spawn(ctx.clone(), membership.clone(), args.resync_interval);
    let mut members = Members::new(&ctx.caches);
    let first = refresh(&source, &membership).await;
    if let Some(first) = &first {
        members.follow(&first.registry, &listener);
    }
    first_lists(&ctx.caches, FIRST_LIST_WAIT).await;
    let mut members_read = first.is_some();
    report_synced(&ctx, members_read);
    // The first lists were the start, not a return: every MCS is reconciled at once anyway.
    while relisted.try_recv().is_ok() {}
    // Owed sweeps are offered again at every probe: one skipped because the hub's cache had
    // not listed yet runs once it has.
    let mut sweeps = orphans::Sweeps::default();
    if let Some(first) = &first {
        sweeps.owe(first.returned.clone());
        sweeps.start(&ctx, &first.registry);
    }
    let (fed, from_backlog) = mpsc::unbounded();
    let shared = Arc::new(Shared {
        base: ctx.clone(),
        membership: membership.clone(),
        retries: Retries::default(),
        changes: changes.clone(),
        bulk: Bulk::new(usize::from(args.workers), changes.clone(), resource.clone()),
    });
    let everything = || shared.bulk.queue_all(keys(&store.state()));
    let controller = Controller::for_stream_with(mcs, store.clone(), resource)
        .with_config(controller::Config::default().concurrency(args.workers))
        .reconcile_on(changed)
        .reconcile_on(from_backlog)
        .run(reconcile_mcs, error_policy, shared.clone())
        .for_each(|outcome| {
            if let Err(controller::Error::ObjectNotFound(reference)) = &outcome {
                let namespace = reference.namespace.as_deref().unwrap_or_default();
                shared
                    .bulk
                    .not_found(&format!("{namespace}/{}", reference.name));
            }
            log_outcome(outcome);
            future::ready(())
        });
    let feeder = shared.bulk.feed(fed);
    let probe_every = PROBE_INTERVAL.min(args.resync_interval);
    let mut probes =
        tokio::time::interval_at(tokio::time::Instant::now() + probe_every, probe_every);
    probes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is at once: the first pass over every MCS.
    let mut resyncs = tokio::time::interval(args.resync_interval);
    resyncs.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let timers = async {
        loop {
            tokio::select! {
                _ = probes.tick() => {
                    let Some(news) = refresh(&source, &membership).await else {
                        sweeps.start(&ctx, &current(&membership).registry);
                        continue;
                    };
                    members_read = true;
                    report_synced(&ctx, members_read);
                    members.follow(&news.registry, &listener);
                    members.wake(&news.returned);
                    if news.unsynced_changed {
                        // The MCSs that list a cluster that is, or was, not synced report it.
                        everything();
                    }
                    if !news.returned.is_empty() {
                        tracing::info!(clusters = ?news.returned, "members ready: catching them up");
                        sweeps.owe(news.returned);
                        everything();
                    }
                    sweeps.start(&ctx, &news.registry);
                }
                Some(cluster) = relisted.next() => {
                    tracing::info!(cluster = %cluster, "a cache listed again: catching up");
                    report_synced(&ctx, members_read);
                    let Membership { registry, ready } = current(&membership);
                    if registry.member(&cluster).is_some() {
                        sweeps.owe([cluster]);
                    } else if cluster == registry.hub.name {
                        // The hub's caches: an MCS deleted meanwhile left copies everywhere.
                        sweeps.owe(ready);
                    }
                    sweeps.start(&ctx, &registry);
                    everything();
                }
                _ = resyncs.tick() => {
                    ctx.metrics.pass();
                    let all = store.state();
                    forget_gone(&shared, &all);
                    let Membership { registry, ready } = current(&membership);
                    sweeps.periodic(&ready);
                    sweeps.start(&ctx, &registry);
                    shared.bulk.queue_all(keys(&all));
                }
            }
            ctx.metrics.queue_depth(changes.len());
            ctx.caches.count(&ctx.metrics);
        }
    };
    tokio::select! {
        () = controller => tracing::warn!("the controller's stream ended"),
        () = timers => {}
        () = feeder => {}
    }
}

/// Waits until no cache is listing for the first time any more (each has listed, or failed
/// to), at most `limit`.
async fn first_lists(caches: &Caches, limit: Duration) {
    let started = Instant::now();
    let settled = || {
        let hub = &caches.hub;
        let members = caches.members();
        hub.mcs.health() != Health::Listing
            && hub.services.health() != Health::Listing
            && members.iter().all(|m| {
                m.slices.health() != Health::Listing && m.services.health() != Health::Listing
            })
    };
    while !settled() {
        if started.elapsed() > limit {
            tracing::warn!(waited = ?limit, "caches still listing; syncing without them until they have listed");
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::info!(took = ?started.elapsed(), "caches listed");
}

/// Tells the probes this replica syncs once it has read its members and the hub's caches
/// have listed (`/readyz`); a hub that serves no MultiClusterServices (404: the MCS side idles,
/// exported Services still sync) needs only its Services listed.
fn report_synced(ctx: &Context, members_read: bool) {
    let hub = &ctx.caches.hub;
    let mcs_idle =
        hub.mcs.failing().is_some_and(|f| f.not_served) && hub.services.health() == Health::Synced;
    if members_read && (hub.synced() || mcs_idle) {
        ctx.health.synced();
    }
}

/// The membership now.
fn current(membership: &RwLock<Membership>) -> Membership {
    match membership.read() {
        Ok(m) => m.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// The Controller's `reconcile`: one pass over the MCS against the members ready now.
/// Success waits for the next trigger; a failure goes to [`error_policy`].
///
/// kube-runtime polls every reconcile future on the Controller's own task, so passes would
/// share one thread; each runs as a task of its own instead, on any worker thread. The task is
/// aborted when the Controller drops the pass (the controller stops, or leadership is lost),
/// so nothing is written after that.
async fn reconcile_mcs(mcs: Arc<DynamicObject>, shared: Arc<Shared>) -> Result<Action, PassError> {
    let mut task = AbortOnDrop(tokio::spawn(pass(mcs, shared)));
    match (&mut task.0).await {
        Ok(outcome) => outcome,
        Err(lost) => Err(PassError::Lost(lost.to_string())),
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One pass, as [`reconcile_mcs`] runs it.
async fn pass(mcs: Arc<DynamicObject>, shared: Arc<Shared>) -> Result<Action, PassError> {
    let key = object_name(&mcs);
    let changed_at = shared.changes.take(&key);
    let _running = shared.bulk.running(&key);
    let Membership { registry, ready } = current(&shared.membership);
    let ctx = Context {
        registry,
        ..shared.base.clone()
    };
    ctx.metrics.queue_depth(shared.changes.len());
    let outcome = reconcile_key(&ctx, &key, &ready).await;
    if let Some(at) = changed_at {
        ctx.metrics.propagated(at.elapsed());
    }
    outcome?;
    shared.retries.succeeded(&key);
    Ok(Action::await_change())
}

/// The Controller's `error_policy`: retry after the MCS's backoff.
fn error_policy(mcs: Arc<DynamicObject>, _: &PassError, shared: Arc<Shared>) -> Action {
    shared.retries.failed(&object_name(&mcs))
}

/// What the Controller's stream reports beyond the passes, which log for themselves.
fn log_outcome(
    outcome: Result<
        (kube::runtime::reflector::ObjectRef<DynamicObject>, Action),
        controller::Error<PassError, kube::runtime::watcher::Error>,
    >,
) {
    match outcome {
        Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
        // A trigger for an MCS the hub does not have (a member slice of another Service).
        Err(controller::Error::ObjectNotFound(reference)) => {
            tracing::trace!(mcs = %reference, "no such multiclusterservice");
        }
        Err(err) => tracing::warn!(error = %chain(&err), "controller failure"),
    }
}

/// Reconciles the MCS `key` as the hub's cache holds it (with the controller's own last
/// writes); gone means nothing to do (the finalizer kept it until its copies were withdrawn).
/// A hub cache that cannot be read now is a failure: retried after a backoff, and every MCS is
/// reconciled once it has listed again.
async fn reconcile_key(ctx: &Context, key: &str, ready: &[String]) -> Result<(), PassError> {
    let hub = &ctx.registry.hub;
    let Some((namespace, name)) = key.split_once('/') else {
        return Ok(());
    };
    ctx.metrics.reconcile();
    let cached = &ctx.caches.hub.mcs;
    match cached.health() {
        Health::Synced => {}
        Health::Listing => return Err(PassError::HubUnreadable("not listed yet".into())),
        Health::Broken(failure) => return Err(PassError::HubUnreadable(failure.message)),
    }
    let Some(mcs) = cached.get(namespace, name) else {
        return Ok(());
    };
    let mut mcs = (*mcs).clone();
    let resource = mcs_resource();
    mcs.types = Some(kube::core::TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    match pass::reconcile(ctx, &mcs, ready).await {
        Ok(r) => {
            ctx.metrics.applied(r.applied);
            ctx.metrics.deleted(r.deleted);
            for failure in &r.failures {
                ctx.metrics.cluster_error(&failure.cluster, failure.kind);
            }
            if r.applied + r.deleted > 0 || !r.failures.is_empty() {
                tracing::info!(
                    mcs = key,
                    applied = r.applied,
                    deleted = r.deleted,
                    errors = r.failures.len(),
                    "synced"
                );
            }
            if r.succeeded() {
                Ok(())
            } else {
                Err(PassError::Incomplete(r.failures.len().max(1)))
            }
        }
        Err(err) => {
            ctx.metrics.cluster_error(&hub.name, classify(&err));
            tracing::warn!(mcs = key, error = %chain(&err), "sync failed");
            Err(err.into())
        }
    }
}

/// At a resync: forgets what the controller remembered about MCSs that are gone from the hub
/// (Events reported, unreadable providers, load balancers, retries, changes whose pass never
/// came, backlog places).
fn forget_gone(shared: &Shared, all: &[Arc<DynamicObject>]) {
    let uids: HashSet<&str> = all
        .iter()
        .filter_map(|m| m.metadata.uid.as_deref())
        .collect();
    let alive_uid = |uid: &String| uids.contains(uid.as_str());
    let ctx = &shared.base;
    if let Ok(mut memory) = ctx.remembered.lock() {
        memory.retain(|uid, _| alive_uid(uid));
    }
    let keys: HashSet<String> = all.iter().map(|m| object_name(m)).collect();
    shared.retries.retain(|key| keys.contains(key));
    shared.changes.retain(|key| keys.contains(key));
    shared.bulk.retain(|key| keys.contains(key));
}

/// The `namespace/name` of every MCS of `all`.
fn keys(all: &[Arc<DynamicObject>]) -> Vec<String> {
    all.iter().map(|m| object_name(m)).collect()
}

/// Background tasks (watches), aborted when dropped.
struct Tasks(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// What a membership refresh found.
struct News {
    registry: Registry,
    /// Members ready now that were not ready (or not members) before.
    returned: Vec<String>,
    /// The clusters that exist but are not synced, or why, changed.
    unsynced_changed: bool,
}

/// Reads the membership from `source` into `current`; `None` when it cannot be read (the
/// last one stays).
async fn refresh(source: &Source, current: &RwLock<Membership>) -> Option<News> {
    let fresh = match source.membership().await {
        Ok(fresh) => fresh,
        Err(err) => {
            tracing::warn!(error = %chain(&err), "cannot read the member clusters");
            return None;
        }
    };
    let mut current = current.write().ok()?;
    let returned = fresh
        .ready
        .iter()
        .filter(|name| !current.ready.contains(name))
        .cloned()
        .collect();
    let unsynced_changed = fresh.registry.unsynced != current.registry.unsynced;
    *current = fresh;
    Some(News {
        registry: current.registry.clone(),
        returned,
        unsynced_changed,
    })
}
