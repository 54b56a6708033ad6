//! `SYNC_BENCH_PHASES=clusterset`: the propagation of an endpoint change of a Service exported
//! with the upstream Multi-Cluster Services API (a ServiceExport in one member) to the imported
//! EndpointSlices of every member, beside the same change of a MultiClusterService's provider
//! reaching its copies, in one fleet and one controller: writes alternate between the two.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use tests::sync::{
    CRDS, ObjectRef, crd, native_slice_of, post, put, service_of, slices_path, watch,
};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::{
    Copies, Fleet, Mcs, Settings, WRITE_DEADLINE, address, copy_name, metric, next_before,
    one_write, preload, preload_requests, print_latencies,
};

/// The upstream API's CRDs, installed in every member.
pub(crate) const UPSTREAM_CRDS: [&str; 3] = [
    "multicluster.x-k8s.io_serviceexports.yaml",
    "multicluster.x-k8s.io_serviceimports.yaml",
    "about.k8s.io_clusterproperties.yaml",
];

/// The run: hub + `SYNC_BENCH_LATENCY_MEMBERS`' first value of members, the MCS `web` and the
/// export `api`, both from the first member to every other (the export to the first member
/// too), `SYNC_BENCH_WRITES` writes in all.
pub async fn clusterset(settings: &Settings) {
    let ns = "cs";
    let mut fleet = Fleet::start("clusterset", settings.latency_members[0]).await;
    let members = fleet.members.len();
    println!(
        "\n== clusterset beside an MCS: hub + {members} members, MCS web and ServiceExport api from {}, {} alternating writes",
        fleet.members[0].0, settings.writes
    );
    for (_, url) in &fleet.members {
        for file in UPSTREAM_CRDS {
            post(&fleet.http, url, CRDS, &crd(file)).await;
        }
    }
    fleet.ensure_namespace(ns).await;
    let web = Mcs {
        name: "web".into(),
        provider: 0,
    };
    preload(
        &fleet.http,
        preload_requests(&fleet, ns, std::slice::from_ref(&web), &["a"]),
    )
    .await;
    let api = ObjectRef::new(ns, "api");
    let exporter = fleet.member_url(0).to_string();
    let ports = json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]);
    post(
        &fleet.http,
        &exporter,
        &format!("/api/v1/namespaces/{ns}/services"),
        &service_of(&api, ports),
    )
    .await;
    let slices = slices_path(ns);
    post(
        &fleet.http,
        &exporter,
        &slices,
        &native_slice_of(&api, "api-a", &address(1)),
    )
    .await;
    let export = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": "api", "namespace": ns}});
    let exports = format!("/apis/multicluster.x-k8s.io/v1beta1/namespaces/{ns}/serviceexports");
    post(&fleet.http, &exporter, &exports, &export).await;

    let mut copy_events = fleet.watch_copies(ns).await;
    let (sender, mut imported) = unbounded_channel();
    let path = format!(
        "{slices}?watch=true&labelSelector=multicluster.kubernetes.io%2Fservice-name%3Dapi"
    );
    for (index, (_, url)) in fleet.members.iter().enumerate() {
        watch(&fleet.http, url, &path, index, sender.clone()).await;
    }
    fleet.start_controller(settings.workers[0], settings);

    // Everything in place: every consumer's copy of web, every member's imported slice of api.
    let started = Instant::now();
    let deadline = started + settings.timeout;
    let mut copies = Copies::default();
    let copy = copy_name(&fleet, 0, "web-a");
    while !(1..members).all(|m| copies.has(&(m, copy.clone()))) {
        let event = next_before(&mut copy_events, deadline)
            .await
            .expect("the MCS copies in place");
        copies.record(&event);
    }
    let mut imports: HashSet<usize> = HashSet::new();
    while imports.len() < members {
        let event = next_before(&mut imported, deadline)
            .await
            .expect("the imported slices in place");
        if event.kind == "ADDED" || event.kind == "MODIFIED" {
            imports.insert(event.tag);
        }
    }
    println!(
        "copies and imports in place after {:.2?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = fleet.metrics().await;

    let (mut mcs_first, mut mcs_all) = (Vec::new(), Vec::new());
    let (mut cs_first, mut cs_all) = (Vec::new(), Vec::new());
    let mut missed = 0;
    for k in 0..settings.writes {
        let outcome = if k % 2 == 0 {
            one_write(&fleet, &mut copy_events, &mut copies, ns, &web, k)
                .await
                .map(|t| (t, &mut mcs_first, &mut mcs_all))
        } else {
            export_write(&fleet, &mut imported, ns, k)
                .await
                .map(|t| (t, &mut cs_first, &mut cs_all))
        };
        match outcome {
            Some(((first, all), firsts, alls)) => {
                firsts.push(first);
                alls.push(all);
            }
            None => missed += 1,
        }
    }
    let after = fleet.metrics().await;
    println!("(client side, from just before the PUT to the watch event in the member)");
    print_latencies("MCS copy, first consumer", &mut mcs_first);
    print_latencies(
        &format!("MCS copy, all {} consumers", members - 1),
        &mut mcs_all,
    );
    print_latencies("imported slice, first member", &mut cs_first);
    print_latencies(
        &format!("imported slice, all {members} members"),
        &mut cs_all,
    );
    if missed > 0 {
        println!("writes not seen everywhere within {WRITE_DEADLINE:?}: {missed}");
    }
    let passes =
        |text: &str| metric(text, "mcs_policy_sync_clusterset_passes_total").unwrap_or(0.0);
    println!(
        "clusterset passes during the writes: {} ({} export writes)",
        passes(&after) - passes(&before),
        settings.writes / 2
    );
}

/// PUTs the exported Service's slice with a new address; the time until the first and the
/// last member's imported slice shows it, or `None` after [`WRITE_DEADLINE`].
async fn export_write(
    fleet: &Fleet,
    imported: &mut UnboundedReceiver<tests::sync::WatchEvent>,
    ns: &str,
    k: usize,
) -> Option<(Duration, Duration)> {
    let new_address = address(2_000_000 + k);
    let body = native_slice_of(&ObjectRef::new(ns, "api"), "api-a", &new_address);
    let path = format!("{}/api-a", slices_path(ns));
    let mut waiting: HashSet<usize> = (0..fleet.members.len()).collect();
    let start = Instant::now();
    put(&fleet.http, fleet.member_url(0), &path, &body).await;
    let deadline = start + WRITE_DEADLINE;
    let mut first = None;
    while !waiting.is_empty() {
        let event = next_before(imported, deadline).await?;
        if event.first_address.as_deref() == Some(new_address.as_str())
            && waiting.remove(&event.tag)
        {
            first.get_or_insert(event.at - start);
            if waiting.is_empty() {
                return Some((first?, event.at - start));
            }
        }
    }
    None
}
