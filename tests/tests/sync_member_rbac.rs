//! The member-cluster RBAC of `policies/deploy/member/rbac.yaml` is exactly what the sync
//! controller uses. A scenario makes the controller do everything it does in members (create a
//! missing namespace, create, replace and re-create the Service, apply and prune copies, sweep a
//! returning member), then every authorization check the members' kube-sims recorded (what a
//! real API server's authorizer is asked, `GET /_sim/requests`) must be allowed by those rules,
//! and every verb the rules grant must have been used.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Value, json};
use tests::sync::*;

/// `(apiGroup, resource, verb)` the rules allow, `resource` with `/subresource` when it has one.
type Grant = (String, String, String);

/// The grants of the ClusterRole in `policies/deploy/member/rbac.yaml`.
fn member_rules() -> BTreeSet<Grant> {
    let path = tests::workspace_root().join("policies/deploy/member/rbac.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut grants = BTreeSet::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let doc = Value::deserialize(doc).unwrap();
        if doc["kind"] != "ClusterRole" {
            continue;
        }
        for rule in doc["rules"].as_array().unwrap() {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        grants.insert((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    assert!(
        !grants.is_empty(),
        "no ClusterRole rules in {}",
        path.display()
    );
    grants
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// Non-resource paths every authenticated client may get through Kubernetes' default
/// ClusterRoles `system:discovery` and `system:public-info-viewer` (bound to
/// `system:authenticated`): the rules need not grant them.
fn allowed_by_default(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or(path);
    [
        "/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz",
    ]
    .iter()
    .any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// What the member at `url` was asked to authorize: resource checks as grants, and the
/// non-resource paths.
async fn checks(w: &World, url: &str) -> (Vec<Grant>, Vec<String>) {
    let log = get(&w.http, url, "/_sim/requests").await.unwrap();
    assert_eq!(log["dropped"], 0, "the log kept every check");
    let mut resources = Vec::new();
    let mut paths = Vec::new();
    for entry in log["requests"].as_array().unwrap() {
        if entry["resourceRequest"] == true {
            let resource = match entry["subresource"].as_str().unwrap_or_default() {
                "" => entry["resource"].as_str().unwrap().to_string(),
                sub => format!("{}/{sub}", entry["resource"].as_str().unwrap()),
            };
            let group = entry["apiGroup"].as_str().unwrap().to_string();
            let verb = entry["verb"].as_str().unwrap().to_string();
            resources.push((group, resource, verb));
        } else {
            paths.push(entry["path"].as_str().unwrap().to_string());
        }
    }
    (resources, paths)
}

/// Replaces the hub's Service `shop/web` with `service` (a new object: headlessness cannot
/// change in place).
async fn replace_template(w: &World, service: &Value) {
    delete(&w.http, &w.hub, &format!("{SERVICES}/web")).await;
    post(&w.http, &w.hub, SERVICES, service).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_member_rbac_allows_every_request_of_the_controller_and_nothing_it_does_not_use() {
    let mut w = World::bare_clusters("member-rbac", false).await;
    ensure_namespace(&w.http, &w.hub, "shop").await;
    ensure_namespace(&w.http, &w.member1, "shop").await;
    for url in [&w.member1, &w.member2] {
        delete(&w.http, url, "/_sim/requests").await;
    }
    w.spawn_sync("200ms", &[]);
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    let mut headless = service(ports.clone());
    headless["spec"]["clusterIP"] = json!("None");
    post(&w.http, &w.hub, SERVICES, &headless).await;
    w.add_native_slice(&w.member1, "web-a", "10.1.0.1").await;
    w.add_native_slice(&w.member1, "web-b", "10.1.0.2").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a", "member1-web-b"])
        .await;

    // Service: recreated (headlessness), then replaced (ports).
    replace_template(&w, &service(ports.clone())).await;
    w.eventually("member2's Service with a cluster IP", || async {
        let s = get(&w.http, &w.member2, &format!("{SERVICES}/web")).await?;
        (s["spec"]["clusterIP"] != "None").then_some(())
    })
    .await;
    let mut template = get(&w.http, &w.hub, &format!("{SERVICES}/web"))
        .await
        .unwrap();
    let more = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80},
                      {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9090}]);
    template["spec"]["ports"] = more.clone();
    put(&w.http, &w.hub, &format!("{SERVICES}/web"), &template).await;
    w.await_service_ports(&w.member2, "member2", &more).await;

    // A copy pruned, then everything swept from a member that was away.
    delete(&w.http, &w.member1, &format!("{SLICES}/web-b")).await;
    w.await_slices(&w.member2, "member2", &["member1-web-a"])
        .await;
    w.unreachable(&w.member2, true).await;
    delete(&w.http, &w.hub, &format!("{MCS}/web")).await;
    w.await_mcs_gone().await;
    w.unreachable(&w.member2, false).await;
    w.await_slices(&w.member2, "member2", &[]).await;
    w.kill_controller(0);

    let rules = member_rules();
    let mut used = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for url in [&w.member1, &w.member2] {
        let (resources, paths) = checks(&w, url).await;
        for grant in resources {
            if rules.contains(&grant) {
                used.insert(grant);
            } else {
                refused.insert(grant);
            }
        }
        for path in paths {
            assert!(
                allowed_by_default(&path),
                "{path} is not allowed by the default discovery roles"
            );
        }
    }
    assert!(
        refused.is_empty(),
        "requests the member rules refuse (apiGroup, resource, verb): {refused:?}"
    );
    // The rules for the upstream Multi-Cluster Services API (the chart's upstreamAPI.enabled)
    // are shipped before the controller syncs ServiceExports, so this scenario cannot use them
    // yet; drop this filter with the controller change that does.
    const NOT_YET_USED: [&str; 2] = ["multicluster.x-k8s.io", "about.k8s.io"];
    let unused: Vec<_> = rules
        .difference(&used)
        .filter(|(group, _, _)| !NOT_YET_USED.contains(&group.as_str()))
        .collect();
    assert!(unused.is_empty(), "granted but never used: {unused:?}");
}
