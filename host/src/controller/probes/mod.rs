//! What one `sync` replica tells the outside on `--metrics-listen`: [`health`] answers the
//! Kubernetes probes (`/healthz`, `/readyz`), [`metrics`] the Prometheus counters and gauges
//! (`/metrics`).

pub mod health;
pub mod metrics;
