//! The cluster registry of the sync controller: the hub and the member clusters, each a name
//! and a `kube::Client`. [`origin`] decides from the flags where the hub (a kubeconfig context,
//! or the cluster this process runs in) and the members are reached; [`open`] reaches them. A
//! [`Source`] says where the members come from: the contexts of a kubeconfig, fixed at start
//! ([`Source::Fixed`]), or Karmada's Cluster objects in the hub, re-read every pass
//! ([`Source::Karmada`], see [`karmada`]). See `docs/sync.md`, "Clusters and readiness".

pub mod api_error;
mod client;
pub mod karmada;
mod open;
pub mod origin;
pub mod transport;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

pub use crate::engine::types::UnsyncedCluster;
pub use client::{ClientOptions, build_client};
pub use open::{hub, members_from_kubeconfig, open};
use origin::FlagError;

/// How long a readiness probe may take before the cluster counts as not ready.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the registry could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("reading the kubeconfig {path}")]
    Kubeconfig {
        path: String,
        #[source]
        source: KubeconfigError,
    },
    #[error("the kubeconfig {path} has no context named {context:?}")]
    UnknownContext { path: String, context: String },
    #[error("building a client for context {context:?}")]
    Client {
        context: String,
        #[source]
        source: KubeconfigError,
    },
    #[error("creating a client for context {context:?}")]
    Connect {
        context: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("listing the Karmada clusters (clusters.cluster.karmada.io) in the hub")]
    KarmadaClusters {
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "member cluster name {name:?} (kubeconfig context {context:?}) is not a valid cluster \
         name: {problem}. Cluster names follow the rule of spec.providerClusters[].name \
         (a lowercase RFC 1123 label of at most 48 characters, no dots); name the member \
         explicitly with --member NAME={context}"
    )]
    InvalidContextName {
        name: String,
        context: String,
        problem: String,
    },
    #[error(
        "--member {name}={context}: {name:?} is not a valid cluster name: {problem}. Cluster \
         names follow the rule of spec.providerClusters[].name (a lowercase RFC 1123 label of at \
         most 48 characters, no dots)"
    )]
    InvalidMemberName {
        name: String,
        context: String,
        problem: String,
    },
    #[error("two members are named {name:?}: each --member NAME must be different")]
    DuplicateMember { name: String },
    #[error(transparent)]
    Flags(#[from] FlagError),
    #[error(
        "the kubeconfig {path} has no current-context: name the hub's context with --hub CONTEXT"
    )]
    NoCurrentContext { path: String },
    #[error(
        "no --kubeconfig, and this process cannot reach the cluster it runs in (kube's \
         in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the \
         ServiceAccount token and CA under /var/run/secrets/kubernetes.io/serviceaccount/). Run \
         it in a Pod whose ServiceAccount token is mounted, or give --kubeconfig FILE --hub CONTEXT"
    )]
    NotInCluster {
        #[source]
        source: kube::config::InClusterError,
    },
    #[error("no member clusters: {why}")]
    NoMembers { why: String },
}

/// A `--member` value: `NAME=CONTEXT` makes the kubeconfig context `CONTEXT` the member
/// cluster `NAME`; a bare `CONTEXT` is named after its context. Real context names
/// (`gke_project_zone_name`, `arn:aws:eks:...:cluster/prod`, `kind-m1@admin`) are often not
/// valid cluster names, and the name prefixes every copied EndpointSlice's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSpec {
    pub name: String,
    pub context: String,
}

impl std::str::FromStr for MemberSpec {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let (name, context) = value.split_once('=').unwrap_or((value, value));
        if name.is_empty() || context.is_empty() {
            return Err(format!(
                "{value:?}: expected CONTEXT or NAME=CONTEXT, both non-empty"
            ));
        }
        Ok(MemberSpec {
            name: name.to_string(),
            context: context.to_string(),
        })
    }
}

impl MemberSpec {
    /// A member named after its context.
    pub fn context(context: &str) -> Self {
        MemberSpec {
            name: context.to_string(),
            context: context.to_string(),
        }
    }

    /// Whether the name was given (`NAME=CONTEXT`) rather than taken from the context.
    pub fn is_named(&self) -> bool {
        self.name != self.context
    }
}

/// One cluster: its name (the context name) and a client.
#[derive(Clone)]
pub struct Cluster {
    pub name: String,
    pub client: Client,
    /// Which client this is, unique in the process: a member whose client is rebuilt (a
    /// rotated Karmada secret, a moved endpoint) gets a new id, so what holds the old client
    /// (its watch) knows to start again.
    pub client_id: u64,
}

impl Cluster {
    /// `name` reached through `client`, with a new [`Cluster::client_id`].
    pub fn new(name: String, client: Client) -> Cluster {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Cluster {
            name,
            client,
            client_id: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// Where the member clusters come from.
pub enum Source {
    /// The members of a kubeconfig, fixed for the life of the process, and since when each
    /// has not answered its readiness probe.
    Fixed(Registry, Unanswered),
    /// The push-mode Cluster objects of Karmada in the hub, as they are now.
    Karmada(karmada::Karmada),
}

/// The clusters as one pass sees them: the registry and which members are ready.
#[derive(Clone)]
pub struct Membership {
    pub registry: Registry,
    /// Names of the members that are ready now.
    pub ready: Vec<String>,
}

impl Source {
    /// The hub.
    pub fn hub(&self) -> &Cluster {
        match self {
            Source::Fixed(registry, _) => &registry.hub,
            Source::Karmada(karmada) => karmada.hub(),
        }
    }

    /// Why a member that is not ready is not, in this source's terms.
    pub fn not_ready(&self) -> &'static str {
        match self {
            Source::Fixed(..) => "its API does not answer",
            Source::Karmada(_) => "its Karmada Cluster's Ready condition is not True",
        }
    }

    /// Members of a kubeconfig that do not answer stay ready for `grace` (`--outage-grace`;
    /// Karmada's Ready condition has its own threshold, `--cluster-failure-threshold`).
    pub fn with_outage_grace(mut self, grace: Duration) -> Source {
        if let Source::Fixed(_, unanswered) = &mut self {
            unanswered.grace = grace;
        }
        self
    }

    /// The members now and which are ready (for a kubeconfig: whose API answers, or stopped
    /// answering no longer than the outage grace ago; for Karmada: whose `Ready` condition is
    /// `True`).
    pub async fn membership(&self) -> Result<Membership, ClusterError> {
        match self {
            Source::Fixed(registry, unanswered) => {
                let answering = registry.ready_members().await;
                Ok(Membership {
                    ready: unanswered.ready(&registry.member_names(), &answering, Instant::now()),
                    registry: registry.clone(),
                })
            }
            Source::Karmada(karmada) => karmada.membership().await,
        }
    }
}

/// The hub (where MultiClusterServices live) and the members, in kubeconfig order.
#[derive(Clone)]
pub struct Registry {
    pub hub: Cluster,
    pub members: Vec<Cluster>,
    /// The clusters the source knows that are not members, and why, in the source's order
    /// (Karmada Clusters left out; none for a kubeconfig). The component reports an MCS that
    /// lists one (WIT `pass-read.unsynced`).
    pub unsynced: Vec<UnsyncedCluster>,
}

impl Registry {
    /// Names of the members, in registry order.
    pub fn member_names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Cluster> {
        self.members.iter().find(|m| m.name == name)
    }

    /// Names of the members whose API answers now (probed concurrently).
    pub async fn ready_members(&self) -> Vec<String> {
        let probes = self.members.iter().map(|m| async move {
            let ready = probe(&m.client).await;
            if !ready {
                tracing::debug!(cluster = %m.name, "the cluster's API does not answer");
            }
            ready.then(|| m.name.clone())
        });
        futures::future::join_all(probes)
            .await
            .into_iter()
            .flatten()
            .collect()
    }
}

/// Since when each member of a kubeconfig has not answered its readiness probe, and how long
/// it stays ready meanwhile (`--outage-grace`; none by default).
#[derive(Debug, Default)]
pub struct Unanswered {
    grace: Duration,
    since: Mutex<HashMap<String, Instant>>,
}

impl Unanswered {
    /// Which of `members` are ready at `now`: those `answering`, and those that stopped
    /// answering no longer than the grace ago.
    fn ready(&self, members: &[String], answering: &[String], now: Instant) -> Vec<String> {
        let mut since = self.since.lock().unwrap_or_else(|p| p.into_inner());
        since.retain(|name, _| members.contains(name));
        let mut ready = Vec::new();
        for name in members {
            if answering.contains(name) {
                if let Some(from) = since.remove(name) {
                    tracing::info!(cluster = %name, after = ?now.saturating_duration_since(from),
                        "the cluster's API answers again");
                }
                ready.push(name.clone());
                continue;
            }
            let from = *since.entry(name.clone()).or_insert(now);
            let silent = now.saturating_duration_since(from);
            if !self.grace.is_zero() && silent <= self.grace {
                if silent.is_zero() {
                    tracing::warn!(cluster = %name, grace = ?self.grace,
                        "the cluster's API does not answer; still ready within the outage grace");
                }
                ready.push(name.clone());
            } else {
                tracing::warn!(cluster = %name, for_ = ?silent,
                    "cluster is not ready: its API does not answer");
            }
        }
        ready
    }
}

/// Every member name valid (`name_problem` says why not) and used once.
fn check_member_names(
    specs: &[MemberSpec],
    name_problem: impl Fn(&str) -> Option<String>,
) -> Result<(), ClusterError> {
    for (i, spec) in specs.iter().enumerate() {
        if let Some(problem) = name_problem(&spec.name) {
            let (name, context) = (spec.name.clone(), spec.context.clone());
            return Err(if spec.is_named() {
                ClusterError::InvalidMemberName {
                    name,
                    context,
                    problem,
                }
            } else {
                ClusterError::InvalidContextName {
                    name,
                    context,
                    problem,
                }
            });
        }
        if specs[..i].iter().any(|s| s.name == spec.name) {
            return Err(ClusterError::DuplicateMember {
                name: spec.name.clone(),
            });
        }
    }
    Ok(())
}

/// The kubeconfig at `path`.
pub fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, ClusterError> {
    Kubeconfig::read_from(path).map_err(|source| ClusterError::Kubeconfig {
        path: path.display().to_string(),
        source,
    })
}

/// A cluster is ready when `/version` answers in time.
pub async fn probe(client: &Client) -> bool {
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await,
        Ok(Ok(_))
    )
}

/// The cluster `name`, reached through the kubeconfig's `context`.
async fn cluster(
    kubeconfig: &Kubeconfig,
    name: &str,
    context: &str,
    options: &ClientOptions,
) -> Result<Cluster, ClusterError> {
    let selected = KubeConfigOptions {
        context: Some(context.to_string()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(kubeconfig.clone(), &selected)
        .await
        .map_err(|source| ClusterError::Client {
            context: context.to_string(),
            source,
        })?;
    let client = build_client(config, options).map_err(|source| ClusterError::Connect {
        context: context.to_string(),
        source: Box::new(source),
    })?;
    Ok(Cluster::new(name.to_string(), client))
}

#[cfg(test)]
mod unanswered_tests {
    use super::*;

    #[test]
    fn a_member_that_stops_answering_stays_ready_for_the_grace() {
        let unanswered = Unanswered {
            grace: Duration::from_secs(30),
            ..Unanswered::default()
        };
        let members = ["m1".to_string(), "m2".to_string()];
        let t0 = Instant::now();
        let ready = |answering: &[&str], at: Instant| {
            let answering: Vec<String> = answering.iter().map(|s| s.to_string()).collect();
            unanswered.ready(&members, &answering, at)
        };
        assert_eq!(ready(&["m1", "m2"], t0), ["m1", "m2"]);
        assert_eq!(ready(&["m1"], t0), ["m1", "m2"], "m2 silent: ready");
        let later = t0 + Duration::from_secs(30);
        assert_eq!(ready(&["m1"], later), ["m1", "m2"], "at the grace");
        let past = t0 + Duration::from_secs(31);
        assert_eq!(ready(&["m1"], past), ["m1"], "past the grace: not ready");
        assert_eq!(ready(&["m1", "m2"], past), ["m1", "m2"], "answers again");
        assert_eq!(
            ready(&["m1"], past),
            ["m1", "m2"],
            "a new outage, a new grace"
        );
    }

    #[test]
    fn without_a_grace_a_silent_member_is_not_ready_at_once() {
        let unanswered = Unanswered::default();
        let members = ["m1".to_string()];
        assert!(unanswered.ready(&members, &[], Instant::now()).is_empty());
    }
}
