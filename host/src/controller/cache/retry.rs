//! How a watch fails and retries ([`super::watch`] has the rules): whether it is failing or
//! works again ([`Failing`]), how long it waits before a retry ([`Backoff`], and a minute for a
//! resource the server does not serve), and what an error means (a new list, a 404, a 410).

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use kube::runtime::watcher;
use tokio::time::Instant;

use crate::clusters::api_error::{Kind, chain, kind_of};

/// The first wait before retrying after a failure.
pub(super) const BACKOFF_FIRST: Duration = Duration::from_millis(500);
/// The longest wait before retrying.
pub(super) const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How far each wait is moved at random, as a fraction of it (either way).
pub(super) const JITTER: f64 = 0.2;

/// Where a failing watch is: the failing/working rule of the module, apart from the I/O.
#[derive(Debug, Default)]
pub(super) struct Failing {
    /// An error came since the watch last proved to work.
    pub(super) failing: bool,
    /// When the retry under way started (polling again after the backoff); `None` before it.
    retry: Option<Instant>,
    /// The watcher is listing (an `Init` came, its `InitDone` not yet): only the list's end
    /// proves anything.
    pub(super) listing: bool,
    /// The store's turning unreadable has been logged.
    pub(super) told_unreadable: bool,
    /// That the CRD of a resource not served cannot be watched has been logged.
    pub(super) told_crd: bool,
}

/// What an item of the stream proves.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Proof {
    /// Nothing (an object of a list, a list starting).
    Nothing,
    /// The watch delivered a change: it is open from the store's version.
    Event,
    /// A list completed.
    Listed,
}

impl Failing {
    /// An error: failing from now, until a proof. Returns whether it is the first in a row.
    pub(super) fn failed(&mut self) -> bool {
        let first = !self.failing;
        self.failing = true;
        self.retry = None;
        self.listing = false;
        first
    }

    /// The retry starts (the backoff is over).
    pub(super) fn retrying(&mut self, now: Instant) {
        self.retry = Some(now);
    }

    /// An item of the stream; whether it ends a failure (the watch works again).
    pub(super) fn item(&mut self, proof: Proof, init: bool) -> bool {
        if init {
            self.listing = true;
        }
        let proved = match proof {
            Proof::Nothing => false,
            Proof::Listed => {
                self.listing = false;
                true
            }
            Proof::Event => !self.listing,
        };
        self.recovered_if(proved)
    }

    /// When a quiet retry proves the watch resumed: its start plus `settle`, while failing and
    /// not listing.
    pub(super) fn quiet_at(&self, settle: Duration) -> Option<Instant> {
        if !self.failing || self.listing {
            return None;
        }
        self.retry.map(|at| at + settle)
    }

    /// The retry stayed quiet until [`Failing::quiet_at`]: the watch works again.
    pub(super) fn quiet(&mut self) -> bool {
        self.recovered_if(self.failing && !self.listing && self.retry.is_some())
    }

    fn recovered_if(&mut self, proved: bool) -> bool {
        if !(proved && self.failing) {
            return false;
        }
        *self = Failing::default();
        true
    }
}

/// How long a watch of a resource the server does not serve (404 to its list: the CRD is not
/// installed there) waits before listing again, ±[`JITTER`]. A CRD installed later is picked up
/// within this; a cluster without it costs one list a minute per resource rather than one
/// every [`BACKOFF_MAX`]. A watch given its CRD waits for the CRD instead
/// ([`super::crd`]), and for this long only when the CRD cannot be watched.
pub const NOT_SERVED_RECHECK: Duration = Duration::from_secs(60);

/// The waits between retries: [`BACKOFF_FIRST`] doubling to [`BACKOFF_MAX`], each moved by
/// up to ±[`JITTER`] at random.
#[derive(Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: BACKOFF_FIRST,
        }
    }
}

impl Backoff {
    /// The next wait.
    pub(super) fn next_wait(&mut self) -> Duration {
        let base = self.next;
        self.next = (base * 2).min(BACKOFF_MAX);
        jittered(base).min(BACKOFF_MAX)
    }

    /// The watch works: the next failure waits [`BACKOFF_FIRST`].
    pub(super) fn reset(&mut self) {
        self.next = BACKOFF_FIRST;
    }
}

/// `base` moved by up to ±[`JITTER`] at random.
pub(super) fn jittered(base: Duration) -> Duration {
    base.mul_f64(1.0 + JITTER * (2.0 * unit_random() - 1.0))
}

/// Whether `err` is a 404 to the list: the server does not serve the resource.
pub(super) fn not_served(err: &watcher::Error) -> bool {
    matches!(err, watcher::Error::InitialListFailed(e) if kind_of(e) == Kind::NotFound)
}

/// A number in [0, 1), random enough to spread retries (std's randomly keyed hasher).
fn unit_random() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether `err` is the server's 410 Expired to a watch: the watcher lists next.
pub(super) fn gone(err: &watcher::Error) -> bool {
    matches!(err, watcher::Error::WatchError(status) if status.code == 410)
}

/// Whether `err` means the stream may have skipped an event, or cannot resume by itself: a
/// new watcher (a new list) is needed. A line that does not decode is an event lost while the
/// stream goes on; a watch request answered 410 (rather than a 410 ERROR event, which the
/// watcher handles by listing) would be retried from the same version for ever.
pub(super) fn needs_new_list(err: &watcher::Error) -> bool {
    match err {
        watcher::Error::WatchFailed(
            kube::Error::SerdeError(_)
            | kube::Error::LinesCodecMaxLineLengthExceeded
            | kube::Error::Api(_),
        ) => true,
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

/// A watch error as the conditions show it (the server's own words, with code and reason),
/// and its kind (404: the server does not serve the resource).
pub(super) fn describe(cluster: &str, resource: &str, err: &watcher::Error) -> (String, Kind) {
    let (step, detail, kind) = match err {
        watcher::Error::InitialListFailed(e) => ("listing", chain(e), kind_of(e)),
        watcher::Error::WatchStartFailed(e) => ("watching", chain(e), kind_of(e)),
        watcher::Error::WatchFailed(e) => ("watching", chain(e), kind_of(e)),
        watcher::Error::WatchError(status) => {
            let api = kube::Error::Api(status.clone());
            ("watching", chain(&api), kind_of(&api))
        }
        other @ watcher::Error::NoResourceVersion => ("watching", chain(other), Kind::Other),
    };
    (
        format!("{step} {resource} in cluster {cluster}: {detail}"),
        kind,
    )
}

#[cfg(test)]
mod tests;
