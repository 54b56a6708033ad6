//! The clusterset side's ServiceImport conditions, owners and staleness, on kube-sim: an
//! import is `Ready` once its ClusterSetIP is allocated; the derived Service and the imported
//! slices name their member's ServiceImport as owner; and `--stale-endpoint-timeout`, the
//! setting the MultiClusterService side shares, withdraws an exporter that cannot be read for
//! longer than it (its imported slices, its place in `status.clusters`, the import when it was
//! the only exporter), and without it keeps what it exported for as long as it is unreadable.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::sync::*;

const EXPORTS: &str = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
const IMPORTS: &str = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
const MCS_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";
/// No resync during a test: whatever happens is the watches' and the timers' doing.
const NO_RESYNC: &str = "1h";
/// What the controller logs of an unreadable member that keeps what it exported.
const KEPT_NOTE: &str = "what it exported stays";

/// member1 and member2 with the upstream CRDs; member1 exports `shop/web`; a controller with
/// `extra` arguments; returns once member2 imports web with member1's endpoint.
async fn exported(test: &str, extra: &[&str]) -> World {
    let mut w = World::clusters(test, false).await;
    for (name, url) in w.contexts() {
        if name == "hub" {
            continue;
        }
        for file in [
            "multicluster.x-k8s.io_serviceexports.yaml",
            "multicluster.x-k8s.io_serviceimports.yaml",
            "about.k8s.io_clusterproperties.yaml",
        ] {
            post(&w.http, url, CRDS, &crd(file)).await;
        }
    }
    w.spawn_sync(NO_RESYNC, extra);
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    });
    post(&w.http, &w.member1, SERVICES, &service).await;
    let slice = native_slice_of(&ObjectRef::new("shop", "web"), "web-abc", "10.1.0.1");
    post(&w.http, &w.member1, SLICES, &slice).await;
    let export = json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": "shop"},
    });
    post(&w.http, &w.member1, EXPORTS, &export).await;
    w.eventually("member1's endpoint imported in member2", || async {
        (imported_slices(&w, &w.member2).await.len() == 1).then_some(())
    })
    .await;
    w
}

async fn import(w: &World, url: &str) -> Option<Value> {
    get(&w.http, url, &format!("{IMPORTS}/web")).await
}

async fn imported_slices(w: &World, url: &str) -> Vec<Value> {
    let path = format!("{SLICES}?labelSelector={MCS_SERVICE_NAME}%3Dweb");
    get(&w.http, url, &path).await.unwrap()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn owners(object: &Value) -> Vec<Value> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_is_ready_and_owns_its_derived_service_and_imported_slices() {
    let w = exported("clusterset-owners", &[]).await;
    for url in [w.member1.as_str(), w.member2.as_str()] {
        let import = w
            .eventually("the import Ready=True", || async {
                let import = import(&w, url).await?;
                let ready = import["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "Ready")?
                    .clone();
                (ready["status"] == "True").then_some(import)
            })
            .await;
        let uid = import["metadata"]["uid"].as_str().unwrap().to_string();
        let owner = json!([{"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
            "name": "web", "uid": uid, "blockOwnerDeletion": false}]);
        let derived =
            import["metadata"]["annotations"]["multicluster.kubernetes.io/derived-service"]
                .as_str()
                .unwrap()
                .to_string();
        w.eventually(
            "the derived Service and the imported slice owned by the import",
            || async {
                let service = get(&w.http, url, &format!("{SERVICES}/{derived}")).await?;
                let slices = imported_slices(&w, url).await;
                let owned = json!(owners(&service)) == owner
                    && slices.len() == 1
                    && slices.iter().all(|s| json!(owners(s)) == owner);
                owned.then_some(())
            },
        )
        .await;
    }
}

/// How many times the controller logged that an unreadable member keeps what it exported.
fn kept_notes(w: &World) -> usize {
    w.logs().matches(KEPT_NOTE).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exporter_unreadable_past_the_stale_endpoint_timeout_is_withdrawn() {
    let w = exported("clusterset-stale", &["--stale-endpoint-timeout", "1s"]).await;
    let unreachable = Instant::now();
    w.unreachable(&w.member1, true).await;
    // member1 was the only exporter: member2's import and imported slice go.
    w.eventually("member1's export withdrawn from member2", || async {
        let gone = import(&w, &w.member2).await.is_none()
            && imported_slices(&w, &w.member2).await.is_empty();
        gone.then_some(())
    })
    .await;
    assert!(
        unreachable.elapsed() >= Duration::from_secs(1),
        "withdrawn before the timeout: {:?}",
        unreachable.elapsed()
    );
    assert!(
        w.logs().contains("longer than the stale endpoint timeout"),
        "{}",
        w.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_stale_endpoint_timeout_an_unreadable_exporter_keeps_its_slices() {
    let w = exported("clusterset-stale-off", &[]).await;
    w.unreachable(&w.member1, true).await;
    w.eventually("a pass that keeps member1's export", || async {
        (kept_notes(&w) > 0).then_some(())
    })
    .await;
    // Well past what a 1 s timeout would allow, a pass keeps it again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = kept_notes(&w);
    w.eventually("a later pass that keeps member1's export", || async {
        (kept_notes(&w) > before).then_some(())
    })
    .await;
    assert_eq!(imported_slices(&w, &w.member2).await.len(), 1);
    let import = import(&w, &w.member2).await.expect("the import stays");
    assert_eq!(
        import["status"]["clusters"],
        json!([{"cluster": "member1"}])
    );
}
