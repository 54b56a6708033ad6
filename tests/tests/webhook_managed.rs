//! `mcs-policy serve --certificate-secret` against kube-sim: the real binary makes its CA and
//! serving certificate in a Secret and, once it listens, patches that CA into the `caBundle`
//! of the webhook configurations the chart created (here: what `mcs-policy manifests` prints
//! without `--ca-bundle`), and nothing else of them. It agrees with a second replica on one
//! certificate, keeps it across restarts, rotates the serving certificate and the CA without a
//! moment in which the configurations' `caBundle` fails to verify what is served, never
//! creates a configuration (a missing one stays missing, a deleted one stays deleted), and
//! `mcs-policy unregister` removes only configurations that carry our label.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tests::sync::{delete, ensure_namespace, get, post, write_kubeconfig};
use tests::{KillOnDrop, binary, kube_sim, listening_url};

const NS: &str = "mcs-policy-system";
const SECRET_PATH: &str = "/api/v1/namespaces/mcs-policy-system/secrets/mcs-policy-tls";
const VALIDATING: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/mcs-policy";
const MUTATING: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mcs-policy";
const VALIDATING_LIST: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING_LIST: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
/// The name the API server reaches the Service by, which the certificate must carry.
const SERVICE_HOST: &str = "mcs-policy.mcs-policy-system.svc";

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-policy-managed-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A kube-sim with the namespace, and a kubeconfig for it.
async fn cluster(tag: &str) -> (KillOnDrop, String, PathBuf) {
    let (sim, url) = kube_sim(tag);
    ensure_namespace(&reqwest::Client::new(), &url, NS).await;
    let dir = temp_dir(tag);
    let kubeconfig = write_kubeconfig(&dir, &[("hub", &url)]);
    (sim, url, kubeconfig)
}

/// A running `serve --certificate-secret mcs-policy-tls --service mcs-policy`, with its log.
struct Replica {
    _child: KillOnDrop,
    addr: String,
    log: Log,
}

/// The stderr of a server, line by line as it comes (and echoed, for a failing test's output).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn follow(stderr: std::process::ChildStderr) -> Log {
        let log = Log::default();
        let lines = log.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[serve] {line}");
                lines.lock().unwrap().push(line);
            }
        });
        log
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The index of the first line that contains `text`.
    fn position(&self, text: &str) -> Option<usize> {
        self.lines().iter().position(|line| line.contains(text))
    }
}

/// The command of one replica, listening on `listen`, at log level `level`.
fn serve_command(kubeconfig: &Path, listen: &str, level: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(binary("mcs-policy"));
    command
        .args([
            "serve",
            "--listen",
            listen,
            "--certificate-secret",
            "mcs-policy-tls",
        ])
        .args(["--certificate-namespace", NS, "--service", "mcs-policy"])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(extra)
        .env("RUST_LOG", level)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn serve(kubeconfig: &Path, extra: &[&str]) -> Replica {
    let mut child = serve_command(kubeconfig, "127.0.0.1:0", "info", extra)
        .spawn()
        .expect("mcs-policy serve starts");
    let log = Log::follow(child.stderr.take().unwrap());
    let url = listening_url(&mut child).expect("serve exited before listening");
    let addr = url.trim_start_matches("https://").to_string();
    Replica {
        _child: KillOnDrop(child),
        addr,
        log,
    }
}

/// Creates the two configurations as the chart does: what `mcs-policy manifests` prints for
/// `flags`, without `--ca-bundle`, so with no caBundle. Returns them as created.
async fn create_configurations(url: &str, flags: &[&str]) -> Vec<Value> {
    let out = Command::new(binary("mcs-policy"))
        .arg("manifests")
        .args(flags)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut created = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let object = Value::deserialize(document).unwrap();
        for webhook in object["webhooks"].as_array().unwrap() {
            assert!(
                webhook["clientConfig"].get("caBundle").is_none(),
                "manifests without --ca-bundle prints no caBundle: {webhook}"
            );
        }
        let list = match object["kind"].as_str() {
            Some("ValidatingWebhookConfiguration") => VALIDATING_LIST,
            Some("MutatingWebhookConfiguration") => MUTATING_LIST,
            other => panic!("unexpected kind {other:?}"),
        };
        post(&http(), url, list, &object).await;
        created.push(object);
    }
    assert_eq!(created.len(), 2);
    created
}

/// Waits (up to 20 s) until every webhook of both configurations trusts exactly `ca_pem`;
/// returns them.
async fn await_ca_bundle(url: &str, ca_pem: &str) -> [Value; 2] {
    let start = Instant::now();
    loop {
        let validating = get(&http(), url, VALIDATING).await;
        let mutating = get(&http(), url, MUTATING).await;
        if let (Some(v), Some(m)) = (&validating, &mutating)
            && [v, m].iter().all(|c| {
                c["webhooks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|w| base64_text(&w["clientConfig"]["caBundle"]) == ca_pem)
            })
        {
            return [v.clone(), m.clone()];
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the configurations never trusted the Secret's CA: {validating:?} {mutating:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `configuration` with its `caBundle`s, its metadata and what the API server fills in left
/// out: what the chart wrote and owns.
fn chart_part(configuration: &Value, created: &Value) -> Value {
    let mut webhooks = configuration["webhooks"].clone();
    for (webhook, created) in webhooks
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(created["webhooks"].as_array().unwrap())
    {
        let fields = webhook.as_object_mut().unwrap();
        fields.retain(|key, _| created.get(key).is_some());
        fields["clientConfig"]
            .as_object_mut()
            .unwrap()
            .remove("caBundle");
    }
    json!({"labels": configuration["metadata"]["labels"], "webhooks": webhooks})
}

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// The PEM text of key `key` of the Secret.
async fn secret_text(url: &str, key: &str) -> String {
    let secret = get(&http(), url, SECRET_PATH)
        .await
        .expect("the Secret exists");
    base64_text(&secret["data"][key])
}

/// The PEM CAs a configuration trusts.
fn ca_bundle(configuration: &Value) -> String {
    base64_text(&configuration["webhooks"][0]["clientConfig"]["caBundle"])
}

/// The text a base64 JSON string holds ("" for anything else).
fn base64_text(value: &Value) -> String {
    let b64 = value.as_str().unwrap_or_default();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap()
}

/// A client that reaches `replica` as the API server does: by the Service's name, trusting only
/// the PEM CAs `ca_pem`; with the base URL to use.
fn service_client(replica: &Replica, ca_pem: &str) -> Result<(reqwest::Client, String), String> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .tls_info(true)
        .resolve(SERVICE_HOST, replica.addr.parse().unwrap())
        .timeout(Duration::from_secs(5));
    for cert in
        reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).map_err(|e| e.to_string())?
    {
        builder = builder.add_root_certificate(cert);
    }
    let port = replica.addr.rsplit(':').next().unwrap();
    Ok((
        builder.build().unwrap(),
        format!("https://{SERVICE_HOST}:{port}"),
    ))
}

/// The serving certificate (DER) `replica` presents, verified against `ca_pem` for the
/// Service's name, as the API server verifies it; `Err` when the handshake fails.
async fn served(replica: &Replica, ca_pem: &str) -> Result<Vec<u8>, String> {
    let (client, base) = service_client(replica, ca_pem)?;
    let response = client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    if !response.status().is_success() {
        return Err(format!("/healthz answered {}", response.status()));
    }
    let info = response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate().map(<[u8]>::to_vec));
    info.ok_or_else(|| "no peer certificate".to_string())
}

fn pem_der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .expect("a certificate")
        .unwrap()
        .to_vec()
}

/// `manifests` flags for the Service the replicas are behind.
const SERVICE_FLAGS: &[&str] = &["--namespace", NS, "--service", "mcs-policy"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_one_certificate_that_the_configurations_trust() {
    let (_sim, url, kubeconfig) = cluster("agree").await;
    let created = create_configurations(&url, SERVICE_FLAGS).await;
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| serve(&kubeconfig, &[]));
        let b = s.spawn(|| serve(&kubeconfig, &[]));
        (a.join().unwrap(), b.join().unwrap())
    });
    let ca = secret_text(&url, "ca.crt").await;
    let tls = secret_text(&url, "tls.crt").await;
    for replica in [&a, &b] {
        let cert = served(replica, &ca)
            .await
            .expect("the replica is trusted by the Secret's CA");
        assert_eq!(
            cert,
            pem_der(&tls),
            "each replica serves the Secret's certificate"
        );
    }
    let secret = get(&http(), &url, SECRET_PATH).await.unwrap();
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(
        secret["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "mcs-policy"
    );

    // Every webhook of both configurations trusts the Secret's CA (the validating one has two,
    // the ServiceExport webhook too), and the rest of them is what the chart wrote.
    let patched = await_ca_bundle(&url, &ca).await;
    for (configuration, created) in patched.iter().zip(&created) {
        assert_eq!(
            chart_part(configuration, created),
            json!({"labels": created["metadata"]["labels"], "webhooks": created["webhooks"]}),
            "only caBundle changed"
        );
    }
    assert_eq!(patched[0]["webhooks"].as_array().unwrap().len(), 2);
    // Patched after each replica listened: each logged that it serves before the patch.
    for replica in [&a, &b] {
        let serving = replica
            .log
            .position("serving admission webhooks on https://");
        assert!(serving.is_some(), "{:?}", replica.log.lines());
        if let Some(patched) = replica
            .log
            .position("caBundle of the webhook configurations patched")
        {
            assert!(serving < Some(patched), "{:?}", replica.log.lines());
        }
    }

    // An admission review over the managed certificate, as the API server sends it.
    let review = tests::fixtures::load::<tests::fixtures::AdmissionCase>("validate")
        .into_iter()
        .find(|f| f.name == "rejects_duplicate_port_names")
        .expect("the fixture")
        .case
        .review;
    let trusted = ca_bundle(&patched[0]);
    let (client, base) = service_client(&a, &trusted).unwrap();
    let answer: Value = client
        .post(format!("{base}/validate-multiclusterservice"))
        .json(&review)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!(
            "mcs_policy_build_info{{version=\"{}\",commit=\"",
            env!("CARGO_PKG_VERSION")
        )),
        "{metrics}"
    );

    // A restart (an upgrade of the Deployment) keeps the certificate, and the configurations.
    let before = get(&http(), &url, VALIDATING).await.unwrap();
    drop((a, b));
    let c = serve(&kubeconfig, &[]);
    assert_eq!(secret_text(&url, "tls.crt").await, tls);
    assert_eq!(served(&c, &ca).await.unwrap(), pem_der(&tls));
    let after = get(&http(), &url, SECRET_PATH).await.unwrap();
    assert_eq!(
        after["metadata"]["resourceVersion"],
        secret["metadata"]["resourceVersion"]
    );
    await_ca_bundle(&url, &ca).await;
    assert_eq!(
        get(&http(), &url, VALIDATING).await.unwrap()["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"],
        "nothing to patch: the caBundle was current"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotations_never_serve_what_the_configurations_do_not_trust() {
    let (_sim, url, kubeconfig) = cluster("rotate").await;
    create_configurations(&url, SERVICE_FLAGS).await;
    // A CA of 12 s (replaced with 4 s left) and serving certificates of 6 s (renewed with 2 s
    // left): within 20 s the serving certificate is renewed several times and the CA once.
    let replica = serve(
        &kubeconfig,
        &[
            "--ca-validity",
            "12s",
            "--serving-validity",
            "6s",
            "--certificate-check-interval",
            "300ms",
        ],
    );
    let first_ca = secret_text(&url, "ca.crt").await;
    let first_tls = secret_text(&url, "tls.crt").await;
    await_ca_bundle(&url, &first_ca).await;
    let mut seen_certs = std::collections::HashSet::new();
    let mut saw_two_cas = false;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        for path in [VALIDATING, MUTATING] {
            let configuration = get(&http(), &url, path).await.unwrap();
            for webhook in configuration["webhooks"].as_array().unwrap() {
                let trusted = base64_text(&webhook["clientConfig"]["caBundle"]);
                saw_two_cas |= trusted.matches("BEGIN CERTIFICATE").count() == 2;
                match served(&replica, &trusted).await {
                    Ok(cert) => {
                        seen_certs.insert(cert);
                    }
                    Err(err) => panic!(
                        "after {:?} the served certificate does not verify against the caBundle of {path} {}: {err}",
                        start.elapsed(),
                        webhook["name"]
                    ),
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        seen_certs.len() >= 3,
        "the serving certificate was renewed: {} seen",
        seen_certs.len()
    );
    assert!(
        saw_two_cas,
        "during the CA rotation the old and the new CA were both trusted"
    );
    assert_ne!(
        secret_text(&url, "ca.crt").await,
        first_ca,
        "the CA was replaced"
    );
    assert_ne!(secret_text(&url, "tls.crt").await, first_tls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmada_mode_patches_the_configurations_of_another_api_server() {
    let (_host, host_url, host_kubeconfig) = cluster("karmada-host").await;
    let (_karmada, karmada_url, karmada_kubeconfig) = cluster("karmada-apiserver").await;
    let endpoint = "https://mcs-policy.mcs-policy-system.svc:443";
    create_configurations(&karmada_url, &["--url", endpoint]).await;
    let replica = serve(
        &host_kubeconfig,
        &[
            "--webhook-url",
            endpoint,
            "--webhook-kubeconfig",
            karmada_kubeconfig.to_str().unwrap(),
        ],
    );
    let ca = secret_text(&host_url, "ca.crt").await;
    served(&replica, &ca).await.unwrap();
    let [configuration, _] = await_ca_bundle(&karmada_url, &ca).await;
    assert_eq!(
        configuration["webhooks"][0]["clientConfig"]["url"],
        "https://mcs-policy.mcs-policy-system.svc:443/validate-multiclusterservice"
    );
    assert!(
        get(&http(), &host_url, VALIDATING).await.is_none(),
        "no configuration in the host cluster"
    );
    assert!(get(&http(), &host_url, MUTATING).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configurations_are_never_created_and_deleted_ones_stay_deleted() {
    let (_sim, url, kubeconfig) = cluster("missing").await;
    let replica = serve(&kubeconfig, &["--certificate-check-interval", "200ms"]);
    let ca = secret_text(&url, "ca.crt").await;
    let said = "webhook configuration mcs-policy (ValidatingWebhookConfiguration) not found: \
                the chart/manifests create it; nothing to patch";
    let start = Instant::now();
    while replica.log.position(said).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the server never said the configuration is missing: {:?}",
            replica.log.lines()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        replica
            .log
            .position("(MutatingWebhookConfiguration) not found")
            .is_some()
    );
    // Looked for again (1 s, then 2 s...), never created; the server keeps serving.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(get(&http(), &url, VALIDATING).await.is_none());
    assert!(get(&http(), &url, MUTATING).await.is_none());
    assert!(
        replica
            .log
            .lines()
            .iter()
            .filter(|l| l.contains(said))
            .count()
            >= 2,
        "looked for again: {:?}",
        replica.log.lines()
    );
    served(&replica, &ca).await.expect("still serving");

    // The chart creates them (late, as Helm does after the Deployment): patched.
    create_configurations(&url, SERVICE_FLAGS).await;
    await_ca_bundle(&url, &ca).await;

    // An upgrade that drops them, or an uninstall, deletes them while the server runs: they
    // stay deleted, and so they do when the server restarts.
    delete(&http(), &url, VALIDATING).await;
    delete(&http(), &url, MUTATING).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        get(&http(), &url, VALIDATING).await.is_none(),
        "the running server did not re-create what was deleted"
    );
    assert!(get(&http(), &url, MUTATING).await.is_none());
    drop(replica);
    let again = serve(&kubeconfig, &["--certificate-check-interval", "200ms"]);
    served(&again, &ca)
        .await
        .expect("a restarted server serves");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        get(&http(), &url, VALIDATING).await.is_none(),
        "a restarted server did not re-create them"
    );
    assert!(get(&http(), &url, MUTATING).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_ca_bundle_is_patched_while_the_listener_cannot_bind() {
    let (_sim, url, kubeconfig) = cluster("nobind").await;
    create_configurations(&url, SERVICE_FLAGS).await;
    // The port is taken: the server gets its certificate, then cannot listen, and exits.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = serve_command(&kubeconfig, &addr, "info", &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("listening on {addr} failed")),
        "{stderr}"
    );
    assert!(
        get(&http(), &url, SECRET_PATH).await.is_some(),
        "the certificate was made before listening"
    );
    for path in [VALIDATING, MUTATING] {
        let configuration = get(&http(), &url, path).await.unwrap();
        for webhook in configuration["webhooks"].as_array().unwrap() {
            assert!(
                webhook["clientConfig"].get("caBundle").is_none(),
                "a server that never listened patched {path}: {webhook}"
            );
        }
    }
    assert!(
        !stderr.contains("caBundle of the webhook configurations patched"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unregister_deletes_our_configurations_and_leaves_others() {
    let (_sim, url, kubeconfig) = cluster("unregister").await;
    // Configurations an earlier build's server (or `manifests | kubectl apply`) made: labelled.
    create_configurations(&url, SERVICE_FLAGS).await;
    // Someone else's configuration of another name, without our label.
    let foreign = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "theirs"},
        "webhooks": [{
            "name": "theirs.example.com",
            "clientConfig": {"url": "https://theirs.example.com/validate"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    });
    post(&http(), &url, VALIDATING_LIST, &foreign).await;

    let unregister = |name: &str| {
        let out = Command::new(binary("mcs-policy"))
            .args([
                "unregister",
                "--webhook-configuration",
                name,
                "--webhook-kubeconfig",
            ])
            .arg(&kubeconfig)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let said = unregister("mcs-policy");
    assert!(
        said.contains("ValidatingWebhookConfiguration mcs-policy: deleted"),
        "{said}"
    );
    assert!(
        said.contains("MutatingWebhookConfiguration mcs-policy: deleted"),
        "{said}"
    );
    assert!(get(&http(), &url, VALIDATING).await.is_none());
    assert!(get(&http(), &url, MUTATING).await.is_none());
    let said = unregister("mcs-policy");
    assert!(
        said.contains("ValidatingWebhookConfiguration mcs-policy: not there"),
        "{said}"
    );

    let said = unregister("theirs");
    assert!(
        said.contains("ValidatingWebhookConfiguration theirs: left alone"),
        "{said}"
    );
    let theirs = format!("{VALIDATING_LIST}/theirs");
    assert!(
        get(&http(), &url, &theirs).await.is_some(),
        "a configuration without our label stays"
    );
}

#[tokio::test]
async fn without_a_namespace_or_an_api_server_serve_says_what_is_missing() {
    let dir = temp_dir("errors");
    let kubeconfig = write_kubeconfig(&dir, &[("hub", "http://127.0.0.1:9")]);
    let out = Command::new(binary("mcs-policy"))
        .args([
            "serve",
            "--certificate-secret",
            "s",
            "--service",
            "svc",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .env_remove("POD_NAMESPACE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--certificate-secret needs a namespace"),
        "{stderr}"
    );

    let out = Command::new(binary("mcs-policy"))
        .args(["serve", "--certificate-secret", "s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("--service"),
        "{stderr}"
    );
}
