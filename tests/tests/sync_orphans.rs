//! The orphan sweep against kube-sim: copies of MultiClusterServices the hub no longer has go
//! even when the hub's cache lists late or a member refuses the first deletions, and a sweep
//! from a cache that is behind never deletes a slice someone else made since (every deletion
//! carries the uid of what was read).

use serde_json::json;
use tests::sync::*;

/// A copy in member2 of member1's slice `web-abc` for MCS `shop/web`, made by the controller
/// (all of its markers), as a copy left behind by an MCS deleted while member2 was away.
fn left_behind() -> serde_json::Value {
    let mut copy = slice("member1-web-abc", DISPATCH, "10.1.0.7");
    copy["metadata"]["annotations"] = json!({PROVISION: "member1"});
    copy
}

fn deletes(requests: &[String]) -> usize {
    requests
        .iter()
        .filter(|r| *r == "delete endpointslices")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_that_lists_late_still_gets_its_orphans_swept() {
    let mut w = World::clusters("orphans-hub-late", false).await;
    post(&w.http, &w.member2, SLICES, &left_behind()).await;
    w.add_native_slice(&w.member2, "web-own", "10.2.0.1").await;
    // The hub's first lists of MCSs fail: at start its cache has not listed, so no sweep then.
    w.fault(
        &w.hub,
        json!({"status": 500, "count": 3, "verbs": ["list"], "resource": "multiclusterservices"}),
    )
    .await;
    w.spawn_sync("1h", &[]);

    w.await_slices(&w.member2, "member2", &["web-own"]).await;
    assert!(w.pending_faults(&w.hub).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_deletion_refused_is_retried_until_the_orphan_is_gone() {
    let mut w = World::clusters("orphans-delete-retried", false).await;
    post(&w.http, &w.member2, SLICES, &left_behind()).await;
    w.fault(
        &w.member2,
        json!({"status": 500, "count": 3, "verbs": ["delete"], "resource": "endpointslices"}),
    )
    .await;
    w.clear_requests(&w.member2).await;
    w.spawn_sync("1h", &[]);

    w.await_slices(&w.member2, "member2", &[]).await;
    assert!(w.pending_faults(&w.member2).await.is_empty());
    assert_eq!(deletes(&w.requests(&w.member2).await), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_from_a_cache_behind_never_deletes_a_slice_made_since() {
    let mut w = World::clusters("orphans-preconditions", false).await;
    post(&w.http, &w.member2, SLICES, &left_behind()).await;
    let path = format!("{SLICES}/member1-web-abc");
    // member2's slice watch is held back: its cache keeps the listed copy for 6 s. Its
    // Services' list answers 3 s late (member2 is swept once both its caches have listed), so
    // the sweep runs while member2's slice cache is behind.
    w.fault(
        &w.member2,
        json!({"delayMs": 6000, "count": 1, "verbs": ["watch"], "resource": "endpointslices"}),
    )
    .await;
    w.fault(
        &w.member2,
        json!({"delayMs": 3000, "count": 1, "verbs": ["list"], "resource": "services"}),
    )
    .await;
    w.clear_requests(&w.member2).await;
    w.spawn_sync("1h", &[]);
    w.eventually("member2's slices listed", || async {
        let requests = w.requests(&w.member2).await;
        requests
            .iter()
            .any(|r| r == "list endpointslices")
            .then_some(())
    })
    .await;
    // Someone replaces the copy with a slice of their own, of the same name.
    delete(&w.http, &w.member2, &path).await;
    post(
        &w.http,
        &w.member2,
        SLICES,
        &native_slice("member1-web-abc", "10.2.0.9"),
    )
    .await;
    let theirs = get(&w.http, &w.member2, &path).await.unwrap();

    // The sweep tried the copy it had read (refused: its uid is gone), then, its cache caught
    // up, left their slice alone.
    w.eventually("a deletion refused on its preconditions", || async {
        (deletes(&w.requests(&w.member2).await) > 0).then_some(())
    })
    .await;
    w.eventually("member2's cache to catch up", || async {
        w.pending_faults(&w.member2).await.is_empty().then_some(())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(8)).await;
    let now = get(&w.http, &w.member2, &path).await.expect("their slice");
    assert_eq!(now["metadata"]["uid"], theirs["metadata"]["uid"]);
    assert_eq!(now["metadata"]["labels"], theirs["metadata"]["labels"]);
}
