//! The lease record's arithmetic, with no I/O: who holds a Lease, whether it expired on our
//! clock, and the `LeaseSpec` a candidate writes to take, renew or give it up (client-go's
//! `leaderelection` rules). [`super::elector`] reads and writes; this decides what.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// `leaseDurationSeconds` for `duration`: whole seconds rounded up (others must never think
/// the lease shorter than we do), at least 1.
pub(super) fn whole_seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_micros().div_ceil(1_000_000))
        .unwrap_or(i32::MAX)
        .max(1)
}

/// Now, at the microsecond precision the API server keeps (`MicroTime`).
pub(super) fn now() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now)
}

/// The holder of a lease record; empty when nobody holds it.
pub(super) fn holder(spec: &LeaseSpec) -> &str {
    spec.holder_identity.as_deref().unwrap_or_default()
}

/// Whether the record, first seen unchanged at `seen`, is still within its
/// `leaseDurationSeconds` at `now` (client-go's `isLeaseValid`).
pub(super) fn unexpired(spec: &LeaseSpec, seen: Instant, now: Instant) -> bool {
    let seconds = u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0);
    seen + Duration::from_secs(seconds) > now
}

/// Whether `identity` may take a Lease whose record is `spec`, first seen at `seen`: nobody
/// holds it, we do, or the holder let it expire.
pub(super) fn may_take(spec: &LeaseSpec, seen: Instant, now: Instant, identity: &str) -> bool {
    let holder = holder(spec);
    holder.is_empty() || holder == identity || !unexpired(spec, seen, now)
}

/// The record `identity` writes to acquire or renew over `old` (`None`: creating the Lease).
/// Renewing keeps acquireTime and leaseTransitions; a new holder counts one more transition.
pub(super) fn claim(
    old: Option<&LeaseSpec>,
    identity: &str,
    lease_seconds: i32,
    now: Timestamp,
) -> LeaseSpec {
    let mut record = LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(lease_seconds),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    };
    match old {
        Some(old) if holder(old) == identity => {
            record.acquire_time = old.acquire_time.clone();
            record.lease_transitions = Some(old.lease_transitions.unwrap_or(0));
        }
        Some(old) => record.lease_transitions = Some(old.lease_transitions.unwrap_or(0) + 1),
        None => {}
    }
    record
}

/// The record the leader writes to give the Lease up (client-go's `ReleaseOnCancel`): no
/// holder, a one-second duration, the transitions kept.
pub(super) fn released(old: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(old.lease_transitions.unwrap_or(0)),
        ..LeaseSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_by(holder: &str, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(MicroTime(Timestamp::from_second(100).unwrap())),
            renew_time: Some(MicroTime(Timestamp::from_second(200).unwrap())),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn a_held_lease_is_taken_only_once_it_expired_on_our_clock() {
        let seen = Instant::now();
        let spec = held_by("other", 15);
        assert!(!may_take(&spec, seen, seen, "me"));
        assert!(!may_take(
            &spec,
            seen,
            seen + Duration::from_millis(14_999),
            "me"
        ));
        assert!(may_take(&spec, seen, seen + Duration::from_secs(15), "me"));
        assert!(may_take(&spec, seen, seen + Duration::from_secs(60), "me"));
    }

    #[test]
    fn expiry_ignores_the_holders_clock() {
        // renewTime lies far in the past (a skewed holder clock): still held, because we saw
        // the record change just now.
        let seen = Instant::now();
        let mut spec = held_by("other", 15);
        spec.renew_time = Some(MicroTime(at(0)));
        assert!(!may_take(&spec, seen, seen + Duration::from_secs(1), "me"));
    }

    #[test]
    fn a_free_or_own_lease_is_taken_at_once() {
        let seen = Instant::now();
        assert!(may_take(&held_by("", 15), seen, seen, "me"));
        assert!(may_take(&LeaseSpec::default(), seen, seen, "me"));
        assert!(may_take(&held_by("me", 15), seen, seen, "me"));
    }

    #[test]
    fn creating_writes_us_as_holder_with_no_transitions() {
        let record = claim(None, "me", 15, at(500));
        assert_eq!(record.holder_identity.as_deref(), Some("me"));
        assert_eq!(record.lease_duration_seconds, Some(15));
        assert_eq!(record.acquire_time, Some(MicroTime(at(500))));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(0));
    }

    #[test]
    fn taking_over_counts_a_transition_and_restarts_acquire_time() {
        let record = claim(Some(&held_by("other", 30)), "me", 15, at(500));
        assert_eq!(record.holder_identity.as_deref(), Some("me"));
        assert_eq!(record.lease_duration_seconds, Some(15));
        assert_eq!(record.acquire_time, Some(MicroTime(at(500))));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(4));
    }

    #[test]
    fn taking_a_released_lease_counts_a_transition() {
        let free = released(&held_by("other", 15), at(400));
        assert_eq!(
            claim(Some(&free), "me", 15, at(500)).lease_transitions,
            Some(4)
        );
    }

    #[test]
    fn renewing_moves_only_renew_time() {
        let record = claim(Some(&held_by("me", 15)), "me", 15, at(500));
        assert_eq!(record.acquire_time, Some(MicroTime(at(100))));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(3));
    }

    #[test]
    fn releasing_empties_the_holder_and_shortens_the_lease() {
        let record = released(&held_by("me", 15), at(500));
        assert_eq!(record.holder_identity.as_deref(), Some(""));
        assert_eq!(record.lease_duration_seconds, Some(1));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(3));
        assert!(may_take(&record, Instant::now(), Instant::now(), "next"));
    }

    #[test]
    fn the_recorded_duration_rounds_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_secs(15)), 15);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
    }
}
