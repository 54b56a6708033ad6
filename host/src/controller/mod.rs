//! The EndpointSlice sync controller (`mcs-policy sync`, SPEC §4): every resync interval, and
//! whenever a [`watch`] sees a change, each MultiClusterService in the hub is reconciled by
//! [`reconcile::reconcile`] against the member clusters of the
//! [`Registry`](crate::clusters::Registry).

pub mod apply;
pub mod events;
pub mod metrics;
pub mod plan;
pub mod read;
pub mod reconcile;
pub mod service;
pub mod stale;
pub mod status;
pub mod watch;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::clusters::{ClusterError, Registry};
use crate::config::EngineArgs;
use crate::engine::{EngineError, PolicyEngine};
use plan::Planner;
use reconcile::chain;

/// `mcs-policy sync`: what to sync and how often.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Kubeconfig whose contexts are the clusters; the context name is the cluster name.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// Context of the hub cluster, where the MultiClusterServices live.
    #[arg(long, value_name = "CONTEXT")]
    pub hub: String,

    /// Context of a member cluster (repeatable). Default: every context except the hub.
    #[arg(long = "member", value_name = "CONTEXT")]
    pub members: Vec<String>,

    /// Time between two full passes over every MultiClusterService (`500ms`, `2s`, `1m`).
    #[arg(long, default_value = "2s", value_parser = crate::config::parse_positive_duration, value_name = "DURATION")]
    pub resync_interval: Duration,

    /// Field manager of the server-side applies into the member clusters.
    #[arg(long, default_value = "mcs-policy", value_name = "NAME")]
    pub field_manager: String,

    /// Time budget of one policy call, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub budget_ms: u64,

    /// Withdraw an unreachable provider's copies once it has been unreadable this long
    /// (SPEC §4.8; off by default: its copies stay).
    #[arg(long, value_parser = crate::config::parse_positive_duration, value_name = "DURATION")]
    pub stale_endpoint_timeout: Option<Duration>,

    /// Serve Prometheus metrics over plain HTTP at `GET /metrics` on this address.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("loading the policy component")]
    Engine(#[from] EngineError),
    #[error("building the cluster registry")]
    Clusters(#[from] ClusterError),
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
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(args: SyncArgs, shutdown: impl Future<Output = ()>) -> Result<(), SyncError> {
    let options = args.engine.options();
    let engine = match &args.engine.component {
        Some(path) => PolicyEngine::from_file(path, options)?,
        None => PolicyEngine::embedded(options)?,
    };
    let registry = Registry::from_kubeconfig(&args.kubeconfig, &args.hub, &args.members).await?;
    tracing::info!(
        hub = %registry.hub.name,
        members = ?registry.member_names(),
        interval = ?args.resync_interval,
        "sync controller started"
    );
    let ctx = Context {
        registry,
        planner: Planner {
            engine,
            budget: Duration::from_millis(args.budget_ms),
        },
        field_manager: args.field_manager,
        events: events::Memory::default(),
        stale_timeout: args.stale_endpoint_timeout,
        unreadable: stale::Memory::default(),
        metrics: Arc::new(metrics::Metrics::default()),
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
    let notify = Arc::new(Notify::new());
    let watches = watch::spawn(&ctx.registry, &notify);
    let mut ticks = tokio::time::interval(args.resync_interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        let next = async {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = notify.notified() => {}
            }
            pass(&ctx).await
        };
        tokio::select! {
            _ = &mut shutdown => break,
            _ = next => {}
        }
    }
    for task in watches {
        task.abort();
    }
    stop_metrics.send(()).ok();
    if let Some(server) = server
        && let Ok(Err(err)) = server.await
    {
        tracing::warn!(error = %err, "metrics server failed");
    }
    tracing::info!("sync controller stopped");
    Ok(())
}

/// One pass over every MultiClusterService in the hub.
pub async fn pass(ctx: &Context) {
    let hub = &ctx.registry.hub;
    ctx.metrics.pass();
    let all = match read::list_mcs(&hub.client, &hub.name).await {
        Ok(all) => all,
        Err(err) => {
            ctx.metrics.cluster_error(&hub.name);
            return tracing::warn!(error = %chain(&err), "cannot read the hub");
        }
    };
    let ready = ctx.registry.ready_members().await;
    if let Ok(mut memory) = ctx.events.lock() {
        memory.retain(|uid, _| all.iter().any(|m| m.metadata.uid.as_ref() == Some(uid)));
    }
    if let Ok(mut memory) = ctx.unreadable.lock() {
        memory.retain(|uid, _| all.iter().any(|m| m.metadata.uid.as_ref() == Some(uid)));
    }
    for mcs in &all {
        let object = read::object_name(mcs);
        let result = reconcile::reconcile(ctx, mcs, &ready).await;
        match &result {
            Ok(r) => {
                ctx.metrics.applied(r.applied);
                ctx.metrics.deleted(r.deleted);
                for cluster in &r.clusters {
                    ctx.metrics.cluster_error(cluster);
                }
            }
            Err(_) => ctx.metrics.cluster_error(&hub.name),
        }
        match result {
            Ok(r) if r.applied + r.deleted > 0 || !r.errors.is_empty() => tracing::info!(
                mcs = %object,
                applied = r.applied,
                deleted = r.deleted,
                errors = r.errors.len(),
                "synced"
            ),
            Ok(_) => {}
            Err(err) => tracing::warn!(mcs = %object, error = %chain(&err), "sync failed"),
        }
    }
}
