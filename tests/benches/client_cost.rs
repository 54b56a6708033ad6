//! What one server-side apply costs the client, side by side in one run (BENCHMARKS.md, "Client
//! cost per write"): the controller's own path (kube's client through
//! `mcs_policy::controller::pass::write::apply::apply_copy`) against a bare hyper client sending the same
//! request and decoding the answer the same way, each on a current-thread runtime and on a
//! pool of two threads. Every round updates the same `N` EndpointSlices (created by a first,
//! unmeasured round) against one kube-sim, 8 requests in flight, and prints the client's CPU
//! and the kube-sim's CPU per request.
//!
//! It answers two questions the sync benchmark cannot: how much of the controller's CPU per
//! write is the HTTP request itself (the least any client pays here), and what the runtime's
//! threads cost (`--runtime-threads`).
//!
//! `cargo bench -p tests --bench client_cost` after `cargo build --release --workspace --bins`;
//! `CLIENT_COST_REQUESTS` (default 20000) and `CLIENT_COST_ROUNDS` (default 3) size it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use mcs_policy::clusters::{ClientOptions, build_client};
use mcs_policy::controller::cache::watched::WatchedSlice;
use mcs_policy::controller::pass::write::apply::apply_copy;
use mcs_policy::controller::tokio_runtime;
use serde_json::json;
use tests::sync::ensure_namespace;
use tests::{cpu_seconds, kube_sim};

const IN_FLIGHT: usize = 8;
const NAMESPACE: &str = "bench";

/// The two clients compared.
#[derive(Clone, Copy, Debug)]
enum Path {
    /// kube's client, as the controller applies a copy.
    Kube,
    /// hyper-util's pooled HTTP/1 client, the same request and the same decoding.
    Bare,
}

/// Both clients of one kube-sim.
#[derive(Clone)]
struct Clients {
    url: String,
    kube: kube::Client,
    bare: HyperClient<HttpConnector, Full<Bytes>>,
}

fn main() {
    let requests = env_number("CLIENT_COST_REQUESTS", 20_000);
    let rounds = env_number("CLIENT_COST_ROUNDS", 3);
    let (sim, url) = kube_sim("client-cost");
    let sim_pid = sim.0.id();
    println!(
        "client cost: {requests} server-side applies of an EndpointSlice per row, {IN_FLIGHT} in flight, one kube-sim"
    );
    println!(
        "| round | runtime | client | wall | client CPU per request | kube-sim CPU per request |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for round in 0..=rounds {
        for threads in [1, 2] {
            let runtime = tokio_runtime(threads).expect("a tokio runtime");
            let clients = runtime.block_on(async { connect(&url).await });
            for path in [Path::Kube, Path::Bare] {
                // Every row changes every slice, so each apply is a real update.
                let generation = round * 4 + usize::from(threads) * 2 + path as usize;
                let (client0, sim0, start) = (
                    cpu_seconds(std::process::id()),
                    cpu_seconds(sim_pid),
                    Instant::now(),
                );
                runtime.block_on(apply_all(&clients, path, requests, generation));
                let wall = start.elapsed();
                let client = cpu_seconds(std::process::id()) - client0;
                let server = cpu_seconds(sim_pid) - sim0;
                if round == 0 {
                    continue; // the first round creates the slices and warms the connections
                }
                println!(
                    "| {round} | {} | {path:?} | {wall:.2?} | {:.0} us | {:.0} us |",
                    if threads == 1 {
                        "one thread"
                    } else {
                        "pool of 2"
                    },
                    client * 1e6 / requests as f64,
                    server * 1e6 / requests as f64
                );
            }
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

/// Both clients of the kube-sim at `url`, its namespace `bench` in place.
async fn connect(url: &str) -> Clients {
    let config = kube::Config::new(url.parse().expect("kube-sim's URL"));
    let kube = build_client(config, &ClientOptions::default()).expect("kube's client");
    ensure_namespace(&reqwest::Client::new(), url, NAMESPACE).await;
    Clients {
        url: url.to_string(),
        kube,
        bare: HyperClient::builder(TokioExecutor::new()).build_http(),
    }
}

/// Applies slices `s-0`..`s-{requests}` (their address set by `generation`) through `path`,
/// `IN_FLIGHT` at a time.
async fn apply_all(clients: &Clients, path: Path, requests: usize, generation: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (clients, next) = (clients.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        break;
                    }
                    apply_one(&clients, path, slice(i, generation)).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("an apply task");
    }
}

async fn apply_one(clients: &Clients, path: Path, slice: EndpointSlice) {
    match path {
        Path::Kube => {
            apply_copy(&clients.kube, "bench", "client-cost", slice)
                .await
                .expect("apply through kube's client");
        }
        Path::Bare => {
            let name = slice.metadata.name.clone().unwrap_or_default();
            let uri = format!(
                "{}/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices/{name}?fieldManager=client-cost&force=true",
                clients.url
            );
            let body = serde_json::to_vec(&slice).expect("a slice encodes");
            let request = hyper::Request::patch(uri)
                .header("content-type", "application/apply-patch+yaml")
                .header("accept", "application/json")
                .body(Full::new(Bytes::from(body)))
                .expect("a request");
            let answer = clients
                .bare
                .request(request)
                .await
                .expect("kube-sim answers");
            assert!(
                answer.status().is_success(),
                "apply answered {}",
                answer.status()
            );
            let bytes = answer
                .into_body()
                .collect()
                .await
                .expect("the answer's body")
                .to_bytes();
            let _: WatchedSlice = serde_json::from_slice(&bytes).expect("the answer is a slice");
        }
    }
}

/// Slice `s-{i}`, one endpoint whose address depends on `generation`.
fn slice(i: usize, generation: usize) -> EndpointSlice {
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": format!("s-{i}"),
            "namespace": NAMESPACE,
            "labels": {
                "kubernetes.io/service-name": format!("svc-{i}"),
                "endpointslice.kubernetes.io/managed-by": "mcs-policy",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{
            "addresses": [format!("10.{}.{}.{}", generation % 250, i / 250 % 250, i % 250)],
            "conditions": {"ready": true},
        }],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }))
    .expect("a valid EndpointSlice")
}
