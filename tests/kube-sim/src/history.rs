//! The changes of one resource the server remembers, for two readers:
//!
//! - **watches** resuming from a resourceVersion replay the events of the watch cache's
//!   window (the newest changes, as many as kube-apiserver's `watchCache` ring buffer keeps:
//!   [`crate::watch_window`]). A watch from before the window gets `too old resource version: R (OLDEST)`
//!   exactly as `watchCache.getAllEventsSinceLocked` words it: OLDEST is one less than the
//!   oldest event still held, or the resourceVersion the cache started at while nothing was
//!   dropped yet.
//! - **lists at an exact resourceVersion** (and continue tokens) read the state at that
//!   revision, as the watch cache's snapshots (`ListFromCacheSnapshot`) or etcd serve it until
//!   etcd compacts the revision away. Every change after the last compaction is kept; the state
//!   at a revision is the current state with the later changes undone.
//!
//! Compaction (`POST /_sim/compact`, and periodically like `--etcd-compaction-interval`)
//! forgets what only snapshots needed, which keeps memory bounded in long runs. A restart
//! (`POST /_sim/restart`) empties the window, which starts again at the current revision, as a
//! restarted kube-apiserver's watch cache does; snapshots, which etcd serves, are kept.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use crate::stored::{ObjectKey, Stored};
use crate::watch_window::{Window, WindowPolicy};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change to one object, as watches see it.
#[derive(Debug)]
pub struct Change {
    pub resource_version: u64,
    pub event_type: EventType,
    /// The object after the change; for a deletion its last state at the deletion's
    /// resourceVersion (what a DELETED event carries).
    pub object: Stored,
    /// The object before the change (None for a creation), with its own resourceVersion.
    pub previous: Option<Stored>,
    /// When the change was made (the watch window keeps young events).
    pub recorded_at: Instant,
}

/// Why a watch cannot resume from a resourceVersion: `requested` is older than `oldest`, the
/// oldest resourceVersion the window can resume from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    pub requested: u64,
    pub oldest: u64,
}

impl TooOld {
    /// The message of the 410 Expired the watch gets.
    pub fn message(&self) -> String {
        format!(
            "too old resource version: {} ({})",
            self.requested, self.oldest
        )
    }
}

/// The remembered changes of one resource.
#[derive(Debug)]
pub struct History {
    /// Every change after the last compaction, and at least those in the window.
    log: VecDeque<Arc<Change>>,
    /// The newest changes watches can resume from.
    window: Window,
    /// The resourceVersion the resource's cache started at (nothing before it is known).
    start: u64,
    /// The resourceVersion the current watch cache started at: `start`, or the revision of
    /// the last restart (its list's resourceVersion, `watchCache.listResourceVersion`).
    cache_start: u64,
}

impl History {
    pub fn new(start: u64, window: WindowPolicy) -> Self {
        Self {
            log: VecDeque::new(),
            window: Window::new(window),
            start,
            cache_start: start,
        }
    }

    /// The API server restarted at revision `at`: its new watch cache holds no event, and
    /// watches can resume only from `at` on.
    pub fn restart(&mut self, at: u64) {
        self.window.restart();
        self.cache_start = at;
    }

    /// The resourceVersion the resource's cache started at.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Remembers `change`; forgets what neither the window nor an uncompacted revision needs.
    pub fn record(&mut self, change: Arc<Change>, compacted: u64) {
        let log = &self.log;
        self.window
            .admit(change.recorded_at, |k| log[log.len() - k].recorded_at);
        self.log.push_back(change);
        self.compact(compacted);
    }

    /// Forgets the changes outside the window at or before revision `compacted`.
    pub fn compact(&mut self, compacted: u64) {
        while self.log.len() > self.window.len()
            && self
                .log
                .front()
                .is_some_and(|c| c.resource_version <= compacted)
        {
            self.log.pop_front();
        }
    }

    fn window_start(&self) -> usize {
        self.log.len().saturating_sub(self.window.len())
    }

    /// The oldest resourceVersion a watch can resume from.
    fn oldest(&self) -> u64 {
        match self.log.get(self.window_start()) {
            Some(first) if self.window.evicted() => first.resource_version - 1,
            _ => self.cache_start,
        }
    }

    /// The window's changes after resourceVersion `since`, or TooOld if some were dropped.
    pub fn events_since(&self, since: u64) -> Result<Vec<Arc<Change>>, TooOld> {
        let oldest = self.oldest();
        if since < oldest {
            return Err(TooOld {
                requested: since,
                oldest,
            });
        }
        let window = self.log.range(self.window_start()..);
        Ok(window
            .filter(|c| c.resource_version > since)
            .cloned()
            .collect())
    }

    /// The resourceVersion of the latest change, if any is remembered.
    pub fn latest(&self) -> Option<u64> {
        self.log.back().map(|c| c.resource_version)
    }

    /// `objects` (the current state) with every change after `rv` undone: the state at `rv`.
    /// The caller makes sure no change after `rv` was forgotten.
    pub fn state_at(
        &self,
        objects: &BTreeMap<ObjectKey, Stored>,
        rv: u64,
    ) -> BTreeMap<ObjectKey, Stored> {
        let mut state = objects.clone();
        for change in self.log.iter().rev() {
            if change.resource_version <= rv {
                break;
            }
            let key = (*change.object.key).clone();
            match &change.previous {
                Some(previous) => state.insert(key, previous.clone()),
                None => state.remove(&key),
            };
        }
        state
    }

    /// The number of changes remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.log.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(name: &str, rv: u64) -> Stored {
        Stored::new(json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}}))
    }

    fn change(rv: u64, event_type: EventType, name: &str, previous: Option<u64>) -> Arc<Change> {
        Arc::new(Change {
            resource_version: rv,
            event_type,
            object: stored(name, rv),
            previous: previous.map(|p| stored(name, p)),
            recorded_at: Instant::now(),
        })
    }

    fn rvs(changes: &[Arc<Change>]) -> Vec<u64> {
        changes.iter().map(|c| c.resource_version).collect()
    }

    #[test]
    fn resuming_before_the_window_is_too_old_with_the_cache_wording() {
        let mut history = History::new(10, WindowPolicy::Fixed(2));
        history.record(change(11, EventType::Added, "a", None), 0);
        // Nothing dropped yet: anything from the start on resumes.
        assert_eq!(rvs(&history.events_since(10).unwrap()), vec![11]);
        assert_eq!(history.events_since(9).unwrap_err().oldest, 10);
        history.record(change(15, EventType::Added, "b", None), 0);
        history.record(change(20, EventType::Modified, "a", Some(11)), 0);
        // 11 left the window: the oldest event held is 15, so 14 is the oldest resumable.
        let too_old = history.events_since(13).unwrap_err();
        assert_eq!(too_old.message(), "too old resource version: 13 (14)");
        assert_eq!(rvs(&history.events_since(14).unwrap()), vec![15, 20]);
        assert_eq!(rvs(&history.events_since(15).unwrap()), vec![20]);
        assert!(history.events_since(99).unwrap().is_empty());
    }

    #[test]
    fn after_a_restart_watches_resume_only_from_the_restart_revision() {
        let mut history = History::new(10, WindowPolicy::Fixed(100));
        history.record(change(11, EventType::Added, "a", None), 0);
        history.record(change(12, EventType::Modified, "a", Some(11)), 0);
        history.restart(15);
        let too_old = history.events_since(12).unwrap_err();
        assert_eq!(too_old.message(), "too old resource version: 12 (15)");
        assert!(history.events_since(15).unwrap().is_empty());
        history.record(change(16, EventType::Modified, "a", Some(12)), 0);
        assert_eq!(rvs(&history.events_since(15).unwrap()), vec![16]);
        assert_eq!(history.start(), 10, "snapshots are etcd's: kept");
    }

    #[test]
    fn uncompacted_changes_outlive_the_window_for_snapshots() {
        let mut history = History::new(0, WindowPolicy::Fixed(1));
        history.record(change(1, EventType::Added, "a", None), 0);
        history.record(change(2, EventType::Added, "b", None), 0);
        history.record(change(3, EventType::Modified, "a", Some(1)), 0);
        history.record(change(4, EventType::Deleted, "b", Some(2)), 0);
        assert_eq!(history.len(), 4);
        let mut now = BTreeMap::new();
        now.insert(ObjectKey::new("", "a"), stored("a", 3));
        let names_at = |rv| -> Vec<(String, u64)> {
            let state = history.state_at(&now, rv);
            state
                .values()
                .map(|s| (s.key.name.clone(), s.resource_version()))
                .collect()
        };
        assert_eq!(names_at(4), vec![("a".to_owned(), 3)]);
        assert_eq!(names_at(2), vec![("a".to_owned(), 1), ("b".to_owned(), 2)]);
        assert_eq!(names_at(1), vec![("a".to_owned(), 1)]);
        assert!(names_at(0).is_empty());
        history.compact(3);
        assert_eq!(history.len(), 1, "only the window is left");
    }
}
