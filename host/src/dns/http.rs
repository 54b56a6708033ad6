//! `mcs-policy dns`'s HTTP side on `--metrics-listen`: `/healthz` (the process answers),
//! `/readyz` (the caches have synced, so queries get answers rather than SERVFAIL) and
//! `/metrics` (queries by response code, in Prometheus text).

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hickory_server::proto::op::ResponseCode;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::cache::{Shared, WATCHED};

type Labels = Vec<(&'static str, String)>;

/// The DNS server's counters.
pub struct Metrics {
    registry: Registry,
    queries: Family<Labels, Counter>,
    services: Gauge,
    watch_failing: Family<Labels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mcs_policy_dns");
        crate::build_info::register(&mut registry);
        let queries = Family::<Labels, Counter>::default();
        registry.register(
            "queries",
            "DNS queries answered, by response code (NOERROR, NXDOMAIN, SERVFAIL, REFUSED, ...)",
            queries.clone(),
        );
        let services = Gauge::default();
        registry.register(
            "services",
            "Imported services (ServiceImports) the answers come from",
            services.clone(),
        );
        let watch_failing = Family::<Labels, Gauge>::default();
        registry.register(
            "watch_failing",
            "1 while the watch of a resource fails (answers come from its last known content)",
            watch_failing.clone(),
        );
        Metrics {
            registry,
            queries,
            services,
            watch_failing,
        }
    }
}

impl Metrics {
    /// One query answered with `code`.
    pub fn query(&self, code: ResponseCode) {
        let name = match code {
            ResponseCode::NoError => "NOERROR".to_string(),
            ResponseCode::FormErr => "FORMERR".to_string(),
            ResponseCode::ServFail => "SERVFAIL".to_string(),
            ResponseCode::NXDomain => "NXDOMAIN".to_string(),
            ResponseCode::NotImp => "NOTIMP".to_string(),
            ResponseCode::Refused => "REFUSED".to_string(),
            ResponseCode::BADVERS => "BADVERS".to_string(),
            other => u16::from(other).to_string(),
        };
        self.queries.get_or_create(&vec![("rcode", name)]).inc();
    }

    /// The number of imported services in the latest index.
    pub fn services(&self, count: usize) {
        self.services.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Whether the watch of `resource` is failing now.
    pub fn watch_failing(&self, resource: &str, failing: bool) {
        self.watch_failing
            .get_or_create(&vec![("resource", resource.to_string())])
            .set(i64::from(failing));
    }

    /// The metrics as Prometheus text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

#[derive(Clone)]
struct Http {
    metrics: Arc<Metrics>,
    shared: Arc<Shared>,
}

async fn render_metrics(State(http): State<Http>) -> impl IntoResponse {
    if let Some(snapshot) = http.shared.snapshot() {
        http.metrics.services(snapshot.index.len());
    }
    for (watch, resource) in WATCHED.iter().enumerate() {
        http.metrics
            .watch_failing(resource, http.shared.failing(watch));
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        http.metrics.render(),
    )
}

async fn readyz(State(http): State<Http>) -> (StatusCode, &'static str) {
    if http.shared.ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the ServiceImport and EndpointSlice caches have not synced\n",
        )
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    shared: Arc<Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(render_metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(Http { metrics, shared });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
