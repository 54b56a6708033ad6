//! Prometheus metrics of the webhook server, served as text at `/metrics`.
//!
//! Label values are `&'static str`s: looking up a series costs a hash and no allocation (they
//! were `String`s, allocated twice per admission request).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    path: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FunctionLabels {
    function: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    what: &'static str,
    result: &'static str,
}

fn latency_histogram() -> Histogram {
    // 50 µs .. ~3.3 s
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    evaluation_seconds: Family<FunctionLabels, Histogram, fn() -> Histogram>,
    engine_failures: Family<KindLabels, Counter>,
    overloads: Counter,
    reloads: Family<ReloadLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mcs_policy");
        crate::build_info::register(&mut registry);
        let requests = Family::<RequestLabels, Counter>::default();
        let evaluation_seconds =
            Family::<FunctionLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let engine_failures = Family::<KindLabels, Counter>::default();
        let overloads = Counter::default();
        let reloads = Family::<ReloadLabels, Counter>::default();
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
    pub fn request(&self, path: &'static str, outcome: &'static str) {
        self.requests
            .get_or_create(&RequestLabels { path, outcome })
            .inc();
    }

    pub fn evaluation(&self, function: &'static str, seconds: f64) {
        self.evaluation_seconds
            .get_or_create(&FunctionLabels { function })
            .observe(seconds);
    }

    pub fn engine_failure(&self, kind: &'static str) {
        self.engine_failures
            .get_or_create(&KindLabels { kind })
            .inc();
    }

    pub fn overload(&self) {
        self.overloads.inc();
    }

    pub fn reload(&self, what: &'static str, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.reloads
            .get_or_create(&ReloadLabels { what, result })
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
