//! The `/_sim/` admin API (fault injection, simulated outages, state dump, reset) and bearer tokens.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::support::{Sim, api_error, eventually};

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

async fn sim_with_config_map() -> (Sim, Api<ConfigMap>) {
    let sim = Sim::start().await;
    let maps: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    maps.create(&PostParams::default(), &config_map("c"))
        .await
        .unwrap();
    (sim, maps)
}

#[tokio::test]
async fn injected_statuses_fail_count_requests_then_service_resumes() {
    let (sim, maps) = sim_with_config_map().await;
    for (code, reason) in [
        (409, "Conflict"),
        (429, "TooManyRequests"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
    ] {
        sim.admin("/_sim/faults", json!({"status": code, "count": 2}))
            .await;
        for attempt in 0..2 {
            let status = api_error(maps.get("c").await);
            assert_eq!(
                (status.code, status.reason.as_str()),
                (code, reason),
                "attempt {attempt}"
            );
        }
        maps.get("c")
            .await
            .unwrap_or_else(|e| panic!("served again after {code}: {e}"));
    }
}

#[tokio::test]
async fn throttling_answers_carry_retry_after() {
    let (sim, _maps) = sim_with_config_map().await;
    for (code, retry_after) in [(429, Some("3")), (503, Some("3")), (500, None)] {
        sim.admin(
            "/_sim/faults",
            json!({"status": code, "count": 1, "retryAfterSeconds": 3}),
        )
        .await;
        let reply = sim.get("/api/v1/namespaces/default/configmaps/c").await;
        assert_eq!(reply.status, code);
        assert_eq!(reply.header("retry-after"), retry_after, "status {code}");
        assert_eq!(reply.json()["kind"], "Status");
    }
}

#[tokio::test]
async fn faults_apply_only_to_their_verbs_and_resource() {
    let (sim, maps) = sim_with_config_map().await;
    sim.admin(
        "/_sim/faults",
        json!({"status": 500, "count": 1, "verbs": ["create"], "resource": "endpointslices"}),
    )
    .await;
    maps.get("c").await.unwrap();
    maps.create(&PostParams::default(), &config_map("d"))
        .await
        .unwrap();
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": []});
    let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let failed = sim
        .request("POST", path, "application/json", &slice.to_string())
        .await
        .unwrap();
    assert_eq!(failed.status, 500);
    let created = sim
        .request("POST", path, "application/json", &slice.to_string())
        .await
        .unwrap();
    assert_eq!(created.status, 201);
    let pending = sim.get("/_sim/faults").await.json();
    assert_eq!(pending["faults"], json!([]));
}

#[tokio::test]
async fn invalid_faults_are_refused() {
    let sim = Sim::start().await;
    for body in [
        json!({"status": 200}),
        json!({"status": 500, "verbs": ["explode"]}),
        json!({"count": 1}),
    ] {
        let reply = sim
            .request(
                "POST",
                "/_sim/faults",
                "application/json",
                &body.to_string(),
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 400, "{body}");
    }
}

#[tokio::test]
async fn a_retrying_client_rides_out_throttling() {
    let (sim, _maps) = sim_with_config_map().await;
    let mut config = sim.config().await;
    config.default_retry = true;
    let maps: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    sim.admin(
        "/_sim/faults",
        json!({"status": 429, "count": 2, "retryAfterSeconds": 1}),
    )
    .await;
    maps.get("c")
        .await
        .expect("kube's default retry policy honours Retry-After");
    assert_eq!(
        sim.get("/_sim/faults").await.json()["faults"],
        json!([]),
        "both faults were hit"
    );
}

#[tokio::test]
async fn an_unreachable_server_closes_connections_until_switched_back() {
    let (sim, maps) = sim_with_config_map().await;
    let state = sim.admin("/_sim/unreachable", json!({"on": true})).await;
    assert_eq!(state["unreachable"], true);
    let refused = sim
        .request(
            "GET",
            "/api/v1/namespaces/default/configmaps/c",
            "application/json",
            "",
        )
        .await;
    let error = refused.expect_err("no response while unreachable");
    assert_eq!(error.kind(), std::io::ErrorKind::UnexpectedEof);
    let failure = maps
        .get("c")
        .await
        .expect_err("kube-rs gets no answer while unreachable");
    assert!(
        matches!(failure, kube::Error::Service(_)),
        "a transport failure, not an API answer: {failure:?}"
    );
    sim.admin("/_sim/unreachable", json!({"on": false})).await;
    maps.get("c").await.expect("reachable again");
}

#[tokio::test]
async fn a_timed_outage_ends_by_itself() {
    let (sim, maps) = sim_with_config_map().await;
    sim.admin("/_sim/unreachable", json!({"seconds": 1})).await;
    assert!(maps.get("c").await.is_err());
    eventually("the outage to end", || async {
        maps.get("c").await.is_ok()
    })
    .await;
}

#[tokio::test]
async fn going_unreachable_cuts_open_watches_and_dropping_ends_them_cleanly() {
    let (sim, _maps) = sim_with_config_map().await;
    let path = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=60";
    for (admin_path, body, clean) in [
        ("/_sim/drop-watches", json!({}), true),
        ("/_sim/unreachable", json!({"on": true}), false),
    ] {
        let watching = {
            let (address, path) = (sim.address.clone(), path.to_owned());
            tokio::spawn(async move { crate::support::raw_get(&address, &path).await })
        };
        sim.wait_for_open_watches(1).await;
        sim.admin(admin_path, body).await;
        let reply = tokio::time::timeout(Duration::from_secs(10), watching)
            .await
            .expect("the watch ends")
            .unwrap()
            .unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.events()[0]["object"]["metadata"]["name"],
            "c",
            "the initial event arrived"
        );
        assert_eq!(reply.complete, clean, "after {admin_path}");
        sim.admin("/_sim/unreachable", json!({"on": false})).await;
    }
}

#[tokio::test]
async fn a_configured_token_is_required() {
    let strict = Sim::start_with(&["--token", "someone-else"]).await;
    let status = api_error(
        Api::<ConfigMap>::namespaced(strict.client().await, "default")
            .get("c")
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
    assert_eq!(
        strict.get("/_sim/state").await.status,
        200,
        "the admin API needs no token"
    );
    let matching = Sim::start_with(&["--token", crate::support::TOKEN]).await;
    let maps: Api<ConfigMap> = Api::namespaced(matching.client().await, "default");
    maps.create(&PostParams::default(), &config_map("c"))
        .await
        .expect("the right token is accepted");
}

#[tokio::test]
async fn state_dumps_objects_and_reset_returns_to_a_fresh_cluster() {
    let (sim, maps) = sim_with_config_map().await;
    sim.admin(
        "/_sim/faults",
        json!({"status": 500, "count": 5, "verbs": ["delete"]}),
    )
    .await;
    let state = sim.get("/_sim/state").await.json();
    assert_eq!(state["resources"]["configmaps"][0]["metadata"]["name"], "c");
    assert_eq!(
        state["resources"]["namespaces"].as_array().map(Vec::len),
        Some(4)
    );
    let rv: u64 = state["resourceVersion"].as_str().unwrap().parse().unwrap();
    sim.admin("/_sim/reset", json!({})).await;
    assert!(
        maps.get_opt("c").await.unwrap().is_none(),
        "objects are gone"
    );
    assert_eq!(
        sim.get("/_sim/faults").await.json()["faults"],
        json!([]),
        "faults are gone"
    );
    let created = maps
        .create(&PostParams::default(), &config_map("c"))
        .await
        .unwrap();
    let new_rv: u64 = created.metadata.resource_version.unwrap().parse().unwrap();
    assert!(new_rv > rv, "resourceVersions keep growing across a reset");
}

#[tokio::test]
async fn a_restart_cuts_watches_keeps_the_data_and_expires_older_resource_versions() {
    let (sim, maps) = sim_with_config_map().await;
    let rv_of = |map: &ConfigMap| map.metadata.resource_version.clone().unwrap();
    let before = rv_of(&maps.get("c").await.unwrap());
    // Another write: the revision moves past the map's.
    let other = maps
        .create(&PostParams::default(), &config_map("d"))
        .await
        .unwrap();
    let current = rv_of(&other);
    let watches = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=60";
    let watching = {
        let (address, path) = (sim.address.clone(), watches.to_owned());
        tokio::spawn(async move { crate::support::raw_get(&address, &path).await })
    };
    sim.wait_for_open_watches(1).await;

    let state = sim.admin("/_sim/restart", json!({"seconds": 1})).await;
    assert_eq!(state["unreachable"], true);
    let cut = tokio::time::timeout(Duration::from_secs(10), watching)
        .await
        .expect("the watch ends")
        .unwrap()
        .unwrap();
    assert!(!cut.complete, "open watches are cut, not ended cleanly");
    assert!(maps.get("c").await.is_err(), "down while restarting");
    eventually("the server to be back", || async {
        maps.get("c").await.is_ok()
    })
    .await;
    assert_eq!(rv_of(&maps.get("c").await.unwrap()), before, "data kept");

    // What kube-apiserver's new watch cache answers (recorded: 17-watch-expired).
    let path = format!("{watches}&resourceVersion={before}&allowWatchBookmarks=true");
    let old = sim.get(&path).await;
    assert_eq!(old.status, 200);
    let events = old.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
    assert_eq!(
        events[0]["object"]["message"],
        format!("too old resource version: {before} ({current})")
    );
    // From the restart's revision on, watches resume.
    let resumed = {
        let (address, path) = (
            sim.address.clone(),
            format!("{watches}&resourceVersion={current}"),
        );
        tokio::spawn(async move { crate::support::raw_get(&address, &path).await })
    };
    sim.wait_for_open_watches(1).await;
    maps.create(&PostParams::default(), &config_map("e"))
        .await
        .unwrap();
    sim.admin("/_sim/drop-watches", json!({})).await;
    let reply = resumed.await.unwrap().unwrap();
    let names: Vec<_> = reply
        .events()
        .iter()
        .map(|e| (e["type"].clone(), e["object"]["metadata"]["name"].clone()))
        .collect();
    assert_eq!(names, [(json!("ADDED"), json!("e"))]);
}
