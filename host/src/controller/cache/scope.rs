//! What a member's caches keep whole: the groups a MultiClusterService names, our copies, and
//! nothing else.
//!
//! A pass over the MCS `ns/name` reads, in every member, the slices labelled
//! `kubernetes.io/service-name=name` in `ns` and the Service `ns/name`: its *group*. A member
//! holds many more slices and Services than the fleet's MCSs name, and caching them all would
//! make a member's size, not the MCSs, set the controller's memory. So the member watches stay
//! cluster-wide (one list and one watch per resource), but their store keeps an object only
//! when its group is *wanted* (an MCS of that namespace and name is in the hub's cache) or
//! when it is one of our copies (a slice managed by `endpointslice-dispatch-controller.karmada.io`,
//! whatever its Service: the orphan sweep reads them all). Everything else is dropped as it
//! arrives; its events still reach the triggers, which ignore them (no MCS of that name).
//!
//! **A group is read only once filled.** A group wanted before its store's list started is
//! filled by that list. A group that becomes wanted later (an MCS created, or a list that ran
//! while it was not wanted yet) had its objects dropped: it is *filled* by a list of the group
//! alone (slices by label selector in the namespace, the Service by name), merged with the
//! cluster-wide watch's events ([`Store::fill_done`]):
//! - from the moment a group is wanted, its watch events are kept whole;
//! - a filled object older than what an event already gave (same key, resourceVersion not
//!   later) is ignored, and so is one whose deletion was seen during the fill;
//! - nothing is removed because the fill did not list it (what the store holds of the group
//!   came from events, which are newer than the fill or will be followed by their deletion).
//!
//! Until its fill is merged, the group is unreadable for passes: the member is a failed read
//! for that MCS (the component keeps its copies and prunes nothing), and the merge triggers
//! the MCS's pass ([`Listener::filled`]). A fill that fails is retried after a backoff; one
//! that answers while its store is listing again is thrown away, and the list decides again
//! (a group wanted since before the list started is filled by it). An MCS that goes away takes
//! its group's objects with it, our copies excepted.
//!
//! At start the member watches wait for the hub's MultiClusterServices to have listed
//! ([`Scope::ready`]): their first list already knows every wanted group and no fill is needed.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use kube::api::DynamicObject;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::groups::{Fill, Group, Groups, not_older};
use super::kept::{Cached, Key, key, key_of};
use super::store::{GroupOf, Health, Store};
use super::watch::News;
use super::{Listener, Unreadable};

/// Fills of one store running at once, at most.
const FILLS_AT_ONCE: usize = 8;
/// The wait before a failed fill is tried again; it doubles up to [`FILL_RETRY_MAX`].
const FILL_RETRY_FIRST: Duration = Duration::from_millis(500);
/// The longest wait before a failed fill is tried again.
const FILL_RETRY_MAX: Duration = Duration::from_secs(10);

impl<K: Cached> Store<K> {
    /// An empty store that keeps whole only the wanted groups (none yet) and the objects
    /// `always` keeps.
    pub fn scoped(group_of: GroupOf<K>, always: fn(&K) -> bool) -> Self {
        let store = Store::new(group_of);
        store.write().scope = Some(Groups::new(always));
        store
    }

    /// Group `namespace/group` is wanted: from now on its objects are kept, and it is filled
    /// (an unscoped store keeps everything already).
    pub fn want(&self, namespace: &str, group: &str) {
        let mut inner = self.write();
        let Some(scope) = inner.scope.as_mut() else {
            return;
        };
        let group_key = key(namespace, group);
        if scope.wanted.contains_key(&group_key) {
            return;
        }
        let since = scope.tick();
        let token = scope.tick();
        scope.wanted.insert(
            group_key,
            Group {
                since,
                filling: Some(token),
            },
        );
        *scope.filling.entry(namespace.into()).or_default() += 1;
        scope.wake.notify_one();
    }

    /// Group `namespace/group` is no longer wanted: its objects are dropped, but those kept
    /// whatever their group.
    pub fn unwant(&self, namespace: &str, group: &str) {
        let mut inner = self.write();
        let Some(scope) = inner.scope.as_mut() else {
            return;
        };
        let group_key = key(namespace, group);
        let Some(was) = scope.wanted.remove(&group_key) else {
            return;
        };
        if was.filling.is_some() {
            scope.fill_ended(namespace);
        }
        let always = scope.always;
        let dropped: Vec<Key> = inner
            .groups
            .get(&group_key)
            .map(|objects| {
                objects
                    .iter()
                    .filter(|o| !always(o))
                    .map(|o| key_of(&**o))
                    .collect()
            })
            .unwrap_or_default();
        for object in dropped {
            inner.remove(self.group_of, &object);
        }
    }

    /// The groups owed a fill, with the token their fill carries: none unless the store is
    /// synced (a list in progress fills them, or decides again when it ends).
    pub fn unfilled(&self) -> Vec<(String, String, u64)> {
        let inner = self.read();
        if inner.health != Health::Synced || inner.listing.is_some() {
            return Vec::new();
        }
        let Some(scope) = inner.scope.as_ref() else {
            return Vec::new();
        };
        scope
            .wanted
            .iter()
            .filter_map(|((ns, g), group)| Some((ns.to_string(), g.to_string(), group.filling?)))
            .collect()
    }

    /// The answer of the fill of `namespace/group` started with `token`: `listed`, the
    /// group's objects. Merged with what the watch gave meanwhile (the module's rules), and
    /// the group is readable ([`Fill::Merged`]); not when the group was unwanted, wanted
    /// again or listed again since ([`Fill::Stale`]: a fill of another token is owed, or
    /// none), nor while the store's watch is failing or listing ([`Fill::Later`]).
    pub fn fill_done(&self, namespace: &str, group: &str, token: u64, listed: Vec<K>) -> Fill {
        let mut inner = self.write();
        let group_key = key(namespace, group);
        let Some(scope) = inner.scope.as_ref() else {
            return Fill::Stale;
        };
        if scope.wanted.get(&group_key).and_then(|g| g.filling) != Some(token) {
            return Fill::Stale;
        }
        if inner.health != Health::Synced || inner.listing.is_some() {
            return Fill::Later;
        }
        if let Some(wanted) = inner
            .scope
            .as_mut()
            .and_then(|s| s.wanted.get_mut(&group_key))
        {
            wanted.filling = None;
        }
        for object in listed {
            if object.namespace() != namespace || (self.group_of)(&object) != Some(group) {
                continue;
            }
            let object_key = key_of(&object);
            let version = object.resource_version();
            let scope = inner.scope.as_ref().expect("scoped above");
            if let Some(event) = scope.seen.get(&object_key)
                && not_older(event.as_deref(), version)
            {
                continue;
            }
            if let Some(stored) = inner.objects.get(&object_key)
                && not_older(stored.resource_version(), version)
            {
                continue;
            }
            inner.remove(self.group_of, &object_key);
            let object = Arc::new(object);
            inner.insert(self.group_of, object.clone());
            inner
                .overlay
                .settle(&group_key, object.name(), Some(&*object));
        }
        if let Some(scope) = inner.scope.as_mut() {
            scope.fill_ended(namespace);
        }
        Fill::Merged
    }

    /// Whether the group `namespace/group` can be read: always in an unscoped store; in a
    /// scoped one, once it is wanted and filled.
    pub fn filled(&self, namespace: &str, group: &str) -> bool {
        let inner = self.read();
        match inner.scope.as_ref() {
            None => true,
            Some(scope) => scope
                .wanted
                .get(&key(namespace, group))
                .is_some_and(|g| g.filling.is_none()),
        }
    }

    /// [`Store::group`], if the group is [`Store::filled`] (read under one lock: the group
    /// cannot be dropped or filled again between the check and the read).
    pub fn filled_group(&self, namespace: &str, group: &str) -> Option<Vec<Arc<K>>> {
        let inner = self.read();
        if let Some(scope) = inner.scope.as_ref() {
            let filled = scope
                .wanted
                .get(&key(namespace, group))
                .is_some_and(|g| g.filling.is_none());
            if !filled {
                return None;
            }
        }
        Some(inner.group(namespace, group))
    }

    /// [`Store::get`] of a store grouped by name, if its group is [`Store::filled`]:
    /// `None` when not filled, `Some(None)` when filled and absent.
    pub fn filled_get(&self, namespace: &str, name: &str) -> Option<Option<Arc<K>>> {
        self.filled_group(namespace, name)
            .map(|objects| objects.into_iter().find(|o| o.name() == name))
    }

    /// What wakes this store's filler (a scoped store only).
    fn fill_wake(&self) -> Option<Arc<Notify>> {
        self.read().scope.as_ref().map(|s| s.wake.clone())
    }
}

/// What follows the wanted groups: a member's scoped store.
trait Follower: Send + Sync {
    fn want(&self, namespace: &str, group: &str);
    fn unwant(&self, namespace: &str, group: &str);
}

impl<K: Cached> Follower for Store<K> {
    fn want(&self, namespace: &str, group: &str) {
        Store::want(self, namespace, group);
    }

    fn unwant(&self, namespace: &str, group: &str) {
        Store::unwant(self, namespace, group);
    }
}

/// The groups the hub's MultiClusterServices name, and the member stores that keep them. Fed
/// by the hub's MCS watch ([`Scope::heard_mcs`]). Cloning gives another handle on the same
/// scope.
#[derive(Clone)]
pub struct Scope(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    /// Whether the hub's MCSs have listed once (the wanted groups are known).
    ready: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// `None` until the hub's MCSs have listed.
    wanted: Option<HashSet<Key>>,
    /// Groups wanted besides the MCSs' ([`Scope::also_want`]: the exported names of the
    /// Multi-Cluster Services API), whether or not the MCSs have listed.
    also: HashSet<Key>,
    followers: HashMap<u64, Box<dyn Follower>>,
    next_id: u64,
}

impl Default for Scope {
    fn default() -> Self {
        Scope(Arc::new(Shared {
            state: Mutex::default(),
            ready: watch::Sender::new(false),
        }))
    }
}

/// A store following a [`Scope`]; it stops following when this is dropped.
pub struct Following {
    scope: Scope,
    id: u64,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.scope.state().followers.remove(&self.id);
    }
}

impl Scope {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the hub's MCSs have listed once.
    pub async fn ready(&self) {
        let mut ready = self.0.ready.subscribe();
        ready.wait_for(|r| *r).await.ok();
    }

    /// Whether `namespace/name` is named by an MCS (`false` before the hub's MCSs listed).
    pub fn wants(&self, namespace: &str, name: &str) -> bool {
        self.state()
            .wanted
            .as_ref()
            .is_some_and(|w| w.contains(&key(namespace, name)))
    }

    /// `store` keeps the wanted groups from now on (those wanted now at once).
    pub fn follow<K: Cached>(&self, store: &Store<K>) -> Following {
        let mut state = self.state();
        if let Some(wanted) = &state.wanted {
            for (namespace, group) in wanted {
                store.want(namespace, group);
            }
        }
        for (namespace, group) in &state.also {
            store.want(namespace, group);
        }
        let id = state.next_id;
        state.next_id += 1;
        state.followers.insert(id, Box::new(store.clone()));
        Following {
            scope: self.clone(),
            id,
        }
    }

    /// What hears the news of the hub's MCS watch, which fills `mcs`.
    pub fn hearing(&self, mcs: Store<DynamicObject>) -> McsNews {
        McsNews {
            scope: self.clone(),
            mcs,
        }
    }

    /// `namespace/name` is (`wanted`) or is no longer named by an MCS.
    pub fn set(&self, namespace: &str, name: &str, wanted: bool) {
        let mut state = self.state();
        let state = &mut *state;
        let Some(set) = state.wanted.as_mut() else {
            return;
        };
        let group = key(namespace, name);
        let changed = if wanted {
            set.insert(group.clone())
        } else {
            set.remove(&group)
        };
        if changed && !state.also.contains(&group) {
            for follower in state.followers.values() {
                if wanted {
                    follower.want(namespace, name);
                } else {
                    follower.unwant(namespace, name);
                }
            }
        }
    }

    /// The wanted groups are `now` (a list of the hub's MCSs completed).
    pub fn reset(&self, now: HashSet<Key>) {
        let mut state = self.state();
        let state = &mut *state;
        let before = state.wanted.take().unwrap_or_default();
        for follower in state.followers.values() {
            for (namespace, group) in before.difference(&now) {
                if !state.also.contains(&(namespace.clone(), group.clone())) {
                    follower.unwant(namespace, group);
                }
            }
            for (namespace, group) in now.difference(&before) {
                follower.want(namespace, group);
            }
        }
        state.wanted = Some(now);
        self.0.ready.send_replace(true);
    }

    /// `namespace/name` is (`wanted`) or is no longer wanted besides the MCSs' groups (the
    /// clusterset's exported names and their derived Services): the members' stores keep it
    /// whole while either wants it.
    pub fn also_want(&self, namespace: &str, name: &str, wanted: bool) {
        let mut state = self.state();
        let state = &mut *state;
        let group = key(namespace, name);
        let changed = if wanted {
            state.also.insert(group.clone())
        } else {
            state.also.remove(&group)
        };
        let by_mcs = state.wanted.as_ref().is_some_and(|w| w.contains(&group));
        if changed && !by_mcs {
            for follower in state.followers.values() {
                if wanted {
                    follower.want(namespace, name);
                } else {
                    follower.unwant(namespace, name);
                }
            }
        }
    }
}

/// The [`Scope`] hearing the hub's MCS watch ([`Scope::hearing`]).
pub struct McsNews {
    scope: Scope,
    mcs: Store<DynamicObject>,
}

impl McsNews {
    /// One piece of news of the hub's MCS watch: an MCS created or deleted, or a list
    /// completed (the wanted groups are then what the MCS store holds). Returns the news, for
    /// the watch's other listeners.
    pub fn heard<'a>(&self, news: News<'a, DynamicObject>) -> News<'a, DynamicObject> {
        match &news {
            News::Changed {
                object, deleted, ..
            } => self.scope.set(object.namespace(), object.name(), !deleted),
            News::Synced { .. } => {
                let listed = self.mcs.all().iter().map(|m| key_of(&**m)).collect();
                self.scope.reset(listed);
            }
            News::Listed { .. } | News::Failed { .. } => {}
        }
        news
    }
}

/// Fills `store`'s groups owed a fill for ever (abort the task to stop it): `fetch` lists a
/// group's objects in `cluster`, the answer is merged ([`Store::fill_done`]) and `listener`
/// told ([`Listener::filled`]). A failed fill is tried again after a backoff.
pub async fn fill<C, L, F, Fut>(cluster: String, store: Store<C>, fetch: F, listener: L)
where
    C: Cached,
    L: Listener,
    F: Fn(String, String) -> Fut,
    Fut: Future<Output = Result<Vec<C>, kube::Error>>,
{
    let Some(wake) = store.fill_wake() else {
        return;
    };
    let mut running = FuturesUnordered::new();
    let mut in_flight: HashSet<(String, String)> = HashSet::new();
    // Failures in a row, and when to try again.
    let mut failed: HashMap<(String, String), (u32, Instant)> = HashMap::new();
    loop {
        let now = Instant::now();
        let owed = store.unfilled();
        failed.retain(|group, _| {
            owed.iter()
                .any(|(ns, g, _)| (ns, g) == (&group.0, &group.1))
        });
        for (namespace, group, token) in owed {
            if running.len() >= FILLS_AT_ONCE {
                break;
            }
            let id = (namespace, group);
            if in_flight.contains(&id) || failed.get(&id).is_some_and(|(_, at)| *at > now) {
                continue;
            }
            in_flight.insert(id.clone());
            let answer = fetch(id.0.clone(), id.1.clone());
            running.push(async move { (id, token, answer.await) });
        }
        let retry = failed
            .values()
            .map(|(_, at)| *at)
            .filter(|at| *at > now)
            .min();
        tokio::select! {
            () = wake.notified() => {}
            Some(((namespace, group), token, answer)) = running.next(), if !running.is_empty() => {
                let id = (namespace, group);
                in_flight.remove(&id);
                let error = match answer {
                    Ok(objects) => match store.fill_done(&id.0, &id.1, token, objects) {
                        Fill::Merged => {
                            failed.remove(&id);
                            listener.filled(&cluster, &id.0, &id.1);
                            None
                        }
                        Fill::Stale => None,
                        Fill::Later => Some("the cluster's watch is failing or listing".to_string()),
                    },
                    Err(err) => Some(crate::clusters::api_error::chain(&err)),
                };
                if let Some(error) = error {
                    let entry = failed.entry(id.clone()).or_insert((0, now));
                    entry.0 += 1;
                    let wait = FILL_RETRY_FIRST
                        .saturating_mul(1 << entry.0.saturating_sub(1).min(8))
                        .min(FILL_RETRY_MAX);
                    entry.1 = Instant::now() + wait;
                    tracing::warn!(%cluster, namespace = %id.0, group = %id.1, %error, retry_in = ?wait,
                        "listing the objects of a name a MultiClusterService names failed; they are not read until listed");
                }
            }
            () = tokio::time::sleep_until(retry.unwrap_or(now)), if retry.is_some() => {}
        }
    }
}

impl Unreadable {
    /// The member's group `namespace/name` is not filled yet.
    pub fn filling(namespace: &str, name: &str) -> Unreadable {
        Unreadable::Filling {
            group: format!("{namespace}/{name}"),
        }
    }
}

#[cfg(test)]
#[path = "scope/tests.rs"]
mod tests;
