//! `SYNC_BENCH_PHASES=fleet`: a fleet with a realistic spread, one run per size of
//! `SYNC_BENCH_MEMBERS` (a list; 255 when unset). Each MCS has 2–3 providers and 3–5
//! consumers ([`Plan::new`]); `SYNC_BENCH_FLEET_EXPORTS` Services are exported with the upstream
//! API from members serving its CRDs (all but every 5th), and every one of those members
//! imports every export. Per size, on one fleet of kube-sims: the controller's RSS over the
//! hub and one empty member and over all the empty members (before anything is preloaded),
//! then the cold start to every copy and every import against the machine's floor, the fleet
//! at rest (requests through a resync), live changes at rest, peak RSS, heap per cached object
//! and RSS per member.

use super::*;

/// `SYNC_BENCH_MEMBERS` for this phase (255 when unset), `SYNC_BENCH_FLEET_MCS` (MCSs per
/// member, 2) and `SYNC_BENCH_FLEET_EXPORTS` (10).
fn fleet_sizes() -> (Vec<usize>, usize, usize) {
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or(default.to_string());
    let list = var("SYNC_BENCH_MEMBERS", "255");
    let sizes = list
        .split(',')
        .map(|s| s.trim().parse().expect("SYNC_BENCH_MEMBERS: numbers"))
        .collect();
    let num = |name: &str, default: &str| -> usize {
        var(name, default)
            .parse()
            .unwrap_or_else(|_| panic!("{name}: a number"))
    };
    (
        sizes,
        num("SYNC_BENCH_FLEET_MCS", "2"),
        num("SYNC_BENCH_FLEET_EXPORTS", "10"),
    )
}

/// Live changes made at rest, per size.
const LIVE_ROUNDS: usize = 5;

/// One size's numbers.
pub(crate) struct FleetRow {
    pub(crate) members: usize,
    pub(crate) serving: usize,
    pub(crate) mcs: usize,
    pub(crate) exports: usize,
    pub(crate) converged: Converged,
    /// From the controller's start until every copy and every import was in place.
    pub(crate) all: Option<Duration>,
    /// CPU-seconds from the controller's start to convergence: controller, kube-sims, bench.
    pub(crate) cpu: (f64, f64, f64),
    /// CPU-seconds the machine's other processes spent meanwhile.
    pub(crate) others: f64,
    /// The live rounds: to every consumer, to every importer.
    pub(crate) live: Vec<(Option<Duration>, Option<Duration>)>,
    pub(crate) rest: Option<Rest>,
    /// VmRSS (KiB) of the controller over the hub and one empty member (the baseline: it runs
    /// with no fewer), over all the empty members, and of the loaded controller at rest; its
    /// VmHWM.
    pub(crate) rss_one: u64,
    pub(crate) rss_idle: u64,
    pub(crate) rss_rest: u64,
    pub(crate) hwm: u64,
    pub(crate) heap: f64,
    /// The heap of the controller over the hub and one empty member.
    pub(crate) heap_one: f64,
    pub(crate) cached: f64,
}

impl FleetRow {
    /// The least wall the cold start's CPU needs on this machine's cores.
    pub(crate) fn floor(&self) -> f64 {
        (self.cpu.0 + self.cpu.1 + self.cpu.2) / cores() as f64
    }
}

/// `/proc/loadavg`'s 1, 5 and 15 minute averages: what else ran on the machine.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU-seconds every process of the machine has spent so far (`/proc/stat`: user, nice,
/// system, irq, softirq and steal, in 100 Hz ticks): with ours subtracted, what the other
/// work on the machine took from the cores.
fn machine_cpu() -> f64 {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = text.lines().next().unwrap_or_default();
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let busy: u64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|i| ticks.get(*i))
        .sum();
    busy as f64 / 100.0
}

pub(crate) async fn fleet(settings: &Settings) {
    let (sizes, per_member, exports) = fleet_sizes();
    let mut rows = Vec::new();
    for &members in &sizes {
        rows.push(fleet_run(settings, members, members * per_member, exports).await);
    }
    print_fleet_table(settings, &rows);
}

async fn fleet_run(settings: &Settings, members: usize, mcs: usize, exports: usize) -> FleetRow {
    let ns = "fleet";
    println!("\nload average before: {}", load_average());
    let started = Instant::now();
    let mut fleet = Fleet::start(&format!("fleet-{members}"), members).await;
    let plan = Plan::new(members, mcs, exports);
    println!(
        "\n== fleet: hub + {members} members ({} serving the upstream CRDs), {mcs} MCS (2-3 providers, 3-5 consumers each), {exports} ServiceExports; --workers {}, --resync-interval {}; {} kube-sims started in {:.1} s",
        plan.serving(),
        settings.workers[0],
        settings.resync,
        fleet.sims.len(),
        started.elapsed().as_secs_f64()
    );
    for (index, (_, url)) in fleet.members.iter().enumerate() {
        if plan.crds[index] {
            for file in clusterset::UPSTREAM_CRDS {
                post(&fleet.http, url, CRDS, &crd(file)).await;
            }
        }
    }
    let limit = settings.timeout;
    let (rss_one, heap_one) = rss_over(&mut fleet, settings, 1, limit).await;
    let (rss_idle, _) = rss_over(&mut fleet, settings, members, limit).await;

    fleet.ensure_namespace(ns).await;
    let started = Instant::now();
    preload(&fleet.http, plan.requests(&fleet, ns)).await;
    println!("preloaded in {:.1} s", started.elapsed().as_secs_f64());
    let mut missing = Missing {
        copies: plan.expected_copies(&fleet),
        imports: plan.expected_imports(),
    };
    let mut events = watch_members(&fleet, &plan, ns).await;
    let (bench_cpu, sims_cpu) = (cpu_seconds(std::process::id()), fleet.sims_cpu());
    let machine = machine_cpu();
    fleet.start_controller(settings.workers[0], settings);
    let pid = fleet.controller_pid();
    let start = Instant::now();
    let deadline = start + settings.timeout;
    let cpu_now = || {
        (
            cpu_seconds(pid),
            fleet.sims_cpu() - sims_cpu,
            cpu_seconds(std::process::id()) - bench_cpu,
        )
    };
    let converged = await_converged(
        &mut events,
        &mut missing,
        members,
        (start, deadline),
        cpu_now,
    )
    .await;
    let cpu = cpu_now();
    let others = machine_cpu() - machine - (cpu.0 + cpu.1 + cpu.2);
    println!("load average after the cold start: {}", load_average());
    let all = converged
        .copies
        .zip(converged.imports)
        .map(|(a, b)| a.max(b));
    let secs = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64()));
    println!(
        "cold start: copies {}/{} after {}, imports {}/{} after {}; CPU controller {:.1} s, kube-sims {:.1} s, bench {:.1} s: floor {:.2} s on {} cores; the machine's other processes took {others:.1} CPU-s meanwhile",
        converged.found.0,
        converged.expected.0,
        secs(converged.copies),
        converged.found.1,
        converged.expected.1,
        secs(converged.imports),
        cpu.0,
        cpu.1,
        cpu.2,
        (cpu.0 + cpu.1 + cpu.2) / cores() as f64,
        cores()
    );
    if let (Some((first, at)), Some(all)) = (converged.first, all) {
        let sync = (cpu.0 - at.0) + (cpu.1 - at.1) + (cpu.2 - at.2);
        println!(
            "first copy or import after {:.2} s (the start-up: controller CPU {:.1} s by then); from there to the last: {:.2} s at a floor of {:.2} s",
            first.as_secs_f64(),
            at.0,
            (all - first).as_secs_f64(),
            sync / cores() as f64
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rest = match all {
        Some(_) => at_rest(&fleet, pid, limit).await,
        None => None,
    };
    let (rss_rest, _) = rss_kib(pid);
    let metrics = fleet.metrics().await;
    let mut live = Vec::new();
    if all.is_some() {
        for k in 0..LIVE_ROUNDS {
            let round = live_round(&fleet, &plan, &mut events, ns, k).await;
            println!(
                "live change {k}: every consumer after {}, every importer after {}",
                secs(round.0),
                secs(round.1)
            );
            live.push(round);
        }
    }
    let (_, hwm) = rss_kib(pid);
    let cached: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("mcs_policy_sync_cached_objects{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    let row = FleetRow {
        members,
        serving: plan.serving(),
        mcs,
        exports,
        converged,
        all,
        cpu,
        others,
        live,
        rest,
        rss_one,
        rss_idle,
        rss_rest,
        hwm,
        heap: metric(&metrics, "mcs_policy_sync_heap_bytes").unwrap_or(0.0),
        heap_one,
        cached,
    };
    print_fleet_row(&row);
    row
}
