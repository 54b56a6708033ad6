//! The backlog: passes over many MultiClusterServices at once (the first pass over every MCS,
//! every resync, the catch-up when a member becomes ready or a cache lists again), handed to
//! the Controller a few at a time so that a live change (a watch's trigger) never waits behind
//! them.
//!
//! kube-runtime's scheduler keeps every request it holds in one set and starts them in that
//! set's hash order: given a thousand MCSs at once (`reconcile_all_on`), it would start a live
//! change wherever its hash falls among them. So the bulk stays here, first in, first out,
//! each MCS once, and is handed out ([`Backlog::next`]) only while
//!
//! - fewer than `--workers` passes are running or handed out and not started yet, so whatever
//!   the Controller holds finds a worker at once, and
//! - no live change waits for its pass, or no bulk pass is running or handed out: a steady
//!   stream of changes slows the backlog to one pass at a time, never stops it.
//!
//! A pass that starts for any reason satisfies that MCS's place in the backlog (it reads the
//! caches as they are now). An MCS handed out and found gone (the Controller reports
//! `ObjectNotFound`) is forgotten, so nothing handed out is ever lost or keeps a worker's
//! place.

use std::collections::{HashMap, HashSet, VecDeque};

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

    /// The next key to hand to the Controller, if one may go now (see the module's rules);
    /// `live_waiting`: a live change waits for its pass.
    pub fn next(&mut self, workers: usize, live_waiting: bool) -> Option<String> {
        if self.running + self.fed.len() >= workers {
            return None;
        }
        if live_waiting && !(self.fed.is_empty() && self.bulk.is_empty()) {
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

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| format!("ns/{n}")).collect()
    }

    /// Hands out what may go now, starting each pass at once.
    fn serve(backlog: &mut Backlog, workers: usize) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(key) = backlog.next(workers, false) {
            backlog.started(&key);
            out.push(key);
        }
        out
    }

    /// Runs the whole backlog, one worker: every key in the order handed out.
    fn drain(backlog: &mut Backlog) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(key) = backlog.next(1, false) {
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
        assert_eq!(backlog.next(2, false), None, "two passes run");
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
        assert_eq!(backlog.next(2, false), Some("ns/a".into()));
        assert_eq!(backlog.next(2, false), Some("ns/b".into()));
        assert_eq!(backlog.next(2, false), None, "two handed out, not started");
        backlog.started("ns/a");
        assert_eq!(backlog.next(2, false), None, "one runs, one handed out");
        backlog.ended("ns/a");
        assert_eq!(backlog.next(2, false), Some("ns/c".into()));
    }

    #[test]
    fn live_changes_go_before_the_backlog() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b", "c"]));
        assert_eq!(serve(&mut backlog, 4), keys(&["a", "b", "c"]));
        backlog.queue(keys(&["d", "e"]));
        // A live change waits (its trigger is with the Controller): nothing more is handed
        // out while bulk passes run.
        assert_eq!(backlog.next(4, true), None);
        backlog.ended("ns/a");
        backlog.ended("ns/b");
        assert_eq!(backlog.next(4, true), None, "ns/c, a bulk pass, still runs");
        // The live pass starts (x: not from the backlog) and takes its change.
        backlog.started("ns/x");
        backlog.ended("ns/c");
        assert_eq!(backlog.next(4, false), Some("ns/d".into()));
    }

    #[test]
    fn a_steady_stream_of_live_changes_slows_the_backlog_but_never_stops_it() {
        let mut backlog = Backlog::default();
        backlog.queue(keys(&["a", "b"]));
        // Live passes run and more changes keep waiting: one bulk pass at a time still goes.
        backlog.started("ns/live");
        assert_eq!(backlog.next(4, true), Some("ns/a".into()));
        assert_eq!(backlog.next(4, true), None, "one at a time");
        backlog.started("ns/a");
        assert_eq!(backlog.next(4, true), None);
        backlog.ended("ns/a");
        assert_eq!(backlog.next(4, true), Some("ns/b".into()));
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
        assert_eq!(backlog.next(8, false), Some("ns/a".into()));
        assert_eq!(backlog.next(8, false), Some("ns/b".into()));
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
        assert_eq!(backlog.next(2, false), Some("ns/a".into()));
        assert_eq!(backlog.next(2, false), Some("ns/b".into()));
        // a was deleted: the Controller reports it not found, and its place is free again.
        backlog.not_found("ns/a");
        assert_eq!(backlog.in_flight(), (1, 0));
        assert_eq!(backlog.next(2, false), Some("ns/c".into()));
        backlog.started("ns/b");
        backlog.started("ns/c");
        backlog.ended("ns/b");
        backlog.ended("ns/c");
        assert_eq!(backlog.in_flight(), (0, 0));
        // One deleted while it waits is forgotten at the resync, or found gone when handed out.
        backlog.queue(keys(&["d", "e", "f"]));
        backlog.retain(|key| key != "ns/d");
        assert_eq!(backlog.next(1, false), Some("ns/e".into()));
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
