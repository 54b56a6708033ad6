//! Equal values kept once: an [`Interner`] hands out one shared [`Arc`] for every value equal to
//! one it already holds.
//!
//! The caches use it for what the copies of one EndpointSlice have in common (their facts,
//! address type and endpoints): a provider's slice has a copy in every consumer, all with the
//! same labels, annotations, ports and endpoints, and only their names, uids and
//! resourceVersions differ. At 20 members × 1,000 MCS that is 38,000 cached copies of 2,000
//! slices; `heaptrack` put ~1.1 KB of each copy in these parts (BENCHMARKS.md, "Sync controller
//! at scale").
//!
//! No crate kept here: the interning crates on crates.io intern strings, or keep values
//! forever; this one drops a value once no cached object holds it (at the next sweep, which
//! runs when the set has doubled since the last one, so it costs O(1) a call amortised).

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

/// One shared copy of each distinct value in use.
#[derive(Debug)]
pub struct Interner<T> {
    set: Mutex<Set<T>>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            set: Mutex::default(),
        }
    }
}

#[derive(Debug)]
struct Set<T> {
    values: HashSet<Arc<T>, foldhash::fast::RandomState>,
    /// The size at which the next [`Interner::intern`] drops values no one else holds.
    sweep_at: usize,
}

impl<T> Default for Set<T> {
    fn default() -> Self {
        Set {
            values: HashSet::default(),
            sweep_at: MIN_SWEEP,
        }
    }
}

/// The smallest size worth sweeping at.
const MIN_SWEEP: usize = 1024;

impl<T: Eq + Hash> Interner<T> {
    /// The shared copy of `value`: one already held when equal, else `value` itself, now held.
    pub fn intern(&self, value: T) -> Arc<T> {
        let mut set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = set.values.get(&value) {
            return Arc::clone(held);
        }
        if set.values.len() >= set.sweep_at {
            // Held by the set alone: no cached object uses it, and no one can get a new
            // reference to it but through the set, whose lock this is.
            set.values.retain(|held| Arc::strong_count(held) > 1);
            set.sweep_at = (set.values.len() * 2).max(MIN_SWEEP);
        }
        let value = Arc::new(value);
        set.values.insert(Arc::clone(&value));
        value
    }

    /// How many distinct values the set holds (some may be waiting for the next sweep).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_copy_and_different_ones_do_not() {
        let interner = Interner::default();
        let a = interner.intern(String::from("web"));
        let b = interner.intern(String::from("web"));
        let c = interner.intern(String::from("api"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!((a.as_str(), c.as_str()), ("web", "api"));
        assert_eq!(interner.len(), 2);
    }

    #[test]
    fn values_no_one_holds_are_dropped_at_the_next_sweep_and_held_ones_stay() {
        let interner = Interner::default();
        let kept: Vec<_> = (0..10).map(|i| interner.intern(i)).collect();
        for i in 10..MIN_SWEEP {
            drop(interner.intern(i));
        }
        assert_eq!(interner.len(), MIN_SWEEP);
        // The set is full: this call sweeps the dropped values, then adds its own.
        let new = interner.intern(MIN_SWEEP);
        assert_eq!(interner.len(), kept.len() + 1);
        for (i, held) in kept.iter().enumerate() {
            assert!(
                Arc::ptr_eq(held, &interner.intern(i)),
                "value {i} still shared"
            );
        }
        assert_eq!(*new, MIN_SWEEP);
    }
}
