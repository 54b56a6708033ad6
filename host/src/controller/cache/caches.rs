//! Every cache a pass reads: the hub's ([`Hub`]), and each member's ([`Member`]) by name
//! ([`Caches`]), and why a member cannot be read ([`Unreadable`]). The members' caches are
//! started and stopped with the membership by [`super::members`].

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Api;
use kube::api::DynamicObject;
use tokio::task::JoinHandle;

use super::health::{Failure, Health, Patience};
use super::kept::{self, Cached, KeptService, KeptSlice};
use super::listener::{Listener, spawn_heard};
use super::store::Store;
use super::watch::{self, Watch};
use crate::clusters::Cluster;
use crate::controller::names::{SERVICE_NAME_LABEL, mcs_resource};
use crate::controller::probes::metrics::Metrics;

/// The caches of the hub.
#[derive(Clone)]
pub struct Hub {
    /// The MultiClusterServices, whole (but `managedFields`).
    pub mcs: Store<DynamicObject>,
    /// The Services: the templates.
    pub services: Store<KeptService>,
}

impl Hub {
    /// Empty stores; the watches that fill them are started by the runtime.
    pub fn new() -> Hub {
        Hub {
            mcs: Store::new(name_of),
            services: Store::new(name_of),
        }
    }

    /// Whether both hub stores have listed and are not broken.
    pub fn synced(&self) -> bool {
        self.mcs.health() == Health::Synced && self.services.health() == Health::Synced
    }

    /// Starts the watch of the hub's Services, triggering the MCS of each changed one.
    pub fn watch_services<L: Listener>(&self, hub: &Cluster, listener: &L) -> JoinHandle<()> {
        let watch = Watch {
            cluster: hub.name.clone(),
            resource: "services",
            api: Api::all(hub.client.clone()),
            config: watch::config(),
            store: self.services.clone(),
            keep: kept::service,
            mirror: None,
            wake: Arc::default(),
        };
        spawn_heard(watch, &hub.name, listener)
    }
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

/// The caches of one member cluster.
#[derive(Clone)]
pub struct Member {
    /// Its EndpointSlices that belong to a Service.
    pub slices: Store<KeptSlice>,
    /// Its Services.
    pub services: Store<KeptService>,
}

impl Member {
    /// Empty stores, [`Health::Listing`].
    pub fn new() -> Member {
        Member {
            slices: Store::new(service_name_of),
            services: Store::new(name_of),
        }
    }

    /// Why the member cannot be read now, `None` when both stores are synced.
    pub fn unreadable(&self) -> Option<Unreadable> {
        let state = |health: Health| match health {
            Health::Synced => None,
            Health::Listing => Some(Unreadable::Listing),
            Health::Broken(failure) => Some(Unreadable::Broken(failure)),
        };
        state(self.slices.health()).or_else(|| state(self.services.health()))
    }
}

impl Default for Member {
    fn default() -> Self {
        Member::new()
    }
}

/// Why a member's caches cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not listed yet.
    Listing,
    /// Its watch has been failing for longer than the grace (or failed before its first
    /// list); it is retried.
    Broken(Failure),
    /// Listed, but the objects of `group` (`namespace/name`), which an MCS named since, are
    /// being listed ([`super::scope`]).
    Filling { group: String },
}

impl Unreadable {
    /// What the conditions say about `cluster`.
    pub fn message(&self, cluster: &str) -> String {
        match self {
            Unreadable::Listing => format!(
                "cluster {cluster} is not readable yet: its endpointslices and services are being listed"
            ),
            Unreadable::Broken(failure) => format!(
                "cluster {cluster} is not readable: {} (failing for {}s; retrying)",
                failure.message,
                failure.since.elapsed().as_secs()
            ),
            Unreadable::Filling { group } => format!(
                "cluster {cluster} is not readable yet for {group}: its endpointslices and service of that name are being listed"
            ),
        }
    }

    /// The member's group `namespace/name` is not filled yet.
    pub fn filling(namespace: &str, name: &str) -> Unreadable {
        Unreadable::Filling {
            group: format!("{namespace}/{name}"),
        }
    }

    /// Whether the cluster answered 404 to the list of EndpointSlices: it does not serve
    /// them.
    pub fn not_served(&self) -> bool {
        matches!(self, Unreadable::Broken(f) if f.not_served)
    }
}

/// Every cache a pass reads: the hub's, and the members' by name. Cloning gives another
/// handle on the same caches.
#[derive(Clone, Default)]
pub struct Caches {
    pub hub: Hub,
    pub(super) members: Arc<RwLock<HashMap<String, Member>>>,
    /// How every store waits for a failing watch (`--outage-grace`, `--request-timeout`).
    pub(super) patience: Patience,
}

impl Caches {
    /// Empty caches whose stores wait for a failing watch with `patience`.
    pub fn with_patience(patience: Patience) -> Caches {
        let caches = Caches {
            patience,
            ..Caches::default()
        };
        caches.hub.mcs.set_patience(patience);
        caches.hub.services.set_patience(patience);
        caches
    }

    /// The caches of every member.
    pub fn members(&self) -> Vec<Member> {
        let members = self.members.read().unwrap_or_else(|p| p.into_inner());
        members.values().cloned().collect()
    }

    /// Reports how many objects the caches hold, by resource, to `metrics`.
    pub fn count(&self, metrics: &Metrics) {
        let members = self.members();
        let slices = members.iter().map(|m| m.slices.len()).sum();
        let services =
            self.hub.services.len() + members.iter().map(|m| m.services.len()).sum::<usize>();
        metrics.cached("multiclusterservices", self.hub.mcs.len());
        metrics.cached("services", services);
        metrics.cached("endpointslices", slices);
        let pending = self.hub.mcs.pending()
            + self.hub.services.pending()
            + members
                .iter()
                .map(|m| m.slices.pending() + m.services.pending())
                .sum::<usize>();
        metrics.pending_writes(pending);
    }

    /// Makes `member` the caches of member `name`: for a host that runs passes over caches it
    /// fills itself (and for tests); the controller's own members come from [`super::Members`].
    pub fn set_member(&self, name: &str, member: Member) {
        let mut members = self.members.write().unwrap_or_else(|p| p.into_inner());
        members.insert(name.to_string(), member);
    }

    /// The caches of member `name`, if it is cached.
    pub fn member(&self, name: &str) -> Option<Member> {
        let members = self.members.read().unwrap_or_else(|p| p.into_inner());
        members.get(name).cloned()
    }
}

/// The hub's MultiClusterServices' watch, as the resource the Controller runs on.
pub fn mcs_api(hub: &Cluster) -> Api<DynamicObject> {
    Api::all_with(hub.client.clone(), &mcs_resource())
}

pub(super) fn name_of<K: Cached>(object: &K) -> Option<&str> {
    Some(object.name())
}

pub(super) fn service_name_of(slice: &KeptSlice) -> Option<&str> {
    slice.label(SERVICE_NAME_LABEL)
}
