//! `mcs-policy sync`'s argument group: the clusters, the pace and the bounds of the controller.
//! It flattens the groups its parts own: the engine's ([`EngineArgs`]) and leader election's
//! ([`LeaderArgs`]). Which clusters the cluster flags reach is decided by
//! [`origins`](crate::clusters::origin::origins). What each flag does to a pass is in
//! `docs/sync.md`.

use std::path::PathBuf;
use std::time::Duration;

use super::leader::LeaderArgs;
use crate::clusters::MemberSpec;
use crate::clusters::origin::{ClusterFlags, FlagError, Origins, origins};
use crate::duration::parse_positive_duration;
use crate::engine::EngineArgs;

/// `mcs-policy sync`: what to sync and how often.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Kubeconfig that reaches the hub (context --hub) and, unless --member-kubeconfig or
    /// --karmada-clusters say otherwise, the member clusters (its other contexts). Without it,
    /// the hub is the cluster this process runs in, reached with its Pod's ServiceAccount
    /// (KUBERNETES_SERVICE_HOST/PORT and the token and CA mounted under
    /// /var/run/secrets/kubernetes.io/serviceaccount/), and the members come from
    /// --member-kubeconfig or --karmada-clusters.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Context of --kubeconfig that is the hub, where the MultiClusterServices live. Required
    /// when the members are the kubeconfig's other contexts; with --member-kubeconfig or
    /// --karmada-clusters it defaults to the kubeconfig's current context. Only with
    /// --kubeconfig.
    #[arg(long, value_name = "CONTEXT")]
    pub hub: Option<String>,

    /// Kubeconfig whose contexts are the member clusters (every context, or the ones --member
    /// selects), e.g. mounted from a Secret; the hub is not among them. Instead of
    /// --kubeconfig's other contexts; not with --karmada-clusters.
    #[arg(long, value_name = "FILE")]
    pub member_kubeconfig: Option<PathBuf>,

    /// A member cluster (repeatable): `NAME=CONTEXT` makes kubeconfig context CONTEXT the
    /// member NAME; a bare `CONTEXT` names the member after its context. Member names must be
    /// valid cluster names (lowercase RFC 1123 label, at most 48 characters, no dots: they
    /// prefix every copied EndpointSlice's name), which real context names such as
    /// `gke_project_zone_name` or `arn:aws:eks:...` are not: name those. Default: every context
    /// of --member-kubeconfig, or of --kubeconfig except the hub, each named after its context.
    /// With `--karmada-clusters`: the name of a Karmada Cluster (default: every push-mode one).
    #[arg(long = "member", value_name = "[NAME=]CONTEXT")]
    pub members: Vec<MemberSpec>,

    /// Take the member clusters from Karmada Cluster objects in the hub (push mode) instead of
    /// a kubeconfig's contexts.
    #[arg(long)]
    pub karmada_clusters: bool,

    /// Time between two full passes over every MultiClusterService (`500ms`, `2s`, `1m`).
    /// Watches carry changes at once; the resync repairs what no watch reports.
    #[arg(long, default_value = "30s", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub resync_interval: Duration,

    /// MultiClusterServices reconciled at the same time (never the same one twice).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..), value_name = "N")]
    pub workers: u16,

    /// Threads that run the controller's watches, requests and passes. With 1 (the default)
    /// they share one thread: the controller mostly waits on its API servers, and one thread
    /// spent 20-30% less CPU per write than a pool of two in the sync benchmark (no hand-offs
    /// between threads; BENCHMARKS.md). More threads suit fleets whose passes keep a whole core
    /// busy. Policy calls that outlast their inline slice run on a separate pool either way.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024), value_name = "N")]
    pub runtime_threads: u16,

    /// Longest wait for one API request to a cluster, including retries after 429/503
    /// `Retry-After` answers; a member that does not answer in time fails its step.
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// How long a cluster may fail before it is reported: while a cluster's watches keep
    /// failing (its API server restarting, a network cut, 5xx answers) for at most this long,
    /// its caches stay readable (their last content; they resume from their last
    /// resourceVersion when the server answers again), and a member of a kubeconfig whose API
    /// does not answer the readiness probe stays ready. So an outage shorter than this does not
    /// turn the MultiClusterServices' conditions False and back. Past it, the cluster is
    /// unreadable (not ready) until it works again. `0s` reports every failure at once; at
    /// most `1m`. A cluster whose caches never listed is unreadable at once.
    #[arg(long, default_value = "30s", value_parser = parse_outage_grace, value_name = "DURATION")]
    pub outage_grace: Duration,

    /// Field manager of the server-side applies into the member clusters.
    #[arg(long, default_value = "mcs-policy", value_name = "NAME")]
    pub field_manager: String,

    /// Time budget of one policy call, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub budget_ms: u64,

    /// Withdraw what an unreachable member contributes once it has been unreadable this long:
    /// a MultiClusterService provider's copies, and an exporter's imported slices, its place in
    /// the ServiceImports' `status.clusters` and the ports only it exported (off by default:
    /// they stay until it answers again; see docs/sync.md, "Unreadable providers", and
    /// docs/clusterset-rules.md, "Members that cannot be read").
    #[arg(long, value_parser = parse_positive_duration, value_name = "DURATION")]
    pub stale_endpoint_timeout: Option<Duration>,

    /// Serve Prometheus metrics at `GET /metrics`, and the probes `GET /healthz` (alive) and
    /// `GET /readyz` (a follower waiting for the leader Lease, or a leader that has read its
    /// members; 503 otherwise), over plain HTTP on this address: HOST:PORT, or :PORT for every
    /// address, IPv6 and IPv4 (`:8080` in a Pod). Without it there are no probes.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<crate::listen::ListenAddr>,

    #[command(flatten)]
    pub engine: EngineArgs,

    /// Leader election among replicas (see docs/sync.md, "High availability").
    #[command(flatten)]
    pub leader: LeaderArgs,
}

/// `--outage-grace`: a Go duration from 0 to a minute (the own writes laid over a cache last
/// a minute: a cache read while its watch fails must not outlive them).
fn parse_outage_grace(s: &str) -> Result<Duration, String> {
    match crate::duration::parse_go_duration(s)? {
        d if d > super::cache::store::PENDING_TTL => Err(format!("{s:?}: the grace is at most 1m")),
        d => Ok(d),
    }
}

impl SyncArgs {
    /// Where the hub and the members are reached from, or which flags contradict each other or
    /// are missing.
    pub fn origins(&self) -> Result<Origins, FlagError> {
        origins(&ClusterFlags {
            kubeconfig: self.kubeconfig.as_deref(),
            hub: self.hub.as_deref(),
            member_kubeconfig: self.member_kubeconfig.as_deref(),
            karmada_clusters: self.karmada_clusters,
            members: &self.members,
        })
    }
}
