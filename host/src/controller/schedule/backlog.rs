//! The backlog: passes over many keys at once (the first pass over every MCS, every resync,
//! the catch-up when a member becomes ready or a cache lists again; on the clusterset side,
//! the same over every exported name), handed to a Controller a few at a time so that a live
//! change (a watch event heard after start) never waits behind them.
//!
//! kube-runtime's scheduler keeps every request it holds in one set and starts them in that
//! set's hash order: given a thousand MCSs at once (`reconcile_all_on`), it would start a live
//! change wherever its hash falls among them. So the bulk stays here, first in, first out,
//! each key once, and is handed out ([`Backlog::next`]) only while
//!
//! - fewer than `--workers` passes are running or handed out and not started yet, so whatever
//!   the Controller holds finds a worker at once, and
//! - no live change waits for its pass. Live changes that have held the backlog for
//!   [`STARVING`] on end let it go on one pass at a time: a steady stream of changes slows the
//!   backlog, never stops it.
//!
//! **A live change goes first, whatever the backlog holds.** Its trigger goes straight to the
//! Controller, and its key, if it waits in the backlog (at its head or its tail), leaves it at
//! once ([`Backlog::live`], told through [`Changes::fresh`]): the pass runs as live, ahead of
//! every key before it, and only once. A key whose live change still waits is not queued again
//! by a resync: that pass is still to come.
//!
//! A pass that starts for any reason satisfies that key's place in the backlog (it reads the
//! caches as they are now). A key handed out and found gone (the Controller reports
//! `ObjectNotFound`) is forgotten, so nothing handed out is ever lost or keeps a worker's
//! place.
//!
//! Keys are `namespace/name`; the Controller's object is named by [`Bulk`]'s resource (the MCS
//! for the MCS passes, the synthetic export object for the clusterset's).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::Notify;

use crate::controller::cache::triggers::Changes;

/// How long live changes may hold the whole backlog; after that it goes on one pass at a time
/// while they still wait.
pub const STARVING: Duration = Duration::from_secs(1);

/// The backlog as a Controller's loop uses it: queued by the resync and the catch-ups, fed
/// to the Controller by [`Bulk::feed`], told by every pass when it starts and ends
/// ([`Bulk::running`]), by the Controller's stream when a key was not found, and by
/// [`Changes`] when a key gets a live change.
pub struct Bulk {
    backlog: Mutex<Backlog>,
    /// Wakes the feeder: a pass started or ended, an MCS was not found, more was queued.
    wake: Notify,
    /// `--workers`.
    workers: usize,
    /// The live changes waiting for their pass.
    changes: Arc<Changes>,
    /// The Controller's objects: a key `namespace/name` is one of this resource.
    resource: ApiResource,
}

impl Bulk {
    /// A backlog for `workers` workers over keys of `resource`, whose live changes are
    /// `changes`.
    pub fn new(workers: usize, changes: Arc<Changes>, resource: ApiResource) -> Bulk {
        Bulk {
            backlog: Mutex::default(),
            wake: Notify::new(),
            workers,
            changes,
            resource,
        }
    }

    fn backlog(&self) -> MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a pass of every key of `keys` (`namespace/name`), in name order, behind the
    /// backlog; a key whose live change waits is left out (its pass is still to come).
    pub fn queue_all(&self, mut keys: Vec<String>) {
        keys.retain(|key| !self.changes.contains(key));
        keys.sort_unstable();
        let (added, waiting) = {
            let mut backlog = self.backlog();
            let added = backlog.queue(keys);
            (added, backlog.len())
        };
        tracing::debug!(added, waiting, "passes queued in the backlog");
        self.wake.notify_one();
    }

    /// The Controller found no MCS `key`: the requests for it are answered.
    pub fn not_found(&self, key: &str) {
        self.changes.take(key);
        self.backlog().not_found(key);
        self.wake.notify_one();
    }

    /// Forgets the waiting keys `alive` says are gone.
    pub fn retain(&self, alive: impl Fn(&str) -> bool) {
        self.backlog().retain(alive);
        self.wake.notify_one();
    }

    /// MCSs waiting in the backlog.
    pub fn len(&self) -> usize {
        self.backlog().len()
    }

    /// Whether no MCS waits in the backlog.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pass of `key` starts: held until it ends.
    pub fn running<'a>(&'a self, key: &'a str) -> Running<'a> {
        self.backlog().started(key);
        self.wake.notify_one();
        Running { bulk: self, key }
    }

    /// Takes out of the backlog the keys that got a live change: their triggers are with the
    /// Controller already.
    fn take_live(&self) {
        let fresh = self.changes.fresh();
        if fresh.is_empty() {
            return;
        }
        let mut backlog = self.backlog();
        for key in fresh {
            if backlog.live(&key) {
                tracing::debug!(key, "a live change: out of the backlog, passed at once");
            }
        }
    }

    /// Hands the Controller the backlog's next keys whenever they may go (the module's
    /// rules), for ever; returns when `to` is closed (the Controller is gone).
    pub async fn feed(&self, to: mpsc::UnboundedSender<ObjectRef<DynamicObject>>) {
        let resource = &self.resource;
        loop {
            loop {
                self.take_live();
                let live_waiting = !self.changes.is_empty();
                let next = self
                    .backlog()
                    .next(self.workers, live_waiting, Instant::now());
                let Some(key) = next else { break };
                let Some((namespace, name)) = key.split_once('/') else {
                    self.backlog().not_found(&key);
                    continue;
                };
                let reference = ObjectRef::new_with(name, resource.clone()).within(namespace);
                if to.unbounded_send(reference).is_err() {
                    return;
                }
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = self.changes.arrived() => {}
            }
        }
    }
}

/// A pass running; tells the backlog it ended when dropped.
pub struct Running<'a> {
    bulk: &'a Bulk,
    key: &'a str,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.bulk.backlog().ended(self.key);
        self.bulk.wake.notify_one();
    }
}

/// Bulk passes not yet handed to the Controller, and what the Controller is running.
#[derive(Debug, Default)]
pub struct Backlog {
    /// Waiting MCS keys (`namespace/name`), oldest first, each with the number it was queued
    /// under; an entry whose number is not its key's in `waiting` was satisfied meanwhile
    /// (and maybe queued again, further back), and is skipped.
    order: VecDeque<(u64, String)>,
    /// The waiting keys and their numbers.
    waiting: HashMap<String, u64>,
    /// The next number to queue under.
    queued: u64,
    /// Keys handed to the Controller whose pass has not started.
    fed: HashSet<String>,
    /// Passes running, for any reason.
    running: usize,
    /// The keys of the running passes that were handed out from here.
    bulk: HashSet<String>,
    /// Since when live changes have held the backlog.
    held_since: Option<Instant>,
}

impl Backlog {
    /// Queues `keys`, in that order, behind what waits; a key already waiting, or handed out
    /// and not started yet, keeps its place (the pass to come reads the caches as they will
    /// be). How many were queued.
    pub fn queue(&mut self, keys: impl IntoIterator<Item = String>) -> usize {
        let mut added = 0;
        for key in keys {
            if self.waiting.contains_key(&key) || self.fed.contains(&key) {
                continue;
            }
            self.queued += 1;
            self.waiting.insert(key.clone(), self.queued);
            self.order.push_back((self.queued, key));
            added += 1;
        }
        added
    }

    /// The next key to hand to the Controller, if one may go `now` (see the module's rules);
    /// `live_waiting`: a live change waits for its pass.
    pub fn next(&mut self, workers: usize, live_waiting: bool, now: Instant) -> Option<String> {
        if self.waiting.is_empty() {
            return None;
        }
        let starving = if live_waiting {
            let since = *self.held_since.get_or_insert(now);
            now.saturating_duration_since(since) >= STARVING
        } else {
            self.held_since = None;
            false
        };
        if self.running + self.fed.len() >= workers {
            return None;
        }
        if live_waiting && !(starving && self.fed.is_empty() && self.bulk.is_empty()) {
            return None;
        }
        while let Some((number, key)) = self.order.pop_front() {
            if self.waiting.get(&key) == Some(&number) {
                self.waiting.remove(&key);
                self.fed.insert(key.clone());
                return Some(key);
            }
        }
        None
    }

    /// `key` got a live change, whose trigger is with the Controller: if it waits here, it
    /// leaves the backlog (its pass runs as live, ahead of the keys before it, and once).
    /// Whether it waited. A key handed out already is with the Controller too: the two
    /// requests are one pass.
    pub fn live(&mut self, key: &str) -> bool {
        if self.waiting.remove(key).is_none() {
            return false;
        }
        self.compact();
        true
    }

    /// The pass of `key` starts (for any reason): it satisfies the backlog's request.
    pub fn started(&mut self, key: &str) {
        self.running += 1;
        if self.fed.remove(key) {
            self.bulk.insert(key.to_string());
        }
        self.satisfied(key);
    }

    /// The pass of `key` ended (or was dropped).
    pub fn ended(&mut self, key: &str) {
        self.running = self.running.saturating_sub(1);
        self.bulk.remove(key);
    }

    /// The Controller found no MCS `key` (deleted since it was queued): forgotten.
    pub fn not_found(&mut self, key: &str) {
        self.fed.remove(key);
        self.satisfied(key);
    }

    /// Forgets the waiting keys `alive` says are gone.
    pub fn retain(&mut self, alive: impl Fn(&str) -> bool) {
        self.waiting.retain(|key, _| alive(key));
        self.compact();
    }

    /// MCSs waiting (not handed out yet).
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no MCS waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Keys handed out whose pass has not started, and passes running.
    pub fn in_flight(&self) -> (usize, usize) {
        (self.fed.len(), self.running)
    }

    fn satisfied(&mut self, key: &str) {
        if self.waiting.remove(key).is_some() {
            self.compact();
        }
    }

    /// Drops skipped entries once they outnumber the waiting ones.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.waiting.len() + 64 {
            let waiting = &self.waiting;
            self.order
                .retain(|(number, key)| waiting.get(key) == Some(number));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instant the tests' live changes start waiting.
    fn t0() -> Instant {
        static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *T0.get_or_init(Instant::now)
    }

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| format!("ns/{n}")).collect()
    }

    /// Hands out what may go now, starting each pass at once.
    fn serve(backlog: &mut Backlog, workers: usize) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(key) = backlog.next(workers, false, t0()) {
            backlog.started(&key);
            out.push(key);
        }
        out
    }

    /// Runs the whole backlog, one worker: every key in the order handed out.
    fn drain(backlog: &mut Backlog) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(key) = backlog.next(1, false, t0()) {
            backlog.started(&key);
            backlog.ended(&key);
            out.push(key);
        }
        out
    }

    #[test]
    fn bulk_is_first_in_first_out_and_at_most_workers_at_once() {
        let mut backlog = Backlog::default();
        assert_eq!(backlog.queue(keys(&["c", "a", "b", "e", "d"])), 5);
        assert_eq!(serve(&mut backlog, 2), keys(&["c", "a"]));
        assert_eq!(backlog.next(2, false, t0()), None, "two passes run");
        backlog.ended("ns/c");
        assert_eq!(serve(&mut backlog, 2), keys(&["b"]));
        backlog.ended("ns/a");
        backlog.ended("ns/b");
        assert_eq!(drain(&mut backlog), keys(&["e", "d"]));
        assert!(backlog.is_empty());
        assert_eq!(backlog.in_flight(), (0, 0));
    }

    #[test]
    fn handed_out_keys_count_until_their_pass_starts() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c"]));
        assert_eq!(backlog.next(2, false, t0()), Some("ns/a".into()));
        assert_eq!(backlog.next(2, false, t0()), Some("ns/b".into()));
        assert_eq!(
            backlog.next(2, false, t0()),
            None,
            "two handed out, not started"
        );
        backlog.started("ns/a");
        assert_eq!(
            backlog.next(2, false, t0()),
            None,
            "one runs, one handed out"
        );
        backlog.ended("ns/a");
        assert_eq!(backlog.next(2, false, t0()), Some("ns/c".into()));
    }

    #[test]
    fn live_changes_go_before_the_backlog() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c"]));
        assert_eq!(serve(&mut backlog, 4), keys(&["a", "b", "c"]));
        backlog.queue(keys(&["d", "e"]));
        // A live change waits (its trigger is with the Controller): nothing more is handed
        // out while bulk passes run.
        assert_eq!(backlog.next(4, true, t0()), None);
        backlog.ended("ns/a");
        backlog.ended("ns/b");
        assert_eq!(
            backlog.next(4, true, t0()),
            None,
            "ns/c, a bulk pass, still runs"
        );
        // The live pass starts (x: not from the backlog) and takes its change.
        backlog.started("ns/x");
        backlog.ended("ns/c");
        assert_eq!(backlog.next(4, false, t0()), Some("ns/d".into()));
    }

    #[test]
    fn a_steady_stream_of_live_changes_slows_the_backlog_but_never_stops_it() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c"]));
        // Live passes run and more changes keep waiting.
        backlog.started("ns/live");
        let t0 = Instant::now();
        assert_eq!(backlog.next(4, true, t0), None);
        let later = t0 + STARVING / 2;
        assert_eq!(backlog.next(4, true, later), None);
        // Held for STARVING: one bulk pass at a time goes.
        let starving = t0 + STARVING;
        assert_eq!(backlog.next(4, true, starving), Some("ns/a".into()));
        assert_eq!(backlog.next(4, true, starving), None, "one at a time");
        backlog.started("ns/a");
        assert_eq!(backlog.next(4, true, starving), None);
        backlog.ended("ns/a");
        assert_eq!(backlog.next(4, true, starving), Some("ns/b".into()));
        // No live change waits any more: the hold is over, and so is its clock.
        backlog.started("ns/b");
        backlog.ended("ns/b");
        backlog.queue(keys(&["d"]));
        assert_eq!(backlog.next(4, false, starving), Some("ns/c".into()));
        assert_eq!(backlog.next(4, true, starving), None, "held afresh");
        assert_eq!(backlog.next(4, false, starving), Some("ns/d".into()));
    }

    #[test]
    fn a_live_change_takes_its_key_out_of_the_backlogs_tail_and_the_rest_drains_in_order() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c", "d", "e"]));
        assert_eq!(serve(&mut backlog, 2), keys(&["a", "b"]));
        // e, the tail, gets a live change while both workers are busy: it leaves at once.
        assert!(backlog.live("ns/e"));
        assert_eq!(backlog.len(), 2, "c and d wait");
        assert!(!backlog.live("ns/e"), "once");
        // Its trigger is with the Controller: nothing is handed out ahead of it.
        backlog.ended("ns/a");
        assert_eq!(backlog.next(2, true, t0()), None);
        // Its pass starts (from the live trigger), before c and d.
        backlog.started("ns/e");
        backlog.ended("ns/b");
        backlog.ended("ns/e");
        assert_eq!(
            drain(&mut backlog),
            keys(&["c", "d"]),
            "the rest in order, e not again"
        );
        assert_eq!(backlog.in_flight(), (0, 0));
        // Queued again later, it is in the backlog again: a live change takes it out again.
        backlog.queue(keys(&["e", "f"]));
        assert!(backlog.live("ns/e"));
        assert_eq!(drain(&mut backlog), keys(&["f"]));
    }

    #[test]
    fn a_live_change_of_a_key_handed_out_leaves_it_with_the_controller() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b"]));
        assert_eq!(backlog.next(4, false, t0()), Some("ns/a".into()));
        // a is with the Controller already: the live trigger and it are one pass.
        assert!(!backlog.live("ns/a"));
        assert_eq!(backlog.in_flight(), (1, 0));
        backlog.started("ns/a");
        backlog.ended("ns/a");
        assert_eq!(drain(&mut backlog), keys(&["b"]));
    }

    #[test]
    fn a_pass_for_a_live_change_satisfies_the_backlog() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c"]));
        backlog.started("ns/b");
        backlog.ended("ns/b");
        assert_eq!(drain(&mut backlog), keys(&["a", "c"]));
        // Queued again later: it goes at its new place, not its old one.
        backlog.queue(keys(&["a", "b", "c"]));
        backlog.started("ns/b");
        backlog.ended("ns/b");
        backlog.queue(keys(&["b"]));
        assert_eq!(drain(&mut backlog), keys(&["a", "c", "b"]));
    }

    #[test]
    fn a_resync_while_the_backlog_is_served_adds_no_duplicates() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c", "d"]));
        assert_eq!(backlog.next(8, false, t0()), Some("ns/a".into()));
        assert_eq!(backlog.next(8, false, t0()), Some("ns/b".into()));
        backlog.started("ns/a");
        // The resync: a runs (queued again: its pass started before this request), b is
        // handed out and not started (its pass will read the caches as they are then), c and
        // d wait.
        assert_eq!(backlog.queue(keys(&["a", "b", "c", "d", "e"])), 2);
        backlog.started("ns/b");
        backlog.ended("ns/a");
        backlog.ended("ns/b");
        assert_eq!(drain(&mut backlog), keys(&["c", "d", "a", "e"]));
    }

    #[test]
    fn nothing_is_lost_when_an_mcs_is_deleted_meanwhile() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c"]));
        assert_eq!(backlog.next(2, false, t0()), Some("ns/a".into()));
        assert_eq!(backlog.next(2, false, t0()), Some("ns/b".into()));
        // a was deleted: the Controller reports it not found, and its place is free again.
        backlog.not_found("ns/a");
        assert_eq!(backlog.in_flight(), (1, 0));
        assert_eq!(backlog.next(2, false, t0()), Some("ns/c".into()));
        backlog.started("ns/b");
        backlog.started("ns/c");
        backlog.ended("ns/b");
        backlog.ended("ns/c");
        assert_eq!(backlog.in_flight(), (0, 0));
        // One deleted while it waits is forgotten at the resync, or found gone when handed out.
        backlog.queue(keys(&["d", "e", "f"]));
        backlog.retain(|key| key != "ns/d");
        assert_eq!(backlog.next(1, false, t0()), Some("ns/e".into()));
        backlog.not_found("ns/e");
        assert_eq!(drain(&mut backlog), keys(&["f"]));
        assert_eq!(backlog.in_flight(), (0, 0));
    }

    #[test]
    fn skipped_entries_do_not_pile_up() {
        let mut backlog = Backlog::default();
        let many: Vec<String> = (0..1000).map(|i| format!("ns/{i:04}")).collect();
        for _ in 0..5 {
            backlog.queue(many.clone());
            for key in &many[..999] {
                backlog.started(key);
                backlog.ended(key);
            }
        }
        assert_eq!(backlog.len(), 1);
        assert!(backlog.order.len() <= 2 * backlog.len() + 64 + 1);
        assert_eq!(drain(&mut backlog), ["ns/0999"]);
    }
}
