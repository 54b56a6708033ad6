//! The EndpointSlice sync controller (`mcs-policy sync`, SPEC §4). Watches ([`watch`]) turn
//! changes into MultiClusterService keys on a work [`queue`]; `--workers` tasks take keys and
//! [`reconcile::reconcile`] each against the member clusters of the current
//! [`Membership`]. The membership (which members exist and which are ready) is refreshed
//! every probe interval; a member that becomes ready, and every resync interval, queues every
//! MCS again, which repairs drift and catches returning members up.

pub mod apply;
mod args;
pub mod events;
pub mod leader;
pub mod messages;
pub mod metrics;
pub mod namespace;
pub mod orphans;
pub mod plan;
pub mod queue;
pub mod read;
pub mod reconcile;
pub mod retry;
pub mod service;
pub mod stale;
pub mod status;
pub mod watch;

use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kube::Api;
use kube::api::DynamicObject;

use crate::clusters::api_error::{classify, kind_of};
use crate::clusters::karmada::Karmada;
use crate::clusters::{ClientOptions, ClusterError, Membership, Registry, Source};
use crate::engine::EngineError;
pub use args::SyncArgs;
use plan::Planner;
use queue::{Cause, Queue};
use reconcile::chain;

/// How often the membership (and each member's readiness) is refreshed, at most.
const PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("loading the policy component")]
    Engine(#[from] EngineError),
    #[error("building the cluster registry")]
    Clusters(#[from] ClusterError),
    #[error("starting leader election")]
    Leader(#[from] leader::LeaderError),
    #[error("lost the leader lease (not renewed within --renew-deadline); stopped syncing")]
    LeadershipLost,
    #[error("listening on {addr} for metrics failed")]
    Metrics {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// What every reconcile shares.
#[derive(Clone)]
pub struct Context {
    /// The hub and the member clusters.
    pub registry: Registry,
    /// The policy component: every decision.
    pub planner: Planner,
    /// Field manager of the applies.
    pub field_manager: String,
    /// What the Events last reported, per MCS uid.
    pub events: events::Memory,
    /// `--stale-endpoint-timeout`, if set.
    pub stale_timeout: Option<Duration>,
    /// When each provider was first seen unreadable, per MCS uid.
    pub unreadable: stale::Memory,
    /// The controller's counters.
    pub metrics: Arc<metrics::Metrics>,
    /// Why a member that is not ready is not, in the terms of the cluster source.
    pub not_ready: &'static str,
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(args: SyncArgs, shutdown: impl Future<Output = ()>) -> Result<(), SyncError> {
    let engine = args.engine.load()?;
    let client_options = ClientOptions {
        request_timeout: args.request_timeout,
    };
    // The members: the kubeconfig's other contexts, or Karmada's Cluster objects in the hub.
    let source = if args.karmada_clusters {
        if let Some(named) = args.members.iter().find(|m| m.is_named()) {
            return Err(ClusterError::ContextWithKarmada {
                name: named.name.clone(),
                context: named.context.clone(),
            }
            .into());
        }
        let only: Vec<String> = args.members.iter().map(|m| m.name.clone()).collect();
        Source::Karmada(
            Karmada::from_kubeconfig(
                &args.kubeconfig,
                &args.hub,
                &only,
                &client_options,
                engine.clone(),
            )
            .await?,
        )
    } else {
        let budget = Duration::from_millis(args.budget_ms);
        let name_problem = |name: &str| match engine.cluster_name_problem(name, budget) {
            Ok(problem) => problem,
            Err(err) => Some(format!("the policy component could not check it: {err}")),
        };
        Source::Fixed(
            Registry::from_kubeconfig(
                &args.kubeconfig,
                &args.hub,
                &args.members,
                &client_options,
                name_problem,
            )
            .await?,
        )
    };
    // The members arrive with the first membership refresh, before any worker starts.
    let registry = Registry {
        hub: source.hub().clone(),
        members: Vec::new(),
    };
    let mut leadership = leader::start(registry.hub.client.clone(), &args.leader)?;
    tracing::info!(
        hub = %source.hub().name,
        interval = ?args.resync_interval,
        workers = args.workers,
        "sync controller started"
    );
    let ctx = Context {
        registry,
        planner: Planner {
            engine,
            budget: Duration::from_millis(args.budget_ms),
        },
        field_manager: args.field_manager.clone(),
        events: events::Memory::default(),
        stale_timeout: args.stale_endpoint_timeout,
        unreadable: stale::Memory::default(),
        metrics: Arc::new(metrics::Metrics::default()),
        not_ready: source.not_ready(),
    };
    let (stop_metrics, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = match args.metrics_listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| SyncError::Metrics { addr, source })?;
            let shutdown = async move {
                stopped.await.ok();
            };
            Some(tokio::spawn(metrics::serve(
                listener,
                ctx.metrics.clone(),
                shutdown,
            )))
        }
        None => None,
    };
    // Leader election (SPEC §4.11): sync only while leading; shutdown releases the Lease.
    let metrics = ctx.metrics.clone();
    let outcome = tokio::select! {
        _ = shutdown => Ok(()),
        outcome = lead(&mut leadership, &metrics, sync(ctx, source, &args)) => outcome,
    };
    metrics.leader(false);
    leadership.release().await;
    stop_metrics.send(()).ok();
    if let Some(server) = server
        && let Ok(Err(err)) = server.await
    {
        tracing::warn!(error = %err, "metrics server failed");
    }
    tracing::info!("sync controller stopped");
    outcome
}

/// Waits until this replica leads, then runs `work` until leadership is lost
/// ([`SyncError::LeadershipLost`]); the leader gauge follows.
async fn lead(
    leadership: &mut leader::Leadership,
    metrics: &metrics::Metrics,
    work: impl Future<Output = ()>,
) -> Result<(), SyncError> {
    leadership.acquired().await;
    metrics.leader(true);
    tokio::select! {
        () = leadership.lost() => Err(SyncError::LeadershipLost),
        () = work => Ok(()),
    }
}

/// Syncs for ever: watches, workers, and the membership and resync timers. Dropping the
/// future stops everything it started.
pub async fn sync(ctx: Context, source: Source, args: &SyncArgs) {
    let queue = Arc::new(Queue::default());
    let membership = Arc::new(RwLock::new(Membership {
        registry: ctx.registry.clone(),
        ready: Vec::new(),
    }));
    let mut watches = watch::Watches::start(source.hub(), &queue);
    let mut sweeps = Tasks(Vec::new());
    if let Some(first) = refresh(&source, &membership).await {
        watches.follow(&first.registry, &queue);
        sweeps.0.push(spawn_sweep(&ctx, &first));
    }
    let _workers = Tasks(
        (0..args.workers)
            .map(|_| tokio::spawn(work(ctx.clone(), queue.clone(), membership.clone())))
            .collect(),
    );
    let probe_every = PROBE_INTERVAL.min(args.resync_interval);
    let mut probes =
        tokio::time::interval_at(tokio::time::Instant::now() + probe_every, probe_every);
    probes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut resyncs = tokio::time::interval(args.resync_interval);
    resyncs.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = probes.tick() => {
                let Some(news) = refresh(&source, &membership).await else {
                    continue;
                };
                watches.follow(&news.registry, &queue);
                if !news.returned.is_empty() {
                    tracing::info!(clusters = ?news.returned, "members ready: catching them up");
                    sweeps.0.retain(|s| !s.is_finished());
                    sweeps.0.push(spawn_sweep(&ctx, &news));
                    resync(&ctx, &queue).await;
                }
            }
            _ = resyncs.tick() => resync(&ctx, &queue).await,
        }
        ctx.metrics.queue_depth(queue.len());
    }
}

/// Sweeps the members that just became ready for copies left behind while they were away
/// ([`orphans`]), in the background.
fn spawn_sweep(base: &Context, news: &News) -> tokio::task::JoinHandle<()> {
    let ctx = Context {
        registry: news.registry.clone(),
        ..base.clone()
    };
    let members = news.returned.clone();
    tokio::spawn(async move { orphans::sweep(&ctx, &members).await })
}

/// Background tasks (workers, sweeps), aborted when dropped.
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
    *current = fresh;
    Some(News {
        registry: current.registry.clone(),
        returned,
    })
}

/// Queues every MultiClusterService of the hub, and forgets what the controller remembered
/// about those that are gone.
async fn resync(ctx: &Context, queue: &Queue) {
    let hub = &ctx.registry.hub;
    ctx.metrics.pass();
    let all = match read::list_mcs(&hub.client, &hub.name).await {
        Ok(all) => all,
        Err(err) => {
            ctx.metrics.cluster_error(&hub.name, classify(&err));
            return tracing::warn!(error = %chain(&err), "cannot read the hub");
        }
    };
    let alive = |uid: &String| all.iter().any(|m| m.metadata.uid.as_ref() == Some(uid));
    if let Ok(mut memory) = ctx.events.lock() {
        memory.retain(|uid, _| alive(uid));
    }
    if let Ok(mut memory) = ctx.unreadable.lock() {
        memory.retain(|uid, _| alive(uid));
    }
    for mcs in &all {
        queue.add(read::object_name(mcs), Cause::Resync);
    }
}

/// One worker: takes keys off the queue and reconciles them with the membership of the moment.
async fn work(base: Context, queue: Arc<Queue>, membership: Arc<RwLock<Membership>>) {
    loop {
        let (key, cause) = queue.next().await;
        let Ok(Membership { registry, ready }) = membership.read().map(|m| m.clone()) else {
            queue.done(&key);
            continue;
        };
        let ctx = Context {
            registry,
            ..base.clone()
        };
        let synced = reconcile_key(&ctx, &key, &ready).await;
        if let queue::Cause::Change(seen) = cause {
            ctx.metrics.propagated(seen.elapsed());
        }
        queue.done(&key);
        if synced {
            queue.forget(&key);
        } else {
            let wait = queue.retry_later(&key);
            tracing::debug!(mcs = %key, ?wait, "retrying after a failure");
        }
    }
}

/// Reads the MCS `key` from the hub and reconciles it; gone means nothing to do (the
/// finalizer kept it until its copies were withdrawn). Returns whether every step succeeded
/// (otherwise the key is retried after a backoff).
pub async fn reconcile_key(ctx: &Context, key: &str, ready: &[String]) -> bool {
    let hub = &ctx.registry.hub;
    let Some((namespace, name)) = key.split_once('/') else {
        return true;
    };
    ctx.metrics.reconcile();
    let resource = read::mcs_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(hub.client.clone(), namespace, &resource);
    let mut mcs = match api.get_opt(name).await {
        Ok(Some(mcs)) => mcs,
        Ok(None) => return true,
        Err(err) => {
            ctx.metrics.cluster_error(&hub.name, kind_of(&err));
            tracing::warn!(mcs = key, error = %chain(&err), "cannot read the multiclusterservice");
            return false;
        }
    };
    mcs.types = Some(kube::core::TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    match reconcile::reconcile(ctx, &mcs, ready).await {
        Ok(r) => {
            ctx.metrics.applied(r.applied);
            ctx.metrics.deleted(r.deleted);
            for (cluster, kind) in &r.failures {
                ctx.metrics.cluster_error(cluster, *kind);
            }
            if r.applied + r.deleted > 0 || !r.errors.is_empty() {
                tracing::info!(
                    mcs = key,
                    applied = r.applied,
                    deleted = r.deleted,
                    errors = r.errors.len(),
                    "synced"
                );
            }
            r.succeeded()
        }
        Err(err) => {
            ctx.metrics.cluster_error(&hub.name, classify(&err));
            tracing::warn!(mcs = key, error = %chain(&err), "sync failed");
            false
        }
    }
}
