//! `mcs-policy sync --karmada-clusters` against kube-sim clusters (docs/sync.md#clusters-and-readiness, push mode): the
//! members are the hub's push-mode Karmada Cluster objects, reached with the token of the
//! secret each names; their `Ready` condition says whether they are ready (docs/sync.md#unready-and-unreachable-clusters); the
//! membership follows the Cluster objects while the controller runs.

use std::time::Duration;

use serde_json::{Value, json};
use tests::kube_sim_with;
use tests::sync::*;

/// The clusters, the MCS CRD and Karmada's Cluster CRD in the hub; no controller yet.
async fn karmada_world(test: &str, member3: bool) -> World {
    let w = World::clusters(test, member3).await;
    ensure_namespace(&w.http, &w.hub, "karmada-cluster").await;
    post(
        &w.http,
        &w.hub,
        CRDS,
        &fixture_crd("cluster.karmada.io_clusters.yaml"),
    )
    .await;
    w
}

/// A PEM certificate, as the `caBundle` `karmadactl join` stores.
fn ca_bundle() -> String {
    rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .unwrap()
        .cert
        .pem()
}

/// Registers the cluster at `url` with Karmada as `name`: its secret (token `token`, a CA
/// bundle) and its Cluster object in `mode`, with a `Ready` condition of `ready` if given.
async fn join(w: &World, name: &str, mode: &str, url: &str, token: &str, ready: Option<&str>) {
    let secret = karmada_secret(name, token, Some(&ca_bundle()));
    post(&w.http, &w.hub, KARMADA_SECRETS, &secret).await;
    post_cluster(w, name, mode, url, ready).await;
}

/// Only the Cluster object of [`join`].
async fn post_cluster(w: &World, name: &str, mode: &str, url: &str, ready: Option<&str>) {
    let cluster = karmada_cluster(name, mode, url);
    post(&w.http, &w.hub, KARMADA_CLUSTERS, &cluster).await;
    if let Some(status) = ready {
        set_cluster_ready(&w.http, &w.hub, name, status).await;
    }
}

/// Starts `mcs-policy sync --karmada-clusters` with a kubeconfig that knows only the hub.
fn spawn_karmada_sync(w: &mut World) -> usize {
    spawn_karmada_sync_every(w, "200ms")
}

/// [`spawn_karmada_sync`] resyncing every `resync`.
fn spawn_karmada_sync_every(w: &mut World, resync: &str) -> usize {
    let kubeconfig = write_kubeconfig(&w.dir, &[("hub", w.hub.as_str())]);
    let args: Vec<String> = [
        "sync",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--hub",
        "hub",
        "--karmada-clusters",
        "--resync-interval",
        resync,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    w.spawn_controller(&args)
}

/// Names of the slices of namespace `shop` in a cluster that wants `token`.
async fn slice_names_with_token(w: &World, url: &str, token: &str) -> Vec<String> {
    let resp = w
        .http
        .get(format!("{url}{SLICES}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(
        resp.status().is_success(),
        "GET {SLICES}: {}",
        resp.status()
    );
    let list: Value = resp.json().await.unwrap();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Rotates the secret of Karmada cluster `secure` to the token `new`, as an operator would.
async fn rotate_secure_token(w: &World) {
    let rotated = karmada_secret("secure", "new", Some(&ca_bundle()));
    let path = format!("{KARMADA_SECRETS}/secure");
    put(&w.http, &w.hub, &path, &rotated).await;
}

/// Waits until the token-protected cluster at `url` holds exactly `want`.
async fn await_slices_with_token(w: &World, url: &str, token: &str, want: &[&str]) {
    w.eventually(&format!("{url} to hold exactly {want:?}"), || async {
        (slice_names_with_token(w, url, token).await == want).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncs_ready_push_members_with_the_token_of_their_secret() {
    // Accepts only its secret's token: a copy there proves the token is sent. Declared before
    // the world so that it outlives the controller.
    let (_secure_sim, secure) = kube_sim_with("secure", &["--token", "s3cret"]);
    let mut w = karmada_world("karmada-push", false).await;
    let (member1, member2) = (w.member1.clone(), w.member2.clone());
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    join(&w, "member2", "Push", &member2, "t2", Some("True")).await;
    join(&w, "secure", "Push", &secure, "s3cret", Some("True")).await;
    spawn_karmada_sync(&mut w);

    w.add_native_slice(&member1, "web-a", "10.1.0.1").await;
    post(&w.http, &w.hub, MCS, &mcs(json!({}))).await;

    w.await_slices(&member2, "member2", &["member1-web-a"])
        .await;
    await_slices_with_token(&w, &secure, "s3cret", &["member1-web-a"]).await;
    w.await_slices(&member1, "member1", &["web-a"]).await;
    let copy = get(&w.http, &member2, &format!("{SLICES}/member1-web-a"))
        .await
        .unwrap();
    assert_eq!(
        copy["metadata"]["annotations"],
        json!({PROVISION: "member1"}),
        "the Karmada Cluster name is the cluster name"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_whose_ready_condition_is_false_is_skipped_until_it_turns_true() {
    let mut w = karmada_world("karmada-unready", false).await;
    let (member1, member2) = (w.member1.clone(), w.member2.clone());
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    join(&w, "member2", "Push", &member2, "t2", Some("False")).await;
    spawn_karmada_sync(&mut w);

    w.add_native_slice(&member1, "web-a", "10.1.0.1").await;
    post(&w.http, &w.hub, MCS, &member1_to_member2()).await;

    // Its API answers, but Karmada says it is not ready: skipped (docs/sync.md#unready-and-unreachable-clusters).
    w.await_dispatched("False", "member2").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(w.slice_names(&member2).await, Vec::<String>::new());

    set_cluster_ready(&w.http, &w.hub, "member2", "True").await;
    w.await_slices(&member2, "member2", &["member1-web-a"])
        .await;
    w.await_dispatched("True", "dispatched successfully").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_mode_cluster_is_never_contacted() {
    let mut w = karmada_world("karmada-pull", true).await;
    let member3 = w.member3.clone().unwrap();
    let (member1, member2) = (w.member1.clone(), w.member2.clone());
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    join(&w, "member2", "Push", &member2, "t2", Some("True")).await;
    join(&w, "member3", "Pull", &member3, "t3", Some("True")).await;
    let index = spawn_karmada_sync(&mut w);

    w.add_native_slice(&member1, "web-a", "10.1.0.1").await;
    post(&w.http, &w.hub, MCS, &mcs(json!({}))).await;
    w.await_slices(&member2, "member2", &["member1-web-a"])
        .await;
    // Several membership passes later, still nothing in member3.
    tokio::time::sleep(Duration::from_secs(1)).await;

    assert_eq!(w.slice_names(&member3).await, Vec::<String>::new());
    assert_eq!(
        get(&w.http, &member3, &format!("{SERVICES}/web")).await,
        None
    );
    let watches = |url: String| {
        let http = w.http.clone();
        async move {
            let state = get(&http, &url, "/_sim/state").await.unwrap();
            state["openWatches"].as_u64().unwrap()
        }
    };
    assert!(watches(member2.clone()).await > 0, "members are watched");
    assert_eq!(watches(member3).await, 0, "member3 is not");
    let log = w.log(index);
    assert_eq!(
        log.matches("Pull mode").count(),
        1,
        "logged once, not every pass:\n{log}"
    );
    assert!(log.contains("member3"), "{log}");
}

/// The MCS `web`'s `ClustersSynced` condition, once it has `status`.
async fn await_clusters_synced(w: &World, status: &str) -> Value {
    w.eventually(&format!("ClustersSynced={status}"), || async {
        let c = w.condition("ClustersSynced").await?;
        (c["status"] == status).then_some(c)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_cluster_an_mcs_lists_is_reported_not_synced_until_it_turns_to_push() {
    let mut w = karmada_world("karmada-pull-listed", true).await;
    let member3 = w.member3.clone().unwrap();
    let (member1, member2) = (w.member1.clone(), w.member2.clone());
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    join(&w, "member2", "Push", &member2, "t2", Some("True")).await;
    join(&w, "member3", "Pull", &member3, "t3", Some("True")).await;
    spawn_karmada_sync(&mut w);
    w.add_native_slice(&member1, "web-a", "10.1.0.1").await;
    let listed = mcs(json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "member2"}, {"name": "member3"}],
    }));
    post(&w.http, &w.hub, MCS, &listed).await;

    // member3 exists: it is named as not synced, with why, never as not found; member2, a
    // push-mode consumer, still gets its copy (docs/sync.md#members-from-karmada).
    w.await_slices(&member2, "member2", &["member1-web-a"])
        .await;
    let why = "Cluster member3 is not synced: pull mode (Karmada's agent in the cluster syncs it";
    let event = w.await_event("ClusterNotSynced", &[why]).await;
    assert_eq!(event["type"], "Warning");
    let condition = await_clusters_synced(&w, "False").await;
    assert_eq!(condition["reason"], "ClusterNotSynced");
    assert!(
        condition["message"].as_str().unwrap().starts_with(why),
        "{condition}"
    );
    w.await_dispatched("True", "dispatched successfully").await;
    assert!(w.events("ClusterNotFound").await.is_empty());
    assert_eq!(w.slice_names(&member3).await, Vec::<String>::new());

    // Karmada hands member3 over to push mode: it is synced, and the condition clears.
    let path = format!("{KARMADA_CLUSTERS}/member3");
    edit(&w.http, &w.hub, &path, |c| {
        c["spec"]["syncMode"] = json!("Push")
    })
    .await;
    w.await_slices(&member3, "member3", &["member1-web-a"])
        .await;
    let condition = await_clusters_synced(&w, "True").await;
    assert_eq!(condition["reason"], "AllClustersSynced");
    assert_eq!(w.events("ClusterNotSynced").await.len(), 1, "reported once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_joining_at_run_time_becomes_a_member_once_its_secret_exists() {
    let mut w = karmada_world("karmada-join", false).await;
    let (member1, member2) = (w.member1.clone(), w.member2.clone());
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    let index = spawn_karmada_sync(&mut w);
    w.add_native_slice(&member1, "web-a", "10.1.0.1").await;
    post(&w.http, &w.hub, MCS, &mcs(json!({}))).await;
    w.await_dispatched("True", "dispatched successfully").await;

    // Its secret is missing: not a member, and the log says why.
    post_cluster(&w, "member2", "Push", &member2, Some("True")).await;
    w.eventually("the missing secret to be logged", || async {
        w.log(index)
            .contains("its secret karmada-cluster/member2 does not exist")
            .then_some(())
    })
    .await;
    assert_eq!(w.slice_names(&member2).await, Vec::<String>::new());

    let secret = karmada_secret("member2", "t2", Some(&ca_bundle()));
    post(&w.http, &w.hub, KARMADA_SECRETS, &secret).await;
    w.await_slices(&member2, "member2", &["member1-web-a"])
        .await;
    w.await_slices(&member1, "member1", &["web-a"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_secret_gives_the_member_a_new_client() {
    let (_secure_sim, secure) = kube_sim_with("secure", &["--token", "new"]);
    let mut w = karmada_world("karmada-rotate", false).await;
    let member1 = w.member1.clone();
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    join(&w, "secure", "Push", &secure, "old", Some("True")).await;
    spawn_karmada_sync(&mut w);
    w.add_native_slice(&member1, "web-a", "10.1.0.1").await;
    let to_secure = mcs(json!({
        "providerClusters": [{"name": "member1"}],
        "consumerClusters": [{"name": "secure"}],
    }));
    post(&w.http, &w.hub, MCS, &to_secure).await;

    // The old token is refused (401): the dispatch into `secure` fails.
    w.await_dispatched("False", "secure").await;
    assert_eq!(
        slice_names_with_token(&w, &secure, "new").await,
        Vec::<String>::new()
    );

    rotate_secure_token(&w).await;
    await_slices_with_token(&w, &secure, "new", &["member1-web-a"]).await;
    w.await_dispatched("True", "dispatched successfully").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rotation_the_members_watch_uses_the_new_client() {
    let (_secure_sim, secure) = kube_sim_with("secure", &["--token", "new"]);
    let mut w = karmada_world("karmada-rotate-watch", false).await;
    let member1 = w.member1.clone();
    join(&w, "member1", "Push", &member1, "t1", Some("True")).await;
    join(&w, "secure", "Push", &secure, "old", Some("True")).await;
    // Only the first pass at start: later changes arrive through watches alone.
    spawn_karmada_sync_every(&mut w, "1h");
    let from_secure = mcs(json!({
        "providerClusters": [{"name": "secure"}],
        "consumerClusters": [{"name": "member1"}],
    }));
    post(&w.http, &w.hub, MCS, &from_secure).await;
    w.await_dispatched("False", "secure").await;

    rotate_secure_token(&w).await;
    // A retry after the membership refresh (every 2s) reads `secure` with the new client and
    // succeeds; from then on nothing is retried, so only a watch through the new client can
    // report the slice made next.
    w.await_dispatched("True", "successfully").await;
    let namespace = json!({"metadata": {"name": "shop"}});
    let resp = w
        .http
        .post(format!("{secure}/api/v1/namespaces"))
        .bearer_auth("new")
        .json(&namespace)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let resp = w
        .http
        .post(format!("{secure}{SLICES}"))
        .bearer_auth("new")
        .json(&native_slice("web-s", "10.7.0.1"))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    w.await_slices(&member1, "member1", &["secure-web-s"]).await;
}
