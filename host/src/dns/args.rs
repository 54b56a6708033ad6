//! `mcs-policy dns`'s command line.

use std::path::PathBuf;
use std::time::Duration;

use crate::listen::ListenAddr;

/// `mcs-policy dns`'s flags (its `--help` text is the `Dns` command's, in config.rs).
#[derive(Debug, clap::Args)]
pub struct DnsArgs {
    /// Kubeconfig to read the ServiceImports and EndpointSlices with (its current context, or
    /// --context). Without it, the cluster this process runs in (its ServiceAccount).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Context of --kubeconfig to read (default: its current context).
    #[arg(long, requires = "kubeconfig", value_name = "CONTEXT")]
    pub context: Option<String>,

    /// The zone answered: `<svc>.<ns>.svc.<zone>`.
    #[arg(long, default_value = "clusterset.local", value_name = "ZONE")]
    pub zone: String,

    /// Where DNS is served, UDP and TCP on the same port: HOST:PORT, or :PORT for every address
    /// (IPv6 and IPv4). 5353, not 53, so the container runs as a non-root user; the chart's
    /// Service maps port 53 to it.
    #[arg(long, default_value = ":5353", value_name = "ADDR")]
    pub listen: ListenAddr,

    /// Where `/healthz`, `/readyz` (ready once the caches have synced) and `/metrics` (queries
    /// by response code) are served over HTTP: HOST:PORT or :PORT.
    #[arg(long, default_value = ":8080", value_name = "ADDR")]
    pub metrics_listen: ListenAddr,

    /// TTL of every record, SOA included (seconds): how long a resolver may keep an answer
    /// after an endpoint or import changed. 5, as CoreDNS's kubernetes plugin.
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    pub ttl: u32,

    /// How long a TCP connection may stay idle before it is closed.
    #[arg(long, default_value = "5s", value_parser = crate::duration::parse_positive_duration, value_name = "DURATION")]
    pub tcp_idle_timeout: Duration,
}
