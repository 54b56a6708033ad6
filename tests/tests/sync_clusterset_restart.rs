//! The clusterset side after a restart, beside a member that fails, and with a member whose
//! Multi-Cluster Services CRDs serve only `v1alpha1`, on kube-sim:
//!
//! - what outlived its exports while the controller was stopped (ServiceImports, derived
//!   Services, imported slices of ours, even with no ServiceImport of ours left to name it) is
//!   deleted in every member after the restart, and objects without our markers of the same
//!   name are left; a member that lacks an exported name's namespace still gets the import once
//!   the namespace exists;
//! - a member whose watch fails past the grace (the API server still answering) gets the passes
//!   of the names it exports: the other exports are resolved without it at once;
//! - a member whose CRDs serve only `v1alpha1` is reported (a warning naming it and the versions
//!   its CRD serves, a gauge), the others are served, and it is served once its CRDs serve
//!   `v1beta1`.

use serde_json::{Value, json};
use tests::sync::*;

const EXPORTS: &str = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
const IMPORTS: &str = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
const MCS_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";
const CLUSTERSET_MANAGER: &str = "endpointslice-clusterset-controller.karmada.io";
const NO_RESYNC: &str = "1h";
const UPSTREAM_CRDS: [&str; 3] = [
    "multicluster.x-k8s.io_serviceexports.yaml",
    "multicluster.x-k8s.io_serviceimports.yaml",
    "about.k8s.io_clusterproperties.yaml",
];

fn member3(w: &World) -> String {
    w.member3.clone().expect("member3")
}

/// The members of `w`: `(name, url)`.
fn members(w: &World) -> Vec<(String, String)> {
    w.contexts()
        .into_iter()
        .filter(|(n, _)| *n != "hub")
        .map(|(n, u)| (n.to_string(), u.to_string()))
        .collect()
}

/// The clusters (member3 too), the upstream CRDs in every member.
async fn clusterset(test: &str) -> World {
    let w = World::clusters(test, true).await;
    for (_, url) in members(&w) {
        for file in UPSTREAM_CRDS {
            post(&w.http, &url, CRDS, &crd(file)).await;
        }
    }
    w
}

/// A CRD of `policies/crds/` as a cluster with only mcs-api's `v1alpha1` has it: the
/// `v1beta1` version removed, `v1alpha1` the storage version.
fn v1alpha1_only(file: &str) -> Value {
    let mut crd = crd(file);
    let versions = crd["spec"]["versions"].as_array_mut().unwrap();
    versions.retain(|v| v["name"] == "v1alpha1");
    assert_eq!(versions.len(), 1, "{file} has a v1alpha1 version");
    versions[0]["storage"] = json!(true);
    crd
}

/// Exports `shop/<name>` from the cluster at `url` with `ports`: the Service, its own slice,
/// the export.
async fn export_service(w: &World, url: &str, name: &str, ports: Value, address: &str) {
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"selector": {"app": name}, "ports": ports},
    });
    post(&w.http, url, SERVICES, &service).await;
    let slice = native_slice_of(
        &ObjectRef::new("shop", name),
        &format!("{name}-abc"),
        address,
    );
    post(&w.http, url, SLICES, &slice).await;
    let export = json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": "shop"},
    });
    post(&w.http, url, EXPORTS, &export).await;
}

fn http_port(port: u16) -> Value {
    json!([{"name": "http", "port": port, "protocol": "TCP"}])
}

async fn absent(w: &World, url: &str, path: &str) -> bool {
    get(&w.http, url, path).await.is_none()
}

async fn import(w: &World, url: &str, name: &str) -> Option<Value> {
    get(&w.http, url, &format!("{IMPORTS}/{name}")).await
}

/// The EndpointSlices labelled `multicluster.kubernetes.io/service-name: <name>` in the cluster
/// at `url`, with whether each is ours (managed by the clusterset controller).
async fn slices_of(w: &World, url: &str, name: &str) -> Vec<(String, bool)> {
    let path = format!("{SLICES}?labelSelector={MCS_SERVICE_NAME}%3D{name}");
    get(&w.http, url, &path).await.unwrap()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|s| {
            let name = s["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (
                name,
                s["metadata"]["labels"][MANAGED_BY] == CLUSTERSET_MANAGER,
            )
        })
        .collect()
}

/// The name of the derived Service the import of `name` in the cluster at `url` names.
async fn derived_of(w: &World, url: &str, name: &str) -> String {
    w.eventually(
        &format!("the import of {name} in {url} with ips"),
        || async {
            let import = import(w, url, name).await?;
            let ips = import["spec"]["ips"].as_array().map_or(0, Vec::len);
            let derived =
                import["metadata"]["annotations"]["multicluster.kubernetes.io/derived-service"]
                    .as_str()?
                    .to_string();
            (ips > 0).then_some(derived)
        },
    )
    .await
}

/// Waits until every member holds the import of `name`, its derived Service and an imported
/// slice; answers the derived Service's name.
async fn await_imported(w: &World, name: &str) -> String {
    let mut derived = String::new();
    for (_, url) in members(w) {
        derived = derived_of(w, &url, name).await;
        w.eventually(&format!("an imported slice of {name} in {url}"), || async {
            slices_of(w, &url, name)
                .await
                .iter()
                .any(|(_, ours)| *ours)
                .then_some(())
        })
        .await;
    }
    derived
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_outlived_its_exports_while_the_controller_was_stopped_is_deleted_after_a_restart() {
    let mut w = clusterset("clusterset-restart").await;
    // Not ours: a slice of someone else's labelled with the exported name.
    let mut foreign = native_slice_of(&ObjectRef::new("shop", "other"), "web-foreign", "10.9.0.1");
    foreign["metadata"]["labels"][MCS_SERVICE_NAME] = json!("web");
    foreign["metadata"]["labels"][MANAGED_BY] = json!("someone-else.example.com");
    post(&w.http, &w.member2, SLICES, &foreign).await;

    let first = w.spawn_sync(NO_RESYNC, &[]);
    export_service(&w, &w.member1, "web", http_port(80), "10.1.0.1").await;
    export_service(&w, &w.member1, "db", http_port(5432), "10.1.0.2").await;
    let web_derived = await_imported(&w, "web").await;
    let db_derived = await_imported(&w, "db").await;

    // Stopped (as a crash would), then: both exports deleted; the imports of db deleted by
    // hand too, and an import of db without our markers made in member2. Nothing of ours names
    // db any more but its derived Services and imported slices.
    w.kill_controller(first);
    delete(&w.http, &w.member1, &format!("{EXPORTS}/web")).await;
    delete(&w.http, &w.member1, &format!("{EXPORTS}/db")).await;
    for (_, url) in members(&w) {
        delete(&w.http, &url, &format!("{IMPORTS}/db")).await;
    }
    let not_ours = json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
        "metadata": {"name": "db", "namespace": "shop", "labels": {"team": "payments"}},
        "spec": {"type": "ClusterSetIP", "ports": [{"port": 5432, "protocol": "TCP"}]},
    });
    post(&w.http, &w.member2, IMPORTS, &not_ours).await;
    for (_, url) in members(&w) {
        assert!(
            get(&w.http, &url, &format!("{SERVICES}/{db_derived}"))
                .await
                .is_some(),
            "db's derived Service outlived the controller in {url}"
        );
    }

    w.spawn_sync(NO_RESYNC, &[]);
    for (member, url) in members(&w) {
        w.eventually(
            &format!("web's and db's objects gone in {member}"),
            || async {
                let gone = import(&w, &url, "web").await.is_none()
                    && absent(&w, &url, &format!("{SERVICES}/{web_derived}")).await
                    && absent(&w, &url, &format!("{SERVICES}/{db_derived}")).await
                    && !slices_of(&w, &url, "web")
                        .await
                        .iter()
                        .any(|(_, ours)| *ours)
                    && !slices_of(&w, &url, "db")
                        .await
                        .iter()
                        .any(|(_, ours)| *ours);
                gone.then_some(())
            },
        )
        .await;
    }
    // What is not ours is left.
    let left = import(&w, &w.member2, "db")
        .await
        .expect("the import without our markers is left");
    assert_eq!(left["metadata"]["labels"], json!({"team": "payments"}));
    assert_eq!(
        slices_of(&w, &w.member2, "web").await,
        [("web-foreign".to_string(), false)]
    );
    assert!(import(&w, &w.member1, "db").await.is_none());

    // An exported name whose namespace a member lacks still reaches it once created.
    ensure_namespace(&w.http, &w.member1, "payments").await;
    let mut service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "api", "namespace": "payments"},
        "spec": {"selector": {"app": "api"}, "ports": http_port(8080)},
    });
    post(
        &w.http,
        &w.member1,
        "/api/v1/namespaces/payments/services",
        &service,
    )
    .await;
    service["kind"] = json!("ServiceExport");
    service["apiVersion"] = json!("multicluster.x-k8s.io/v1beta1");
    service.as_object_mut().unwrap().remove("spec");
    let exports_at = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/payments/serviceexports";
    post(&w.http, &w.member1, exports_at, &service).await;
    let import_at = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/payments/serviceimports/api";
    w.eventually("the import of payments/api in member1", || async {
        get(&w.http, &w.member1, import_at).await
    })
    .await;
    assert!(get(&w.http, &w.member2, import_at).await.is_none());
    ensure_namespace(&w.http, &w.member2, "payments").await;
    w.eventually("the import of payments/api in member2", || async {
        get(&w.http, &w.member2, import_at).await
    })
    .await;
    assert!(!w.logs().contains("panicked"), "{}", w.logs());
}

/// The `Conflict` condition of the export `name` in the cluster at `url`.
async fn conflict(w: &World, url: &str, name: &str) -> Option<String> {
    let export = get(&w.http, url, &format!("{EXPORTS}/{name}")).await?;
    export["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Conflict")
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

/// The port numbers of the import of `name` in the cluster at `url`.
async fn import_ports(w: &World, url: &str, name: &str) -> Vec<u64> {
    import(w, url, name)
        .await
        .and_then(|i| i["spec"]["ports"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p["port"].as_u64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_failing_past_the_grace_gets_the_passes_of_the_names_it_exports() {
    let mut w = clusterset("clusterset-member-fails").await;
    // A grace: the passes still running when member1 starts failing read it as readable.
    w.spawn_sync(NO_RESYNC, &["--outage-grace", "2s"]);
    // member1's export is the oldest; member2's adds a port: both conflict.
    export_service(&w, &w.member1, "web", http_port(80), "10.1.0.1").await;
    derived_of(&w, &w.member2, "web").await;
    let grpc = json!([{"name": "grpc", "port": 9090, "protocol": "TCP"}]);
    export_service(&w, &w.member2, "web", grpc, "10.2.0.1").await;
    w.eventually("Conflict=True on member2's export", || async {
        (conflict(&w, &w.member2, "web").await.as_deref() == Some("True")).then_some(())
    })
    .await;
    w.eventually("both ports imported in member3", || async {
        (import_ports(&w, &member3(&w), "web").await == [80, 9090]).then_some(())
    })
    .await;

    // member1's ServiceExports can no longer be watched (its API server still answers the
    // membership's probe): member1 is unreadable once the grace is over. Nothing else asks for
    // a pass of web then (no resync during the test): the member's failure must.
    w.fault(
        &w.member1,
        json!({"status": 500, "count": 100000, "verbs": ["list", "watch"],
               "resource": "serviceexports"}),
    )
    .await;
    post(&w.http, &w.member1, "/_sim/drop-watches", &json!({})).await;
    w.eventually("member2's export resolved without member1's", || async {
        let resolved = conflict(&w, &w.member2, "web").await.as_deref() == Some("False")
            && import_ports(&w, &member3(&w), "web").await == [9090];
        resolved.then_some(())
    })
    .await;
    assert!(!w.logs().contains("panicked"), "{}", w.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_crds_serve_only_v1alpha1_is_reported_then_served_once_they_serve_v1beta1() {
    let mut w = World::clusters("clusterset-v1alpha1", true).await;
    for (name, url) in members(&w) {
        for file in UPSTREAM_CRDS {
            let crd = if name == "member3" {
                v1alpha1_only(file)
            } else {
                crd(file)
            };
            post(&w.http, &url, CRDS, &crd).await;
        }
    }
    let listen = free_addr();
    w.spawn_sync(NO_RESYNC, &["--metrics-listen", &listen]);
    export_service(&w, &w.member1, "web", http_port(80), "10.1.0.1").await;
    derived_of(&w, &w.member2, "web").await;

    let gauge = |text: &str, crd: &str| {
        labelled_metric(
            text,
            "mcs_policy_sync_clusterset_crd_unserved_version",
            &format!("cluster=\"member3\",crd=\"{crd}\""),
        )
    };
    let scrape = || async {
        let url = format!("http://{listen}/metrics");
        w.http.get(&url).send().await.ok()?.text().await.ok()
    };
    w.eventually("member3 reported", || async {
        let text = scrape().await?;
        let reported = gauge(&text, "serviceexports.multicluster.x-k8s.io") == Some(1.0)
            && gauge(&text, "serviceimports.multicluster.x-k8s.io") == Some(1.0);
        reported.then_some(())
    })
    .await;
    let logs = w.logs();
    let warning = logs
        .lines()
        .find(|l| {
            l.contains("WARN")
                && l.contains("cluster=member3")
                && l.contains("crd=serviceexports.multicluster.x-k8s.io")
        })
        .unwrap_or_else(|| panic!("a warning names member3: {logs}"));
    assert!(warning.contains("v1alpha1"), "{warning}");
    let v1alpha1 = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/shop/serviceimports/web";
    assert!(get(&w.http, &member3(&w), v1alpha1).await.is_none());

    // Its CRDs upgraded to serve v1beta1 as well: it is served, and no longer reported.
    for file in UPSTREAM_CRDS {
        let name = crd(file)["metadata"]["name"].as_str().unwrap().to_string();
        edit(&w.http, &member3(&w), &format!("{CRDS}/{name}"), |c| {
            c["spec"]["versions"] = crd(file)["spec"]["versions"].clone();
        })
        .await;
    }
    derived_of(&w, &member3(&w), "web").await;
    w.eventually("member3 no longer reported", || async {
        let text = scrape().await?;
        (gauge(&text, "serviceexports.multicluster.x-k8s.io") == Some(0.0)).then_some(())
    })
    .await;
}
