//! Command-line flags.

use std::net::SocketAddr;

use clap::Parser;

use crate::types::service::ServiceCidr;

/// A test API server that speaks the Kubernetes REST protocol (JSON over plain HTTP) for
/// kube-rs clients and kubectl: discovery, CRUD, patch, server-side apply (simplified), watch,
/// status subresources and CustomResourceDefinitions, with a /_sim/ admin API for fault
/// injection. State lives in memory only. Logs go to stderr (filter with RUST_LOG, default info).
#[derive(Debug, Parser)]
#[command(name = "kube-sim", version)]
pub struct Args {
    /// Address to listen on, as HOST:PORT; port 0 picks a free port. The first line on stdout is
    /// `listening on http://HOST:PORT` with the actual address.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// Require `Authorization: Bearer TOKEN` on every API request and answer 401 Unauthorized
    /// otherwise. Without this flag any token, or none, is accepted. /_sim/ never needs one.
    #[arg(long)]
    pub token: Option<String>,

    /// Name of the simulated cluster; shown in logs only.
    #[arg(long, default_value = "kube-sim")]
    pub name: String,

    /// The IPv4 CIDR Services get their cluster IPs from (kube-apiserver's flag of the same
    /// name), prefix length 12 to 30. The first address is the `default/kubernetes` Service's.
    /// Services that ask for none get one at random, as kube-apiserver's allocator picks them:
    /// from the upper part of the range first, the first min(max(16, size/16), 256) addresses
    /// being left to Services that ask for a fixed one. A range holds as many Services as it
    /// has addresses but two (the default /24: 253 besides kubernetes).
    #[arg(long, default_value = "10.0.0.0/24", value_name = "CIDR")]
    pub service_cluster_ip_range: ServiceCidr,

    /// Watch events remembered per resource, for watches resuming from a resourceVersion; a
    /// watch from an older resourceVersion gets a 410 Expired ERROR event. Without this flag the
    /// window is sized like kube-apiserver's watch cache: 100 to 102,400 events, keeping at
    /// least the last 75 seconds' when it can.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub watch_history: Option<u64>,

    /// Seconds between periodic BOOKMARK events on watches that allow them
    /// (allowWatchBookmarks=true), as kube-apiserver's watch cache sends them once a minute; one
    /// also comes 2 s before the watch's timeout. Bookmarks are only sent once the watch cache
    /// has moved past where the watch started.
    #[arg(long, default_value_t = 60.0)]
    pub bookmark_interval_seconds: f64,

    /// Seconds between compactions (kube-apiserver's --etcd-compaction-interval): each one
    /// forgets the states older than the previous one, which lists at an exact resourceVersion
    /// (and continue tokens) could still read. 0 disables it; POST /_sim/compact compacts now.
    #[arg(long, default_value_t = 300)]
    pub compaction_interval_seconds: u64,
}
