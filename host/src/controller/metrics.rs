//! Prometheus metrics of the sync controller, served as text at `GET /metrics` when
//! `--metrics-listen` is given.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

type Labels = Vec<(&'static str, String)>;

/// The controller's counters.
pub struct Metrics {
    registry: Registry,
    passes: Counter,
    applied: Counter,
    deleted: Counter,
    cluster_errors: Family<Labels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mcs_policy_sync");
        let passes = Counter::default();
        let applied = Counter::default();
        let deleted = Counter::default();
        let cluster_errors = Family::<Labels, Counter>::default();
        registry.register(
            "passes",
            "Passes over every MultiClusterService",
            passes.clone(),
        );
        registry.register(
            "applied",
            "EndpointSlice copies applied (created or changed)",
            applied.clone(),
        );
        registry.register("deleted", "Stale copies deleted", deleted.clone());
        registry.register(
            "cluster_errors",
            "Failed steps, by cluster",
            cluster_errors.clone(),
        );
        Metrics {
            registry,
            passes,
            applied,
            deleted,
            cluster_errors,
        }
    }
}

impl Metrics {
    pub fn pass(&self) {
        self.passes.inc();
    }

    pub fn applied(&self, n: usize) {
        self.applied.inc_by(n as u64);
    }

    pub fn deleted(&self, n: usize) {
        self.deleted.inc_by(n as u64);
    }

    pub fn cluster_error(&self, cluster: &str) {
        self.cluster_errors
            .get_or_create(&vec![("cluster", cluster.to_string())])
            .inc();
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

async fn render_metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(),
    )
}

/// Serves `/metrics` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "metrics server listening");
    let app = Router::new()
        .route("/metrics", get(render_metrics))
        .with_state(metrics);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_counters() {
        let m = Metrics::default();
        m.pass();
        m.applied(2);
        m.cluster_error("member1");
        let text = m.render();
        assert!(text.contains("mcs_policy_sync_passes_total 1"), "{text}");
        assert!(text.contains("mcs_policy_sync_applied_total 2"), "{text}");
        assert!(
            text.contains("mcs_policy_sync_cluster_errors_total{cluster=\"member1\"} 1"),
            "{text}"
        );
    }
}
