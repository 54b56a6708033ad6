//! Quiet passes: a pass is skipped when it would read exactly what the MCS's last pass read and
//! that pass had nothing to do. No rule is decided here; the component's answer is reused.
//!
//! `decide` and `conclude` are pure: the same input gives the same answer. A pass's input is
//! the [`PassRead`] (everything read from the caches, the membership, the unreadable clocks,
//! the remembered load balancer entries), what the Events reported last ([`Reported`]), the
//! settings, and, for `conclude`, the time, which only stamps `lastTransitionTime` on a
//! condition that changes: a conclusion with nothing to write has nothing to stamp (WIT
//! `conclude`). So when a pass over an MCS wrote nothing, failed nowhere, emitted no Event
//! and asked for no retry, another pass over the same input would do the same: nothing.
//!
//! The pass is [`Fingerprint`]ed: 128 bits of two independently seeded foldhash hashes of
//! that input (the WIT types derive `Hash`, so a field added to them is hashed with no change
//! here). A pass whose fingerprint equals the last quiet pass's is skipped; any change to any
//! input (a slice, a Service, the MCS, a member's readiness) gives another fingerprint and a
//! full pass. Passes with an unreadable member are never marked quiet: their clocks run, and
//! the stale timeout must be able to act.
//!
//! Measured: the resync of 1,000 MCSs × 20 members at rest, which was one `decide` and one
//! `conclude` per MCS (~0.3 ms of component time each), hashes instead (BENCHMARKS.md).

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::LazyLock;

use foldhash::quality::RandomState;

use crate::engine::types::{MemberState, PassRead, Reported};

/// Two seeds, fixed for the life of the process.
static SEEDS: LazyLock<[RandomState; 2]> = LazyLock::new(Default::default);

/// What identifies a pass's input (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint(u64, u64);

impl Fingerprint {
    /// The fingerprint of a pass reading `pass`, with `reported` remembered and the stale
    /// timeout `stale_timeout_ms`.
    pub fn of(pass: &PassRead, reported: Option<&Reported>, stale_timeout_ms: Option<u64>) -> Self {
        let [a, b] = &*SEEDS;
        let hash = |seed: &RandomState| {
            let mut hasher = seed.build_hasher();
            pass.hash(&mut hasher);
            reported.hash(&mut hasher);
            stale_timeout_ms.hash(&mut hasher);
            hasher.finish()
        };
        Fingerprint(hash(a), hash(b))
    }
}

/// Whether every member of `pass` was read (no member not ready, no read failed): only such a
/// pass may be marked quiet.
pub fn all_readable(pass: &PassRead) -> bool {
    pass.members.iter().all(|m| match &m.state {
        MemberState::NotReady(_) => false,
        MemberState::Ready(objects) => objects.slices.is_ok() && objects.service.is_ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::types::{MemberObjects, MemberRead, MemberSlices, ReadFailure};

    fn pass() -> PassRead {
        let member = |cluster: &str| MemberRead {
            cluster: cluster.into(),
            state: MemberState::Ready(MemberObjects {
                slices: Ok(MemberSlices {
                    names: "a".into(),
                    name_lengths: vec![1],
                    bodies: vec![0],
                }),
                service: Ok(Some(r#"{"kind":"Service"}"#.into())),
            }),
            unreadable_ms: 0,
            last_ingress: None,
        };
        PassRead {
            mcs: r#"{"kind":"MultiClusterService"}"#.into(),
            members: vec![member("m1"), member("m2")],
            template: Ok(None),
            slice_bodies: Vec::new(),
            slice_maps: Vec::new(),
            slice_ports: Vec::new(),
            unsynced: Vec::new(),
        }
    }

    #[test]
    fn the_same_input_has_the_same_fingerprint() {
        assert_eq!(
            Fingerprint::of(&pass(), None, Some(5)),
            Fingerprint::of(&pass(), None, Some(5))
        );
    }

    #[test]
    fn any_change_of_the_input_changes_the_fingerprint() {
        let base = Fingerprint::of(&pass(), None, None);
        let mut changes: Vec<PassRead> = Vec::new();
        let mut p = pass();
        p.mcs.push(' ');
        changes.push(p);
        let mut p = pass();
        p.members[1].unreadable_ms = 1;
        changes.push(p);
        let mut p = pass();
        p.members.swap(0, 1);
        changes.push(p);
        let mut p = pass();
        p.template = Ok(Some("{}".into()));
        changes.push(p);
        let mut p = pass();
        p.unsynced.push(crate::engine::types::UnsyncedCluster {
            cluster: "m3".into(),
            reason: "pull mode".into(),
        });
        changes.push(p);
        let mut p = pass();
        if let MemberState::Ready(o) = &mut p.members[0].state {
            o.service = Ok(None);
        }
        changes.push(p);
        for changed in &changes {
            assert_ne!(Fingerprint::of(changed, None, None), base, "{changed:?}");
        }
        assert_ne!(Fingerprint::of(&pass(), None, Some(1)), base);
    }

    #[test]
    fn a_pass_with_a_member_not_read_is_not_all_readable() {
        assert!(all_readable(&pass()));
        let mut p = pass();
        p.members[1].state = MemberState::NotReady("m2 is not ready".into());
        assert!(!all_readable(&p));
        let mut p = pass();
        if let MemberState::Ready(o) = &mut p.members[0].state {
            o.service = Err(ReadFailure {
                message: "no".into(),
                not_served: false,
            });
        }
        assert!(!all_readable(&p));
    }
}
