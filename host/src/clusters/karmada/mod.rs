//! The Karmada source of member clusters (push mode), behind [`super::Source::Karmada`]: the
//! members are the hub's `clusters.cluster.karmada.io` objects in `Push` mode, each reached at
//! its `spec.apiEndpoint` with the token and CA bundle of the Secret its `spec.secretRef` names
//! (as `karmadactl join` writes it); a member is ready when its `Ready` condition is `True`. The
//! controller asks for the membership every probe interval, so clusters joining or leaving
//! Karmada join or leave the sync without a restart (see `docs/sync.md`, "Members from
//! Karmada").
//!
//! - this module: the source, listing the Cluster objects and logging who is a member;
//! - `object`: what one Cluster object means (no I/O);
//! - `connection`: a member's connection and client configuration (no I/O);
//! - `clients`: the members' clients, kept while their Secret and settings hold.

mod clients;
mod connection;
#[cfg(test)]
mod fixtures;
mod object;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use kube::Api;
use kube::api::{DynamicObject, ListParams};

use super::{ClientOptions, Cluster, ClusterError, Membership, Registry, UnsyncedCluster};
use crate::engine::PolicyEngine;
use clients::Clients;
pub use clients::{Fingerprint, fingerprint};
pub use connection::{ConfigError, Connection, config, connection, kubeconfig};
pub use object::{SecretRef, Skip, Target, decide, name_problem, resource};

/// The members as Karmada's Cluster objects in the hub describe them.
pub struct Karmada {
    hub: Cluster,
    /// `--member` names: when not empty, only these clusters are members.
    only: Vec<String>,
    /// The policy component: which names can name a cluster is its rule.
    policy: PolicyEngine,
    clients: Clients,
    memory: Mutex<Remembered>,
}

/// One Cluster object this pass: a member with its client, or why not.
type Resolved = Result<(Target, Cluster), Skip>;

/// What the source remembers between passes, to log only what changed.
#[derive(Default)]
struct Remembered {
    /// Why each cluster was last left out, as logged (logged again only when it changes).
    skipped: HashMap<String, Skip>,
    /// The members of the last pass and whether they were ready.
    members: HashMap<String, bool>,
}

impl Karmada {
    /// The source for `hub`; `only`, when not empty, restricts the members to those names;
    /// `policy` says which names are cluster names.
    pub fn new(
        hub: Cluster,
        only: Vec<String>,
        options: ClientOptions,
        policy: PolicyEngine,
    ) -> Self {
        Karmada {
            clients: Clients::new(options),
            hub,
            only,
            policy,
            memory: Mutex::new(Remembered::default()),
        }
    }

    /// The hub.
    pub fn hub(&self) -> &Cluster {
        &self.hub
    }

    /// The push-mode clusters that can be reached now, and which are ready. A cluster that
    /// cannot be used (Pull mode, no endpoint, secret missing, ...) is left out, logged once
    /// per reason, and named with why in the registry's `unsynced`, as is one that is not a
    /// `--member` name; only a failure to list the clusters fails the whole membership.
    pub async fn membership(&self) -> Result<Membership, ClusterError> {
        let api: Api<DynamicObject> = Api::all_with(self.hub.client.clone(), &resource());
        let objects = api
            .list(&ListParams::default())
            .await
            .map_err(|source| ClusterError::KarmadaClusters {
                source: Box::new(source),
            })?
            .items;
        let mut outcomes = Vec::with_capacity(objects.len());
        for object in &objects {
            let name = object.metadata.name.clone().unwrap_or_default();
            let name_problem = |name: &str| name_problem(&self.policy, name);
            let outcome = match decide(object, &self.only, name_problem) {
                Ok(target) => self
                    .clients
                    .connect(&self.hub.client, &target)
                    .await
                    .map(|cluster| (target, cluster)),
                Err(skip) => Err(skip),
            };
            outcomes.push((name, outcome));
        }
        for wanted in &self.only {
            if !objects
                .iter()
                .any(|o| o.metadata.name.as_ref() == Some(wanted))
            {
                outcomes.push((wanted.clone(), Err(Skip::NotFound)));
            }
        }
        Ok(self.record(outcomes))
    }

    /// Turns this pass's outcomes into the membership: logs what changed, forgets the clients
    /// of clusters that are gone. The Cluster objects left out are the registry's `unsynced`,
    /// each with why.
    fn record(&self, outcomes: Vec<(String, Resolved)>) -> Membership {
        let mut members = Vec::new();
        let mut ready = Vec::new();
        let unsynced: Vec<UnsyncedCluster> = outcomes
            .iter()
            .filter_map(|(name, outcome)| {
                let reason = outcome.as_ref().err()?.unsynced_reason()?;
                Some(UnsyncedCluster {
                    cluster: name.clone(),
                    reason,
                })
            })
            .collect();
        let Ok(mut memory) = self.memory.lock() else {
            return Membership {
                registry: Registry {
                    hub: self.hub.clone(),
                    members,
                    unsynced,
                },
                ready,
            };
        };
        let mut present = HashSet::new();
        let mut skipped = HashSet::new();
        for (name, outcome) in outcomes {
            match outcome {
                Ok((target, cluster)) => {
                    memory.skipped.remove(&name);
                    log_member(&name, memory.members.get(&name).copied(), target.ready);
                    if target.ready {
                        ready.push(name.clone());
                    }
                    present.insert(name.clone());
                    members.push(cluster);
                }
                // Left out by choice: not worth a log line per cluster.
                Err(Skip::NotSelected) => {}
                Err(skip) => {
                    skipped.insert(name.clone());
                    if memory.skipped.get(&name) != Some(&skip) {
                        log_skip(&name, &skip);
                        memory.skipped.insert(name.clone(), skip);
                    }
                }
            }
        }
        for gone in memory.members.keys().filter(|n| !present.contains(*n)) {
            tracing::info!(cluster = %gone, "karmada cluster is no longer a member");
        }
        memory.members = members
            .iter()
            .map(|m| (m.name.clone(), ready.contains(&m.name)))
            .collect();
        memory.skipped.retain(|name, _| skipped.contains(name));
        self.clients.keep_only(&present);
        Membership {
            registry: Registry {
                hub: self.hub.clone(),
                members,
                unsynced,
            },
            ready,
        }
    }
}

fn log_member(name: &str, before: Option<bool>, ready: bool) {
    match (before, ready) {
        (None, _) => tracing::info!(cluster = %name, ready, "karmada cluster is a member"),
        (Some(false), true) => tracing::info!(cluster = %name, "karmada cluster is ready"),
        (Some(true), false) => {
            tracing::warn!(cluster = %name, "karmada cluster is not ready: its Ready condition is not True")
        }
        _ => {}
    }
}

fn log_skip(name: &str, skip: &Skip) {
    match skip {
        Skip::Pull => tracing::info!(cluster = %name, "karmada cluster is not a member: {skip}"),
        _ => tracing::warn!(cluster = %name, "karmada cluster is not a member: {skip}"),
    }
}
