//! Cold start (the second measure): every copy from a standing start, the controller's memory
//! and CPU.

use super::*;

/// One cold start's numbers.
pub(crate) struct ColdRow {
    pub(crate) workers: u16,
    pub(crate) preload: Duration,
    /// Until every expected copy was in every consumer (or `None`: did not converge).
    pub(crate) copies: Option<Duration>,
    /// Until every MCS had `EndpointSliceDispatched=True`.
    pub(crate) dispatched: Option<Duration>,
    pub(crate) found_copies: usize,
    pub(crate) expected_copies: usize,
    pub(crate) services: usize,
    pub(crate) hwm_kib: u64,
    pub(crate) rss_kib: u64,
    pub(crate) controller_cpu: f64,
    /// The kube-sims' CPU from the controller's start (the preload is printed apart).
    pub(crate) sims_cpu: f64,
    /// This benchmark's own CPU over the same time (mostly its watches of the copies).
    pub(crate) bench_cpu: f64,
    pub(crate) metrics: String,
    /// One resync at rest, once converged.
    pub(crate) resync: Option<ResyncRow>,
}

/// One resync window at rest.
pub(crate) struct ResyncRow {
    /// From just after one resync's passes to just after the next one's.
    pub(crate) window: Duration,
    /// Controller CPU over the window.
    pub(crate) cpu: f64,
    /// Controller CPU per second while idle (measured just before the window).
    pub(crate) idle_rate: f64,
    /// Passes run in the window (one per MCS expected).
    pub(crate) reconciles: f64,
    /// API requests (watches left out) every cluster received in the window, and of them reads.
    pub(crate) requests: usize,
    pub(crate) reads: usize,
}

pub(crate) async fn cold_start(settings: &Settings, workers: u16) -> ColdRow {
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

/// Per member, the names of the copies it must hold: two per MCS it does not provide.
pub(crate) fn expected_copies(fleet: &Fleet, all: &[Mcs]) -> Vec<HashSet<String>> {
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
pub(crate) async fn await_copies(
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
pub(crate) async fn await_dispatched(
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

pub(crate) fn dispatched(mcs: &Value) -> bool {
    let conditions = mcs["status"]["conditions"].as_array();
    conditions
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "EndpointSliceDispatched" && c["status"] == "True")
}

/// Our copies and all Services in namespace `ns`, summed over the members (one list each).
pub(crate) async fn count_listed(fleet: &Fleet, ns: &str) -> (usize, usize) {
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

pub(crate) fn print_cold_details(fleet: &Fleet, row: &ColdRow, elapsed: Duration) {
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

pub(crate) fn print_cold_table(settings: &Settings, rows: &[ColdRow]) {
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
