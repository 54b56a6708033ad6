//! The MCS status shared with other writers (docs/sync.md#conditions): a condition of a type
//! the controller does not set (another controller's `ExternalDNSReady`) outlives every pass,
//! and a status write that loses a race (409) is read again, concluded again and lands without
//! losing either writer's conditions.

use std::time::Duration;

use serde_json::{Value, json};
use tests::sync::*;
use tokio::sync::mpsc;

const NO_RESYNC: &str = "1h";
const FOREIGN: &str = "ExternalDNSReady";

/// Another controller's write of its own condition, as a client sharing the status must make
/// it: read, set its condition, write back with the resourceVersion read (409: again).
async fn set_foreign(w: &World, message: &str) {
    let message = message.to_string();
    edit(&w.http, &w.hub, &format!("{MCS}/web/status"), |o| {
        let mut conditions = o["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        conditions.retain(|c| c["type"] != FOREIGN);
        conditions.push(json!({
            "type": FOREIGN, "status": "True", "reason": "Published",
            "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z",
        }));
        o["status"]["conditions"] = json!(conditions);
    })
    .await;
}

/// The MCS `web` as the hub holds it.
async fn mcs_now(w: &World) -> Value {
    get(&w.http, &w.hub, &format!("{MCS}/web")).await.unwrap()
}

/// Bumps the MCS's generation (its ports alternate between two entries the copy keeps alike),
/// so that the next pass writes every one of its conditions again; returns the new generation.
async fn bump_generation(w: &World, round: u32) -> i64 {
    edit(&w.http, &w.hub, &format!("{MCS}/web"), |o| {
        o["spec"]["ports"] = json!([{"name": "http", "port": 80 + round % 2}]);
    })
    .await;
    mcs_now(w).await["metadata"]["generation"].as_i64().unwrap()
}

/// Waits until the controller's conditions observe `generation`; returns the MCS then.
async fn await_observed(w: &World, generation: i64) -> Value {
    w.eventually(
        &format!("our conditions at observedGeneration {generation}"),
        || async {
            let o = mcs_now(w).await;
            let ours = ["Valid", "ServiceApplied", "EndpointSliceDispatched"];
            let observed = o["status"]["conditions"].as_array()?.iter().filter(|c| {
                ours.contains(&c["type"].as_str().unwrap_or_default())
                    && c["observedGeneration"] == generation
            });
            (observed.count() == ours.len()).then_some(o)
        },
    )
    .await
}

/// The message of the foreign condition in `o`, if it has one.
fn foreign(o: &Value) -> Option<String> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == FOREIGN)
        .and_then(|c| c["message"].as_str().map(str::to_string))
}

/// Watches the MCS `web` from `resource_version` on; sends every version's foreign message
/// (`None`: the condition is missing).
async fn watch_foreign(
    w: &World,
    resource_version: &str,
) -> mpsc::UnboundedReceiver<Option<String>> {
    let path = format!("{MCS}?watch=true&resourceVersion={resource_version}");
    let mut resp = w.http.get(format!("{}{path}", w.hub)).send().await.unwrap();
    assert!(resp.status().is_success(), "watch: {}", resp.status());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut pending = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                if event["type"] == "BOOKMARK" {
                    continue;
                }
                if tx.send(foreign(&event["object"])).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The foreign messages seen so far; panics if a version lost the condition or set it back
/// (its messages are increasing numbers).
fn assert_never_dropped(rx: &mut mpsc::UnboundedReceiver<Option<String>>, seen: &mut Vec<u32>) {
    while let Ok(message) = rx.try_recv() {
        let message = message.unwrap_or_else(|| {
            panic!("a status write removed {FOREIGN} (after {seen:?})");
        });
        let n: u32 = message.parse().unwrap();
        if let Some(last) = seen.last() {
            assert!(
                n >= *last,
                "a status write set {FOREIGN} back: {seen:?} then {n}"
            );
        }
        seen.push(n);
    }
}

/// A provider slice, an MCS from member1 to member2 synced, and the foreign condition `0`;
/// returns the MCS's resourceVersion after that write.
async fn synced_with_foreign(w: &World) -> String {
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;
    set_foreign(w, "0").await;
    mcs_now(w).await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_writers_condition_outlives_every_pass() {
    let w = World::start_with("writers-keep", "200ms").await;
    let version = synced_with_foreign(&w).await;
    let mut versions = watch_foreign(&w, &version).await;
    let mut seen = Vec::new();

    for round in 1..=3u32 {
        // A provider change: a pass that writes the copy and no condition.
        let address = format!("10.1.0.{}", 10 + round);
        edit(&w.http, &w.member1, &format!("{SLICES}/web-abc"), |s| {
            s["endpoints"][0]["addresses"] = json!([address]);
        })
        .await;
        w.eventually(&format!("the copy at {address}"), || async {
            let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc")).await?;
            (copy["endpoints"][0]["addresses"][0] == address.as_str()).then_some(())
        })
        .await;
        // A new generation: a pass that writes every one of its conditions again.
        let generation = bump_generation(&w, round).await;
        let o = await_observed(&w, generation).await;
        assert_eq!(foreign(&o).as_deref(), Some("0"), "{o}");
        assert_never_dropped(&mut versions, &mut seen);
    }
    // A few resyncs more.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(foreign(&mcs_now(&w).await).as_deref(), Some("0"));
    assert_never_dropped(&mut versions, &mut seen);
    assert_eq!(
        w.condition("EndpointSliceDispatched").await.unwrap()["status"],
        "True"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_that_loses_a_race_is_concluded_again_and_keeps_both() {
    let w = World::start_with("writers-race", NO_RESYNC).await;
    let version = synced_with_foreign(&w).await;
    let mut versions = watch_foreign(&w, &version).await;
    let mut seen = Vec::new();

    // The other writer's write lands between our read and our write: our status patch is held
    // back a second (429, retried by the client after `Retry-After`), the other writer writes
    // meanwhile, and the hub answers our patch 409.
    w.clear_requests(&w.hub).await;
    let fault = json!({"status": 429, "count": 1, "retryAfterSeconds": 1, "verbs": ["patch"], "resource": "multiclusterservices/status"});
    w.fault(&w.hub, fault).await;
    let generation = bump_generation(&w, 1).await;
    w.eventually("our status patch to be held back", || async {
        w.pending_faults(&w.hub).await.is_empty().then_some(())
    })
    .await;
    set_foreign(&w, "1").await;
    let o = await_observed(&w, generation).await;
    assert_eq!(foreign(&o).as_deref(), Some("1"), "{o}");
    let requests = w.requests(&w.hub).await;
    let patches: Vec<usize> = (0..requests.len())
        .filter(|i| requests[*i] == "patch multiclusterservices/status")
        .collect();
    assert!(patches.len() >= 3, "429, 409, written: {requests:?}");
    assert!(
        requests[patches[1]..patches[2]].contains(&"get multiclusterservices".to_string()),
        "the MCS is read again after the conflict: {requests:?}"
    );
    assert!(
        w.events("DispatchEndpointSliceFailed").await.is_empty(),
        "a conflict is retried within the pass, never reported"
    );

    // Real races: the other writer keeps writing while passes write new generations.
    let writer = {
        let (http, hub) = (w.http.clone(), w.hub.clone());
        tokio::spawn(async move {
            for n in 2..=40u32 {
                let path = format!("{MCS}/web/status");
                let message = n.to_string();
                edit(&http, &hub, &path, |o| {
                    let conditions = o["status"]["conditions"].as_array_mut().unwrap();
                    let c = conditions
                        .iter_mut()
                        .find(|c| c["type"] == FOREIGN)
                        .unwrap();
                    c["message"] = json!(message);
                })
                .await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let mut generation = generation;
    for round in 2..=8u32 {
        generation = bump_generation(&w, round).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    writer.await.unwrap();
    let o = await_observed(&w, generation).await;
    assert_eq!(foreign(&o).as_deref(), Some("40"), "{o}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_never_dropped(&mut versions, &mut seen);
    assert_eq!(seen.last(), Some(&40), "{seen:?}");
}
