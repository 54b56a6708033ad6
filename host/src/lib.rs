//! mcs-policy: Karmada's MultiClusterService admission and endpoint-sync logic as one
//! WebAssembly component, and the host that runs it.
//!
//! - [`engine`]: runs the component (`PolicyEngine`), the piece other controllers embed.
//! - [`webhook`]: the admission webhook server (`router`, `serve`) and the AdmissionReview
//!   protocol ([`webhook::review`]).
//! - [`controller`]: the EndpointSlice sync controller (`mcs-policy sync`), over the member
//!   clusters of [`clusters`].
//! - [`dns`]: the `clusterset.local` DNS server of the Multi-Cluster Services API
//!   (`mcs-policy dns`).
//! - [`eval`]: one decision offline.
//! - [`settings`]: policy settings (`policies/`) and the environment context.
//! - [`config`]: the command line, assembled from each subsystem's argument group (only the
//!   binary uses it); [`duration`]: the Go-style durations those groups take.

pub mod build_info;
pub mod clusters;
pub mod config;
pub mod controller;
pub mod dns;
pub mod duration;
pub mod engine;
pub mod eval;
pub mod fast_map;
pub mod listen;
pub mod logging;
pub mod malloc;
pub mod manifests;
pub mod reload;
pub mod settings;
pub mod tls;
pub mod webhook;

/// Resolves on SIGTERM or Ctrl-C: the one signal that drives every graceful shutdown.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("received Ctrl-C"),
        _ = term => tracing::info!("received SIGTERM"),
    }
}
