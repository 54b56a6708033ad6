//! Which groups one store keeps whole, and which of them are filled: the state a scoped
//! store carries ([`super::scope`] has the rules; [`super::scoped`] the store's side of them).

use std::sync::Arc;

use tokio::sync::Notify;

use super::kept::{Cached, Key, is_later, key_of};
use crate::fast_map::FastMap;

/// The scoping state of one store: which groups it keeps, and which of them are filled.
#[derive(Debug)]
pub struct Groups<K> {
    /// Kept whatever their group (our copies).
    pub(super) always: fn(&K) -> bool,
    /// The wanted groups, `(namespace, group)`.
    pub(super) wanted: FastMap<Key, Group>,
    /// Orders wants and list starts; also gives fill tokens.
    clock: u64,
    /// The clock at the last list start.
    list_start: u64,
    /// During fills: the resourceVersion of the last event of each object of a namespace
    /// with a group filling (`None`: the event had none).
    pub(super) seen: FastMap<Key, Option<Box<str>>>,
    /// Namespaces with groups filling, and how many.
    pub(super) filling: FastMap<Box<str>, usize>,
    /// Tells the store's filler there is work.
    pub(super) wake: Arc<Notify>,
}

#[derive(Debug)]
pub(super) struct Group {
    /// The clock when it became wanted.
    pub(super) since: u64,
    /// `Some(token)` while a fill is owed: only the fill started with that token is merged.
    pub(super) filling: Option<u64>,
}

impl<K: Cached> Groups<K> {
    pub(super) fn new(always: fn(&K) -> bool) -> Self {
        Groups {
            always,
            wanted: FastMap::default(),
            clock: 0,
            list_start: 0,
            seen: FastMap::default(),
            filling: FastMap::default(),
            wake: Arc::new(Notify::new()),
        }
    }

    pub(super) fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Whether the store keeps `object` (of group `group`) whole.
    pub(super) fn keeps(&self, object: &K, group: Option<&str>) -> bool {
        (self.always)(object)
            || group.is_some_and(|g| {
                self.wanted
                    .contains_key(&(Box::from(object.namespace()), Box::from(g)))
            })
    }

    /// A watch event of `object` (a change or a deletion): remembered while a group of its
    /// namespace fills, so the fill does not bring back an older state.
    pub(super) fn saw(&mut self, object: &K) {
        if self.filling.contains_key(object.namespace()) {
            let version = object.resource_version().map(Box::from);
            self.seen.insert(key_of(object), version);
        }
    }

    /// A list starts: it fills every group wanted now.
    pub(super) fn list_started(&mut self) {
        self.list_start = self.tick();
    }

    /// A list completed: the groups wanted since before it started are filled by it; the
    /// others (wanted while it ran: some of their objects were dropped) are filled anew, and
    /// fills that were running are thrown away.
    pub(super) fn list_done(&mut self) {
        self.seen.clear();
        self.filling.clear();
        let mut owed = false;
        let mut clock = self.clock;
        for ((namespace, _), group) in &mut self.wanted {
            if group.since < self.list_start {
                group.filling = None;
            } else {
                clock += 1;
                group.filling = Some(clock);
                *self.filling.entry(namespace.clone()).or_default() += 1;
                owed = true;
            }
        }
        self.clock = clock;
        if owed {
            self.wake.notify_one();
        }
    }

    /// One fewer group filling in `namespace`.
    pub(super) fn fill_ended(&mut self, namespace: &str) {
        if let Some(count) = self.filling.get_mut(namespace) {
            *count -= 1;
            if *count == 0 {
                self.filling.remove(namespace);
                self.seen.retain(|(ns, _), _| &**ns != namespace);
            }
        }
    }
}

/// What became of a fill's answer ([`super::Store::fill_done`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Merged: the group can be read.
    Merged,
    /// Not wanted by this fill any more (the group was dropped, wanted again, or listed
    /// again): thrown away.
    Stale,
    /// The store's watch is failing or listing: thrown away, the fill is made again later.
    Later,
}

/// Whether an event of resourceVersion `event` is at least as recent as a listed object of
/// `listed` (either not an integer: the event is taken as the more recent).
pub(super) fn not_older(event: Option<&str>, listed: Option<&str>) -> bool {
    event == listed || is_later(event, listed)
}
