//! The member-cluster RBAC of `policies/deploy/member/rbac.yaml` is exactly what the sync
//! controller uses. A scenario makes the controller do everything it does in members (create a
//! missing namespace, create, replace and re-create the Service, apply and prune copies, sweep a
//! returning member, import an export of the upstream Multi-Cluster Services API and withdraw
//! it), then every authorization check the members' kube-sims recorded (what a
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
    // member2 gets the upstream API's CRDs only once the controller runs: until then the
    // controller watches them by name, which the rules must allow too.
    let upstream_crds = [
        "multicluster.x-k8s.io_serviceexports.yaml",
        "multicluster.x-k8s.io_serviceimports.yaml",
        "about.k8s.io_clusterproperties.yaml",
    ];
    for file in upstream_crds {
        post(&w.http, &w.member1, CRDS, &crd(file)).await;
    }
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

    for file in upstream_crds {
        post(&w.http, &w.member2, CRDS, &crd(file)).await;
    }

    // The upstream API: an export imported in both members (ServiceImport and its status, the
    // derived Service, imported slices, the export's conditions), then withdrawn.
    let exports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
    let imports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
    let api = ObjectRef::new("shop", "api");
    post(
        &w.http,
        &w.member1,
        SERVICES,
        &service_of(&api, ports.clone()),
    )
    .await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice_of(&api, "api-a", "10.1.0.3"),
    )
    .await;
    let export = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": "api", "namespace": "shop"}});
    post(&w.http, &w.member1, exports, &export).await;
    // Read by list (granted), so that the scenario's own checks need no verb of their own.
    let named = |list: Option<Value>, name: &str| {
        list?["items"]
            .as_array()?
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .cloned()
    };
    w.eventually("member2's import with its IP and clusters", || async {
        let import = named(get(&w.http, &w.member2, imports).await, "api")?;
        let ready = import["spec"]["ips"]
            .as_array()
            .is_some_and(|i| !i.is_empty())
            && import["status"]["clusters"]
                .as_array()
                .is_some_and(|c| !c.is_empty());
        ready.then_some(())
    })
    .await;
    w.eventually("the export's conditions", || async {
        let export = named(get(&w.http, &w.member1, exports).await, "api")?;
        export["status"]["conditions"].as_array().map(|_| ())
    })
    .await;
    delete(&w.http, &w.member1, &format!("{exports}/api")).await;
    w.eventually("member2's import deleted", || async {
        named(get(&w.http, &w.member2, imports).await, "api")
            .is_none()
            .then_some(())
    })
    .await;

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
    // The scenario's own writes of the export and of member2's CRDs (a user's, not the
    // controller's).
    for (group, resource, verb) in [
        ("multicluster.x-k8s.io", "serviceexports", "create"),
        ("multicluster.x-k8s.io", "serviceexports", "delete"),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "create",
        ),
    ] {
        refused.remove(&(group.to_string(), resource.to_string(), verb.to_string()));
    }
    assert!(
        refused.is_empty(),
        "requests the member rules refuse (apiGroup, resource, verb): {refused:?}"
    );
    let unused: Vec<_> = rules.difference(&used).collect();
    assert!(unused.is_empty(), "granted but never used: {unused:?}");
}
