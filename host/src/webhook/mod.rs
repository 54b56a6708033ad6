//! The admission webhook: `router(state)` (pure, so tests can call it without TLS), the
//! handlers that parse an AdmissionReview and hand it to the component, and `serve`, which puts
//! the router behind TLS with certificate and component reloading and graceful shutdown.

mod deadline;
mod handlers;
pub mod managed;
pub mod metrics;
pub mod review;
mod serve;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::sync::Semaphore;

use crate::duration::parse_go_duration;
use crate::engine::{EngineArgs, PolicyEngine};
use crate::settings::{ContextFile, Policy, PolicyArgs};
pub use metrics::Metrics;
pub use serve::{ServeError, serve};

/// The API server's own limit on admission request bodies.
pub const MAX_BODY_BYTES: usize = 3 << 20;

/// `mcs-policy serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (HTTPS only): HOST:PORT (127.0.0.1:8443, [::1]:8443), or :PORT for
    /// every address, IPv6 and IPv4 (one dual-stack socket; IPv4 only on a host without IPv6),
    /// as in a Pod of an IPv4, IPv6 or dual-stack cluster.
    #[arg(
        long,
        env = "MCS_POLICY_LISTEN",
        default_value = "127.0.0.1:8443",
        value_name = "ADDR"
    )]
    pub listen: crate::listen::ListenAddr,

    /// PEM certificate chain (reloaded when the file changes).
    #[arg(
        long,
        env = "MCS_POLICY_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "self_signed"
    )]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key (reloaded when the file changes).
    #[arg(
        long,
        env = "MCS_POLICY_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,

    /// Make a CA and a certificate for localhost/127.0.0.1/::1 and serve with it; prints where
    /// the CA bundle was written.
    #[arg(long)]
    pub self_signed: bool,

    /// Where --self-signed writes ca.crt, tls.crt and tls.key.
    #[arg(long, value_name = "DIR", default_value_os_t = std::env::temp_dir().join("mcs-policy-self-signed"))]
    pub self_signed_dir: PathBuf,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub engine: EngineArgs,

    /// Time budget when the API server sends no `?timeout=` (its default is 10s).
    #[arg(long, default_value = "10s", value_parser = parse_go_duration, value_name = "DURATION")]
    pub default_timeout: Duration,

    /// Kept back from the API server's timeout so the answer arrives in time.
    #[arg(long, default_value = "250ms", value_parser = parse_go_duration, value_name = "DURATION")]
    pub timeout_margin: Duration,

    /// How often certificate and component files are checked for changes.
    #[arg(long, default_value = "2s", value_parser = parse_go_duration, value_name = "DURATION")]
    pub reload_interval: Duration,

    /// How long shutdown waits for in-flight requests.
    #[arg(long, default_value = "20s", value_parser = parse_go_duration, value_name = "DURATION")]
    pub drain_timeout: Duration,

    #[command(flatten)]
    pub managed: managed::ManagedArgs,
}

/// Everything a handler needs. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AppState {
    pub engine: PolicyEngine,
    pub policy: Arc<Policy>,
    pub context: Arc<ContextFile>,
    pub slots: Arc<Semaphore>,
    pub metrics: Arc<Metrics>,
    pub ready: Arc<AtomicBool>,
    pub default_timeout: Duration,
    pub timeout_margin: Duration,
}

impl AppState {
    pub fn new(
        engine: PolicyEngine,
        policy: Policy,
        context: ContextFile,
        max_concurrency: u32,
    ) -> Self {
        AppState {
            engine,
            policy: Arc::new(policy),
            context: Arc::new(context),
            slots: Arc::new(Semaphore::new(max_concurrency.max(1) as usize)),
            metrics: Arc::new(Metrics::default()),
            ready: Arc::new(AtomicBool::new(true)),
            default_timeout: Duration::from_secs(10),
            timeout_margin: Duration::from_millis(250),
        }
    }
}

/// All routes. Karmada's own paths (`/validate-multiclusterservice`,
/// `/mutate-multiclusterservice`) are aliases, so a Karmada webhook configuration works as is.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/validate", post(handlers::validate))
        .route("/validate-multiclusterservice", post(handlers::validate))
        .route("/mutate", post(handlers::mutate))
        .route("/mutate-multiclusterservice", post(handlers::mutate))
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz))
        .route("/metrics", get(handlers::metrics))
        .fallback(handlers::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
