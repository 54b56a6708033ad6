//! Service cluster IPs from `--service-cluster-ip-range`.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::json;

use crate::support::Sim;

const SERVICES: &str = "/api/v1/namespaces/default/services";

async fn create(sim: &Sim, name: &str, cluster_ip: Option<&str>) -> crate::support::Reply {
    let mut spec = json!({"selector": {"app": name}, "ports": [{"port": 80}]});
    if let Some(ip) = cluster_ip {
        spec["clusterIP"] = json!(ip);
    }
    let body = json!({"metadata": {"name": name}, "spec": spec});
    sim.request("POST", SERVICES, "application/json", &body.to_string())
        .await
        .expect("create answered")
}

#[tokio::test]
async fn cluster_ips_come_from_the_configured_range_until_it_is_full() {
    // A /28: 14 addresses, the first the kubernetes Service's.
    let sim = Sim::start_with(&["--service-cluster-ip-range", "10.1.0.0/28"]).await;
    let kubernetes = sim.get(&format!("{SERVICES}/kubernetes")).await.json();
    assert_eq!(kubernetes["spec"]["clusterIP"], "10.1.0.1");
    let mut given = BTreeSet::new();
    for i in 0..13 {
        let reply = create(&sim, &format!("s{i}"), None).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        let ip: Ipv4Addr = reply.json()["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let [a, b, c, d] = ip.octets();
        assert!((a, b, c) == (10, 1, 0) && (2..=14).contains(&d), "{ip}");
        assert!(given.insert(ip), "{ip} given twice");
    }
    let full = create(&sim, "one-too-many", None).await;
    assert_eq!(full.status, 500, "{}", full.body);
    assert_eq!(
        full.json()["message"],
        "Internal error occurred: failed to allocate a serviceIP: range is full"
    );
    let outside = create(&sim, "outside", Some("10.0.0.5")).await;
    assert_eq!(outside.status, 422, "{}", outside.body);
    assert!(
        outside.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("The range of valid IPs is 10.1.0.0/28"),
        "{}",
        outside.body
    );
    // A deleted Service's address is free again; a reset keeps the range.
    let deleted = sim
        .request("DELETE", &format!("{SERVICES}/s0"), "application/json", "")
        .await
        .unwrap();
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let freed = deleted.json()["spec"]["clusterIP"].clone();
    let again = create(&sim, "again", None).await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.json()["spec"]["clusterIP"], freed);
    sim.admin("/_sim/reset", json!({})).await;
    let kubernetes = sim.get(&format!("{SERVICES}/kubernetes")).await.json();
    assert_eq!(kubernetes["spec"]["clusterIP"], "10.1.0.1");
}

#[tokio::test]
async fn an_invalid_range_is_refused_at_start() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["--service-cluster-ip-range", "10.0.0.0/8"])
        .output()
        .await
        .expect("kube-sim runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the mask must be >= 12"), "{stderr}");
}
