//! What a real API server makes of the controller's writes, against kube-sim clusters that
//! answer like kube-apiserver 1.36 (namespace lifecycle, Service clusterIP rules, CRD schema
//! limits): a consumer without the MCS's namespace, headless Services, copies left in a member
//! that was down, an unreadable provider among several, kubeconfig context names that are not
//! cluster names, and more failures than a condition message can hold.

use serde_json::{Value, json};
use tests::sync::*;

const CREATED_BY: &str = "networking.karmada.io/created-by";

/// Service `shop/web` of the hub, headless.
fn headless_template() -> Value {
    let mut s = service(json!([{"name": "http", "port": 80, "targetPort": 8080}]));
    s["spec"]["clusterIP"] = json!("None");
    s
}

/// Service `shop/web` of the hub, with a cluster IP the hub allocates.
fn cluster_ip_template() -> Value {
    service(json!([{"name": "http", "port": 80, "targetPort": 8080}]))
}

/// Member `url`'s Service `shop/web`, once its `spec.clusterIP` satisfies `wanted`.
async fn await_member_service(
    w: &World,
    url: &str,
    what: &str,
    wanted: impl Fn(&str) -> bool,
) -> Value {
    w.eventually(what, || async {
        let s = get(&w.http, url, &format!("{SERVICES}/web")).await?;
        wanted(s["spec"]["clusterIP"].as_str()?).then_some(s)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_without_the_namespace_gets_it_with_the_service_and_the_copies() {
    let mut w = World::bare_clusters("namespace-missing", false).await;
    ensure_namespace(&w.http, &w.hub, "shop").await;
    ensure_namespace(&w.http, &w.member1, "shop").await;
    w.spawn_sync("200ms", &[]);
    post(&w.http, &w.hub, SERVICES, &cluster_ip_template()).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;
    w.await_service_applied("True").await;
    let namespace = get(&w.http, &w.member2, "/api/v1/namespaces/shop")
        .await
        .expect("the controller created the namespace");
    assert_eq!(namespace["metadata"]["labels"][CREATED_BY], "mcs-policy");
    assert!(
        get(&w.http, &w.member2, &format!("{SERVICES}/web"))
            .await
            .is_some(),
        "the Service is in the new namespace"
    );
    assert_eq!(
        get(&w.http, &w.member1, "/api/v1/namespaces/shop")
            .await
            .unwrap()["metadata"]["labels"]
            .get(CREATED_BY),
        None,
        "a namespace that was there is not touched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_service_stays_headless_and_a_change_of_headlessness_recreates_our_copy() {
    let w = World::start("headless").await;
    post(&w.http, &w.hub, SERVICES, &headless_template()).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    let copy = await_member_service(&w, &w.member2, "a headless copy", |ip| ip == "None").await;
    assert_eq!(copy["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(copy["metadata"]["labels"][CREATED_BY], "mcs-policy");
    w.await_service_applied("True").await;

    // A real API server changes headlessness in neither direction in place: the user replaces
    // the hub's Service, and the controller deletes and re-creates its copy.
    delete(&w.http, &w.hub, &format!("{SERVICES}/web")).await;
    post(&w.http, &w.hub, SERVICES, &cluster_ip_template()).await;
    let uid = copy["metadata"]["uid"].clone();
    let recreated = await_member_service(&w, &w.member2, "a copy with a cluster IP", |ip| {
        ip != "None" && !ip.is_empty()
    })
    .await;
    assert_ne!(recreated["metadata"]["uid"], uid, "a new Service");
    w.await_service_applied("True").await;

    delete(&w.http, &w.hub, &format!("{SERVICES}/web")).await;
    post(&w.http, &w.hub, SERVICES, &headless_template()).await;
    await_member_service(&w, &w.member2, "headless again", |ip| ip == "None").await;
    w.await_service_applied("True").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_it_did_not_create_is_never_deleted_when_headlessness_differs() {
    let w = World::start("headless-foreign").await;
    let own = cluster_ip_template();
    post(&w.http, &w.member2, SERVICES, &own).await;
    let before = get(&w.http, &w.member2, &format!("{SERVICES}/web"))
        .await
        .unwrap();
    post(&w.http, &w.hub, SERVICES, &headless_template()).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let failed = w.await_service_applied("False").await;
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains("member2"), "{message}");
    assert!(message.contains("not created by mcs-policy"), "{message}");
    let after = get(&w.http, &w.member2, &format!("{SERVICES}/web"))
        .await
        .unwrap();
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(after["spec"]["clusterIP"], before["spec"]["clusterIP"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_an_mcs_deleted_while_a_consumer_was_down_go_when_it_returns() {
    let w = World::start("orphans-deleted").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    w.add_native_slice(&w.member2, "own", "10.2.0.1").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc", "own"])
        .await;

    w.unreachable(&w.member2, true).await;
    delete(&w.http, &w.hub, &format!("{MCS}/web")).await;
    w.await_mcs_gone().await;
    w.unreachable(&w.member2, false).await;

    w.await_slices(&w.member2, "member2", &["own"]).await;
    assert_eq!(w.slice_names(&w.member1).await, ["web-abc"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_in_a_consumer_dropped_while_it_was_down_go_when_it_returns() {
    let w = World::start("orphans-dropped").await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;

    w.unreachable(&w.member2, true).await;
    let current = get(&w.http, &w.hub, &format!("{MCS}/web")).await.unwrap();
    edit(&w.http, &w.hub, &format!("{MCS}/web"), |o| {
        o["spec"]["consumerClusters"] = json!([{"name": "member1"}])
    })
    .await;
    let generation = current["metadata"]["generation"].as_i64().unwrap() + 1;
    w.eventually("a pass over the changed MCS", || async {
        let c = w.condition("EndpointSliceDispatched").await?;
        (c["observedGeneration"] == generation).then_some(())
    })
    .await;
    w.unreachable(&w.member2, false).await;

    w.await_slices(&w.member2, "member2", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_provider_keeps_only_its_own_copies() {
    let w = World::start_full("unreadable-provider", "200ms", &[], true).await;
    let member3 = w.member3.clone().unwrap();
    w.add_native_slice(&w.member1, "web-a", "10.1.0.1").await;
    w.add_native_slice(&w.member2, "web-b", "10.2.0.1").await;
    let spec = json!({
        "providerClusters": [{"name": "member1"}, {"name": "member2"}],
        "consumerClusters": [{"name": "member3"}],
    });
    post(&w.http, &w.hub, MCS, &mcs(spec)).await;
    w.await_slices(&member3, "member3", &["member1-web-a", "member2-web-b"])
        .await;

    w.unreachable(&w.member1, true).await;
    w.await_dispatched("False", "member1").await;
    delete(&w.http, &w.member2, &format!("{SLICES}/web-b")).await;
    w.await_slices(&member3, "member3", &["member1-web-a"])
        .await;

    // member3 is no longer a consumer: nothing of this MCS stays there, whoever is unreadable.
    edit(&w.http, &w.hub, &format!("{MCS}/web"), |o| {
        o["spec"]["consumerClusters"] = json!([{"name": "member2"}])
    })
    .await;
    w.await_slices(&member3, "member3", &[]).await;
    w.unreachable(&w.member1, false).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_name_that_is_not_a_cluster_name_is_refused_until_the_member_is_named() {
    let mut w = World::clusters("context-names", false).await;
    let kubeconfig = write_kubeconfig(
        &w.dir,
        &[
            ("hub", w.hub.as_str()),
            ("gke_proj_zone_member1", w.member1.as_str()),
            ("member2", w.member2.as_str()),
        ],
    );
    let shown = kubeconfig.display().to_string();
    let refusing = tokio::process::Command::new(tests::binary("mcs-policy"))
        .args(["sync", "--kubeconfig", &shown, "--hub", "hub"])
        .kill_on_drop(true)
        .output();
    let refused = tokio::time::timeout(DEADLINE, refusing)
        .await
        .expect("mcs-policy sync refuses to start instead of running")
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("\"gke_proj_zone_member1\"")
            && stderr.contains("is not a valid cluster name")
            && stderr.contains("--member NAME=gke_proj_zone_member1"),
        "{stderr}"
    );

    let args: Vec<String> = [
        "sync",
        "--kubeconfig",
        &shown,
        "--hub",
        "hub",
        "--member",
        "member1=gke_proj_zone_member1",
        "--member",
        "member2",
        "--resync-interval",
        "200ms",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    w.spawn_controller(&args);
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_failures_than_a_condition_holds_are_counted_and_the_status_still_updates() {
    let w = World::start("bounded-messages").await;
    post(&w.http, &w.hub, SERVICES, &cluster_ip_template()).await;
    let slices = 400;
    for i in 0..slices {
        let name = format!("web-{i:03}-{}", "x".repeat(40));
        w.add_native_slice(&w.member1, &name, "10.1.0.7").await;
    }
    let fault = json!({"status": 422, "count": 1_000_000, "verbs": ["patch"], "resource": "endpointslices"});
    w.fault(&w.member2, fault).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let failed = w.await_dispatched("False", "more failures").await;
    let message = failed["message"].as_str().unwrap();
    assert!(message.chars().count() <= 32768, "{}", message.len());
    let left_out: usize = message
        .rsplit("; and ")
        .next()
        .and_then(|tail| tail.strip_suffix(" more failures"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the tail says how many: {}", &message[message.len() - 80..]));
    let shown = message.matches("to cluster member2").count();
    assert_eq!(
        shown + left_out,
        slices,
        "every failure is shown or counted"
    );

    let event = w
        .eventually("a DispatchEndpointSliceFailed event", || async {
            let list = get(&w.http, &w.hub, EVENTS).await?;
            list["items"]
                .as_array()?
                .iter()
                .find(|e| e["reason"] == "DispatchEndpointSliceFailed")
                .cloned()
        })
        .await;
    let note = event["message"].as_str().unwrap();
    assert!(note.len() <= 1024, "{}", note.len());
    assert!(note.ends_with("more failures"), "{note}");
    delete(&w.http, &w.member2, "/_sim/faults").await;
    w.await_dispatched("True", "successfully").await;
}
