//! The watch caches under changes that race the controller's own writes: a copy deleted by
//! hand while the controller's apply of it is in flight, and a slice relabelled from one
//! Service to another. The resync is an hour, so whatever comes back is the watches' doing.

use std::time::{Duration, Instant};

use serde_json::json;
use tests::sync::*;

/// No resync during a test: whatever happens is the watches' doing.
const NO_RESYNC: &str = "1h";

/// Polls `probe` every 20 ms until it answers `true`; how long that took, or `None` after
/// `limit`.
async fn within<F, Fut>(limit: Duration, mut probe: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() <= limit {
        if probe().await {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_deleted_by_hand_while_our_apply_is_in_flight_comes_back() {
    let w = World::start_with("delete-during-apply", NO_RESYNC).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let copy = format!("{SLICES}/member1-web-abc");

    // The next apply in member2 is done (and watched) at once, its answer held back 1 s.
    let fault = json!({"delayMs": 1000, "verbs": ["patch"], "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    edit(&w.http, &w.member1, &format!("{SLICES}/web-abc"), |s| {
        s["endpoints"][0]["addresses"] = json!(["10.1.0.8"]);
    })
    .await;
    let applied = within(Duration::from_secs(10), || async {
        get(&w.http, &w.member2, &copy)
            .await
            .is_some_and(|c| c["endpoints"][0]["addresses"][0] == "10.1.0.8")
    })
    .await;
    assert!(applied.is_some(), "the apply reached member2");
    // While its answer is held back: someone deletes the copy.
    delete(&w.http, &w.member2, &copy).await;

    let back = within(Duration::from_secs(2), || async {
        get(&w.http, &w.member2, &copy)
            .await
            .is_some_and(|c| c["endpoints"][0]["addresses"][0] == "10.1.0.8")
    })
    .await;
    assert!(
        back.is_some(),
        "the copy deleted during our apply is back within 2 s; logs:\n{}",
        w.logs()
    );
    eprintln!("copy back {:?} after its deletion", back.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slice_relabelled_to_another_service_leaves_the_old_consumers_and_reaches_the_new() {
    let w = World::start_full("relabel", NO_RESYNC, &[], true).await;
    let member3 = w.member3.clone().unwrap();
    let (web, api) = (ObjectRef::new("shop", "web"), ObjectRef::new("shop", "api"));
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service_of(&web, ports.clone())).await;
    post(&w.http, &w.hub, SERVICES, &service_of(&api, ports)).await;
    let slice = native_slice_of(&web, "s1", "10.1.0.7");
    post(&w.http, &w.member1, SLICES, &slice).await;
    // web: member1 to member2; api: member1 to member3.
    let spec = |consumer: &str| {
        json!({
            "providerClusters": [{"name": "member1"}],
            "consumerClusters": [{"name": consumer}],
        })
    };
    post(&w.http, &w.hub, MCS, &mcs_of(&web, spec("member2"))).await;
    post(&w.http, &w.hub, MCS, &mcs_of(&api, spec("member3"))).await;
    w.await_slices(&w.member2, "member2", &["member1-s1"]).await;
    w.await_slices(&member3, "member3", &[]).await;

    edit(&w.http, &w.member1, &format!("{SLICES}/s1"), |s| {
        s["metadata"]["labels"][SERVICE_NAME] = json!("api");
    })
    .await;
    let (left, reached) = tokio::join!(
        within(Duration::from_secs(2), || async {
            w.slice_names(&w.member2).await.is_empty()
        }),
        within(Duration::from_secs(2), || async {
            get(&w.http, &member3, &format!("{SLICES}/member1-s1"))
                .await
                .is_some_and(|c| c["metadata"]["labels"][SERVICE_NAME] == "api")
        }),
    );
    let logs = w.logs();
    assert!(
        left.is_some(),
        "the relabelled slice left web's consumer within 2 s; logs:\n{logs}"
    );
    assert!(
        reached.is_some(),
        "the relabelled slice reached api's consumer within 2 s; logs:\n{logs}"
    );
    eprintln!("left member2 in {left:?}, reached member3 in {reached:?}");
}
