//! One watched resource of one cluster, in memory: the objects its watch has delivered, indexed
//! the way a pass reads them, with the controller's own writes laid over them until the watch
//! delivers them, and whether the store can be read at all ([`Health`]).
//!
//! Why not kube-runtime's `reflector::Store`: it is a flat map from object reference to object,
//! and a pass asks for "the slices of Service `ns/name`" in every member. With ~2,000 slices
//! per member that is a scan of 40,000 objects per pass at 20 members, where an index answers
//! from the 2 to 40 objects concerned (client-go's informers carry indexers for this; kube-rs's
//! store has none). The watch itself stays kube-runtime's `watcher` ([`super::watch`]); this
//! file is only the map.
//!
//! **Read your writes.** A store lags the cluster: the watch event of a write arrives some
//! milliseconds after the write's answer, or before it. A pass that ran in between would see
//! its own last write missing and make it again. So every write the controller makes is
//! recorded here with the object the server answered ([`Store::wrote`], [`Store::deleted`]),
//! and reads see that object until the watch delivers it (an event of the same or a later
//! `resourceVersion`, compared as integers, which Kubernetes guarantees from v1.35; a version
//! that is not an integer counts as later). An entry older than [`PENDING_TTL`] is removed, so
//! nothing laid over the store can hide the cluster for long, and the overlay never grows
//! without bound.
//!
//! **Our events, and only ours, are not news** ([`Applied::own`]). A watch event answers an own
//! write only when it carries the resourceVersion that write returned (for a deletion: the
//! DELETED event of the uid deleted). While a write is in flight ([`Store::writing`]) its
//! answer is not known yet, so the events of its object are held back; the answer
//! ([`super::writes::Writing`]) tells whether any of them was someone else's, and the writer
//! then triggers a pass. A deletion of the written object
//! seen before or after the answer wins over the write: it is never laid over the store.
//!
//! This file is the map and the watch's side of it; the own writes are [`super::overlay`], the
//! writes' side [`super::writes`], a scoped store's side [`super::scoped`].

use std::sync::{Arc, RwLock};
use std::time::Instant;

use super::groups::Groups;
use super::health::{Failure, Health, Patience};
use super::kept::{Cached, Key, key, key_of};
use super::overlay::Overlay;
pub use super::overlay::PENDING_TTL;
use crate::fast_map::FastMap;

/// Which objects a pass reads together: the `kubernetes.io/service-name` of a slice, the name
/// of a Service or MultiClusterService.
pub type GroupOf<K> = fn(&K) -> Option<&str>;

/// What applying one watch event found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The event answers a write of the controller (or is held back until that write's answer
    /// says whether it does): not news.
    pub own: bool,
    /// The group the object is in, or was in (a deleted object).
    pub group: Option<String>,
    /// The group a relabelled object moved out of (`None` when it stayed in `group`): its
    /// readers lost the object, so it is news to them too.
    pub left: Option<String>,
}

#[derive(Debug)]
pub(super) struct Inner<K> {
    /// `(namespace, name)` → object.
    pub(super) objects: FastMap<Key, Arc<K>>,
    /// `(namespace, group)` → the objects of the group.
    pub(super) groups: FastMap<Key, Vec<Arc<K>>>,
    /// Objects of a list in progress (they replace everything at its end).
    pub(super) listing: Option<Vec<Arc<K>>>,
    /// The own writes laid over the objects, and those in flight.
    pub(super) overlay: Overlay<K>,
    /// What the watch last said: listing, synced, or failing since (the grace is applied
    /// when read: [`Store::health`]).
    pub(super) health: Health,
    /// Whether a list ever completed (only then does a failing store stay readable).
    listed_once: bool,
    /// How long a failing watch is waited for.
    patience: Patience,
    /// Which groups the store keeps, when it does not keep them all ([`super::scope`]).
    pub(super) scope: Option<Groups<K>>,
}

/// A cluster's objects of one resource. Cloning gives another handle on the same store.
#[derive(Debug)]
pub struct Store<K> {
    inner: Arc<RwLock<Inner<K>>>,
    pub(super) group_of: GroupOf<K>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            inner: self.inner.clone(),
            group_of: self.group_of,
        }
    }
}

impl<K: Cached> Store<K> {
    /// An empty store, [`Health::Listing`], grouping objects with `group_of`.
    pub fn new(group_of: GroupOf<K>) -> Self {
        Store {
            inner: Arc::new(RwLock::new(Inner {
                objects: FastMap::default(),
                groups: FastMap::default(),
                listing: None,
                overlay: Overlay::new(),
                health: Health::Listing,
                listed_once: false,
                patience: Patience::default(),
                scope: None,
            })),
            group_of,
        }
    }

    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The store's health now: a store that has listed and whose watch has been failing for
    /// no longer than its grace is [`Health::Synced`] (it may miss the events of that time;
    /// docs/architecture.md, "Consistency of the caches", says why that is safe).
    pub fn health(&self) -> Health {
        let inner = self.read();
        match &inner.health {
            Health::Broken(failure) if inner.listed_once && inner.patience.within(failure) => {
                Health::Synced
            }
            health => health.clone(),
        }
    }

    /// Why the watch is failing, since when, also within the grace; `None` when it works.
    pub fn failing(&self) -> Option<Failure> {
        match &self.read().health {
            Health::Broken(failure) => Some(failure.clone()),
            _ => None,
        }
    }

    /// How long a failing watch is waited for.
    pub fn patience(&self) -> Patience {
        self.read().patience
    }

    /// Sets how long a failing watch is waited for.
    pub fn set_patience(&self, patience: Patience) {
        self.write().patience = patience;
    }

    /// Objects in the store (own writes not counted).
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Own writes laid over the store, not delivered by its watch yet.
    pub fn pending(&self) -> usize {
        self.read().overlay.pending.values().map(FastMap::len).sum()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects of group `group` in `namespace`, own writes included, by name.
    pub fn group(&self, namespace: &str, group: &str) -> Vec<Arc<K>> {
        self.read().group(namespace, group)
    }

    /// The object `namespace/name` of a store grouped by name (Services, MCSs).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.group(namespace, name)
            .into_iter()
            .find(|o| o.name() == name)
    }

    /// Every object, own writes included.
    pub fn all(&self) -> Vec<Arc<K>> {
        let groups: Vec<Key> = {
            let inner = self.read();
            let mut keys: Vec<Key> = inner.groups.keys().cloned().collect();
            keys.extend(inner.overlay.pending.keys().cloned());
            keys.sort();
            keys.dedup();
            keys
        };
        groups
            .iter()
            .flat_map(|(ns, group)| self.group(ns, group))
            .collect()
    }

    // ---- the watch's side --------------------------------------------------------------------

    /// A list starts: its objects replace the store's when it ends.
    pub fn list_started(&self) {
        let mut inner = self.write();
        inner.listing = Some(Vec::new());
        if let Some(scope) = inner.scope.as_mut() {
            scope.list_started();
        }
    }

    /// One object of the list in progress.
    pub fn listed(&self, object: K) {
        let mut inner = self.write();
        let group = (self.group_of)(&object);
        if inner
            .scope
            .as_ref()
            .is_some_and(|s| !s.keeps(&object, group))
        {
            return;
        }
        if let Some(listing) = inner.listing.as_mut() {
            listing.push(Arc::new(object));
        }
    }

    /// The list is complete: it replaces the store, and the store is [`Health::Synced`]. Own
    /// writes the list already shows are dropped. Returns whether the store was not synced
    /// before (it is readable again).
    ///
    /// Without a list in progress (no [`Store::list_started`], or a failure since) nothing
    /// was listed: the call is refused and logged, the store left as it is (an empty store
    /// marked synced would have every copy of the member pruned), and `false` returned.
    pub fn list_done(&self) -> bool {
        let mut inner = self.write();
        let Some(listed) = inner.listing.take() else {
            tracing::error!(
                health = ?inner.health,
                "a list ended that never started: refused, the store is left as it is"
            );
            return false;
        };
        inner.objects = FastMap::with_capacity_and_hasher(listed.len(), Default::default());
        inner.groups = FastMap::default();
        for object in listed {
            // A group dropped while the list ran is not kept ([`super::scope`]).
            let group = (self.group_of)(&object);
            if inner.scope.as_ref().is_none_or(|s| s.keeps(&object, group)) {
                inner.insert(self.group_of, object);
            }
        }
        let keys: Vec<(Key, Box<str>)> = inner
            .overlay
            .pending
            .iter()
            .flat_map(|(g, names)| names.keys().map(move |n| (g.clone(), n.clone())))
            .collect();
        for (group, name) in keys {
            let current = inner.objects.get(&key(&group.0, &name)).cloned();
            inner.overlay.settle(&group, &name, current.as_deref());
        }
        inner.overlay.sweep(Instant::now());
        if let Some(scope) = inner.scope.as_mut() {
            scope.list_done();
        }
        inner.listed_once = true;
        let was = std::mem::replace(&mut inner.health, Health::Synced);
        was != Health::Synced
    }

    /// A watched change of `object`; the object as stored.
    pub fn applied(&self, object: K) -> (Applied, Arc<K>) {
        let mut inner = self.write();
        let object = Arc::new(object);
        let key = key_of(&*object);
        let group = (self.group_of)(&object).map(str::to_string);
        let before = inner.remove(self.group_of, &key);
        let own = inner
            .overlay
            .own_event(&key, group.as_deref(), &object, false);
        if before.is_some() && before != group {
            // Relabelled: the overlay of the group it left no longer applies.
            inner
                .overlay
                .own_event(&key, before.as_deref(), &object, true);
        }
        let keep = inner.scope.as_mut().is_none_or(|scope| {
            scope.saw(&*object);
            scope.keeps(&object, group.as_deref())
        });
        if keep {
            inner.insert(self.group_of, object.clone());
        }
        inner.overlay.sweep(Instant::now());
        let moved = before.filter(|b| group.as_deref() != Some(b.as_str()));
        let (group, left) = match group {
            Some(group) => (Some(group), moved),
            None => (moved, None),
        };
        let applied = Applied { own, group, left };
        (applied, object)
    }

    /// A watched deletion of `object`.
    pub fn removed(&self, object: &K) -> Applied {
        let mut inner = self.write();
        let key = key_of(object);
        let before = inner.remove(self.group_of, &key);
        let group = before.or_else(|| (self.group_of)(object).map(str::to_string));
        let own = inner
            .overlay
            .own_event(&key, group.as_deref(), object, true);
        let own = own
            || inner
                .overlay
                .own_deletion(&key, group.as_deref(), object.uid());
        let own = own || inner.overlay.hold(&key, object, true);
        if let Some(scope) = inner.scope.as_mut() {
            scope.saw(object);
        }
        inner.overlay.sweep(Instant::now());
        Applied {
            own,
            group,
            left: None,
        }
    }

    /// The watch failed: the store keeps what it holds, and is failing (since the first
    /// failure in a row) until a list completes or the watch resumes ([`Store::resumed`]);
    /// [`Store::health`] says whether it is still readable. A list in progress is abandoned.
    pub fn failed(&self, message: String, not_served: bool) {
        let mut inner = self.write();
        inner.listing = None;
        let since = match &inner.health {
            Health::Broken(previous) => previous.since,
            _ => Instant::now(),
        };
        inner.health = Health::Broken(Failure {
            message,
            not_served,
            since,
        });
    }

    /// The failing watch works again without a new list (it delivered an event, or its retry
    /// was not refused: [`super::watch`]): the store is synced again, and its watch delivers
    /// what it missed. Returns whether the store had been unreadable ([`Health::Broken`] past
    /// the grace), i.e. readers may have missed it. A store that never listed, or is listing,
    /// stays as it is: only its list makes it readable.
    pub fn resumed(&self) -> bool {
        let mut inner = self.write();
        if !inner.listed_once || inner.listing.is_some() {
            return false;
        }
        let Health::Broken(failure) = &inner.health else {
            return false;
        };
        let was_unreadable = !inner.patience.within(failure);
        inner.health = Health::Synced;
        was_unreadable
    }
}

impl<K: Cached> Inner<K> {
    /// The objects of group `group` in `namespace`, own writes included, by name.
    pub(super) fn group(&self, namespace: &str, group: &str) -> Vec<Arc<K>> {
        let key = key(namespace, group);
        let stored = self.groups.get(&key).map(Vec::as_slice).unwrap_or_default();
        self.overlay.lay_over(&key, stored)
    }

    /// Stores `object` in its group (an object without one is not kept).
    pub(super) fn insert(&mut self, group_of: GroupOf<K>, object: Arc<K>) {
        let Some(group) = group_of(&object) else {
            return;
        };
        let group = key(object.namespace(), group);
        self.groups.entry(group).or_default().push(object.clone());
        self.objects.insert(key_of(&*object), object);
    }

    /// Removes the object of `key`; the group it was in.
    pub(super) fn remove(&mut self, group_of: GroupOf<K>, key: &Key) -> Option<String> {
        let old = self.objects.remove(key)?;
        let group = group_of(&old)?;
        let group_key = self::key(old.namespace(), group);
        if let Some(members) = self.groups.get_mut(&group_key) {
            members.retain(|o| !Arc::ptr_eq(o, &old));
            if members.is_empty() {
                self.groups.remove(&group_key);
            }
        }
        Some(group.to_string())
    }
}

#[cfg(test)]
mod tests;
