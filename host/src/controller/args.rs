//! `mcs-policy sync`'s argument group: the clusters, the pace and the bounds of the controller.
//! It flattens the groups its parts own: the engine's ([`EngineArgs`]) and leader election's
//! ([`LeaderArgs`]). What each flag does to a pass is in `docs/sync.md`.

use std::path::PathBuf;
use std::time::Duration;

use super::leader::LeaderArgs;
use crate::clusters::MemberSpec;
use crate::duration::parse_positive_duration;
use crate::engine::EngineArgs;

/// `mcs-policy sync`: what to sync and how often.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Kubeconfig whose contexts reach the hub and, without --karmada-clusters, the member
    /// clusters.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// Context of the hub cluster, where the MultiClusterServices live.
    #[arg(long, value_name = "CONTEXT")]
    pub hub: String,

    /// A member cluster (repeatable): `NAME=CONTEXT` makes kubeconfig context CONTEXT the
    /// member NAME; a bare `CONTEXT` names the member after its context. Member names must be
    /// valid cluster names (lowercase RFC 1123 label, at most 48 characters, no dots: they
    /// prefix every copied EndpointSlice's name), which real context names such as
    /// `gke_project_zone_name` or `arn:aws:eks:...` are not: name those. Default: every context
    /// except the hub, each named after its context. With `--karmada-clusters`: the name of a
    /// Karmada Cluster (default: every push-mode one).
    #[arg(long = "member", value_name = "[NAME=]CONTEXT")]
    pub members: Vec<MemberSpec>,

    /// Take the member clusters from Karmada Cluster objects in the hub (push mode) instead of
    /// the kubeconfig's other contexts.
    #[arg(long)]
    pub karmada_clusters: bool,

    /// Time between two full passes over every MultiClusterService (`500ms`, `2s`, `1m`).
    /// Watches carry changes at once; the resync repairs what no watch reports.
    #[arg(long, default_value = "30s", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub resync_interval: Duration,

    /// MultiClusterServices reconciled at the same time (never the same one twice).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..), value_name = "N")]
    pub workers: u16,

    /// Longest wait for one API request to a cluster, including retries after 429/503
    /// `Retry-After` answers; a member that does not answer in time fails its step.
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// Field manager of the server-side applies into the member clusters.
    #[arg(long, default_value = "mcs-policy", value_name = "NAME")]
    pub field_manager: String,

    /// Time budget of one policy call, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub budget_ms: u64,

    /// Withdraw an unreachable provider's copies once it has been unreadable this long (off by
    /// default: its copies stay until it answers again; see docs/sync.md, "Unreadable
    /// providers").
    #[arg(long, value_parser = parse_positive_duration, value_name = "DURATION")]
    pub stale_endpoint_timeout: Option<Duration>,

    /// Serve Prometheus metrics over plain HTTP at `GET /metrics` on this address.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,

    #[command(flatten)]
    pub engine: EngineArgs,

    /// Leader election among replicas (see docs/sync.md, "High availability").
    #[command(flatten)]
    pub leader: LeaderArgs,
}
