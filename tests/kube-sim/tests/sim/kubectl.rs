//! kubectl against kube-sim, through a kubeconfig with a server URL, a token user and a context.
//! kubectl must be on PATH (CI installs it); the tests fail, not skip, without it.

use std::path::PathBuf;
use std::process::{Output, Stdio};

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::time::timeout;

use crate::support::{PATIENCE, Sim};

const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n    targetPort: 8080\n";

/// kubectl with a kubeconfig for one kube-sim and its own cache directory.
struct Kubectl {
    dir: tempfile::TempDir,
}

impl Kubectl {
    fn new(sim: &Sim) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::write(dir.path().join("kubeconfig"), sim.kubeconfig_yaml())
            .expect("kubeconfig written");
        Self { dir }
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).expect("manifest written");
        path.to_string_lossy().into_owned()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(kubectl_binary());
        command
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .kill_on_drop(true);
        command
    }

    async fn output(&self, args: &[&str]) -> Output {
        let run = self.command(args).output();
        timeout(PATIENCE, run)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} finished in time"))
            .expect("kubectl runs")
    }

    /// Runs kubectl, expecting success; returns stdout.
    async fn run(&self, args: &[&str]) -> String {
        let output = self.output(args).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "kubectl {args:?} failed: {stderr}");
        String::from_utf8(output.stdout).expect("UTF-8 output")
    }

    async fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.run(args).await).expect("kubectl printed JSON")
    }
}

/// kubectl from PATH, or a failure saying it is needed.
fn kubectl_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
        .expect("kubectl must be on PATH for these tests (CI installs it; locally: install kubectl v1.32)")
}

#[tokio::test]
async fn kubectl_creates_gets_replaces_patches_and_deletes_a_service() {
    let sim = Sim::start().await;
    let kubectl = Kubectl::new(&sim);
    let manifest = kubectl.file("svc.yaml", SERVICE);
    assert_eq!(
        kubectl.run(&["create", "-f", &manifest]).await.trim(),
        "service/web created"
    );
    let created = kubectl.json(&["get", "svc", "web", "-o", "json"]).await;
    assert_eq!(created["spec"]["ports"][0]["port"], 80);
    assert_eq!(created["metadata"]["labels"]["app"], "web");

    let replacement = kubectl.file("svc2.yaml", &SERVICE.replace("port: 80", "port: 81"));
    assert_eq!(
        kubectl.run(&["replace", "-f", &replacement]).await.trim(),
        "service/web replaced"
    );
    let replaced = kubectl.json(&["get", "svc", "web", "-o", "json"]).await;
    assert_eq!(replaced["spec"]["ports"][0]["port"], 81);
    assert!(
        replaced["metadata"]["generation"].is_null(),
        "Services have no generation"
    );

    let patch = r#"{"metadata":{"labels":{"tier":"front"}}}"#;
    assert_eq!(
        kubectl
            .run(&["patch", "svc", "web", "--type", "merge", "-p", patch])
            .await
            .trim(),
        "service/web patched"
    );
    let listed = kubectl.run(&["get", "svc", "-l", "tier=front"]).await;
    assert!(
        listed.lines().next().is_some_and(|h| h.starts_with("NAME")),
        "{listed}"
    );
    assert!(listed.lines().any(|l| l.starts_with("web ")), "{listed}");

    // kubectl 1.33 and later name the namespace.
    let deleted = kubectl.run(&["delete", "svc", "web"]).await;
    assert!(
        [
            "service \"web\" deleted",
            "service \"web\" deleted from default namespace"
        ]
        .contains(&deleted.trim()),
        "{deleted}"
    );
    let missing = kubectl.output(&["get", "svc", "web"]).await;
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("Error from server (NotFound): services \"web\" not found"),
        "{stderr}"
    );
}

#[tokio::test]
async fn kubectl_watch_prints_objects_created_while_it_watches() {
    let sim = Sim::start().await;
    let kubectl = Kubectl::new(&sim);
    let mut watch = kubectl
        .command(&["get", "svc", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let mut lines = BufReader::new(watch.stdout.take().expect("piped stdout")).lines();
    sim.wait_for_open_watches(1).await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let service: Service = serde_json::from_value(
        json!({"metadata": {"name": "watched"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let appeared = timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("readable stdout") {
            if line.starts_with("watched ") {
                return true;
            }
        }
        false
    })
    .await;
    watch.start_kill().expect("kubectl stops");
    assert_eq!(appeared, Ok(true), "kubectl get -w printed the new service");
}

#[tokio::test]
async fn kubectl_applies_a_crd_and_serves_its_objects() {
    let sim = Sim::start().await;
    let kubectl = Kubectl::new(&sim);
    let crd = kubectl.file(
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: multiclusterservices.networking.karmada.io\nspec:\n  group: networking.karmada.io\n  names:\n    kind: MultiClusterService\n    plural: multiclusterservices\n    singular: multiclusterservice\n    shortNames: [mcs]\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n    subresources:\n      status: {}\n",
    );
    kubectl.run(&["apply", "-f", &crd]).await;
    let mcs = kubectl.file(
        "mcs.yaml",
        "apiVersion: networking.karmada.io/v1alpha1\nkind: MultiClusterService\nmetadata:\n  name: web\nspec:\n  types: [CrossCluster]\n",
    );
    assert_eq!(
        kubectl
            .run(&["apply", "--server-side", "-f", &mcs])
            .await
            .trim(),
        "multiclusterservice.networking.karmada.io/web serverside-applied"
    );
    let fetched = kubectl.json(&["get", "mcs", "web", "-o", "json"]).await;
    assert_eq!(fetched["spec"]["types"], json!(["CrossCluster"]));
    let listed = kubectl.run(&["get", "multiclusterservices"]).await;
    assert!(listed.lines().any(|l| l.starts_with("web ")), "{listed}");
}

#[tokio::test]
async fn kubectl_applies_the_upstream_mcs_api_crds_and_finds_them_by_short_name() {
    let sim = Sim::start().await;
    let kubectl = Kubectl::new(&sim);
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/crds");
    let files: Vec<String> = [
        "multicluster.x-k8s.io_serviceexports.yaml",
        "multicluster.x-k8s.io_serviceimports.yaml",
        "about.k8s.io_clusterproperties.yaml",
    ]
    .iter()
    .map(|f| crds.join(f).to_string_lossy().into_owned())
    .collect();
    // As docs/deploying.md has the user install them by hand.
    let applied = kubectl
        .run(&["apply", "-f", &files[0], "-f", &files[1], "-f", &files[2]])
        .await;
    assert_eq!(
        applied.lines().collect::<Vec<_>>(),
        [
            "customresourcedefinition.apiextensions.k8s.io/serviceexports.multicluster.x-k8s.io created",
            "customresourcedefinition.apiextensions.k8s.io/serviceimports.multicluster.x-k8s.io created",
            "customresourcedefinition.apiextensions.k8s.io/clusterproperties.about.k8s.io created",
        ]
    );
    let export = kubectl.file(
        "export.yaml",
        "apiVersion: multicluster.x-k8s.io/v1beta1\nkind: ServiceExport\nmetadata:\n  name: web\n",
    );
    assert_eq!(
        kubectl
            .run(&["apply", "--server-side", "-f", &export])
            .await
            .trim(),
        "serviceexport.multicluster.x-k8s.io/web serverside-applied"
    );
    // Short names resolve through discovery, to the preferred version.
    let fetched = kubectl.json(&["get", "svcex", "web", "-o", "json"]).await;
    assert_eq!(fetched["apiVersion"], "multicluster.x-k8s.io/v1beta1");
    let none = kubectl.run(&["get", "svcim", "-A", "-o", "name"]).await;
    assert_eq!(none.trim(), "");
}
