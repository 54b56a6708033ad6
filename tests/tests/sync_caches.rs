//! The controller reads from watch caches (host/src/controller/cache): what a change costs in
//! requests, what a resync costs, what happens when a member's watch breaks, drift repaired
//! by the watches alone, and a pass working from a stale cache that never deletes an object
//! re-created since it was cached.

use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use mcs_policy::clusters::{Cluster, Registry};
use mcs_policy::controller::Context;
use mcs_policy::controller::cache::triggers::Triggers;
use mcs_policy::controller::cache::{self, Cached, Caches};
use mcs_policy::controller::pass as reconcile;
use mcs_policy::controller::pass::decide::Decider;
use mcs_policy::controller::probes::metrics;
use mcs_policy::engine::{EngineOptions, PolicyEngine};
use serde_json::{Value, json};
use tests::sync::*;

/// No resync during a test: whatever happens is the watches' doing.
const NO_RESYNC: &str = "1h";

/// An MCS from member1 to member2 and member3, with the hub Service, synced.
async fn synced_to_two_consumers(test: &str, resync: &str, extra: &[&str]) -> World {
    let w = World::start_full(test, resync, extra, true).await;
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports)).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    let spec = json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "member2"}, {"name": "member3"}],
    });
    post(&w.http, &w.hub, MCS, &mcs(spec)).await;
    let member3 = w.member3.clone().unwrap();
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;
    w.await_slices(&member3, "member3", &["member1-web-abc"])
        .await;
    w.await_dispatched("True", "successfully").await;
    w.await_service_applied("True").await;
    w
}

fn all_clusters(w: &World) -> Vec<String> {
    w.contexts()
        .iter()
        .map(|(_, url)| url.to_string())
        .collect()
}

/// Waits until the copy `member1-web-abc` at `url` carries `address`.
async fn await_copy_address(w: &World, url: &str, address: &str) {
    w.eventually(&format!("the copy at {url} to carry {address}"), || async {
        let copy = get(&w.http, url, &format!("{SLICES}/member1-web-abc")).await?;
        (copy["endpoints"][0]["addresses"][0] == address).then_some(())
    })
    .await;
}

/// The controller's `mcs_policy_sync_applied_total`.
async fn applied(w: &World, listen: &str) -> Option<f64> {
    let url = format!("http://{listen}/metrics");
    let text = w.http.get(&url).send().await.ok()?.text().await.ok()?;
    metric(&text, "mcs_policy_sync_applied_total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_write_costs_one_apply_per_consumer_and_no_read() {
    let listen = free_addr();
    let flags = ["--metrics-listen", listen.as_str()];
    let w = synced_to_two_consumers("requests-per-write", NO_RESYNC, &flags).await;
    let member3 = w.member3.clone().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The upstream Multi-Cluster Services API's caches list once at start (these members do
    // not serve it: its CRDs are watched instead); that is the start, not the write's cost.
    for url in [&w.member1, &w.member2, &member3] {
        w.eventually("the upstream API's first lists", || async {
            let log = w.requests(url).await;
            ["serviceexports", "serviceimports", "clusterproperties"]
                .iter()
                .all(|r| log.contains(&format!("list {r}")))
                .then_some(())
        })
        .await;
    }
    let before = applied(&w, &listen).await.unwrap();
    for url in all_clusters(&w) {
        w.clear_requests(&url).await;
    }

    edit(&w.http, &w.member1, &format!("{SLICES}/web-abc"), |s| {
        s["endpoints"][0]["addresses"] = json!(["10.1.0.8"]);
    })
    .await;
    // Waiting on the controller's metrics, not on the members: the log shows only the
    // controller's requests (and the test's edit in member1).
    w.eventually("two more copies applied", || async {
        (applied(&w, &listen).await? >= before + 2.0).then_some(())
    })
    .await;
    // Anything a pass would still send (a status write, an Event, a second apply).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let logs = [
        w.requests(&w.hub).await,
        w.requests(&w.member1).await,
        w.requests(&w.member2).await,
        w.requests(&member3).await,
    ];
    await_copy_address(&w, &w.member2, "10.1.0.8").await;
    await_copy_address(&w, &member3, "10.1.0.8").await;

    let [hub, member1, member2, member3] = logs;
    assert_eq!(hub, Vec::<String>::new(), "the hub");
    assert_eq!(
        member1,
        ["get endpointslices", "update endpointslices"],
        "the provider: only the test's own read and write"
    );
    for (name, log) in [("member2", member2), ("member3", member3)] {
        assert_eq!(
            log,
            ["patch endpointslices"],
            "{name}: one server-side apply, no read"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resync_reads_only_the_caches() {
    let listen = free_addr();
    let flags = ["--metrics-listen", listen.as_str()];
    let w = synced_to_two_consumers("resync-from-memory", "200ms", &flags).await;
    let counter = |name: &'static str| {
        let url = format!("http://{listen}/metrics");
        let http = w.http.clone();
        async move {
            let text = http.get(&url).send().await.ok()?.text().await.ok()?;
            metric(&text, name)
        }
    };
    let passes = || counter("mcs_policy_sync_passes_total");
    let quiet = || counter("mcs_policy_sync_quiet_reconciles_total");
    tokio::time::sleep(Duration::from_millis(500)).await;
    for url in all_clusters(&w) {
        w.clear_requests(&url).await;
    }
    let (before, quiet_before) = (passes().await.unwrap(), quiet().await.unwrap());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (after, quiet_after) = (passes().await.unwrap(), quiet().await.unwrap());

    assert!(after - before >= 4.0, "resyncs ran: {before} -> {after}");
    for url in all_clusters(&w) {
        assert_eq!(
            w.requests(&url).await,
            Vec::<String>::new(),
            "no request to {url} while nothing changes"
        );
    }
    // Nothing changed: the MCS's passes were quiet, skipped without asking the component.
    assert!(
        quiet_after - quiet_before >= 4.0,
        "quiet passes: {quiet_before} -> {quiet_after}"
    );

    // After quiet passes, a change is still carried: a copy deleted by hand and the provider's
    // slice changed are both caught up.
    let member3 = w.member3.clone().unwrap();
    delete(&w.http, &member3, &format!("{SLICES}/member1-web-abc")).await;
    edit(&w.http, &w.member1, &format!("{SLICES}/web-abc"), |s| {
        s["endpoints"][0]["addresses"] = json!(["10.1.0.8"]);
    })
    .await;
    await_copy_address(&w, &w.member2, "10.1.0.8").await;
    await_copy_address(&w, &member3, "10.1.0.8").await;
}

/// The upstream Multi-Cluster Services API's CRDs, and the resources they define.
const UPSTREAM: [(&str, &str); 3] = [
    (
        "multicluster.x-k8s.io_serviceexports.yaml",
        "serviceexports.multicluster.x-k8s.io",
    ),
    (
        "multicluster.x-k8s.io_serviceimports.yaml",
        "serviceimports.multicluster.x-k8s.io",
    ),
    (
        "about.k8s.io_clusterproperties.yaml",
        "clusterproperties.about.k8s.io",
    ),
];

/// The names of the CustomResourceDefinitions the cluster at `url` was asked to watch, sorted.
async fn crd_watches(w: &World, url: &str) -> Vec<String> {
    let log = get(&w.http, url, "/_sim/requests").await.unwrap();
    let mut names: Vec<String> = log["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resource"] == "customresourcedefinitions" && r["verb"] == "watch")
        .map(|r| r["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_without_the_upstream_crds_costs_no_request_at_rest_and_joins_once_they_are_installed()
 {
    let listen = free_addr();
    let flags = ["--metrics-listen", listen.as_str()];
    let w = synced_to_two_consumers("no-crds-at-rest", "200ms", &flags).await;
    let member3 = w.member3.clone().unwrap();
    let members = [w.member1.clone(), w.member2.clone(), member3];
    let mut watched: Vec<String> = UPSTREAM.iter().map(|(_, n)| n.to_string()).collect();
    watched.sort();
    // Each member answered 404 to each upstream resource's list once, and waits on one watch
    // of each CRD, by name.
    for url in &members {
        w.eventually("a watch of each upstream CRD", || async {
            (crd_watches(&w, url).await == watched).then_some(())
        })
        .await;
        let lists = w.requests(url).await;
        for resource in ["serviceexports", "serviceimports", "clusterproperties"] {
            let listed = lists
                .iter()
                .filter(|r| **r == format!("list {resource}"))
                .count();
            assert_eq!(listed, 1, "{url}: {resource} listed once: {lists:?}");
        }
    }
    let passes = || async {
        let url = format!("http://{listen}/metrics");
        let text = w.http.get(&url).send().await.ok()?.text().await.ok()?;
        metric(&text, "mcs_policy_sync_passes_total")
    };
    for url in all_clusters(&w) {
        w.clear_requests(&url).await;
    }
    let before = passes().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let after = passes().await.unwrap();
    assert!(after - before >= 4.0, "resyncs ran: {before} -> {after}");
    for url in all_clusters(&w) {
        assert_eq!(
            w.requests(&url).await,
            Vec::<String>::new(),
            "no request to {url} at rest: no resync read, no upstream list again"
        );
        assert_eq!(crd_watches(&w, &url).await, Vec::<String>::new());
    }

    // The CRDs installed in member1 and member2: their watches list at once, and an export of
    // member1 is imported in member2.
    for url in [&w.member1, &w.member2] {
        for (file, _) in UPSTREAM {
            post(&w.http, url, CRDS, &crd(file)).await;
        }
    }
    let ports = json!([{"name": "http", "port": 8080, "protocol": "TCP"}]);
    let api = ObjectRef::new("shop", "api");
    post(&w.http, &w.member1, SERVICES, &service_of(&api, ports)).await;
    let slice = native_slice_of(&api, "api-abc", "10.1.0.9");
    post(&w.http, &w.member1, SLICES, &slice).await;
    let exports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
    let export = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": "api", "namespace": "shop"}});
    post(&w.http, &w.member1, exports, &export).await;
    let import = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports/api";
    w.eventually("member1's export imported in member2", || async {
        get(&w.http, &w.member2, import).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_watch_breaks_is_unreadable_nothing_is_pruned_and_it_is_caught_up() {
    let w = World::start_with("broken-watch", NO_RESYNC).await;
    w.add_native_slice(&w.member1, "web-abc", "10.1.0.7").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_slices(&w.member2, "member2", &["member1-web-abc"])
        .await;

    // member1 answers, but its slices can no longer be listed or watched.
    let fault = json!({"status": 500, "count": 100000, "verbs": ["list", "watch"],
                       "resource": "endpointslices"});
    w.fault(&w.member1, fault).await;
    post(&w.http, &w.member1, "/_sim/drop-watches", &json!({})).await;
    delete(&w.http, &w.member1, &format!("{SLICES}/web-abc")).await;
    // A pass while member1's cache is broken (the hub Service triggers it): only once the
    // controller has seen the watch fail (with no grace, its store is then unreadable); a pass
    // that read the store just before would rightly find it readable.
    w.eventually("member1's slice watch seen failing", || async {
        w.log(0)
            .lines()
            .any(|line| {
                line.contains("watch still failing")
                    && line.contains("cluster=member1")
                    && line.contains("endpointslices")
            })
            .then_some(())
    })
    .await;
    let ports = json!([{"name": "http", "port": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports)).await;

    let condition = w.await_dispatched("False", "member1 is not readable").await;
    assert!(
        condition["message"]
            .as_str()
            .unwrap()
            .contains("endpointslices in cluster member1: Internal error occurred"),
        "the condition says which watch fails: {condition}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        w.slice_names(&w.member2).await,
        ["member1-web-abc"],
        "an unreadable provider's copy stays"
    );

    w.clear_faults(&w.member1).await;
    w.await_slices(&w.member2, "member2", &[]).await;
    w.await_dispatched("True", "successfully").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_service_edited_by_hand_is_restored_by_its_watch() {
    let w = World::start_with("service-by-hand", NO_RESYNC).await;
    let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]);
    post(&w.http, &w.hub, SERVICES, &service(ports.clone())).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    w.await_service_ports(&w.member2, "member2", &ports).await;

    let path = format!("{SERVICES}/web");
    edit(&w.http, &w.member2, &path, |s| {
        s["spec"]["ports"][0]["port"] = json!(8080);
    })
    .await;
    let edited = std::time::Instant::now();
    // The goal with no resync: restored within 1 s (the watch of member Services).
    let restored = w
        .eventually_within(
            Duration::from_secs(1),
            "web restored within 1 s",
            || async {
                let s = get(&w.http, &w.member2, &path).await?;
                (s["spec"]["ports"] == ports).then_some(s)
            },
        )
        .await;
    eprintln!("service restored {:?} after the edit", edited.elapsed());
    assert_eq!(
        restored["metadata"]["labels"]["networking.karmada.io/created-by"],
        "mcs-policy"
    );
}

/// A pass's context over `w`'s clusters, with caches filled by the test, not by watches.
async fn context_over(w: &World, caches: Caches) -> Context {
    let client = |url: &str| {
        let config = kube::Config::new(url.parse().unwrap());
        kube::Client::try_from(config).unwrap()
    };
    let registry = Registry {
        hub: Cluster::new("hub".into(), client(&w.hub)),
        members: vec![
            Cluster::new("member1".into(), client(&w.member1)),
            Cluster::new("member2".into(), client(&w.member2)),
        ],
        unsynced: Vec::new(),
    };
    let (triggers, _requests) = Triggers::new(Arc::default());
    Context {
        registry,
        decider: Decider {
            engine: PolicyEngine::embedded(EngineOptions::default()).unwrap(),
            budget: Duration::from_secs(5),
        },
        field_manager: "mcs-policy".into(),
        remembered: Default::default(),
        stale_timeout: None,
        metrics: Arc::new(metrics::Metrics::default()),
        health: Arc::default(),
        not_ready: "its API does not answer",
        caches,
        triggers,
    }
}

fn listed<K: cache::Cached>(store: &cache::Store<K>, objects: Vec<K>) {
    store.list_started();
    for object in objects {
        store.listed(object);
    }
    store.list_done();
}

fn typed<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_from_a_stale_cache_never_deletes_a_slice_recreated_since() {
    let w = World::clusters("stale-delete", false).await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;
    // member2 holds a copy of member1's slice web-abc, which member1 no longer has.
    let mut copy = slice("member1-web-abc", DISPATCH, "10.1.0.7");
    copy["metadata"]["annotations"] = json!({PROVISION: "member1"});
    post(&w.http, &w.member2, SLICES, &copy).await;
    let path = format!("{SLICES}/member1-web-abc");
    let cached = cache::kept::slice(typed(get(&w.http, &w.member2, &path).await.unwrap()));

    let caches = Caches::default();
    let mcs: DynamicObject = typed(get(&w.http, &w.hub, &format!("{MCS}/web")).await.unwrap());
    listed(&caches.hub.mcs, vec![mcs.clone()]);
    listed(&caches.hub.services, Vec::new());
    for (name, slices) in [("member1", Vec::new()), ("member2", vec![cached.clone()])] {
        let member = cache::Member::new();
        listed(&member.slices, slices);
        listed(&member.services, Vec::new());
        caches.set_member(name, member);
    }
    // Behind the cache's back, the copy is deleted and made again (another uid).
    delete(&w.http, &w.member2, &path).await;
    post(&w.http, &w.member2, SLICES, &copy).await;
    let recreated = get(&w.http, &w.member2, &path).await.unwrap();
    assert_ne!(recreated["metadata"]["uid"], json!(cached.uid()));

    let ctx = context_over(&w, caches).await;
    let ready = ["member1".to_string(), "member2".to_string()];
    let report = reconcile::reconcile(&ctx, &mcs, &ready).await.unwrap();

    let failure = report
        .failures
        .iter()
        .find(|f| f.cluster == "member2")
        .expect("the stale deletion fails");
    assert!(
        failure.message.contains("(409 Conflict)"),
        "refused by the uid precondition: {}",
        failure.message
    );
    let still = get(&w.http, &w.member2, &path).await.unwrap();
    assert_eq!(still["metadata"]["uid"], recreated["metadata"]["uid"]);
    assert!(
        report.retry,
        "the pass is retried once the cache has caught up"
    );

    // The same pass from a cache that shows the re-created slice deletes it: it is a stale
    // copy too.
    let fresh = cache::kept::slice(typed(recreated));
    listed(&ctx.caches.member("member2").unwrap().slices, vec![fresh]);
    let report = reconcile::reconcile(&ctx, &mcs, &ready).await.unwrap();
    assert!(
        report.failures.iter().all(|f| f.cluster != "member2"),
        "{:?}",
        report.failures
    );
    assert!(get(&w.http, &w.member2, &path).await.is_none());
}
