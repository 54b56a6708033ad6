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
    DISPATCH, MANAGED_BY, ObjectRef, Request, WatchEvent, clear_request_log, ensure_namespace,
    free_addr, get, mcs_of, mcs_path, metric, native_slice_of, post, put, resource_requests,
    service_of, services_path, slices_path, start_clusters, watch, write_kubeconfig,
};
use tests::{KillOnDrop, binary, cpu_seconds};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

#[path = "sync_scale/clusterset.rs"]
mod clusterset;

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
    /// `SYNC_BENCH_MEMBERS` (20).
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
    /// comma-separated
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
            members: num("SYNC_BENCH_MEMBERS", 20),
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

// ---------------------------------------------------------------------------------------------
// The clusters and the controller

/// A hub and members (kube-sim) in a scratch directory, and the controller once started.
struct Fleet {
    http: reqwest::Client,
    hub: String,
    /// `(name, URL)` of each member, in kubeconfig order.
    members: Vec<(String, String)>,
    dir: PathBuf,
    /// Dropped (killed) before the clusters.
    controller: Option<KillOnDrop>,
    metrics: String,
    sims: Vec<KillOnDrop>,
}

impl Fleet {
    /// `hub` and `member01`..: `members` of them.
    async fn start(label: &str, members: usize) -> Fleet {
        let names: Vec<String> = std::iter::once("hub".to_string())
            .chain((1..=members).map(member_name))
            .collect();
        let http = reqwest::Client::new();
        let (sims, mut clusters) = start_clusters(&http, &names).await;
        let (_, hub) = clusters.remove(0);
        let dir = std::env::temp_dir().join(format!(
            "mcs-policy-sync-bench-{}-{label}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Fleet {
            http,
            hub,
            members: clusters,
            dir,
            controller: None,
            metrics: free_addr(),
            sims,
        }
    }

    /// Creates namespace `ns` in the hub and every member, as where the workload runs.
    async fn ensure_namespace(&self, ns: &str) {
        ensure_namespace(&self.http, &self.hub, ns).await;
        for (_, url) in &self.members {
            ensure_namespace(&self.http, url, ns).await;
        }
    }

    /// Starts `mcs-policy sync` over every cluster, its stderr in `<dir>/controller.log`.
    fn start_controller(&mut self, workers: u16, settings: &Settings) {
        self.start_binary(&settings.bin, workers, settings);
    }

    /// [`Fleet::start_controller`] with the binary `bin`.
    fn start_binary(&mut self, bin: &Path, workers: u16, settings: &Settings) {
        let mut contexts = vec![("hub", self.hub.as_str())];
        contexts.extend(self.members.iter().map(|(n, u)| (n.as_str(), u.as_str())));
        let kubeconfig = write_kubeconfig(&self.dir, &contexts);
        let log = File::create(self.log_path()).unwrap();
        let child = Command::new(bin)
            .arg("sync")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--hub", "hub", "--metrics-listen", &self.metrics])
            .args(["--workers", &workers.to_string()])
            .args(["--resync-interval", &settings.resync])
            .args(&settings.args)
            .env("RUST_LOG", &settings.log)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mcs-policy sync starts");
        self.controller = Some(KillOnDrop(child));
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("controller.log")
    }

    fn controller_pid(&self) -> u32 {
        self.controller.as_ref().expect("controller started").0.id()
    }

    /// The CPU-seconds every kube-sim of the fleet has spent so far.
    fn sims_cpu(&self) -> f64 {
        self.sims.iter().map(|s| cpu_seconds(s.0.id())).sum()
    }

    fn member_url(&self, index: usize) -> &str {
        &self.members[index].1
    }

    /// The controller's `/metrics` text (empty while it does not answer).
    async fn metrics(&self) -> String {
        let url = format!("http://{}/metrics", self.metrics);
        match self.http.get(url).send().await {
            Ok(resp) => resp.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Every cluster's URL, the hub first.
    fn urls(&self) -> Vec<&str> {
        std::iter::once(self.hub.as_str())
            .chain(self.members.iter().map(|(_, u)| u.as_str()))
            .collect()
    }

    /// Forgets the request log of every cluster.
    async fn clear_request_logs(&self) {
        for url in self.urls() {
            clear_request_log(&self.http, url).await;
        }
    }

    /// The resource requests every cluster received since the logs were cleared.
    async fn request_logs(&self) -> Vec<Request> {
        let mut all = Vec::new();
        for url in self.urls() {
            all.extend(resource_requests(&self.http, url).await);
        }
        all
    }

    /// Opens a watch of our copies in namespace `ns` on every member; events are tagged with
    /// the member's index.
    async fn watch_copies(&self, ns: &str) -> UnboundedReceiver<WatchEvent> {
        let (sender, events) = unbounded_channel();
        let path = format!(
            "{}?watch=true&labelSelector={MANAGED_BY}%3D{DISPATCH}",
            slices_path(ns)
        );
        for (index, (_, url)) in self.members.iter().enumerate() {
            watch(&self.http, url, &path, index, sender.clone()).await;
        }
        events
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.controller = None;
        self.sims.clear();
    }
}

fn member_name(index: usize) -> String {
    format!("member{index:02}")
}

// ---------------------------------------------------------------------------------------------
// The workload

/// MCS `i` of a run: its Service name and its single provider (member index `i mod members`).
struct Mcs {
    name: String,
    provider: usize,
}

fn workload(count: usize, members: usize) -> Vec<Mcs> {
    (0..count)
        .map(|i| Mcs {
            name: format!("svc-{i:04}"),
            provider: i % members,
        })
        .collect()
}

/// The copy of native slice `slice` from `provider` (the component's naming, docs/sync.md#copies-the-endpoint-filter).
fn copy_name(fleet: &Fleet, provider: usize, slice: &str) -> String {
    format!("{}-{slice}", fleet.members[provider].0)
}

/// A distinct IPv4 address per `n`.
fn address(n: usize) -> String {
    format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255)
}

/// `(URL, collection path, body)` of each object to create: per MCS its hub Service, the MCS
/// (providers = its provider, consumers = all members) and the native `slices` in the provider.
fn preload_requests(
    fleet: &Fleet,
    ns: &str,
    all: &[Mcs],
    slices: &[&str],
) -> Vec<(String, String, Value)> {
    let ports = json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]);
    let mut requests = Vec::new();
    for (i, m) in all.iter().enumerate() {
        let at = ObjectRef::new(ns, &m.name);
        let provider = &fleet.members[m.provider];
        let spec = json!({"providerClusters": [{"name": provider.0}]});
        requests.push((
            fleet.hub.clone(),
            services_path(ns),
            service_of(&at, ports.clone()),
        ));
        requests.push((fleet.hub.clone(), mcs_path(ns), mcs_of(&at, spec)));
        for (s, suffix) in slices.iter().enumerate() {
            let slice = native_slice_of(&at, &format!("{}-{suffix}", m.name), &address(i * 8 + s));
            requests.push((provider.1.clone(), slices_path(ns), slice));
        }
    }
    requests
}

/// POSTs every request, [`PRELOAD_CONCURRENCY`] at a time.
async fn preload(http: &reqwest::Client, requests: Vec<(String, String, Value)>) {
    let queue = Arc::new(Mutex::new(requests.into_iter()));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..PRELOAD_CONCURRENCY {
        let (queue, http) = (queue.clone(), http.clone());
        tasks.spawn(async move {
            loop {
                let next = queue.lock().unwrap().next();
                let Some((url, path, body)) = next else { break };
                post(&http, &url, &path, &body).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Propagation latency

async fn latency(settings: &Settings, members: usize) {
    let ns = "lat";
    let mut fleet = Fleet::start(&format!("latency-{members}"), members).await;
    let all = workload(settings.latency_mcs, members);
    let members = fleet.members.len();
    println!(
        "\n== propagation latency: hub + {members} members, {} MCS (one provider each, consumers = all members), {} sequential writes, --workers {}, --resync-interval {}",
        all.len(),
        settings.writes,
        settings.workers[0],
        settings.resync
    );
    fleet.ensure_namespace(ns).await;
    preload(&fleet.http, preload_requests(&fleet, ns, &all, &["a"])).await;
    let mut events = fleet.watch_copies(ns).await;
    fleet.start_controller(settings.workers[0], settings);
    let mut copies = Copies::default();
    let expected: Vec<(usize, String)> = all
        .iter()
        .flat_map(|m| {
            let name = copy_name(&fleet, m.provider, &format!("{}-a", m.name));
            consumers(members, m.provider).map(move |c| (c, name.clone()))
        })
        .collect();
    let started = Instant::now();
    let deadline = started + settings.timeout;
    while !expected.iter().all(|key| copies.has(key)) {
        let Some(event) = next_before(&mut events, deadline).await else {
            panic!("initial copies missing after {:?}", settings.timeout);
        };
        copies.record(&event);
    }
    println!("initial copies in place after {:.2?}", started.elapsed());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = fleet.metrics().await;
    fleet.clear_request_logs().await;
    let (cpu_before, sims_before, bench_before) = (
        cpu_seconds(fleet.controller_pid()),
        fleet.sims_cpu(),
        cpu_seconds(std::process::id()),
    );
    let mut first = Vec::new();
    let mut last = Vec::new();
    let mut missed = 0;
    for k in 0..settings.writes {
        let m = &all[k % all.len()];
        match one_write(&fleet, &mut events, &mut copies, ns, m, k).await {
            Some((to_first, to_all)) => {
                first.push(to_first);
                last.push(to_all);
            }
            None => missed += 1,
        }
    }
    let cpu = cpu_seconds(fleet.controller_pid()) - cpu_before;
    let sims = fleet.sims_cpu() - sims_before;
    let bench = cpu_seconds(std::process::id()) - bench_before;
    let after = fleet.metrics().await;
    let requests = fleet.request_logs().await;
    println!("(client side, from just before the PUT to the watch event on the consumer)");
    print_latencies("first consumer", &mut first);
    print_latencies(&format!("all {} consumers", members - 1), &mut last);
    if missed > 0 {
        println!("writes not seen in every consumer within {WRITE_DEADLINE:?}: {missed}");
    }
    print_histogram_delta(&before, &after);
    print_requests_per_write(&requests, settings.writes);
    let heap = metric(&after, "mcs_policy_sync_heap_bytes").unwrap_or(0.0);
    let per_write = |seconds: f64| seconds * 1000.0 / settings.writes as f64;
    println!(
        "controller CPU per write {:.2} ms (the {} kube-sims {:.2} ms, this benchmark {:.2} ms: on {} cores, {:.2} ms of wall at the least); heap {:.1} MB",
        per_write(cpu),
        fleet.sims.len(),
        per_write(sims),
        per_write(bench),
        cores(),
        per_write(cpu + sims + bench) / cores() as f64,
        heap / 1e6
    );
}

/// The API requests the clusters received during the writes, per write: reads (get, list)
/// and writes by the controller (the bench's own PUT of each write left out); watches are
/// long-lived and not counted.
fn print_requests_per_write(requests: &[Request], writes: usize) {
    let reads = requests.iter().filter(|r| r.is_read()).count();
    let written = requests.iter().filter(|r| r.is_write()).count();
    let controller_writes = written.saturating_sub(writes);
    let kinds = by_kind(requests.iter().filter(|r| r.verb != "watch"));
    println!(
        "API requests per write (all clusters): {:.2} reads, {:.2} controller writes (+1 the bench's PUT); in all: {kinds:?}",
        reads as f64 / writes as f64,
        controller_writes as f64 / writes as f64,
    );
}

/// The API requests the clusters received since the logs were cleared, by verb and resource
/// (watches included: one per watch opened). kube-sim logs what a real server's authorizer is
/// asked, so an apply that creates its object counts twice: `patch` and `create`.
fn print_requests_by_kind(requests: &[Request]) {
    println!(
        "API authorization checks (all clusters; an apply that creates is checked as patch and create): {} in all: {:?}",
        requests.len(),
        by_kind(requests.iter())
    );
}

/// How many of `requests` there are of each verb and resource, sorted.
fn by_kind<'a>(requests: impl Iterator<Item = &'a Request>) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for r in requests {
        *counts
            .entry(format!("{} {}", r.verb, r.resource))
            .or_default() += 1;
    }
    let mut kinds: Vec<_> = counts.into_iter().collect();
    kinds.sort();
    kinds
}

/// Consumers of an MCS whose provider is `provider`: every other member.
fn consumers(members: usize, provider: usize) -> impl Iterator<Item = usize> {
    (0..members).filter(move |c| *c != provider)
}

/// The next event, or `None` once `deadline` passed (or every watch ended).
async fn next_before(
    events: &mut UnboundedReceiver<WatchEvent>,
    deadline: Instant,
) -> Option<WatchEvent> {
    let deadline = tokio::time::Instant::from_std(deadline);
    tokio::time::timeout_at(deadline, events.recv())
        .await
        .ok()
        .flatten()
}

/// Our copies per member as the watches show them: `(member, name)` → first address.
#[derive(Default)]
struct Copies(HashMap<(usize, String), String>);

impl Copies {
    fn record(&mut self, event: &WatchEvent) {
        let key = (event.tag, event.name.clone());
        match event.kind.as_str() {
            "ADDED" | "MODIFIED" => {
                let address = event.first_address.clone().unwrap_or_default();
                self.0.insert(key, address);
            }
            "DELETED" => {
                self.0.remove(&key);
            }
            _ => {}
        }
    }

    fn has(&self, key: &(usize, String)) -> bool {
        self.0.contains_key(key)
    }

    fn address(&self, member: usize, name: &str) -> Option<&str> {
        self.0.get(&(member, name.to_string())).map(String::as_str)
    }
}

/// PUTs MCS `m`'s native slice with a new address; returns the time until the first and until
/// the last consumer's watch delivered the new copy, or `None` after [`WRITE_DEADLINE`].
async fn one_write(
    fleet: &Fleet,
    events: &mut UnboundedReceiver<WatchEvent>,
    copies: &mut Copies,
    ns: &str,
    m: &Mcs,
    k: usize,
) -> Option<(Duration, Duration)> {
    let slice = format!("{}-a", m.name);
    let copy = copy_name(fleet, m.provider, &slice);
    let new_address = address(1_000_000 + k);
    let body = native_slice_of(&ObjectRef::new(ns, &m.name), &slice, &new_address);
    let path = format!("{}/{slice}", slices_path(ns));
    let mut waiting: HashSet<usize> = consumers(fleet.members.len(), m.provider).collect();
    let start = Instant::now();
    put(&fleet.http, fleet.member_url(m.provider), &path, &body).await;
    let deadline = start + WRITE_DEADLINE;
    let mut first = None;
    while !waiting.is_empty() {
        let event = next_before(events, deadline).await?;
        copies.record(&event);
        if copies.address(event.tag, &copy) == Some(new_address.as_str())
            && waiting.remove(&event.tag)
        {
            first.get_or_insert(event.at - start);
            if waiting.is_empty() {
                return Some((first?, event.at - start));
            }
        }
    }
    None
}

fn print_latencies(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |p: f64| {
        let rank = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        ms(samples[rank - 1])
    };
    if samples.is_empty() {
        return println!("{what}: no samples");
    }
    println!(
        "{what:>18}: n={} p50={:.1} ms p90={:.1} ms p99={:.1} ms max={:.1} ms",
        samples.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        ms(samples[samples.len() - 1])
    );
}

/// The controller's own `mcs_policy_sync_propagation_seconds` over the writes.
fn print_histogram_delta(before: &str, after: &str) {
    let name = "mcs_policy_sync_propagation_seconds";
    let delta = |suffix: &str| {
        let key = format!("{name}_{suffix}");
        metric(after, &key).unwrap_or(0.0) - metric(before, &key).unwrap_or(0.0)
    };
    let (count, sum) = (delta("count"), delta("sum"));
    println!(
        "controller {name} over the writes: count={count} sum={sum:.3} s mean={:.1} ms",
        if count > 0.0 {
            sum / count * 1000.0
        } else {
            0.0
        }
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Cold start

/// One cold start's numbers.
struct ColdRow {
    workers: u16,
    preload: Duration,
    /// Until every expected copy was in every consumer (or `None`: did not converge).
    copies: Option<Duration>,
    /// Until every MCS had `EndpointSliceDispatched=True`.
    dispatched: Option<Duration>,
    found_copies: usize,
    expected_copies: usize,
    services: usize,
    hwm_kib: u64,
    rss_kib: u64,
    controller_cpu: f64,
    /// The kube-sims' CPU from the controller's start (the preload is printed apart).
    sims_cpu: f64,
    /// This benchmark's own CPU over the same time (mostly its watches of the copies).
    bench_cpu: f64,
    metrics: String,
    /// One resync at rest, once converged.
    resync: Option<ResyncRow>,
}

/// One resync window at rest.
struct ResyncRow {
    /// From just after one resync's passes to just after the next one's.
    window: Duration,
    /// Controller CPU over the window.
    cpu: f64,
    /// Controller CPU per second while idle (measured just before the window).
    idle_rate: f64,
    /// Passes run in the window (one per MCS expected).
    reconciles: f64,
    /// API requests (watches left out) every cluster received in the window, and of them reads.
    requests: usize,
    reads: usize,
}

async fn cold_start(settings: &Settings, workers: u16) -> ColdRow {
    let ns = "bench";
    let mut fleet = Fleet::start(&format!("cold-{workers}"), settings.members).await;
    let all = workload(settings.mcs, settings.members);
    let members = fleet.members.len();
    println!(
        "\n== cold start: hub + {members} members, {} MCS x 2 slices, --workers {workers}, --resync-interval {}",
        all.len(),
        settings.resync
    );
    fleet.ensure_namespace(ns).await;
    let started = Instant::now();
    let sims_before = fleet.sims_cpu();
    preload(&fleet.http, preload_requests(&fleet, ns, &all, &["a", "b"])).await;
    let preload_time = started.elapsed();
    println!(
        "preloaded {} objects in {preload_time:.2?} (kube-sims' CPU {:.1} s)",
        all.len() * 4,
        fleet.sims_cpu() - sims_before
    );
    let mut missing = expected_copies(&fleet, &all);
    let expected: usize = missing.iter().map(HashSet::len).sum();
    let mut events = fleet.watch_copies(ns).await;
    fleet.clear_request_logs().await;
    let (bench_cpu, sims_cpu) = (cpu_seconds(std::process::id()), fleet.sims_cpu());
    fleet.start_controller(workers, settings);
    let pid = fleet.controller_pid();
    let start = Instant::now();
    let deadline = start + settings.timeout;
    let copies = await_copies(&mut events, &mut missing, start, deadline, pid).await;
    let found = expected - missing.iter().map(HashSet::len).sum::<usize>();
    let dispatched = match copies {
        Some(_) => await_dispatched(&fleet, ns, all.len(), deadline).await,
        None => None,
    };
    let dispatched = dispatched.map(|at| at - start);
    match (copies, dispatched) {
        (Some(c), Some(d)) => println!(
            "converged: {expected} copies after {c:.2?}, all MCS EndpointSliceDispatched=True after {d:.2?}"
        ),
        (Some(c), None) => println!(
            "copies converged after {c:.2?}; not every MCS EndpointSliceDispatched=True within {:?}",
            settings.timeout
        ),
        _ => println!("did not converge: {found} of {expected} copies"),
    }
    print_requests_by_kind(&fleet.request_logs().await);
    let listed = count_listed(&fleet, ns).await;
    println!(
        "listed in the members: {} copies, {} services",
        listed.0, listed.1
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let sims_cpu = fleet.sims_cpu() - sims_cpu;
    let row = ColdRow {
        workers,
        preload: preload_time,
        copies,
        dispatched,
        found_copies: listed.0,
        expected_copies: expected,
        services: listed.1,
        hwm_kib: proc_field(&status, "VmHWM").unwrap_or(0),
        rss_kib: proc_field(&status, "VmRSS").unwrap_or(0),
        controller_cpu: cpu_seconds(pid),
        sims_cpu,
        bench_cpu: cpu_seconds(std::process::id()) - bench_cpu,
        metrics: fleet.metrics().await,
        resync: None,
    };
    print_cold_details(&fleet, &row, start.elapsed());
    let resync = match dispatched {
        Some(_) => resync_at_rest(&fleet, pid, all.len(), settings.timeout).await,
        None => None,
    };
    ColdRow { resync, ..row }
}

/// The controller's counter `name` now.
async fn counter(fleet: &Fleet, name: &str) -> f64 {
    metric(&fleet.metrics().await, name).unwrap_or(0.0)
}

/// How often the benchmark reads the controller's metrics while it waits for a resync. Each
/// read costs the controller ~0.2 ms of CPU (the text encoding and `mallinfo2` over a 100 MB
/// heap): ~0.1 s over a 30 s window, so the idle rate is taken at the same cadence and the
/// subtraction takes them out of the resync's own CPU.
const RESYNC_POLL: Duration = Duration::from_millis(50);

/// Waits until the resync counter moves past `passes`, then until the reconciles counter has
/// not moved for a second; `None` after `limit`.
async fn await_resync_done(fleet: &Fleet, passes: f64, limit: Duration) -> Option<()> {
    let deadline = Instant::now() + limit;
    while counter(fleet, "mcs_policy_sync_passes_total").await <= passes {
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(RESYNC_POLL).await;
    }
    let mut last = counter(fleet, "mcs_policy_sync_reconciles_total").await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = counter(fleet, "mcs_policy_sync_reconciles_total").await;
        if now == last {
            return Some(());
        }
        if Instant::now() > deadline {
            return None;
        }
        last = now;
    }
}

/// The controller's CPU-seconds per second over `span` with nothing to do, its metrics read
/// every [`RESYNC_POLL`] as while a resync is awaited.
async fn idle_rate(fleet: &Fleet, pid: u32, span: Duration) -> f64 {
    let (start, from) = (Instant::now(), cpu_seconds(pid));
    while start.elapsed() < span {
        counter(fleet, "mcs_policy_sync_passes_total").await;
        tokio::time::sleep(RESYNC_POLL).await;
    }
    (cpu_seconds(pid) - from) / start.elapsed().as_secs_f64()
}

/// One `--resync-interval` window holding one resync of every MCS, nothing changed: its
/// requests and CPU.
async fn resync_at_rest(fleet: &Fleet, pid: u32, mcs: usize, limit: Duration) -> Option<ResyncRow> {
    let passes = counter(fleet, "mcs_policy_sync_passes_total").await;
    await_resync_done(fleet, passes, limit).await?;
    // 10 s: /proc counts CPU in 10 ms ticks, so a tick more or less moves the rate by 0.001
    // s/s and the resync's own CPU by ~0.03 s (over 3 s, by ~0.09 s). It must end before the
    // next resync starts: `SYNC_BENCH_RESYNC` well above 10 s, as its default 30 s is.
    let idle_rate = idle_rate(fleet, pid, Duration::from_secs(10)).await;
    let passes = counter(fleet, "mcs_policy_sync_passes_total").await;
    let reconciles = counter(fleet, "mcs_policy_sync_reconciles_total").await;
    let quiet = counter(fleet, "mcs_policy_sync_quiet_reconciles_total").await;
    fleet.clear_request_logs().await;
    let (start, cpu) = (Instant::now(), cpu_seconds(pid));
    await_resync_done(fleet, passes, limit).await?;
    let row = ResyncRow {
        window: start.elapsed(),
        cpu: cpu_seconds(pid) - cpu,
        idle_rate,
        reconciles: counter(fleet, "mcs_policy_sync_reconciles_total").await - reconciles,
        requests: 0,
        reads: 0,
    };
    let quiet = counter(fleet, "mcs_policy_sync_quiet_reconciles_total").await - quiet;
    let requests = fleet.request_logs().await;
    let requests: Vec<_> = requests.into_iter().filter(|r| r.verb != "watch").collect();
    let row = ResyncRow {
        requests: requests.len(),
        reads: requests.iter().filter(|r| r.is_read()).count(),
        ..row
    };
    println!(
        "resync at rest ({mcs} MCS): {} passes ({quiet:.0} skipped as quiet), {} API requests ({} reads) in a {:.1} s window; controller CPU {:.2} s in the window, idle {:.3} s/s => the resync's own ~{:.2} s",
        row.reconciles,
        row.requests,
        row.reads,
        row.window.as_secs_f64(),
        row.cpu,
        row.idle_rate,
        row.cpu - row.idle_rate * row.window.as_secs_f64()
    );
    Some(row)
}

/// Per member, the names of the copies it must hold: two per MCS it does not provide.
fn expected_copies(fleet: &Fleet, all: &[Mcs]) -> Vec<HashSet<String>> {
    let mut missing = vec![HashSet::new(); fleet.members.len()];
    for m in all {
        for consumer in consumers(fleet.members.len(), m.provider) {
            for suffix in ["a", "b"] {
                let copy = copy_name(fleet, m.provider, &format!("{}-{suffix}", m.name));
                missing[consumer].insert(copy);
            }
        }
    }
    missing
}

/// Follows the copy watches until nothing is `missing` (returns the time of the event that
/// completed it, from `start`) or `deadline`; prints progress and the controller's RSS.
async fn await_copies(
    events: &mut UnboundedReceiver<WatchEvent>,
    missing: &mut [HashSet<String>],
    start: Instant,
    deadline: Instant,
    pid: u32,
) -> Option<Duration> {
    let total: usize = missing.iter().map(HashSet::len).sum();
    let mut left = total;
    let mut report = start + Duration::from_secs(5);
    while left > 0 {
        let until = deadline.min(report);
        match next_before(events, until).await {
            Some(event) if event.kind == "ADDED" || event.kind == "MODIFIED" => {
                if missing[event.tag].remove(&event.name) {
                    left -= 1;
                    if left == 0 {
                        return Some(event.at - start);
                    }
                }
            }
            Some(_) => {}
            None if Instant::now() >= deadline => return None,
            None => {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status"));
                let rss = proc_field(&status.unwrap_or_default(), "VmRSS").unwrap_or(0);
                println!(
                    "  t={:>5.1}s copies {:>6}/{total} controller RSS {} MB",
                    start.elapsed().as_secs_f64(),
                    total - left,
                    rss / 1024
                );
                report += Duration::from_secs(5);
            }
        }
    }
    Some(Duration::ZERO)
}

/// Polls the hub every 250 ms until `count` MCS report `EndpointSliceDispatched=True`;
/// returns when that was seen, `None` at `deadline`.
async fn await_dispatched(
    fleet: &Fleet,
    ns: &str,
    count: usize,
    deadline: Instant,
) -> Option<Instant> {
    while Instant::now() < deadline {
        let list = get(&fleet.http, &fleet.hub, &mcs_path(ns)).await?;
        let items = list["items"].as_array()?;
        let done = items.iter().filter(|m| dispatched(m)).count();
        if done >= count {
            return Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    None
}

fn dispatched(mcs: &Value) -> bool {
    let conditions = mcs["status"]["conditions"].as_array();
    conditions
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "EndpointSliceDispatched" && c["status"] == "True")
}

/// Our copies and all Services in namespace `ns`, summed over the members (one list each).
async fn count_listed(fleet: &Fleet, ns: &str) -> (usize, usize) {
    let copies_path = format!(
        "{}?labelSelector={MANAGED_BY}%3D{DISPATCH}",
        slices_path(ns)
    );
    let mut totals = (0, 0);
    for (_, url) in &fleet.members {
        let count =
            |list: Option<Value>| list.map_or(0, |l| l["items"].as_array().map_or(0, Vec::len));
        totals.0 += count(get(&fleet.http, url, &copies_path).await);
        totals.1 += count(get(&fleet.http, url, &services_path(ns)).await);
    }
    totals
}

fn print_cold_details(fleet: &Fleet, row: &ColdRow, elapsed: Duration) {
    let value = |name: &str| metric(&row.metrics, name).unwrap_or(0.0);
    let errors: f64 = row
        .metrics
        .lines()
        .filter(|l| l.starts_with("mcs_policy_sync_cluster_errors_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |a, b| a + b);
    let log = std::fs::read_to_string(fleet.log_path()).unwrap_or_default();
    let warnings = log.lines().filter(|l| l.contains("WARN")).count();
    println!(
        "controller: VmHWM {} MB, VmRSS {} MB; CPU {:.1} s (kube-sims {:.1} s, this benchmark's watches {:.1} s) over {:.1} s, all three from its start: on {} cores, {:.1} s of wall at the least",
        row.hwm_kib / 1024,
        row.rss_kib / 1024,
        row.controller_cpu,
        row.sims_cpu,
        row.bench_cpu,
        elapsed.as_secs_f64(),
        cores(),
        (row.controller_cpu + row.sims_cpu + row.bench_cpu) / cores() as f64,
    );
    let cached: f64 = row
        .metrics
        .lines()
        .filter(|l| l.starts_with("mcs_policy_sync_cached_objects{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    let heap = value("mcs_policy_sync_heap_bytes");
    println!(
        "caches: {cached:.0} objects ({:.0} own writes not yet watched); heap {:.1} MB = {:.0} bytes per cached object (everything on the heap counted)",
        value("mcs_policy_sync_cache_pending_writes"),
        heap / 1e6,
        if cached > 0.0 { heap / cached } else { 0.0 }
    );
    println!(
        "metrics: reconciles {} (change-driven {}) resync passes {} applied {} deleted {} cluster errors {errors:.0}; log: {} WARN lines ({})",
        value("mcs_policy_sync_reconciles_total"),
        value("mcs_policy_sync_propagation_seconds_count"),
        value("mcs_policy_sync_passes_total"),
        value("mcs_policy_sync_applied_total"),
        value("mcs_policy_sync_deleted_total"),
        warnings,
        fleet.log_path().display()
    );
}

fn print_cold_table(settings: &Settings, rows: &[ColdRow]) {
    let secs =
        |d: Option<Duration>| d.map_or("-".to_string(), |d| format!("{:.1} s", d.as_secs_f64()));
    println!(
        "\n== cold start summary: {} members, {} MCS x 2 slices, --resync-interval {}",
        settings.members, settings.mcs, settings.resync
    );
    println!(
        "| workers | preload | all copies | all Dispatched=True | copies listed | services listed | VmHWM | VmRSS after | controller CPU | kube-sim CPU | resync at rest: requests, controller CPU |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in rows {
        let resync = r.resync.as_ref().map_or("-".to_string(), |x| {
            format!(
                "{} ({} reads), {:.2} s ({:.2} s over idle)",
                x.requests,
                x.reads,
                x.cpu,
                x.cpu - x.idle_rate * x.window.as_secs_f64()
            )
        });
        println!(
            "| {} | {:.1} s | {} | {} | {}/{} | {} | {} MB | {} MB | {:.1} s | {:.1} s | {resync} |",
            r.workers,
            r.preload.as_secs_f64(),
            secs(r.copies),
            secs(r.dispatched),
            r.found_copies,
            r.expected_copies,
            r.services,
            r.hwm_kib / 1024,
            r.rss_kib / 1024,
            r.controller_cpu,
            r.sims_cpu
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. A live change during a cold start

/// One cold start with a live change.
struct LiveRow {
    bin: PathBuf,
    /// Until every expected copy was in every consumer.
    copies: Option<Duration>,
    /// When the change was made, from the controller's start.
    changed_at: Duration,
    /// Consumers that held the changed slice's copy (the old address) when the change was made.
    copied_before: usize,
    consumers: usize,
    /// From the change to the first and to the last consumer showing it.
    first: Option<Duration>,
    all: Option<Duration>,
}

/// A cold start of `bin` with one provider slice changed [`Settings::live_after`] into it, or
/// once the controller has started a pass if that is later; `label` names its directory.
async fn live(settings: &Settings, bin: &Path, label: &str) -> LiveRow {
    let ns = "bench";
    let workers = settings.workers[0];
    let mut fleet = Fleet::start(label, settings.members).await;
    let all = workload(settings.mcs, settings.members);
    let members = fleet.members.len();
    println!(
        "\n== live change during a cold start: hub + {members} members, {} MCS x 2 slices, --workers {workers}; {}",
        all.len(),
        bin.display()
    );
    fleet.ensure_namespace(ns).await;
    preload(&fleet.http, preload_requests(&fleet, ns, &all, &["a", "b"])).await;
    let mut missing = expected_copies(&fleet, &all);
    let mut left: usize = missing.iter().map(HashSet::len).sum();
    let mut events = fleet.watch_copies(ns).await;
    // The MCS the backlog reaches last: it serves the MCSs in `namespace/name` order (all are
    // in `ns`), whatever order they were created in (`svc-10000` sorts before `svc-9999`).
    let changed = all
        .iter()
        .max_by(|a, b| a.name.cmp(&b.name))
        .expect("at least one MCS");
    let slice = format!("{}-a", changed.name);
    let copy = copy_name(&fleet, changed.provider, &slice);
    let new_address = address(2_000_000);
    let body = native_slice_of(&ObjectRef::new(ns, &changed.name), &slice, &new_address);
    let (url, path) = (
        fleet.member_url(changed.provider).to_string(),
        format!("{}/{slice}", slices_path(ns)),
    );
    fleet.start_binary(bin, workers, settings);
    let start = Instant::now();
    let deadline = start + settings.timeout;
    let http = fleet.http.clone();
    let change_at = start + settings.live_after;
    let metrics = format!("http://{}/metrics", fleet.metrics);
    let change = tokio::spawn(async move {
        tokio::time::sleep_until(tokio::time::Instant::from_std(change_at)).await;
        // The controller must have listed: it has started a pass.
        loop {
            let text = match http.get(&metrics).send().await {
                Ok(resp) => resp.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if metric(&text, "mcs_policy_sync_reconciles_total").unwrap_or(0.0) > 0.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let at = Instant::now();
        put(&http, &url, &path, &body).await;
        at
    });
    let mut waiting: HashSet<usize> = consumers(members, changed.provider).collect();
    let consumers_count = waiting.len();
    let mut copies = Copies::default();
    let mut seen_at: Vec<Instant> = Vec::new();
    let mut copies_done = None;
    let mut copied_before = None;
    while left > 0 || !waiting.is_empty() {
        let Some(event) = next_before(&mut events, deadline).await else {
            break;
        };
        if copied_before.is_none() && change.is_finished() {
            copied_before = Some(
                consumers(members, changed.provider)
                    .filter(|c| copies.has(&(*c, copy.clone())))
                    .count(),
            );
        }
        copies.record(&event);
        if (event.kind == "ADDED" || event.kind == "MODIFIED")
            && missing[event.tag].remove(&event.name)
        {
            left -= 1;
            if left == 0 {
                copies_done = Some(event.at - start);
            }
        }
        if copies.address(event.tag, &copy) == Some(new_address.as_str())
            && waiting.remove(&event.tag)
        {
            seen_at.push(event.at);
        }
    }
    let changed_at = change.await.expect("the change was made");
    let after = |at: Option<&Instant>| at.map(|at| at.saturating_duration_since(changed_at));
    let row = LiveRow {
        bin: bin.to_path_buf(),
        copies: copies_done,
        changed_at: changed_at - start,
        copied_before: copied_before.unwrap_or(0),
        consumers: consumers_count,
        first: after(seen_at.first()),
        all: if waiting.is_empty() {
            after(seen_at.last())
        } else {
            None
        },
    };
    let secs =
        |d: Option<Duration>| d.map_or("-".to_string(), |d| format!("{:.2} s", d.as_secs_f64()));
    println!(
        "changed {ns}/{slice} (MCS {}) {:.2} s after the controller's start, when {} of {} consumers held its copy; first consumer showed it after {}, all after {}; every copy in place after {}",
        changed.name,
        row.changed_at.as_secs_f64(),
        row.copied_before,
        row.consumers,
        secs(row.first),
        secs(row.all),
        secs(row.copies)
    );
    row
}

fn print_live_table(settings: &Settings, rows: &[LiveRow]) {
    let secs =
        |d: Option<Duration>| d.map_or("-".to_string(), |d| format!("{:.2} s", d.as_secs_f64()));
    println!(
        "\n== live change during a cold start, summary: {} members, {} MCS x 2 slices, --workers {}, the change {:.1} s after the start",
        settings.members,
        settings.mcs,
        settings.workers[0],
        settings.live_after.as_secs_f64()
    );
    println!(
        "| controller | every copy in place | change made at | consumers with the copy then | change in the first consumer | change in every consumer |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for r in rows {
        println!(
            "| {} | {} | {:.2} s | {}/{} | {} | {} |",
            r.bin.display(),
            secs(r.copies),
            r.changed_at.as_secs_f64(),
            r.copied_before,
            r.consumers,
            secs(r.first),
            secs(r.all)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// /proc

/// The number of a `Key:   123 kB` line of a /proc file.
fn proc_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(&format!("{key}:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// ---------------------------------------------------------------------------------------------
// 5. Memory: what MultiClusterServices name

/// One run of the `unrelated` phase: the cold start's world, with or without unrelated objects
/// in the first member.
struct UnrelatedRow {
    /// Services and slices no MCS names, in the first member.
    services: usize,
    slices: usize,
    preload: Duration,
    /// Until every expected copy was in every consumer.
    copies: Option<Duration>,
    hwm_kib: u64,
    rss_kib: u64,
    /// Passes run until converged (plus 2 s).
    reconciles: f64,
    /// Passes run while `edits` unrelated slices were changed (and 2 s after).
    reconciles_on_edits: f64,
    edits: usize,
    /// Objects cached: endpointslices, services.
    cached: (f64, f64),
    heap: f64,
    controller_cpu: f64,
}

/// `SYNC_BENCH_UNRELATED_SERVICES` (10000) and `SYNC_BENCH_UNRELATED_SLICES` (20000).
fn unrelated_sizes() -> (usize, usize) {
    let num = |name: &str, default: usize| {
        std::env::var(name)
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
            })
            .unwrap_or(default)
    };
    (
        num("SYNC_BENCH_UNRELATED_SERVICES", 10_000),
        num("SYNC_BENCH_UNRELATED_SLICES", 20_000),
    )
}

/// Phase `unrelated`: the cold start's world twice, on fresh fleets, the second time with
/// Services and slices that no MCS names in the first member (in the MCSs' namespace); the
/// controller's peak RSS and passes side by side.
async fn unrelated(settings: &Settings) {
    let (services, slices) = unrelated_sizes();
    let rows = vec![
        unrelated_run(settings, 0, 0).await,
        unrelated_run(settings, services, slices).await,
    ];
    print_unrelated_table(settings, &rows);
}

/// `(URL, collection path, body)` of `services` Services `unrelated-<i>` in the first member,
/// and `slices` slices spread over them.
fn unrelated_requests(
    fleet: &Fleet,
    ns: &str,
    services: usize,
    slices: usize,
) -> Vec<(String, String, Value)> {
    let url = fleet.member_url(0).to_string();
    let ports = json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]);
    let names: Vec<String> = (0..services).map(|i| format!("unrelated-{i:05}")).collect();
    let mut requests = Vec::new();
    for name in &names {
        let at = ObjectRef::new(ns, name);
        requests.push((
            url.clone(),
            services_path(ns),
            service_of(&at, ports.clone()),
        ));
    }
    for s in 0..slices {
        let name = &names[s % services.max(1)];
        let at = ObjectRef::new(ns, name);
        let slice = native_slice_of(&at, &format!("{name}-{s:05}"), &address((1 << 20) | s));
        requests.push((url.clone(), slices_path(ns), slice));
    }
    requests
}

async fn unrelated_run(settings: &Settings, services: usize, slices: usize) -> UnrelatedRow {
    let ns = "bench";
    let workers = settings.workers[0];
    let mut fleet = Fleet::start(&format!("unrelated-{services}"), settings.members).await;
    let all = workload(settings.mcs, settings.members);
    println!(
        "\n== unrelated objects: hub + {} members, {} MCS x 2 slices; in {}: {services} Services and {slices} slices no MCS names; --workers {workers}, --resync-interval {}",
        fleet.members.len(),
        all.len(),
        fleet.members[0].0,
        settings.resync
    );
    fleet.ensure_namespace(ns).await;
    let started = Instant::now();
    preload(&fleet.http, preload_requests(&fleet, ns, &all, &["a", "b"])).await;
    preload(
        &fleet.http,
        unrelated_requests(&fleet, ns, services, slices),
    )
    .await;
    let preload_time = started.elapsed();
    println!(
        "preloaded {} objects in {preload_time:.2?}",
        all.len() * 4 + services + slices
    );
    let mut missing = expected_copies(&fleet, &all);
    let mut events = fleet.watch_copies(ns).await;
    fleet.start_controller(workers, settings);
    let pid = fleet.controller_pid();
    let start = Instant::now();
    let deadline = start + settings.timeout;
    let copies = await_copies(&mut events, &mut missing, start, deadline, pid).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reconciles = counter(&fleet, "mcs_policy_sync_reconciles_total").await;
    // Changes no MCS names: they must cost no pass.
    let edits = slices.min(200);
    let passes = counter(&fleet, "mcs_policy_sync_passes_total").await;
    for s in 0..edits {
        let name = format!("unrelated-{:05}-{s:05}", s % services.max(1));
        let mut slice = native_slice_of(
            &ObjectRef::new(ns, &format!("unrelated-{:05}", s % services.max(1))),
            &name,
            &address((2 << 20) | s),
        );
        let path = format!("{}/{name}", slices_path(ns));
        let current = get(&fleet.http, fleet.member_url(0), &path).await;
        slice["metadata"]["resourceVersion"] = current
            .map(|c| c["metadata"]["resourceVersion"].clone())
            .unwrap_or(Value::Null);
        put(&fleet.http, fleet.member_url(0), &path, &slice).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let metrics = fleet.metrics().await;
    let value = |name: &str| metric(&metrics, name).unwrap_or(0.0);
    let resyncs = value("mcs_policy_sync_passes_total") - passes;
    if resyncs > 0.0 {
        println!("note: {resyncs} resync(s) ran while the unrelated slices were edited");
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let row = UnrelatedRow {
        services,
        slices,
        preload: preload_time,
        copies,
        hwm_kib: proc_field(&status, "VmHWM").unwrap_or(0),
        rss_kib: proc_field(&status, "VmRSS").unwrap_or(0),
        reconciles,
        reconciles_on_edits: value("mcs_policy_sync_reconciles_total") - reconciles,
        edits,
        cached: (
            value("mcs_policy_sync_cached_objects{resource=\"endpointslices\"}"),
            value("mcs_policy_sync_cached_objects{resource=\"services\"}"),
        ),
        heap: value("mcs_policy_sync_heap_bytes"),
        controller_cpu: cpu_seconds(pid),
    };
    match copies {
        Some(c) => println!("converged: every copy after {c:.2?}"),
        None => println!("did not converge within {:?}", settings.timeout),
    }
    row
}

fn print_unrelated_table(settings: &Settings, rows: &[UnrelatedRow]) {
    println!(
        "\n== unrelated objects: hub + {} members, {} MCS x 2 slices, --workers {}, --resync-interval {}",
        settings.members, settings.mcs, settings.workers[0], settings.resync
    );
    println!(
        "| unrelated in one member | preload | all copies | VmHWM | VmRSS | heap | cached slices, services | passes until converged | passes on {} unrelated edits | controller CPU |",
        rows.iter().map(|r| r.edits).max().unwrap_or(0)
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in rows {
        println!(
            "| {} Services, {} slices | {:.1} s | {} | {:.1} MB | {:.1} MB | {:.1} MB | {:.0}, {:.0} | {:.0} | {:.0} | {:.1} s |",
            r.services,
            r.slices,
            r.preload.as_secs_f64(),
            r.copies.map_or("did not converge".into(), |c| format!(
                "{:.2} s",
                c.as_secs_f64()
            )),
            r.hwm_kib as f64 / 1024.0,
            r.rss_kib as f64 / 1024.0,
            r.heap / 1e6,
            r.cached.0,
            r.cached.1,
            r.reconciles,
            r.reconciles_on_edits,
            r.controller_cpu,
        );
    }
    if let [without, with] = rows {
        println!(
            "the unrelated objects add {:.1} MB to the controller's peak RSS, {:.0} passes until converged and {:.0} passes on their edits",
            (with.hwm_kib as f64 - without.hwm_kib as f64) / 1024.0,
            with.reconciles - without.reconciles,
            with.reconciles_on_edits - without.reconciles_on_edits
        );
    }
}
