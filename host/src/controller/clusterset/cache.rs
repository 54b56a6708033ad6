//! The clusterset's own caches, per member: its ServiceExports (every namespace), its
//! ServiceImports, and its ClusterProperties (for `cluster.clusterset.k8s.io`), each filled by
//! a watch ([`crate::controller::cache::watch`]) into a [`Store`], as the MultiClusterService
//! side's caches are. The member's Services and EndpointSlices are the shared member caches
//! ([`crate::controller::cache::Member`]), which keep the exported names and their derived
//! Services' names through [`crate::controller::cache::Scope::also_want`] ([`super::keys`]).
//!
//! A member that does not serve `multicluster.x-k8s.io` (its list answers 404: the CRDs are not
//! installed) has no exports and no imports: it takes no part in a pass. Each of its watches
//! then watches its CRD by name instead of listing again ([`crate::controller::cache::crd`]):
//! installing the CRDs later brings the member in at once, and until then it costs no request
//! at rest. A CRD established without `v1beta1` (a member with mcs-api's `v1alpha1` only) is
//! reported ([`Hears::unserved`]): the member is not served, and says why.
//!
//! Two more watches per member, label-selected, keep our own derived Services and imported
//! EndpointSlices by the name they were made for ([`ours`]): what outlived its exports while
//! the controller was stopped still names a key.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use tokio::task::JoinHandle;

use super::names::{export_resource, import_resource, property_resource};
use crate::clusters::Registry;
use crate::controller::cache::crd::{self, Crd};
use crate::controller::cache::kept;
use crate::controller::cache::watch::{News, Watch};
use crate::controller::cache::{Cached, Health, Patience, Store, Unreadable};

use super::ours;

/// One member's clusterset caches.
#[derive(Clone)]
pub struct Stores {
    pub exports: Store<DynamicObject>,
    pub imports: Store<DynamicObject>,
    pub properties: Store<DynamicObject>,
    /// Our derived Services, grouped by the exported name ([`ours`]).
    pub derived: Store<DynamicObject>,
    /// Our imported EndpointSlices, grouped by the exported name ([`ours`]).
    pub imported: Store<DynamicObject>,
}

impl Stores {
    pub(super) fn new(patience: Patience) -> Stores {
        let stores = Stores {
            exports: Store::new(name_of),
            imports: Store::new(name_of),
            properties: Store::new(name_of),
            derived: Store::new(ours::derived_for),
            imported: Store::new(ours::exported_name),
        };
        for store in stores.all() {
            store.set_patience(patience);
        }
        stores
    }

    fn all(&self) -> [&Store<DynamicObject>; 5] {
        [
            &self.exports,
            &self.imports,
            &self.properties,
            &self.derived,
            &self.imported,
        ]
    }

    /// Every name the member exports, imports, or holds a derived Service or imported slice of
    /// ours for, as last read (`namespace/name`).
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .exports
            .all()
            .iter()
            .chain(
                self.imports
                    .all()
                    .iter()
                    .filter(|i| super::triggers::ours(i)),
            )
            .map(|o| format!("{}/{}", o.namespace(), o.name()))
            .chain(self.groups_of_ours())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The names the member holds a derived Service or an imported slice of ours for.
    pub fn groups_of_ours(&self) -> Vec<String> {
        let derived = self.derived.all();
        let imported = self.imported.all();
        let mut names: Vec<String> = derived
            .iter()
            .filter_map(|o| ours::derived_for(o).map(|n| (o.namespace(), n)))
            .chain(
                imported
                    .iter()
                    .filter_map(|o| ours::exported_name(o).map(|n| (o.namespace(), n))),
            )
            .map(|(namespace, name)| format!("{namespace}/{name}"))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether the member does not serve the Multi-Cluster Services API (404 on the list of
    /// ServiceExports or ServiceImports).
    pub fn not_served(&self) -> bool {
        let not_served =
            |store: &Store<DynamicObject>| store.failing().is_some_and(|f| f.not_served);
        not_served(&self.exports) || not_served(&self.imports)
    }

    /// Why the member's clusterset caches cannot be read now (`None`: they can). A member that
    /// does not serve ClusterProperties reads as having none.
    pub fn unreadable(&self) -> Option<Unreadable> {
        let state = |health: Health| match health {
            Health::Synced => None,
            Health::Listing => Some(Unreadable::Listing),
            Health::Broken(failure) => Some(Unreadable::Broken(failure)),
        };
        state(self.exports.health())
            .or_else(|| state(self.imports.health()))
            .or_else(|| match self.properties.health() {
                Health::Broken(f) if f.not_served => None,
                health => state(health),
            })
    }

    /// The value of the ClusterProperty `cluster.clusterset.k8s.io`, as last read.
    pub fn cluster_property(&self) -> Option<String> {
        let property = self.properties.get("", super::names::CLUSTER_PROPERTY)?;
        property
            .data
            .pointer("/spec/value")
            .and_then(|v| v.as_str())
            .map(str::to_string)
    }
}

/// What the clusterset's watches tell: `(cluster, resource, news)`.
pub trait Hears: Clone + Send + Sync + 'static {
    fn heard(&self, cluster: &str, resource: Resource, news: News<'_, DynamicObject>);
    /// The caches of member `cluster` start (before their watches' first news).
    fn started(&self, cluster: &str, stores: &Stores);
    /// The caches of member `cluster` stop.
    fn stopped(&self, cluster: &str);
    /// The CRD `crd` of member `cluster` is established but does not serve the version watched:
    /// it serves `Some(versions)`; `None` once it does (or is gone).
    fn unserved(&self, cluster: &str, crd: &str, served: Option<Vec<String>>);
}

/// Which of the clusterset's stores a piece of news comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Exports,
    Imports,
    Properties,
    /// Our derived Services and imported slices ([`ours`]).
    Ours(ours::Ours),
}

impl Resource {
    /// The resource's plural, for logs and messages.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Exports => "serviceexports",
            Resource::Imports => "serviceimports",
            Resource::Properties => "clusterproperties",
            Resource::Ours(ours::Ours::DerivedServices) => "services",
            Resource::Ours(ours::Ours::ImportedSlices) => "endpointslices",
        }
    }
}

/// The running clusterset caches of the members, following the membership.
#[derive(Default)]
pub struct Members {
    running: HashMap<String, (u64, Vec<JoinHandle<()>>)>,
    /// What passes read: the stores by member name.
    pub shared: Arc<RwLock<HashMap<String, Stores>>>,
}

impl Drop for Members {
    fn drop(&mut self) {
        for (_, (_, tasks)) in self.running.drain() {
            for task in tasks {
                task.abort();
            }
        }
    }
}

impl Members {
    /// The clusterset stores of member `name`, if cached.
    pub fn stores(shared: &RwLock<HashMap<String, Stores>>, name: &str) -> Option<Stores> {
        let shared = shared.read().unwrap_or_else(|p| p.into_inner());
        shared.get(name).cloned()
    }

    /// Starts the caches of members of `registry` not cached yet (or through another client);
    /// stops those of members no longer in it.
    pub fn follow<H: Hears>(&mut self, registry: &Registry, patience: Patience, hears: &H) {
        let mut shared = self.shared.write().unwrap_or_else(|p| p.into_inner());
        let stale: Vec<String> = self
            .running
            .iter()
            .filter(|(name, (client_id, _))| {
                registry
                    .member(name)
                    .is_none_or(|m| m.client_id != *client_id)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            if let Some((_, tasks)) = self.running.remove(&name) {
                for task in tasks {
                    task.abort();
                }
            }
            shared.remove(&name);
            hears.stopped(&name);
        }
        for member in &registry.members {
            if self.running.contains_key(&member.name) {
                continue;
            }
            let stores = Stores::new(patience);
            hears.started(&member.name, &stores);
            let watch = |resource: Resource, served: ApiResource, store: &Store<DynamicObject>| {
                let api = Api::all_with(member.client.clone(), &served);
                let crd = Crd::of(member.client.clone(), &served);
                let report: crd::Report = {
                    let (hears, cluster, name) =
                        (hears.clone(), member.name.clone(), crd.name().to_string());
                    Arc::new(move |versions| hears.unserved(&cluster, &name, versions))
                };
                let crd = crd.reporting(report);
                let watch = Watch {
                    cluster: member.name.clone(),
                    resource: resource.plural(),
                    api,
                    config: crate::controller::cache::watch::config(),
                    store: store.clone(),
                    keep: kept::mcs,
                    mirror: None,
                    wake: Arc::default(),
                };
                let hears = hears.clone();
                let cluster = member.name.clone();
                tokio::spawn(
                    watch.run_served_by(crd, move |news| hears.heard(&cluster, resource, news)),
                )
            };
            // Services and EndpointSlices are always served: no CRD to wait for.
            let ours_watch = |which: ours::Ours, store: &Store<DynamicObject>| {
                let watch = Watch {
                    cluster: member.name.clone(),
                    resource: Resource::Ours(which).plural(),
                    api: Api::all_with(member.client.clone(), &which.resource()),
                    config: crate::controller::cache::watch::config().labels(&which.selector()),
                    store: store.clone(),
                    keep: ours::keep,
                    mirror: None,
                    wake: Arc::default(),
                };
                let hears = hears.clone();
                let cluster = member.name.clone();
                let resource = Resource::Ours(which);
                tokio::spawn(watch.run(move |news| hears.heard(&cluster, resource, news)))
            };
            let tasks = vec![
                watch(Resource::Exports, export_resource(), &stores.exports),
                watch(Resource::Imports, import_resource(), &stores.imports),
                watch(
                    Resource::Properties,
                    property_resource(),
                    &stores.properties,
                ),
                ours_watch(ours::Ours::DerivedServices, &stores.derived),
                ours_watch(ours::Ours::ImportedSlices, &stores.imported),
            ];
            shared.insert(member.name.clone(), stores);
            self.running
                .insert(member.name.clone(), (member.client_id, tasks));
        }
    }
}

fn name_of<K: Cached>(object: &K) -> Option<&str> {
    Some(object.name())
}
