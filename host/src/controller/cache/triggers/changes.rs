//! The live changes waiting for their pass, per key (`namespace/name`): when each was first
//! seen (the start of the propagation latency), and which keys the backlog has not been told
//! about yet.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// When each key's oldest live change not yet reconciled was seen: the start of the
/// propagation latency, taken by the pass that carries the change. Its size is the
/// `queue_depth` gauge (kube-runtime does not expose its scheduler's).
///
/// A key that gets a change is also *fresh* until the backlog's feeder takes it
/// ([`Changes::fresh`], woken by [`Changes::arrived`]): a key waiting in the backlog leaves it,
/// since its live trigger is already on its way to the Controller.
#[derive(Debug, Default)]
pub struct Changes {
    inner: Mutex<Inner>,
    /// Wakes the backlog's feeder when a key gets a change.
    arrived: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    waiting: HashMap<String, Instant>,
    /// Keys whose change arrived since the feeder last looked, and not taken since.
    fresh: HashSet<String>,
}

impl Changes {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A change of `key` seen at `at` (the earliest unreconciled change wins).
    pub fn seen(&self, key: &str, at: Instant) {
        let first = {
            let mut inner = self.inner();
            match inner.waiting.get_mut(key) {
                Some(first) => {
                    *first = (*first).min(at);
                    false
                }
                None => {
                    inner.waiting.insert(key.to_string(), at);
                    inner.fresh.insert(key.to_string());
                    true
                }
            }
        };
        if first {
            self.arrived.notify_one();
        }
    }

    /// The instant of `key`'s oldest unreconciled change, which its pass now carries.
    pub fn take(&self, key: &str) -> Option<Instant> {
        let mut inner = self.inner();
        inner.fresh.remove(key);
        inner.waiting.remove(key)
    }

    /// Whether a change of `key` waits for its pass.
    pub fn contains(&self, key: &str) -> bool {
        self.inner().waiting.contains_key(key)
    }

    /// The keys that got a change since the last call, and whose pass has not taken it yet.
    pub fn fresh(&self) -> Vec<String> {
        let mut fresh: Vec<String> = self.inner().fresh.drain().collect();
        fresh.sort_unstable();
        fresh
    }

    /// Completes when a key got a change (at once if one did since the last wait).
    pub fn arrived(&self) -> Notified<'_> {
        self.arrived.notified()
    }

    /// Keeps only the changes of the keys `exists` names: a change of an MCS deleted before
    /// its pass is never taken.
    pub fn retain(&self, exists: impl Fn(&str) -> bool) {
        let mut inner = self.inner();
        inner.waiting.retain(|key, _| exists(key));
        inner.fresh.retain(|key| exists(key));
    }

    /// Keys with a change waiting for its pass.
    pub fn len(&self) -> usize {
        self.inner().waiting.len()
    }

    /// Whether no change waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_of_mcss_that_are_gone_are_dropped() {
        let changes = Changes::default();
        let t0 = Instant::now();
        changes.seen("shop/web", t0);
        changes.seen("shop/gone", t0);
        changes.retain(|key| key == "shop/web");
        assert_eq!(changes.len(), 1);
        assert_eq!(changes.fresh(), ["shop/web"]);
        assert_eq!(changes.take("shop/web"), Some(t0));
        assert!(changes.is_empty());
    }

    #[test]
    fn a_key_is_fresh_once_per_change_until_its_pass_takes_it() {
        let changes = Changes::default();
        let t0 = Instant::now();
        changes.seen("shop/a", t0);
        changes.seen("shop/b", t0);
        changes.seen("shop/a", t0);
        assert_eq!(changes.fresh(), ["shop/a", "shop/b"]);
        assert!(changes.fresh().is_empty(), "told once");
        changes.seen("shop/a", t0);
        assert!(changes.fresh().is_empty(), "its change still waits");
        // Taken by its pass before the feeder looked: not fresh any more.
        changes.take("shop/a");
        changes.seen("shop/c", t0);
        changes.take("shop/c");
        assert!(changes.fresh().is_empty());
        assert!(changes.contains("shop/b"));
        assert!(!changes.contains("shop/a"));
    }
}
