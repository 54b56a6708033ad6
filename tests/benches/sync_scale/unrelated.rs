//! Memory: what MultiClusterServices name (phase `unrelated`: objects no MCS names in one
//! member).

use super::*;

/// One run of the `unrelated` phase: the cold start's world, with or without unrelated objects
/// in the first member.
pub(crate) struct UnrelatedRow {
    /// Services and slices no MCS names, in the first member.
    pub(crate) services: usize,
    pub(crate) slices: usize,
    pub(crate) preload: Duration,
    /// Until every expected copy was in every consumer.
    pub(crate) copies: Option<Duration>,
    pub(crate) hwm_kib: u64,
    pub(crate) rss_kib: u64,
    /// Passes run until converged (plus 2 s).
    pub(crate) reconciles: f64,
    /// Passes run while `edits` unrelated slices were changed (and 2 s after).
    pub(crate) reconciles_on_edits: f64,
    pub(crate) edits: usize,
    /// Objects cached: endpointslices, services.
    pub(crate) cached: (f64, f64),
    pub(crate) heap: f64,
    pub(crate) controller_cpu: f64,
}

/// `SYNC_BENCH_UNRELATED_SERVICES` (10000) and `SYNC_BENCH_UNRELATED_SLICES` (20000).
pub(crate) fn unrelated_sizes() -> (usize, usize) {
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
pub(crate) async fn unrelated(settings: &Settings) {
    let (services, slices) = unrelated_sizes();
    let rows = vec![
        unrelated_run(settings, 0, 0).await,
        unrelated_run(settings, services, slices).await,
    ];
    print_unrelated_table(settings, &rows);
}

/// `(URL, collection path, body)` of `services` Services `unrelated-<i>` in the first member,
/// and `slices` slices spread over them.
pub(crate) fn unrelated_requests(
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

pub(crate) async fn unrelated_run(
    settings: &Settings,
    services: usize,
    slices: usize,
) -> UnrelatedRow {
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

pub(crate) fn print_unrelated_table(settings: &Settings, rows: &[UnrelatedRow]) {
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
