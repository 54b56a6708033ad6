//! The work queue of the controller, as client-go's workqueue: MultiClusterService keys
//! (`namespace/name`) waiting for a reconcile. A key is queued at most once however often it
//! is added, and never handed to two workers at once: added again while a worker has it, it
//! is queued again when that worker is done, so no change is missed. A key whose reconcile
//! failed comes back after a per-key exponential backoff ([`Queue::retry_later`]), as
//! client-go's rate-limited requeue, instead of waiting for the next resync.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Failed reconciles in a row, per key (reset by [`Queue::forget`]).
    failures: HashMap<String, u32>,
}

/// The first retry of a failed key comes after this long; each further failure doubles it.
pub const RETRY_BASE: Duration = Duration::from_millis(250);
/// The longest wait before a failed key is retried.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// The wait before retrying a key that has failed `failures` times in a row.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_BASE.saturating_mul(1 << doublings).min(RETRY_MAX)
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

    /// Queues `key` again after its backoff: one more failure in a row. Returns the wait.
    pub fn retry_later(self: &Arc<Self>, key: &str) -> Duration {
        let failures = match self.state.lock() {
            Ok(mut state) => {
                let n = state.failures.entry(key.to_string()).or_default();
                *n = n.saturating_add(1);
                *n
            }
            Err(_) => 1,
        };
        let wait = backoff(failures);
        let (queue, key) = (self.clone(), key.to_string());
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            queue.add(key, Cause::Resync);
        });
        wait
    }

    /// Forgets the failures of `key` (its reconcile succeeded).
    pub fn forget(&self, key: &str) {
        if let Ok(mut state) = self.state.lock() {
            state.failures.remove(key);
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

    #[test]
    fn the_retry_backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff(1), RETRY_BASE);
        assert_eq!(backoff(2), RETRY_BASE * 2);
        assert_eq!(backoff(4), RETRY_BASE * 8);
        assert_eq!(backoff(100), RETRY_MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_key_comes_back_after_its_backoff_until_forgotten() {
        let queue = std::sync::Arc::new(Queue::default());
        assert_eq!(queue.retry_later("shop/web"), RETRY_BASE);
        assert!(queue.is_empty(), "not before the backoff");
        tokio::time::sleep(RETRY_BASE + Duration::from_millis(1)).await;
        assert_eq!(queue.len(), 1);
        let (key, _) = queue.try_next().unwrap();
        queue.done(&key);
        assert_eq!(
            queue.retry_later(&key),
            RETRY_BASE * 2,
            "second failure in a row"
        );
        queue.forget(&key);
        assert_eq!(
            queue.retry_later(&key),
            RETRY_BASE,
            "forgotten after a success"
        );
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
