//! `mcs-policy serve --certificate-secret` against kube-sim: the real binary makes its CA and
//! serving certificate in a Secret, creates the webhook configurations with that CA as their
//! `caBundle`, agrees with a second replica on one certificate, keeps it across restarts,
//! rotates the serving certificate and the CA without a moment in which the configurations'
//! `caBundle` fails to verify what is served, and `mcs-policy unregister` removes only
//! configurations that carry our label.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tests::sync::{ensure_namespace, get, post, write_kubeconfig};
use tests::{KillOnDrop, binary, kube_sim, listening_url};

const NS: &str = "mcs-policy-system";
const SECRET_PATH: &str = "/api/v1/namespaces/mcs-policy-system/secrets/mcs-policy-tls";
const VALIDATING: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/mcs-policy";
const MUTATING: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mcs-policy";
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

/// A running `serve --certificate-secret mcs-policy-tls --service mcs-policy`.
struct Replica {
    _child: KillOnDrop,
    addr: String,
}

fn serve(kubeconfig: &Path, extra: &[&str]) -> Replica {
    let mut child = Command::new(binary("mcs-policy"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--certificate-secret",
            "mcs-policy-tls",
        ])
        .args(["--certificate-namespace", NS, "--service", "mcs-policy"])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("mcs-policy serve starts");
    let url = listening_url(&mut child).expect("serve exited before listening");
    let addr = url.trim_start_matches("https://").to_string();
    Replica {
        _child: KillOnDrop(child),
        addr,
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_one_certificate_that_the_configurations_trust() {
    let (_sim, url, kubeconfig) = cluster("agree").await;
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

    for path in [VALIDATING, MUTATING] {
        let configuration = get(&http(), &url, path)
            .await
            .expect("the configuration exists");
        assert_eq!(
            ca_bundle(&configuration),
            ca,
            "{path} trusts the Secret's CA"
        );
        let webhook = &configuration["webhooks"][0];
        assert_eq!(webhook["name"], "multiclusterservice.karmada.io");
        assert_eq!(webhook["failurePolicy"], "Fail");
        assert_eq!(
            webhook["clientConfig"]["service"],
            json!({"namespace": NS, "name": "mcs-policy", "port": 443,
                   "path": if path == VALIDATING { "/validate-multiclusterservice" } else { "/mutate-multiclusterservice" }})
        );
        assert_eq!(
            configuration["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "mcs-policy"
        );
    }

    // An admission review over the managed certificate, as the API server sends it.
    let review = tests::fixtures::load::<tests::fixtures::AdmissionCase>("validate")
        .into_iter()
        .find(|f| f.name == "rejects_duplicate_port_names")
        .expect("the fixture")
        .case
        .review;
    let (client, base) = service_client(&a, &ca).unwrap();
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

    // A restart (an upgrade of the Deployment) keeps the certificate.
    drop((a, b));
    let c = serve(&kubeconfig, &[]);
    assert_eq!(secret_text(&url, "tls.crt").await, tls);
    assert_eq!(served(&c, &ca).await.unwrap(), pem_der(&tls));
    let after = get(&http(), &url, SECRET_PATH).await.unwrap();
    assert_eq!(
        after["metadata"]["resourceVersion"],
        secret["metadata"]["resourceVersion"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotations_never_serve_what_the_configurations_do_not_trust() {
    let (_sim, url, kubeconfig) = cluster("rotate").await;
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
    let mut seen_certs = std::collections::HashSet::new();
    let mut saw_two_cas = false;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let configuration = get(&http(), &url, VALIDATING).await.unwrap();
        let trusted = ca_bundle(&configuration);
        saw_two_cas |= trusted.matches("BEGIN CERTIFICATE").count() == 2;
        match served(&replica, &trusted).await {
            Ok(cert) => {
                seen_certs.insert(cert);
            }
            Err(err) => panic!(
                "after {:?} the served certificate does not verify against the configuration's caBundle: {err}",
                start.elapsed()
            ),
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
async fn karmada_mode_puts_url_configurations_in_another_api_server() {
    let (_host, host_url, host_kubeconfig) = cluster("karmada-host").await;
    let (_karmada, karmada_url, karmada_kubeconfig) = cluster("karmada-apiserver").await;
    let replica = serve(
        &host_kubeconfig,
        &[
            "--webhook-url",
            "https://mcs-policy.mcs-policy-system.svc:443",
            "--webhook-kubeconfig",
            karmada_kubeconfig.to_str().unwrap(),
        ],
    );
    let ca = secret_text(&host_url, "ca.crt").await;
    served(&replica, &ca).await.unwrap();
    assert!(
        get(&http(), &host_url, VALIDATING).await.is_none(),
        "no configuration in the host cluster"
    );
    let configuration = get(&http(), &karmada_url, VALIDATING)
        .await
        .expect("in the karmada-apiserver");
    assert_eq!(
        configuration["webhooks"][0]["clientConfig"]["url"],
        "https://mcs-policy.mcs-policy-system.svc:443/validate-multiclusterservice"
    );
    assert_eq!(ca_bundle(&configuration), ca);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unregister_deletes_our_configurations_and_leaves_others() {
    let (_sim, url, kubeconfig) = cluster("unregister").await;
    // Still running, checking often: an uninstall deletes the configurations before the
    // server goes, and the server must not bring them back meanwhile.
    let replica = serve(&kubeconfig, &["--certificate-check-interval", "200ms"]);
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
    post(
        &http(),
        &url,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        &foreign,
    )
    .await;

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
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        get(&http(), &url, VALIDATING).await.is_none(),
        "the running server did not re-create what unregister deleted"
    );
    let said = unregister("mcs-policy");
    assert!(
        said.contains("ValidatingWebhookConfiguration mcs-policy: not there"),
        "{said}"
    );
    // A server that starts (a new install) creates them again.
    drop(replica);
    let _again = serve(&kubeconfig, &[]);
    assert!(get(&http(), &url, VALIDATING).await.is_some());
    assert!(get(&http(), &url, MUTATING).await.is_some());

    let said = unregister("theirs");
    assert!(
        said.contains("ValidatingWebhookConfiguration theirs: left alone"),
        "{said}"
    );
    let theirs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/theirs";
    assert!(
        get(&http(), &url, theirs).await.is_some(),
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
