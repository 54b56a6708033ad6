//! The harness of the sync-controller tests: kube-sim clusters (a hub and members), the
//! MultiClusterService CRD in the hub, `mcs-policy sync` processes, and small REST helpers that
//! talk to the clusters the way kubectl does (plain JSON over HTTP).

use std::fs::File;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{KillOnDrop, binary, kube_sim, kube_sim_with, workspace_root};

/// How long [`World::eventually`] waits.
pub const DEADLINE: Duration = Duration::from_secs(30);
pub const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices";
pub const MCS: &str = "/apis/networking.karmada.io/v1alpha1/namespaces/shop/multiclusterservices";
pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
pub const SERVICES: &str = "/api/v1/namespaces/shop/services";
pub const EVENTS: &str = "/api/v1/namespaces/shop/events";
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
pub const DISPATCH: &str = "endpointslice-dispatch-controller.karmada.io";
pub const PROVISION: &str = "endpointslice.karmada.io/provision-cluster";
pub const FINALIZER: &str = "networking.karmada.io/mcs-policy-sync";

/// kube-sim clusters (the hub and members `member1`, `member2`, optionally `member3`), the MCS
/// CRD in the hub, and the controllers started in them.
pub struct World {
    pub hub: String,
    pub member1: String,
    pub member2: String,
    /// Only with [`World::start_full`]'s `member3`.
    pub member3: Option<String>,
    pub http: reqwest::Client,
    pub dir: PathBuf,
    /// Controllers by index; `None` once stopped. Dropped before the clusters.
    controllers: Vec<Option<KillOnDrop>>,
    _sims: Vec<KillOnDrop>,
}

impl World {
    /// Everything running, the controller resyncing every 200ms.
    pub async fn start(test: &str) -> World {
        World::start_with(test, "200ms").await
    }

    /// Everything running, the controller resyncing every `resync`.
    pub async fn start_with(test: &str, resync: &str) -> World {
        World::start_full(test, resync, &[], false).await
    }

    /// With `extra` controller flags and, if `member3`, a third member cluster.
    pub async fn start_full(test: &str, resync: &str, extra: &[&str], member3: bool) -> World {
        let mut world = World::clusters(test, member3).await;
        world.spawn_sync(resync, extra);
        world
    }

    /// The clusters and the CRD, no controller yet; namespace `shop` exists in every cluster
    /// (as where an application runs in a fleet).
    pub async fn clusters(test: &str, member3: bool) -> World {
        let world = World::bare_clusters(test, member3).await;
        for (_, url) in world.contexts() {
            ensure_namespace(&world.http, url, "shop").await;
        }
        world
    }

    /// The clusters and the CRD; namespace `shop` exists nowhere yet.
    pub async fn bare_clusters(test: &str, member3: bool) -> World {
        World::bare_clusters_with(test, member3, &[], reqwest::Client::new()).await
    }

    /// [`World::bare_clusters`] with `hub_flags` for the hub's kube-sim (e.g. `["--token", T]`)
    /// and `http` as the tests' client (e.g. one sending that token).
    pub async fn bare_clusters_with(
        test: &str,
        member3: bool,
        hub_flags: &[&str],
        http: reqwest::Client,
    ) -> World {
        let (hub_sim, hub) = kube_sim_with("hub", hub_flags);
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
        post(
            &http,
            &hub,
            CRDS,
            &crd("networking.karmada.io_multiclusterservices.yaml"),
        )
        .await;
        World {
            hub,
            member1,
            member2,
            member3,
            http,
            dir,
            controllers: Vec::new(),
            _sims: sims,
        }
    }

    /// `(context name, URL)` of the hub and every member.
    pub fn contexts(&self) -> Vec<(&str, &str)> {
        let mut contexts = vec![
            ("hub", self.hub.as_str()),
            ("member1", self.member1.as_str()),
            ("member2", self.member2.as_str()),
        ];
        if let Some(member3) = &self.member3 {
            contexts.push(("member3", member3.as_str()));
        }
        contexts
    }

    /// A kubeconfig with a context per cluster of [`World::contexts`].
    pub fn kubeconfig(&self) -> PathBuf {
        write_kubeconfig(&self.dir, &self.contexts())
    }

    /// Starts `mcs-policy sync --kubeconfig <all clusters> --hub hub --resync-interval <resync>
    /// <extra>`; returns the controller's index. Unless `extra` sets `--outage-grace`, it is
    /// `0s`: a failing cluster is reported at once, so the tests of what follows a failure
    /// need not outwait the grace (`sync_apiserver_restart.rs` tests the grace itself).
    pub fn spawn_sync(&mut self, resync: &str, extra: &[&str]) -> usize {
        let kubeconfig = self.kubeconfig();
        let mut args: Vec<String> = vec![
            "sync".into(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--hub".into(),
            "hub".into(),
            "--resync-interval".into(),
            resync.into(),
        ];
        if !extra.iter().any(|a| a.starts_with("--outage-grace")) {
            args.extend(["--outage-grace".into(), "0s".into()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        self.spawn_controller(&args)
    }

    /// Starts `mcs-policy <args>`, its stderr in `controller-<index>.log`; returns the index.
    pub fn spawn_controller(&mut self, args: &[String]) -> usize {
        let mut command = Command::new(binary("mcs-policy"));
        command.args(args);
        self.spawn_command(command)
    }

    /// Starts `command` (which runs a controller), its stderr in `controller-<index>.log`;
    /// returns the index.
    pub fn spawn_command(&mut self, mut command: Command) -> usize {
        let index = self.controllers.len();
        let log = File::create(self.log_path(index)).unwrap();
        let child = command
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("{command:?} starts: {err}"));
        self.controllers.push(Some(KillOnDrop(child)));
        index
    }

    /// Kills controller `index` (as a crash would: no cleanup).
    pub fn kill_controller(&mut self, index: usize) {
        self.controllers[index] = None;
    }

    fn log_path(&self, index: usize) -> PathBuf {
        self.dir.join(format!("controller-{index}.log"))
    }

    /// Every controller's log, for failure messages.
    pub fn logs(&self) -> String {
        (0..self.controllers.len())
            .map(|i| {
                let text = std::fs::read_to_string(self.log_path(i)).unwrap_or_default();
                format!("--- controller {i} ---\n{text}")
            })
            .collect()
    }

    /// Polls `probe` until it answers `Some`, failing with `what` and the controllers' logs
    /// after [`DEADLINE`].
    pub async fn eventually<T, F, Fut>(&self, what: &str, probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        self.eventually_within(DEADLINE, what, probe).await
    }

    /// [`World::eventually`] with its own deadline.
    pub async fn eventually_within<T, F, Fut>(&self, limit: Duration, what: &str, mut probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; logs:\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Creates, in the cluster at `url`, a slice of Service `shop/web` as the member's own
    /// EndpointSlice controller makes it (see [`native_slice`]).
    pub async fn add_native_slice(&self, url: &str, name: &str, address: &str) {
        post(&self.http, url, SLICES, &native_slice(name, address)).await;
    }

    /// A native slice in each member and an MCS over all members; waits until each member
    /// holds its own slice and the other's copy.
    pub async fn sync_a_slice_from_each_member(&self) {
        self.add_native_slice(&self.member1, "web-a", "10.1.0.1")
            .await;
        self.add_native_slice(&self.member2, "web-b", "10.2.0.1")
            .await;
        post(&self.http, &self.hub, MCS, &mcs(json!({}))).await;
        self.await_slices(&self.member1, "member1", &["member2-web-b", "web-a"])
            .await;
        self.await_slices(&self.member2, "member2", &["member1-web-a", "web-b"])
            .await;
    }

    /// Names of the slices in namespace `shop` of the cluster at `url`, sorted.
    pub async fn slice_names(&self, url: &str) -> Vec<String> {
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
    pub async fn await_slices(&self, url: &str, cluster: &str, want: &[&str]) {
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        self.eventually(&format!("{cluster} to hold exactly {want:?}"), || async {
            (self.slice_names(url).await == want).then_some(())
        })
        .await;
    }

    /// Waits until the hub's MCS `web` is gone (released by the controller and deleted).
    pub async fn await_mcs_gone(&self) {
        self.eventually("the MCS to be released and gone", || async {
            get(&self.http, &self.hub, &format!("{MCS}/web"))
                .await
                .is_none()
                .then_some(())
        })
        .await;
    }

    /// The hub MCS `web`'s condition of `type_`, if set.
    pub async fn condition(&self, type_: &str) -> Option<Value> {
        let o = get(&self.http, &self.hub, &format!("{MCS}/web")).await?;
        o["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)
            .cloned()
    }

    /// Waits for the MCS's `EndpointSliceDispatched` condition to have `status` and a message
    /// containing `message`; returns the condition.
    pub async fn await_dispatched(&self, status: &str, message: &str) -> Value {
        self.eventually(
            &format!("EndpointSliceDispatched={status} mentioning {message:?}"),
            || async {
                let c = self.condition("EndpointSliceDispatched").await?;
                (c["status"] == status && c["message"].as_str()?.contains(message)).then_some(c)
            },
        )
        .await
    }

    /// Waits for the MCS's `ServiceApplied` condition to have `status`; returns it.
    pub async fn await_service_applied(&self, status: &str) -> Value {
        self.eventually(&format!("ServiceApplied={status}"), || async {
            let c = self.condition("ServiceApplied").await?;
            (c["status"] == status).then_some(c)
        })
        .await
    }

    /// Waits until `url` holds Service `web` whose ports equal `ports`; returns it.
    pub async fn await_service_ports(&self, url: &str, cluster: &str, ports: &Value) -> Value {
        self.eventually(&format!("{cluster} to hold web with {ports}"), || async {
            let s = get(&self.http, url, &format!("{SERVICES}/web")).await?;
            (&s["spec"]["ports"] == ports).then_some(s)
        })
        .await
    }

    /// Queues a fault in the cluster at `url` (kube-sim's `/_sim/faults`).
    pub async fn fault(&self, url: &str, fault: Value) {
        post(&self.http, url, "/_sim/faults", &fault).await;
    }

    /// The resource requests the cluster at `url` received since its log was last cleared
    /// (kube-sim's request log), as `verb resource` (`patch endpointslices`), watches left out.
    pub async fn requests(&self, url: &str) -> Vec<String> {
        resource_requests(&self.http, url)
            .await
            .iter()
            .filter(|r| r.verb != "watch")
            .map(|r| format!("{} {}", r.verb, r.resource))
            .collect()
    }

    /// Forgets the requests the cluster at `url` received so far.
    pub async fn clear_requests(&self, url: &str) {
        clear_request_log(&self.http, url).await;
    }

    /// Makes the cluster at `url` unreachable (`true`) or reachable again.
    pub async fn unreachable(&self, url: &str, on: bool) {
        post(&self.http, url, "/_sim/unreachable", &json!({ "on": on })).await;
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Controllers first: they must not see their clusters vanish.
        self.controllers.clear();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// One resource request of kube-sim's request log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// `endpointslices`, or `services/status` with a subresource.
    pub resource: String,
}

impl Request {
    /// Whether the request reads (a get or a list; a watch is not counted as a read).
    pub fn is_read(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list")
    }

    /// Whether the request writes.
    pub fn is_write(&self) -> bool {
        !self.is_read() && self.verb != "watch"
    }
}

/// The resource requests the cluster at `url` received since its log was last cleared
/// (kube-sim's `/_sim/requests`), oldest first.
pub async fn resource_requests(http: &reqwest::Client, url: &str) -> Vec<Request> {
    let log = get(http, url, "/_sim/requests").await.expect("request log");
    log["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resourceRequest"] == true)
        .map(|r| {
            let resource = r["resource"].as_str().unwrap_or_default();
            let sub = r["subresource"].as_str().unwrap_or_default();
            Request {
                verb: r["verb"].as_str().unwrap_or_default().to_string(),
                resource: if sub.is_empty() {
                    resource.to_string()
                } else {
                    format!("{resource}/{sub}")
                },
            }
        })
        .collect()
}

/// Forgets the requests the cluster at `url` received so far.
pub async fn clear_request_log(http: &reqwest::Client, url: &str) {
    delete(http, url, "/_sim/requests").await;
}

/// A CRD of `policies/crds/`, as JSON.
pub fn crd(file: &str) -> Value {
    let path = workspace_root().join("policies/crds").join(file);
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes `kubeconfig.yaml` in `dir`: a context per `(name, url)`, all with one bearer token.
pub fn write_kubeconfig(dir: &Path, clusters: &[(&str, &str)]) -> PathBuf {
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

/// Creates namespace `name` in the cluster at `url` unless it exists.
pub async fn ensure_namespace(http: &reqwest::Client, url: &str, name: &str) {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let resp = http
        .post(format!("{url}/api/v1/namespaces"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    assert!(
        status.is_success() || status == reqwest::StatusCode::CONFLICT,
        "creating namespace {name}: {status} {}",
        resp.text().await.unwrap_or_default()
    );
}

/// `POST url+path` with a JSON body; panics unless it succeeds.
pub async fn post(http: &reqwest::Client, url: &str, path: &str, body: &Value) {
    send(http.post(format!("{url}{path}")).json(body), "POST", path).await;
}

/// `PUT url+path` with a JSON body; panics unless it succeeds.
pub async fn put(http: &reqwest::Client, url: &str, path: &str, body: &Value) {
    send(http.put(format!("{url}{path}")).json(body), "PUT", path).await;
}

/// Reads `url+path`, changes it with `change` and writes it back with the resourceVersion read,
/// as a client sharing the object with a controller must: a 409 Conflict (the controller wrote
/// meanwhile) reads it again and retries.
pub async fn edit(http: &reqwest::Client, url: &str, path: &str, change: impl Fn(&mut Value)) {
    for _ in 0..20 {
        let mut object = get(http, url, path)
            .await
            .unwrap_or_else(|| panic!("{path} exists"));
        change(&mut object);
        let resp = http
            .put(format!("{url}{path}"))
            .json(&object)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        if status == reqwest::StatusCode::CONFLICT {
            continue;
        }
        assert!(
            status.is_success(),
            "PUT {path}: {status} {}",
            resp.text().await.unwrap_or_default()
        );
        return;
    }
    panic!("PUT {path}: still conflicting after 20 attempts");
}

/// `DELETE url+path`; panics unless it succeeds.
pub async fn delete(http: &reqwest::Client, url: &str, path: &str) {
    send(http.delete(format!("{url}{path}")), "DELETE", path).await;
}

async fn send(request: reqwest::RequestBuilder, verb: &str, path: &str) {
    let resp = request.send().await.unwrap();
    let status = resp.status();
    assert!(
        status.is_success(),
        "{verb} {path}: {status} {}",
        resp.text().await.unwrap_or_default()
    );
}

/// `GET url+path` as JSON; `None` on 404, panics on other failures.
pub async fn get(http: &reqwest::Client, url: &str, path: &str) -> Option<Value> {
    let resp = http.get(format!("{url}{path}")).send().await.unwrap();
    if resp.status() == reqwest::StatusCode::NOT_FOUND {
        return None;
    }
    assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
    Some(resp.json().await.unwrap())
}

/// An EndpointSlice of Service `shop/web` managed by `managed_by`, one endpoint at `address`,
/// ports `http` 8080 and `metrics` 9100.
pub fn slice(name: &str, managed_by: &str, address: &str) -> Value {
    slice_of(&ObjectRef::new("shop", "web"), name, managed_by, address)
}

/// [`slice`] for Service `service` (its namespace and name).
pub fn slice_of(service: &ObjectRef<'_>, name: &str, managed_by: &str, address: &str) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": service.namespace, "labels": {
            SERVICE_NAME: service.name, MANAGED_BY: managed_by}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                  {"name": "metrics", "port": 9100, "protocol": "TCP"}]
    })
}

/// A namespaced object's namespace and name (the MCS, and its Service of the same name).
#[derive(Clone, Copy, Debug)]
pub struct ObjectRef<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
}

impl<'a> ObjectRef<'a> {
    pub fn new(namespace: &'a str, name: &'a str) -> Self {
        ObjectRef { namespace, name }
    }
}

/// The EndpointSlice collection of namespace `ns` (`SLICES` is `shop`'s).
pub fn slices_path(ns: &str) -> String {
    format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
}

/// The MultiClusterService collection of namespace `ns` (`MCS` is `shop`'s).
pub fn mcs_path(ns: &str) -> String {
    format!("/apis/networking.karmada.io/v1alpha1/namespaces/{ns}/multiclusterservices")
}

/// The Service collection of namespace `ns` (`SERVICES` is `shop`'s).
pub fn services_path(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/services")
}

/// A slice as the member's own EndpointSlice controller makes it.
pub fn native_slice(name: &str, address: &str) -> Value {
    slice(name, "endpointslice-controller.k8s.io", address)
}

/// [`native_slice`] of Service `service`.
pub fn native_slice_of(service: &ObjectRef<'_>, name: &str, address: &str) -> Value {
    slice_of(service, name, "endpointslice-controller.k8s.io", address)
}

/// MCS `shop/web`, CrossCluster, with `spec_extra` merged into its spec.
pub fn mcs(spec_extra: Value) -> Value {
    mcs_of(&ObjectRef::new("shop", "web"), spec_extra)
}

/// [`mcs`] named `at` (its namespace and name).
pub fn mcs_of(at: &ObjectRef<'_>, spec_extra: Value) -> Value {
    let mut spec = json!({"types": ["CrossCluster"]});
    for (k, v) in spec_extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
        "metadata": {"name": at.name, "namespace": at.namespace},
        "spec": spec,
    })
}

/// MCS `shop/web` from provider member1 to consumer member2.
pub fn member1_to_member2() -> Value {
    mcs(json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "member2"}],
    }))
}

/// Service `shop/web` as the hub holds it, with `ports`.
pub fn service(ports: Value) -> Value {
    service_of(&ObjectRef::new("shop", "web"), ports)
}

/// [`service`] named `at` (its namespace and name); labelled and selecting `app=<name>`.
pub fn service_of(at: &ObjectRef<'_>, ports: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": at.name, "namespace": at.namespace, "labels": {"app": at.name}},
        "spec": {"selector": {"app": at.name}, "ports": ports},
    })
}

/// The Prometheus text value of the unlabelled metric `name`.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A free loopback `host:port` (bound, then released).
pub fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The leases of namespace `mcs-policy-system` (the default `--lease-namespace`) in the hub.
pub const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/mcs-policy-system/leases";

impl World {
    /// The process id of controller `index` (still running).
    pub fn controller_pid(&self, index: usize) -> u32 {
        self.controllers[index]
            .as_ref()
            .expect("controller still running")
            .0
            .id()
    }

    /// Sends SIGTERM to controller `index` (a graceful stop, as Kubernetes does), with the
    /// system's `kill` command.
    pub fn terminate_controller(&self, index: usize) {
        let pid = self.controller_pid(index).to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {pid}: {status}");
    }

    /// Waits (up to `limit`) for controller `index` to exit; returns its exit status.
    pub async fn await_exit(&mut self, index: usize, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            let child = self.controllers[index]
                .as_mut()
                .expect("controller not killed");
            if let Some(status) = child.0.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > deadline {
                panic!(
                    "controller {index} still running after {limit:?}; logs:\n{}",
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The log of controller `index` so far.
    pub fn log(&self, index: usize) -> String {
        std::fs::read_to_string(self.log_path(index)).unwrap_or_default()
    }
}

/// Karmada's Cluster objects (cluster-scoped) in the hub.
pub const KARMADA_CLUSTERS: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";
/// Where `karmadactl join` keeps the members' secrets.
pub const KARMADA_SECRETS: &str = "/api/v1/namespaces/karmada-cluster/secrets";

/// A CRD of `tests/fixtures/crds/`, as JSON.
pub fn fixture_crd(file: &str) -> Value {
    let path = workspace_root().join("tests/fixtures/crds").join(file);
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Karmada Cluster `name` in `mode` (`Push`/`Pull`) at `endpoint`, its credentials in the
/// secret `karmada-cluster/<name>` (status is a subresource: see [`set_cluster_ready`]).
pub fn karmada_cluster(name: &str, mode: &str, endpoint: &str) -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {
            "syncMode": mode,
            "apiEndpoint": endpoint,
            "secretRef": {"namespace": "karmada-cluster", "name": name},
        },
    })
}

/// The secret `karmada-cluster/<name>` as `karmadactl join` writes it: `token` and, if
/// given, a PEM `caBundle`.
pub fn karmada_secret(name: &str, token: &str, ca_bundle: Option<&str>) -> Value {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut data = json!({"token": b64.encode(token)});
    if let Some(ca) = ca_bundle {
        data["caBundle"] = json!(b64.encode(ca));
    }
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "karmada-cluster"},
        "type": "Opaque",
        "data": data,
    })
}

/// Sets the `Ready` condition of Karmada Cluster `name` in the hub at `hub` to `status`
/// (`"True"`, `"False"`), through the status subresource as Karmada's cluster controller does.
pub async fn set_cluster_ready(http: &reqwest::Client, hub: &str, name: &str, status: &str) {
    let path = format!("{KARMADA_CLUSTERS}/{name}");
    let mut cluster = get(http, hub, &path).await.expect("the cluster exists");
    cluster["status"] = json!({"conditions": [{
        "type": "Ready", "status": status,
        "reason": if status == "True" { "ClusterReady" } else { "ClusterNotReachable" },
        "message": "set by the test",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }]});
    put(http, hub, &format!("{path}/status"), &cluster).await;
}

/// The service range of the scale benchmark's clusters: room for tens of thousands of Services
/// (kube-sim's default, the /24 of the recorded real server, holds 253).
const LARGE_SERVICE_RANGE: &str = "10.96.0.0/12";

/// Starts a kube-sim per name, in order, each with room for many Services; the first is the
/// hub and gets the MultiClusterService CRD. Returns the processes and each cluster's
/// `(name, URL)`.
pub async fn start_clusters(
    http: &reqwest::Client,
    names: &[String],
) -> (Vec<KillOnDrop>, Vec<(String, String)>) {
    let (sims, clusters): (Vec<_>, Vec<_>) = names
        .iter()
        .map(|name| {
            let range = ["--service-cluster-ip-range", LARGE_SERVICE_RANGE];
            let (sim, url) = kube_sim_with(name, &range);
            (sim, (name.clone(), url))
        })
        .unzip();
    if let Some((_, hub)) = clusters.first() {
        let body = crd("networking.karmada.io_multiclusterservices.yaml");
        post(http, hub, CRDS, &body).await;
    }
    (sims, clusters)
}

/// One event of a watch of EndpointSlices, stamped when its bytes arrived: what the
/// benchmark reads of it. Decoding only these fields (serde skips the rest unparsed) keeps the
/// watcher's own CPU small next to the processes it measures.
#[derive(Debug)]
pub struct WatchEvent {
    /// Which watch it came from (the `tag` given to [`watch`]).
    pub tag: usize,
    pub at: Instant,
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub kind: String,
    /// The object's `metadata.name`.
    pub name: String,
    /// The slice's `endpoints[0].addresses[0]`, when it has one.
    pub first_address: Option<String>,
}

/// The parts of a watch event line [`WatchEvent`] keeps.
#[derive(serde::Deserialize)]
struct EventLine {
    #[serde(rename = "type")]
    kind: String,
    object: EventObject,
}

#[derive(serde::Deserialize)]
struct EventObject {
    #[serde(default)]
    metadata: EventMeta,
    #[serde(default)]
    endpoints: Option<Vec<EventEndpoint>>,
}

#[derive(Default, serde::Deserialize)]
struct EventMeta {
    #[serde(default)]
    name: String,
}

#[derive(serde::Deserialize)]
struct EventEndpoint {
    #[serde(default)]
    addresses: Vec<String>,
}

/// Opens the watch `GET url+path` (`path` carries `?watch=true` and any selectors) and, once
/// the server has answered (the watch is registered), forwards its events to `events` from a
/// task until the stream or the receiver ends. Panics if the watch is refused.
pub async fn watch(
    http: &reqwest::Client,
    url: &str,
    path: &str,
    tag: usize,
    events: tokio::sync::mpsc::UnboundedSender<WatchEvent>,
) -> tokio::task::JoinHandle<()> {
    let mut resp = http.get(format!("{url}{path}")).send().await.unwrap();
    assert!(
        resp.status().is_success(),
        "watch {path}: {}",
        resp.status()
    );
    tokio::spawn(async move {
        let mut pending = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            let at = Instant::now();
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(end) = pending[start..].iter().position(|b| *b == b'\n') {
                let line = &pending[start..start + end];
                start += end + 1;
                let Ok(line) = serde_json::from_slice::<EventLine>(line) else {
                    continue;
                };
                let first_address = line
                    .object
                    .endpoints
                    .and_then(|e| e.into_iter().next())
                    .and_then(|e| e.addresses.into_iter().next());
                let event = WatchEvent {
                    tag,
                    at,
                    kind: line.kind,
                    name: line.object.metadata.name,
                    first_address,
                };
                if events.send(event).is_err() {
                    return;
                }
            }
            pending.drain(..start);
        }
    })
}

impl World {
    /// The Events in namespace `shop` of the hub with `reason`.
    pub async fn events(&self, reason: &str) -> Vec<Value> {
        let list = get(&self.http, &self.hub, EVENTS)
            .await
            .expect("event list");
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|e| e["reason"] == reason)
            .cloned()
            .collect()
    }

    /// Waits for an Event with `reason` whose message contains every part of `message`;
    /// returns it.
    pub async fn await_event(&self, reason: &str, message: &[&str]) -> Value {
        self.eventually(
            &format!("a {reason} event mentioning {message:?}"),
            || async {
                self.events(reason).await.into_iter().find(|e| {
                    let text = e["message"].as_str().unwrap_or_default();
                    message.iter().all(|part| text.contains(part))
                })
            },
        )
        .await
    }

    /// The faults still queued in the cluster at `url`.
    pub async fn pending_faults(&self, url: &str) -> Vec<Value> {
        let answer = get(&self.http, url, "/_sim/faults").await.expect("faults");
        answer["faults"].as_array().cloned().unwrap_or_default()
    }

    /// Forgets the faults queued in the cluster at `url`.
    pub async fn clear_faults(&self, url: &str) {
        delete(&self.http, url, "/_sim/faults").await;
    }
}

/// The value of the metric sample `name{labels}` (labels exactly as rendered, e.g.
/// `cluster="member2",reason="unauthorized"`).
pub fn labelled_metric(text: &str, name: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
}
