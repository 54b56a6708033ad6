//! Retries of failed passes: the `error_policy` half of the kube-runtime
//! [`Controller`](kube::runtime::Controller). A MultiClusterService whose pass failed comes back
//! after a per-MCS exponential backoff (250 ms, doubling, at most 60 s), as client-go's
//! rate-limited requeue, instead of waiting for the next resync; a pass that succeeds resets it.
//!
//! kube-runtime schedules the retry (`Action::requeue`); it does not count failures in a row,
//! so that count is kept here, per MCS key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kube::runtime::controller::Action;

/// The first retry of a failed pass comes after this long; each further failure doubles it.
pub const RETRY_BASE: Duration = Duration::from_millis(250);
/// The longest wait before a failed pass is retried.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// The wait before retrying an MCS whose pass has failed `failures` times in a row.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_BASE.saturating_mul(1 << doublings).min(RETRY_MAX)
}

/// Failed passes in a row, per MCS key (`namespace/name`).
#[derive(Debug, Default)]
pub struct Retries(Mutex<HashMap<String, u32>>);

impl Retries {
    /// One more failure of `key`: the action that retries it after its backoff.
    pub fn failed(&self, key: &str) -> Action {
        let failures = match self.0.lock() {
            Ok(mut counts) => {
                let n = counts.entry(key.to_string()).or_default();
                *n = n.saturating_add(1);
                *n
            }
            Err(_) => 1,
        };
        let wait = backoff(failures);
        tracing::debug!(mcs = %key, ?wait, "retrying after a failure");
        Action::requeue(wait)
    }

    /// `key`'s pass succeeded: its next failure starts the backoff again.
    pub fn succeeded(&self, key: &str) {
        if let Ok(mut counts) = self.0.lock() {
            counts.remove(key);
        }
    }

    /// Forgets the keys `alive` rejects (MCSs that are gone).
    pub fn retain(&self, alive: impl Fn(&str) -> bool) {
        if let Ok(mut counts) = self.0.lock() {
            counts.retain(|key, _| alive(key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff(1), RETRY_BASE);
        assert_eq!(backoff(2), RETRY_BASE * 2);
        assert_eq!(backoff(3), RETRY_BASE * 4);
        assert_eq!(backoff(9), RETRY_MAX);
        assert_eq!(backoff(u32::MAX), RETRY_MAX);
    }

    #[test]
    fn failures_in_a_row_double_the_wait_until_a_pass_succeeds() {
        let retries = Retries::default();
        assert_eq!(retries.failed("shop/web"), Action::requeue(RETRY_BASE));
        assert_eq!(retries.failed("shop/web"), Action::requeue(RETRY_BASE * 2));
        assert_eq!(
            retries.failed("shop/api"),
            Action::requeue(RETRY_BASE),
            "per MCS"
        );
        retries.succeeded("shop/web");
        assert_eq!(retries.failed("shop/web"), Action::requeue(RETRY_BASE));
        retries.retain(|key| key != "shop/web");
        assert_eq!(retries.failed("shop/web"), Action::requeue(RETRY_BASE));
        assert_eq!(retries.failed("shop/api"), Action::requeue(RETRY_BASE * 2));
    }
}
