//! The request log: the authorization attributes of every API request kube-sim authorized, in
//! order, for tests that check which RBAC rules a client needs (`GET /_sim/requests`).
//!
//! kube-sim has no authorizer (everything is allowed); it records what a real server's
//! authorizer would be asked: one entry per request that passed authentication, plus the extra
//! `create` check of a write that creates through PUT or server-side apply. The log keeps the
//! last [`CAPACITY`] entries; older ones are dropped and counted.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::api::Attributes;

/// Entries kept; each is a few hundred bytes, so a full log is some tens of megabytes.
pub const CAPACITY: usize = 100_000;

#[derive(Debug, Default)]
struct Entries {
    kept: VecDeque<Attributes>,
    dropped: u64,
}

/// The bounded log of authorization checks.
#[derive(Debug)]
pub struct RequestLog {
    entries: Mutex<Entries>,
    capacity: usize,
}

impl Default for RequestLog {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl RequestLog {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(Entries::default()),
            capacity,
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends one check, dropping the oldest when full.
    pub fn record(&self, attributes: Attributes) {
        let mut entries = self.entries();
        if entries.kept.len() == self.capacity {
            entries.kept.pop_front();
            entries.dropped += 1;
        }
        entries.kept.push_back(attributes);
    }

    /// `{"requests": [...], "dropped": N}`, oldest first.
    pub fn to_json(&self) -> Value {
        let entries = self.entries();
        let requests: Vec<Value> = entries.kept.iter().map(Attributes::to_json).collect();
        json!({"requests": requests, "dropped": entries.dropped})
    }

    /// Forgets every entry (and the count of dropped ones).
    pub fn clear(&self) {
        *self.entries() = Entries::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(verb: &str) -> Attributes {
        Attributes {
            verb: verb.to_owned(),
            path: "/version".to_owned(),
            ..Attributes::default()
        }
    }

    #[test]
    fn keeps_the_last_entries_in_order_and_counts_the_dropped() {
        let log = RequestLog::with_capacity(2);
        for verb in ["get", "post", "put"] {
            log.record(check(verb));
        }
        let listed = log.to_json();
        let verbs: Vec<&str> = listed["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["verb"].as_str().unwrap())
            .collect();
        assert_eq!(verbs, ["post", "put"]);
        assert_eq!(listed["dropped"], 1);
        log.clear();
        assert_eq!(log.to_json(), json!({"requests": [], "dropped": 0}));
    }
}
