//! Propagation latency (the first of the bench's measures): sequential provider writes timed
//! to every consumer, and helpers the other phases share (the copies' watches, one write,
//! percentiles).

use super::*;

pub(crate) async fn latency(settings: &Settings, members: usize) {
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
pub(crate) fn print_requests_per_write(requests: &[Request], writes: usize) {
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
pub(crate) fn print_requests_by_kind(requests: &[Request]) {
    println!(
        "API authorization checks (all clusters; an apply that creates is checked as patch and create): {} in all: {:?}",
        requests.len(),
        by_kind(requests.iter())
    );
}

/// How many of `requests` there are of each verb and resource, sorted.
pub(crate) fn by_kind<'a>(requests: impl Iterator<Item = &'a Request>) -> Vec<(String, usize)> {
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
pub(crate) fn consumers(members: usize, provider: usize) -> impl Iterator<Item = usize> {
    (0..members).filter(move |c| *c != provider)
}

/// The next event, or `None` once `deadline` passed (or every watch ended).
pub(crate) async fn next_before(
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
pub(crate) struct Copies(pub(crate) HashMap<(usize, String), String>);

impl Copies {
    pub(crate) fn record(&mut self, event: &WatchEvent) {
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

    pub(crate) fn has(&self, key: &(usize, String)) -> bool {
        self.0.contains_key(key)
    }

    pub(crate) fn address(&self, member: usize, name: &str) -> Option<&str> {
        self.0.get(&(member, name.to_string())).map(String::as_str)
    }
}

/// PUTs MCS `m`'s native slice with a new address; returns the time until the first and until
/// the last consumer's watch delivered the new copy, or `None` after [`WRITE_DEADLINE`].
pub(crate) async fn one_write(
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

pub(crate) fn print_latencies(what: &str, samples: &mut [Duration]) {
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
pub(crate) fn print_histogram_delta(before: &str, after: &str) {
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
