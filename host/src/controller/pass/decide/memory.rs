//! What the controller remembers of each MultiClusterService between passes, keyed by its uid:
//! facts only, which the component reads back as part of the next pass (it keeps no state and
//! has no clock). Dropped at a resync for MCSs gone from the hub.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::controller::pass::decide::quiet::Fingerprint;
use crate::engine::types::{LoadBalancerIngress, RememberedIngress, Reported};

/// One MCS's memory.
#[derive(Clone, Debug, Default)]
pub struct Remembered {
    /// Since when each member has been unreadable for this MCS without a break.
    unreadable_since: BTreeMap<String, Instant>,
    /// What each provider's load balancer reported when it was last read (as the component
    /// said to remember it).
    ingress: BTreeMap<String, Vec<LoadBalancerIngress>>,
    /// What the Events reported last (as `conclude` returned it), once every Event was written.
    pub reported: Option<Reported>,
    /// The input of the last pass, when that pass had nothing to do ([`crate::controller::pass::decide::quiet`]).
    pub quiet: Option<Fingerprint>,
}

impl Remembered {
    /// Records which members are unreadable this pass, at `now`: their clocks start (or run
    /// on), the others' stop.
    pub fn mark_unreadable(&mut self, unreadable: &[&str], now: Instant) {
        self.unreadable_since
            .retain(|m, _| unreadable.contains(&m.as_str()));
        for member in unreadable {
            self.unreadable_since
                .entry((*member).to_string())
                .or_insert(now);
        }
    }

    /// For how long `member` has been unreadable at `now` (zero when it is readable, or
    /// unreadable for the first time).
    pub fn unreadable_for(&self, member: &str, now: Instant) -> Duration {
        self.unreadable_since
            .get(member)
            .map_or(Duration::ZERO, |since| now.duration_since(*since))
    }

    /// What `member`'s load balancer last reported, if remembered.
    pub fn ingress(&self, member: &str) -> Option<Vec<LoadBalancerIngress>> {
        self.ingress.get(member).cloned()
    }

    /// Replaces the remembered load balancer entries.
    pub fn remember_ingress(&mut self, entries: Vec<RememberedIngress>) {
        self.ingress = entries
            .into_iter()
            .map(|e| (e.cluster, e.ingress))
            .collect();
    }
}

/// Every MCS's memory, by uid.
pub type RememberedByMcs = Arc<Mutex<HashMap<String, Remembered>>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unreadable_clock_runs_while_a_member_stays_unreadable_and_restarts_after() {
        let mut memory = Remembered::default();
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        // The durations of a pass at `at` that finds `unreadable` unreadable.
        let mut pass = |unreadable: &[&str], at: Instant| {
            memory.mark_unreadable(unreadable, at);
            [
                memory.unreadable_for("m1", at),
                memory.unreadable_for("m2", at),
            ]
        };
        assert_eq!(pass(&["m1"], t0), [Duration::ZERO; 2]);
        assert_eq!(pass(&["m1"], t0 + s), [s, Duration::ZERO]);
        assert_eq!(pass(&["m1", "m2"], t0 + 2 * s), [2 * s, Duration::ZERO]);
        // m1 readable again: its clock is gone; m2's runs on.
        assert_eq!(pass(&["m2"], t0 + 3 * s), [Duration::ZERO, s]);
        // m1 unreadable again: its clock starts afresh.
        assert_eq!(pass(&["m1"], t0 + 4 * s), [Duration::ZERO; 2]);
    }
}
