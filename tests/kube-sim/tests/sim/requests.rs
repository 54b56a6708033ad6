//! The request log of `GET /_sim/requests`: what a real server's authorizer is asked.

use serde_json::{Value, json};

use crate::support::Sim;

fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Value {
    json!({"resourceRequest": true, "verb": verb, "apiGroup": group, "apiVersion": "v1",
        "resource": resource, "subresource": "", "namespace": namespace, "name": name})
}

async fn send(sim: &Sim, method: &str, path: &str, content_type: &str, body: &str) -> u16 {
    let reply = sim.request(method, path, content_type, body).await.unwrap();
    reply.status
}

async fn logged(sim: &Sim) -> Vec<Value> {
    let log = sim.get("/_sim/requests").await.json();
    assert_eq!(log["dropped"], 0);
    log["requests"].as_array().unwrap().clone()
}

#[tokio::test]
async fn every_authorized_request_is_logged_with_its_attributes_in_order() {
    let sim = Sim::start().await;
    let cleared = sim
        .request("DELETE", "/_sim/requests", "application/json", "")
        .await
        .unwrap();
    assert_eq!(cleared.json(), json!({"requests": [], "dropped": 0}));
    let json = "application/json";
    let apply = "application/apply-patch+yaml";
    let lease = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l";
    let cm = "/api/v1/namespaces/default/configmaps/cm?fieldManager=test";
    let cm_body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    let lease_body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}});
    let steps = [
        ("GET", "/apis/discovery.k8s.io/v1".to_owned(), json, String::new(), 200),
        ("GET", "/api/v1/namespaces/default/services?watch=false".to_owned(), json, String::new(), 200),
        (
            "GET",
            "/api/v1/namespaces/default/services?watch=1&fieldSelector=metadata.name%3Dkubernetes&timeoutSeconds=1".to_owned(),
            json,
            String::new(),
            200,
        ),
        // An apply that creates is also checked as a create; one that updates is not.
        ("PATCH", cm.to_owned(), apply, cm_body.to_string(), 201),
        ("PATCH", cm.to_owned(), apply, cm_body.to_string(), 200),
        // So is a PUT that creates a Lease.
        ("PUT", lease.to_owned(), json, lease_body.to_string(), 201),
        ("DELETE", "/api/v1/namespaces/default/configmaps".to_owned(), json, String::new(), 200),
        // Refused or not served, but authorized first.
        ("GET", "/api/v1/namespaces/default/services/missing".to_owned(), json, String::new(), 404),
        ("GET", "/apis/example.com/v1/widgets".to_owned(), json, String::new(), 404),
        ("PUT", "/api/v1/namespaces/nowhere/services/s/status".to_owned(), json, "{}".to_owned(), 404),
    ];
    for (method, path, content_type, body, status) in &steps {
        let got = send(&sim, method, path, content_type, body).await;
        assert_eq!(got, *status, "{method} {path}");
    }
    sim.get("/_sim/state").await;
    let status_put = {
        let mut entry = resource("update", "", "services", "nowhere", "s");
        entry["subresource"] = json!("status");
        entry
    };
    let expected = vec![
        json!({"resourceRequest": false, "verb": "get", "path": "/apis/discovery.k8s.io/v1"}),
        resource("list", "", "services", "default", ""),
        resource("watch", "", "services", "default", "kubernetes"),
        resource("patch", "", "configmaps", "default", "cm"),
        resource("create", "", "configmaps", "default", "cm"),
        resource("patch", "", "configmaps", "default", "cm"),
        resource("update", "coordination.k8s.io", "leases", "default", "l"),
        resource("create", "coordination.k8s.io", "leases", "default", "l"),
        resource("deletecollection", "", "configmaps", "default", ""),
        resource("get", "", "services", "default", "missing"),
        resource("list", "example.com", "widgets", "", ""),
        status_put,
    ];
    assert_eq!(logged(&sim).await, expected);
    sim.request("DELETE", "/_sim/requests", json, "")
        .await
        .unwrap();
    assert_eq!(logged(&sim).await, Vec::<Value>::new());
}

#[tokio::test]
async fn an_apply_refused_before_it_creates_is_not_checked_as_a_create() {
    let sim = Sim::start().await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    let path = "/api/v1/namespaces/absent/configmaps/cm?fieldManager=test";
    let status = send(
        &sim,
        "PATCH",
        path,
        "application/apply-patch+yaml",
        &body.to_string(),
    )
    .await;
    assert_eq!(status, 404, "the namespace does not exist");
    assert_eq!(
        logged(&sim).await,
        vec![resource("patch", "", "configmaps", "absent", "cm")]
    );
}

#[tokio::test]
async fn unauthenticated_requests_are_not_logged() {
    let sim = Sim::start_with(&["--token", "secret"]).await;
    let reply = sim.get("/api/v1/namespaces").await;
    assert_eq!(reply.status, 401);
    assert_eq!(logged(&sim).await, Vec::<Value>::new());
}
