//! The Helm chart installed with real helm into a real kube-apiserver v1.36 (tests/src/envtest),
//! its webhook Deployment's replicas run by the Pod double (the chart's args, env, volumes and
//! ServiceAccount token, so its RBAC for real) behind the kube-proxy double (the Service's
//! ClusterIP:443 on loopback), so that the real API server calls the webhook through its
//! Service and verifies its TLS for `mcs-policy.mcs-policy-system.svc`, as in a cluster:
//!
//! - installed (target cluster, self-managed certificate, two replicas): an invalid
//!   MultiClusterService is refused with our validation message, a valid one admitted and
//!   defaulted (its permanent-id label, docs/defaulting.md), the configurations the chart's;
//! - upgrades with two replicas: self-managed → `webhook.enabled=false` (configurations gone,
//!   writes succeed with no server) → enabled again → `certificate.mode=secret` with a caBundle
//!   (same names, no ownership error) → self-managed again → `helm uninstall` (configurations
//!   gone), then a replica started again as during the uninstall does not bring them back.
//!
//! Each test has a control plane of its own: both install the same cluster-scoped objects.

use std::time::Duration;

use serde_json::{Value, json};
use tests::envtest::certificates::Ca;
use tests::envtest::{ControlPlane, ServiceProxy, Workload, wait_for};

const CHART: &str = "policies/chart/mcs-policy";
const NS: &str = "mcs-policy-system";
/// Where the test's MultiClusterServices go.
const APP_NS: &str = "shop";
const CONFIGURATIONS: [&str; 2] = [
    "validatingwebhookconfiguration",
    "mutatingwebhookconfiguration",
];

/// A control plane with the CRDs of policies/crds/ (docs/deploying.md, step 1) and the
/// namespace of the test's MultiClusterServices.
fn cluster(tag: &str) -> ControlPlane {
    let plane = ControlPlane::start(tag);
    plane.kubectl(&["apply", "-f", "policies/crds/"]);
    plane.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/multiclusterservices.networking.karmada.io",
        "--timeout=60s",
    ]);
    plane.kubectl(&["create", "namespace", APP_NS]);
    plane
}

fn helm(plane: &ControlPlane, verb: &[&str], values: &[&str]) {
    let mut args = verb.to_vec();
    args.extend(values);
    plane.helm(&args);
}

fn install(plane: &ControlPlane, values: &[&str]) {
    helm(
        plane,
        &[
            "install",
            "mcs-policy",
            CHART,
            "-n",
            NS,
            "--create-namespace",
        ],
        values,
    );
}

fn upgrade(plane: &ControlPlane, values: &[&str]) {
    helm(
        plane,
        &[
            "upgrade",
            "mcs-policy",
            CHART,
            "-n",
            NS,
            "--reset-then-reuse-values",
        ],
        values,
    );
}

/// The webhook Deployment's replicas and the Service in front of them.
struct Webhook<'a> {
    workload: Workload<'a>,
    proxy: Option<ServiceProxy>,
}

impl<'a> Webhook<'a> {
    /// Runs every replica of the Deployment the release made, behind its Service.
    fn run(plane: &'a ControlPlane) -> Webhook<'a> {
        let mut workload = Workload::deployment(plane, NS, "mcs-policy");
        assert_eq!(workload.replica_count(), 2, "two webhook replicas");
        let proxy = workload.service("mcs-policy");
        workload.start_all();
        for i in 0..workload.replica_count() {
            workload.wait_ready(i);
        }
        Webhook {
            workload,
            proxy: Some(proxy),
        }
    }

    /// After a `helm upgrade` that changed the Deployment: the rollout, and the Service's
    /// ClusterIP again.
    fn roll_out(&mut self) {
        self.proxy = None;
        self.workload.roll_out();
        if self.workload.replica_count() > 0 {
            self.proxy = Some(self.workload.service("mcs-policy"));
        }
    }
}

fn mcs(name: &str) -> Value {
    json!({
        "apiVersion": "networking.karmada.io/v1alpha1",
        "kind": "MultiClusterService",
        "metadata": {"name": name, "namespace": APP_NS},
        "spec": {"types": ["CrossCluster"], "ports": [{"name": "http", "port": 80}],
                 "providerClusters": [{"name": "member1"}], "consumerClusters": [{"name": "member2"}]},
    })
}

/// `kubectl create` of MultiClusterService `name`: the object as stored, or the error.
fn create_mcs(plane: &ControlPlane, name: &str) -> Result<Value, String> {
    let out = plane.kubectl_output(
        &["create", "-f", "-", "-o", "json"],
        Some(&mcs(name).to_string()),
    );
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn delete_mcs(plane: &ControlPlane, name: &str) {
    plane.kubectl(&[
        "delete",
        "multiclusterservice",
        name,
        "-n",
        APP_NS,
        "--ignore-not-found",
    ]);
}

/// Waits (60 s at most) until the API server, calling the webhook, refuses an MCS whose name is
/// not a DNS-1035 label with our validation message (Karmada's, byte for byte).
fn refused_by_the_webhook(plane: &ControlPlane, step: &str) {
    wait_for(
        &format!("{step}: the webhook refuses web.bad"),
        Duration::from_secs(60),
        || match create_mcs(plane, "web.bad") {
            Ok(_) => {
                // No configuration (yet): admitted without a call. Try again.
                delete_mcs(plane, "web.bad");
                Err("admitted without the webhook".into())
            }
            Err(e)
                if e.contains(
                    "admission webhook \"multiclusterservice.karmada.io\" denied the request",
                ) && e.contains(
                    "metadata.name: Invalid value: \"web.bad\": a DNS-1035 label must consist of \
                     lower case alphanumeric characters or '-'",
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        },
    );
}

/// Creates a valid MCS (60 s at most for the webhook to answer) and checks the mutating
/// webhook gave it its permanent id (docs/defaulting.md: a version-5 UUID).
fn admitted_and_defaulted(plane: &ControlPlane, step: &str, name: &str) {
    let created = wait_for(
        &format!("{step}: {name} admitted"),
        Duration::from_secs(60),
        || create_mcs(plane, name),
    );
    let id = created["metadata"]["labels"]["multiclusterservice.karmada.io/permanent-id"]
        .as_str()
        .unwrap_or_else(|| panic!("{step}: no permanent-id label: {created}"));
    let groups: Vec<usize> = id.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12], "{step}: a UUID: {id}");
    assert_eq!(&id[14..15], "5", "{step}: version 5: {id}");
}

/// An MCS write with no webhook involved succeeds (nothing fails closed).
fn written_without_a_webhook(plane: &ControlPlane, step: &str, name: &str) {
    let created = create_mcs(plane, name)
        .unwrap_or_else(|e| panic!("{step}: an MCS write with no webhook running: {e}"));
    assert!(
        created["metadata"]["labels"]["multiclusterservice.karmada.io/permanent-id"].is_null(),
        "{step}: no webhook defaulted it"
    );
}

fn configuration(plane: &ControlPlane, kind: &str) -> Option<Value> {
    plane.get(kind, "", "mcs-policy")
}

/// Waits (60 s) until both configurations exist with a caBundle (equal to `ca` when given).
fn configured(plane: &ControlPlane, step: &str, ca: Option<&str>) {
    use base64::Engine as _;
    for kind in CONFIGURATIONS {
        wait_for(
            &format!("{step}: {kind} with its caBundle"),
            Duration::from_secs(60),
            || {
                let c = configuration(plane, kind).ok_or("absent")?;
                let bundle = c["webhooks"][0]["clientConfig"]["caBundle"]
                    .as_str()
                    .unwrap_or_default();
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(bundle)
                    .map_err(|e| e.to_string())?;
                let pem = String::from_utf8(pem).map_err(|e| e.to_string())?;
                match ca {
                    _ if pem.is_empty() => Err("no caBundle".to_string()),
                    Some(ca) if pem.trim() != ca.trim() => Err(format!("caBundle {pem}")),
                    _ => Ok(()),
                }
            },
        );
    }
}

/// Both configurations belong to the release (the chart renders them in every mode).
fn owned_by_the_release(plane: &ControlPlane, step: &str) {
    for kind in CONFIGURATIONS {
        let c = configuration(plane, kind).unwrap_or_else(|| panic!("{step}: {kind} exists"));
        let annotations = &c["metadata"]["annotations"];
        assert_eq!(
            (
                &annotations["meta.helm.sh/release-name"],
                &annotations["meta.helm.sh/release-namespace"],
                &c["metadata"]["labels"]["app.kubernetes.io/managed-by"]
            ),
            (&json!("mcs-policy"), &json!(NS), &json!("Helm")),
            "{step}: {kind} is the chart's"
        );
    }
}

fn gone(plane: &ControlPlane, step: &str) {
    for kind in CONFIGURATIONS {
        wait_for(
            &format!("{step}: {kind} gone"),
            Duration::from_secs(30),
            || match configuration(plane, kind) {
                None => Ok(()),
                Some(_) => Err("still there".to_string()),
            },
        );
    }
}

#[test]
fn the_api_server_calls_the_installed_webhook_through_its_service() {
    let plane = cluster("install");
    let _logs = plane.logs_on_panic();
    install(&plane, &[]);
    let webhook = Webhook::run(&plane);
    configured(&plane, "installed", None);
    refused_by_the_webhook(&plane, "installed");
    admitted_and_defaulted(&plane, "installed", "web");
    let proxy = webhook.proxy.as_ref().unwrap();
    assert!(
        proxy.connections() > 0,
        "the API server reached the webhook through the Service's ClusterIP {}",
        proxy.address
    );
    owned_by_the_release(&plane, "installed");
}

#[test]
fn upgrades_switch_modes_and_uninstall_leaves_no_configuration() {
    let plane = cluster("upgrade");
    let _logs = plane.logs_on_panic();

    // 1. Self-managed, two replicas.
    install(&plane, &[]);
    let mut webhook = Webhook::run(&plane);
    configured(&plane, "self-managed", None);
    refused_by_the_webhook(&plane, "self-managed");

    // 2. The webhook off: its configurations go with it, and writes need no server.
    upgrade(&plane, &["--set", "webhook.enabled=false"]);
    gone(&plane, "webhook.enabled=false");
    webhook.roll_out();
    assert_eq!(webhook.workload.replica_count(), 0, "Deployment removed");
    written_without_a_webhook(&plane, "webhook.enabled=false", "while-disabled");

    // 3. On again, self-managed.
    upgrade(&plane, &["--set", "webhook.enabled=true"]);
    let mut webhook = Webhook::run(&plane);
    configured(&plane, "enabled again", None);
    refused_by_the_webhook(&plane, "enabled again");
    admitted_and_defaulted(&plane, "enabled again", "web-enabled-again");

    // 4. A Secret of ours and its CA: the same configurations, now with our caBundle.
    let ca = Ca::new("our-ca");
    let serving = ca.serving(&[&format!("mcs-policy.{NS}.svc")]);
    let dir = plane.dir.join("our-certificate");
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in [
        ("ca.crt", ca.pem()),
        ("tls.crt", serving.cert_pem.clone()),
        ("tls.key", serving.key_pem.clone()),
    ] {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let path = |f: &str| dir.join(f).display().to_string();
    plane.kubectl(&[
        "delete",
        "secret",
        "mcs-policy-tls",
        "-n",
        NS,
        "--ignore-not-found",
    ]);
    plane.kubectl(&[
        "create",
        "secret",
        "tls",
        "mcs-policy-tls",
        "-n",
        NS,
        "--cert",
        &path("tls.crt"),
        "--key",
        &path("tls.key"),
    ]);
    // --force-conflicts as docs/deploying.md says: Helm 4 upgrades with server-side apply, and
    // the caBundle the self-managed server patched in is the field manager mcs-policy's.
    upgrade(
        &plane,
        &[
            "--force-conflicts",
            "--set",
            "webhook.certificate.mode=secret",
            "--set-file",
            &format!("webhook.certificate.caBundle={}", path("ca.crt")),
        ],
    );
    webhook.roll_out();
    configured(&plane, "mode secret", Some(&ca.pem()));
    owned_by_the_release(&plane, "mode secret");
    refused_by_the_webhook(&plane, "mode secret");
    admitted_and_defaulted(&plane, "mode secret", "web-secret");

    // 5. Self-managed again: the server's CA patched in.
    upgrade(
        &plane,
        &[
            "--set",
            "webhook.certificate.mode=self-managed",
            "--set",
            "webhook.certificate.caBundle=",
        ],
    );
    webhook.roll_out();
    configured(&plane, "self-managed again", None);
    refused_by_the_webhook(&plane, "self-managed again");
    admitted_and_defaulted(&plane, "self-managed again", "web-self-managed-again");

    // 6. Uninstall: the configurations go (no hook Job: none would run here, and none is
    // needed), and writes need no server.
    let manifest = plane.helm(&["get", "manifest", "mcs-policy", "-n", NS]);
    plane.helm(&["uninstall", "mcs-policy", "-n", NS, "--timeout", "60s"]);
    gone(&plane, "uninstalled");
    webhook.roll_out();
    written_without_a_webhook(&plane, "uninstalled", "after-uninstall");

    // 7. A pod restarting during the uninstall, while its ServiceAccount and rights still exist
    // (helm deletes the configurations before the RBAC objects): it must not bring the
    // configurations back.
    let identity: Vec<Value> = documents(&manifest)
        .into_iter()
        .filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some(
                    "ServiceAccount"
                        | "Role"
                        | "RoleBinding"
                        | "ClusterRole"
                        | "ClusterRoleBinding"
                )
            )
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": identity});
    plane.kubectl_in(&["apply", "-f", "-"], &list.to_string());
    webhook.workload.start(0);
    // It serves (so it would patch a configuration if there were one), and for 15 s after
    // (its retries for a missing configuration come at 1, 2, 4, 8 s) makes none.
    webhook.workload.wait_ready(0);
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        for kind in CONFIGURATIONS {
            assert!(
                configuration(&plane, kind).is_none(),
                "a webhook replica restarted after uninstall made the {kind} again ({:?} after \
                 its start):\n{}",
                start.elapsed(),
                webhook.workload.logs()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    written_without_a_webhook(&plane, "replica restarted after uninstall", "after-restart");
    webhook.workload.stop_all();
}

fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}
