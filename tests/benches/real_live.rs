//! A live change during a cold start on real API servers (BENCHMARKS.md, "Live changes during a
//! cold start"): the scenario of `tests/tests/real_sync_live.rs` (tests/src/envtest/cold_start.rs)
//! on a fresh fleet per run, a hub and three members, each a real kube-apiserver v1.36 with etcd
//! (tests/src/envtest): `REAL_LIVE_MCS` MultiClusterServices made before the controller starts;
//! `REAL_LIVE_AFTER` seconds after its spawn (later if it has not started a pass by then), the
//! provider slice of the last MCS by name, the last its backlog reaches, gets a new address.
//! Timed from just before that PATCH to the watch event showing it in each of the two
//! consumers; beside it, the MCSs without their copy in each consumer then, and the time from
//! the spawn until every copy is in place. `REAL_LIVE_RUNS` runs, and their median.
//!
//! Settings (defaults in brackets): `REAL_LIVE_MCS` [300], `REAL_LIVE_RUNS` [3],
//! `REAL_LIVE_WORKERS` [8], `REAL_LIVE_AFTER` [1] (seconds), `REAL_LIVE_LOG` [info] (the
//! controller's RUST_LOG; its log is printed after each run when set), `REAL_LIVE_BIN` [the
//! workspace's release `mcs-policy`].
//!
//! `cargo bench -p tests --bench real_live` (after `cargo build --release -p mcs-policy`).

use std::path::PathBuf;
use std::time::Duration;

use tests::envtest::cold_start::{CONSUMERS, Outcome, Settings, create_mcss, live_change};
use tests::envtest::fleet::Fleet;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} does not parse")),
        Err(_) => default,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mcss: usize = env("REAL_LIVE_MCS", 300);
    let runs: usize = env("REAL_LIVE_RUNS", 3);
    let log_set = std::env::var_os("REAL_LIVE_LOG").is_some();
    let settings = Settings {
        mcss,
        binary: std::env::var_os("REAL_LIVE_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| tests::binary("mcs-policy")),
        workers: env("REAL_LIVE_WORKERS", 8),
        after: Duration::from_secs_f64(env("REAL_LIVE_AFTER", 1.0)),
        log: env("REAL_LIVE_LOG", "info".to_string()),
        deadline: Duration::from_secs(120),
        await_every_copy: true,
    };
    println!(
        "real_live: {mcss} MCSs, provider member1, consumers {CONSUMERS:?}, --workers {}, change \
         {:.1} s after the spawn at the earliest, controller {}",
        settings.workers,
        settings.after.as_secs_f64(),
        settings.binary.display()
    );
    println!(
        "| run | change made | last MCS copied before | change in {} / {} | MCSs without their \
         copy then | every copy in place |",
        CONSUMERS[0], CONSUMERS[1]
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut outcomes: Vec<Outcome> = Vec::new();
    for run in 1..=runs {
        let mut fleet = Fleet::start(&format!("bench-{run}"), &["member1", "member2", "member3"]);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let outcome = runtime.block_on(async {
            create_mcss(&fleet, mcss).await;
            live_change(&mut fleet, &settings).await
        });
        println!(
            "| {run} | {:.2} s | {} | {:.3} / {:.3} s | {} / {} (of {mcss}) | {:.2} s |",
            seconds(outcome.changed_after),
            if outcome.last_copied_before {
                "yes"
            } else {
                "no"
            },
            seconds(outcome.reached[0]),
            seconds(outcome.reached[1]),
            outcome.waiting[0],
            outcome.waiting[1],
            seconds(outcome.all_copied.unwrap_or_default()),
        );
        if log_set {
            println!("--- the controller's log, run {run}:\n{}", fleet.log());
        }
        outcomes.push(outcome);
    }
    let every = |o: &Outcome| seconds(o.reached.iter().copied().max().unwrap());
    let first = |o: &Outcome| seconds(o.reached.iter().copied().min().unwrap());
    println!(
        "median of {runs}: the change in the first consumer {:.3} s, in every consumer {:.3} s; \
         MCSs without their copy then (fewest of the two consumers) {:.0}; every copy in place \
         {:.2} s",
        median(outcomes.iter().map(first).collect()),
        median(outcomes.iter().map(every).collect()),
        median(
            outcomes
                .iter()
                .map(|o| *o.waiting.iter().min().unwrap() as f64)
                .collect()
        ),
        median(
            outcomes
                .iter()
                .map(|o| seconds(o.all_copied.unwrap_or_default()))
                .collect()
        ),
    );
}
