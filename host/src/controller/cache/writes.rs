//! The writes' side of a store: an own write in flight holds back its object's events, and
//! its answer is laid over the store until the watch delivers it ([`super::store`] has the
//! rules, [`super::overlay`] the state).

use std::sync::Arc;
use std::time::Instant;

use super::kept::{Cached, Key, is_later, key, key_of};
use super::overlay::Pending;
use super::store::Store;

impl<K: Cached> Store<K> {
    /// The controller is about to write `namespace/name`: until the returned guard is told
    /// the answer ([`Writing::wrote`], [`Writing::deleted`], [`Writing::abandoned`]) or
    /// dropped (an error, a panic, the write's future dropped), the object's watch events are
    /// held back, then judged against the answer.
    pub fn writing(&self, namespace: &str, name: &str) -> Writing<K> {
        self.write()
            .overlay
            .in_flight
            .entry(key(namespace, name))
            .or_default()
            .writes += 1;
        Writing {
            store: self.clone(),
            key: Some(key(namespace, name)),
            lost: None,
        }
    }

    /// The server answered a write with `object`: reads see it until the watch delivers it.
    /// Returns whether someone else changed or deleted the object meanwhile (an event other
    /// than the write's own arrived while it was in flight, or the store already holds a
    /// later version): the caller triggers a pass.
    pub fn wrote(&self, object: K) -> bool {
        let mut inner = self.write();
        let key = key_of(&object);
        let seen = inner.overlay.done_writing(&key);
        let written = object.resource_version();
        let foreign = seen
            .iter()
            .any(|s| s.deleted || s.resource_version.as_deref() != written);
        // The written object (its uid) deleted since: the cluster wins, nothing is laid over.
        let gone = seen
            .iter()
            .any(|s| s.deleted && (s.uid.is_none() || s.uid.as_deref() == object.uid()));
        if gone {
            return true;
        }
        let stored = inner.objects.get(&key).map(|s| s.resource_version());
        match stored {
            Some(stored) if stored == written => foreign,
            Some(stored) if is_later(stored, written) => true,
            _ => {
                let Some(group) = (self.group_of)(&object).map(Box::from) else {
                    return foreign;
                };
                let at = Instant::now();
                let object = Arc::new(object);
                inner
                    .overlay
                    .pending
                    .entry((key.0, group))
                    .or_default()
                    .insert(key.1, Pending::Written { object, at });
                inner.overlay.sweep(at);
                foreign
            }
        }
    }

    /// The server deleted `namespace/name` of `uid` (of group `group`): reads no longer see
    /// it, until the watch says otherwise. Returns whether someone else changed or re-created
    /// the object while the deletion was in flight: the caller triggers a pass.
    pub fn deleted(&self, namespace: &str, name: &str, group: &str, uid: Option<String>) -> bool {
        let mut inner = self.write();
        let key = key(namespace, name);
        let seen = inner.overlay.done_writing(&key);
        let foreign = seen.iter().any(|s| !s.deleted || s.uid != uid);
        let still_there = inner
            .objects
            .get(&key)
            .is_some_and(|o| o.uid() == uid.as_deref());
        if still_there {
            let at = Instant::now();
            inner
                .overlay
                .pending
                .entry(super::kept::key(namespace, group))
                .or_default()
                .insert(name.into(), Pending::Deleted { uid, at });
            inner.overlay.sweep(at);
        }
        foreign
    }
}

/// An own write in flight ([`Store::writing`]); dropping it without an answer ends it as
/// abandoned, so a write that errs, panics or is cancelled never leaves its object's events
/// held back.
pub struct Writing<K: Cached> {
    store: Store<K>,
    /// `None` once answered.
    key: Option<Key>,
    /// Called when the guard is dropped unanswered and events were held back meanwhile.
    lost: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl<K: Cached> Writing<K> {
    /// What to do when the write ends without an answer (dropped) and events of its object
    /// arrived meanwhile: they were someone else's, and only the caller can trigger a pass.
    pub fn or_else(mut self, lost: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.lost = Some(Box::new(lost));
        self
    }

    /// The server answered with `object` ([`Store::wrote`]): whether to trigger a pass.
    pub fn wrote(mut self, object: K) -> bool {
        self.key = None;
        self.store.wrote(object)
    }

    /// The server deleted the object of `uid` in group `group` ([`Store::deleted`]): whether
    /// to trigger a pass.
    pub fn deleted(mut self, group: &str, uid: Option<String>) -> bool {
        let Some((namespace, name)) = self.key.take() else {
            return false;
        };
        self.store.deleted(&namespace, &name, group, uid)
    }

    /// The write failed: nothing changed. Whether events arrived meanwhile (trigger a pass).
    pub fn abandoned(mut self) -> bool {
        let Some(key) = self.key.take() else {
            return false;
        };
        !self.store.write().overlay.done_writing(&key).is_empty()
    }
}

impl<K: Cached> Drop for Writing<K> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let seen = self.store.write().overlay.done_writing(&key);
        if !seen.is_empty() {
            tracing::debug!(namespace = %key.0, name = %key.1, events = seen.len(),
                "a write ended without an answer; the events held back meanwhile are news");
            if let Some(lost) = self.lost.take() {
                lost();
            }
        }
    }
}
