//! `mcs-policy dns` (the `clusterset.local` server of KEP-1645) against a real kube-apiserver
//! v1.36 (tests/src/envtest): the CRDs of policies/crds/, ServiceImports and EndpointSlices as
//! `mcs-policy sync` writes them, the real binary, and real DNS queries over UDP and TCP, sent
//! and read as bytes on a socket (hickory-proto's messages), never by calling the server's
//! functions.
//!
//! One control plane and one DNS server for the file, in one test: the server is started before
//! the CRDs exist (its ServiceImport watch fails), so the answers before its caches synced
//! (SERVFAIL, `/readyz` 503) are seen deterministically; then every record kind, the negative
//! answers, a MultiClusterService-style copy that must stay out of the answers, changes that
//! must show in a later answer, and a malformed packet that must not stop the server.
//!
//! And end to end on kube-sim: `mcs-policy sync` imports a ServiceExport of member1 into
//! member2, and member2's DNS server answers the import.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{RData, RecordType};
use serde_json::{Value, json};
use tests::dns::{self, addresses as addresses_in, ips, srvs};
use tests::envtest::ControlPlane;
use tests::envtest::process::Process;
use tests::{binary, workspace_root};

/// How long a condition may take to come true (the caches syncing, a watch event arriving).
const PATIENCE: Duration = Duration::from_secs(90);

/// The running server: its process and where it listens.
struct Dns {
    process: Process,
    dns: SocketAddr,
    http: SocketAddr,
}

/// Starts `mcs-policy dns` against `plane` on free loopback ports, and reads them from its
/// output (`dns listening on ADDR`, `http listening on ADDR`).
fn start_dns(plane: &ControlPlane) -> Dns {
    start_dns_with(&plane.kubeconfig, &[], &plane.dir)
}

/// [`start_dns`] with the kubeconfig at `kubeconfig`, `extra` flags, its log in `dir`.
fn start_dns_with(kubeconfig: &Path, extra: &[&str], dir: &Path) -> Dns {
    let log = dir.join("dns.log");
    let kubeconfig = kubeconfig.display().to_string();
    let mut args = vec![
        "dns",
        "--kubeconfig",
        &kubeconfig,
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
        "--ttl",
        "7",
    ];
    args.extend_from_slice(extra);
    let mut process = Process::start("mcs-policy dns", &binary("mcs-policy"), &args, &[], &log);
    let read = |prefix: &str| -> Option<SocketAddr> {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|a| a.trim().parse().expect("a socket address"))
    };
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let (Some(dns), Some(http)) = (read("dns listening on "), read("http listening on ")) {
            return Dns { process, dns, http };
        }
        assert!(process.running(), "{}", process.log_tail(40));
        assert!(Instant::now() < deadline, "{}", process.log_tail(40));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A query's bytes.
fn request(name: &str, kind: RecordType) -> Vec<u8> {
    request_with(name, kind, None)
}

/// A query's bytes, with an EDNS OPT record of `edns_version` when given.
fn request_with(name: &str, kind: RecordType, edns_version: Option<u8>) -> Vec<u8> {
    dns::request_with(name, kind, edns_version)
        .to_vec()
        .expect("encodes")
}

/// One query over UDP.
fn udp(server: SocketAddr, name: &str, kind: RecordType) -> Message {
    udp_sending(server, request(name, kind))
}

/// One query, `sent`, over UDP.
fn udp_sending(server: SocketAddr, sent: Vec<u8>) -> Message {
    dns::udp(server, &sent).unwrap_or_else(|e| panic!("a UDP answer: {e}"))
}

/// One query over TCP.
fn tcp(server: SocketAddr, name: &str, kind: RecordType) -> Message {
    dns::tcp(server, &request(name, kind)).unwrap_or_else(|e| panic!("a TCP answer: {e}"))
}

/// The addresses of the A and AAAA answers.
fn addresses(m: &Message) -> BTreeSet<IpAddr> {
    addresses_in(&m.answers)
}

/// Asserts a negative answer with `code`: no answers, the zone's SOA in the authority section.
fn assert_negative(m: &Message, code: ResponseCode, ttl: u32) {
    assert_eq!(m.metadata.response_code, code, "{m:?}");
    assert!(m.answers.is_empty(), "{m:?}");
    assert!(m.metadata.authoritative, "{m:?}");
    let [soa] = m.authorities.as_slice() else {
        panic!("one SOA in authority: {m:?}");
    };
    assert_eq!(soa.name.to_ascii(), "clusterset.local.");
    let RData::SOA(data) = &soa.data else {
        panic!("an SOA: {soa:?}");
    };
    assert_eq!(data.minimum, ttl);
}

/// Polls `condition` until it holds; panics with `what` and the server's log after PATIENCE.
fn until(dns: &Dns, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what}: not so after {PATIENCE:?}\n{}",
            dns.process.log_tail(40)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `GET path` on the HTTP port: the status code and body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: dns\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("an HTTP status line");
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    (code, body.to_string())
}

fn apply(plane: &ControlPlane, object: &Value) {
    plane.kubectl_in(&["apply", "-f", "-"], &object.to_string());
}

fn service_import(name: &str, spec: Value) -> Value {
    dns::service_import("shop", name, spec)
}

fn imported_slice(
    name: &str,
    service: &str,
    cluster: &str,
    family: &str,
    endpoints: Value,
) -> Value {
    dns::imported_slice("shop", name, (service, cluster), family, endpoints)
}

fn apply_crds(plane: &ControlPlane) {
    let crds = workspace_root().join("policies/crds");
    for file in [
        "multicluster.x-k8s.io_serviceimports.yaml",
        "multicluster.x-k8s.io_serviceexports.yaml",
    ] {
        let path = crds.join(file);
        plane.kubectl(&["apply", "-f", &path.display().to_string()]);
    }
    plane.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/serviceimports.multicluster.x-k8s.io",
    ]);
}

const ZONE: &str = "svc.clusterset.local.";

fn at(name: &str) -> String {
    format!("{name}.shop.{ZONE}")
}

#[test]
fn clusterset_local_is_answered_from_the_imports_and_imported_slices() {
    let plane = ControlPlane::start("dns");
    let _logs = plane.logs_on_panic();
    let dns = start_dns(&plane);
    let server = dns.dns;

    // No ServiceImport CRD yet: the watch cannot list, the caches have not synced.
    let before = udp(server, &at("web"), RecordType::A);
    assert_eq!(before.metadata.response_code, ResponseCode::ServFail);
    assert_eq!(get(dns.http, "/readyz").0, 503);
    assert_eq!(get(dns.http, "/healthz").0, 200);
    // Outside the zone is refused whether or not the caches synced.
    let outside = udp(server, "web.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(outside.metadata.response_code, ResponseCode::Refused);

    apply_crds(&plane);
    plane.kubectl(&["create", "namespace", "shop"]);
    apply(
        &plane,
        &service_import(
            "web",
            json!({"type": "ClusterSetIP", "ips": ["10.96.0.10", "fd00::10"],
                   "ipFamilies": ["IPv4", "IPv6"],
                   "ports": [{"name": "http", "protocol": "TCP", "port": 80},
                             {"protocol": "UDP", "port": 9000}]}),
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
        &service_import("cache", json!({"type": "Headless", "ports": []})),
    );
    // StatefulSet Pods in two source clusters, one not ready, one with ready unset, one Pod
    // without a hostname, and db-0 of west in an IPv4 and an IPv6 slice.
    apply(
        &plane,
        &imported_slice(
            "db-east-1",
            "db",
            "east",
            "IPv4",
            json!([
                {"addresses": ["10.1.0.1"], "hostname": "db-0", "conditions": {"ready": true}},
                {"addresses": ["10.1.0.2"], "hostname": "db-1"},
                {"addresses": ["10.1.0.3"], "hostname": "db-2", "conditions": {"ready": false}},
            ]),
        ),
    );
    apply(
        &plane,
        &imported_slice(
            "db-west-1",
            "db",
            "west",
            "IPv4",
            json!([
                {"addresses": ["10.2.0.1"], "hostname": "db-0", "conditions": {"ready": true}},
                {"addresses": ["10.2.0.9"], "conditions": {"ready": true}},
            ]),
        ),
    );
    apply(
        &plane,
        &imported_slice(
            "db-west-2",
            "db",
            "west",
            "IPv6",
            json!([{"addresses": ["fd00::2:1"], "hostname": "db-0", "conditions": {"ready": true}}]),
        ),
    );
    // A MultiClusterService's copy of `shop/db`'s endpoints: only kubernetes.io/service-name.
    apply(
        &plane,
        &json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "db-mcs-copy", "namespace": "shop", "labels": {
                "kubernetes.io/service-name": "db",
                "endpointslice.kubernetes.io/managed-by": "mcs-policy.karmada.io",
            }},
            "addressType": "IPv4",
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.9.9.9"], "hostname": "db-0",
                           "conditions": {"ready": true}}],
        }),
    );

    until(&dns, "/readyz says ready", || {
        get(dns.http, "/readyz").0 == 200
    });
    let headless = ips(&["10.1.0.1", "10.1.0.2", "10.2.0.1", "10.2.0.9"]);
    until(&dns, "every object is in the answers", || {
        addresses(&udp(server, &at("db"), RecordType::A)) == headless
            && udp(server, &at("web"), RecordType::A)
                .metadata
                .response_code
                == ResponseCode::NoError
    });

    // ClusterSetIP: spec.ips by family, over UDP and TCP, with the TTL asked for.
    for ask in [udp, tcp] {
        let a = ask(server, &at("web"), RecordType::A);
        assert_eq!(a.metadata.response_code, ResponseCode::NoError);
        assert!(a.metadata.authoritative);
        assert_eq!(addresses(&a), ips(&["10.96.0.10"]));
        assert!(
            a.answers
                .iter()
                .all(|r| r.ttl == 7 && r.name.to_ascii() == at("web"))
        );
        let aaaa = ask(server, &at("web"), RecordType::AAAA);
        assert_eq!(addresses(&aaaa), ips(&["fd00::10"]));
    }
    // Its named port's SRV points at the service's name; the unnamed port has none.
    let srv = tcp(
        server,
        &format!("_http._tcp.{}", at("web")),
        RecordType::SRV,
    );
    assert_eq!(srv.metadata.response_code, ResponseCode::NoError);
    assert_eq!(srvs(&srv), BTreeSet::from([(80, at("web"))]));
    assert_eq!(
        addresses_in(&srv.additionals),
        ips(&["10.96.0.10", "fd00::10"])
    );
    assert_negative(
        &udp(
            server,
            &format!("_http._udp.{}", at("web")),
            RecordType::SRV,
        ),
        ResponseCode::NXDomain,
        7,
    );

    // Headless: every ready endpoint of every source cluster, not-ready ones and the
    // MultiClusterService copy (10.9.9.9) left out.
    let a = tcp(server, &at("db"), RecordType::A);
    assert_eq!(addresses(&a), headless);
    assert!(!addresses(&a).contains(&"10.9.9.9".parse::<IpAddr>().unwrap()));
    assert_eq!(
        addresses(&udp(server, &at("db"), RecordType::AAAA)),
        ips(&["fd00::2:1"])
    );
    // One SRV per ready endpoint: <hostname>.<clusterid>, or the address-derived name.
    let srv = udp(server, &format!("_pg._tcp.{}", at("db")), RecordType::SRV);
    let target = |host: &str| (5432, format!("{host}.{}", at("db")));
    assert_eq!(
        srvs(&srv),
        BTreeSet::from([
            target("db-0.east"),
            target("db-1.east"),
            target("db-0.west"),
            target("10-2-0-9.west"),
        ])
    );
    // The hosts' own names, by family; the not-ready one does not exist.
    let host = |h: &str, kind| udp(server, &format!("{h}.{}", at("db")), kind);
    assert_eq!(
        addresses(&host("db-0.east", RecordType::A)),
        ips(&["10.1.0.1"])
    );
    assert_eq!(
        addresses(&host("db-0.west", RecordType::A)),
        ips(&["10.2.0.1"])
    );
    assert_eq!(
        addresses(&host("db-0.west", RecordType::AAAA)),
        ips(&["fd00::2:1"])
    );
    assert_eq!(
        addresses(&host("10-2-0-9.west", RecordType::A)),
        ips(&["10.2.0.9"])
    );
    assert_negative(&host("db-2.east", RecordType::A), ResponseCode::NXDomain, 7);
    assert_negative(
        &host("db-0.north", RecordType::A),
        ResponseCode::NXDomain,
        7,
    );

    // A Headless import without a ready endpoint has no name (KEP-1645 DNS 2.4.1).
    assert_negative(
        &udp(server, &at("cache"), RecordType::A),
        ResponseCode::NXDomain,
        7,
    );
    // The specification's version (its 2.2).
    let version = tcp(server, "dns-version.clusterset.local.", RecordType::TXT);
    let [txt] = version.answers.as_slice() else {
        panic!("one TXT: {version:?}");
    };
    assert_eq!(txt.data.to_string(), "1.0.0");

    // Negative answers: a name that does not exist, one without records of the asked type.
    assert_negative(
        &udp(server, &at("nope"), RecordType::A),
        ResponseCode::NXDomain,
        7,
    );
    assert_negative(
        &tcp(server, "web.other.svc.clusterset.local.", RecordType::A),
        ResponseCode::NXDomain,
        7,
    );
    assert_negative(
        &udp(server, &at("web"), RecordType::MX),
        ResponseCode::NoError,
        7,
    );
    assert_negative(
        &udp(server, &at("db"), RecordType::SRV),
        ResponseCode::NoError,
        7,
    );
    assert_negative(
        &udp(server, "shop.svc.clusterset.local.", RecordType::A),
        ResponseCode::NoError,
        7,
    );
    let outside = tcp(server, "example.com.", RecordType::A);
    assert_eq!(outside.metadata.response_code, ResponseCode::Refused);
    assert!(outside.answers.is_empty());

    // EDNS: answered with EDNS; a version this server does not speak gets BADVERS.
    let edns = udp_sending(server, request_with(&at("db"), RecordType::A, Some(0)));
    assert_eq!(edns.metadata.response_code, ResponseCode::NoError);
    assert_eq!(addresses(&edns), headless);
    assert_eq!(edns.edns.as_ref().map(|e| e.version()), Some(0), "{edns:?}");
    let newer = udp_sending(server, request_with(&at("db"), RecordType::A, Some(1)));
    // BADVERS is 16, a number it shares with TSIG's BADSIG, which hickory-proto reads it as.
    assert_eq!(u16::from(newer.metadata.response_code), 16, "{newer:?}");
    assert!(newer.answers.is_empty());

    // A malformed packet (a header claiming a question that is not there) and a runt: the
    // server goes on answering.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .send_to(
            &[0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0xff],
            server,
        )
        .unwrap();
    socket.send_to(&[0x12], server).unwrap();
    let mut stream = TcpStream::connect(server).unwrap();
    stream.write_all(&[0, 3, 1, 2, 3]).unwrap();
    drop(stream);
    assert_eq!(
        addresses(&udp(server, &at("web"), RecordType::A)),
        ips(&["10.96.0.10"])
    );

    // Changes show in a later answer: an endpoint added, an import deleted.
    apply(
        &plane,
        &imported_slice(
            "db-east-1",
            "db",
            "east",
            "IPv4",
            json!([
                {"addresses": ["10.1.0.1"], "hostname": "db-0", "conditions": {"ready": true}},
                {"addresses": ["10.1.0.2"], "hostname": "db-1"},
                {"addresses": ["10.1.0.3"], "hostname": "db-2", "conditions": {"ready": true}},
            ]),
        ),
    );
    until(&dns, "db-2 of east, now ready, is answered", || {
        addresses(&host("db-2.east", RecordType::A)) == ips(&["10.1.0.3"])
    });
    assert!(
        addresses(&tcp(server, &at("db"), RecordType::A))
            .contains(&"10.1.0.3".parse::<IpAddr>().unwrap())
    );
    plane.kubectl(&["delete", "serviceimport", "web", "-n", "shop"]);
    until(&dns, "the deleted import's name does not exist", || {
        udp(server, &at("web"), RecordType::A)
            .metadata
            .response_code
            == ResponseCode::NXDomain
    });

    // The queries were counted by response code.
    let (code, metrics) = get(dns.http, "/metrics");
    assert_eq!(code, 200);
    for rcode in ["NOERROR", "NXDOMAIN", "SERVFAIL", "REFUSED"] {
        assert!(
            metrics.contains(&format!(
                "mcs_policy_dns_queries_total{{rcode=\"{rcode}\"}}"
            )),
            "{rcode}: {metrics}"
        );
    }
}

/// `mcs-policy sync` itself imports what member1 exports (a ClusterSetIP and a headless
/// Service) into member2, on kube-sim; `mcs-policy dns` of member2 answers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_sync_imports_is_answered_by_the_members_dns() {
    use tests::sync::{CRDS, SERVICES, SLICES, World, crd, post};
    let mut w = World::clusters("dns-e2e", false).await;
    for url in [&w.member1, &w.member2] {
        for file in [
            "multicluster.x-k8s.io_serviceexports.yaml",
            "multicluster.x-k8s.io_serviceimports.yaml",
            "about.k8s.io_clusterproperties.yaml",
        ] {
            post(&w.http, url, CRDS, &crd(file)).await;
        }
    }
    w.spawn_sync("1h", &[]);
    let exports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
    for (name, headless, address) in [("web", false, "10.1.0.1"), ("db", true, "10.1.0.9")] {
        let mut spec = json!({"selector": {"app": name},
            "ports": [{"name": "tcp-main", "port": 5432, "protocol": "TCP"}]});
        if headless {
            spec["clusterIP"] = json!("None");
        }
        let service = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "shop"}, "spec": spec});
        post(&w.http, &w.member1, SERVICES, &service).await;
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("{name}-abc"), "namespace": "shop", "labels": {
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
            "ports": [{"name": "tcp-main", "port": 5432, "protocol": "TCP"}],
        });
        post(&w.http, &w.member1, SLICES, &slice).await;
        let export = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1",
            "kind": "ServiceExport", "metadata": {"name": name, "namespace": "shop"}});
        post(&w.http, &w.member1, exports, &export).await;
    }

    let dns = start_dns_with(&w.kubeconfig(), &["--context", "member2"], &w.dir);
    let server = dns.dns;
    // The ClusterSetIP import's IP: its derived Service's cluster IP in member2.
    let imports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports/web";
    let ip = w
        .eventually("member2's import of web has an IP", || async {
            let import = tests::sync::get(&w.http, &w.member2, imports).await?;
            import["spec"]["ips"][0].as_str().map(str::to_string)
        })
        .await;
    let want = ips(&[ip.as_str()]);
    w.eventually("member2's DNS answers web with its import's IP", || async {
        (addresses(&udp(server, &at("web"), RecordType::A)) == want).then_some(())
    })
    .await;
    let srv = tcp(
        server,
        &format!("_tcp-main._tcp.{}", at("web")),
        RecordType::SRV,
    );
    assert_eq!(srvs(&srv), BTreeSet::from([(5432, at("web"))]));
    // The headless import: the exporter's endpoint, under member1's cluster id.
    w.eventually(
        "member2's DNS answers db with member1's endpoint",
        || async {
            (addresses(&udp(server, &at("db"), RecordType::A)) == ips(&["10.1.0.9"])).then_some(())
        },
    )
    .await;
    let srv = udp(
        server,
        &format!("_tcp-main._tcp.{}", at("db")),
        RecordType::SRV,
    );
    assert_eq!(
        srvs(&srv),
        BTreeSet::from([(5432, format!("10-1-0-9.member1.{}", at("db")))])
    );
    assert_eq!(
        addresses(&tcp(
            server,
            &format!("10-1-0-9.member1.{}", at("db")),
            RecordType::A
        )),
        ips(&["10.1.0.9"])
    );
    drop(dns);
}
