//! Whether a store can be read ([`Health`]), why its watch failed ([`Failure`]), and how long a
//! failing watch is waited for ([`Patience`]); the rules are [`super::watch`]'s.

use std::time::{Duration, Instant};

/// Whether a store can be read, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// The first list has not completed.
    Listing,
    /// Listed, and every watch event since has been applied; or its watch has been failing
    /// for no longer than the grace ([`Patience::grace`], [`super::Store::failing`]).
    Synced,
    /// The watch has been failing for longer than the grace, or failed before the first list
    /// completed; the store holds what it held before, and the watch retries.
    Broken(Failure),
}

/// The default of `--outage-grace`: how long a store that has listed stays readable while
/// its watch fails (Karmada's `--cluster-failure-threshold` is 30 s too).
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// How a store and its watch wait for a failing watch ([`super::watch`] has the rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patience {
    /// A store that has listed stays readable ([`Health::Synced`]) while its watch has been
    /// failing for at most this long (`--outage-grace`).
    pub grace: Duration,
    /// A retry that has gone this long without an error has resumed its watch: longer than
    /// any request of the cluster's client may wait for its answer (`--request-timeout`).
    pub settle: Duration,
}

impl Patience {
    /// Whether a store failing with `failure` is within its grace (none when it is zero).
    pub(super) fn within(&self, failure: &Failure) -> bool {
        !self.grace.is_zero() && failure.since.elapsed() <= self.grace
    }
}

impl Default for Patience {
    fn default() -> Self {
        Patience {
            grace: DEFAULT_GRACE,
            settle: Duration::from_secs(12),
        }
    }
}

/// Why a watch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The error with its causes, as the conditions show it.
    pub message: String,
    /// The server answered 404: it does not serve the resource.
    pub not_served: bool,
    /// When the watch failed first (in a row).
    pub since: Instant,
}
