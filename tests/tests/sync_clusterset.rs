//! The upstream Multi-Cluster Services API (`multicluster.x-k8s.io` ServiceExport and
//! ServiceImport, `about.k8s.io` ClusterProperty) synced member to member by `mcs-policy sync`,
//! on kube-sim: the behaviours the mcs-api conformance suite's Required tests check
//! (conformance/service_import.go, endpoint_slice.go), with two and three members, a member
//! without the CRDs, and a hub without the MultiClusterService CRD.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::sync::*;

const EXPORTS: &str = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
const IMPORTS: &str = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
const PROPERTIES: &str = "/apis/about.k8s.io/v1beta1/clusterproperties";
const MCS_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";
const SOURCE_CLUSTER: &str = "multicluster.kubernetes.io/source-cluster";
/// No resync during a test: whatever happens is the watches' doing.
const NO_RESYNC: &str = "1h";

/// Installs the upstream API's CRDs in the cluster at `url`.
async fn install_crds(w: &World, url: &str) {
    for file in [
        "multicluster.x-k8s.io_serviceexports.yaml",
        "multicluster.x-k8s.io_serviceimports.yaml",
        "about.k8s.io_clusterproperties.yaml",
    ] {
        post(&w.http, url, CRDS, &crd(file)).await;
    }
}

/// The members of `w`, by context name.
fn members(w: &World) -> Vec<(&str, &str)> {
    w.contexts()
        .into_iter()
        .filter(|(n, _)| *n != "hub")
        .collect()
}

/// The clusters, the upstream CRDs in every member (but those of `without`), no controller.
async fn clusterset(test: &str, member3: bool, without: &[&str]) -> World {
    let w = World::clusters(test, member3).await;
    for (name, url) in members(&w) {
        if !without.contains(&name) {
            install_crds(&w, url).await;
        }
    }
    w
}

fn export(name: &str) -> Value {
    json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": "shop"},
    })
}

/// Service `shop/<name>` with `spec`.
fn service(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": spec,
    })
}

fn web_spec(port: u16) -> Value {
    json!({
        "selector": {"app": "web"},
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
        "sessionAffinity": "ClientIP",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 300}},
        "internalTrafficPolicy": "Local",
        "trafficDistribution": "PreferClose",
    })
}

/// Exports `shop/<name>` from the cluster at `url`: the Service, its own slice, the export.
async fn export_service(w: &World, url: &str, name: &str, spec: Value, address: &str) {
    post(&w.http, url, SERVICES, &service(name, spec)).await;
    let slice = native_slice_of(
        &ObjectRef::new("shop", name),
        &format!("{name}-abc"),
        address,
    );
    post(&w.http, url, SLICES, &slice).await;
    post(&w.http, url, EXPORTS, &export(name)).await;
}

async fn import(w: &World, url: &str, name: &str) -> Option<Value> {
    get(&w.http, url, &format!("{IMPORTS}/{name}")).await
}

/// The export's condition of `type_`, once it has one.
async fn export_condition(w: &World, url: &str, name: &str, type_: &str) -> Option<Value> {
    let export = get(&w.http, url, &format!("{EXPORTS}/{name}")).await?;
    export["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

/// The imported slices of `name` in the cluster at `url`.
async fn imported_slices(w: &World, url: &str, name: &str) -> Vec<Value> {
    let path = format!("{SLICES}?labelSelector={MCS_SERVICE_NAME}%3D{name}");
    get(&w.http, url, &path).await.unwrap()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until every cluster of `urls` holds an import of `name` for which `check` holds.
async fn await_imports(
    w: &World,
    urls: &[&str],
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    for url in urls {
        let import = w
            .eventually(&format!("{what} in {url}"), || async {
                import(w, url, name).await.filter(|i| check(i))
            })
            .await;
        out.push(import);
    }
    out
}

/// The first address of every imported slice of `name` in the cluster at `url`.
async fn imported_addresses(w: &World, url: &str, name: &str) -> Vec<String> {
    imported_slices(w, url, name)
        .await
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["addresses"][0].as_str().map(str::to_string))
        .collect()
}

fn has_ips(import: &Value) -> bool {
    let ips = import["spec"]["ips"].as_array().map_or(0, Vec::len);
    let families = import["spec"]["ipFamilies"].as_array().map_or(0, Vec::len);
    ips > 0 && ips == families
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_is_imported_by_every_member_with_the_services_properties_and_endpoints() {
    let mut w = clusterset("clusterset-import", false, &[]).await;
    let property = json!({"apiVersion": "about.k8s.io/v1beta1", "kind": "ClusterProperty",
        "metadata": {"name": "cluster.clusterset.k8s.io"}, "spec": {"value": "east"}});
    post(&w.http, &w.member1, PROPERTIES, &property).await;
    w.spawn_sync(NO_RESYNC, &[]);
    w.eventually("the controller's caches listed", || async {
        w.logs().contains("caches listed").then_some(())
    })
    .await;
    let started = Instant::now();
    export_service(&w, &w.member1, "web", web_spec(80), "10.1.0.1").await;
    let urls = [w.member1.as_str(), w.member2.as_str()];
    let imports = await_imports(&w, &urls, "web", "a ClusterSetIP import with ips", |i| {
        i["spec"]["type"] == "ClusterSetIP" && has_ips(i)
    })
    .await;
    println!(
        "export → imports with ips in every member: {:?}",
        started.elapsed()
    );
    for import in &imports {
        let spec = &import["spec"];
        assert_eq!(spec["ports"][0]["port"], 80, "{import}");
        assert_eq!(spec["ports"][0]["name"], "http", "{import}");
        assert_eq!(spec["sessionAffinity"], "ClientIP", "{import}");
        assert_eq!(
            spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            300
        );
        assert_eq!(spec["internalTrafficPolicy"], "Local", "{import}");
        assert_eq!(spec["trafficDistribution"], "PreferClose", "{import}");
        assert_eq!(
            import["status"]["clusters"],
            json!([{"cluster": "east"}]),
            "{import}"
        );
    }
    // The import's IP is its member's derived Service's.
    let derived =
        imports[1]["metadata"]["annotations"]["multicluster.kubernetes.io/derived-service"]
            .as_str()
            .unwrap()
            .to_string();
    let service = get(&w.http, &w.member2, &format!("{SERVICES}/{derived}"))
        .await
        .unwrap();
    assert_eq!(service["spec"]["clusterIPs"], imports[1]["spec"]["ips"]);
    let valid = w
        .eventually("Valid=True on the export", || {
            export_condition(&w, &w.member1, "web", "Valid")
        })
        .await;
    assert_eq!(valid["status"], "True", "{valid}");
    for url in urls {
        let slices = w
            .eventually("the imported slice", || async {
                let slices = imported_slices(&w, url, "web").await;
                (!slices.is_empty()).then_some(slices)
            })
            .await;
        let labels = &slices[0]["metadata"]["labels"];
        assert_eq!(labels[MCS_SERVICE_NAME], "web", "{labels}");
        assert_eq!(labels[SOURCE_CLUSTER], "east", "{labels}");
        assert_eq!(labels[SERVICE_NAME], derived.as_str(), "{labels}");
        assert_ne!(
            labels[MANAGED_BY], "endpointslice-controller.k8s.io",
            "{labels}"
        );
        assert!(labels[MANAGED_BY].is_string(), "{labels}");
    }

    // An endpoint change of the exported Service reaches every member.
    let changed = Instant::now();
    edit(&w.http, &w.member1, &format!("{SLICES}/web-abc"), |s| {
        s["endpoints"][0]["addresses"][0] = json!("10.1.0.99");
    })
    .await;
    for url in urls {
        w.eventually_within(Duration::from_secs(5), "the endpoint change", || async {
            (imported_addresses(&w, url, "web").await == ["10.1.0.99"]).then_some(())
        })
        .await;
    }
    println!("endpoint change → every member: {:?}", changed.elapsed());

    // The last export gone: the imports and imported slices go, well within 20 s.
    let deleted = Instant::now();
    delete(&w.http, &w.member1, &format!("{EXPORTS}/web")).await;
    for url in urls {
        w.eventually_within(Duration::from_secs(5), "the import deleted", || async {
            let gone = import(&w, url, "web").await.is_none()
                && imported_slices(&w, url, "web").await.is_empty()
                && get(&w.http, url, &format!("{SERVICES}/{derived}"))
                    .await
                    .is_none();
            gone.then_some(())
        })
        .await;
    }
    println!(
        "last export deleted → imports gone: {:?}",
        deleted.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_export_is_imported_headless_and_an_external_name_is_not_valid() {
    let mut w = clusterset("clusterset-types", false, &[]).await;
    w.spawn_sync(NO_RESYNC, &[]);
    let headless = json!({"clusterIP": "None", "selector": {"app": "db"},
        "ports": [{"name": "sql", "port": 5432, "protocol": "TCP"}]});
    export_service(&w, &w.member1, "db", headless, "10.1.0.5").await;
    let external = json!({"type": "ExternalName", "externalName": "example.com"});
    post(&w.http, &w.member1, SERVICES, &service("ext", external)).await;
    post(&w.http, &w.member1, EXPORTS, &export("ext")).await;
    let urls = [w.member1.as_str(), w.member2.as_str()];
    let imports = await_imports(&w, &urls, "db", "a Headless import", |i| {
        i["spec"]["type"] == "Headless"
    })
    .await;
    for import in &imports {
        assert!(
            import["spec"]["ips"].as_array().is_none_or(Vec::is_empty),
            "{import}"
        );
        assert_eq!(import["spec"]["ports"][0]["port"], 5432, "{import}");
    }
    for url in urls {
        w.eventually("the headless endpoints imported", || async {
            (imported_addresses(&w, url, "db").await == ["10.1.0.5"]).then_some(())
        })
        .await;
    }
    let valid = w
        .eventually("Valid on the ExternalName export", || {
            export_condition(&w, &w.member1, "ext", "Valid")
        })
        .await;
    assert_eq!(valid["status"], "False", "{valid}");
    assert_eq!(valid["reason"], "InvalidServiceType", "{valid}");
    for url in urls {
        assert!(import(&w, url, "ext").await.is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicting_exports_report_a_conflict_the_oldest_wins_and_the_import_lasts_until_the_last_export()
 {
    let mut w = clusterset("clusterset-conflict", true, &[]).await;
    w.spawn_sync(NO_RESYNC, &[]);
    let member3 = w.member3.clone().unwrap();
    export_service(&w, &w.member1, "web", web_spec(80), "10.1.0.1").await;
    let urls = [w.member1.as_str(), w.member2.as_str(), member3.as_str()];
    await_imports(&w, &urls, "web", "the import of member1's export", |i| {
        i["status"]["clusters"].as_array().map_or(0, Vec::len) == 1
    })
    .await;
    // Created later: member1's export is the oldest, and wins.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    export_service(&w, &w.member2, "web", web_spec(8080), "10.2.0.1").await;
    for url in [w.member1.as_str(), w.member2.as_str()] {
        let conflict = w
            .eventually("Conflict=True", || async {
                export_condition(&w, url, "web", "Conflict")
                    .await
                    .filter(|c| c["status"] == "True")
            })
            .await;
        assert_eq!(conflict["reason"], "PortConflict", "{conflict}");
    }
    let imports = await_imports(&w, &urls, "web", "both exporters listed", |i| {
        i["status"]["clusters"].as_array().map_or(0, Vec::len) == 2
    })
    .await;
    for import in &imports {
        assert_eq!(
            import["spec"]["ports"],
            json!([{"name": "http", "port": 80, "protocol": "TCP"}])
        );
    }
    for url in urls {
        w.eventually("the endpoints of both exporters", || async {
            let mut addresses = imported_addresses(&w, url, "web").await;
            addresses.sort();
            (addresses == ["10.1.0.1", "10.2.0.1"]).then_some(())
        })
        .await;
    }

    // The winner's export goes: the import stays, from member2's export alone.
    delete(&w.http, &w.member1, &format!("{EXPORTS}/web")).await;
    await_imports(&w, &urls, "web", "member2 alone", |i| {
        i["status"]["clusters"] == json!([{"cluster": "member2"}])
            && i["spec"]["ports"][0]["port"] == 8080
    })
    .await;
    for url in urls {
        w.eventually("member1's endpoints withdrawn", || async {
            (imported_addresses(&w, url, "web").await == ["10.2.0.1"]).then_some(())
        })
        .await;
    }
    let deleted = Instant::now();
    delete(&w.http, &w.member2, &format!("{EXPORTS}/web")).await;
    for url in urls {
        w.eventually_within(Duration::from_secs(5), "the import deleted", || async {
            let gone = import(&w, url, "web").await.is_none()
                && imported_slices(&w, url, "web").await.is_empty();
            gone.then_some(())
        })
        .await;
    }
    println!(
        "last export deleted → imports gone in 3 members: {:?}",
        deleted.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_without_the_crds_disturbs_neither_the_others_nor_the_multiclusterservices() {
    let mut w = clusterset("clusterset-no-crds", true, &["member3"]).await;
    w.spawn_sync(NO_RESYNC, &[]);
    let member3 = w.member3.clone().unwrap();
    export_service(&w, &w.member1, "api", web_spec(80), "10.1.0.1").await;
    let urls = [w.member1.as_str(), w.member2.as_str()];
    await_imports(&w, &urls, "api", "the import", has_ips).await;
    let valid = w
        .eventually("Valid=True", || {
            export_condition(&w, &w.member1, "api", "Valid")
        })
        .await;
    assert_eq!(valid["status"], "True", "{valid}");
    // member3 gets nothing of the clusterset: no derived Service, no imported slice.
    let services = get(&w.http, &member3, SERVICES).await.unwrap();
    assert!(
        services["items"].as_array().unwrap().iter().all(|s| {
            !s["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("derived-")
        }),
        "{services}"
    );
    assert!(imported_slices(&w, &member3, "api").await.is_empty());

    // A MultiClusterService over the same members still syncs, member3 included.
    post(
        &w.http,
        &w.hub,
        MCS,
        &mcs(json!({
            "providerClusters": [{"name": "member1"}],
            "consumerClusters": [{"name": "member3"}],
        })),
    )
    .await;
    post(
        &w.http,
        &w.hub,
        SERVICES,
        &tests::sync::service(json!([{"name": "http", "port": 80}])),
    )
    .await;
    w.add_native_slice(&w.member1, "web-m1", "10.1.0.7").await;
    w.await_slices(&member3, "member3", &["member1-web-m1"])
        .await;
    assert!(!w.logs().contains("panicked"), "{}", w.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_sync_when_the_hub_serves_no_multiclusterservices() {
    let mut w = clusterset("clusterset-no-hub-crd", false, &[]).await;
    delete(
        &w.http,
        &w.hub.clone(),
        &format!("{CRDS}/multiclusterservices.networking.karmada.io"),
    )
    .await;
    let listen = free_addr();
    w.spawn_sync(NO_RESYNC, &["--metrics-listen", &listen]);
    export_service(&w, &w.member2, "web", web_spec(80), "10.2.0.1").await;
    let urls = [w.member1.as_str(), w.member2.as_str()];
    await_imports(&w, &urls, "web", "the import", has_ips).await;
    w.eventually("the endpoints in member1", || async {
        (imported_addresses(&w, &w.member1, "web").await == ["10.2.0.1"]).then_some(())
    })
    .await;
    assert!(
        w.logs().contains("the hub serves no multiclusterservices"),
        "{}",
        w.logs()
    );
    // A live change of the exported name (a second slice of the Service in member2) carried
    // to member1 is one observation of the clusterset's propagation histogram; the
    // MultiClusterService side's, which has nothing to sync, has none.
    let second = native_slice_of(&ObjectRef::new("shop", "web"), "web-def", "10.2.0.2");
    post(&w.http, &w.member2, SLICES, &second).await;
    w.eventually("the second endpoint in member1", || async {
        let mut addresses = imported_addresses(&w, &w.member1, "web").await;
        addresses.sort();
        (addresses == ["10.2.0.1", "10.2.0.2"]).then_some(())
    })
    .await;
    let scrape = || async {
        let url = format!("http://{listen}/metrics");
        w.http.get(&url).send().await.ok()?.text().await.ok()
    };
    w.eventually("a clusterset propagation observed", || async {
        let text = scrape().await?;
        let carried = metric(
            &text,
            "mcs_policy_sync_clusterset_propagation_seconds_count",
        )?;
        (carried >= 1.0).then_some(())
    })
    .await;
    let text = scrape().await.unwrap_or_default();
    assert_eq!(
        metric(&text, "mcs_policy_sync_propagation_seconds_count"),
        Some(0.0),
        "{text}"
    );
    // It syncs, so it is ready.
    w.eventually("/readyz 200", || async {
        let url = format!("http://{listen}/readyz");
        let resp = w.http.get(url).send().await.ok()?;
        let ok = resp.status().is_success();
        let body = resp.text().await.unwrap_or_default();
        println!("readyz: {body}");
        ok.then_some(())
    })
    .await;
}

/// Exports `<ns>/web` from the cluster at `url` (the namespace created there first).
async fn export_in(w: &World, url: &str, ns: &str, address: &str) {
    ensure_namespace(&w.http, url, ns).await;
    let mut svc = service("web", web_spec(80));
    svc["metadata"]["namespace"] = json!(ns);
    post(
        &w.http,
        url,
        &format!("/api/v1/namespaces/{ns}/services"),
        &svc,
    )
    .await;
    let mut slice = native_slice_of(&ObjectRef::new(ns, "web"), "web-abc", address);
    slice["metadata"]["namespace"] = json!(ns);
    post(&w.http, url, &slices_path(ns), &slice).await;
    let mut e = export("web");
    e["metadata"]["namespace"] = json!(ns);
    post(
        &w.http,
        url,
        &format!("/apis/multicluster.x-k8s.io/v1beta1/namespaces/{ns}/serviceexports"),
        &e,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_without_the_namespace_gets_no_namespace_and_the_import_once_it_is_created() {
    let mut w = clusterset("clusterset-namespace", false, &[]).await;
    w.spawn_sync(NO_RESYNC, &[]);
    w.eventually("the controller's caches listed", || async {
        w.logs().contains("caches listed").then_some(())
    })
    .await;
    export_in(&w, &w.member1, "payments", "10.1.0.1").await;
    let import_at = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/payments/serviceimports/web";
    w.eventually("the import in the exporter", || async {
        get(&w.http, &w.member1, import_at).await.filter(has_ips)
    })
    .await;
    // member2 has no namespace payments: it gets neither the namespace nor anything in it, and
    // the passes do not fail for it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        get(&w.http, &w.member2, "/api/v1/namespaces/payments")
            .await
            .is_none(),
        "the clusterset side created a namespace in member2"
    );
    assert!(get(&w.http, &w.member2, import_at).await.is_none());
    assert!(
        !w.logs().contains("clusterset write failed"),
        "a missing namespace is no failure: {}",
        w.logs()
    );

    // Once member2 has the namespace, the import and the endpoints arrive.
    ensure_namespace(&w.http, &w.member2, "payments").await;
    w.eventually("the import in member2", || async {
        get(&w.http, &w.member2, import_at).await.filter(has_ips)
    })
    .await;
    w.eventually("the endpoints in member2", || async {
        let path = format!(
            "{}?labelSelector={MCS_SERVICE_NAME}%3Dweb",
            slices_path("payments")
        );
        let items = get(&w.http, &w.member2, &path).await?["items"].clone();
        let addresses: Vec<Value> = items
            .as_array()?
            .iter()
            .map(|s| s["endpoints"][0]["addresses"][0].clone())
            .collect();
        (addresses == [json!("10.1.0.1")]).then_some(())
    })
    .await;
    assert!(!w.logs().contains("panicked"), "{}", w.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_sharing_a_cluster_id_are_reported_and_the_rest_is_still_served() {
    let mut w = clusterset("clusterset-duplicate-id", true, &[]).await;
    let member3 = w.member3.clone().unwrap();
    let property = json!({"apiVersion": "about.k8s.io/v1beta1", "kind": "ClusterProperty",
        "metadata": {"name": "cluster.clusterset.k8s.io"}, "spec": {"value": "same.example.com"}});
    post(&w.http, &w.member1, PROPERTIES, &property).await;
    post(&w.http, &w.member2, PROPERTIES, &property).await;
    w.spawn_sync(NO_RESYNC, &[]);
    export_service(&w, &w.member1, "web", web_spec(80), "10.1.0.1").await;
    export_service(&w, &member3, "web", web_spec(80), "10.3.0.1").await;
    let valid = w
        .eventually("Valid=False on member1's export", || async {
            export_condition(&w, &w.member1, "web", "Valid")
                .await
                .filter(|c| c["status"] == "False")
        })
        .await;
    assert_eq!(valid["reason"], "DuplicateClusterID", "{valid}");
    let urls = [w.member1.as_str(), w.member2.as_str(), member3.as_str()];
    await_imports(&w, &urls, "web", "member3's export imported", |i| {
        i["status"]["clusters"] == json!([{"cluster": "member3"}]) && has_ips(i)
    })
    .await;
    for url in urls {
        w.eventually("member3's endpoints", || async {
            (imported_addresses(&w, url, "web").await == ["10.3.0.1"]).then_some(())
        })
        .await;
    }
}
