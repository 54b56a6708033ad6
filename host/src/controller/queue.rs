//! The work queue of the controller, as client-go's workqueue: MultiClusterService keys
//! (`namespace/name`) waiting for a reconcile. A key is queued at most once however often it
//! is added, and never handed to two workers at once: added again while a worker has it, it
//! is queued again when that worker is done, so no change is missed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::Notify;

/// Why a key was queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A watch saw a change at this instant (propagation latency is measured from here).
    Change(Instant),
    /// The periodic resync.
    Resync,
}

impl Cause {
    /// The earlier change wins; a change beats a resync.
    fn merge(self, other: Cause) -> Cause {
        match (self, other) {
            (Cause::Change(a), Cause::Change(b)) => Cause::Change(a.min(b)),
            (Cause::Change(a), Cause::Resync) | (Cause::Resync, Cause::Change(a)) => {
                Cause::Change(a)
            }
            (Cause::Resync, Cause::Resync) => Cause::Resync,
        }
    }
}

#[derive(Default)]
struct State {
    /// Queued keys in order, each once.
    order: VecDeque<String>,
    /// Why each queued (or re-queued while active) key is waiting.
    waiting: HashMap<String, Cause>,
    /// Keys a worker holds now.
    active: HashSet<String>,
}

/// Keys to reconcile.
#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    ready: Notify,
}

impl Queue {
    /// Queues `key` (or merges `cause` into its queued entry).
    pub fn add(&self, key: String, cause: Cause) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let state = &mut *state;
        match state.waiting.get_mut(&key) {
            Some(queued) => *queued = queued.merge(cause),
            None => {
                state.waiting.insert(key.clone(), cause);
                if !state.active.contains(&key) {
                    state.order.push_back(key);
                }
            }
        }
        self.ready.notify_one();
    }

    /// The next key and why it was queued; the caller owns it until [`Queue::done`].
    pub async fn next(&self) -> (String, Cause) {
        loop {
            if let Some(item) = self.try_next() {
                return item;
            }
            self.ready.notified().await;
        }
    }

    fn try_next(&self) -> Option<(String, Cause)> {
        let mut state = self.state.lock().ok()?;
        let key = state.order.pop_front()?;
        let cause = state.waiting.remove(&key).unwrap_or(Cause::Resync);
        state.active.insert(key.clone());
        if !state.order.is_empty() {
            // Wake another worker for the rest.
            self.ready.notify_one();
        }
        Some((key, cause))
    }

    /// Releases `key`; queues it again if it was added while held.
    pub fn done(&self, key: &str) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.active.remove(key);
        if state.waiting.contains_key(key) {
            state.order.push_back(key.to_string());
            self.ready.notify_one();
        }
    }

    /// Keys queued and not yet taken.
    pub fn len(&self) -> usize {
        self.state.lock().map(|s| s.order.len()).unwrap_or(0)
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_key_added_twice_is_queued_once_with_the_earliest_change() {
        let queue = Queue::default();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        queue.add("shop/web".into(), Cause::Resync);
        queue.add("shop/web".into(), Cause::Change(t1));
        queue.add("shop/web".into(), Cause::Change(t0));
        queue.add("shop/api".into(), Cause::Resync);
        assert_eq!(queue.len(), 2);
        assert_eq!(
            queue.try_next(),
            Some(("shop/web".to_string(), Cause::Change(t0)))
        );
        assert_eq!(
            queue.try_next(),
            Some(("shop/api".to_string(), Cause::Resync))
        );
        assert_eq!(queue.try_next(), None);
    }

    #[test]
    fn a_key_added_while_held_waits_for_done_and_is_not_handed_out_twice() {
        let queue = Queue::default();
        queue.add("shop/web".into(), Cause::Resync);
        let (key, _) = queue.try_next().unwrap();
        queue.add("shop/web".into(), Cause::Resync);
        assert_eq!(queue.try_next(), None, "held by a worker");
        queue.done(&key);
        assert_eq!(
            queue.try_next(),
            Some(("shop/web".to_string(), Cause::Resync))
        );
        queue.done("shop/web");
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn next_waits_for_an_add() {
        let queue = std::sync::Arc::new(Queue::default());
        let waiter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next().await.0 }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        queue.add("shop/web".into(), Cause::Resync);
        let key = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("next() woke up")
            .unwrap();
        assert_eq!(key, "shop/web");
    }
}
