//! Prometheus metrics of the webhook server, served as text at `/metrics`.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

fn latency_histogram() -> Histogram {
    // 50 µs .. ~3.3 s
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    evaluation_seconds: Family<Labels, Histogram, fn() -> Histogram>,
    engine_failures: Family<Labels, Counter>,
    overloads: Counter,
    reloads: Family<Labels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mcs_policy");
        let requests = Family::<Labels, Counter>::default();
        let evaluation_seconds =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let engine_failures = Family::<Labels, Counter>::default();
        let overloads = Counter::default();
        let reloads = Family::<Labels, Counter>::default();
        registry.register(
            "admission_requests",
            "Admission requests by path and outcome (allowed, patched, denied, invalid, error, overloaded, bad_request)",
            requests.clone(),
        );
        registry.register(
            "evaluation_duration_seconds",
            "Time spent in the policy component per call, by function",
            evaluation_seconds.clone(),
        );
        registry.register(
            "engine_failures",
            "Policy component calls that failed, by kind (trap, timeout, memory)",
            engine_failures.clone(),
        );
        registry.register(
            "overloads",
            "Requests answered at once because no evaluation slot was free before the deadline",
            overloads.clone(),
        );
        registry.register(
            "reloads",
            "Reloads of the certificate or the component, by what and result",
            reloads.clone(),
        );
        Metrics {
            registry,
            requests,
            evaluation_seconds,
            engine_failures,
            overloads,
            reloads,
        }
    }
}

impl Metrics {
    pub fn request(&self, path: &str, outcome: &str) {
        self.requests
            .get_or_create(&vec![
                ("path", path.to_string()),
                ("outcome", outcome.to_string()),
            ])
            .inc();
    }

    pub fn evaluation(&self, function: &str, seconds: f64) {
        self.evaluation_seconds
            .get_or_create(&vec![("function", function.to_string())])
            .observe(seconds);
    }

    pub fn engine_failure(&self, kind: &str) {
        self.engine_failures
            .get_or_create(&vec![("kind", kind.to_string())])
            .inc();
    }

    pub fn overload(&self) {
        self.overloads.inc();
    }

    pub fn reload(&self, what: &str, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.reloads
            .get_or_create(&vec![
                ("what", what.to_string()),
                ("result", result.to_string()),
            ])
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
