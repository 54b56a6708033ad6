//! `--stale-endpoint-timeout` (SPEC §4.8, beyond Karmada): a provider unreadable for longer
//! than the timeout counts as read with zero slices, so its copies are pruned.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per MCS uid: provider → the instant it was first seen unreadable.
pub type Memory = Arc<Mutex<HashMap<String, BTreeMap<String, Instant>>>>;

/// Updates `since` (one MCS's providers) with this pass's `unreadable` providers and answers
/// whether pruning may run: with no timeout only when every provider was read; with one, when
/// every unreadable provider has been so for longer than `timeout` (its copies then count as
/// undesired).
pub fn may_prune(
    since: &mut BTreeMap<String, Instant>,
    unreadable: &[String],
    timeout: Option<Duration>,
    now: Instant,
) -> bool {
    since.retain(|p, _| unreadable.contains(p));
    let Some(timeout) = timeout else {
        since.clear();
        return unreadable.is_empty();
    };
    unreadable.iter().all(|p| {
        let first = *since.entry(p.clone()).or_insert(now);
        now.duration_since(first) > timeout
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn prunes_only_once_every_unreadable_provider_is_past_the_timeout() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut since = BTreeMap::new();
        assert!(may_prune(&mut since, &[], Some(s), t0));
        // m1 goes away: not yet.
        assert!(!may_prune(&mut since, &names(&["m1"]), Some(s), t0));
        assert!(!may_prune(&mut since, &names(&["m1"]), Some(s), t0 + s));
        // m2 goes away too; m1 is past the timeout but m2 is not.
        let t2 = t0 + Duration::from_millis(1500);
        assert!(!may_prune(&mut since, &names(&["m1", "m2"]), Some(s), t2));
        // m2 readable again: m1 alone, past the timeout.
        assert!(may_prune(&mut since, &names(&["m1"]), Some(s), t2));
        assert!(!since.contains_key("m2"));
        // m1 readable again, then away again: the clock restarts.
        assert!(may_prune(&mut since, &[], Some(s), t2));
        assert!(since.is_empty());
        assert!(!may_prune(&mut since, &names(&["m1"]), Some(s), t2));
    }

    #[test]
    fn without_a_timeout_an_unreadable_provider_blocks_pruning() {
        let t0 = Instant::now();
        let mut since = BTreeMap::new();
        let later = t0 + Duration::from_secs(3600);
        assert!(!may_prune(&mut since, &names(&["m1"]), None, t0));
        assert!(!may_prune(&mut since, &names(&["m1"]), None, later));
        assert!(may_prune(&mut since, &[], None, later));
        assert!(since.is_empty());
    }
}
