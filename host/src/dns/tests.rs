//! The names and records of [`Zone::answer`] over an [`Index`] built from objects, without a
//! server: the edges the real-query tests (tests/tests/dns_clusterset.rs) do not reach.

use std::net::IpAddr;

use hickory_server::proto::rr::{Name, RData, RecordType};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;

use super::answer::{Answer, Zone};
use super::index::{Import, ImportSpec, Index, address_label};

fn import(name: &str, spec: serde_json::Value) -> Import {
    Import {
        namespace: "shop".into(),
        name: name.into(),
        spec: serde_json::from_value::<ImportSpec>(spec).unwrap(),
    }
}

fn slice(service: &str, cluster: &str, endpoints: serde_json::Value) -> EndpointSlice {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{service}-{cluster}"), "namespace": "shop", "labels": {
            "multicluster.kubernetes.io/service-name": service,
            "multicluster.kubernetes.io/source-cluster": cluster}},
        "addressType": "IPv4",
        "ports": [{"name": "pg", "port": 5432}],
        "endpoints": endpoints,
    }))
    .unwrap()
}

fn index() -> Index {
    let slices = [
        slice(
            "db",
            "East",
            json!([{"addresses": ["10.1.0.1"], "hostname": "db-0"},
                   {"addresses": ["10.1.0.1"], "hostname": "db-0"}]),
        ),
        slice(
            "db",
            "west",
            json!([{"addresses": ["fd00::9", "not-an-ip"]}]),
        ),
    ];
    Index::build(
        [
            import(
                "web",
                json!({"type": "ClusterSetIP", "ips": ["10.96.0.1", "bogus"],
                       "ports": [{"name": "HTTP", "port": 80}, {"name": "", "port": 81},
                                 {"name": "big", "port": 70000}]}),
            ),
            import("db", json!({"type": "Headless"})),
        ],
        slices.iter(),
    )
}

fn ask(name: &str, kind: RecordType) -> Answer {
    let zone = Zone::new("ClusterSet.Local", 5).unwrap();
    zone.answer(&index(), 1, &Name::from_ascii(name).unwrap(), kind)
}

fn addresses(answer: &Answer) -> Vec<IpAddr> {
    let Answer::Found { answers, .. } = answer else {
        panic!("found: {answer:?}");
    };
    answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect()
}

fn nodata(answer: &Answer) -> bool {
    matches!(answer, Answer::Found { answers, .. } if answers.is_empty())
}

#[test]
fn names_compare_case_insensitively_and_bad_addresses_are_left_out() {
    let a = ask("WEB.Shop.svc.clusterset.local.", RecordType::A);
    assert_eq!(addresses(&a), ["10.96.0.1".parse::<IpAddr>().unwrap()]);
    // The source-cluster label East is the name east.
    let host = ask("db-0.east.db.shop.svc.clusterset.local.", RecordType::A);
    assert_eq!(addresses(&host), ["10.1.0.1".parse::<IpAddr>().unwrap()]);
    // The same endpoint twice is one address.
    let all = ask("db.shop.svc.clusterset.local.", RecordType::ANY);
    assert_eq!(addresses(&all).len(), 2);
}

#[test]
fn only_named_ports_of_a_valid_number_get_srv_records_by_lowercase_name() {
    let srv = ask("_http._tcp.web.shop.svc.clusterset.local.", RecordType::SRV);
    let Answer::Found {
        answers,
        additionals,
    } = &srv
    else {
        panic!("{srv:?}");
    };
    assert_eq!(answers.len(), 1);
    assert_eq!(additionals.len(), 1, "the service's address");
    for absent in ["_big._tcp", "_http._udp", "__tcp"] {
        let name = format!("{absent}.web.shop.svc.clusterset.local.");
        assert_eq!(ask(&name, RecordType::SRV), Answer::NxDomain, "{name}");
    }
}

#[test]
fn empty_non_terminals_exist_without_records() {
    for name in [
        "svc.clusterset.local.",
        "shop.svc.clusterset.local.",
        "_tcp.web.shop.svc.clusterset.local.",
        "west.db.shop.svc.clusterset.local.",
        "clusterset.local.",
    ] {
        assert!(nodata(&ask(name, RecordType::A)), "{name}");
    }
    for name in [
        "other.svc.clusterset.local.",
        "east.web.shop.svc.clusterset.local.",
        "db-0.east.web.shop.svc.clusterset.local.",
        "north.db.shop.svc.clusterset.local.",
        "a.b.c.db.shop.svc.clusterset.local.",
        "web.shop.pod.clusterset.local.",
    ] {
        assert_eq!(ask(name, RecordType::A), Answer::NxDomain, "{name}");
    }
    assert!(matches!(
        ask("clusterset.local.", RecordType::SOA),
        Answer::Found { answers, .. } if answers.len() == 1
    ));
}

#[test]
fn outside_the_zone_is_refused_and_the_root_is_no_zone() {
    assert_eq!(
        ask("web.shop.svc.cluster.local.", RecordType::A),
        Answer::Refused
    );
    assert_eq!(ask("local.", RecordType::A), Answer::Refused);
    assert!(Zone::new(".", 5).is_err());
    assert!(Zone::new("a..b", 5).is_err());
}

#[test]
fn an_endpoint_without_hostname_is_named_after_its_address() {
    assert_eq!(address_label(&"10.1.0.9".parse().unwrap()), "10-1-0-9");
    assert_eq!(address_label(&"fd00::9".parse().unwrap()), "fd00--9");
    let host = ask(
        "fd00--9.west.db.shop.svc.clusterset.local.",
        RecordType::AAAA,
    );
    assert_eq!(addresses(&host), ["fd00::9".parse::<IpAddr>().unwrap()]);
    let srv = ask("_pg._tcp.db.shop.svc.clusterset.local.", RecordType::SRV);
    let Answer::Found { answers, .. } = &srv else {
        panic!("{srv:?}");
    };
    let targets: Vec<String> = answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::SRV(s) => Some(s.target.to_ascii()),
            _ => None,
        })
        .collect();
    assert_eq!(
        targets,
        [
            "db-0.east.db.shop.svc.clusterset.local.",
            "fd00--9.west.db.shop.svc.clusterset.local."
        ]
    );
}
