//! The chart's `target: member` release installed with real helm into a real kube-apiserver
//! v1.36 (tests/src/envtest), and its `clusterset.local` DNS server run as the chart renders it:
//! the Deployment's replicas by the DNS Pod double (the chart's args, `:PORT` on the pod's own
//! address, its ServiceAccount's token, so the chart's RBAC for real), the Service
//! `mcs-policy-dns` by the kube-proxy double on its ClusterIP:53, TCP and UDP (the test process
//! binds port 53: it runs as root, or with CAP_NET_BIND_SERVICE, as in CI).
//!
//! Installed as a member's user would (`target=member`, `dns.clusterIP` pinned as docs/dns.md
//! advises): every object of the release accepted, the upstream CRDs established, the DNS
//! account allowed to list and watch what it reads and nothing else; ServiceImports and
//! imported EndpointSlices as `mcs-policy sync` writes them answered through the Service (a
//! ClusterSetIP import's `spec.ips`, a Headless import's ready endpoints of every source
//! cluster, NXDOMAIN for a name that does not exist), over TCP and UDP, by every replica; a
//! slice added later in a later answer (the account's `watch`: with `list` alone the replicas
//! are ready but never see a change); `/metrics` through the Service `mcs-policy-dns-metrics`;
//! then `helm uninstall` removes every object of the release but the CRDs, which the chart
//! keeps (`helm.sh/resource-policy: keep`), and with them the ServiceImports.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use serde_json::{Value, json};
use tests::dns::{self, ips};
use tests::envtest::dns_pods::DnsPods;
use tests::envtest::{ControlPlane, wait_for};

const CHART: &str = "policies/chart/mcs-policy";
const NS: &str = "mcs-policy-system";
const APP_NS: &str = "shop";
const SA: &str = "system:serviceaccount:mcs-policy-system:mcs-policy-dns";

fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

/// `kind/name` of an object of the manifest, and its namespace ("" when cluster-scoped).
fn reference(object: &Value) -> (String, String) {
    let kind = object["kind"].as_str().unwrap();
    let group = object["apiVersion"]
        .as_str()
        .unwrap()
        .rsplit_once('/')
        .map(|(group, _)| format!(".{group}"))
        .unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap();
    let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
    (format!("{kind}{group}/{name}"), ns.to_string())
}

fn exists(plane: &ControlPlane, object: &Value) -> bool {
    let (target, ns) = reference(object);
    let mut args = vec!["get", target.as_str(), "-o", "name", "--ignore-not-found"];
    if !ns.is_empty() {
        args.extend(["-n", ns.as_str()]);
    }
    !plane.kubectl(&args).trim().is_empty()
}

fn apply(plane: &ControlPlane, object: &Value) {
    plane.kubectl_in(&["apply", "-f", "-"], &object.to_string());
}

fn service_import(name: &str, spec: Value) -> Value {
    dns::service_import(APP_NS, name, spec)
}

fn imported_slice(name: &str, service: &str, cluster: &str, endpoints: Value) -> Value {
    dns::imported_slice(APP_NS, name, (service, cluster), "IPv4", endpoints)
}

/// One query over TCP; an error when the connection is refused or closed (no ready endpoint
/// behind the Service yet).
fn tcp(server: SocketAddr, name: &str, kind: RecordType) -> Result<Message, String> {
    dns::tcp(server, &dns::request(name, kind).to_vec().unwrap())
}

/// One query over UDP.
fn udp(server: SocketAddr, name: &str, kind: RecordType) -> Result<Message, String> {
    dns::udp(server, &dns::request(name, kind).to_vec().unwrap())
}

fn addresses(m: &Message) -> BTreeSet<IpAddr> {
    dns::addresses(&m.answers)
}

fn at(name: &str) -> String {
    format!("{name}.{APP_NS}.svc.clusterset.local.")
}

/// `GET path` over HTTP/1.1: the body of a 200, else an error.
fn http_get(server: SocketAddr, path: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(server).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: dns\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_string()),
        _ => Err(text),
    }
}

/// `kubectl auth can-i VERB RESOURCE --as` the DNS server's ServiceAccount, cluster-wide.
fn can_i(plane: &ControlPlane, verb: &str, resource: &str) -> bool {
    let out = plane.kubectl_output(
        &[
            "auth",
            "can-i",
            verb,
            resource,
            "--all-namespaces",
            "--as",
            SA,
        ],
        None,
    );
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

#[test]
fn the_member_release_answers_clusterset_local_through_its_service_and_uninstalls_cleanly() {
    let plane = ControlPlane::start("member");
    let _logs = plane.logs_on_panic();
    let cluster_ip = format!("127.{}.0.53", 100 + u16::from(plane.index));

    // 1. Installed as a member's user would: target member, the DNS Service's address pinned.
    plane.helm(&[
        "install",
        "mcs-policy",
        CHART,
        "-n",
        NS,
        "--create-namespace",
        "--set",
        "target=member",
        "--set",
        &format!("dns.clusterIP={cluster_ip}"),
    ]);
    let manifest = documents(&plane.helm(&["get", "manifest", "mcs-policy", "-n", NS]));
    let kinds: BTreeSet<&str> = manifest
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "CustomResourceDefinition",
        "Deployment",
        "Service",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "PodDisruptionBudget",
        "Secret",
    ] {
        assert!(
            kinds.contains(kind),
            "the member release has a {kind}: {kinds:?}"
        );
    }
    for object in &manifest {
        assert!(exists(&plane, object), "accepted: {:?}", reference(object));
    }
    let crds: Vec<&Value> = manifest
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    let crd_names: BTreeSet<&str> = crds
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        crd_names,
        BTreeSet::from([
            "clusterproperties.about.k8s.io",
            "serviceexports.multicluster.x-k8s.io",
            "serviceimports.multicluster.x-k8s.io",
        ])
    );
    for name in &crd_names {
        plane.kubectl(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{name}"),
            "--timeout=60s",
        ]);
    }

    // The DNS account: list and watch of what it reads, cluster-wide; nothing else.
    for resource in ["serviceimports.multicluster.x-k8s.io", "endpointslices"] {
        for verb in ["list", "watch"] {
            assert!(can_i(&plane, verb, resource), "{SA} may {verb} {resource}");
        }
        for verb in ["get", "create", "patch", "delete"] {
            assert!(
                !can_i(&plane, verb, resource),
                "{SA} may not {verb} {resource}"
            );
        }
    }
    assert!(
        !can_i(&plane, "list", "secrets"),
        "{SA} may not list secrets"
    );

    // 2. Imports as `mcs-policy sync` writes them into the member.
    plane.kubectl(&["create", "namespace", APP_NS]);
    apply(
        &plane,
        &service_import(
            "web",
            json!({"type": "ClusterSetIP", "ips": ["10.96.0.10"], "ipFamilies": ["IPv4"],
                   "ports": [{"name": "http", "protocol": "TCP", "port": 80}]}),
        ),
    );
    apply(
        &plane,
        &service_import(
            "db",
            json!({"type": "Headless", "ports": [{"name": "pg", "protocol": "TCP", "port": 5432}]}),
        ),
    );
    apply(
        &plane,
        &imported_slice(
            "db-east",
            "db",
            "east",
            json!([
                {"addresses": ["10.1.0.1"], "hostname": "db-0", "conditions": {"ready": true}},
                {"addresses": ["10.1.0.2"], "hostname": "db-1", "conditions": {"ready": false}},
            ]),
        ),
    );
    apply(
        &plane,
        &imported_slice(
            "db-west",
            "db",
            "west",
            json!([{"addresses": ["10.2.0.1"], "hostname": "db-0", "conditions": {"ready": true}}]),
        ),
    );

    // 3. The DNS Deployment's replicas, with the chart's args and account, behind the Service.
    let mut pods = DnsPods::deployment(&plane, NS, "mcs-policy-dns");
    assert_eq!(pods.replica_count(), 2, "two DNS replicas");
    assert_eq!(pods.args(0)[0], "dns");
    let service = pods.service("mcs-policy-dns");
    assert_eq!(
        service.ip.to_string(),
        cluster_ip,
        "dns.clusterIP is the Service's"
    );
    pods.start_all();
    for i in 0..pods.replica_count() {
        pods.wait_ready(i);
    }
    let front = SocketAddr::new(service.ip, 53);

    // Through the Service, over TCP: once a replica is ready behind it, the import's IP.
    let web = wait_for(
        "web's ClusterSetIP through the Service over TCP",
        Duration::from_secs(30),
        || {
            let answer = tcp(front, &at("web"), RecordType::A)?;
            match addresses(&answer) == ips(&["10.96.0.10"]) {
                true => Ok(answer),
                false => Err(format!("{answer:?}")),
            }
        },
    );
    assert_eq!(web.metadata.response_code, ResponseCode::NoError);
    assert!(web.metadata.authoritative);
    assert!(
        web.answers.iter().all(|r| r.ttl == 5),
        "the chart's dns.ttl"
    );

    // Headless: the ready endpoints of both source clusters, the not-ready one left out.
    let db = tcp(front, &at("db"), RecordType::A).expect("db over TCP");
    assert_eq!(db.metadata.response_code, ResponseCode::NoError);
    assert_eq!(addresses(&db), ips(&["10.1.0.1", "10.2.0.1"]));
    let host = tcp(front, &format!("db-0.west.{}", at("db")), RecordType::A).unwrap();
    assert_eq!(addresses(&host), ips(&["10.2.0.1"]));

    // A name that does not exist.
    let missing = tcp(front, &at("nothing"), RecordType::A).expect("nothing over TCP");
    assert_eq!(missing.metadata.response_code, ResponseCode::NXDomain);
    assert!(missing.answers.is_empty());

    // And over UDP, the Service's other port.
    let over_udp = udp(front, &at("web"), RecordType::A).expect("web over UDP");
    assert_eq!(addresses(&over_udp), ips(&["10.96.0.10"]));

    // Every replica answers on its own (no leader): each queried at its pod address.
    let port = pods.container_port("dns-tcp", "TCP");
    for i in 0..pods.replica_count() {
        let direct = tcp(SocketAddr::new(pods.ip(i), port), &at("db"), RecordType::A)
            .unwrap_or_else(|e| panic!("replica {i}: {e}"));
        assert_eq!(addresses(&direct), ips(&["10.1.0.1", "10.2.0.1"]));
    }
    assert!(
        service.forwarded() >= 5,
        "the queries went through the Service"
    );

    // The metrics Service reaches the replicas' HTTP port: ready, and the queries counted.
    let metrics = pods.service("mcs-policy-dns-metrics");
    let metrics_front = SocketAddr::new(metrics.ip, 8080);
    let text = wait_for(
        "/metrics through mcs-policy-dns-metrics",
        Duration::from_secs(30),
        || http_get(metrics_front, "/metrics"),
    );
    assert!(
        text.contains("mcs_policy_dns_queries_total{rcode=\"NOERROR\"}"),
        "{text}"
    );
    assert!(text.contains("mcs_policy_dns_services 2"), "{text}");
    drop(metrics);

    // A change after the start comes through the watches (the account's `watch`): a third
    // source cluster's slice shows in a later answer.
    apply(
        &plane,
        &imported_slice(
            "db-north",
            "db",
            "north",
            json!([{"addresses": ["10.3.0.1"], "hostname": "db-0", "conditions": {"ready": true}}]),
        ),
    );
    wait_for(
        "the new slice in db's answer through the Service",
        Duration::from_secs(30),
        || {
            let answer = tcp(front, &at("db"), RecordType::A)?;
            match addresses(&answer) == ips(&["10.1.0.1", "10.2.0.1", "10.3.0.1"]) {
                true => Ok(()),
                false => Err(format!("{answer:?}")),
            }
        },
    );

    // 4. Uninstall: the pods go with the Deployment; every object of the release is deleted
    // but the CRDs the chart keeps, and the ServiceImports with them.
    drop(service);
    pods.stop_all();
    plane.helm(&["uninstall", "mcs-policy", "-n", NS, "--timeout", "60s"]);
    for object in &manifest {
        let kept = object["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep";
        assert_eq!(
            kept,
            object["kind"] == "CustomResourceDefinition",
            "the chart keeps exactly its CRDs: {:?}",
            reference(object)
        );
        if kept {
            assert!(exists(&plane, object), "kept: {:?}", reference(object));
        } else {
            wait_for(
                &format!("{:?} deleted by helm uninstall", reference(object)),
                Duration::from_secs(30),
                || match exists(&plane, object) {
                    false => Ok(()),
                    true => Err("still there".to_string()),
                },
            );
        }
    }
    assert!(
        plane.get("serviceimport", APP_NS, "web").is_some(),
        "the ServiceImports survive the uninstall with their CRD"
    );
    assert!(
        plane
            .helm_output(&["status", "mcs-policy", "-n", NS])
            .status
            .code()
            != Some(0),
        "the release is gone"
    );
}
