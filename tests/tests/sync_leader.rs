//! `mcs-policy sync --leader-elect` (docs/sync.md#high-availability): of several replicas exactly one holds the
//! hub's Lease and syncs; when it crashes another takes over once the lease runs out, when it
//! stops gracefully it hands the Lease over at once, and a leader that cannot renew exits.

use std::time::{Duration, Instant};

use serde_json::Value;
use tests::sync::*;

/// Fast timings: takeover after a crash within ~2s.
const FAST: [&str; 7] = [
    "--leader-elect",
    "--lease-duration",
    "2s",
    "--renew-deadline",
    "1500ms",
    "--retry-period",
    "250ms",
];

/// A long lease: only a release explains a quick takeover.
const LONG: [&str; 7] = [
    "--leader-elect",
    "--lease-duration",
    "10s",
    "--renew-deadline",
    "5s",
    "--retry-period",
    "250ms",
];

/// Starts replica `replica-<n>` with `timing` flags and a metrics address; returns its index
/// and metrics address.
fn replica(w: &mut World, n: usize, timing: &[&str]) -> (usize, String) {
    let identity = format!("replica-{n}");
    let addr = free_addr();
    let mut flags: Vec<&str> = timing.to_vec();
    flags.extend(["--identity", &identity, "--metrics-listen", &addr]);
    (w.spawn_sync("500ms", &flags), addr)
}

async fn lease(w: &World) -> Option<Value> {
    get(&w.http, &w.hub, &format!("{LEASES}/mcs-policy-sync")).await
}

/// The Lease's holder, when somebody holds it.
async fn holder(w: &World) -> Option<String> {
    let lease = lease(w).await?;
    let holder = lease["spec"]["holderIdentity"].as_str()?;
    (!holder.is_empty()).then(|| holder.to_string())
}

/// Waits until one of `candidates` holds the Lease; returns its index in `candidates`.
async fn await_leader(w: &World, candidates: &[&str]) -> usize {
    let holder = w
        .eventually("a replica to hold the lease", || async { holder(w).await })
        .await;
    candidates
        .iter()
        .position(|c| *c == holder)
        .unwrap_or_else(|| panic!("the lease is held by {holder:?}, not one of {candidates:?}"))
}

/// The metrics text of the replica serving at `addr`, once it answers.
async fn scrape(w: &World, addr: &str) -> String {
    w.eventually(&format!("metrics at {addr}"), || async {
        let resp = w
            .http
            .get(format!("http://{addr}/metrics"))
            .send()
            .await
            .ok()?;
        resp.text().await.ok()
    })
    .await
}

/// Posts a native slice `name` in member1 and, with `mcs`, the MCS member1 → member2.
async fn provide(w: &World, name: &str, address: &str, mcs: bool) {
    w.add_native_slice(&w.member1, name, address).await;
    if mcs {
        post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_elect_exactly_one_leader_which_alone_syncs() {
    let mut w = World::clusters("leader-one", false).await;
    let replicas = [replica(&mut w, 0, &FAST), replica(&mut w, 1, &FAST)];
    let leader = await_leader(&w, &["replica-0", "replica-1"]).await;
    let standby = 1 - leader;

    let first = lease(&w).await.unwrap();
    assert_eq!(first["spec"]["leaseDurationSeconds"], 2, "{first}");
    assert_eq!(first["spec"]["leaseTransitions"], 0, "{first}");
    assert!(first["spec"]["acquireTime"].is_string(), "{first}");
    assert!(
        get(&w.http, &w.hub, "/api/v1/namespaces/mcs-policy-system")
            .await
            .is_some(),
        "the lease namespace was created"
    );

    provide(&w, "web-a", "10.1.0.1", true).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;

    // Over more than a lease duration the leader keeps renewing and nobody steals the Lease.
    let mut renewals = std::collections::BTreeSet::new();
    let watch_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < watch_until {
        let now = lease(&w).await.unwrap();
        let want = format!("replica-{leader}");
        assert_eq!(
            now["spec"]["holderIdentity"],
            want.as_str(),
            "{now}\n{}",
            w.logs()
        );
        assert_eq!(now["spec"]["leaseTransitions"], 0, "{now}");
        renewals.insert(now["spec"]["renewTime"].as_str().unwrap().to_string());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(renewals.len() >= 2, "renewTime never moved: {renewals:?}");

    let leading = scrape(&w, &replicas[leader].1).await;
    assert_eq!(
        metric(&leading, "mcs_policy_sync_leader"),
        Some(1.0),
        "{leading}"
    );
    assert!(
        metric(&leading, "mcs_policy_sync_passes_total").unwrap() > 0.0,
        "{leading}"
    );
    let version = String::from_utf8(
        std::process::Command::new(tests::binary("mcs-policy"))
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    // `mcs-policy 0.1.0 (commit 0123456789ab)`: the metric carries the same two values.
    let (number, commit) = version
        .trim()
        .strip_prefix("mcs-policy ")
        .and_then(|v| v.strip_suffix(')'))
        .and_then(|v| v.split_once(" (commit "))
        .unwrap_or_else(|| panic!("--version prints the version and commit: {version}"));
    assert_eq!(number, env!("CARGO_PKG_VERSION"));
    assert!(
        leading.contains(&format!(
            "mcs_policy_sync_build_info{{version=\"{number}\",commit=\"{commit}\"}} 1"
        )),
        "{leading}"
    );
    // The standby may start well after the leader on a loaded machine: wait until it has
    // tried the lease and seen it held, then check it does not sync.
    let held = format!("lease held by replica-{leader}");
    w.eventually("the standby to find the lease held", || async {
        w.log(replicas[standby].0).contains(&held).then_some(())
    })
    .await;
    let waiting = scrape(&w, &replicas[standby].1).await;
    assert_eq!(
        metric(&waiting, "mcs_policy_sync_leader"),
        Some(0.0),
        "{waiting}"
    );
    assert_eq!(
        metric(&waiting, "mcs_policy_sync_passes_total"),
        Some(0.0),
        "the standby does not sync: {waiting}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_leader_crashes_the_standby_takes_over_once_the_lease_runs_out() {
    let mut w = World::clusters("leader-crash", false).await;
    let replicas = [replica(&mut w, 0, &FAST), replica(&mut w, 1, &FAST)];
    let leader = await_leader(&w, &["replica-0", "replica-1"]).await;
    let standby = 1 - leader;
    provide(&w, "web-a", "10.1.0.1", true).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;

    w.kill_controller(replicas[leader].0);
    let crashed = Instant::now();
    let want = format!("replica-{standby}");
    // Lease duration (2s) plus a margin for polling and a loaded machine.
    w.eventually_within(
        Duration::from_secs(5),
        "the standby to take the lease",
        || async { (holder(&w).await? == want).then_some(()) },
    )
    .await;
    let took = crashed.elapsed();
    assert!(
        took >= Duration::from_secs(1),
        "the standby took a live lease after {took:?}\n{}",
        w.logs()
    );
    let taken = lease(&w).await.unwrap();
    assert_eq!(taken["spec"]["leaseTransitions"], 1, "{taken}");

    provide(&w, "web-b", "10.1.0.2", false).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a", "member1-web-b"])
        .await;
    let text = scrape(&w, &replicas[standby].1).await;
    assert_eq!(metric(&text, "mcs_policy_sync_leader"), Some(1.0), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_gracefully_hands_the_lease_over_at_once() {
    let mut w = World::clusters("leader-release", false).await;
    let replicas = [replica(&mut w, 0, &LONG), replica(&mut w, 1, &LONG)];
    let leader = await_leader(&w, &["replica-0", "replica-1"]).await;
    let standby = 1 - leader;
    provide(&w, "web-a", "10.1.0.1", true).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;
    let before = lease(&w).await.unwrap();

    // A rolling update (a `helm upgrade`, a new image) stops the leader gracefully.
    w.terminate_controller(replicas[leader].0);
    let stopped = Instant::now();
    let status = w
        .await_exit(replicas[leader].0, Duration::from_secs(10))
        .await;
    assert!(
        status.success(),
        "a graceful stop exits 0: {status}\n{}",
        w.logs()
    );
    assert!(
        w.log(replicas[leader].0)
            .contains("released the leader lease"),
        "{}",
        w.logs()
    );
    let want = format!("replica-{standby}");
    // Released, the lease is taken at the standby's next try, not once its 10 s have run
    // out: the bound is the lease duration itself (a loaded machine may delay the next try by
    // seconds; only a lease left to expire takes the full duration).
    w.eventually_within(
        Duration::from_secs(10),
        "the standby to take the lease",
        || async { (holder(&w).await? == want).then_some(()) },
    )
    .await;
    let took = stopped.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "takeover after {took:?} is not before the 10s lease duration"
    );
    let taken = lease(&w).await.unwrap();
    assert_eq!(
        taken["metadata"]["uid"], before["metadata"]["uid"],
        "the Lease is kept, not made anew"
    );
    assert_eq!(taken["spec"]["leaseTransitions"], 1, "{taken}");
    assert_eq!(taken["spec"]["leaseDurationSeconds"], 10, "{taken}");

    provide(&w, "web-b", "10.1.0.2", false).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a", "member1-web-b"])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_stops_and_exits_with_an_error() {
    let mut w = World::clusters("leader-lost", false).await;
    let (index, _) = replica(&mut w, 0, &FAST);
    await_leader(&w, &["replica-0"]).await;

    w.unreachable(&w.hub, true).await;
    let status = w.await_exit(index, Duration::from_secs(15)).await;
    w.unreachable(&w.hub, false).await;
    assert!(!status.success(), "losing the lease is an error: {status}");
    let log = w.log(index);
    assert!(log.contains("lost leadership"), "{log}");
    assert!(log.contains("lost the leader lease"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_leader_elect_no_lease_is_created() {
    let mut w = World::clusters("leader-off", false).await;
    let addr = free_addr();
    w.spawn_sync("500ms", &["--metrics-listen", &addr]);
    provide(&w, "web-a", "10.1.0.1", true).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;

    let text = scrape(&w, &addr).await;
    assert_eq!(metric(&text, "mcs_policy_sync_leader"), Some(1.0), "{text}");
    let leases = get(&w.http, &w.hub, "/apis/coordination.k8s.io/v1/leases")
        .await
        .unwrap();
    assert_eq!(leases["items"].as_array().unwrap().len(), 0, "{leases}");
    assert!(
        get(&w.http, &w.hub, "/api/v1/namespaces/mcs-policy-system")
            .await
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contradictory_lease_timings_are_refused_at_startup() {
    let mut w = World::clusters("leader-flags", false).await;
    let index = w.spawn_sync(
        "500ms",
        &[
            "--leader-elect",
            "--lease-duration",
            "1s",
            "--renew-deadline",
            "2s",
        ],
    );
    let status = w.await_exit(index, Duration::from_secs(30)).await;
    assert!(!status.success());
    let log = w.log(index);
    assert!(
        log.contains("--lease-duration (1s) must be greater than --renew-deadline (2s)"),
        "{log}"
    );
    assert!(lease(&w).await.is_none());
}
