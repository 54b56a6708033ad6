//! A live change during a cold start (phase `live`).

use super::*;

/// One cold start with a live change.
pub(crate) struct LiveRow {
    pub(crate) bin: PathBuf,
    /// Until every expected copy was in every consumer.
    pub(crate) copies: Option<Duration>,
    /// When the change was made, from the controller's start.
    pub(crate) changed_at: Duration,
    /// Consumers that held the changed slice's copy (the old address) when the change was made.
    pub(crate) copied_before: usize,
    pub(crate) consumers: usize,
    /// From the change to the first and to the last consumer showing it.
    pub(crate) first: Option<Duration>,
    pub(crate) all: Option<Duration>,
}

/// A cold start of `bin` with one provider slice changed [`Settings::live_after`] into it, or
/// once the controller has started a pass if that is later; `label` names its directory.
pub(crate) async fn live(settings: &Settings, bin: &Path, label: &str) -> LiveRow {
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

pub(crate) fn print_live_table(settings: &Settings, rows: &[LiveRow]) {
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
