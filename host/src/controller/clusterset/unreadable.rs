//! A member turning unreadable: its names get a pass.
//!
//! A member whose watch fails (any of its stores: ServiceExports, ServiceImports, our derived
//! Services or imported slices, its Services or EndpointSlices) stays readable for the grace
//! (`--outage-grace`), then is unreadable to every pass until the watch works again. Its being
//! unreadable changes what a pass decides: its exports take no part in resolving (another
//! export may win, a conflict may end), and nothing is written in it. The API server may still
//! answer the membership's probe (a watch refused, say), so no membership change comes to ask
//! for those passes: here, once per failing spell, the grace after the first failure, the names
//! the member exports, imports or holds objects of ours for (as last read) are queued in the
//! backlog, unless one of its watches listed or worked again meanwhile. The queue is the
//! backlog's, as a membership change's: these passes carry no watched change.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::controller::clusterset::cache::Stores;

/// How long after the grace the member's names are queued: the stores count the grace from the
/// failure, which came before its news.
const AFTER_GRACE: Duration = Duration::from_millis(100);

/// The members' clusterset stores, and which members are in a failing spell.
#[derive(Clone, Default)]
pub(super) struct Spells {
    members: Arc<Mutex<HashMap<String, Stores>>>,
    failing: Arc<Mutex<HashSet<String>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Spells {
    /// The caches of `cluster` start.
    pub(super) fn started(&self, cluster: &str, stores: &Stores) {
        lock(&self.members).insert(cluster.to_string(), stores.clone());
        lock(&self.failing).remove(cluster);
    }

    /// The caches of `cluster` stop.
    pub(super) fn stopped(&self, cluster: &str) {
        lock(&self.members).remove(cluster);
        lock(&self.failing).remove(cluster);
    }

    /// A watch of `cluster` listed or works again: its failing spell is over.
    pub(super) fn works(&self, cluster: &str) {
        lock(&self.failing).remove(cluster);
    }

    /// A watch of `cluster` failed: at the first failure of a spell, `queue` is given the
    /// member's names (`namespace/name`) once the grace is over, if the spell still lasts.
    pub(super) fn failed(&self, cluster: &str, queue: impl FnOnce(Vec<String>) + Send + 'static) {
        let Some(stores) = lock(&self.members).get(cluster).cloned() else {
            return;
        };
        if !lock(&self.failing).insert(cluster.to_string()) {
            return;
        }
        let wait = stores.exports.patience().grace + AFTER_GRACE;
        let failing = self.failing.clone();
        let member = cluster.to_string();
        let later = async move {
            tokio::time::sleep(wait).await;
            if lock(&failing).contains(&member) {
                let names = stores.names();
                tracing::debug!(cluster = %member, names = names.len(),
                    "a watch of the member fails past the grace: its names get a pass");
                queue(names);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(later)),
            Err(_) => {
                tracing::debug!(%cluster, "no runtime: the member's names wait for the resync")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use tokio::sync::mpsc;

    use super::*;
    use crate::controller::cache::Patience;

    /// Set when dropped: tells whether a queue closure was kept for later or dropped at once.
    struct Dropped(Arc<AtomicBool>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A queue closure sending its names to `sent`, and whether it was dropped.
    fn queue(
        sent: &mpsc::UnboundedSender<Vec<String>>,
    ) -> (impl FnOnce(Vec<String>) + Send + 'static, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let guard = Dropped(dropped.clone());
        let sent = sent.clone();
        let queue = move |names| {
            let _guard = guard;
            sent.send(names).ok();
        };
        (queue, dropped)
    }

    #[tokio::test]
    async fn a_failing_spell_queues_the_members_names_once_until_a_watch_works_again() {
        let spells = Spells::default();
        let patience = Patience {
            grace: Duration::from_millis(10),
            settle: Duration::from_secs(1),
        };
        let (sent, mut queued) = mpsc::unbounded_channel();

        let (unknown, dropped) = queue(&sent);
        spells.failed("member9", unknown);
        assert!(
            dropped.load(Ordering::SeqCst),
            "no caches of member9: nothing to queue"
        );

        spells.started("member1", &Stores::new(patience));
        let (first, _) = queue(&sent);
        spells.failed("member1", first);
        let (again, dropped) = queue(&sent);
        spells.failed("member1", again);
        assert!(dropped.load(Ordering::SeqCst), "one queue per spell");
        assert_eq!(
            queued.recv().await,
            Some(Vec::new()),
            "queued after the grace"
        );

        spells.works("member1");
        let (next, dropped) = queue(&sent);
        spells.failed("member1", next);
        assert!(!dropped.load(Ordering::SeqCst), "a new spell queues again");
        assert_eq!(queued.recv().await, Some(Vec::new()));

        spells.stopped("member1");
        let (gone, dropped) = queue(&sent);
        spells.failed("member1", gone);
        assert!(
            dropped.load(Ordering::SeqCst),
            "a member that left queues nothing"
        );
    }
}
