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
//! the MCS's pass ([`super::Listener::filled`]). A fill that fails is retried after a backoff; one
//! that answers while its store is listing again is thrown away, and the list decides again
//! (a group wanted since before the list started is filled by it). An MCS that goes away takes
//! its group's objects with it, our copies excepted.
//!
//! At start the member watches wait for the hub's MultiClusterServices to have listed
//! ([`Scope::ready`]): their first list already knows every wanted group and no fill is needed.
//!
//! This file is the scope shared by the members' stores; a store's own state is
//! [`super::groups`], its side of the rules [`super::scoped`], its filler [`super::fill`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use kube::api::DynamicObject;
use tokio::sync::watch;

use super::kept::{Cached, Key, key, key_of};
use super::store::Store;
use super::watch::News;

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

#[cfg(test)]
#[path = "scope/tests.rs"]
mod tests;
