//! Engine benchmark: one validate, one mutate, one filter (50 slices × 10 endpoints) and one
//! decide (a sync pass over 20 members at rest, with the same endpoints in every member and with
//! each member's own; and the same passes with an MCS that does not decode, which shows what
//! crossing into the component costs; and a pass with every copy still to make) through the
//! component with a fresh instance per call, next to the same guest code compiled natively, in
//! one run. `cargo bench -p mcs-policy --bench engine`; results go in BENCHMARKS.md.
//! `cargo bench -p mcs-policy --bench engine -- ROW` runs one group of rows alone (to profile
//! it): `floor`, `validate`, `mutate`, `filter`, `decide` (with the same pass as separate calls)
//! or `reset` (the keep-resident sweep).

use std::hint::black_box;
use std::time::{Duration, Instant};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use mcs_policy::engine::{EngineOptions, PassSlices, PolicyEngine, convert, types};
use serde_json::Value;

const BUDGET: Duration = Duration::from_secs(5);

/// A realistic CREATE: a valid MCS with labels, annotations, ports and clusters (~2 KB).
fn object() -> String {
    serde_json::json!({
        "apiVersion": "networking.karmada.io/v1alpha1",
        "kind": "MultiClusterService",
        "metadata": {
            "name": "web", "namespace": "shop", "uid": "0b8c6f1e-8f0e-4b8e-9a5e-2f1d3c4b5a69",
            "generation": 1, "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop", "team": "storefront"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x".repeat(900)},
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "networking.karmada.io/v1alpha1", "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {
            "types": ["CrossCluster"],
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}, {"name": "metrics", "port": 9090}],
            "providerClusters": [{"name": "member1"}, {"name": "member2"}],
            "consumerClusters": [{"name": "member3"}, {"name": "member4"}]
        }
    })
    .to_string()
}

/// Builds the filter input for either the host's WIT types or the guest's (same shape).
macro_rules! filter_input {
    ($t:path) => {{
        use $t as t;
        let slices: Vec<t::EndpointSlice> = (0..50)
            .map(|s| t::EndpointSlice {
                name: format!("web-{s:05}"),
                namespace: "shop".into(),
                labels: vec![
                    ("kubernetes.io/service-name".into(), "web".into()),
                    (
                        "endpointslice.kubernetes.io/managed-by".into(),
                        "endpointslice-controller.k8s.io".into(),
                    ),
                ],
                annotations: vec![],
                address_type: "IPv4".into(),
                endpoints: (0..10)
                    .map(|e| t::Endpoint {
                        addresses: vec![format!("10.{s}.{e}.1")],
                        conditions: t::EndpointConditions {
                            ready: Some(true),
                            serving: Some(true),
                            terminating: Some(false),
                        },
                        hostname: None,
                        node_name: Some(format!("node-{e}")),
                        zone: Some("zone-a".into()),
                        target_ref: Some(t::ObjectReference {
                            kind: Some("Pod".into()),
                            namespace: Some("shop".into()),
                            name: Some(format!("web-{s}-{e}")),
                            uid: Some(format!("00000000-0000-0000-0000-{s:06}{e:06}")),
                            api_version: None,
                            resource_version: None,
                            field_path: None,
                        }),
                        hints: None,
                        deprecated_topology: vec![],
                    })
                    .collect(),
                ports: vec![
                    t::EndpointPort {
                        name: Some("http".into()),
                        port: Some(8080),
                        protocol: Some("TCP".into()),
                        app_protocol: None,
                    },
                    t::EndpointPort {
                        name: Some("metrics".into()),
                        port: Some(9100),
                        protocol: Some("TCP".into()),
                        app_protocol: None,
                    },
                ],
            })
            .collect();
        let mcs = t::McsRef {
            name: "web".into(),
            namespace: "shop".into(),
            ports: vec![t::ExposurePort {
                name: "http".into(),
                port: 80,
            }],
        };
        let service_ports = vec![
            t::ServicePort {
                name: "http".into(),
                port: 80,
            },
            t::ServicePort {
                name: "metrics".into(),
                port: 9090,
            },
        ];
        (mcs, service_ports, slices)
    }};
}

/// The member Service and the hub's template of the pass below.
const PASS_SERVICE: &str = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080}]}}"#;
/// The MultiClusterService of the pass below: every member a provider and a consumer.
const PASS_MCS: &str = r#"{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService","metadata":{"name":"web","namespace":"shop","uid":"u1","finalizers":["networking.karmada.io/mcs-policy-sync"]},"spec":{"types":["CrossCluster"]}}"#;

/// What one pass of the sync controller at rest reads, as Kubernetes objects: 20 members, each
/// a provider and a consumer with 2 slices of 10 endpoints, each already holding the 38 copies
/// of the others' slices (as the controller writes them) and the Service: `decide` finds
/// nothing to write. The endpoints of every member's slices are the same, unless `distinct`
/// (then each member's are its own, and so are the bodies of their slices and copies).
fn pass_slices(distinct: bool) -> Vec<(String, Vec<EndpointSlice>)> {
    let names: Vec<String> = (1..=20).map(|m| format!("member{m:02}")).collect();
    // Every member's slices hold the same addresses, unless `distinct`: then each its own.
    let address = |member: &str, s: usize, e: usize| match distinct {
        false => format!("10.{s}.{e}.1"),
        true => format!("10.{}.{s}.{e}", &member[6..]),
    };
    let slice = |name: String, labels: Value, annotations: Value, s: usize, m: &str| {
        let endpoints: Vec<Value> = (0..10)
            .map(|e| {
                serde_json::json!({
                    "addresses": [address(m, s, e)],
                    "conditions": {"ready": true, "serving": true, "terminating": false},
                    "nodeName": format!("node-{e}"), "zone": "zone-a"
                })
            })
            .collect();
        serde_json::from_value::<EndpointSlice>(serde_json::json!({
            "metadata": {"name": name, "namespace": "shop", "labels": labels,
                         "annotations": annotations},
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
        }))
        .expect("an EndpointSlice")
    };
    let own = |member: &str, s: usize| {
        let labels = serde_json::json!({"kubernetes.io/service-name": "web"});
        slice(format!("web-{member}-{s}"), labels, Value::Null, s, member)
    };
    let held = |member: &str| {
        let mut slices = Vec::new();
        for other in names.iter().filter(|o| o.as_str() != member) {
            for s in 0..2 {
                let labels = serde_json::json!({
                    "endpointslice.kubernetes.io/managed-by":
                        "endpointslice-dispatch-controller.karmada.io",
                    "kubernetes.io/service-name": "web"
                });
                let annotations =
                    serde_json::json!({"endpointslice.karmada.io/provision-cluster": other});
                slices.push(slice(
                    format!("{other}-web-{other}-{s}"),
                    labels,
                    annotations,
                    s,
                    other,
                ));
            }
        }
        slices.extend((0..2).map(|s| own(member, s)));
        slices
    };
    names.iter().map(|m| (m.clone(), held(m))).collect()
}

/// The pass of [`pass_slices`] as `decide` takes it, for either the host's WIT types or the
/// guest's, from what the host made of the slices (`$slices`: a `PassSlices`, and `$states`:
/// each member and its `member-slices`).
macro_rules! pass_input {
    ($t:path, $slices:expr, $states:expr) => {{
        use $t as t;
        let slices: &PassSlices = $slices;
        let states: &[(String, types::MemberSlices)] = $states;
        let body = |b: &types::SliceBody| t::SliceBody {
            namespace: b.namespace.clone(),
            labels: b.labels,
            annotations: b.annotations,
            ports: b.ports,
            content: b.content.clone(),
        };
        let ports = |list: &Vec<types::EndpointPort>| -> Vec<t::EndpointPort> {
            list.iter()
                .map(|p| t::EndpointPort {
                    name: p.name.clone(),
                    port: p.port,
                    protocol: p.protocol.clone(),
                    app_protocol: p.app_protocol.clone(),
                })
                .collect()
        };
        let member = |s: &types::MemberSlices| t::MemberSlices {
            names: s.names.clone(),
            name_lengths: s.name_lengths.clone(),
            bodies: s.bodies.clone(),
        };
        let pass = t::PassRead {
            mcs: PASS_MCS.to_string(),
            members: states
                .iter()
                .map(|(m, slices)| t::MemberRead {
                    cluster: m.clone(),
                    state: t::MemberState::Ready(t::MemberObjects {
                        slices: Ok(member(slices)),
                        service: Ok(Some(PASS_SERVICE.to_string())),
                    }),
                    unreadable_ms: 0,
                    last_ingress: None,
                })
                .collect(),
            template: Ok(Some(PASS_SERVICE.to_string())),
            slice_bodies: slices.bodies().iter().map(body).collect(),
            slice_maps: slices.maps().to_vec(),
            slice_ports: slices.ports().iter().map(ports).collect(),
            unsynced: Vec::new(),
        };
        (
            pass,
            t::SyncSettings {
                stale_timeout_ms: None,
            },
        )
    }};
}

/// A copy the native guest decided, as the host's record (to be made as the host makes it).
fn host_write(w: guest::SliceWrite) -> types::SliceWrite {
    types::SliceWrite {
        cluster: w.cluster,
        source_cluster: w.source_cluster,
        copy: types::SliceCopy {
            source: w.copy.source,
            name: w.copy.name,
            labels: w.copy.labels,
            annotations: w.copy.annotations,
            ports: w.copy.ports,
        },
    }
}

struct Stats {
    median: Duration,
    p99: Duration,
}

fn measure(iterations: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..iterations / 10 {
        f();
    }
    let mut samples: Vec<Duration> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    samples.sort();
    Stats {
        median: samples[samples.len() / 2],
        p99: samples[samples.len() * 99 / 100],
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The groups of rows to run: the one the bench's first free argument names, or all of them.
struct Rows(Option<String>);

impl Rows {
    fn from_args() -> Self {
        Rows(std::env::args().skip(1).find(|a| !a.starts_with("--")))
    }

    fn runs(&self, name: &str) -> bool {
        self.0.as_deref().is_none_or(|only| only == name)
    }
}

fn row(name: &str, wasm: &Stats, native: &Stats) {
    println!(
        "| {name:<38} | {:>9.1} | {:>9.1} | {:>9.1} | {:>9.1} | {:>5.2}x |",
        micros(wasm.median),
        micros(wasm.p99),
        micros(native.median),
        micros(native.p99),
        wasm.median.as_secs_f64() / native.median.as_secs_f64()
    );
}

/// `iterations` of `decide` in wasm and natively over the same pass, each side making the
/// copies its answer asks for with the host's assembly.
fn measure_decide(
    iterations: usize,
    engine: &PolicyEngine,
    slices: &PassSlices,
    (h_pass, h_settings): (&types::PassRead, types::SyncSettings),
    (g_pass, g_settings): (&guest::PassRead, &guest::SyncSettings),
) -> (Stats, Stats) {
    let wasm = measure(iterations, || {
        let decision = engine.decide(h_pass, h_settings, BUDGET).unwrap().unwrap();
        for w in &decision.copies {
            black_box(slices.copy(w).unwrap());
        }
    });
    let native = measure(iterations, || {
        let decision = guest::sync::decide(black_box(g_pass), g_settings).unwrap();
        for w in decision.copies {
            black_box(slices.copy(&host_write(w)).unwrap());
        }
    });
    (wasm, native)
}

/// The pass's slice tables and each member's `member-slices`, the member holding `held` of
/// what `read` lists for it.
fn member_slices(
    read: &[(String, Vec<EndpointSlice>)],
    held: impl Fn(&[EndpointSlice]) -> Vec<EndpointSlice>,
) -> (
    PassSlices<EndpointSlice>,
    Vec<(String, types::MemberSlices)>,
) {
    let mut slices = PassSlices::new();
    let states = read
        .iter()
        .map(|(m, list)| (m.clone(), slices.read(m, held(list))))
        .collect();
    (slices, states)
}

/// The rows of `decide` over the pass `read`: the pass, and the same pass with an MCS that does
/// not decode (the component answers at once: what is left is the cost of crossing into it).
/// Both sides make the copies the answer asks for (none at rest) with the host's assembly.
fn decide_rows(engine: &PolicyEngine, read: &[(String, Vec<EndpointSlice>)], variant: &str) {
    let (slices, states) = member_slices(read, |list| list.to_vec());
    let (h_pass, h_settings) = pass_input!(mcs_policy::engine::types, &slices, &states);
    let (g_pass, g_settings) = pass_input!(guest, &slices, &states);
    let decision = engine.decide(&h_pass, h_settings, BUDGET).unwrap().unwrap();
    let native = guest::sync::decide(&g_pass, &g_settings).unwrap();
    assert!(
        decision.copies.is_empty() && decision.deletions.is_empty() && decision.services.is_empty()
    );
    assert!(native.copies.is_empty() && native.deletions.is_empty() && native.services.is_empty());
    let (wasm, native) = measure_decide(
        300,
        engine,
        &slices,
        (&h_pass, h_settings),
        (&g_pass, &g_settings),
    );
    row(
        &format!("decide, 20 members x 40 slices at rest{variant} (µs)"),
        &wasm,
        &native,
    );
    let (mut h_broken, mut g_broken) = (h_pass.clone(), g_pass.clone());
    h_broken.mcs = "{".into();
    g_broken.mcs = "{".into();
    let wasm = measure(300, || {
        let answer = engine.decide(&h_broken, h_settings, BUDGET).unwrap();
        black_box(answer.unwrap_err());
    });
    let native = measure(300, || {
        black_box(guest::sync::decide(black_box(&g_broken), &g_settings).unwrap_err());
    });
    row(
        &format!("  the same, crossing only{variant} (µs)"),
        &wasm,
        &native,
    );
}

/// `decide` over the pass `read` before any copy was made (every member holds its own slices
/// only): 760 copies to make, which both sides make from their source slices as the host does.
fn decide_cold_row(engine: &PolicyEngine, read: &[(String, Vec<EndpointSlice>)]) {
    // Each member's own two slices, the last of its list: no copy yet.
    let (slices, states) = member_slices(read, |list| list[list.len() - 2..].to_vec());
    let (h_pass, h_settings) = pass_input!(mcs_policy::engine::types, &slices, &states);
    let (g_pass, g_settings) = pass_input!(guest, &slices, &states);
    let decision = engine.decide(&h_pass, h_settings, BUDGET).unwrap().unwrap();
    assert_eq!(decision.copies.len(), 760);
    let (wasm, native) = measure_decide(
        100,
        engine,
        &slices,
        (&h_pass, h_settings),
        (&g_pass, &g_settings),
    );
    row(
        "decide, 20 members x 2 slices, 760 copies to make (µs)",
        &wasm,
        &native,
    );
}

fn main() {
    let rows = Rows::from_args();
    let started = Instant::now();
    let engine = PolicyEngine::embedded(EngineOptions::default()).expect("embedded component");
    println!(
        "component load (compile + pre-instantiate): {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let object = object();
    println!("validate request object: {} bytes", object.len());

    let host_req = types::AdmissionRequest {
        uid: "4b1f7c52-8a8e-4f57-9d7c-6e3c2d1b0a99".into(),
        operation: types::Operation::Create,
        object: object.clone(),
        old_object: None,
    };
    let guest_req = guest::AdmissionRequest {
        uid: host_req.uid.clone(),
        operation: guest::Operation::Create,
        object: object.clone(),
        old_object: None,
    };
    let host_settings = types::Settings::default();
    let host_context = types::Context::default();
    let guest_settings = guest::Settings {
        reject_empty_types: false,
        reject_repeated_types: false,
        reject_duplicate_cluster_names: false,
        reject_unknown_port_names: false,
        warn_unregistered_clusters: false,
    };
    let guest_context = guest::Context {
        registered_clusters: None,
        service_ports: None,
    };
    assert_eq!(
        engine
            .validate(&host_req, &host_settings, &host_context, BUDGET)
            .unwrap(),
        Ok(vec![])
    );
    assert_eq!(
        guest::validate::validate_request(&guest_req, &guest_settings, &guest_context),
        Ok(vec![])
    );

    println!();
    println!(
        "| call (fresh instance per wasm call)     | wasm p50  | wasm p99  | native p50| native p99| ratio  |"
    );
    println!(
        "|----------------------------------------|-----------|-----------|-----------|-----------|--------|"
    );
    let noop_req = types::AdmissionRequest {
        operation: types::Operation::Delete,
        ..host_req.clone()
    };
    let guest_noop = guest::AdmissionRequest {
        operation: guest::Operation::Delete,
        ..guest_req.clone()
    };
    if rows.runs("floor") {
        let wasm = measure(3000, || {
            let _ = black_box(
                engine
                    .validate(&noop_req, &host_settings, &host_context, BUDGET)
                    .unwrap(),
            );
        });
        let native = measure(3000, || {
            let _ = black_box(guest::validate::validate_request(
                black_box(&guest_noop),
                &guest_settings,
                &guest_context,
            ));
        });
        row("floor: DELETE, no policy work (µs)", &wasm, &native);
    }

    if rows.runs("validate") {
        let wasm = measure(3000, || {
            let _ = black_box(
                engine
                    .validate(&host_req, &host_settings, &host_context, BUDGET)
                    .unwrap(),
            );
        });
        let native = measure(3000, || {
            let _ = black_box(guest::validate::validate_request(
                black_box(&guest_req),
                &guest_settings,
                &guest_context,
            ));
        });
        row("validate (µs)", &wasm, &native);
    }

    if rows.runs("mutate") {
        let wasm = measure(3000, || {
            black_box(engine.mutate(&host_req, &host_settings, BUDGET).unwrap()).ok();
        });
        let native = measure(3000, || {
            black_box(guest::defaults::default_request(black_box(&guest_req))).ok();
        });
        row("mutate (µs)", &wasm, &native);
    }

    if rows.runs("filter") {
        let (h_mcs, h_ports, h_slices) = filter_input!(mcs_policy::engine::types);
        let (g_mcs, g_ports, g_slices) = filter_input!(guest);
        let copies = engine
            .filter(
                &h_mcs,
                Some(&h_ports),
                "member1",
                "member2",
                &h_slices,
                BUDGET,
            )
            .unwrap();
        assert_eq!(copies.len(), 50);
        let wasm = measure(500, || {
            black_box(
                engine
                    .filter(
                        &h_mcs,
                        Some(&h_ports),
                        "member1",
                        "member2",
                        &h_slices,
                        BUDGET,
                    )
                    .unwrap(),
            );
        });
        let native = measure(500, || {
            black_box(guest::filter::filter(
                &g_mcs,
                Some(&g_ports),
                "member1",
                "member2",
                black_box(g_slices.clone()),
            ));
        });
        row("filter, 50 slices x 10 endpoints (µs)", &wasm, &native);
    }

    if rows.runs("decide") {
        let read = pass_slices(false);
        decide_rows(&engine, &read, "");
        decide_rows(&engine, &pass_slices(true), ", own endpoints");
        decide_cold_row(&engine, &read);
        // The same pass as the component calls the controller made before `decide`: `plan`, then
        // `filter` for every provider and consumer (20 x 19, the provider's two slices each, which the engine
        // summarises and assembles the copies of), then `prune` for
        // every member (its 40 slices).
        let own = |slices: &[types::EndpointSlice]| slices[slices.len() - 2..].to_vec();
        let held: Vec<(String, Vec<types::EndpointSlice>)> = read
            .iter()
            .map(|(m, list)| (m.clone(), list.iter().map(convert::slice_to_wit).collect()))
            .collect();
        let names: Vec<String> = held.iter().map(|(n, _)| n.clone()).collect();
        let wasm = measure(20, || {
            let plan = engine.plan(PASS_MCS, &names, BUDGET).unwrap().unwrap();
            for (consumer, existing) in &held {
                let mut desired = Vec::new();
                for (provider, slices) in held.iter().filter(|(p, _)| p != consumer) {
                    let summaries = own(slices);
                    let copies = engine
                        .filter(&plan.mcs, None, provider, consumer, &summaries, BUDGET)
                        .unwrap();
                    desired.extend(copies.into_iter().map(|c| c.name));
                }
                let stale = engine
                    .prune(&plan.mcs, existing, &desired, &[], BUDGET)
                    .unwrap();
                assert!(stale.is_empty());
            }
        });
        println!(
            "| {:<38} | {:>9.1} | {:>9.1} |           |           |        |",
            "same pass as plan + 380 filter + 20 prune calls (µs)",
            micros(wasm.median),
            micros(wasm.p99)
        );
    }
    println!();
    println!(
        "native filter includes cloning its input; the wasm path clones the endpoints into the copies in the host."
    );
    if rows.runs("reset") {
        println!();
        println!(
            "instance reset strategy (pooling allocator, linear memory kept resident between instances):"
        );
        println!("| keep resident | floor p50 | validate p50 | validate p99 |");
        println!("|---------------|-----------|--------------|--------------|");
        for kib in [0usize, 64, 256, 512, 1024, 2048] {
            let options = EngineOptions {
                keep_resident_bytes: kib << 10,
                ..EngineOptions::default()
            };
            let engine = PolicyEngine::embedded(options).expect("embedded component");
            let floor = measure(3000, || {
                let _ = black_box(
                    engine
                        .validate(&noop_req, &host_settings, &host_context, BUDGET)
                        .unwrap(),
                );
            });
            let full = measure(3000, || {
                let _ = black_box(
                    engine
                        .validate(&host_req, &host_settings, &host_context, BUDGET)
                        .unwrap(),
                );
            });
            println!(
                "| {:>9} KiB | {:>9.1} | {:>12.1} | {:>12.1} |",
                kib,
                micros(floor.median),
                micros(full.median),
                micros(full.p99)
            );
        }
    }
}
