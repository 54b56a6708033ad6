//! How many of a resource's latest events watches can resume from: the watch cache's ring
//! buffer (`watchCache.updateCache` / `resizeCacheLocked`). kube-apiserver sizes it by age: it
//! starts at 100 events, doubles (up to 102,400) whenever it is full and its oldest event is
//! younger than 75 s, and halves (down to 100) when it is full and even the event a quarter of
//! the buffer from the newest is older than that. `--watch-history N` fixes it at N events
//! instead (tests use it to push events out of the window quickly).

use std::time::{Duration, Instant};

/// The smallest and largest window, and the age below which events are kept if there is room.
const LOWER_BOUND: usize = 100;
const UPPER_BOUND: usize = 100 * 1024;
const FRESH: Duration = Duration::from_secs(75);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowPolicy {
    /// Exactly this many events.
    Fixed(usize),
    /// Sized by age, as kube-apiserver's watch cache is.
    Fresh,
}

impl WindowPolicy {
    /// `--watch-history N`; 0 means the apiserver's sizing.
    pub fn from_events(events: usize) -> Self {
        if events == 0 {
            Self::Fresh
        } else {
            Self::Fixed(events)
        }
    }
}

/// The window over the newest events of a resource's history.
#[derive(Debug, Clone)]
pub struct Window {
    policy: WindowPolicy,
    capacity: usize,
    len: usize,
    evicted: bool,
}

impl Window {
    pub fn new(policy: WindowPolicy) -> Self {
        let capacity = match policy {
            WindowPolicy::Fixed(events) => events.max(1),
            WindowPolicy::Fresh => LOWER_BOUND,
        };
        Self {
            policy,
            capacity,
            len: 0,
            evicted: false,
        }
    }

    /// Empties the window, as a restarted API server's new watch cache starts empty.
    pub fn restart(&mut self) {
        *self = Self::new(self.policy);
    }

    /// How many of the newest events the window holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether an event has left the window.
    pub fn evicted(&self) -> bool {
        self.evicted
    }

    /// Takes in an event recorded at `now`, dropping the oldest when the window is full;
    /// `recorded_at(k)` is when the k-th newest event of the window (1 = newest) was recorded.
    pub fn admit(&mut self, now: Instant, recorded_at: impl Fn(usize) -> Instant) {
        if self.policy == WindowPolicy::Fresh && self.len == self.capacity {
            self.resize(now, &recorded_at);
        }
        if self.len == self.capacity {
            self.len -= 1;
            self.evicted = true;
        }
        self.len += 1;
    }

    fn resize(&mut self, now: Instant, recorded_at: &impl Fn(usize) -> Instant) {
        let age = |k: usize| now.saturating_duration_since(recorded_at(k));
        if age(self.len) < FRESH {
            self.capacity = (self.capacity * 2).min(UPPER_BOUND);
        } else if age(self.capacity / 4) > FRESH {
            let shrunk = (self.capacity / 2).max(LOWER_BOUND);
            if shrunk < self.capacity {
                // The oldest events go with the room they took.
                self.capacity = shrunk;
                self.len = shrunk;
                self.evicted = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window fed `count` events, all recorded `age` ago.
    fn fed(policy: WindowPolicy, count: usize, age: Duration) -> Window {
        let now = Instant::now();
        let then = now.checked_sub(age).unwrap_or(now);
        let mut window = Window::new(policy);
        for _ in 0..count {
            window.admit(now, |_| then);
        }
        window
    }

    #[test]
    fn fixed_windows_hold_exactly_their_size() {
        let window = fed(WindowPolicy::Fixed(4), 6, Duration::ZERO);
        assert_eq!((window.len(), window.evicted()), (4, true));
        let window = fed(WindowPolicy::Fixed(4), 4, Duration::ZERO);
        assert_eq!((window.len(), window.evicted()), (4, false));
    }

    #[test]
    fn fresh_windows_grow_while_their_events_are_young() {
        let young = fed(WindowPolicy::Fresh, 1000, Duration::ZERO);
        assert_eq!((young.len(), young.evicted()), (1000, false));
        assert_eq!(young.capacity, 1600);
        let old = fed(WindowPolicy::Fresh, 1000, Duration::from_secs(100));
        assert_eq!((old.len(), old.evicted()), (LOWER_BOUND, true));
    }

    #[test]
    fn fresh_windows_shrink_when_even_recent_events_are_old() {
        let mut window = fed(WindowPolicy::Fresh, 400, Duration::ZERO);
        assert_eq!(window.capacity, 400);
        let later = Instant::now() + Duration::from_secs(100);
        let stale = Instant::now();
        window.admit(later, |_| stale);
        assert_eq!((window.capacity, window.len()), (200, 200));
        assert!(window.evicted());
    }
}
