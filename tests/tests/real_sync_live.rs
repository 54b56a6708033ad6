//! A live change goes first during a cold start on real API servers, as `sync_backlog_live.rs`
//! shows on kube-sim (docs/sync.md, "The order of passes"): a hub and three members, each a
//! real kube-apiserver v1.36 with etcd (tests/src/envtest), 300 MultiClusterServices made
//! before the controller starts; once it has started its first pass, the provider slice of the
//! last MCS by name (the last its backlog reaches) changes, and the change reaches both
//! consumers while most of the backlog still has no copy there.
//!
//! Why it cannot flake: the backlog is served in name order, and once the controller has heard
//! the change it hands the Controller no further bulk pass until the live one has started (the
//! passes already handed out, at most `--workers`, run before or beside it; only after a second
//! of being held does it let one pass at a time go beside). So what the consumers hold when the
//! change arrives is what the backlog did between the controller's first pass and the change being
//! heard (a poll of the metrics every 10 ms, a GET per consumer, the PATCH, one watch event),
//! plus at most `--workers` passes. With 2 workers, reaching half of the 300 MCSs first would
//! take 150 passes of about seven writes each (the finalizer and the status in the hub, the
//! Service in each member, the slice in each consumer), each a round trip through a real
//! kube-apiserver and etcd: some 500 such round trips one after another, against the handful
//! of the change. Measured here (2026-12-07, debug build, two cores under other builds): the
//! change arrived with 296 of the 300 MCSs still without their copy.

use std::time::Duration;

use tests::envtest::cold_start::{CONSUMERS, Settings, create_mcss, live_change};
use tests::envtest::fleet::Fleet;

const MCSS: usize = 300;

/// MCSs that must still be without their copy in each consumer when the change arrives.
const STILL_WAITING: usize = MCSS / 2;

#[test]
fn a_change_of_the_mcs_the_backlog_reaches_last_reaches_both_consumers_before_half_the_backlog() {
    let mut fleet = Fleet::start("live", &["member1", "member2", "member3"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let settings = Settings {
        mcss: MCSS,
        binary: tests::binary("mcs-policy"),
        workers: 2,
        after: Duration::ZERO,
        log: "info".into(),
        deadline: Duration::from_secs(60),
        // That the backlog then drains is sync_backlog_live.rs's on kube-sim: with two
        // workers of a debug build it takes most of a minute here.
        await_every_copy: false,
    };
    let outcome = runtime.block_on(async {
        create_mcss(&fleet, MCSS).await;
        live_change(&mut fleet, &settings).await
    });
    println!("{outcome:?}");
    assert!(
        !outcome.last_copied_before,
        "the backlog had reached the last MCS before the change: {outcome:?}"
    );
    for (consumer, waiting) in CONSUMERS.iter().zip(&outcome.waiting) {
        assert!(
            *waiting >= STILL_WAITING,
            "the change waited for the backlog: only {waiting} of {MCSS} MCSs were without their \
             copy in {consumer} when it arrived; the controller's log:\n{}",
            fleet.log()
        );
    }
}
