//! What the repository ships, applied for real to a real kube-apiserver v1.36 (tests/src/envtest:
//! etcd and kube-apiserver from KUBEBUILDER_ASSETS or scripts/envtest-assets.sh), not to
//! kube-sim, which accepted a CRD every real API server refuses:
//!
//! - every CRD of policies/crds/ applied with `kubectl apply -f`, Established, and an object of
//!   each kind created in every served version and read back;
//! - every kustomization under policies/deploy (each folder with a kustomization.yaml) applied
//!   with `kubectl apply -k`, after the CRDs and the namespaces its objects name;
//! - the Helm chart rendered (`helm template`) for each target, each certificate mode and Karmada
//!   mode, and applied into a fresh namespace.
//!
//! Objects of kinds the server does not serve are left out of an apply only when they are
//! cert-manager's (no cert-manager runs here), and the tests say which were left out.
//!
//! One control plane for the file. The kustomizations and renders install webhook
//! configurations that intercept MultiClusterService writes (and point at no running server), so
//! the tests take turns ([`serial`]) and each removes what would get in the others' way.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use serde_json::{Value, json};
use tests::envtest::{ControlPlane, tool};
use tests::workspace_root;

const CHART: &str = "policies/chart/mcs-policy";

fn plane() -> &'static ControlPlane {
    static PLANE: OnceLock<ControlPlane> = OnceLock::new();
    PLANE.get_or_init(|| ControlPlane::start("apply"))
}

/// One test at a time on the shared control plane (see the file's comment).
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The YAML documents of `text`, as JSON, empty ones left out.
fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
}

/// Every folder under `dir` holding a kustomization.yaml.
fn kustomizations(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if dir.join("kustomization.yaml").is_file() || dir.join("kustomization.yml").is_file() {
        found.push(dir.to_path_buf());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for sub in entries {
        found.extend(kustomizations(&sub));
    }
    found
}

/// The kinds the server serves now, as (group, kind).
fn served_kinds(plane: &ControlPlane) -> BTreeSet<(String, String)> {
    plane
        .kubectl(&["api-resources", "--no-headers"])
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let kind = fields.last()?;
            let api_version = fields.get(fields.len().checked_sub(3)?)?;
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            Some((group.to_string(), kind.to_string()))
        })
        .collect()
}

fn group_kind(object: &Value) -> (String, String) {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    (
        group.to_string(),
        object["kind"].as_str().unwrap_or_default().to_string(),
    )
}

/// Splits `objects` into those the server serves and those it does not; asserts the latter are
/// all cert-manager's and returns their `Kind/name`s.
fn served_only(plane: &ControlPlane, what: &str, objects: Vec<Value>) -> (Vec<Value>, Vec<String>) {
    let served = served_kinds(plane);
    let (keep, skipped): (Vec<Value>, Vec<Value>) = objects
        .into_iter()
        .partition(|o| served.contains(&group_kind(o)));
    let skipped: Vec<String> = skipped
        .iter()
        .map(|o| {
            let (group, kind) = group_kind(o);
            assert_eq!(
                group, "cert-manager.io",
                "{what}: the server does not serve {kind} of {group:?}; only cert-manager's kinds \
                 may be left out"
            );
            format!(
                "{kind}/{}",
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    (keep, skipped)
}

/// `kubectl apply -f -` of `objects` (a List), which must succeed.
fn apply(plane: &ControlPlane, objects: &[Value]) -> String {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    plane.kubectl_in(&["apply", "-f", "-"], &list.to_string())
}

fn ensure_namespace(plane: &ControlPlane, name: &str) {
    if plane.get("namespace", "", name).is_none() {
        plane.kubectl(&["create", "namespace", name]);
    }
}

/// Removes every webhook configuration (those an earlier apply installed point at no server and
/// fail closed).
fn remove_webhook_configurations(plane: &ControlPlane) {
    plane.kubectl(&[
        "delete",
        "validatingwebhookconfigurations,mutatingwebhookconfigurations",
        "--all",
        "--wait=true",
    ]);
}

fn apply_crds(plane: &ControlPlane) -> Vec<Value> {
    let mut crds = Vec::new();
    for file in yaml_files(&workspace_root().join("policies/crds")) {
        plane.kubectl(&["apply", "-f", file.to_str().unwrap()]);
        crds.extend(documents(&std::fs::read_to_string(&file).unwrap()));
    }
    for crd in &crds {
        let name = crd["metadata"]["name"].as_str().unwrap();
        plane.kubectl(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{name}"),
            "--timeout=60s",
        ]);
    }
    crds
}

/// A valid object of each kind of policies/crds/.
fn sample(kind: &str, api_version: &str, name: &str) -> Value {
    let metadata = json!({"name": name, "namespace": "crd-objects"});
    match kind {
        "MultiClusterService" => json!({
            "apiVersion": api_version, "kind": kind, "metadata": metadata,
            "spec": {"types": ["CrossCluster"], "ports": [{"name": "http", "port": 80}],
                     "providerClusters": [{"name": "member1"}], "consumerClusters": [{"name": "member2"}]},
        }),
        "ServiceExport" => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}),
        "ServiceImport" => json!({
            "apiVersion": api_version, "kind": kind, "metadata": metadata,
            "spec": {"type": "ClusterSetIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
                     "ips": ["10.42.0.1"]},
        }),
        "ClusterProperty" => json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": format!("{name}.clusterset.k8s.io")},
            "spec": {"value": "member1"},
        }),
        other => panic!("no sample object for the CRD kind {other}: add one"),
    }
}

#[test]
fn every_crd_is_established_and_stores_objects_of_every_served_version() {
    let plane = plane();
    let _logs = plane.logs_on_panic();
    let _turn = serial();
    remove_webhook_configurations(plane);
    let crds = apply_crds(plane);
    let kinds: BTreeSet<&str> = crds
        .iter()
        .map(|c| c["spec"]["names"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "ClusterProperty",
            "MultiClusterService",
            "ServiceExport",
            "ServiceImport"
        ])
    );
    ensure_namespace(plane, "crd-objects");
    for crd in &crds {
        let group = crd["spec"]["group"].as_str().unwrap();
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
        for version in crd["spec"]["versions"].as_array().unwrap() {
            if version["served"] != true {
                continue;
            }
            let version = version["name"].as_str().unwrap();
            let name = format!("sample-{version}");
            let object = sample(kind, &format!("{group}/{version}"), &name);
            let out = plane.kubectl_in(&["create", "-f", "-", "-o", "json"], &object.to_string());
            let created: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(
                created["spec"], object["spec"],
                "{kind} {version} as stored"
            );
            // Read back through this version.
            let resource = format!("{plural}.{version}.{group}");
            let name = created["metadata"]["name"].as_str().unwrap();
            let mut args = vec!["get", resource.as_str(), name, "-o", "json"];
            if crd["spec"]["scope"] == "Namespaced" {
                args.extend(["-n", "crd-objects"]);
            }
            let read: Value = serde_json::from_str(&plane.kubectl(&args)).unwrap();
            assert_eq!(read["apiVersion"], format!("{group}/{version}"));
            assert_eq!(read["spec"], object["spec"], "{kind} {version} read back");
        }
    }
}

#[test]
fn every_kustomization_is_applied() {
    let plane = plane();
    let _logs = plane.logs_on_panic();
    let _turn = serial();
    apply_crds(plane);
    let folders = kustomizations(&workspace_root().join("policies/deploy"));
    assert!(
        folders.len() >= 7,
        "the kustomizations of policies/deploy: {folders:?}"
    );
    let mut left_out = Vec::new();
    for folder in &folders {
        let dir = folder.to_str().unwrap();
        let objects = documents(&plane.kubectl(&["kustomize", dir]));
        assert!(!objects.is_empty(), "{dir} renders objects");
        let made: BTreeSet<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "Namespace")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        let wanted: BTreeSet<&str> = objects
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str())
            .collect();
        for ns in wanted.difference(&made) {
            ensure_namespace(plane, ns);
        }
        let (served, skipped) = served_only(plane, dir, objects.clone());
        if skipped.is_empty() {
            plane.kubectl(&["apply", "-k", dir]);
        } else {
            apply(plane, &served);
            left_out.push(format!("{dir}: {skipped:?}"));
        }
        // Each object is there, as applied.
        for object in &served {
            let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
            let kind = object["kind"].as_str().unwrap();
            let name = object["metadata"]["name"].as_str().unwrap();
            assert!(
                plane.get(kind, ns, name).is_some(),
                "{dir}: {kind} {ns}/{name} was applied"
            );
        }
    }
    // cert-manager's Certificate and Issuer of webhook-cert-manager, and nothing else.
    assert_eq!(left_out.len(), 1, "left out: {left_out:?}");
    assert!(
        left_out[0].contains("webhook-cert-manager")
            && left_out[0].contains("Certificate/")
            && left_out[0].contains("Issuer/"),
        "left out: {left_out:?}"
    );
    remove_webhook_configurations(plane);
}

/// A CA certificate for the modes that take a caBundle.
fn ca_file(plane: &ControlPlane) -> PathBuf {
    let path = plane.dir.join("render-ca.crt");
    std::fs::write(
        &path,
        tests::envtest::certificates::Ca::new("render-ca").pem(),
    )
    .unwrap();
    path
}

#[test]
fn every_chart_render_is_applied_into_a_fresh_namespace() {
    let plane = plane();
    let _logs = plane.logs_on_panic();
    let _turn = serial();
    apply_crds(plane);
    let ca = ca_file(plane);
    let ca_value = format!("webhook.certificate.caBundle={}", ca.display());
    // Services get ClusterIPs in 127.(100 + index).0.0/16 (tests/src/envtest).
    let dns_ip = format!("127.{}.0.53", 100 + u16::from(plane.index));
    let dns_cluster_ip = format!("dns.clusterIP={dns_ip}");
    let renders: Vec<(&str, Vec<&str>)> = vec![
        ("cluster, self-managed", vec![]),
        (
            "cluster, cert-manager",
            vec!["--set", "webhook.certificate.mode=cert-manager"],
        ),
        (
            "cluster, secret",
            vec![
                "--set",
                "webhook.certificate.mode=secret",
                "--set-file",
                &ca_value,
            ],
        ),
        ("cluster, karmada", vec!["--set", "karmada.enabled=true"]),
        (
            "cluster, karmada, secret",
            vec![
                "--set",
                "karmada.enabled=true",
                "--set",
                "webhook.certificate.mode=secret",
                "--set-file",
                &ca_value,
            ],
        ),
        (
            "cluster, CRD, strict",
            vec!["--set", "crd.install=true", "--set", "policy=strict"],
        ),
        ("member", vec!["--set", "target=member"]),
        // The DNS server (on by default in a member) with its values: a zone, a TTL and a fixed
        // ClusterIP of the plane's service CIDR, which the API server must accept.
        (
            "member, DNS values",
            vec![
                "--set",
                "target=member",
                "--set",
                "dns.zone=mcs.example",
                "--set",
                "dns.ttl=30",
                "--set",
                &dns_cluster_ip,
            ],
        ),
        (
            "karmada-apiserver",
            vec!["--set", "target=karmada-apiserver"],
        ),
        (
            "karmada-apiserver, secret",
            vec![
                "--set",
                "target=karmada-apiserver",
                "--set",
                "webhook.certificate.mode=secret",
                "--set-file",
                &ca_value,
            ],
        ),
        (
            "karmada-apiserver, cert-manager",
            vec![
                "--set",
                "target=karmada-apiserver",
                "--set",
                "webhook.certificate.mode=cert-manager",
                "--set-file",
                &ca_value,
            ],
        ),
    ];
    let helm = tool("helm");
    for (i, (what, values)) in renders.iter().enumerate() {
        let ns = format!("render-{i}");
        // target karmada-apiserver goes into karmada.namespace (the Lease's): this one.
        let karmada_namespace = format!("karmada.namespace={ns}");
        let mut args = vec![
            "template",
            "mcs-policy",
            CHART,
            "--namespace",
            &ns,
            "--set",
            "namespace.create=true",
            "--set",
            &karmada_namespace,
        ];
        args.extend(values.iter().copied());
        let out = std::process::Command::new(&helm)
            .args(&args)
            .current_dir(workspace_root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "helm {args:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let objects = documents(&String::from_utf8(out.stdout).unwrap());
        // The namespaces first (the chart renders the release's with namespace.create), then the
        // rest.
        let (namespaces, rest): (Vec<Value>, Vec<Value>) =
            objects.into_iter().partition(|o| o["kind"] == "Namespace");
        assert!(
            namespaces
                .iter()
                .any(|n| n["metadata"]["name"] == ns.as_str()),
            "{what}: the release namespace {ns} is rendered"
        );
        apply(plane, &namespaces);
        let (served, skipped) = served_only(plane, what, rest);
        apply(plane, &served);
        for object in &served {
            let kind = object["kind"].as_str().unwrap();
            let name = object["metadata"]["name"].as_str().unwrap();
            let object_ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
            assert!(
                plane.get(kind, object_ns, name).is_some(),
                "{what}: {kind} {object_ns}/{name} was applied"
            );
        }
        if values.contains(&dns_cluster_ip.as_str()) {
            let service = plane.get("Service", &ns, "mcs-policy-dns").unwrap();
            assert_eq!(service["spec"]["clusterIP"], dns_ip.as_str(), "{what}");
        }
        let cert_manager = values.contains(&"webhook.certificate.mode=cert-manager")
            && !values.contains(&"target=karmada-apiserver");
        if cert_manager {
            // served_only checked that each is cert-manager's; the serving Certificate and
            // an Issuer are among them, and nothing but Certificates and Issuers.
            assert!(
                skipped.contains(&"Certificate/mcs-policy".to_string())
                    && skipped.iter().any(|s| s.starts_with("Issuer/"))
                    && skipped
                        .iter()
                        .all(|s| s.starts_with("Issuer/") || s.starts_with("Certificate/")),
                "{what}: left out {skipped:?}"
            );
        } else {
            assert!(skipped.is_empty(), "{what}: left out {skipped:?}");
        }
        remove_webhook_configurations(plane);
    }
}
