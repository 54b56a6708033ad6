//! The running caches of the members ([`Members`]): each member's watches, started and
//! stopped with the membership, and, under a [`super::Scope`], the fillers of the groups wanted
//! later ([`super::scope`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Api;
use kube::api::ListParams;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::caches::{Caches, Member, name_of, service_name_of};
use super::fill::fill;
use super::health::Patience;
use super::kept::{self, KeptSlice};
use super::listener::{Listener, spawn_after, spawn_heard};
use super::scope;
use super::store::Store;
use super::watch::{self, Watch};
use crate::clusters::{Cluster, Registry};
use crate::controller::names::{DISPATCH_MANAGER, MANAGED_BY_LABEL, SERVICE_NAME_LABEL};

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

/// Starts a member's two watches. With a [`super::Scope`] (the controller's), its stores keep whole
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
    let fill_slices = fill(
        member.name.clone(),
        cache.slices.clone(),
        scoped_list(
            &member.client,
            |name| ListParams::default().labels(&format!("{SERVICE_NAME_LABEL}={name}")),
            kept::slice,
        ),
        listener.clone(),
    );
    let fill_services = fill(
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

/// Whether `slice` is one of our copies: kept whatever its Service, for the orphan sweep.
fn is_copy(slice: &KeptSlice) -> bool {
    slice.label(MANAGED_BY_LABEL) == Some(DISPATCH_MANAGER)
}
