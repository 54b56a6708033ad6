//! Lists over raw HTTP: pages across namespaces, states at an exact resourceVersion until a
//! compaction (on demand and periodic), the item form of built-in kinds, and plain-text 404s
//! outside served groups.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::Sim;

async fn post(sim: &Sim, path: &str, body: Value) -> Value {
    let reply = sim
        .request("POST", path, "application/json", &body.to_string())
        .await
        .expect("POST answered");
    assert_eq!(reply.status, 201, "{path}: {}", reply.body);
    reply.json()
}

async fn config_map(sim: &Sim, namespace: &str, name: &str) -> String {
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    let created = post(sim, &path, json!({"metadata": {"name": name}})).await;
    created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn names(list: &Value) -> Vec<String> {
    let items = list["items"].as_array().expect("a list");
    items
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap(),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn pages_across_namespaces_follow_key_order_and_keep_their_state() {
    let sim = Sim::start().await;
    for ns in ["a", "a-b"] {
        post(
            &sim,
            "/api/v1/namespaces",
            json!({"metadata": {"name": ns}}),
        )
        .await;
    }
    for (ns, name) in [("a", "x"), ("a-b", "y"), ("a", "z")] {
        config_map(&sim, ns, name).await;
    }
    let base = "/api/v1/configmaps?labelSelector=&limit=2";
    let first = sim.get(base).await.json();
    // "a-b/y" sorts before "a/x": '-' is below '/'.
    assert_eq!(names(&first), vec!["a-b/y", "a/x"]);
    assert!(
        first["items"][0].get("kind").is_none(),
        "typed list items carry no kind"
    );
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    // A write between pages does not show: later pages read the first page's state.
    config_map(&sim, "a", "y").await;
    let second = sim.get(&format!("{base}&continue={token}")).await.json();
    assert_eq!(names(&second), vec!["a/z"]);
    assert_eq!(
        second["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert!(second["metadata"].get("continue").is_none());
}

#[tokio::test]
async fn exact_lists_read_past_states_until_a_compaction() {
    let sim = Sim::start().await;
    let first = config_map(&sim, "default", "one").await;
    config_map(&sim, "default", "two").await;
    let at_first = format!(
        "/api/v1/namespaces/default/configmaps?resourceVersion={first}&resourceVersionMatch=Exact"
    );
    let listed = sim.get(&at_first).await.json();
    assert_eq!(names(&listed), vec!["default/one"]);
    assert_eq!(listed["metadata"]["resourceVersion"], json!(first));

    let compacted = sim.admin("/_sim/compact", json!({})).await;
    let compacted: u64 = compacted["compacted"].as_str().unwrap().parse().unwrap();
    assert!(compacted > first.parse().unwrap());
    let expired = sim.get(&at_first).await;
    assert_eq!(expired.status, 410);
    assert_eq!(
        expired.json()["message"],
        "The resourceVersion for the provided list is too old."
    );
    let future = sim
        .get("/api/v1/namespaces/default/configmaps?resourceVersion=999999&resourceVersionMatch=Exact")
        .await;
    assert_eq!(future.status, 504, "{}", future.body);
}

#[tokio::test]
async fn periodic_compaction_keeps_one_interval_of_history() {
    let sim = Sim::start_with(&["--compaction-interval-seconds", "1"]).await;
    let first = config_map(&sim, "default", "one").await;
    let at_first = format!(
        "/api/v1/namespaces/default/configmaps?resourceVersion={first}&resourceVersionMatch=Exact"
    );
    assert_eq!(sim.get(&at_first).await.status, 200);
    // The first tick only notes the revision; the second compacts at it.
    config_map(&sim, "default", "two").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(sim.get(&at_first).await.status, 410);
}

#[tokio::test]
async fn unserved_groups_get_the_plain_text_404() {
    let sim = Sim::start().await;
    let unknown = sim.get("/apis/nope.example.com/v1/namespaces/x/foos").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(unknown.body, "404 page not found\n");
    for unserved in [
        "/apis/nope.example.com",
        "/apis/nope.example.com/v1",
        "/nope",
    ] {
        let reply = sim.get(unserved).await;
        assert_eq!(
            (reply.status, reply.body.as_str()),
            (404, "404 page not found\n")
        );
    }
    let version = sim.get("/apis/discovery.k8s.io/v1beta1").await;
    assert_eq!(version.json()["reason"], "NotFound");
    let resource = sim.get("/apis/discovery.k8s.io/v1/namespaces/x/foos").await;
    assert_eq!(resource.status, 404);
    assert_eq!(
        resource.json()["message"],
        "the server could not find the requested resource"
    );
}
