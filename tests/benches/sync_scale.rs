//! Scale benchmark of `mcs-policy sync` against kube-sim clusters (BENCHMARKS.md, "Sync
//! controller at scale"; run it with `scripts/bench-sync.sh`).
//!
//! 1. **Propagation latency** (a hub and `SYNC_BENCH_LATENCY_MEMBERS` members, one run per
//!    size in that list): sequential PUTs of a native EndpointSlice in a provider, each timed
//!    from just before the PUT to the moment a watch on each consumer delivers the copy with
//!    the new address; the API requests every cluster received during the writes (kube-sim's
//!    request log), per write.
//! 2. **Cold start** (a hub and `SYNC_BENCH_MEMBERS` members): `SYNC_BENCH_MCS`
//!    MultiClusterServices, their hub Services and two native slices each are preloaded, then
//!    the controller starts; timed until every expected copy is in every consumer, and until
//!    every MCS reports `EndpointSliceDispatched=True`. The controller's RSS is sampled; its
//!    heap and cached objects are read from its metrics.
//! 3. **Resync at rest** (the cold start's fleet, once converged): the API requests and the
//!    controller CPU of one `--resync-interval` window holding one resync of every MCS, with
//!    nothing changed.
//! 4. **A live change during a cold start** (phase `live`; the cold start's sizes, the first
//!    of `SYNC_BENCH_WORKERS`): `SYNC_BENCH_LIVE_AFTER` seconds after the controller starts
//!    (later if it has not started a pass by then: a change made before its caches listed is
//!    no change to it, only how things are), a PUT gives a native slice of the last MCS (the
//!    last in name order, the order the backlog serves) a new address; timed from just before
//!    the PUT until every consumer's watch shows the copy with it, beside the time until every
//!    copy is in place. Run for
//!    `SYNC_BENCH_BIN` and then, when set, for `SYNC_BENCH_BASELINE_BIN` (e.g. a build of an
//!    earlier commit), each on a fresh fleet.
//! 5. **Memory: what MultiClusterServices name** (phase `unrelated`; the cold start's sizes,
//!    the first of `SYNC_BENCH_WORKERS`): the cold start twice, each on a fresh fleet, the
//!    second time with `SYNC_BENCH_UNRELATED_SERVICES` Services and
//!    `SYNC_BENCH_UNRELATED_SLICES` slices that no MCS names in the first member; the
//!    controller's peak RSS (VmHWM), its cached objects and the passes run until converged,
//!    then while 200 of the unrelated slices are changed, side by side.
//! 6. **The upstream Multi-Cluster Services API beside an MCS** (phase `clusterset`; the first
//!    of `SYNC_BENCH_LATENCY_MEMBERS`, `SYNC_BENCH_WRITES` writes): an exported Service's
//!    endpoint change reaching every member's imported slice, and an MCS provider's reaching
//!    every consumer's copy, alternating, in one fleet (`sync_scale/clusterset.rs`).
//! 7. **Fleets** (phase `fleet`; one run per size of `SYNC_BENCH_MEMBERS`, 255 when unset):
//!    MCSs with 2–3 providers and 3–5 consumers spread over every member, ServiceExports of
//!    the upstream API imported by every member serving its CRDs; the cold start to every copy
//!    and import against the machine's floor, live changes, requests at rest, peak RSS, heap
//!    per cached object and RSS per member, loaded and idle (`sync_scale/fleet.rs`).
//!
//! The controller is `SYNC_BENCH_BIN` when set (to compare builds side by side), else the
//! workspace's release `mcs-policy`.
//!
//! Sizes come from environment variables (see [`Settings::from_env`]).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::sync::{
    CRDS, DISPATCH, MANAGED_BY, ObjectRef, Request, WatchEvent, clear_request_log, crd,
    ensure_namespace, free_addr, get, mcs_of, mcs_path, metric, native_slice_of, post, put,
    resource_requests, service_of, services_path, slices_path, start_clusters, watch,
    write_kubeconfig,
};
use tests::{KillOnDrop, binary, cpu_seconds};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

#[path = "sync_scale/clusters.rs"]
mod clusters;
#[path = "sync_scale/clusterset.rs"]
mod clusterset;
#[path = "sync_scale/cold.rs"]
mod cold;
#[path = "sync_scale/fleet.rs"]
mod fleet;
#[path = "sync_scale/fleet_plan.rs"]
mod fleet_plan;
#[path = "sync_scale/fleet_rest.rs"]
mod fleet_rest;
#[path = "sync_scale/fleet_table.rs"]
mod fleet_table;
#[path = "sync_scale/fleet_watch.rs"]
mod fleet_watch;
#[path = "sync_scale/latency.rs"]
mod latency;
#[path = "sync_scale/live.rs"]
mod live;
#[path = "sync_scale/resync.rs"]
mod resync;
#[path = "sync_scale/unrelated.rs"]
mod unrelated;
#[path = "sync_scale/workload.rs"]
mod workload;

use clusters::*;
use cold::*;
use fleet::*;
use fleet_plan::*;
use fleet_rest::*;
use fleet_table::*;
use fleet_watch::*;
use latency::*;
use live::*;
use resync::*;
use unrelated::*;
use workload::*;

/// Requests in flight while preloading.
const PRELOAD_CONCURRENCY: usize = 32;
/// Longest wait for one write of the latency run to reach every consumer.
const WRITE_DEADLINE: Duration = Duration::from_secs(5);

/// What to run, from the environment (defaults: the targets of BENCHMARKS.md).
struct Settings {
    /// `SYNC_BENCH_LATENCY_MEMBERS`, comma-separated: one latency run per value (9: ten
    /// clusters with the hub).
    latency_members: Vec<usize>,
    /// `SYNC_BENCH_LATENCY_MCS` (10).
    latency_mcs: usize,
    /// `SYNC_BENCH_WRITES` (300).
    writes: usize,
    /// `SYNC_BENCH_MEMBERS` (20; phase `fleet` takes a list, the others its first value).
    members: usize,
    /// `SYNC_BENCH_MCS` (1000).
    mcs: usize,
    /// `SYNC_BENCH_WORKERS`, comma-separated: one cold start per value (`8,32`).
    workers: Vec<u16>,
    /// `SYNC_BENCH_RESYNC` (`30s`, the controller's default).
    resync: String,
    /// `SYNC_BENCH_TIMEOUT` seconds: the cold start gives up after this long (120).
    timeout: Duration,
    /// `SYNC_BENCH_PHASES`: any of `latency`, `cold`, `live`, `unrelated`, `clusterset`,
    /// `fleet`, comma-separated
    /// (`latency,cold`).
    phases: String,
    /// `SYNC_BENCH_LIVE_AFTER` seconds: when the live phase's change is made, from the
    /// controller's start (2).
    live_after: Duration,
    /// `SYNC_BENCH_BASELINE_BIN`: a second binary the live phase runs too (none).
    baseline: Option<PathBuf>,
    /// `SYNC_BENCH_LOG`: the controller's `RUST_LOG` (`info`).
    log: String,
    /// `SYNC_BENCH_BIN`: the `mcs-policy` binary to run (default: the workspace's).
    bin: PathBuf,
    /// `SYNC_BENCH_ARGS`: more flags for `mcs-policy sync`, split at spaces (none), to compare
    /// settings side by side (e.g. `--runtime-threads 2`).
    args: Vec<String>,
}

impl Settings {
    fn from_env() -> Settings {
        let var = |name: &str, default: &str| std::env::var(name).unwrap_or(default.to_string());
        let num = |name: &str, default: usize| {
            let text = var(name, &default.to_string());
            text.parse()
                .unwrap_or_else(|_| panic!("{name}={text}: not a number"))
        };
        Settings {
            latency_members: var("SYNC_BENCH_LATENCY_MEMBERS", "9")
                .split(',')
                .map(|w| {
                    w.trim()
                        .parse()
                        .expect("SYNC_BENCH_LATENCY_MEMBERS: numbers")
                })
                .collect(),
            latency_mcs: num("SYNC_BENCH_LATENCY_MCS", 10),
            writes: num("SYNC_BENCH_WRITES", 300),
            members: first_of(&var("SYNC_BENCH_MEMBERS", "20"), "SYNC_BENCH_MEMBERS"),
            mcs: num("SYNC_BENCH_MCS", 1000),
            workers: var("SYNC_BENCH_WORKERS", "8,32")
                .split(',')
                .map(|w| w.trim().parse().expect("SYNC_BENCH_WORKERS: numbers"))
                .collect(),
            resync: var("SYNC_BENCH_RESYNC", "30s"),
            timeout: Duration::from_secs(num("SYNC_BENCH_TIMEOUT", 120) as u64),
            phases: var("SYNC_BENCH_PHASES", "latency,cold"),
            live_after: Duration::from_secs_f64(
                var("SYNC_BENCH_LIVE_AFTER", "2")
                    .parse()
                    .expect("SYNC_BENCH_LIVE_AFTER: seconds"),
            ),
            baseline: std::env::var_os("SYNC_BENCH_BASELINE_BIN").map(PathBuf::from),
            log: var("SYNC_BENCH_LOG", "info"),
            bin: std::env::var_os("SYNC_BENCH_BIN")
                .map_or_else(|| binary("mcs-policy"), PathBuf::from),
            args: var("SYNC_BENCH_ARGS", "")
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        }
    }
}

#[tokio::main]
async fn main() {
    let settings = Settings::from_env();
    print_machine();
    println!(
        "controller: {} {}",
        settings.bin.display(),
        settings.args.join(" ")
    );
    if settings.phases.contains("latency") {
        for &members in &settings.latency_members {
            latency(&settings, members).await;
        }
    }
    if settings.phases.contains("cold") {
        let mut rows = Vec::new();
        for &workers in &settings.workers {
            rows.push(cold_start(&settings, workers).await);
        }
        print_cold_table(&settings, &rows);
    }
    if settings.phases.contains("live") {
        let mut rows = vec![live(&settings, &settings.bin, "live").await];
        if let Some(baseline) = &settings.baseline {
            rows.push(live(&settings, baseline, "live-baseline").await);
        }
        print_live_table(&settings, &rows);
    }
    if settings.phases.contains("unrelated") {
        unrelated(&settings).await;
    }
    if settings.phases.contains("clusterset") {
        clusterset::clusterset(&settings).await;
    }
    if settings.phases.contains("fleet") {
        fleet::fleet(&settings).await;
    }
}

/// The first number of the comma-separated list `text` (of variable `name`).
fn first_of(text: &str, name: &str) -> usize {
    let first = text.split(',').next().unwrap_or_default().trim();
    first
        .parse()
        .unwrap_or_else(|_| panic!("{name}={text}: not a number"))
}

/// The cores this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn print_machine() {
    let cpus = cores();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib = proc_field(&meminfo, "MemTotal").unwrap_or(0);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map_or("?", |(_, m)| m.trim());
    println!(
        "machine: {cpus} cpus, {:.1} GiB, {model}",
        mem_kib as f64 / 1048576.0
    );
}

/// The number of a `Key:   123 kB` line of a /proc file.
pub(crate) fn proc_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(&format!("{key}:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
