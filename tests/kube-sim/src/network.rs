//! Simulated network trouble: the unreachable switch and the signal that ends open watches.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

/// How open watch streams are ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// The stream ends cleanly, as when the apiserver times a watch out.
    Graceful,
    /// The connection is cut mid-stream, as when the network fails.
    Abort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reachability {
    Up,
    DownUntil(Instant),
    Down,
}

/// The unreachable switch and the watch-ending broadcast.
#[derive(Debug)]
pub struct Network {
    reachability: Mutex<Reachability>,
    watch_ends: broadcast::Sender<WatchEnd>,
}

impl Default for Network {
    fn default() -> Self {
        Self {
            reachability: Mutex::new(Reachability::Up),
            watch_ends: broadcast::channel(16).0,
        }
    }
}

impl Network {
    /// Whether API requests are being refused now.
    pub fn is_unreachable(&self) -> bool {
        match *self.lock() {
            Reachability::Up => false,
            Reachability::Down => true,
            Reachability::DownUntil(until) => Instant::now() < until,
        }
    }

    /// Makes the server unreachable, for `duration` or (None) until `set_reachable`; cuts open watches.
    pub fn set_unreachable(&self, duration: Option<Duration>) {
        *self.lock() = duration.map_or(Reachability::Down, |d| {
            Reachability::DownUntil(Instant::now() + d)
        });
        self.end_watches(WatchEnd::Abort);
    }

    pub fn set_reachable(&self) {
        *self.lock() = Reachability::Up;
    }

    /// Seconds left of a timed outage (None when up or down indefinitely).
    pub fn seconds_left(&self) -> Option<f64> {
        match *self.lock() {
            Reachability::DownUntil(until) => Some(
                until
                    .saturating_duration_since(Instant::now())
                    .as_secs_f64(),
            ),
            _ => None,
        }
    }

    /// Ends every open watch stream; returns how many were open.
    pub fn end_watches(&self, how: WatchEnd) -> usize {
        self.watch_ends.send(how).unwrap_or(0)
    }

    /// How many watch streams are open.
    pub fn open_watches(&self) -> usize {
        self.watch_ends.receiver_count()
    }

    /// A receiver told when open watches must end.
    pub fn watch_ends(&self) -> broadcast::Receiver<WatchEnd> {
        self.watch_ends.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reachability> {
        self.reachability
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_outage_ends_by_itself() {
        let network = Network::default();
        network.set_unreachable(Some(Duration::from_millis(0)));
        assert!(!network.is_unreachable());
        network.set_unreachable(Some(Duration::from_secs(60)));
        assert!(network.is_unreachable());
        network.set_reachable();
        assert!(!network.is_unreachable());
    }

    #[test]
    fn ending_watches_reaches_every_subscriber() {
        let network = Network::default();
        let (mut a, mut b) = (network.watch_ends(), network.watch_ends());
        assert_eq!(network.end_watches(WatchEnd::Graceful), 2);
        assert_eq!(a.try_recv().unwrap(), WatchEnd::Graceful);
        assert_eq!(b.try_recv().unwrap(), WatchEnd::Graceful);
    }
}
