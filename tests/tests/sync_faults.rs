//! `mcs-policy sync` when member clusters answer as real API servers do under trouble (docs/api-errors.md,
//! docs/sync.md#unready-and-unreachable-clusters): kube-sim injects 409/422/429/500/401 answers, drops watch streams and goes
//! unreachable, and the controller must converge, report what failed per cluster, and keep
//! the other clusters going. Most tests resync only once an hour, so what repairs the state
//! is the watch, the in-pass retry or the failure requeue under test, not a periodic pass.

use std::time::{Duration, Instant};

use serde_json::json;
use tests::sync::*;

/// Resync interval that never fires during a test (the first pass runs at start).
const NO_RESYNC: &str = "1h";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_on_applies_are_retried_with_backoff_until_the_copy_lands() {
    let w = World::start_with("fault-500", NO_RESYNC).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_dispatched("True", "successfully").await;

    let fault =
        json!({"status": 500, "count": 3, "verbs": ["patch"], "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;

    let failed = w
        .await_event(
            "DispatchEndpointSliceFailed",
            &["member2", "(500 InternalError)"],
        )
        .await;
    assert_eq!(failed["type"], "Warning");
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;
    assert!(w.pending_faults(&w.member2).await.is_empty());
    w.await_event("DispatchEndpointSliceSucceed", &["successfully"])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_applies_wait_for_retry_after_and_succeed_in_the_same_pass() {
    let w = World::start_with("fault-429", NO_RESYNC).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_dispatched("True", "successfully").await;

    let fault = json!({"status": 429, "count": 2, "retryAfterSeconds": 1,
                       "verbs": ["patch"], "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    let written = Instant::now();
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let waited = written.elapsed();
    assert!(
        waited >= Duration::from_millis(1900),
        "two 429s with Retry-After: 1 were honoured (copy after {waited:?})"
    );
    assert!(w.pending_faults(&w.member2).await.is_empty());
    assert!(
        w.events("DispatchEndpointSliceFailed").await.is_empty(),
        "a throttled request is retried by the client, not reported as a failure"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_on_the_service_replace_is_re_read_and_retried_in_the_same_pass() {
    let w = World::start_with("fault-409", NO_RESYNC).await;
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports.clone())).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_service_applied("True").await;
    w.await_service_ports(&w.member2, "member2", &ports).await;

    let fault = json!({"status": 409, "count": 2, "verbs": ["update"], "resource": "services"});
    w.fault(&w.member2, fault).await;
    let mut template = get(&w.http, &w.hub, &format!("{SERVICES}/web"))
        .await
        .unwrap();
    let new_ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}, {"name": "grpc", "port": 9000, "protocol": "TCP", "targetPort": 9000}]);
    template["spec"]["ports"] = new_ports.clone();
    put(&w.http, &w.hub, &format!("{SERVICES}/web"), &template).await;

    w.await_service_ports(&w.member2, "member2", &new_ports)
        .await;
    assert!(w.pending_faults(&w.member2).await.is_empty());
    assert!(
        w.events("SyncServiceFailed").await.is_empty(),
        "409 is re-read and retried within the pass, never reported"
    );
    assert_eq!(
        w.condition("ServiceApplied").await.unwrap()["status"],
        "True"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_copy_is_reported_and_does_not_hold_up_the_other_consumer() {
    let w = World::start_full("fault-422", "200ms", &[], true).await;
    let member3 = w.member3.clone().unwrap();
    // member2 refuses every EndpointSlice write as invalid until the fault is cleared.
    let fault = json!({"status": 422, "count": 100000, "verbs": ["patch"],
                       "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    let both = json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "member2"}, {"name": "member3"}],
    });
    post(&w.http, &w.hub, MCS, &mcs(both)).await;

    w.await_slices(&member3, "member3", &["member1-web-abc"])
        .await;
    let failed = w.await_dispatched("False", "(422 Invalid)").await;
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("applying endpointslice shop/member1-web-abc to cluster member2"),
        "{message}"
    );
    assert!(
        !message.contains("Status {"),
        "no client debug dump: {message}"
    );
    assert!(w.slice_names(&w.member2).await.is_empty());

    w.clear_faults(&w.member2).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_are_reported_per_cluster_in_the_condition_and_metrics() {
    let listen = free_addr();
    let w = World::start_full("fault-401", "200ms", &["--metrics-listen", &listen], false).await;
    let fault = json!({"status": 401, "count": 100000, "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let failed = w.await_dispatched("False", "(401 Unauthorized)").await;
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("cluster member2"),
        "{failed}"
    );
    let url = format!("http://{listen}/metrics");
    let labels = r#"cluster="member2",reason="unauthorized""#;
    w.eventually("member2's unauthorized errors in /metrics", || async {
        let text = w.http.get(&url).send().await.ok()?.text().await.ok()?;
        let errors = labelled_metric(&text, "mcs_policy_sync_cluster_errors_total", labels)?;
        (errors >= 1.0).then_some(())
    })
    .await;
    assert!(
        w.log(0).contains("refuses our credentials"),
        "the log says what to fix: {}",
        w.logs()
    );

    w.clear_faults(&w.member2).await;
    w.await_dispatched("True", "successfully").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_are_re_established_and_changes_still_arrive() {
    let w = World::start_with("fault-drop-watches", NO_RESYNC).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_dispatched("True", "successfully").await;

    for url in [&w.hub, &w.member1, &w.member2] {
        post(&w.http, url, "/_sim/drop-watches", &json!({})).await;
    }
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;

    post(&w.http, &w.member1, "/_sim/drop-watches", &json!({})).await;
    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    w.await_slices(&w.member2, "member2", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_was_down_is_caught_up_when_it_returns() {
    let w = World::start_with("fault-consumer-down", NO_RESYNC).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_dispatched("True", "successfully").await;

    w.unreachable(&w.member2, true).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    let failed = w
        .await_dispatched("False", "cluster member2 is not ready")
        .await;
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("its API does not answer"),
        "{failed}"
    );

    w.unreachable(&w.member2, false).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_does_not_serve_endpointslices_is_reported_api_incompatible_once() {
    let w = World::start("fault-404-list").await;
    // A list answered 404 means the cluster does not serve the resource at all.
    let fault = json!({"status": 404, "count": 100000, "verbs": ["list"],
                       "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let event = w
        .await_event(
            "APIIncompatible",
            &["Consumer cluster member2 does not support EndpointSlice"],
        )
        .await;
    assert_eq!(event["type"], "Warning");
    w.await_dispatched("False", "cluster member2").await;
    // Passes at 200ms plus retries: the event is not repeated while nothing changes.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(w.events("APIIncompatible").await.len(), 1);
}
