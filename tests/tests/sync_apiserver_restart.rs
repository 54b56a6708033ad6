//! `mcs-policy sync` through API server restarts and short outages (docs/architecture.md,
//! "Consistency of the caches"; docs/sync.md, "Caches"). kube-sim's `/_sim/restart` restarts a
//! cluster's API server as kube-apiserver restarts over the same etcd: open watches are cut,
//! requests are refused for some seconds, the objects stay, and the new watch cache answers a
//! watch from an older resourceVersion with 410, so the controller's watches list again.
//!
//! An outage shorter than `--outage-grace` (30 s by default) must not be reported: the
//! MultiClusterService's conditions never turn False (their `lastTransitionTime` never moves),
//! no copy is pruned, `/readyz` stays 200, and a change made meanwhile arrives soon after the
//! server is back. A longer one is reported, and recovers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::sync::*;

/// How long a restarted API server is down.
const DOWN: Duration = Duration::from_secs(5);

/// How soon after a server is back a change made meanwhile must reach the consumers.
const CAUGHT_UP: Duration = Duration::from_secs(10);

/// Restarts the API server at `url`, down for `down`.
async fn restart(w: &World, url: &str, down: Duration) {
    let body = json!({"seconds": down.as_secs_f64()});
    post(&w.http, url, "/_sim/restart", &body).await;
}

/// Waits until the API server at `url` serves again; when it did.
async fn await_back(w: &World, url: &str) -> Instant {
    w.eventually("the API server to be back", || async {
        let state = get(&w.http, url, "/_sim/unreachable").await?;
        (state["unreachable"] == false).then(Instant::now)
    })
    .await
}

/// The MCS's `EndpointSliceDispatched` condition, `True` and successful; returns it.
async fn dispatched(w: &World) -> Value {
    w.await_dispatched("True", "successfully").await
}

/// Polls, every 100 ms for `span`, that the MCS's `EndpointSliceDispatched` is still `before`
/// (its status and `lastTransitionTime`) and that `url` still holds the slices `copies`.
async fn steady_for(w: &World, span: Duration, before: &Value, url: &str, copies: &[&str]) {
    let start = Instant::now();
    while start.elapsed() < span {
        let now = w.condition("EndpointSliceDispatched").await.expect("set");
        assert_eq!(
            (&now["status"], &now["lastTransitionTime"]),
            (&before["status"], &before["lastTransitionTime"]),
            "the condition did not change after {:?}: {now}; logs:\n{}",
            start.elapsed(),
            w.logs()
        );
        let names = w.slice_names(url).await;
        for copy in copies {
            assert!(
                names.iter().any(|n| n == copy),
                "{copy} pruned after {:?}: {names:?}",
                start.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A write in the cluster at `url` that concerns no MCS (a Service `other`): it moves the
/// cluster's revision.
async fn unrelated_write(w: &World, url: &str) {
    let other = service_of(&ObjectRef::new("shop", "other"), json!([{"port": 80}]));
    post(&w.http, url, SERVICES, &other).await;
}

/// Sets the address of slice `name` in the cluster at `url`.
async fn set_address(w: &World, url: &str, name: &str, address: &str) {
    let path = format!("{SLICES}/{name}");
    let mut slice = get(&w.http, url, &path).await.expect("the slice exists");
    slice["endpoints"][0]["addresses"] = json!([address]);
    put(&w.http, url, &path, &slice).await;
}

/// Waits until the copy `name` in the cluster at `url` has `address`; how long that took.
async fn await_address(w: &World, url: &str, name: &str, address: &str) -> Duration {
    let start = Instant::now();
    let path = format!("{SLICES}/{name}");
    w.eventually(&format!("{name} to carry {address}"), || async {
        let copy = get(&w.http, url, &path).await?;
        (copy["endpoints"][0]["addresses"][0] == address).then_some(())
    })
    .await;
    start.elapsed()
}

/// A world with `member1`'s slice `web-a` copied into `member2`, the controller started with
/// `extra` flags; the condition as it stands.
async fn synced_world(test: &str, extra: &[&str]) -> (World, Value) {
    let mut w = World::clusters(test, false).await;
    w.spawn_sync("200ms", extra);
    w.add_native_slice(&w.member1, "web-a", "10.1.0.1").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;
    let before = dispatched(&w).await;
    (w, before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_restarted_within_the_default_grace_is_not_reported_and_keeps_its_copies() {
    // The default grace, 30 s (the World's controllers get 0s unless told otherwise).
    let (w, before) = synced_world("restart-provider", &["--outage-grace", "30s"]).await;
    // A real cluster writes all the time (leases, events): the revision the restarted server
    // starts at is past the controller's watches, which must list again.
    unrelated_write(&w, &w.member1).await;

    restart(&w, &w.member1, DOWN).await;
    steady_for(&w, DOWN, &before, &w.member2, &["member1-web-a"]).await;
    let back = await_back(&w, &w.member1).await;
    // A change made as soon as it is back, while the controller's watch still backs off.
    set_address(&w, &w.member1, "web-a", "10.1.0.2").await;
    await_address(&w, &w.member2, "member1-web-a", "10.1.0.2").await;
    let took = back.elapsed();
    eprintln!("caught up {took:?} after the server was back");
    assert!(
        took <= CAUGHT_UP,
        "caught up {took:?} after the server was back"
    );
    steady_for(&w, Duration::from_secs(2), &before, &w.member2, &[]).await;
    // The watch listed again: the restarted server refused its resourceVersion (410).
    assert!(
        w.log(0).contains("listed again after a failure"),
        "{}",
        w.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_while_a_consumer_restarts_reaches_it_soon_after_it_is_back() {
    let (w, _) = synced_world("restart-consumer", &["--outage-grace", "30s"]).await;

    restart(&w, &w.member2, DOWN).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    set_address(&w, &w.member1, "web-a", "10.1.0.3").await;
    let back = await_back(&w, &w.member2).await;
    await_address(&w, &w.member2, "member1-web-a", "10.1.0.3").await;
    let took = back.elapsed();
    eprintln!("caught up {took:?} after the server was back");
    assert!(
        took <= CAUGHT_UP,
        "caught up {took:?} after the server was back"
    );
    assert_eq!(w.slice_names(&w.member2).await, ["member1-web-a"]);
    dispatched(&w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_restarted_within_the_grace_changes_no_condition_and_readyz_stays_ready() {
    let listen = free_addr();
    let extra = ["--outage-grace", "30s", "--metrics-listen", &listen];
    let (w, before) = synced_world("restart-hub", &extra).await;
    let readyz = format!("http://{listen}/readyz");
    let ready = || async {
        let resp = w.http.get(&readyz).send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    };
    w.eventually("/readyz to say it syncs", || async {
        (ready().await.0 == 200).then_some(())
    })
    .await;

    restart(&w, &w.hub, DOWN).await;
    let start = Instant::now();
    while start.elapsed() < DOWN {
        let (status, body) = ready().await;
        assert_eq!(status, 200, "/readyz while the hub restarts: {body}");
        assert_eq!(w.slice_names(&w.member2).await, ["member1-web-a"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let back = await_back(&w, &w.hub).await;
    set_address(&w, &w.member1, "web-a", "10.1.0.4").await;
    await_address(&w, &w.member2, "member1-web-a", "10.1.0.4").await;
    let took = back.elapsed();
    eprintln!("caught up {took:?} after the hub was back");
    assert!(took <= CAUGHT_UP, "{took:?}");
    // The condition never transitioned: the same status since the same time.
    steady_for(&w, Duration::from_secs(2), &before, &w.member2, &[]).await;
    assert_eq!(ready().await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_grace_is_reported_and_recovers() {
    let (w, _) = synced_world("restart-long", &["--outage-grace", "2s"]).await;

    restart(&w, &w.member1, Duration::from_secs(8)).await;
    let failed = w.await_dispatched("False", "cluster member1").await;
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("its API does not answer") || message.contains("failing for"),
        "{failed}"
    );
    assert_eq!(
        w.slice_names(&w.member2).await,
        ["member1-web-a"],
        "an unreadable provider keeps its copies"
    );
    await_back(&w, &w.member1).await;
    set_address(&w, &w.member1, "web-a", "10.1.0.5").await;
    await_address(&w, &w.member2, "member1-web-a", "10.1.0.5").await;
    dispatched(&w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_failing_past_the_grace_says_for_how_long_and_recovers_without_a_list() {
    // A short request timeout: a quiet retry is judged working 2 s after it.
    let extra = ["--outage-grace", "3s", "--request-timeout", "3s"];
    let (w, before) = synced_world("watch-failing", &extra).await;
    // Both watches of member1's slices (the MultiClusterService side's, and the clusterset
    // side's of our imported slices, which may start later) have listed: a watch whose first
    // list the fault interrupts rightly lists once the fault clears.
    w.eventually(
        "both watches of member1's slices to have listed",
        || async {
            let lists = w
                .log(0)
                .lines()
                .filter(|l| {
                    l.contains("listed; the cluster's cache is current")
                        && l.contains("cluster=member1")
                        && l.contains("resource=\"endpointslices\"")
                })
                .count();
            (lists >= 2).then_some(())
        },
    )
    .await;
    // member1 answers, but its slices can no longer be watched (nor listed).
    let fault = json!({"status": 500, "count": 100000, "verbs": ["list", "watch"],
                       "resource": "endpointslices"});
    w.fault(&w.member1, fault).await;
    post(&w.http, &w.member1, "/_sim/drop-watches", &json!({})).await;
    // Within the grace nothing is reported.
    steady_for(
        &w,
        Duration::from_secs(2),
        &before,
        &w.member2,
        &["member1-web-a"],
    )
    .await;
    let failed = w.await_dispatched("False", "member1 is not readable").await;
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("Internal error occurred") && message.contains("failing for"),
        "{failed}"
    );
    assert_eq!(w.slice_names(&w.member2).await, ["member1-web-a"]);

    // Nothing changed meanwhile: the watch resumes quietly, and is judged working once a
    // retry has gone the request timeout without an error.
    w.clear_requests(&w.member1).await;
    w.clear_faults(&w.member1).await;
    dispatched(&w).await;
    let requests = w.requests(&w.member1).await;
    assert!(
        !requests.contains(&"list endpointslices".to_string()),
        "resumed from its resourceVersion, not listed: {requests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ended_by_410_lists_again_without_a_flap() {
    // The default grace, as shipped.
    let (w, before) = synced_world("watch-410", &["--outage-grace", "30s"]).await;
    // Another write moves the revision past the slices' watch; a restart with no downtime
    // then answers that watch's resourceVersion with 410.
    unrelated_write(&w, &w.member1).await;
    w.clear_requests(&w.member1).await;
    restart(&w, &w.member1, Duration::ZERO).await;
    w.eventually("the slices to be listed again", || async {
        let requests = w.requests(&w.member1).await;
        requests
            .contains(&"list endpointslices".to_string())
            .then_some(())
    })
    .await;
    steady_for(
        &w,
        Duration::from_secs(2),
        &before,
        &w.member2,
        &["member1-web-a"],
    )
    .await;
    set_address(&w, &w.member1, "web-a", "10.1.0.6").await;
    let took = await_address(&w, &w.member2, "member1-web-a", "10.1.0.6").await;
    eprintln!("a change after the re-list reached the consumer in {took:?}");
    assert!(took <= CAUGHT_UP, "{took:?}");
    steady_for(&w, Duration::from_secs(1), &before, &w.member2, &[]).await;
}

#[test]
fn the_grace_defaults_to_30s_and_is_explained_in_help() {
    let out = std::process::Command::new(tests::binary("mcs-policy"))
        .args(["sync", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let flag = help
        .split("--outage-grace")
        .nth(1)
        .expect("sync --help lists --outage-grace");
    let text = flag.split("\n      --").next().unwrap();
    assert!(text.contains("[default: 30s]"), "{text}");
    assert!(text.contains("resourceVersion"), "{text}");
    let refused = std::process::Command::new(tests::binary("mcs-policy"))
        .args(["sync", "--outage-grace", "2m"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8(refused.stderr).unwrap();
    assert!(said.contains("the grace is at most 1m"), "{said}");
}
