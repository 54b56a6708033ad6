//! What a real kube-apiserver v1.36 (tests/src/envtest) makes of the clusterset component's
//! ServiceImport status and owners, and what Kubernetes' own garbage collector
//! (kube-controller-manager, its `garbagecollector` controller only) does with them: the
//! component's answers are applied as the host applies them (server-side apply, the import's
//! status through its subresource, slices with the answer's owner), passes follow on what the
//! server returns until nothing is left to write, and deleting the ServiceImport deletes the
//! derived Service and the imported slice.

use std::time::Duration;

use mcs_policy::engine::convert;
use mcs_policy::engine::types::{
    ClustersetDecision, ClustersetMember, ClustersetMemberState, ClustersetObjects, ClustersetRead,
    ImportedSlice, ObjectWrite,
};
use mcs_policy::engine::{EngineOptions, PolicyEngine};
use serde_json::{Value, json};
use tests::envtest::process::Process;
use tests::envtest::{ControlPlane, assets, wait_for};
use tests::workspace_root;

const BUDGET: Duration = Duration::from_secs(5);
const IMPORTS: &str = "serviceimports.multicluster.x-k8s.io";
const MANAGER: &str = "mcs-policy";

fn export() -> String {
    json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": "2026-12-01T00:00:00Z"}})
    .to_string()
}

fn service() -> String {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"clusterIP": "10.0.0.10", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
    .to_string()
}

fn source_slice() -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "namespace": "shop", "labels": {
            "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

/// `kubectl apply --server-side` of `object` (JSON), to its status subresource when `status`.
fn apply(plane: &ControlPlane, object: &Value, status: bool) {
    let mut args = vec![
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager",
        MANAGER,
        "-f",
        "-",
    ];
    if status {
        args.push("--subresource=status");
    }
    plane.kubectl_in(&args, &object.to_string());
}

/// What the member holds of `shop/web`, read back from the server.
fn read(plane: &ControlPlane, derived: &str) -> ClustersetRead {
    let text = |v: Option<Value>| v.map(|v| v.to_string());
    let imported: Vec<ImportedSlice> = serde_json::from_str::<Value>(&plane.kubectl(&[
        "get",
        "endpointslices",
        "-n",
        "shop",
        "-l",
        "multicluster.kubernetes.io/service-name=web",
        "-o",
        "json",
    ]))
    .unwrap()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| ImportedSlice {
            slice: tests::clusterset::slice_to_wit(s),
            uid: s["metadata"]["uid"].as_str().unwrap().to_string(),
            resource_version: s["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string(),
        })
        .collect();
    ClustersetRead {
        namespace: "shop".into(),
        name: "web".into(),
        now: "2026-12-07T10:00:00Z".into(),
        members: vec![ClustersetMember {
            cluster: "member1".into(),
            cluster_property: None,
            state: ClustersetMemberState::Readable(ClustersetObjects {
                service_export: Some(export()),
                service: Some(service()),
                slices: vec![tests::clusterset::slice_to_wit(&source_slice())],
                service_import: text(plane.get(IMPORTS, "shop", "web")),
                derived_service: text(plane.get("service", "shop", derived)),
                imported_slices: imported,
            }),
            unreadable_ms: 0,
        }],
        stale_timeout_ms: None,
    }
}

/// Carries out the member's decision as the host does; whether anything was to be written.
fn write(plane: &ControlPlane, decision: &ClustersetDecision) -> bool {
    let m = &decision.members[0];
    let mut wrote = false;
    for (w, status) in [(&m.service_import, false), (&m.derived_service, false)] {
        match w {
            ObjectWrite::Apply(body) => {
                apply(plane, &serde_json::from_str(body).unwrap(), status);
                wrote = true;
            }
            ObjectWrite::Delete(p) => panic!("nothing is deleted here: {p:?}"),
            ObjectWrite::Leave => {}
        }
    }
    if let Some(status) = &m.service_import_status {
        apply(plane, &serde_json::from_str(status).unwrap(), true);
        wrote = true;
    }
    let owner = m
        .slice_owner
        .as_deref()
        .map(|o| serde_json::from_str(o).unwrap());
    for slice in &m.apply_slices {
        let mut slice = convert::slice_from_wit(slice.clone());
        slice.metadata.owner_references = owner.clone().map(|o| vec![o]);
        let mut object = serde_json::to_value(&slice).unwrap();
        object["apiVersion"] = json!("discovery.k8s.io/v1");
        object["kind"] = json!("EndpointSlice");
        apply(plane, &object, false);
        wrote = true;
    }
    assert!(m.delete_slices.is_empty(), "{m:?}");
    wrote
}

fn ready(import: &Value) -> Option<(String, String)> {
    let c = import["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?;
    Some((
        c["status"].as_str()?.to_string(),
        c["reason"].as_str()?.to_string(),
    ))
}

#[test]
fn a_real_api_server_takes_the_imports_status_and_owners_and_its_garbage_collector_deletes_what_it_owns()
 {
    let plane = ControlPlane::start("clusterset-owners");
    let _logs = plane.logs_on_panic();
    for file in [
        "multicluster.x-k8s.io_serviceexports.yaml",
        "multicluster.x-k8s.io_serviceimports.yaml",
    ] {
        let path = workspace_root().join("policies/crds").join(file);
        plane.kubectl(&["apply", "-f", path.to_str().unwrap()]);
    }
    plane.kubectl(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{IMPORTS}"),
        "--timeout=60s",
    ]);
    plane.kubectl(&["create", "namespace", "shop"]);
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let derived = engine
        .clusterset_derived_name("shop", "web", BUDGET)
        .unwrap();

    // Pass after pass on what the server returns, until nothing is to be written.
    let mut passes = 0;
    let mut readiness = Vec::new();
    loop {
        let decision = engine
            .clusterset_decide(&read(&plane, &derived), BUDGET)
            .unwrap()
            .unwrap();
        if !write(&plane, &decision) {
            break;
        }
        passes += 1;
        assert!(passes <= 3, "still writing after 3 passes: {decision:?}");
        readiness.push(ready(&plane.get(IMPORTS, "shop", "web").unwrap()));
    }
    println!("passes that wrote before nothing was left to write: {passes}");
    // A new import is Pending until its derived Service's IP is read, then Ready.
    let state = |s: &str, r: &str| Some((s.to_string(), r.to_string()));
    assert_eq!(
        readiness.first().cloned().flatten(),
        state("False", "Pending")
    );
    assert_eq!(readiness.last().cloned().flatten(), state("True", "Ready"));

    let import = plane.get(IMPORTS, "shop", "web").unwrap();
    let uid = import["metadata"]["uid"].as_str().unwrap();
    let service = plane.get("service", "shop", &derived).unwrap();
    let slices = read(&plane, &derived).members[0].clone();
    let ClustersetMemberState::Readable(held) = slices.state else {
        unreachable!()
    };
    assert_eq!(held.imported_slices.len(), 1);
    let slice_name = held.imported_slices[0].slice.name.clone();
    let slice = plane.get("endpointslice", "shop", &slice_name).unwrap();
    for object in [&service, &slice] {
        assert_eq!(
            object["metadata"]["ownerReferences"],
            json!([{"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
                "name": "web", "uid": uid, "blockOwnerDeletion": false}]),
            "{object}"
        );
    }

    // Kubernetes' garbage collector deletes what the import owns, with it.
    let dir = plane.dir.join("kcm");
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = plane.kubeconfig.to_str().unwrap().to_string();
    let _gc = Process::start(
        "kube-controller-manager",
        &assets().join("kube-controller-manager"),
        &[
            "--kubeconfig",
            &kubeconfig,
            "--authentication-kubeconfig",
            &kubeconfig,
            "--authorization-kubeconfig",
            &kubeconfig,
            "--controllers=garbagecollector",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--cert-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        &plane.dir.join("kube-controller-manager.log"),
    );
    plane.kubectl(&["delete", IMPORTS, "web", "-n", "shop", "--wait=true"]);
    wait_for(
        "the derived Service and the imported slice garbage-collected",
        Duration::from_secs(60),
        || {
            let left: Vec<&str> = [
                ("service", derived.as_str()),
                ("endpointslice", slice_name.as_str()),
            ]
            .into_iter()
            .filter(|(kind, name)| plane.get(kind, "shop", name).is_some())
            .map(|(_, name)| name)
            .collect();
            if left.is_empty() {
                Ok(())
            } else {
                let log = std::fs::read_to_string(plane.dir.join("kube-controller-manager.log"))
                    .unwrap_or_default();
                let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join("\n");
                Err(format!(
                    "still there: {left:?}; kube-controller-manager: {tail}"
                ))
            }
        },
    );
}
