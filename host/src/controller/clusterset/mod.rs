//! The upstream Multi-Cluster Services API (KEP-1645: `multicluster.x-k8s.io` ServiceExport and
//! ServiceImport, `about.k8s.io` ClusterProperty) served over the same members, member to
//! member, by the same process, component and leader election as the MultiClusterServices
//! (docs/clusterset.md). The component decides everything (`clusterset-decide`,
//! docs/clusterset-rules.md); this folder reads, asks and writes:
//!
//! - [`cache`]: per member, the ServiceExports, ServiceImports and ClusterProperties, each a
//!   watch into a store; the member's Services and EndpointSlices are the shared member caches,
//!   which keep the exported names ([`keys`]). A member that does not serve the API (404) takes
//!   no part, and is checked again by its watch's retries;
//! - [`keys`]: the exported names (`namespace/name`) that get passes, and which change concerns
//!   which name;
//! - [`read`] → the component ([`crate::controller::pass::decide::Decider::clusterset_decide`])
//!   → [`write`].
//!
//! **Scheduling.** kube-runtime's `Controller` runs the passes, as it runs the MCS passes: a
//! second `Controller::for_stream_with` over a reflector store holding one synthetic object per
//! key ([`keys`]), every trigger through `reconcile_on`. It gives what a pass needs: at most one
//! pass per key at a time, triggers arriving meanwhile merged into one more pass, at most
//! `--workers` passes at once, requeues after a failure. Triggers: any change of a ServiceExport,
//! of our ServiceImport, of the ClusterProperty, of the exported Service or its slices, of the
//! derived Service or the imported slices — but the controller's own writes ([`Store::writing`]
//! guards) — a store that lists again, a membership change, and the resync (every key).
//!
//! Nothing here touches the MultiClusterService side: it runs beside it, the hub's MCS CRD
//! may be missing (the MCS side then idles, and the members' caches start anyway), and a member
//! without the upstream CRDs only lacks its exports and imports.
//!
//! [`Store::writing`]: crate::controller::cache::Store::writing

pub mod cache;
pub mod keys;
pub mod names;
pub mod read;
pub mod write;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt, future};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::store::{Store as Reader, Writer};
use kube::runtime::watcher;

use crate::clusters::Membership;
use crate::clusters::api_error::{Kind, chain};
use crate::controller::Context;
use crate::controller::cache::watch::News;
use crate::controller::cache::{Cached, Listener, Scope};
use crate::controller::names::object_name;
use crate::controller::schedule::retries::Retries;
use cache::{Hears, Resource};
use keys::Keys;
use names::{CLUSTER_PROPERTY, CREATED_BY, CREATED_BY_LABEL};

/// How often the clusterset caches follow the membership (which the MCS side refreshes every
/// 2 s; reading it is cheap).
const FOLLOW_INTERVAL: Duration = Duration::from_millis(500);

/// The clusterset side of `sync`: made before the member caches start (their news reaches it
/// through [`Clusterset::listener`]), then [`Clusterset::run`].
pub struct Clusterset {
    keys: Arc<Keys>,
    heard: Heard,
    store: Reader<DynamicObject>,
    requests: mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
}

impl Clusterset {
    /// No key yet; the member stores keep the keys' groups through `scope`.
    pub fn new(scope: Scope, metrics: Arc<crate::controller::probes::metrics::Metrics>) -> Self {
        let writer = Writer::new(keys::key_resource());
        let store = writer.as_reader();
        let (sender, requests) = mpsc::unbounded();
        let keys = Arc::new(Keys::new(scope, writer, sender));
        let heard = Heard {
            keys: keys.clone(),
            metrics,
            told: Arc::default(),
        };
        Clusterset {
            keys,
            heard,
            store,
            requests,
        }
    }

    /// `inner` (the MCS side's listener), also telling the clusterset what the member caches
    /// see.
    pub fn listener<L: Listener>(&self, inner: L) -> WithClusterset<L> {
        WithClusterset {
            inner,
            clusterset: self.heard.clone(),
        }
    }

    /// Runs [`Clusterset::run`] as a task of its own, from now (before the MCS side's first
    /// lists, which may wait for it: a hub without the MCS CRD), until the handle is dropped.
    pub fn spawn(
        self,
        ctx: Context,
        membership: Arc<RwLock<Membership>>,
        resync: Duration,
        workers: u16,
    ) -> Running {
        Running(tokio::spawn(self.run(ctx, membership, resync, workers)))
    }

    /// Syncs the exported names for ever: the clusterset caches follow `membership`, the
    /// Controller runs the passes, every key is passed over at every `resync`.
    pub async fn run(
        self,
        ctx: Context,
        membership: Arc<RwLock<Membership>>,
        resync: Duration,
        workers: u16,
    ) {
        let Clusterset {
            keys,
            heard,
            store,
            requests,
        } = self;
        let patience = ctx.caches.hub.mcs.patience();
        let mut members = cache::Members::default();
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            membership: membership.clone(),
            stores: members.shared.clone(),
            keys: keys.clone(),
            retries: Retries::default(),
        });
        let controller = Controller::for_stream_with(
            futures::stream::pending::<Result<DynamicObject, watcher::Error>>(),
            store,
            keys::key_resource(),
        )
        .with_config(controller::Config::default().concurrency(workers))
        .reconcile_on(requests)
        .run(reconcile, error_policy, shared.clone())
        .for_each(|outcome| {
            if let Err(err) = outcome
                && !matches!(
                    err,
                    controller::Error::ReconcilerFailed(..) | controller::Error::ObjectNotFound(..)
                )
            {
                tracing::warn!(error = %chain(&err), "clusterset controller failure");
            }
            future::ready(())
        });
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
                            keys.trigger_all();
                        }
                        told_no_mcs |= idle_without_mcs(&ctx, told_no_mcs);
                    }
                    _ = resyncs.tick() => {
                        retain_keys(&shared);
                        keys.trigger_all();
                    }
                }
            }
        };
        tokio::select! {
            () = controller => tracing::warn!("the clusterset controller's stream ended"),
            () = timers => {}
        }
    }
}

/// The running clusterset side; dropping it stops it.
pub struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// When the hub does not serve MultiClusterServices (404: no CRD), the MCS side idles: the
/// member caches must not wait for the hub's MCSs to list (they never will), so the scope is
/// told there are none. Returns whether it was told (logged once).
fn idle_without_mcs(ctx: &Context, told: bool) -> bool {
    let hub_has_no_mcs = ctx.caches.hub.mcs.failing().is_some_and(|f| f.not_served);
    if !hub_has_no_mcs {
        return false;
    }
    let scope = &ctx.triggers.scope;
    if scope.ready().now_or_never().is_none() {
        scope.reset(HashSet::new());
    }
    if !told {
        tracing::info!(hub = %ctx.registry.hub.name,
            "the hub serves no multiclusterservices (no CRD): MultiClusterService sync idles; exported services still sync");
    }
    true
}

/// What every clusterset pass shares.
struct Shared {
    ctx: Context,
    membership: Arc<RwLock<Membership>>,
    stores: Arc<RwLock<HashMap<String, cache::Stores>>>,
    keys: Arc<Keys>,
    /// Failed passes in a row, per key: the MCS passes' backoff.
    retries: Retries,
}

/// Why a clusterset pass is run again after a backoff.
#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error(transparent)]
    Decide(#[from] crate::controller::pass::decide::DecideError),
    #[error("{0} write(s) failed; the log says which")]
    Incomplete(usize),
    #[error("{0} member(s) could not be read")]
    Unreadable(usize),
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
    let ctx = &shared.ctx;
    let membership = current(&shared.membership);
    ctx.metrics.clusterset_pass();
    let (read, snapshot) = read::read(
        &ctx.caches,
        &shared.stores,
        &membership,
        ctx.not_ready,
        namespace,
        name,
        now(),
    );
    if read.members.is_empty() {
        return Ok(Action::await_change());
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
    Ok(Action::await_change())
}

/// Retries a failed pass after its key's backoff.
fn error_policy(key: Arc<DynamicObject>, _: &PassError, shared: Arc<Shared>) -> Action {
    shared.retries.failed(&object_name(&key))
}

/// At a resync: drops the keys nothing is left of in any member (no ServiceExport, no
/// ServiceImport, derived Service or imported slice of ours), and adds every name exported or
/// imported (keys a missed event would have added).
fn retain_keys(shared: &Shared) {
    let stores: Vec<cache::Stores> = {
        let stores = shared.stores.read().unwrap_or_else(|p| p.into_inner());
        stores.values().cloned().collect()
    };
    for member in &stores {
        for export in member.exports.all() {
            shared.keys.add(export.namespace(), export.name());
        }
        for import in member.imports.all() {
            if ours(&import) {
                shared.keys.add(import.namespace(), import.name());
            }
        }
    }
    let caches = shared.ctx.caches.members();
    shared.keys.retain(|namespace, name| {
        let derived = names::derived_name(namespace, name);
        stores.iter().any(|m| {
            m.exports.get(namespace, name).is_some()
                || m.imports.get(namespace, name).is_some_and(|i| ours(&i))
                // A member that cannot be read may still hold some: keep the key.
                || (!m.not_served() && m.unreadable().is_some())
        }) || caches.iter().any(|c| {
            c.services.get(namespace, &derived).is_some()
                || c.slices
                    .group(namespace, &derived)
                    .iter()
                    .any(|s| s.label(names::MCS_SERVICE_NAME_LABEL) == Some(name))
        })
    });
    shared.retries.retain(|key| {
        key.split_once('/')
            .is_some_and(|(namespace, name)| shared.keys.contains(namespace, name))
    });
}

/// Whether `object` carries our marker label.
fn ours(object: &DynamicObject) -> bool {
    object
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CREATED_BY_LABEL))
        .is_some_and(|v| v == CREATED_BY)
}

/// What the clusterset hears of the watches: its own stores' news, and (through
/// [`WithClusterset`]) the member Services' and EndpointSlices'.
#[derive(Clone)]
pub struct Heard {
    keys: Arc<Keys>,
    metrics: Arc<crate::controller::probes::metrics::Metrics>,
    /// Members whose lack of the API was logged.
    told: Arc<Mutex<HashSet<String>>>,
}

impl Heard {
    /// A member Service or EndpointSlice changed: the key of its group, if any, gets a pass.
    fn member_news<K: Cached>(&self, news: &News<'_, K>) {
        if let News::Synced { .. } = news {
            // A member store listed (or works again): what it shows may be new to every key.
            self.keys.trigger_all();
            return;
        }
        if let News::Changed {
            object,
            group: Some(group),
            left,
            own: false,
            ..
        } = news
        {
            let namespace = object.namespace();
            for group in std::iter::once(*group).chain(*left) {
                if let Some(name) = self.keys.of_group(namespace, group) {
                    self.keys.trigger(namespace, &name);
                }
            }
        }
    }

    /// A member's group was filled (listed since it became wanted): its key can be read.
    fn filled(&self, namespace: &str, group: &str) {
        if let Some(name) = self.keys.of_group(namespace, group) {
            self.keys.trigger(namespace, &name);
        }
    }
}

impl Hears for Heard {
    fn heard(&self, cluster: &str, resource: Resource, news: News<'_, DynamicObject>) {
        match news {
            News::Listed { object } => {
                if resource == Resource::Exports || (resource == Resource::Imports && ours(object))
                {
                    self.keys.add(object.namespace(), object.name());
                }
                if let Ok(mut told) = self.told.lock() {
                    told.remove(cluster);
                }
            }
            News::Changed {
                object,
                deleted,
                own,
                ..
            } => {
                let (namespace, name) = (object.namespace(), object.name());
                match resource {
                    Resource::Exports | Resource::Imports => {
                        if !deleted && (resource == Resource::Exports || ours(object)) {
                            self.keys.add(namespace, name);
                        }
                        if !own && self.keys.of_group(namespace, name).as_deref() == Some(name) {
                            self.keys.trigger(namespace, name);
                        }
                    }
                    Resource::Properties => {
                        if !own && name == CLUSTER_PROPERTY {
                            self.keys.trigger_all();
                        }
                    }
                }
            }
            News::Synced { .. } => self.keys.trigger_all(),
            News::Failed { kind, .. } => {
                if kind == Kind::NotFound {
                    let first = self
                        .told
                        .lock()
                        .map(|mut told| told.insert(cluster.to_string()))
                        .unwrap_or(false);
                    if first && resource != Resource::Properties {
                        tracing::info!(%cluster,
                            "the member does not serve the Multi-Cluster Services API (multicluster.x-k8s.io): it has no exports or imports; checked again periodically");
                    }
                } else {
                    self.metrics.cluster_error(cluster, kind);
                }
            }
        }
    }
}

/// The MCS side's listener (`inner`) that also tells the clusterset what the member caches
/// see.
#[derive(Clone)]
pub struct WithClusterset<L> {
    inner: L,
    clusterset: Heard,
}

impl<L: Listener> Listener for WithClusterset<L> {
    fn hear<K: Cached>(&self, cluster: &str, news: News<'_, K>) {
        self.clusterset.member_news(&news);
        self.inner.hear(cluster, news);
    }

    fn filled(&self, cluster: &str, namespace: &str, name: &str) {
        self.clusterset.filled(namespace, name);
        self.inner.filled(cluster, namespace, name);
    }

    fn scope(&self) -> Option<Scope> {
        self.inner.scope()
    }
}
