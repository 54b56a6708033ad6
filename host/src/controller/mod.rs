//! The EndpointSlice sync controller (`mcs-policy sync`, [docs/sync.md](../../../docs/sync.md)).
//! [`runtime`] runs it on kube-runtime's `Controller`: [`triggers`] turn changes into
//! MultiClusterServices to reconcile, up to `--workers` at once, and
//! [`reconcile::reconcile`] makes one pass over an MCS against the member clusters ready now.
//! The membership (which members exist and which are ready) is refreshed every probe
//! interval; a member that becomes ready, and every resync interval, reconciles every MCS
//! again, which repairs drift and catches returning members up.

pub mod apply;
mod args;
pub mod cache;
pub mod decide;
pub mod events;
pub mod leader;
pub mod memory;
pub mod metrics;
pub mod namespace;
pub mod orphans;
pub mod read;
pub mod reconcile;
pub mod report;
pub mod retries;
pub mod retry;
pub mod runtime;
pub mod service;
pub mod snapshot;
pub mod status;
pub mod triggers;
pub mod writes;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::clusters::karmada::Karmada;
use crate::clusters::{ClientOptions, ClusterError, Registry, Source};
use crate::engine::EngineError;
pub use args::SyncArgs;
use decide::Decider;

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
    pub decider: Decider,
    /// Field manager of the applies.
    pub field_manager: String,
    /// What the controller remembers of each MCS between passes, per uid.
    pub remembered: memory::RememberedByMcs,
    /// `--stale-endpoint-timeout`, if set.
    pub stale_timeout: Option<Duration>,
    /// The controller's counters.
    pub metrics: Arc<metrics::Metrics>,
    /// Why a member that is not ready is not, in the terms of the cluster source.
    pub not_ready: &'static str,
    /// What the watches hold: everything a pass reads.
    pub caches: cache::Caches,
    /// Where passes are requested.
    pub triggers: triggers::Triggers,
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
    let (triggers, changed) = triggers::Triggers::new(Arc::default());
    let ctx = Context {
        caches: cache::Caches::default(),
        triggers,
        registry,
        decider: Decider {
            engine,
            budget: Duration::from_millis(args.budget_ms),
        },
        field_manager: args.field_manager.clone(),
        remembered: memory::RememberedByMcs::default(),
        stale_timeout: args.stale_endpoint_timeout,
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
    // Leader election (docs/sync.md#high-availability): sync only while leading; shutdown releases the Lease.
    let metrics = ctx.metrics.clone();
    let outcome = tokio::select! {
        _ = shutdown => Ok(()),
        outcome = lead(&mut leadership, &metrics, runtime::sync(ctx, changed, source, &args)) => outcome,
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
