//! The controller's caches: one watch per resource and cluster fills a [`Store`], and a pass
//! reads only stores — no API request is made to read anything a pass decides on.
//!
//! | cluster | resource | group a pass reads |
//! | --- | --- | --- |
//! | hub | MultiClusterServices | by name |
//! | hub | Services (the templates) | by name |
//! | each member | EndpointSlices labelled `kubernetes.io/service-name` | by that label |
//! | each member | Services | by name |
//!
//! Every change a watch delivers, other than the controller's own writes, triggers the pass of
//! the MultiClusterService it concerns (if the hub has one of that namespace and name): a
//! provider's slice, a copy edited or deleted by hand, a member's Service edited by hand or
//! given a load balancer, a hub Service, an MCS's spec or deletion. A store that lists again
//! after a failure triggers every MCS, since it may have missed changes
//! ([`triggers::Reactions`]).
//!
//! **What a pass may assume** (docs/architecture.md, "Consistency of the caches"):
//! - a store it reads is [`Health::Synced`]: it has listed, and applied every event since, so
//!   it shows the cluster as it was a moment ago, never a state the cluster was not in. A
//!   member with a store that is listing or broken is *unreadable* for the pass, which the
//!   component handles as a failed read (keep the provider's copies, prune nothing from it,
//!   retry);
//! - the controller's own writes are seen at once ([`store`]'s read-your-writes);
//! - anything else may lag, and a change it has not seen yet arrives as an event that
//!   triggers another pass.
//!
//! **Why no user object is lost.** The component deletes only slices carrying all of the
//! copy markers, and a member's Service only when it carries the created-by label, and only
//! to create it again. Every delete carries a uid and resourceVersion precondition taken from
//! the store, so an object that was re-created or changed since the store saw it is not
//! deleted (409; the pass is retried once the store has caught up). Applies and replaces of
//! our own objects are idempotent: made from a stale store they write what a fresh one would,
//! or fail on the resourceVersion (409) and are re-read.

pub mod fill;
pub mod groups;
pub mod health;
pub mod interner;
pub mod kept;
pub mod overlay;
pub mod retry;
pub mod scope;
pub mod scoped;
pub mod store;
pub mod triggers;
pub mod watch;
pub mod watched;
pub mod writes;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Api;
use kube::api::{DynamicObject, ListParams};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clusters::{Cluster, Registry};
use crate::controller::names::{
    DISPATCH_MANAGER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, mcs_resource,
};
use crate::controller::probes::metrics::Metrics;
pub use kept::{KeptService, KeptSlice};
pub use scope::Scope;
pub use kept::Cached;
pub use health::{Failure, Health, Patience};
pub use store::Store;
pub use watch::News;
use watch::Watch;

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
    /// being listed ([`scope`]).
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

/// Who hears what the caches' watches see: every piece of news of every store, with the
/// cluster it comes from. The triggers ([`triggers::Reactions`]) turn it into passes; the
/// caches know nothing of passes.
pub trait Listener: Clone + Send + Sync + 'static {
    /// One piece of news of a watch of `cluster`.
    fn hear<K: Cached>(&self, cluster: &str, news: News<'_, K>);

    /// The objects of group `namespace/name` of a store of `cluster` were listed: the group
    /// can be read ([`scope`]).
    fn filled(&self, _cluster: &str, _namespace: &str, _name: &str) {}

    /// The wanted groups the members' stores keep; `None`: they keep everything.
    fn scope(&self) -> Option<Scope> {
        None
    }
}

/// Every cache a pass reads: the hub's, and the members' by name. Cloning gives another
/// handle on the same caches.
#[derive(Clone, Default)]
pub struct Caches {
    pub hub: Hub,
    members: Arc<RwLock<HashMap<String, Member>>>,
    /// How every store waits for a failing watch (`--outage-grace`, `--request-timeout`).
    patience: Patience,
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
    /// fills itself (and for tests); the controller's own members come from [`Members`].
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

/// The running caches of the members, following the membership.
pub struct Members {
    running: HashMap<String, Running>,
    /// What passes read: the stores by member name.
    shared: Arc<RwLock<HashMap<String, Member>>>,
    /// How the members' stores wait for a failing watch.
    patience: Patience,
}

struct Running {
    client_id: u64,
    tasks: Vec<JoinHandle<()>>,
    /// Its stores follow the wanted groups until it stops.
    _following: Vec<scope::Following>,
    /// Wakes its watches that wait to list again.
    wake: Arc<Notify>,
}

impl Drop for Members {
    fn drop(&mut self) {
        for (_, running) in self.running.drain() {
            running.stop();
        }
    }
}

impl Running {
    fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
    }
}

impl Members {
    /// No member cached yet; passes read the members' stores through `caches`.
    pub fn new(caches: &Caches) -> Members {
        Members {
            running: HashMap::new(),
            shared: caches.members.clone(),
            patience: caches.patience,
        }
    }

    /// Starts the caches of members of `registry` not cached yet, or cached through another
    /// client than their current one (rotated credentials: listed again through the new one);
    /// stops those of members no longer in it.
    pub fn follow<L: Listener>(&mut self, registry: &Registry, listener: &L) {
        let mut shared = self.shared.write().unwrap_or_else(|p| p.into_inner());
        let stale: Vec<String> = self
            .running
            .iter()
            .filter(|(name, running)| {
                registry
                    .member(name)
                    .is_none_or(|m| m.client_id != running.client_id)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            if registry.member(&name).is_some() {
                tracing::info!(cluster = %name, "member has a new client: its caches list again");
            } else {
                tracing::info!(cluster = %name, "member left: its caches are dropped");
            }
            if let Some(running) = self.running.remove(&name) {
                running.stop();
            }
            shared.remove(&name);
        }
        for member in &registry.members {
            if self.running.contains_key(&member.name) {
                continue;
            }
            let wake = Arc::new(Notify::new());
            let (cache, tasks, following) = start_member(member, listener, &wake);
            cache.slices.set_patience(self.patience);
            cache.services.set_patience(self.patience);
            shared.insert(member.name.clone(), cache);
            let client_id = member.client_id;
            let running = Running {
                client_id,
                tasks,
                _following: following,
                wake,
            };
            self.running.insert(member.name.clone(), running);
        }
    }

    /// Ends the backoff of the failed watches of `members` (they answer again): they list now.
    pub fn wake(&self, members: &[String]) {
        for name in members {
            if let Some(running) = self.running.get(name) {
                running.wake.notify_waiters();
            }
        }
    }

    /// The members cached now, with the client id each cache uses.
    pub fn cached(&self) -> Vec<(String, u64)> {
        let mut out: Vec<_> = self
            .running
            .iter()
            .map(|(name, r)| (name.clone(), r.client_id))
            .collect();
        out.sort();
        out
    }
}

/// Starts a member's two watches. With a [`Scope`] (the controller's), its stores keep whole
/// only the wanted groups and our copies, the watches start once the hub's MCSs have listed,
/// and a filler per store lists the groups wanted later.
fn start_member<L: Listener>(
    member: &Cluster,
    listener: &L,
    wake: &Arc<Notify>,
) -> (Member, Vec<JoinHandle<()>>, Vec<scope::Following>) {
    let scope = listener.scope();
    let cache = match scope {
        Some(_) => Member {
            slices: Store::scoped(service_name_of, is_copy),
            services: Store::scoped(name_of, |_| false),
        },
        None => Member::new(),
    };
    let slices = Watch {
        cluster: member.name.clone(),
        resource: "endpointslices",
        api: Api::all(member.client.clone()),
        config: watch::config().labels(SERVICE_NAME_LABEL),
        store: cache.slices.clone(),
        keep: kept::slice,
        mirror: None,
        wake: wake.clone(),
    };
    let services = Watch {
        cluster: member.name.clone(),
        resource: "services",
        api: Api::all(member.client.clone()),
        config: watch::config(),
        store: cache.services.clone(),
        keep: kept::service,
        mirror: None,
        wake: wake.clone(),
    };
    let Some(scope) = scope else {
        let tasks = vec![
            spawn_heard(slices, &member.name, listener),
            spawn_heard(services, &member.name, listener),
        ];
        return (cache, tasks, Vec::new());
    };
    let following = vec![scope.follow(&cache.slices), scope.follow(&cache.services)];
    let fill_slices = fill::fill(
        member.name.clone(),
        cache.slices.clone(),
        scoped_list(
            &member.client,
            |name| ListParams::default().labels(&format!("{SERVICE_NAME_LABEL}={name}")),
            kept::slice,
        ),
        listener.clone(),
    );
    let fill_services = fill::fill(
        member.name.clone(),
        cache.services.clone(),
        scoped_list(
            &member.client,
            |name| ListParams::default().fields(&format!("metadata.name={name}")),
            kept::service,
        ),
        listener.clone(),
    );
    let tasks = vec![
        spawn_after(&scope, slices, &member.name, listener),
        spawn_after(&scope, services, &member.name, listener),
        tokio::spawn(fill_slices),
        tokio::spawn(fill_services),
    ];
    (cache, tasks, following)
}

/// How a filler lists one group of a member's resource `K`: in the group's namespace, with the
/// parameters `select` gives for its name (a label or a field selector), each object kept as
/// `keep` keeps it.
fn scoped_list<K, C>(
    client: &kube::Client,
    select: fn(&str) -> ListParams,
    keep: fn(K) -> C,
) -> impl Fn(String, String) -> futures::future::BoxFuture<'static, Result<Vec<C>, kube::Error>>
+ use<K, C>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + 'static,
    C: Send + 'static,
{
    let client = client.clone();
    move |namespace, name| {
        let api: Api<K> = Api::namespaced(client.clone(), &namespace);
        let params = select(&name);
        Box::pin(async move {
            let list = api.list(&params).await?;
            Ok(list.items.into_iter().map(keep).collect())
        })
    }
}

/// Runs `watch` once the hub's MCSs have listed (the wanted groups are known), telling
/// `listener` its news.
fn spawn_after<K, C, L>(
    scope: &Scope,
    watch: Watch<K, C>,
    cluster: &str,
    listener: &L,
) -> JoinHandle<()>
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    C: Cached,
    L: Listener,
{
    let listener = listener.clone();
    let cluster = cluster.to_string();
    let scope = scope.clone();
    tokio::spawn(async move {
        scope.ready().await;
        watch.run(move |news| listener.hear(&cluster, news)).await;
    })
}

/// Whether `slice` is one of our copies: kept whatever its Service, for the orphan sweep.
fn is_copy(slice: &KeptSlice) -> bool {
    slice.label(MANAGED_BY_LABEL) == Some(DISPATCH_MANAGER)
}

/// Runs `watch`, telling `listener` its news.
fn spawn_heard<K, C, L>(watch: Watch<K, C>, cluster: &str, listener: &L) -> JoinHandle<()>
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    C: Cached,
    L: Listener,
{
    let listener = listener.clone();
    let cluster = cluster.to_string();
    tokio::spawn(watch.run(move |news| listener.hear(&cluster, news)))
}

/// The hub's MultiClusterServices' watch, as the resource the Controller runs on.
pub fn mcs_api(hub: &Cluster) -> Api<DynamicObject> {
    Api::all_with(hub.client.clone(), &mcs_resource())
}

fn name_of<K: Cached>(object: &K) -> Option<&str> {
    Some(object.name())
}

fn service_name_of(slice: &KeptSlice) -> Option<&str> {
    slice.label(SERVICE_NAME_LABEL)
}
