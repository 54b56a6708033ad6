//! `mcs-policy sync` as it runs in a Pod (docs/deploying.md): the hub reached with the Pod's
//! ServiceAccount through kube's in-cluster configuration, the members from a mounted
//! kubeconfig, and the probes `/healthz` and `/readyz` beside `/metrics`
//! (docs/sync.md#probes).
//!
//! kube's in-cluster configuration reads the ServiceAccount's token and CA at fixed paths under
//! /var/run/secrets/kubernetes.io/serviceaccount/ and speaks HTTPS to
//! KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT. So the controller runs in user and mount
//! namespaces of its own (`unshare`, util-linux) with those files on a private tmpfs, and the
//! hub's kube-sim, which then requires the token, sits behind a TLS front.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::Value;
use tests::sync::*;

/// The token of the Pod's ServiceAccount; the hub accepts no other.
const TOKEN: &str = "token-of-serviceaccount-mcs-policy-sync";

/// Mounts the ServiceAccount files of `$SA_DIR` where a Pod has them, then runs `$0 "$@"`.
const IN_POD: &str = r#"set -e
mount -t tmpfs tmpfs /var/run
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$SA_DIR/token" "$SA_DIR/ca.crt" "$SA_DIR/namespace" /var/run/secrets/kubernetes.io/serviceaccount/
exec "$0" "$@""#;

/// `mcs-policy <args>` as in a Pod whose ServiceAccount files are those of `sa_dir`, the API
/// server at `https://127.0.0.1:<port>`.
fn in_pod(sa_dir: &Path, port: u16, args: &[String]) -> Command {
    let probe = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .status();
    assert!(
        probe.as_ref().is_ok_and(|s| s.success()),
        "this test runs the controller in user and mount namespaces of its own, to put a \
         ServiceAccount token where kube's in-cluster configuration reads it, and \
         `unshare --user --map-root-user --mount true` (util-linux) fails here: {probe:?}"
    );
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", IN_POD])
        .arg(tests::binary("mcs-policy"))
        .args(args)
        .env("SA_DIR", sa_dir)
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", port.to_string());
    command
}

/// A TLS server on a loopback port that passes every connection on to `upstream`
/// (`http://HOST:PORT`), with a certificate for 127.0.0.1 signed by the CA it returns (written
/// in `dir`). It serves until the test's runtime ends.
async fn tls_front(upstream: &str, dir: &Path) -> (u16, PathBuf) {
    use mcs_policy::tls::{
        ReloadingResolver, load_certified_key, server_config, write_self_signed,
    };
    let made = write_self_signed(dir).expect("a CA and a certificate for 127.0.0.1");
    let key = load_certified_key(&made.files).unwrap();
    let mut config = (*server_config(ReloadingResolver::new(key)).unwrap()).clone();
    // kube-sim speaks HTTP/1.1 only: offer nothing else.
    config.alpn_protocols.clear();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = upstream
        .strip_prefix("http://")
        .expect("kube-sim's URL")
        .to_string();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (port, made.ca_bundle)
}

/// The ServiceAccount files of a Pod in namespace mcs-policy-system: `token`, the API
/// server's `ca.crt`, `namespace`, in `dir`.
fn service_account(dir: &Path, ca: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("token"), TOKEN).unwrap();
    std::fs::copy(ca, dir.join("ca.crt")).unwrap();
    std::fs::write(dir.join("namespace"), "mcs-policy-system").unwrap();
    dir.to_path_buf()
}

/// Status and body of `GET http://<addr><path>`, once the server answers.
async fn probe(w: &World, addr: &str, path: &str) -> (StatusCode, String) {
    w.eventually(&format!("{path} at {addr}"), || async {
        let resp = w
            .http
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .ok()?;
        let status = resp.status();
        Some((status, resp.text().await.ok()?))
    })
    .await
}

/// Waits until `GET <path>` at `addr` answers `status` with `body`; returns nothing.
async fn await_probe(w: &World, addr: &str, path: &str, status: StatusCode, body: &str) {
    w.eventually(
        &format!("{path} at {addr} to be {status} {body:?}"),
        || async {
            let got = probe(w, addr, path).await;
            (got == (status, body.to_string())).then_some(())
        },
    )
    .await;
}

async fn lease_holder(w: &World) -> Option<String> {
    let lease: Value = get(&w.http, &w.hub, &format!("{LEASES}/mcs-policy-sync")).await?;
    let holder = lease["spec"]["holderIdentity"].as_str()?;
    (!holder.is_empty()).then(|| holder.to_string())
}

/// Fast leader election: a crashed leader is replaced within ~2 s.
const FAST: [&str; 7] = [
    "--leader-elect",
    "--lease-duration",
    "2s",
    "--renew-deadline",
    "1500ms",
    "--retry-period",
    "250ms",
];

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_pod_it_reaches_the_hub_with_its_service_account_and_the_members_with_a_kubeconfig() {
    let mut headers = HeaderMap::new();
    let bearer = HeaderValue::from_str(&format!("Bearer {TOKEN}")).unwrap();
    headers.insert(AUTHORIZATION, bearer);
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    // The hub answers 401 to any other token (or none).
    let mut w = World::bare_clusters_with("in-cluster", false, &["--token", TOKEN], http).await;
    for (_, url) in w.contexts() {
        ensure_namespace(&w.http, url, "shop").await;
    }
    let (port, ca) = tls_front(&w.hub, &w.dir.join("front")).await;
    let sa = service_account(&w.dir.join("serviceaccount"), &ca);
    // The member kubeconfig Secret, mounted: a context per member, named as the member.
    let members_dir = w.dir.join("members");
    std::fs::create_dir_all(&members_dir).unwrap();
    let members = write_kubeconfig(
        &members_dir,
        &[
            ("member1", w.member1.as_str()),
            ("member2", w.member2.as_str()),
        ],
    );
    let metrics = free_addr();
    let mut args = owned(&[
        "sync",
        "--member-kubeconfig",
        members.to_str().unwrap(),
        "--resync-interval",
        "200ms",
        "--metrics-listen",
        &metrics,
    ]);
    args.extend(owned(&FAST));
    let index = w.spawn_command(in_pod(&sa, port, &args));

    await_probe(
        &w,
        &metrics,
        "/readyz",
        StatusCode::OK,
        "ok: leading: syncing\n",
    )
    .await;
    w.sync_a_slice_from_each_member().await;
    let holder = lease_holder(&w).await;
    assert!(holder.is_some(), "the Lease was written with the token");
    let log = w.log(index);
    assert!(
        log.contains("sync controller started") && log.contains("hub=hub"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_pod_without_a_kubeconfig_it_refuses_to_start_naming_what_to_give() {
    let dir = std::env::temp_dir().join(format!("mcs-policy-not-in-pod-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let members = write_kubeconfig(&dir, &[("member1", "http://127.0.0.1:9")]);
    let run = |args: &[&str]| {
        Command::new(tests::binary("mcs-policy"))
            .args(args)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .output()
            .unwrap()
    };
    let out = run(&["sync", "--member-kubeconfig", members.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no --kubeconfig, and this process cannot reach the cluster it runs in")
            && stderr.contains("KUBERNETES_SERVICE_HOST")
            && stderr.contains("give --kubeconfig FILE --hub CONTEXT"),
        "{stderr}"
    );
    // Contradictions are refused before anything loads.
    let out = run(&["sync", "--hub", "hub", "--karmada-clusters"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--hub \"hub\" names a context of --kubeconfig, which is not given"),
        "{stderr}"
    );
    let out = run(&["sync"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no member clusters") && stderr.contains("--member-kubeconfig"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_and_the_waiting_follower_are_ready_and_a_takeover_keeps_them_so() {
    let mut w = World::clusters("probes-ha", false).await;
    let mut replicas = Vec::new();
    for n in 0..2 {
        let addr = free_addr();
        let identity = format!("replica-{n}");
        let mut flags: Vec<&str> = FAST.to_vec();
        flags.extend(["--identity", &identity, "--metrics-listen", &addr]);
        replicas.push((w.spawn_sync("500ms", &flags), addr, identity));
    }
    let holder = w
        .eventually("a replica to hold the lease", || lease_holder(&w))
        .await;
    let leader = replicas.iter().position(|r| r.2 == holder).unwrap();
    let follower = 1 - leader;
    await_probe(
        &w,
        &replicas[leader].1,
        "/readyz",
        StatusCode::OK,
        "ok: leading: syncing\n",
    )
    .await;
    // Once loaded (it answers 503 "starting" until then), the other waits for the Lease.
    let waiting = "ok: following: waiting for the leader lease\n";
    await_probe(
        &w,
        &replicas[follower].1,
        "/readyz",
        StatusCode::OK,
        waiting,
    )
    .await;
    for (_, addr, _) in &replicas {
        assert_eq!(
            probe(&w, addr, "/healthz").await,
            (StatusCode::OK, "ok\n".to_string())
        );
    }
    let metrics = probe(&w, &replicas[leader].1, "/metrics").await.1;
    assert_eq!(metric(&metrics, "mcs_policy_sync_leader"), Some(1.0));

    // The leader crashes: the follower takes the Lease and reports it leads, once synced.
    w.kill_controller(replicas[leader].0);
    await_probe(
        &w,
        &replicas[follower].1,
        "/readyz",
        StatusCode::OK,
        "ok: leading: syncing\n",
    )
    .await;
    w.sync_a_slice_from_each_member().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_read_its_members_is_alive_but_not_ready() {
    // No Karmada Cluster CRD in the hub: listing the Clusters fails at every refresh.
    let mut w = World::clusters("probes-no-members", false).await;
    let addr = free_addr();
    w.spawn_sync("200ms", &["--karmada-clusters", "--metrics-listen", &addr]);
    let not_read = "not ready: leading: the member clusters or the caches are not read yet\n";
    await_probe(
        &w,
        &addr,
        "/readyz",
        StatusCode::SERVICE_UNAVAILABLE,
        not_read,
    )
    .await;
    // Still so after several membership refreshes (every 200 ms here).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        probe(&w, &addr, "/readyz").await,
        (StatusCode::SERVICE_UNAVAILABLE, not_read.to_string())
    );
    assert_eq!(
        probe(&w, &addr, "/healthz").await,
        (StatusCode::OK, "ok\n".to_string())
    );
    let metrics = probe(&w, &addr, "/metrics").await.1;
    assert_eq!(metric(&metrics, "mcs_policy_sync_leader"), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_cannot_reach_the_lease_is_not_ready_until_it_can() {
    let mut w = World::clusters("probes-lease-out-of-reach", false).await;
    // Another replica holds the Lease for an hour: this one can only follow.
    post(
        &w.http,
        &w.hub,
        "/api/v1/namespaces",
        &serde_json::json!({"metadata": {"name": "mcs-policy-system"}}),
    )
    .await;
    post(
        &w.http,
        &w.hub,
        LEASES,
        &serde_json::json!({
            "metadata": {"name": "mcs-policy-sync"},
            "spec": {"holderIdentity": "elsewhere", "leaseDurationSeconds": 3600,
                     "renewTime": "2026-01-01T00:00:00.000000Z"}
        }),
    )
    .await;
    let addr = free_addr();
    let mut flags: Vec<&str> = FAST.to_vec();
    flags.extend(["--identity", "replica-0", "--metrics-listen", &addr]);
    w.spawn_sync("500ms", &flags);
    let waiting = "ok: following: waiting for the leader lease\n";
    await_probe(&w, &addr, "/readyz", StatusCode::OK, waiting).await;

    // The hub refuses every Lease request: after three attempts in a row, not a spare.
    w.fault(
        &w.hub,
        serde_json::json!({"status": 500, "count": 100000, "resource": "leases"}),
    )
    .await;
    let (status, body) = w
        .eventually("the follower to report the lease out of reach", || async {
            let (status, body) = probe(&w, &addr, "/readyz").await;
            (status == StatusCode::SERVICE_UNAVAILABLE).then_some((status, body))
        })
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body.starts_with("not ready: following, but the leader lease is out of reach: reading lease mcs-policy-system/mcs-policy-sync"),
        "{body}"
    );
    assert_eq!(
        probe(&w, &addr, "/healthz").await,
        (StatusCode::OK, "ok\n".to_string())
    );

    // The hub answers again: a spare again, still following the other holder.
    w.clear_faults(&w.hub).await;
    await_probe(&w, &addr, "/readyz", StatusCode::OK, waiting).await;
    assert_eq!(lease_holder(&w).await.as_deref(), Some("elsewhere"));
}
