//! Which members lack which namespaces, as the clusterset side's writes found: per member and
//! namespace, when to try again and how long the wait after that will be. A write refused for
//! a missing namespace shuts the gate of that member and namespace; while it is shut, no pass
//! writes there, so a member is asked about a namespace at most once per wait whatever the
//! number of exported names in it. One set of gates per controller (held by its
//! [`Keys`](super::keys::Keys)).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The first wait, and the longest.
pub const FIRST: Duration = Duration::from_secs(1);
pub const LONGEST: Duration = Duration::from_secs(60);

/// The shut gates of one controller, by `(cluster, namespace)`.
#[derive(Default)]
pub struct NamespaceGates {
    shut: Mutex<HashMap<(String, String), Shut>>,
}

struct Shut {
    until: Instant,
    wait: Duration,
}

impl NamespaceGates {
    fn shut_gates(&self) -> MutexGuard<'_, HashMap<(String, String), Shut>> {
        self.shut.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How long until the gate opens, `None` when it is open. A shut gate whose time has come
    /// lets this pass through and stays shut for the others (this pass tries the namespace).
    pub fn closed(&self, cluster: &str, namespace: &str) -> Option<Duration> {
        let mut gates = self.shut_gates();
        let gate = gates.get_mut(&(cluster.to_string(), namespace.to_string()))?;
        let now = Instant::now();
        if now >= gate.until {
            gate.until = now + gate.wait;
            return None;
        }
        Some(gate.until - now)
    }

    /// The namespace is missing: shuts the gate, or doubles its wait (at most [`LONGEST`]);
    /// answers the wait.
    pub fn shut(&self, cluster: &str, namespace: &str) -> Duration {
        let mut gates = self.shut_gates();
        let key = (cluster.to_string(), namespace.to_string());
        let wait = match gates.get(&key) {
            None => FIRST,
            Some(gate) => (gate.wait * 2).min(LONGEST),
        };
        gates.insert(
            key,
            Shut {
                until: Instant::now() + wait,
                wait,
            },
        );
        wait
    }

    /// A write went through: the namespace exists.
    pub fn open(&self, cluster: &str, namespace: &str) {
        let mut gates = self.shut_gates();
        if !gates.is_empty() {
            gates.remove(&(cluster.to_string(), namespace.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{FIRST, LONGEST, NamespaceGates};

    #[test]
    fn a_missing_namespace_shuts_its_gate_doubling_the_wait_up_to_a_minute_until_a_write_goes_through()
     {
        let gates = NamespaceGates::default();
        let other = NamespaceGates::default();
        assert_eq!(gates.closed("member2", "payments"), None, "open at first");
        assert_eq!(gates.shut("member2", "payments"), FIRST);
        let wait = gates.closed("member2", "payments").expect("shut");
        assert!(wait <= FIRST);
        assert_eq!(
            gates.closed("member3", "payments"),
            None,
            "another member's gate is its own"
        );
        assert_eq!(
            other.closed("member2", "payments"),
            None,
            "another controller's gate is its own"
        );
        let mut waits = Vec::new();
        for _ in 0..8 {
            waits.push(gates.shut("member2", "payments"));
        }
        assert_eq!(waits[0], Duration::from_secs(2));
        assert_eq!(waits[1], Duration::from_secs(4));
        assert_eq!(*waits.last().unwrap(), LONGEST);
        gates.open("member2", "payments");
        assert_eq!(
            gates.closed("member2", "payments"),
            None,
            "open once a write went through"
        );
        assert_eq!(
            gates.shut("member2", "payments"),
            FIRST,
            "and the wait starts over"
        );
    }
}
