//! `mcs-policy sync` for real, against three kube-sim clusters (hub, member1, member2): copies
//! appear where the component says, go when their source or MultiClusterService goes, and
//! slices the controller did not make are never touched.

use std::time::Duration;

use serde_json::{Value, json};
use tests::sync::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_a_provider_slice_into_the_consumer_and_reports_success() {
    let w = World::start("one-to-one").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc"))
        .await
        .unwrap();
    // Karmada's labels only, never the upstream Multi-Cluster Services API's: KEP-1645 DNS
    // lists every slice labelled multicluster.kubernetes.io/service-name (docs/object.md).
    assert_eq!(
        copy["metadata"]["labels"],
        json!({SERVICE_NAME: "web", MANAGED_BY: DISPATCH})
    );
    assert_eq!(
        copy["metadata"]["annotations"],
        json!({PROVISION: "member1"})
    );
    assert_eq!(copy["endpoints"][0]["addresses"], json!(["10.1.0.7"]));

    let object = w
        .eventually("the finalizer and EndpointSliceDispatched=True", || async {
            let o = get(&w.http, &w.hub, &format!("{MCS}/web")).await?;
            let has_finalizer = o["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
            let dispatched = o["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "EndpointSliceDispatched")?
                .clone();
            (has_finalizer && dispatched["status"] == "True").then_some(dispatched)
        })
        .await;
    assert_eq!(object["reason"], "EndpointSliceDispatchedSucceed");
    assert_eq!(
        object["message"],
        "EndpointSlice are dispatched successfully"
    );
    assert!(object["lastTransitionTime"].is_string());
    assert_eq!(
        w.slice_names(&w.member1).await,
        ["web-abc"],
        "nothing goes back to the provider"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_cluster_lists_sync_every_member_to_every_other() {
    let w = World::start("all-members").await;
    w.sync_a_slice_from_each_member().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prunes_the_copy_of_a_deleted_slice_and_never_touches_foreign_slices() {
    let w = World::start("prune").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(
        &w.http,
        &w.member2,
        SLICES,
        &slice("web-foreign", "someone-else", "10.9.0.9"),
    )
    .await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc", "web-foreign"])
        .await;

    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    w.await_slices(&w.member2, "member2", &["web-foreign"])
        .await;
    let foreign = get(&w.http, &w.member2, &format!("{SLICES}/web-foreign"))
        .await
        .unwrap();
    assert_eq!(foreign["metadata"]["labels"][MANAGED_BY], "someone-else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_mcs_removes_every_copy_then_releases_it() {
    let w = World::start("delete").await;
    w.sync_a_slice_from_each_member().await;
    w.eventually("the finalizer", || async {
        let o = get(&w.http, &w.hub, &format!("{MCS}/web")).await?;
        o["metadata"]["finalizers"]
            .as_array()?
            .iter()
            .any(|f| f == FINALIZER)
            .then_some(())
    })
    .await;

    delete(&w.http, &w.hub, &format!("{MCS}/web")).await;
    w.await_slices(&w.member1, "member1", &["web-a"]).await;
    w.await_slices(&w.member2, "member2", &["web-b"]).await;
    w.await_mcs_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_keeps_only_the_ports_the_mcs_lists() {
    let w = World::start("ports").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    let mut object = member1_to_member2();
    // `port` is required by the MCS schema and validation; without the hub Service's ports the
    // filter matches the entry by name.
    object["spec"]["ports"] = json!([{"name": "http", "port": 80}]);
    post(&w.http, &w.hub, MCS, &object).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc"))
        .await
        .unwrap();
    assert_eq!(
        copy["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_provider_keeps_its_copies_and_is_reported() {
    let w = World::start("unreachable").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;

    post(
        &w.http,
        &w.member1,
        "/_sim/unreachable",
        &json!({"on": true}),
    )
    .await;
    // The condition is written at the end of a pass, after its prune step.
    let failed = w.await_dispatched("False", "member1").await;
    assert_eq!(failed["reason"], "EndpointSliceDispatchedFailed");
    assert_eq!(
        w.slice_names(&w.member2).await,
        ["member1-web-abc"],
        "an unreachable provider's copies stay"
    );

    post(
        &w.http,
        &w.member1,
        "/_sim/unreachable",
        &json!({"on": false}),
    )
    .await;
    w.await_dispatched("True", "successfully").await;
    assert_eq!(w.slice_names(&w.member2).await, ["member1-web-abc"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_stale_endpoint_timeout_an_unreachable_providers_copies_are_withdrawn() {
    let w = World::start_full("stale", "200ms", &["--stale-endpoint-timeout", "1s"], true).await;
    let member3 = w.member3.clone().unwrap();
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    w.add_native_slice(&member3, "web-xyz", "10.3.0.9").await;
    let both = json!({
        "providerClusters": [{"name": "member1"}, {"name": "member3"}],
        "consumerClusters": [{"name": "member2"}],
    });
    post(&w.http, &w.hub, MCS, &mcs(both)).await;
    w.await_slices(
        &w.member2,
        "member2",
        &["member1-web-abc", "member3-web-xyz"],
    )
    .await;
    w.await_dispatched("True", "successfully").await;

    post(
        &w.http,
        &w.member1,
        "/_sim/unreachable",
        &json!({"on": true}),
    )
    .await;
    w.await_dispatched("False", "member1").await;
    assert_eq!(
        w.slice_names(&w.member2).await,
        ["member1-web-abc", "member3-web-xyz"],
        "the copies stay until the timeout"
    );
    // Past the timeout: member1's copy goes, the reachable member3's stays.
    w.await_slices(&w.member2, "member2", &["member3-web-xyz"])
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(w.slice_names(&w.member2).await, ["member3-web-xyz"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_passes_and_applied_copies() {
    let listen = free_addr();
    let w = World::start_full("metrics", "200ms", &["--metrics-listen", &listen], false).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let url = format!("http://{listen}/metrics");
    w.eventually("passes > 0 and applied >= 1 in /metrics", || async {
        let response = w.http.get(&url).send().await.ok()?;
        let text = response.text().await.ok()?;
        let passes = metric(&text, "mcs_policy_sync_passes_total")?;
        let applied = metric(&text, "mcs_policy_sync_applied_total")?;
        (passes > 0.0 && applied >= 1.0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_change_is_synced_by_the_watch_without_waiting_for_a_resync() {
    // The first resync tick fires at start; after that only watch events can trigger a pass.
    watch_carries_a_provider_slice_and_its_changes(World::start_with("watch", "1h").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_runtime_threads_syncs_as_one_thread_does() {
    let w = World::start_full("watch-pool", "1h", &["--runtime-threads", "3"], false).await;
    watch_carries_a_provider_slice_and_its_changes(w).await;
}

/// A new provider slice, an update of it and its deletion reach the consumer member2 through
/// the watches alone (`w` resyncs once an hour).
async fn watch_carries_a_provider_slice_and_its_changes(w: World) {
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_dispatched("True", "successfully").await;

    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    // An update of the provider's slice reaches the copy.
    let path = format!("{SLICES}/web-abc");
    let mut changed = get(&w.http, &w.member1, &path).await.unwrap();
    changed["endpoints"][0]["addresses"] = json!(["10.1.0.8"]);
    put(&w.http, &w.member1, &path, &changed).await;
    w.eventually("the copy to carry the new address", || async {
        let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc")).await?;
        (copy["endpoints"][0]["addresses"] == json!(["10.1.0.8"])).then_some(())
    })
    .await;
    delete(&w.http, &w.member1, &path).await;
    w.await_slices(&w.member2, "member2", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_consumers_at_run_time_moves_the_copies() {
    let w = World::start_full("consumers-change", "1h", &[], true).await;
    let member3 = w.member3.clone().unwrap();
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;

    let path = format!("{MCS}/web");
    edit(&w.http, &w.hub, &path, |o| {
        o["spec"]["consumerClusters"] = json!([{"name": "member3"}])
    })
    .await;
    w.await_slices(&member3, "member3", &["member1-web-abc"])
        .await;
    w.await_slices(&w.member2, "member2", &[]).await;

    // Empty consumers: every member but the provider itself.
    edit(&w.http, &w.hub, &path, |o| {
        o["spec"]["consumerClusters"] = json!([])
    })
    .await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_slices(&member3, "member3", &["member1-web-abc"])
        .await;
    assert_eq!(w.slice_names(&w.member1).await, ["web-abc"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcs_no_longer_cross_cluster_withdraws_its_copies_and_releases_its_finalizer() {
    let w = World::start("not-cross-cluster").await;
    w.sync_a_slice_from_each_member().await;
    let path = format!("{MCS}/web");
    // The webhook makes types immutable; the controller must still cope with a store that
    // did not (or with the object being re-created).
    edit(&w.http, &w.hub, &path, |o| {
        o["spec"]["types"] = json!(["LoadBalancer"])
    })
    .await;
    w.await_slices(&w.member1, "member1", &["web-a"]).await;
    w.await_slices(&w.member2, "member2", &["web-b"]).await;
    w.eventually("the finalizer to be released", || async {
        let o = get(&w.http, &w.hub, &path).await?;
        let ours = o["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
        (!ours).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_mcs_is_marked_not_valid_and_not_synced() {
    let w = World::start("invalid").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    let mut object = member1_to_member2();
    object["spec"]["ports"] = json!([{"name": "foo.withdot", "port": 80}]);
    post(&w.http, &w.hub, MCS, &object).await;

    let valid = w
        .eventually("Valid=False", || async {
            let c = w.condition("Valid").await?;
            (c["status"] == "False").then_some(c)
        })
        .await;
    assert_eq!(valid["reason"], "ValidationFailed");
    assert_eq!(
        valid["message"],
        r#"spec.ports[0].name: Invalid value: "foo.withdot": must not contain dots"#
    );
    // Several passes later (200ms resyncs), still nothing dispatched.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(w.slice_names(&w.member2).await.is_empty());
    assert!(w.condition("EndpointSliceDispatched").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unnamed_mcs_port_matches_by_number_through_the_hub_service() {
    let w = World::start("service-ports").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    let ports = json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]);
    post(&w.http, &w.hub, SERVICES, &service(ports)).await;
    let mut object = member1_to_member2();
    object["spec"]["ports"] = json!([{"port": 9090}]);
    post(&w.http, &w.hub, MCS, &object).await;

    let copy = w
        .eventually("the copy with only the metrics port", || async {
            let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc")).await?;
            (copy["ports"].as_array()?.len() == 1).then_some(copy)
        })
        .await;
    assert_eq!(
        copy["ports"],
        json!([{"name": "metrics", "port": 9100, "protocol": "TCP"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_service_is_propagated_and_updated_keeping_the_members_cluster_ip() {
    let w = World::start("service-propagation").await;
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports.clone())).await;
    // member2 already has the Service, with its own clusterIP.
    let mut own = service(ports.clone());
    own["spec"]["clusterIP"] = json!("10.0.0.9");
    own["spec"]["clusterIPs"] = json!(["10.0.0.9"]);
    post(&w.http, &w.member2, SERVICES, &own).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let applied = w.await_service_applied("True").await;
    assert_eq!(applied["reason"], "ServiceAppliedSucceed");
    assert_eq!(
        applied["message"],
        "Service is propagated to target clusters."
    );
    let created = w.await_service_ports(&w.member1, "member1", &ports).await;
    assert_eq!(created["spec"]["selector"], json!({"app": "web"}));
    assert_ne!(created["spec"]["clusterIP"], "10.96.0.10");
    assert!(
        created["spec"]["clusterIPs"].is_null()
            || created["spec"]["clusterIPs"] != json!(["10.96.0.10"])
    );
    assert_eq!(
        created["metadata"]["labels"],
        json!({"app": "web", "networking.karmada.io/created-by": "mcs-policy"})
    );

    // Change the template's ports: both members follow; member2 keeps its clusterIP.
    let mut template = get(&w.http, &w.hub, &format!("{SERVICES}/web"))
        .await
        .unwrap();
    let new_ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}, {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9090}]);
    template["spec"]["ports"] = new_ports.clone();
    put(&w.http, &w.hub, &format!("{SERVICES}/web"), &template).await;
    w.await_service_ports(&w.member1, "member1", &new_ports)
        .await;
    let updated = w
        .await_service_ports(&w.member2, "member2", &new_ports)
        .await;
    assert_eq!(updated["spec"]["clusterIP"], "10.0.0.9");
    assert_eq!(updated["spec"]["clusterIPs"], json!(["10.0.0.9"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_template_fails_service_applied_but_slices_are_still_dispatched() {
    let w = World::start("service-missing").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let failed = w.await_service_applied("False").await;
    assert_eq!(failed["reason"], "ServiceAppliedFailed");
    assert_eq!(failed["message"], "service shop/web not found in the hub");
    w.await_dispatched("True", "successfully").await;
    assert!(
        get(&w.http, &w.member1, &format!("{SERVICES}/web"))
            .await
            .is_none()
    );

    // The template appears: the hub Service watch brings it to the members.
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports.clone())).await;
    w.await_service_applied("True").await;
    w.await_service_ports(&w.member1, "member1", &ports).await;
    w.await_service_ports(&w.member2, "member2", &ports).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_provider_is_reported_by_one_cluster_not_found_event() {
    let w = World::start("events").await;
    post(
        &w.http,
        &w.hub,
        MCS,
        &mcs(json!({
            "providerClusters": [{"name": "ghost"}, {"name": "member1"}],
            "consumerClusters": [{"name": "member2"}],
        })),
    )
    .await;
    let not_found = || async {
        let list = get(&w.http, &w.hub, EVENTS).await?;
        let found: Vec<Value> = list["items"]
            .as_array()?
            .iter()
            .filter(|e| e["reason"] == "ClusterNotFound")
            .cloned()
            .collect();
        Some(found)
    };
    let found = w
        .eventually("a ClusterNotFound event", || async {
            not_found().await.filter(|f| !f.is_empty())
        })
        .await;
    assert_eq!(found[0]["message"], "Provider cluster ghost is not found");
    assert_eq!(found[0]["type"], "Warning");
    assert_eq!(found[0]["involvedObject"]["kind"], "MultiClusterService");
    assert_eq!(found[0]["involvedObject"]["name"], "web");
    assert_eq!(found[0]["source"]["component"], "mcs-policy");

    // Passes that certainly ran after the first Event: one dispatches a new slice, a later one
    // prunes its copy (with 200ms resyncs in between); still exactly one ClusterNotFound.
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    w.await_slices(&w.member2, "member2", &[]).await;
    assert_eq!(
        not_found().await.unwrap().len(),
        1,
        "exactly one ClusterNotFound event"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_deleted_by_hand_is_put_back_at_once() {
    // No resync after the first pass: the watch on the consumer's copies repairs it.
    let w = World::start_with("deleted-by-hand", "1h").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let copy = format!("{SLICES}/member1-web-abc");
    let before = get(&w.http, &w.member2, &copy).await.unwrap();

    delete(&w.http, &w.member2, &copy).await;
    let deleted = std::time::Instant::now();
    // The goal with no resync: back within 1 s (the watch of the copy triggers the pass).
    let after = w
        .eventually_within(
            Duration::from_secs(1),
            "the copy to be back within 1 s",
            || async { get(&w.http, &w.member2, &copy).await },
        )
        .await;
    eprintln!("copy back {:?} after its deletion", deleted.elapsed());
    assert_ne!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "re-created"
    );
    assert_eq!(after["endpoints"], before["endpoints"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resync_repairs_a_copy_changed_by_hand() {
    let w = World::start_with("changed-by-hand", "500ms").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let path = format!("{SLICES}/member1-web-abc");
    edit(&w.http, &w.member2, &path, |copy| {
        copy["endpoints"][0]["addresses"] = json!(["192.0.2.66"])
    })
    .await;

    w.eventually("the copy to carry the provider's address again", || async {
        let copy = get(&w.http, &w.member2, &path).await?;
        (copy["endpoints"][0]["addresses"] == json!(["10.1.0.7"])).then_some(())
    })
    .await;
}
