//! Discovery and version documents, as kube-rs and raw clients read them.

use serde_json::Value;

use crate::support::Sim;

#[tokio::test]
async fn apiserver_version_reports_kubernetes_1_32() {
    let sim = Sim::start().await;
    let info = sim
        .client()
        .await
        .apiserver_version()
        .await
        .expect("version parses");
    assert_eq!((info.major.as_str(), info.minor.as_str()), ("1", "32"));
    assert_eq!(info.git_version, "v1.32.0");
}

#[tokio::test]
async fn discovery_documents_list_builtin_resources() {
    let sim = Sim::start().await;
    let core: Value = sim.get("/api").await.json();
    assert_eq!(core["versions"], serde_json::json!(["v1"]));
    let resources: Value = sim.get("/api/v1").await.json();
    let names: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for expected in [
        "services",
        "services/status",
        "namespaces",
        "events",
        "secrets",
        "configmaps",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let groups: Value = sim.get("/apis").await.json();
    let group_names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for expected in [
        "discovery.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    ] {
        assert!(
            group_names.contains(&expected),
            "{expected} missing from {group_names:?}"
        );
    }
    let slices: Value = sim.get("/apis/discovery.k8s.io/v1").await.json();
    assert_eq!(slices["resources"][0]["kind"], "EndpointSlice");
    assert_eq!(sim.get("/apis/example.com/v1").await.status, 404);
    assert_eq!(sim.get("/openapi/v2").await.status, 404);
}
