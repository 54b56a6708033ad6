//! `mcs-policy dns`: the `clusterset.local` DNS server of the Multi-Cluster Services API
//! (KEP-1645), in each member cluster. [`cache`] watches the cluster's ServiceImports and
//! imported EndpointSlices; [`index`] reduces them to services and hosts; [`answer`] maps a
//! query name to KEP-1645's names and records; [`server`] serves them over UDP and TCP with
//! hickory-server; [`http`] serves the probes and metrics. The names are the KEP's, fixed:
//! no policy decision is taken here. See docs/dns.md.

mod answer;
mod args;
mod cache;
mod http;
mod index;
mod server;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use answer::{Answer, Zone};
pub use args::DnsArgs;
pub use index::{Import, ImportSpec, Index};

use anyhow::Context as _;
use hickory_server::Server;

use crate::clusters::origin::HubOrigin;
use crate::clusters::{ClientOptions, hub};

/// Responses queued per TCP connection.
const TCP_RESPONSE_BUFFER: usize = 32;

/// Runs the DNS server until `shutdown` resolves.
pub async fn run(
    args: DnsArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let zone = Zone::new(&args.zone, args.ttl)?;
    let origin = match &args.kubeconfig {
        Some(path) => HubOrigin::Kubeconfig {
            path: path.clone(),
            context: args.context.clone(),
        },
        None => HubOrigin::InCluster,
    };
    let cluster = hub(&origin, &ClientOptions::default()).await?;
    let (udp, tcp) =
        server::bind(args.listen).with_context(|| format!("listening on {} (DNS)", args.listen))?;
    let http_listener = crate::listen::bind(args.metrics_listen)
        .with_context(|| format!("listening on {} (HTTP)", args.metrics_listen))?;
    let dns_addr = udp.local_addr()?;
    let http_addr = http_listener.local_addr()?;

    let shared = Arc::new(cache::Shared::default());
    let metrics = Arc::new(http::Metrics::default());
    let handler = server::Handler {
        zone: zone.clone(),
        shared: shared.clone(),
        metrics: metrics.clone(),
    };
    let mut dns = Server::new(handler);
    dns.register_socket(udp);
    dns.register_listener(tcp, args.tcp_idle_timeout, TCP_RESPONSE_BUFFER);

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let http_stop = {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    };
    let http = tokio::spawn(http::serve(
        http_listener,
        metrics,
        shared.clone(),
        http_stop,
    ));
    let caches = tokio::spawn(cache::run(cluster.client.clone(), shared));
    tracing::info!(zone = %zone.name(), ttl = args.ttl, "serving DNS");
    // The tests and scripts read these to find the ports (`:0` picks free ones).
    crate::logging::announce(&format!("dns listening on {dns_addr}"));
    crate::logging::announce(&format!("http listening on {http_addr}"));

    shutdown.await;
    let _ = stop.send(true);
    caches.abort();
    dns.shutdown_gracefully()
        .await
        .context("stopping the DNS listeners")?;
    http.await.context("the HTTP server task")??;
    Ok(())
}
