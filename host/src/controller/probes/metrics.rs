//! Prometheus metrics of the sync controller, served as text at `GET /metrics` when
//! `--metrics-listen` is given, beside the probes of [`crate::controller::probes::health`].

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
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::clusters::api_error::Kind;
use crate::controller::probes::health::{self, Health};

type Labels = Vec<(&'static str, String)>;

/// The controller's counters.
pub struct Metrics {
    registry: Registry,
    passes: Counter,
    reconciles: Counter,
    quiet: Counter,
    applied: Counter,
    deleted: Counter,
    cluster_errors: Family<Labels, Counter>,
    propagation: Histogram,
    queue_depth: Gauge,
    leader: Gauge,
    cached: Family<Labels, Gauge>,
    pending: Gauge,
    heap: Gauge,
    clusterset_passes: Counter,
    clusterset_writes: Family<Labels, Counter>,
    clusterset_propagation: Histogram,
    clusterset_unserved: Family<Labels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mcs_policy_sync");
        crate::build_info::register(&mut registry);
        let passes = Counter::default();
        let reconciles = Counter::default();
        let quiet = Counter::default();
        let applied = Counter::default();
        let deleted = Counter::default();
        let cluster_errors = Family::<Labels, Counter>::default();
        registry.register(
            "passes",
            "Passes over every MultiClusterService",
            passes.clone(),
        );
        registry.register(
            "reconciles",
            "Reconciles of one MultiClusterService (watch events, resyncs and retries)",
            reconciles.clone(),
        );
        registry.register(
            "quiet_reconciles",
            "Reconciles skipped: the same input as the MultiClusterService's last pass, which had nothing to do",
            quiet.clone(),
        );
        registry.register(
            "applied",
            "EndpointSlice copies applied (created or changed)",
            applied.clone(),
        );
        registry.register("deleted", "Stale copies deleted", deleted.clone());
        registry.register(
            "cluster_errors",
            "Failed steps, by cluster and reason (unauthorized, forbidden, conflict, invalid, throttled, server_error, unreachable, not_found, other_status, other)",
            cluster_errors.clone(),
        );
        // 1ms to ~33s.
        let propagation = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        registry.register(
            "propagation_seconds",
            "From a watched change (MultiClusterService, hub Service or provider EndpointSlice) to the end of the reconcile that carried it to the members",
            propagation.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "queue_depth",
            "MultiClusterServices with a watched change not yet reconciled",
            queue_depth.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica leads (holds the leader Lease, or runs without --leader-elect) and syncs, else 0",
            leader.clone(),
        );
        let cached = Family::<Labels, Gauge>::default();
        registry.register(
            "cached_objects",
            "Objects held in the controller's caches, by resource (multiclusterservices, services, endpointslices), hub and members summed",
            cached.clone(),
        );
        let pending = Gauge::default();
        registry.register(
            "cache_pending_writes",
            "The controller's own writes laid over its caches whose watch events have not arrived yet (a lasting high value means the watches lag)",
            pending.clone(),
        );
        let heap = Gauge::default();
        registry.register(
            "heap_bytes",
            "Bytes the controller's heap holds (glibc mallinfo2; 0 where unknown): with cached_objects, what a cached object costs",
            heap.clone(),
        );
        let clusterset_passes = Counter::default();
        registry.register(
            "clusterset_passes",
            "Passes over one exported name of the Multi-Cluster Services API (ServiceExport) across the clusterset",
            clusterset_passes.clone(),
        );
        let clusterset_writes = Family::<Labels, Counter>::default();
        registry.register(
            "clusterset_writes",
            "Writes of the clusterset passes that changed something, by object (export_status, import, import_status, import_delete, derived_service, derived_service_delete, slice, slice_delete)",
            clusterset_writes.clone(),
        );
        // The same buckets as `propagation_seconds`: 1ms to ~33s.
        let clusterset_propagation = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        registry.register(
            "clusterset_propagation_seconds",
            "From a watched change of an exported name (ServiceExport, Service, EndpointSlice, ServiceImport, derived Service or imported EndpointSlice in a member) to the end of the clusterset pass that carried it to the members",
            clusterset_propagation.clone(),
        );
        let clusterset_unserved = Family::<Labels, Gauge>::default();
        registry.register(
            "clusterset_crd_unserved_version",
            "1 while a member's ServiceExport or ServiceImport CRD (label crd) is established but does not serve multicluster.x-k8s.io/v1beta1 (e.g. v1alpha1 only): the member takes no part in the clusterset; the log names the versions it serves",
            clusterset_unserved.clone(),
        );
        Metrics {
            clusterset_unserved,
            clusterset_passes,
            clusterset_propagation,
            clusterset_writes,
            cached,
            pending,
            heap,
            leader,
            registry,
            propagation,
            queue_depth,
            passes,
            reconciles,
            quiet,
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

    /// A clusterset pass over one exported name.
    pub fn clusterset_pass(&self) {
        self.clusterset_passes.inc();
    }

    /// A clusterset write of `object` that changed something.
    pub fn clusterset_write(&self, object: &'static str) {
        self.clusterset_writes
            .get_or_create(&vec![("object", object.to_string())])
            .inc();
    }

    /// One change of an exported name carried to the members `elapsed` after it was seen.
    pub fn clusterset_propagated(&self, elapsed: std::time::Duration) {
        self.clusterset_propagation.observe(elapsed.as_secs_f64());
    }

    pub fn reconcile(&self) {
        self.reconciles.inc();
    }

    /// A reconcile skipped as quiet ([`crate::controller::pass::decide::quiet`]); counted in `reconciles` too.
    pub fn skipped_quiet(&self) {
        self.quiet.inc();
    }

    pub fn applied(&self, n: usize) {
        self.applied.inc_by(n as u64);
    }

    pub fn deleted(&self, n: usize) {
        self.deleted.inc_by(n as u64);
    }

    /// Whether the CRD `crd` of member `cluster` is established without serving the
    /// Multi-Cluster Services API's version the controller uses (`v1beta1`).
    pub fn clusterset_unserved(&self, cluster: &str, crd: &str, unserved: bool) {
        let labels = vec![("cluster", cluster.to_string()), ("crd", crd.to_string())];
        self.clusterset_unserved
            .get_or_create(&labels)
            .set(i64::from(unserved));
    }

    /// One change carried to the members `elapsed` after it was seen.
    pub fn propagated(&self, elapsed: std::time::Duration) {
        self.propagation.observe(elapsed.as_secs_f64());
    }

    /// MCSs with a watched change not yet reconciled (kube-runtime does not expose its queue).
    pub fn queue_depth(&self, depth: usize) {
        self.queue_depth
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// Whether this replica leads now.
    pub fn leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// `count` objects of `resource` are cached; the heap size is read again.
    pub fn cached(&self, resource: &str, count: usize) {
        let labels = vec![("resource", resource.to_string())];
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.cached.get_or_create(&labels).set(count);
        let heap = crate::malloc::heap_in_use().unwrap_or(0);
        self.heap.set(i64::try_from(heap).unwrap_or(i64::MAX));
    }

    /// `count` own writes wait for their watch events.
    pub fn pending_writes(&self, count: usize) {
        self.pending.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// One failed step against `cluster`, of `kind`.
    pub fn cluster_error(&self, cluster: &str, kind: Kind) {
        let labels = vec![
            ("cluster", cluster.to_string()),
            ("reason", kind.label().to_string()),
        ];
        self.cluster_errors.get_or_create(&labels).inc();
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

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "metrics and probes server listening");
    let app = Router::new()
        .route("/metrics", get(render_metrics))
        .with_state(metrics)
        .merge(health::routes(health));
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
        m.reconcile();
        m.cluster_error("member1", Kind::Unauthorized);
        let text = m.render();
        assert!(text.contains("mcs_policy_sync_passes_total 1"), "{text}");
        assert!(text.contains("mcs_policy_sync_applied_total 2"), "{text}");
        assert!(
            text.contains("mcs_policy_sync_reconciles_total 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "mcs_policy_sync_cluster_errors_total{cluster=\"member1\",reason=\"unauthorized\"} 1"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_leader_gauge_follows_leadership() {
        let m = Metrics::default();
        assert!(m.render().contains("mcs_policy_sync_leader 0"));
        m.leader(true);
        assert!(m.render().contains("mcs_policy_sync_leader 1"));
        m.leader(false);
        assert!(m.render().contains("mcs_policy_sync_leader 0"));
    }

    #[test]
    fn the_clusterset_propagation_is_its_own_histogram() {
        let m = Metrics::default();
        m.clusterset_propagated(std::time::Duration::from_millis(3));
        let text = m.render();
        assert!(
            text.contains("mcs_policy_sync_clusterset_propagation_seconds_count 1"),
            "{text}"
        );
        assert!(
            text.contains("mcs_policy_sync_clusterset_propagation_seconds_bucket{le=\"0.004\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("mcs_policy_sync_propagation_seconds_count 0"),
            "{text}"
        );
    }
}
