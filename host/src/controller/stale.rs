//! Which unreadable providers keep their copies. A provider that cannot be read this pass
//! (not ready, or its list failed) may still serve its endpoints, so the copies made from its
//! slices stay in the consumers (Karmada's behaviour): they are the `kept-sources` of the
//! component's `prune`. Everything else is pruned as usual — other providers' deleted slices,
//! copies in members that are no longer consumers. `--stale-endpoint-timeout` (beyond Karmada)
//! limits how long: a provider unreadable for longer than the timeout keeps nothing, its
//! copies are then withdrawn as if it had no slices.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per MCS uid: provider → the instant it was first seen unreadable.
pub type UnreadableSince = Arc<Mutex<HashMap<String, BTreeMap<String, Instant>>>>;

/// Updates `since` (one MCS's providers) with this pass's `unreadable` providers and returns
/// those whose copies stay: every unreadable provider without a timeout; with one, those that
/// have not been unreadable for longer than `timeout`.
pub fn kept_sources(
    since: &mut BTreeMap<String, Instant>,
    unreadable: &[String],
    timeout: Option<Duration>,
    now: Instant,
) -> Vec<String> {
    since.retain(|p, _| unreadable.contains(p));
    let Some(timeout) = timeout else {
        since.clear();
        return unreadable.to_vec();
    };
    unreadable
        .iter()
        .filter(|p| {
            let first = *since.entry((*p).clone()).or_insert(now);
            now.duration_since(first) <= timeout
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_unreadable_provider_keeps_its_copies_until_the_timeout() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut since = BTreeMap::new();
        assert!(kept_sources(&mut since, &[], Some(s), t0).is_empty());
        // m1 goes away: kept.
        assert_eq!(
            kept_sources(&mut since, &names(&["m1"]), Some(s), t0),
            names(&["m1"])
        );
        assert_eq!(
            kept_sources(&mut since, &names(&["m1"]), Some(s), t0 + s),
            names(&["m1"])
        );
        // m2 goes away too; m1 is past the timeout, m2 is not.
        let t2 = t0 + Duration::from_millis(1500);
        assert_eq!(
            kept_sources(&mut since, &names(&["m1", "m2"]), Some(s), t2),
            names(&["m2"])
        );
        // m2 readable again: m1 alone, past the timeout.
        assert!(kept_sources(&mut since, &names(&["m1"]), Some(s), t2).is_empty());
        assert!(!since.contains_key("m2"));
        // m1 readable again, then away again: the clock restarts.
        assert!(kept_sources(&mut since, &[], Some(s), t2).is_empty());
        assert!(since.is_empty());
        assert_eq!(
            kept_sources(&mut since, &names(&["m1"]), Some(s), t2),
            names(&["m1"])
        );
    }

    #[test]
    fn without_a_timeout_an_unreadable_provider_keeps_its_copies_for_ever() {
        let t0 = Instant::now();
        let mut since = BTreeMap::new();
        let later = t0 + Duration::from_secs(3600);
        assert_eq!(
            kept_sources(&mut since, &names(&["m1"]), None, t0),
            names(&["m1"])
        );
        assert_eq!(
            kept_sources(&mut since, &names(&["m1"]), None, later),
            names(&["m1"])
        );
        assert!(kept_sources(&mut since, &[], None, later).is_empty());
        assert!(since.is_empty());
    }
}
