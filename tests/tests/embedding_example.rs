//! The `endpoint_mirror` example (host/examples) — a minimal controller embedding
//! `PolicyEngine` — run for real between two kube-sim clusters: a provider slice appears in
//! the consumer in the shape the component decides, and a dispatched slice is never mirrored.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::{KillOnDrop, example, kube_sim};

fn kubeconfig(dir: &Path, name: &str, url: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster: {{server: \"{url}\"}}\nusers:\n- name: {name}\n  user: {{token: test}}\ncontexts:\n- name: {name}\n  context: {{cluster: {name}, user: {name}}}\ncurrent-context: {name}\n"
        ),
    )
    .unwrap();
    path
}

fn slice(name: &str, managed_by: &str) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "shop", "labels": {
            "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": managed_by}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.7"], "conditions": {"ready": true}, "nodeName": "n1"}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9100, "protocol": "TCP"}]
    })
}

const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_controller_mirrors_slices_as_the_component_decides() {
    let (_provider, provider_url) = kube_sim("member1");
    let (_consumer, consumer_url) = kube_sim("member2");
    let dir = std::env::temp_dir().join(format!("mcs-policy-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let http = reqwest::Client::new();
    // The example is minimal: it expects the namespace in both clusters (the sync controller
    // creates it in consumers).
    for url in [&provider_url, &consumer_url] {
        tests::sync::ensure_namespace(&http, url, "shop").await;
    }
    for (body, name) in [
        (
            slice("web-abc", "endpointslice-controller.k8s.io"),
            "web-abc",
        ),
        (
            slice("web-copy", "endpointslice-dispatch-controller.karmada.io"),
            "web-copy",
        ),
    ] {
        let resp = http
            .post(format!("{provider_url}{SLICES}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(
            resp.status().is_success(),
            "creating {name}: {}",
            resp.status()
        );
    }

    let _mirror = KillOnDrop(
        Command::new(example("endpoint_mirror"))
            .args([
                "--provider-kubeconfig",
                kubeconfig(&dir, "member1", &provider_url).to_str().unwrap(),
            ])
            .args(["--provider-name", "member1"])
            .args([
                "--consumer-kubeconfig",
                kubeconfig(&dir, "member2", &consumer_url).to_str().unwrap(),
            ])
            .args([
                "--consumer-name",
                "member2",
                "--namespace",
                "shop",
                "--service",
                "web",
                "--port",
                "http",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the example starts"),
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    let copy: Value = loop {
        let resp = http
            .get(format!("{consumer_url}{SLICES}/member1-web-abc"))
            .send()
            .await
            .unwrap();
        if resp.status().is_success() {
            break resp.json().await.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "the copy never appeared in the consumer"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        copy["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-dispatch-controller.karmada.io"
    );
    assert_eq!(
        copy["metadata"]["annotations"]["endpointslice.karmada.io/provision-cluster"],
        "member1"
    );
    assert_eq!(copy["endpoints"][0]["addresses"][0], "10.1.0.7");
    assert_eq!(
        copy["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}]),
        "only the selected port"
    );

    let all: Value = http
        .get(format!("{consumer_url}{SLICES}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["member1-web-abc"],
        "a dispatched slice is never mirrored again"
    );
    std::fs::remove_dir_all(dir).ok();
}
