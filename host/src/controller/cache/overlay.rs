//! The controller's own writes laid over a store until its watch delivers them (read your
//! writes), and the writes in flight whose object's events are held back until their answer
//! ([`super::store`] has the rules; [`super::writes`] the store's side of a write).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::kept::{Cached, Key, is_later};
use crate::fast_map::FastMap;

/// The longest an own write is laid over the store without its watch event (a watch that is
/// this far behind is broken, and a broken store is not read).
pub const PENDING_TTL: Duration = Duration::from_secs(60);

/// How often expired own writes are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// A watch event of an object with an own write in flight, held back until the write's answer.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) deleted: bool,
    pub(super) uid: Option<String>,
    pub(super) resource_version: Option<String>,
}

/// Own writes of one object under way, and the events of the object seen meanwhile.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    pub(super) writes: u32,
    seen: Vec<Seen>,
}

/// An own write the watch has not delivered yet.
#[derive(Debug)]
pub(super) enum Pending<K> {
    Written { object: Arc<K>, at: Instant },
    Deleted { uid: Option<String>, at: Instant },
}

impl<K> Pending<K> {
    fn at(&self) -> Instant {
        match self {
            Pending::Written { at, .. } | Pending::Deleted { at, .. } => *at,
        }
    }
}

/// The own writes of one store: laid over its objects, and under way.
#[derive(Debug)]
pub struct Overlay<K> {
    /// Own writes, by `(namespace, group)` then name.
    pub(super) pending: FastMap<Key, FastMap<Box<str>, Pending<K>>>,
    /// Own writes under way, by object, with the events held back meanwhile.
    pub(super) in_flight: FastMap<Key, InFlight>,
    /// When expired own writes are next removed from `pending`.
    pub(super) next_sweep: Instant,
}

impl<K: Cached> Overlay<K> {
    /// No own write.
    pub(super) fn new() -> Self {
        Overlay {
            pending: FastMap::default(),
            in_flight: FastMap::default(),
            next_sweep: Instant::now() + SWEEP_EVERY,
        }
    }

    /// The objects `stored` of group `key`, with the own writes of the group laid over them,
    /// by name.
    pub(super) fn lay_over(&self, key: &Key, stored: &[Arc<K>]) -> Vec<Arc<K>> {
        let mut merged: BTreeMap<&str, Arc<K>> =
            stored.iter().map(|o| (o.name(), o.clone())).collect();
        if let Some(pending) = self.pending.get(key) {
            let now = Instant::now();
            for (name, own) in pending {
                if now.duration_since(own.at()) > PENDING_TTL {
                    continue;
                }
                match own {
                    Pending::Written { object, .. } => {
                        merged.insert(name, object.clone());
                    }
                    Pending::Deleted { uid, .. } => {
                        if merged
                            .get(&**name)
                            .is_some_and(|o| o.uid() == uid.as_deref())
                        {
                            merged.remove(&**name);
                        }
                    }
                }
            }
        }
        merged.into_values().collect()
    }

    /// One own write of `key` ended; the events held back while writes of it were in flight
    /// (all of them, to be judged against this write's answer).
    pub(super) fn done_writing(&mut self, key: &Key) -> Vec<Seen> {
        let Some(flight) = self.in_flight.get_mut(key) else {
            return Vec::new();
        };
        flight.writes = flight.writes.saturating_sub(1);
        if flight.writes == 0 {
            self.in_flight
                .remove(key)
                .map(|f| f.seen)
                .unwrap_or_default()
        } else {
            flight.seen.clone()
        }
    }

    /// Holds back a watch event of `key` (`object`, or its deletion) while an own write of it
    /// is in flight; whether it was held (then it is not news yet).
    pub(super) fn hold(&mut self, key: &Key, object: &K, deleted: bool) -> bool {
        let Some(flight) = self.in_flight.get_mut(key) else {
            return false;
        };
        flight.seen.push(Seen {
            deleted,
            uid: object.uid().map(str::to_string),
            resource_version: object.resource_version().map(str::to_string),
        });
        true
    }

    /// Removes the own writes older than [`PENDING_TTL`] (at most every [`SWEEP_EVERY`]).
    pub(super) fn sweep(&mut self, now: Instant) {
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = now + SWEEP_EVERY;
        self.pending.retain(|_, names| {
            names.retain(|_, own| now.duration_since(own.at()) <= PENDING_TTL);
            !names.is_empty()
        });
    }

    /// Whether a watched change of `key` (to `object`, or its deletion) answers an own write
    /// (its answer carried this resourceVersion) or is held back while one is in flight, and
    /// settles the pending write it delivers. A deletion of the written object (same uid)
    /// drops the write from the overlay: the cluster wins. The deletion of an older object,
    /// re-created by the write, does not.
    pub(super) fn own_event(
        &mut self,
        key: &Key,
        group: Option<&str>,
        object: &K,
        deleted: bool,
    ) -> bool {
        let Some(group) = group else {
            return !deleted && self.hold(key, object, deleted);
        };
        let group_key = (key.0.clone(), Box::from(group));
        let (written, uid) = match self.pending.get(&group_key).and_then(|g| g.get(&key.1)) {
            Some(Pending::Written { object, .. }) => (
                object.resource_version().map(str::to_string),
                object.uid().map(str::to_string),
            ),
            // A deletion is held (or not) by the caller, after its own deletions are matched.
            _ => return !deleted && self.hold(key, object, deleted),
        };
        if deleted {
            if uid.is_none() || uid.as_deref() == object.uid() {
                self.settle(&group_key, &key.1, None);
            }
            return false;
        }
        let own = object.resource_version() == written.as_deref();
        self.settle(&group_key, &key.1, Some(object));
        own || self.hold(key, object, deleted)
    }

    /// Whether a watched deletion of `key` (of `uid`) is an own deletion.
    pub(super) fn own_deletion(
        &mut self,
        key: &Key,
        group: Option<&str>,
        uid: Option<&str>,
    ) -> bool {
        let Some(group) = group else { return false };
        let group_key = (key.0.clone(), Box::from(group));
        let Some(names) = self.pending.get_mut(&group_key) else {
            return false;
        };
        let own = matches!(names.get(&key.1),
            Some(Pending::Deleted { uid: deleted, .. }) if deleted.as_deref() == uid);
        if own {
            names.remove(&key.1);
            if names.is_empty() {
                self.pending.remove(&group_key);
            }
        }
        own
    }

    /// Drops the own write of `group/name` once the store shows it (`current`: what the store
    /// now holds under that name, `None` when nothing).
    pub(super) fn settle(&mut self, group: &Key, name: &str, current: Option<&K>) {
        let Some(names) = self.pending.get_mut(group) else {
            return;
        };
        let done = match names.get(name) {
            None => return,
            Some(Pending::Written { object, .. }) => current.is_none_or(|c| {
                let (seen, written) = (c.resource_version(), object.resource_version());
                seen == written || is_later(seen, written)
            }),
            Some(Pending::Deleted { uid, .. }) => current.is_none_or(|c| c.uid() != uid.as_deref()),
        };
        if done {
            names.remove(name);
            if names.is_empty() {
                self.pending.remove(group);
            }
        }
    }
}
