//! The component under wasmtime and the guest compiled natively give the same answers, and those
//! answers keep their properties (tests/differential): on random structured calls (the
//! `structured` fuzz target's generator, fed by proptest), and on the checked-in fuzz corpus of
//! every target (fuzz/corpus, which includes every input a fuzzer once failed on).
//! The fuzzers themselves run from scripts/fuzz.sh; see TESTING.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use differential::{Call, targets};
use mcs_policy::engine::types as h;
use proptest::prelude::*;

/// Random calls per run: enough to vary every entry point each run, few enough to stay quick
/// (under a second). `PROPTEST_CASES=N` runs N instead.
const CASES: u32 = 384;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Failing inputs are kept in tests/proptest-regressions/ and tried first next time.
        ..ProptestConfig::default()
    })]

    #[test]
    fn component_and_native_guest_agree_on_random_structured_calls(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000)
    ) {
        targets::structured(&bytes);
    }

    #[test]
    fn component_and_native_guest_agree_on_random_clusterset_calls(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000)
    ) {
        targets::clusterset(&bytes);
    }
}

#[test]
fn the_checked_in_fuzz_corpus_replays_cleanly_through_every_target() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let start = Instant::now();
    let mut replayed = 0;
    for (name, target) in targets::ALL {
        let dir = root.join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.expect("directory entry").path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for the {name} target");
        for file in files {
            let data = std::fs::read(&file).expect("corpus file");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(
                outcome.is_ok(),
                "{name} target fails on {} (see the panic above)",
                file.display()
            );
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} corpus inputs in {:?}", start.elapsed());
}

/// One object about as large as the API server takes: the webhook reads bodies up to
/// `MAX_BODY_BYTES`, and an UPDATE carries two objects and some envelope.
const LARGE: usize = mcs_policy::webhook::MAX_BODY_BYTES / 4;

/// The webhook's default budget (the API server's 10 s timeout minus its 250 ms margin). A rule
/// that compares every item with every other takes minutes on objects this large; linear ones
/// take well under a second in release builds, a few in this debug build of the host (whose
/// wasmtime, lowering the arguments, is not optimised).
const BUDGET: Duration = Duration::from_millis(9_750);

fn mcs_json(meta: &str, spec: &str) -> String {
    format!(
        r#"{{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService","metadata":{{"name":"web","namespace":"shop","resourceVersion":"1"{meta}}},"spec":{{{spec}}}}}"#
    )
}

/// Items `item(0)`, `item(1)`, ... as many as fit in `bytes` once joined with commas.
fn items(bytes: usize, item: impl Fn(usize) -> String) -> Vec<String> {
    let mut out = Vec::new();
    let mut size = 0;
    for i in 0.. {
        let next = item(i);
        size += next.len() + 1;
        if size > bytes {
            break;
        }
        out.push(next);
    }
    out
}

fn admission(operation: h::Operation, object: String, old: Option<String>) -> h::AdmissionRequest {
    h::AdmissionRequest {
        uid: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into(),
        operation,
        object,
        old_object: old,
    }
}

fn slice(name: String, source: &str, ports: usize) -> h::EndpointSlice {
    h::EndpointSlice {
        name,
        namespace: "shop".into(),
        labels: vec![
            ("kubernetes.io/service-name".into(), "web".into()),
            (
                "endpointslice.kubernetes.io/managed-by".into(),
                "endpointslice-dispatch-controller.karmada.io".into(),
            ),
        ],
        annotations: vec![(
            "endpointslice.karmada.io/provision-cluster".into(),
            source.into(),
        )],
        address_type: "IPv4".into(),
        endpoints: vec![],
        ports: (0..ports)
            .map(|i| h::EndpointPort {
                name: Some(format!("p{i}")),
                port: Some(i32::try_from(i).unwrap_or(0) + 1),
                protocol: None,
                app_protocol: None,
            })
            .collect(),
    }
}

/// Calls whose inputs are as large as the API server lets them be, each shaped to make one rule
/// do the most work: every item an error, every name compared with every other.
fn large_calls() -> Vec<(&'static str, Call)> {
    let strict = h::Settings {
        reject_empty_types: true,
        reject_repeated_types: true,
        reject_duplicate_cluster_names: true,
        reject_unknown_port_names: true,
        warn_unregistered_clusters: true,
    };
    let ports = items(LARGE, |i| format!(r#"{{"name":"p{i}","port":0}}"#)).join(",");
    let same_ports = items(LARGE, |_| r#"{"name":"http","port":80}"#.to_string()).join(",");
    let types = items(LARGE, |i| format!(r#""t{i}""#)).join(",");
    // Two lists of cluster names in one object: half the size each.
    let cluster_names: Vec<String> = (0..items(LARGE / 2, |i| format!(r#"{{"name":"m{i}"}}"#))
        .len())
        .map(|i| format!("m{i}"))
        .collect();
    let clusters = cluster_names
        .iter()
        .map(|n| format!(r#"{{"name":"{n}"}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let repeated = items(LARGE / 2, |i| format!(r#"{{"name":"m{}"}}"#, i % 2)).join(",");
    let finalizers = items(LARGE, |i| format!(r#""example.com/f{i}""#)).join(",");
    let deleting = r#","deletionTimestamp":"2024-05-01T10:00:00Z""#;
    // A hub Service with as many ports as fit, and an MCS exposing each of them.
    let service_ports: Vec<h::ServicePort> =
        (0..items(LARGE, |i| format!(r#"{{"name":"p{i}","port":{i}}}"#)).len())
            .map(|i| h::ServicePort {
                name: format!("p{i}"),
                port: i32::try_from(i).unwrap_or(0),
            })
            .collect();
    let ports_spec = |ports: &str| format!(r#""types":["CrossCluster"],"ports":[{ports}]"#);
    let service = |kind: &str, ports: &str, node_port: bool| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"web","namespace":"shop"}},"spec":{{"type":"{kind}","ports":[{}]}}}}"#,
            ports
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| if node_port {
                    p.replace('}', r#","nodePort":30000}"#)
                } else {
                    p.to_string()
                })
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let service_port_list = items(LARGE * 2 / 3, |i| {
        format!(r#"{{"name":"p{i}","port":{}}}"#, i % 65535 + 1)
    })
    .join(",");
    let mcs_ref = h::McsRef {
        name: "web".into(),
        namespace: "shop".into(),
        ports: service_ports
            .iter()
            .map(|p| h::ExposurePort {
                name: p.name.clone(),
                port: p.port,
            })
            .collect(),
    };
    // A member's copies of one Service: as many as a list response of this size holds.
    let slice_names: Vec<String> = (0..LARGE / 200).map(|i| format!("m1-web-{i}")).collect();
    vec![
        (
            "validate: every port invalid, every message distinct",
            Call::Validate {
                request: admission(
                    h::Operation::Create,
                    mcs_json("", &ports_spec(&ports)),
                    None,
                ),
                settings: h::Settings::default(),
                context: h::Context::default(),
            },
        ),
        (
            "validate: every port name a duplicate",
            Call::Validate {
                request: admission(
                    h::Operation::Create,
                    mcs_json("", &ports_spec(&same_ports)),
                    None,
                ),
                settings: strict,
                context: h::Context {
                    registered_clusters: None,
                    service_ports: Some(vec![h::ServicePort {
                        name: "http".into(),
                        port: 80,
                    }]),
                },
            },
        ),
        (
            "validate: every type distinct and unknown",
            Call::Validate {
                request: admission(
                    h::Operation::Create,
                    mcs_json("", &format!(r#""types":[{types}]"#)),
                    None,
                ),
                settings: strict,
                context: h::Context::default(),
            },
        ),
        (
            "validate: every provider listed twice and not registered",
            Call::Validate {
                request: admission(
                    h::Operation::Create,
                    mcs_json(
                        "",
                        &format!(
                            r#""types":["CrossCluster"],"providerClusters":[{repeated}],"consumerClusters":[{clusters}]"#
                        ),
                    ),
                    None,
                ),
                settings: strict,
                context: h::Context {
                    registered_clusters: Some(
                        cluster_names.iter().map(|n| format!("{n}-x")).collect(),
                    ),
                    service_ports: None,
                },
            },
        ),
        (
            "validate: an update adding as many finalizers as there are while being deleted",
            Call::Validate {
                request: admission(
                    h::Operation::Update,
                    mcs_json(
                        &format!(r#"{deleting},"finalizers":[{finalizers},"example.com/new"]"#),
                        "",
                    ),
                    Some(mcs_json(
                        &format!(r#"{deleting},"finalizers":[{finalizers}]"#),
                        "",
                    )),
                ),
                settings: h::Settings::default(),
                context: h::Context::default(),
            },
        ),
        (
            "plan: every listed cluster registered",
            Call::Plan {
                mcs: mcs_json(
                    "",
                    &format!(
                        r#""types":["CrossCluster"],"providerClusters":[{clusters}],"consumerClusters":[{clusters}]"#
                    ),
                ),
                registered_clusters: cluster_names.clone(),
            },
        ),
        (
            "filter: every MCS port a Service port",
            Call::Filter {
                mcs: mcs_ref.clone(),
                service_ports: Some(service_ports.clone()),
                source_cluster: "member1".into(),
                consumer_cluster: "member2".into(),
                slices: (0..20)
                    .map(|i| {
                        let mut s = slice(format!("web-{i}"), "member1", 100);
                        s.labels[1].1 = "endpointslice-controller.k8s.io".into();
                        s
                    })
                    .collect(),
            },
        ),
        (
            "prune: every copy desired",
            Call::Prune {
                mcs: mcs_ref,
                existing: slice_names
                    .iter()
                    .map(|n| slice(n.clone(), "member1", 0))
                    .collect(),
                desired: slice_names.clone(),
                kept_sources: cluster_names.clone(),
            },
        ),
        (
            "service: every port of the member's Service to keep the node port of",
            Call::Service {
                template: service("NodePort", &service_port_list, false),
                existing: Some(service("LoadBalancer", &service_port_list, true)),
            },
        ),
    ]
}

#[test]
fn inputs_as_large_as_the_api_server_accepts_are_answered_within_the_webhooks_budget() {
    let mut failed = Vec::new();
    for (what, call) in large_calls() {
        let start = Instant::now();
        if std::panic::catch_unwind(|| differential::agree_within(&call, BUDGET)).is_err() {
            failed.push(what);
        }
        eprintln!("{what}: {:?}", start.elapsed());
    }
    assert!(
        failed.is_empty(),
        "failed (see the panics above): {failed:?}"
    );
}
