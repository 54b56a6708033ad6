//! MultiClusterServices of type `LoadBalancer` against kube-sim clusters: the hub's Service is
//! propagated to the providers, the members' load balancers (set through the Service `status`
//! subresource, as a cloud controller does) are gathered into the MCS's
//! `status.loadBalancer.ingress`, and the `LoadBalancerStatusReported` condition and its Events
//! say whether every provider has one (docs/sync.md, "Load balancer status").

use serde_json::{Value, json};
use tests::sync::{
    DISPATCH, MANAGED_BY, MCS, SERVICES, SLICES, World, delete, edit, get, mcs, post, service,
};

const CONDITION: &str = "LoadBalancerStatusReported";

/// MCS `shop/web` of type `LoadBalancer`, with `spec_extra` merged into its spec.
fn lb_mcs(spec_extra: Value) -> Value {
    let mut object = mcs(spec_extra);
    object["spec"]["types"] = json!(["LoadBalancer"]);
    object
}

/// The hub's Service `shop/web`, of type `LoadBalancer`.
fn lb_service() -> Value {
    let mut object = service(json!([{"name": "http", "port": 80, "targetPort": 8080}]));
    object["spec"]["type"] = json!("LoadBalancer");
    object
}

/// `PATCH url+path` with a JSON merge patch.
async fn merge_patch(world: &World, url: &str, path: &str, body: Value) -> reqwest::Response {
    world
        .http
        .patch(format!("{url}{path}"))
        .header("Content-Type", "application/merge-patch+json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// Sets `status.loadBalancer.ingress` of Service `shop/web` in the cluster at `url` through
/// the `status` subresource (a merge patch), as a cloud controller does (usually without
/// `ipMode`: the API server defaults `VIP` for an entry with an `ip`).
async fn set_ingress(world: &World, url: &str, ingress: Value) {
    let path = format!("{SERVICES}/web/status");
    let body = json!({"status": {"loadBalancer": {"ingress": ingress}}});
    let resp = merge_patch(world, url, &path, body).await;
    let status = resp.status();
    assert!(
        status.is_success(),
        "PATCH {path}: {status} {}",
        resp.text().await.unwrap_or_default()
    );
}

/// The hub MCS's `status.loadBalancer.ingress` (`null` when absent).
async fn mcs_ingress(world: &World) -> Value {
    let o = get(&world.http, &world.hub, &format!("{MCS}/web"))
        .await
        .expect("the MCS exists");
    o["status"]["loadBalancer"]["ingress"].clone()
}

/// Waits until the MCS holds `ingress` and its condition has `status` with a message
/// containing `message`; returns the condition.
async fn await_status(world: &World, ingress: Value, status: &str, message: &str) -> Value {
    await_status_within(world, tests::sync::DEADLINE, ingress, status, message).await
}

/// [`await_status`] within `limit`.
async fn await_status_within(
    world: &World,
    limit: std::time::Duration,
    ingress: Value,
    status: &str,
    message: &str,
) -> Value {
    world
        .eventually_within(
            limit,
            &format!("ingress {ingress} and {CONDITION}={status} mentioning {message:?}"),
            || async {
                let c = world.condition(CONDITION).await?;
                let ok = mcs_ingress(world).await == ingress
                    && c["status"] == status
                    && c["message"].as_str()?.contains(message);
                ok.then_some(c)
            },
        )
        .await
}

/// Waits until the cluster at `url` holds Service `web`; returns it.
async fn await_member_service(world: &World, url: &str, cluster: &str) -> Value {
    world
        .eventually(&format!("{cluster} to hold Service web"), || async {
            get(&world.http, url, &format!("{SERVICES}/web")).await
        })
        .await
}

/// Waits until both members hold the `LoadBalancer` Service `web` and the MCS says neither
/// has an ingress yet; returns the condition.
async fn await_both_waiting_for_ingress(world: &World) -> Value {
    for (url, name) in [(&world.member1, "member1"), (&world.member2, "member2")] {
        let copy = await_member_service(world, url, name).await;
        assert_eq!(copy["spec"]["type"], "LoadBalancer", "{name}: {copy}");
    }
    await_status(
        world,
        Value::Null,
        "False",
        "cluster member1 has no load balancer ingress yet; cluster member2 has no load balancer ingress yet",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gathers_every_providers_load_balancer_into_the_mcs_status() {
    let world = World::start("lb-gather").await;
    post(&world.http, &world.hub, SERVICES, &lb_service()).await;
    // member1's own slice must not be copied: LoadBalancer alone copies no EndpointSlice.
    world
        .add_native_slice(&world.member1, "web-a", "10.1.0.1")
        .await;
    post(&world.http, &world.hub, MCS, &lb_mcs(json!({}))).await;

    let pending = await_both_waiting_for_ingress(&world).await;
    assert_eq!(pending["reason"], "LoadBalancerStatusIncomplete");
    world
        .await_event(
            "LoadBalancerStatusIncomplete",
            &["member1 has no load balancer ingress yet"],
        )
        .await;

    set_ingress(
        &world,
        &world.member2,
        json!([{"ip": "198.51.100.20", "ipMode": "VIP",
                "ports": [{"port": 80, "protocol": "TCP"}]}]),
    )
    .await;
    await_status(
        &world,
        json!([{"ip": "198.51.100.20", "ipMode": "VIP"}]),
        "False",
        "cluster member1 has no load balancer ingress yet",
    )
    .await;
    set_ingress(
        &world,
        &world.member1,
        json!([{"hostname": "web.member1.example.com"}, {"ip": "198.51.100.20", "ipMode": "VIP"}]),
    )
    .await;
    let complete = await_status(
        &world,
        json!([{"hostname": "web.member1.example.com"},
               {"ip": "198.51.100.20", "ipMode": "VIP"}]),
        "True",
        "every provider cluster has a load balancer ingress: member1, member2",
    )
    .await;
    assert_eq!(complete["reason"], "LoadBalancerStatusComplete");
    world
        .await_event("LoadBalancerStatusComplete", &["member1, member2"])
        .await;

    // A status the controller wrote once is not written again on every resync.
    let o = get(&world.http, &world.hub, &format!("{MCS}/web"))
        .await
        .unwrap();
    let version = o["metadata"]["resourceVersion"].clone();
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    let again = get(&world.http, &world.hub, &format!("{MCS}/web"))
        .await
        .unwrap();
    assert_eq!(again["metadata"]["resourceVersion"], version);
    // Neither a copy of member1's slice nor our finalizer: nothing to withdraw.
    assert_eq!(
        world.slice_names(&world.member2).await,
        Vec::<String>::new()
    );
    assert!(again["metadata"]["finalizers"].is_null(), "{again}");
    assert!(world.condition("EndpointSliceDispatched").await.is_none());
    // Why port statuses without `error` are left out: the MCS CRD requires `error`, and the
    // API server refuses the whole status with one missing.
    let port_without_error = json!({"status": {"loadBalancer": {"ingress": [
        {"ip": "198.51.100.20", "ports": [{"port": 80, "protocol": "TCP"}]}]}}});
    let refused = merge_patch(
        &world,
        &world.hub,
        &format!("{MCS}/web/status"),
        port_without_error,
    )
    .await;
    assert_eq!(refused.status(), 422, "{}", refused.text().await.unwrap());
    let lists = get(&world.http, &world.member2, SLICES).await.unwrap();
    assert!(
        lists["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["metadata"]["labels"][MANAGED_BY] != DISPATCH)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_providers_added_and_removed() {
    let world = World::start("lb-members").await;
    post(&world.http, &world.hub, SERVICES, &lb_service()).await;
    post(
        &world.http,
        &world.hub,
        MCS,
        &lb_mcs(json!({"providerClusters": [{"name": "member1"}]})),
    )
    .await;
    await_member_service(&world, &world.member1, "member1").await;
    set_ingress(&world, &world.member1, json!([{"ip": "198.51.100.10"}])).await;
    await_status(
        &world,
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}]),
        "True",
        "member1",
    )
    .await;
    // Only the providers get the Service.
    assert!(
        get(&world.http, &world.member2, &format!("{SERVICES}/web"))
            .await
            .is_none()
    );

    // member2 becomes a provider: it gets the Service, and its ingress joins.
    edit(&world.http, &world.hub, &format!("{MCS}/web"), |o| {
        o["spec"]["providerClusters"] = json!([{"name": "member1"}, {"name": "member2"}]);
    })
    .await;
    await_member_service(&world, &world.member2, "member2").await;
    set_ingress(&world, &world.member2, json!([{"ip": "198.51.100.20"}])).await;
    await_status(
        &world,
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}, {"ip": "198.51.100.20", "ipMode": "VIP"}]),
        "True",
        "member1, member2",
    )
    .await;

    // member1 is no longer a provider: its entry goes (its Service stays, as in Karmada).
    edit(&world.http, &world.hub, &format!("{MCS}/web"), |o| {
        o["spec"]["providerClusters"] = json!([{"name": "member2"}]);
    })
    .await;
    await_status(
        &world,
        json!([{"ip": "198.51.100.20", "ipMode": "VIP"}]),
        "True",
        "member2",
    )
    .await;
    assert!(
        get(&world.http, &world.member1, &format!("{SERVICES}/web"))
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_provider_keeps_its_entries_until_the_stale_timeout() {
    let mut world = World::clusters("lb-unreachable", false).await;
    world.spawn_sync("200ms", &["--stale-endpoint-timeout", "3s"]);
    post(&world.http, &world.hub, SERVICES, &lb_service()).await;
    post(&world.http, &world.hub, MCS, &lb_mcs(json!({}))).await;
    await_member_service(&world, &world.member1, "member1").await;
    await_member_service(&world, &world.member2, "member2").await;
    set_ingress(&world, &world.member1, json!([{"ip": "198.51.100.10"}])).await;
    set_ingress(&world, &world.member2, json!([{"ip": "198.51.100.20"}])).await;
    let both =
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}, {"ip": "198.51.100.20", "ipMode": "VIP"}]);
    await_status(&world, both.clone(), "True", "member1, member2").await;

    world.unreachable(&world.member2, true).await;
    let kept = await_status(
        &world,
        both.clone(),
        "False",
        "cluster member2 could not be read; its last known ingress is kept",
    )
    .await;
    assert_eq!(kept["reason"], "LoadBalancerStatusIncomplete");
    await_status(
        &world,
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}]),
        "False",
        "cluster member2 could not be read for longer than the stale timeout; its ingress is withdrawn",
    )
    .await;

    world.unreachable(&world.member2, false).await;
    await_status(&world, both, "True", "member1, member2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_mcs_deleted_and_created_again_as_cross_cluster_dispatches_slices() {
    // spec.types is immutable (the webhook refuses LoadBalancer -> CrossCluster, see
    // tests/fixtures/validate/rejects_update_changing_types_from_load_balancer_to_cross_cluster.json):
    // the way from one to the other is deletion and re-creation.
    let world = World::start("lb-recreate").await;
    post(&world.http, &world.hub, SERVICES, &lb_service()).await;
    world
        .add_native_slice(&world.member1, "web-a", "10.1.0.1")
        .await;
    post(&world.http, &world.hub, MCS, &lb_mcs(json!({}))).await;
    await_member_service(&world, &world.member1, "member1").await;
    set_ingress(&world, &world.member1, json!([{"ip": "198.51.100.10"}])).await;
    await_status(
        &world,
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}]),
        "False",
        "cluster member2 has no load balancer ingress yet",
    )
    .await;
    assert_eq!(
        world.slice_names(&world.member2).await,
        Vec::<String>::new()
    );

    delete(&world.http, &world.hub, &format!("{MCS}/web")).await;
    world.await_mcs_gone().await;
    post(&world.http, &world.hub, MCS, &mcs(json!({}))).await;
    world
        .await_slices(&world.member2, "member2", &["member1-web-a"])
        .await;
    world.await_dispatched("True", "").await;
    let o = get(&world.http, &world.hub, &format!("{MCS}/web"))
        .await
        .unwrap();
    assert!(o["status"]["loadBalancer"]["ingress"].is_null(), "{o}");
    assert!(world.condition(CONDITION).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_reaches_the_status_through_the_member_service_watch_not_the_resync() {
    // No resync after the first pass: only the watch on member Services can carry it.
    let world = World::start_with("lb-watch", "1h").await;
    post(&world.http, &world.hub, SERVICES, &lb_service()).await;
    post(&world.http, &world.hub, MCS, &lb_mcs(json!({}))).await;
    await_both_waiting_for_ingress(&world).await;

    set_ingress(
        &world,
        &world.member1,
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}]),
    )
    .await;
    let set = std::time::Instant::now();
    // The goal with no resync: in the MCS's status within 2 s.
    await_status_within(
        &world,
        std::time::Duration::from_secs(2),
        json!([{"ip": "198.51.100.10", "ipMode": "VIP"}]),
        "False",
        "cluster member2 has no load balancer ingress yet",
    )
    .await;
    eprintln!("ingress in the status {:?} after it was set", set.elapsed());
}
