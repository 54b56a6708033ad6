//! `mcs-policy sync` for real, against three kube-sim clusters (hub, member1, member2): copies
//! appear where the component says, go when their source or MultiClusterService goes, and
//! slices the controller did not make are never touched.

use std::fs::File;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::{KillOnDrop, binary, kube_sim, workspace_root};

const DEADLINE: Duration = Duration::from_secs(30);
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices";
const MCS: &str = "/apis/networking.karmada.io/v1alpha1/namespaces/shop/multiclusterservices";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const DISPATCH: &str = "endpointslice-dispatch-controller.karmada.io";
const PROVISION: &str = "endpointslice.karmada.io/provision-cluster";
const FINALIZER: &str = "networking.karmada.io/mcs-policy-sync";

/// Three clusters, the MCS CRD in the hub, and a running controller.
struct World {
    hub: String,
    member1: String,
    member2: String,
    /// Only with [`World::start_full`]'s `member3`.
    member3: Option<String>,
    http: reqwest::Client,
    dir: PathBuf,
    // Dropped last-to-first: the controller stops before the clusters.
    _controller: KillOnDrop,
    _sims: Vec<KillOnDrop>,
}

impl World {
    /// Everything running, the controller resyncing every 200ms.
    async fn start(test: &str) -> World {
        World::start_with(test, "200ms").await
    }

    async fn start_with(test: &str, resync: &str) -> World {
        World::start_full(test, resync, &[], false).await
    }

    /// With `extra` controller flags and, if `member3`, a third member cluster.
    async fn start_full(test: &str, resync: &str, extra: &[&str], member3: bool) -> World {
        let (hub_sim, hub) = kube_sim("hub");
        let (m1_sim, member1) = kube_sim("member1");
        let (m2_sim, member2) = kube_sim("member2");
        let mut sims = vec![hub_sim, m1_sim, m2_sim];
        let member3 = member3.then(|| {
            let (m3_sim, member3) = kube_sim("member3");
            sims.push(m3_sim);
            member3
        });
        let dir =
            std::env::temp_dir().join(format!("mcs-policy-sync-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut contexts = vec![
            ("hub", hub.as_str()),
            ("member1", member1.as_str()),
            ("member2", member2.as_str()),
        ];
        if let Some(member3) = &member3 {
            contexts.push(("member3", member3.as_str()));
        }
        let kubeconfig = write_kubeconfig(&dir, &contexts);
        let http = reqwest::Client::new();
        let crd_path =
            workspace_root().join("policies/crds/networking.karmada.io_multiclusterservices.yaml");
        let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(crd_path).unwrap()).unwrap();
        post(&http, &hub, CRDS, &crd).await;
        let log = File::create(dir.join("controller.log")).unwrap();
        let controller = Command::new(binary("mcs-policy"))
            .arg("sync")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--hub", "hub", "--resync-interval", resync])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mcs-policy sync starts");
        World {
            hub,
            member1,
            member2,
            member3,
            http,
            dir,
            _controller: KillOnDrop(controller),
            _sims: sims,
        }
    }

    /// Polls `probe` until it answers `Some`, failing with `what` and the controller's log after
    /// the deadline.
    async fn eventually<T, F, Fut>(&self, what: &str, mut probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            if Instant::now() > deadline {
                let log =
                    std::fs::read_to_string(self.dir.join("controller.log")).unwrap_or_default();
                panic!("timed out waiting for {what}; controller log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A native slice in each member and an MCS over all members; waits until each member
    /// holds its own slice and the other's copy.
    async fn sync_a_slice_from_each_member(&self) {
        post(
            &self.http,
            &self.member1,
            SLICES,
            &native_slice("web-a", "10.1.0.1"),
        )
        .await;
        post(
            &self.http,
            &self.member2,
            SLICES,
            &native_slice("web-b", "10.2.0.1"),
        )
        .await;
        post(&self.http, &self.hub, MCS, &mcs(json!({}))).await;
        self.await_slices(&self.member1, "member1", &["member2-web-b", "web-a"])
            .await;
        self.await_slices(&self.member2, "member2", &["member1-web-a", "web-b"])
            .await;
    }

    async fn slice_names(&self, url: &str) -> Vec<String> {
        let list = get(&self.http, url, SLICES).await.expect("slice list");
        let mut names: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    /// Waits until `url` holds exactly `want` (sorted) slices.
    async fn await_slices(&self, url: &str, cluster: &str, want: &[&str]) {
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        self.eventually(&format!("{cluster} to hold exactly {want:?}"), || async {
            (self.slice_names(url).await == want).then_some(())
        })
        .await;
    }

    /// Waits for the MCS's `EndpointSliceDispatched` condition to have `status` and a message
    /// containing `message`; returns the condition.
    async fn await_dispatched(&self, status: &str, message: &str) -> Value {
        self.eventually(
            &format!("EndpointSliceDispatched={status} mentioning {message:?}"),
            || async {
                let o = get(&self.http, &self.hub, &format!("{MCS}/web")).await?;
                let c = o["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "EndpointSliceDispatched")?
                    .clone();
                (c["status"] == status && c["message"].as_str()?.contains(message)).then_some(c)
            },
        )
        .await
    }
}

impl Drop for World {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

fn write_kubeconfig(dir: &Path, clusters: &[(&str, &str)]) -> PathBuf {
    let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for (name, url) in clusters {
        text += &format!("- name: {name}\n  cluster: {{server: \"{url}\"}}\n");
    }
    text += "users:\n- name: tester\n  user: {token: test}\ncontexts:\n";
    for (name, _) in clusters {
        text += &format!("- name: {name}\n  context: {{cluster: {name}, user: tester}}\n");
    }
    text += "current-context: hub\n";
    let path = dir.join("kubeconfig.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

async fn post(http: &reqwest::Client, url: &str, path: &str, body: &Value) {
    let resp = http
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    assert!(
        status.is_success(),
        "POST {path}: {status} {}",
        resp.text().await.unwrap_or_default()
    );
}

async fn get(http: &reqwest::Client, url: &str, path: &str) -> Option<Value> {
    let resp = http.get(format!("{url}{path}")).send().await.unwrap();
    if resp.status() == reqwest::StatusCode::NOT_FOUND {
        return None;
    }
    assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
    Some(resp.json().await.unwrap())
}

async fn delete(http: &reqwest::Client, url: &str, path: &str) {
    let resp = http.delete(format!("{url}{path}")).send().await.unwrap();
    assert!(
        resp.status().is_success(),
        "DELETE {path}: {}",
        resp.status()
    );
}

fn slice(name: &str, managed_by: &str, address: &str) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "shop", "labels": {
            SERVICE_NAME: "web", MANAGED_BY: managed_by}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                  {"name": "metrics", "port": 9100, "protocol": "TCP"}]
    })
}

fn native_slice(name: &str, address: &str) -> Value {
    slice(name, "endpointslice-controller.k8s.io", address)
}

fn mcs(spec_extra: Value) -> Value {
    let mut spec = json!({"types": ["CrossCluster"]});
    for (k, v) in spec_extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": spec,
    })
}

fn member1_to_member2() -> Value {
    mcs(json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "member2"}],
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_a_provider_slice_into_the_consumer_and_reports_success() {
    let w = World::start("one-to-one").await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc"))
        .await
        .unwrap();
    assert_eq!(
        copy["metadata"]["labels"],
        json!({SERVICE_NAME: "web", MANAGED_BY: DISPATCH})
    );
    assert_eq!(
        copy["metadata"]["annotations"],
        json!({PROVISION: "member1"})
    );
    assert_eq!(copy["endpoints"][0]["addresses"], json!(["10.1.0.7"]));

    let object = w
        .eventually("the finalizer and EndpointSliceDispatched=True", || async {
            let o = get(&w.http, &w.hub, &format!("{MCS}/web")).await?;
            let has_finalizer = o["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
            let dispatched = o["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "EndpointSliceDispatched")?
                .clone();
            (has_finalizer && dispatched["status"] == "True").then_some(dispatched)
        })
        .await;
    assert_eq!(object["reason"], "EndpointSliceDispatchedSucceed");
    assert_eq!(
        object["message"],
        "EndpointSlice are dispatched successfully"
    );
    assert!(object["lastTransitionTime"].is_string());
    assert_eq!(
        w.slice_names(&w.member1).await,
        ["web-abc"],
        "nothing goes back to the provider"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_cluster_lists_sync_every_member_to_every_other() {
    let w = World::start("all-members").await;
    w.sync_a_slice_from_each_member().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prunes_the_copy_of_a_deleted_slice_and_never_touches_foreign_slices() {
    let w = World::start("prune").await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    post(
        &w.http,
        &w.member2,
        SLICES,
        &slice("web-foreign", "someone-else", "10.9.0.9"),
    )
    .await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc", "web-foreign"])
        .await;

    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    w.await_slices(&w.member2, "member2", &["web-foreign"])
        .await;
    let foreign = get(&w.http, &w.member2, &format!("{SLICES}/web-foreign"))
        .await
        .unwrap();
    assert_eq!(foreign["metadata"]["labels"][MANAGED_BY], "someone-else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_mcs_removes_every_copy_then_releases_it() {
    let w = World::start("delete").await;
    w.sync_a_slice_from_each_member().await;
    w.eventually("the finalizer", || async {
        let o = get(&w.http, &w.hub, &format!("{MCS}/web")).await?;
        o["metadata"]["finalizers"]
            .as_array()?
            .iter()
            .any(|f| f == FINALIZER)
            .then_some(())
    })
    .await;

    delete(&w.http, &w.hub, &format!("{MCS}/web")).await;
    w.await_slices(&w.member1, "member1", &["web-a"]).await;
    w.await_slices(&w.member2, "member2", &["web-b"]).await;
    w.eventually("the MCS to be released and gone", || async {
        get(&w.http, &w.hub, &format!("{MCS}/web"))
            .await
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_keeps_only_the_ports_the_mcs_lists() {
    let w = World::start("ports").await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    let mut object = member1_to_member2();
    // `port` is required by the MCS schema and validation; without the hub Service's ports the
    // filter matches the entry by name.
    object["spec"]["ports"] = json!([{"name": "http", "port": 80}]);
    post(&w.http, &w.hub, MCS, &object).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc"))
        .await
        .unwrap();
    assert_eq!(
        copy["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_provider_keeps_its_copies_and_is_reported() {
    let w = World::start("unreachable").await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;

    post(
        &w.http,
        &w.member1,
        "/_sim/unreachable",
        &json!({"on": true}),
    )
    .await;
    // The condition is written at the end of a pass, after its prune step.
    let failed = w.await_dispatched("False", "member1").await;
    assert_eq!(failed["reason"], "EndpointSliceDispatchedFailed");
    assert_eq!(
        w.slice_names(&w.member2).await,
        ["member1-web-abc"],
        "an unreachable provider's copies stay"
    );

    post(
        &w.http,
        &w.member1,
        "/_sim/unreachable",
        &json!({"on": false}),
    )
    .await;
    w.await_dispatched("True", "successfully").await;
    assert_eq!(w.slice_names(&w.member2).await, ["member1-web-abc"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_stale_endpoint_timeout_an_unreachable_providers_copies_are_withdrawn() {
    let w = World::start_full("stale", "200ms", &["--stale-endpoint-timeout", "1s"], true).await;
    let member3 = w.member3.clone().unwrap();
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    post(
        &w.http,
        &member3,
        SLICES,
        &native_slice("web-xyz", "10.3.0.9"),
    )
    .await;
    let both = json!({
        "providerClusters": [{"name": "member1"}, {"name": "member3"}],
        "consumerClusters": [{"name": "member2"}],
    });
    post(&w.http, &w.hub, MCS, &mcs(both)).await;
    w.await_slices(
        &w.member2,
        "member2",
        &["member1-web-abc", "member3-web-xyz"],
    )
    .await;
    w.await_dispatched("True", "successfully").await;

    post(
        &w.http,
        &w.member1,
        "/_sim/unreachable",
        &json!({"on": true}),
    )
    .await;
    w.await_dispatched("False", "member1").await;
    assert_eq!(
        w.slice_names(&w.member2).await,
        ["member1-web-abc", "member3-web-xyz"],
        "the copies stay until the timeout"
    );
    // Past the timeout: member1's copy goes, the reachable member3's stays.
    w.await_slices(&w.member2, "member2", &["member3-web-xyz"])
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(w.slice_names(&w.member2).await, ["member3-web-xyz"]);
}

/// The Prometheus text value of the unlabelled metric `name`.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_passes_and_applied_copies() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let w = World::start_full("metrics", "200ms", &["--metrics-listen", &listen], false).await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let url = format!("http://{listen}/metrics");
    w.eventually("passes > 0 and applied >= 1 in /metrics", || async {
        let response = w.http.get(&url).send().await.ok()?;
        let text = response.text().await.ok()?;
        let passes = metric(&text, "mcs_policy_sync_passes_total")?;
        let applied = metric(&text, "mcs_policy_sync_applied_total")?;
        (passes > 0.0 && applied >= 1.0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_change_is_synced_by_the_watch_without_waiting_for_a_resync() {
    // The first resync tick fires at start; after that only watch events can trigger a pass.
    let w = World::start_with("watch", "1h").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_dispatched("True", "successfully").await;

    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    w.await_slices(&w.member2, "member2", &[]).await;
}

const SERVICES: &str = "/api/v1/namespaces/shop/services";
const EVENTS: &str = "/api/v1/namespaces/shop/events";

fn service(ports: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "selector": {"app": "web"}, "ports": ports},
    })
}

async fn put(http: &reqwest::Client, url: &str, path: &str, body: &Value) {
    let resp = http
        .put(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    assert!(
        status.is_success(),
        "PUT {path}: {status} {}",
        resp.text().await.unwrap_or_default()
    );
}

impl World {
    /// Waits for the MCS's `ServiceApplied` condition to have `status`; returns it.
    async fn await_service_applied(&self, status: &str) -> Value {
        self.eventually(&format!("ServiceApplied={status}"), || async {
            let o = get(&self.http, &self.hub, &format!("{MCS}/web")).await?;
            let c = o["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "ServiceApplied")?
                .clone();
            (c["status"] == status).then_some(c)
        })
        .await
    }

    /// Waits until `url` holds Service `web` whose ports equal `ports`; returns it.
    async fn await_service_ports(&self, url: &str, cluster: &str, ports: &Value) -> Value {
        self.eventually(&format!("{cluster} to hold web with {ports}"), || async {
            let s = get(&self.http, url, &format!("{SERVICES}/web")).await?;
            (&s["spec"]["ports"] == ports).then_some(s)
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unnamed_mcs_port_matches_by_number_through_the_hub_service() {
    let w = World::start("service-ports").await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    let ports = json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]);
    post(&w.http, &w.hub, SERVICES, &service(ports)).await;
    let mut object = member1_to_member2();
    object["spec"]["ports"] = json!([{"port": 9090}]);
    post(&w.http, &w.hub, MCS, &object).await;

    let copy = w
        .eventually("the copy with only the metrics port", || async {
            let copy = get(&w.http, &w.member2, &format!("{SLICES}/member1-web-abc")).await?;
            (copy["ports"].as_array()?.len() == 1).then_some(copy)
        })
        .await;
    assert_eq!(
        copy["ports"],
        json!([{"name": "metrics", "port": 9100, "protocol": "TCP"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_service_is_propagated_and_updated_keeping_the_members_cluster_ip() {
    let w = World::start("service-propagation").await;
    let ports = json!([{"name": "http", "port": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports.clone())).await;
    // member2 already has the Service, with its own clusterIP.
    let mut own = service(ports.clone());
    own["spec"]["clusterIP"] = json!("10.0.0.99");
    own["spec"]["clusterIPs"] = json!(["10.0.0.99"]);
    post(&w.http, &w.member2, SERVICES, &own).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    let applied = w.await_service_applied("True").await;
    assert_eq!(applied["reason"], "ServiceAppliedSucceed");
    assert_eq!(
        applied["message"],
        "Service is propagated to target clusters."
    );
    let created = w.await_service_ports(&w.member1, "member1", &ports).await;
    assert_eq!(created["spec"]["selector"], json!({"app": "web"}));
    assert_ne!(created["spec"]["clusterIP"], "10.96.0.10");
    assert!(
        created["spec"]["clusterIPs"].is_null()
            || created["spec"]["clusterIPs"] != json!(["10.96.0.10"])
    );
    assert_eq!(created["metadata"]["labels"], json!({"app": "web"}));

    // Change the template's ports: both members follow; member2 keeps its clusterIP.
    let mut template = get(&w.http, &w.hub, &format!("{SERVICES}/web"))
        .await
        .unwrap();
    let new_ports = json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]);
    template["spec"]["ports"] = new_ports.clone();
    put(&w.http, &w.hub, &format!("{SERVICES}/web"), &template).await;
    w.await_service_ports(&w.member1, "member1", &new_ports)
        .await;
    let updated = w
        .await_service_ports(&w.member2, "member2", &new_ports)
        .await;
    assert_eq!(updated["spec"]["clusterIP"], "10.0.0.99");
    assert_eq!(updated["spec"]["clusterIPs"], json!(["10.0.0.99"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_template_fails_service_applied_but_slices_are_still_dispatched() {
    let w = World::start("service-missing").await;
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    let failed = w.await_service_applied("False").await;
    assert_eq!(failed["reason"], "ServiceAppliedFailed");
    assert_eq!(failed["message"], "service shop/web not found in the hub");
    w.await_dispatched("True", "successfully").await;
    assert!(
        get(&w.http, &w.member1, &format!("{SERVICES}/web"))
            .await
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_provider_is_reported_by_one_cluster_not_found_event() {
    let w = World::start("events").await;
    post(
        &w.http,
        &w.hub,
        MCS,
        &mcs(json!({
            "providerClusters": [{"name": "ghost"}, {"name": "member1"}],
            "consumerClusters": [{"name": "member2"}],
        })),
    )
    .await;
    let not_found = || async {
        let list = get(&w.http, &w.hub, EVENTS).await?;
        let found: Vec<Value> = list["items"]
            .as_array()?
            .iter()
            .filter(|e| e["reason"] == "ClusterNotFound")
            .cloned()
            .collect();
        Some(found)
    };
    let found = w
        .eventually("a ClusterNotFound event", || async {
            not_found().await.filter(|f| !f.is_empty())
        })
        .await;
    assert_eq!(found[0]["message"], "Provider cluster ghost is not found");
    assert_eq!(found[0]["type"], "Warning");
    assert_eq!(found[0]["involvedObject"]["kind"], "MultiClusterService");
    assert_eq!(found[0]["involvedObject"]["name"], "web");
    assert_eq!(found[0]["source"]["component"], "mcs-policy");

    // Passes that certainly ran after the first Event: one dispatches a new slice, a later one
    // prunes its copy (with 200ms resyncs in between); still exactly one ClusterNotFound.
    post(
        &w.http,
        &w.member1,
        SLICES,
        &native_slice("web-abc", "10.1.0.7"),
    )
    .await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    w.await_slices(&w.member2, "member2", &[]).await;
    assert_eq!(
        not_found().await.unwrap().len(),
        1,
        "exactly one ClusterNotFound event"
    );
}
