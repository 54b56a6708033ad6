//! The EndpointSlice sync controller (`mcs-policy sync`, [docs/sync.md](../../../docs/sync.md)).
//!
//! The folders follow what the controller does:
//! - [`cache`]: the watches and the stores they fill (everything a pass reads), and
//!   [`cache::triggers`], which turn what the watches see into MultiClusterServices to reconcile;
//! - [`pass`]: one pass over one MCS, as its steps: [`pass::read`] → [`pass::decide`] (the
//!   component) → [`pass::write`] → [`pass::report`] (conditions, Events);
//! - [`schedule`]: kube-runtime's `Controller` running the passes, up to `--workers` at once, the
//!   membership, the resync, the retries and the sweeps of orphaned copies;
//! - [`leader`]: leader election; [`probes`]: `/healthz`, `/readyz` and `/metrics`;
//! - [`names`]: the resources and labels every part names.
//!
//! The membership (which members exist and which are ready) is refreshed every probe
//! interval; a member that becomes ready, and every resync interval, reconciles every MCS
//! again, which repairs drift and catches returning members up.

mod args;
pub mod cache;
pub mod clusterset;
pub mod leader;
pub mod names;
pub mod pass;
pub mod probes;
pub mod schedule;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::clusters::origin::{FlagError, Origins};
use crate::clusters::{self, ClientOptions, ClusterError, Registry};
use crate::engine::EngineError;
pub use args::SyncArgs;
use cache::triggers;
use pass::decide::{Decider, memory};
use probes::health::Health;
use probes::metrics;

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Flags(#[from] FlagError),
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
        addr: crate::listen::ListenAddr,
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
    pub decider: Decider,
    /// Field manager of the applies.
    pub field_manager: String,
    /// What the controller remembers of each MCS between passes, per uid.
    pub remembered: memory::RememberedByMcs,
    /// `--stale-endpoint-timeout`, if set.
    pub stale_timeout: Option<Duration>,
    /// The controller's counters.
    pub metrics: Arc<metrics::Metrics>,
    /// This replica's readiness (`/readyz`): the runtime reports when it has synced.
    pub health: Arc<Health>,
    /// Why a member that is not ready is not, in the terms of the cluster source.
    pub not_ready: &'static str,
    /// What the watches hold: everything a pass reads.
    pub caches: cache::Caches,
    /// Where passes are requested.
    pub triggers: triggers::Triggers,
}

/// The tokio runtime `sync` runs on: one thread (`threads` 1, `--runtime-threads`' default:
/// see docs/architecture.md, "Threads") or a pool of `threads`.
pub fn tokio_runtime(threads: u16) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut pool = tokio::runtime::Builder::new_multi_thread();
        pool.worker_threads(threads.into());
        pool
    };
    builder.enable_all().build()
}

/// Runs the controller until `shutdown` resolves. The metrics and probes server starts first,
/// so `/healthz` answers while the component loads.
pub async fn run(args: SyncArgs, shutdown: impl Future<Output = ()>) -> Result<(), SyncError> {
    let origins = args.origins()?;
    let metrics = Arc::new(metrics::Metrics::default());
    let health = Arc::new(Health::default());
    let server = match args.metrics_listen {
        Some(addr) => Some(MetricsServer::start(addr, &metrics, &health).await?),
        None => None,
    };
    let outcome = start_and_sync(&args, &origins, &metrics, &health, shutdown).await;
    health.stopping();
    if let Some(server) = server {
        server.stop().await;
    }
    outcome
}

/// Loads the component, reaches the clusters, then syncs while leading until `shutdown`.
async fn start_and_sync(
    args: &SyncArgs,
    origins: &Origins,
    metrics: &Arc<metrics::Metrics>,
    health: &Arc<Health>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), SyncError> {
    // Compiling the component takes ~1 s of CPU: off the runtime's thread (the only one by
    // default), so the probes answer meanwhile.
    let engine_args = args.engine.clone();
    let engine = tokio::task::spawn_blocking(move || engine_args.load())
        .await
        .unwrap_or_else(|failed| std::panic::resume_unwind(failed.into_panic()))?;
    let client_options = ClientOptions {
        request_timeout: args.request_timeout,
    };
    let budget = Duration::from_millis(args.budget_ms);
    let name_problem = |name: &str| match engine.cluster_name_problem(name, budget) {
        Ok(problem) => problem,
        Err(err) => Some(format!("the policy component could not check it: {err}")),
    };
    let source = clusters::open(origins, &client_options, &engine, name_problem)
        .await?
        .with_outage_grace(args.outage_grace);
    // The members arrive with the first membership refresh, before any worker starts.
    let registry = Registry {
        hub: source.hub().clone(),
        members: Vec::new(),
        unsynced: Vec::new(),
    };
    let mut leadership = leader::start(registry.hub.client.clone(), &args.leader)?;
    health.following();
    tokio::spawn(report_lease_problems(
        leadership.lease_problems(),
        health.clone(),
    ));
    tracing::info!(
        hub = %source.hub().name,
        interval = ?args.resync_interval,
        workers = args.workers,
        "sync controller started"
    );
    let (triggers, changed) = triggers::Triggers::new(Arc::default());
    let ctx = Context {
        caches: cache::Caches::with_patience(cache::Patience {
            grace: args.outage_grace,
            // Longer than any request may wait for its answer (a watch resumes quietly).
            settle: args.request_timeout + Duration::from_secs(2),
        }),
        triggers,
        registry,
        decider: Decider { engine, budget },
        field_manager: args.field_manager.clone(),
        remembered: memory::RememberedByMcs::default(),
        stale_timeout: args.stale_endpoint_timeout,
        metrics: metrics.clone(),
        health: health.clone(),
        not_ready: source.not_ready(),
    };
    // Leader election (docs/sync.md#high-availability): sync only while leading; shutdown releases the Lease.
    let outcome = tokio::select! {
        _ = shutdown => Ok(()),
        outcome = lead(&mut leadership, metrics, health, schedule::sync(ctx, changed, source, args)) => outcome,
    };
    health.stopping();
    metrics.leader(false);
    leadership.release().await;
    tracing::info!("sync controller stopped");
    outcome
}

/// Hands the election's Lease problems to the readiness probe, until the election ends.
async fn report_lease_problems(
    mut problems: tokio::sync::watch::Receiver<Option<String>>,
    health: Arc<Health>,
) {
    while problems.changed().await.is_ok() {
        health.lease_problem(problems.borrow_and_update().clone());
    }
}

/// The metrics and probes server of `--metrics-listen`, stopped by [`MetricsServer::stop`] or
/// when dropped.
struct MetricsServer {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl MetricsServer {
    /// Listens on `addr` and serves `metrics` and `health` there.
    async fn start(
        addr: crate::listen::ListenAddr,
        metrics: &Arc<metrics::Metrics>,
        health: &Arc<Health>,
    ) -> Result<Self, SyncError> {
        let listener =
            crate::listen::bind(addr).map_err(|source| SyncError::Metrics { addr, source })?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            // Resolves on stop() and when the sender is dropped.
            stopped.await.ok();
        };
        let task = tokio::spawn(metrics::serve(
            listener,
            metrics.clone(),
            health.clone(),
            shutdown,
        ));
        Ok(MetricsServer { stop, task })
    }

    /// Stops serving and waits for the server to finish.
    async fn stop(self) {
        self.stop.send(()).ok();
        if let Ok(Err(err)) = self.task.await {
            tracing::warn!(error = %err, "metrics server failed");
        }
    }
}

/// Waits until this replica leads, then runs `work` until leadership is lost
/// ([`SyncError::LeadershipLost`]); the leader gauge and the readiness follow.
async fn lead(
    leadership: &mut leader::Leadership,
    metrics: &metrics::Metrics,
    health: &Health,
    work: impl Future<Output = ()>,
) -> Result<(), SyncError> {
    leadership.acquired().await;
    metrics.leader(true);
    health.leading();
    tokio::select! {
        () = leadership.lost() => Err(SyncError::LeadershipLost),
        () = work => Ok(()),
    }
}
