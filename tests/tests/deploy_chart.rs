//! The Helm chart policies/chart/mcs-policy, with the first `helm` on PATH (scripts/test.sh puts
//! scripts/k8s-tools.sh's helm v4 first): `helm lint --strict`, then a real `helm template` of
//! the main value combinations, each output checked as deploy_kustomize.rs checks the
//! kustomizations (deploy_common: valid objects, RBAC complete, arguments accepted by
//! `mcs-policy`'s own parser, mounts, probes, restricted Pod Security), the webhook
//! configurations the chart renders (in every certificate mode: the chart owns them) against what
//! `mcs-policy manifests` prints, the self-managed mode's rules, every value rendered where it
//! belongs and refused by values.schema.json when malformed, the hub and member releases side by
//! side in one cluster, and scripts/karmada-mcs-check.sh on sample Deployments of Karmada.

#[allow(dead_code)] // each test file uses its part
mod deploy_common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

use deploy_common::{
    check_all, container, expanded_args, flag, ids, object, of_kind, parsed, pod, want,
};
use mcs_policy::config::Command as McsCommand;
use serde_json::{Value, json};
use tests::{binary, workspace_root};

const CHART: &str = "policies/chart/mcs-policy";

fn helm() -> String {
    static CHECKED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| deploy_common::tool("helm", &["version", "--short"]))
        .clone()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"))
}

/// `helm template` of the chart into `namespace` with `--set`/`--set-file` flags.
fn render(namespace: &str, values: &[&str]) -> Vec<Value> {
    let mut args = vec!["template", "mcs-policy", CHART, "--namespace", namespace];
    args.extend_from_slice(values);
    let out = run(&helm(), &args);
    assert!(
        out.status.success(),
        "helm {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    deploy_common::documents(&String::from_utf8(out.stdout).unwrap(), "helm template")
}

/// A CA certificate file, PEM.
/// A fresh CA certificate in a file of its own: one file per call, because tests run in parallel
/// threads of one process and each reads its CA back after `helm template` (a shared path let
/// one test's certificate overwrite another's in between).
fn ca_file() -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("mcs-policy-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("ca-{call}.crt"));
    let pem = rcgen::generate_simple_self_signed(vec!["mcs-policy".into()])
        .unwrap()
        .cert
        .pem();
    std::fs::write(&path, pem).unwrap();
    path
}

fn set_file_ca(ca: &std::path::Path) -> String {
    format!("webhook.certificate.caBundle={}", ca.display())
}

const NS: &str = "mcs-policy-system";
const WEBHOOK: [(&str, &str, &str); 4] = [
    ("ServiceAccount", NS, "mcs-policy"),
    ("Deployment", NS, "mcs-policy"),
    ("Service", NS, "mcs-policy"),
    ("PodDisruptionBudget", NS, "mcs-policy"),
];
const SELF_MANAGED: [(&str, &str, &str); 4] = [
    ("Role", NS, "mcs-policy-certificate"),
    ("RoleBinding", NS, "mcs-policy-certificate"),
    ("ClusterRole", "", "mcs-policy-webhook-configurations"),
    (
        "ClusterRoleBinding",
        "",
        "mcs-policy-webhook-configurations",
    ),
];
const SYNC: [(&str, &str, &str); 8] = [
    ("ServiceAccount", NS, "mcs-policy-sync"),
    ("ClusterRole", "", "mcs-policy-sync"),
    ("ClusterRoleBinding", "", "mcs-policy-sync"),
    ("Role", NS, "mcs-policy-sync-leader-election"),
    ("RoleBinding", NS, "mcs-policy-sync-leader-election"),
    ("Deployment", NS, "mcs-policy-sync"),
    ("PodDisruptionBudget", NS, "mcs-policy-sync"),
    ("Service", NS, "mcs-policy-sync-metrics"),
];
/// The clusterset.local DNS server of a member release (dns.enabled, on by default).
const DNS: [(&str, &str, &str); 7] = [
    ("ServiceAccount", NS, "mcs-policy-dns"),
    ("ClusterRole", "", "mcs-policy-dns"),
    ("ClusterRoleBinding", "", "mcs-policy-dns"),
    ("Deployment", NS, "mcs-policy-dns"),
    ("Service", NS, "mcs-policy-dns"),
    ("Service", NS, "mcs-policy-dns-metrics"),
    ("PodDisruptionBudget", NS, "mcs-policy-dns"),
];
const CONFIGURATIONS: [(&str, &str, &str); 2] = [
    ("ValidatingWebhookConfiguration", "", "mcs-policy"),
    ("MutatingWebhookConfiguration", "", "mcs-policy"),
];

#[test]
fn the_chart_passes_helm_lint_strict() {
    let out = run(&helm(), &["lint", "--strict", CHART]);
    assert!(
        out.status.success(),
        "helm lint --strict:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn standalone_with_a_self_managed_certificate() {
    let objects = render(NS, &[]);
    let mut expected: Vec<_> = WEBHOOK.to_vec();
    expected.extend(SELF_MANAGED);
    expected.extend(SYNC);
    // The configurations are the release's in this mode too (no hook, no Job).
    expected.extend(CONFIGURATIONS);
    assert_eq!(ids("self-managed", &objects), want(&expected));
    check_all("self-managed", &objects, &[NS]);

    let d = object(&objects, "Deployment", "mcs-policy");
    let args = expanded_args(d);
    assert!(matches!(parsed("serve", d).1, McsCommand::Serve(_)));
    assert_eq!(flag(&args, "--certificate-secret"), Some("mcs-policy-tls"));
    assert_eq!(flag(&args, "--service"), Some("mcs-policy"));
    assert_eq!(flag(&args, "--webhook-configuration"), Some("mcs-policy"));
    assert_eq!(flag(&args, "--webhook-url"), None);
    assert_eq!(flag(&args, "--tls-cert"), None);
    assert_eq!(pod(d)["automountServiceAccountToken"], true, "its token");
    let env = &container(d)["env"][0];
    assert_eq!(env["name"], "POD_NAMESPACE");
    assert_eq!(
        env["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );

    // Least privilege: the Secret by name (create cannot be), the configurations by name.
    let role = object(&objects, "Role", "mcs-policy-certificate");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["mcs-policy-tls"],
             "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        ])
    );
    let resources = json!([
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations"
    ]);
    // The configurations are the chart's: the server reads and patches (its CA into caBundle)
    // those two, by name, and never creates or deletes one.
    let cluster_role = object(&objects, "ClusterRole", "mcs-policy-webhook-configurations");
    assert_eq!(
        cluster_role["rules"],
        json!([
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": resources,
             "resourceNames": ["mcs-policy"], "verbs": ["get", "patch"]},
        ])
    );
    for binding in [
        object(&objects, "RoleBinding", "mcs-policy-certificate"),
        object(
            &objects,
            "ClusterRoleBinding",
            "mcs-policy-webhook-configurations",
        ),
    ] {
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "mcs-policy", "namespace": NS}])
        );
    }
    // What `mcs-policy manifests` prints, without the caBundle the server patches in.
    self_managed_configurations(&objects, &["--namespace", NS, "--service", "mcs-policy"]);
    // Helm's labels by default; none with helmLabels=false (the kustomize folders).
    assert_eq!(
        d["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    let plain = render(NS, &["--set", "helmLabels=false"]);
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("helm.sh/chart") && !text.contains("\"Helm\""));
}

/// Self-managed mode: the chart renders both configurations with no caBundle (the server patches
/// its CA in), otherwise what `mcs-policy manifests` prints with `where_to` and no `--ca-bundle`;
/// no hook, no Job.
fn self_managed_configurations(objects: &[Value], where_to: &[&str]) {
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let config = object(objects, kind, "mcs-policy");
        assert!(
            config["metadata"].get("annotations").is_none(),
            "{kind}: no cert-manager injection"
        );
        for webhook in config["webhooks"].as_array().unwrap() {
            assert!(
                webhook["clientConfig"].get("caBundle").is_none(),
                "{kind}: the server patches its CA in"
            );
        }
    }
    // `manifests` without --ca-bundle prints them as the self-managed server wants them: no
    // caBundle (kept, so one would show).
    let mut printed = manifests_webhooks(where_to, true);
    if !where_to.contains(&"--namespace") {
        // A karmada-apiserver's: without the ServiceExport webhook by default.
        drop_service_export_webhook(&mut printed);
    }
    assert_eq!(chart_webhooks(objects), printed);
    assert!(of_kind(objects, "Job").next().is_none(), "no hook");
    for o in objects {
        assert!(
            o["metadata"]["annotations"].get("helm.sh/hook").is_none(),
            "no Helm hook: {}",
            o["metadata"]["name"]
        );
    }
}

/// `webhooks` of the ValidatingWebhookConfiguration (the first) without the ServiceExport one.
fn drop_service_export_webhook(webhooks: &mut [Value]) {
    webhooks[0]
        .as_array_mut()
        .unwrap()
        .retain(|w| w["name"] != "serviceexport.multicluster.x-k8s.io");
}

/// The `webhooks` of `mcs-policy manifests` with these flags, with or without the caBundle.
fn manifests_webhooks(args: &[&str], keep_ca: bool) -> Vec<Value> {
    let out = Command::new(binary("mcs-policy"))
        .arg("manifests")
        .args(args)
        .output()
        .expect("mcs-policy runs");
    assert!(
        out.status.success(),
        "manifests: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    deploy_common::documents(&String::from_utf8(out.stdout).unwrap(), "manifests")
        .into_iter()
        .map(|mut doc| {
            if !keep_ca {
                for webhook in doc["webhooks"].as_array_mut().unwrap() {
                    webhook["clientConfig"]
                        .as_object_mut()
                        .unwrap()
                        .remove("caBundle");
                }
            }
            assert!(
                doc["kind"]
                    .as_str()
                    .unwrap()
                    .ends_with("WebhookConfiguration")
            );
            doc["webhooks"].clone()
        })
        .collect()
}

fn chart_webhooks(objects: &[Value]) -> Vec<Value> {
    [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]
    .iter()
    .map(|kind| object(objects, kind, "mcs-policy")["webhooks"].clone())
    .collect()
}

#[test]
fn standalone_with_cert_manager() {
    let objects = render(NS, &["--set", "webhook.certificate.mode=cert-manager"]);
    let mut expected: Vec<_> = WEBHOOK.to_vec();
    expected.extend(SYNC);
    expected.extend(CONFIGURATIONS);
    expected.extend([
        ("Issuer", NS, "mcs-policy-selfsigned"),
        ("Issuer", NS, "mcs-policy-ca"),
        ("Certificate", NS, "mcs-policy-ca"),
        ("Certificate", NS, "mcs-policy"),
    ]);
    assert_eq!(ids("cert-manager", &objects), want(&expected));
    check_all("cert-manager", &objects, &[NS]);
    let d = object(&objects, "Deployment", "mcs-policy");
    assert_eq!(
        pod(d)["automountServiceAccountToken"],
        false,
        "no API access"
    );
    let args = expanded_args(d);
    assert_eq!(
        flag(&args, "--tls-cert"),
        Some("/etc/mcs-policy/tls/tls.crt")
    );
    let cert = object(&objects, "Certificate", "mcs-policy");
    assert_eq!(cert["spec"]["secretName"], "mcs-policy-tls");
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        assert_eq!(
            object(&objects, kind, "mcs-policy")["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            "mcs-policy-system/mcs-policy"
        );
    }
    let ca = ca_file();
    let ca = ca.to_str().unwrap();
    let printed = manifests_webhooks(
        &[
            "--namespace",
            NS,
            "--service",
            "mcs-policy",
            "--ca-bundle",
            ca,
        ],
        false,
    );
    assert_eq!(chart_webhooks(&objects), printed);
    assert!(of_kind(&objects, "Job").next().is_none(), "no hook");
}

#[test]
fn standalone_with_a_secret_of_yours() {
    let ca = ca_file();
    let set = set_file_ca(&ca);
    let objects = render(
        NS,
        &[
            "--set",
            "webhook.certificate.mode=secret",
            "--set-file",
            &set,
        ],
    );
    let mut expected: Vec<_> = WEBHOOK.to_vec();
    expected.extend(SYNC);
    expected.extend(CONFIGURATIONS);
    assert_eq!(ids("secret", &objects), want(&expected));
    check_all("secret", &objects, &[NS]);
    let printed = manifests_webhooks(
        &[
            "--namespace",
            NS,
            "--service",
            "mcs-policy",
            "--ca-bundle",
            ca.to_str().unwrap(),
        ],
        true,
    );
    assert_eq!(chart_webhooks(&objects), printed);
    // Without the CA the chart refuses.
    let out = run(
        &helm(),
        &[
            "template",
            "x",
            CHART,
            "--set",
            "webhook.certificate.mode=secret",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("caBundle"));
}

#[test]
fn karmada_host_cluster() {
    let k = "karmada-system";
    let objects = render(k, &["--set", "karmada.enabled=true"]);
    let expected = [
        ("ServiceAccount", k, "mcs-policy"),
        ("Deployment", k, "mcs-policy"),
        ("Service", k, "mcs-policy"),
        ("PodDisruptionBudget", k, "mcs-policy"),
        ("Role", k, "mcs-policy-certificate"),
        ("RoleBinding", k, "mcs-policy-certificate"),
        ("ServiceAccount", k, "mcs-policy-sync"),
        ("Deployment", k, "mcs-policy-sync"),
        ("PodDisruptionBudget", k, "mcs-policy-sync"),
        ("Service", k, "mcs-policy-sync-metrics"),
    ];
    // No ClusterRole, no configurations: those live in the karmada-apiserver (the target
    // karmada-apiserver release renders them); no hub RBAC here.
    assert_eq!(ids("karmada", &objects), want(&expected));
    check_all("karmada", &objects, &[k]);
    let d = object(&objects, "Deployment", "mcs-policy");
    let args = expanded_args(d);
    assert_eq!(
        flag(&args, "--webhook-url"),
        Some("https://mcs-policy.karmada-system.svc:443")
    );
    // Its own least-privilege identity in the karmada-apiserver, not Karmada's administrator
    // kubeconfig.
    let webhook_kubeconfig = "/etc/mcs-policy/karmada/kubeconfig";
    assert_eq!(
        flag(&args, "--webhook-kubeconfig"),
        Some(webhook_kubeconfig)
    );
    let (_, volume, file) = deploy_common::mount_of(d, webhook_kubeconfig);
    assert_eq!(
        volume["secret"]["secretName"],
        "mcs-policy-webhook-kubeconfig"
    );
    assert_eq!(file, "kubeconfig");
    let text = serde_json::to_string(pod(d)).unwrap();
    assert!(
        !text.contains("karmada-kubeconfig"),
        "the webhook does not mount Karmada's admin kubeconfig"
    );
    assert!(of_kind(&objects, "Job").next().is_none(), "no hook");
    // Another Secret for it.
    let other = render(
        k,
        &[
            "--set",
            "karmada.enabled=true",
            "--set",
            "karmada.webhookKubeconfigSecret.name=mine",
            "--set",
            "karmada.webhookKubeconfigSecret.key=config",
            "--set",
            "sync.enabled=false",
        ],
    );
    check_all("karmada webhook kubeconfig", &other, &[k]);
    let d = object(&other, "Deployment", "mcs-policy");
    let path = "/etc/mcs-policy/karmada/config";
    assert_eq!(flag(&expanded_args(d), "--webhook-kubeconfig"), Some(path));
    let (_, volume, file) = deploy_common::mount_of(d, path);
    assert_eq!(volume["secret"]["secretName"], "mine");
    assert_eq!(file, "config");

    let sync = object(&objects, "Deployment", "mcs-policy-sync");
    let args = expanded_args(sync);
    assert!(args.contains(&"--karmada-clusters".to_string()));
    assert_eq!(flag(&args, "--kubeconfig"), Some("/etc/kubeconfig"));
    assert_eq!(flag(&args, "--lease-namespace"), Some("mcs-policy-system"));
    assert_eq!(pod(sync)["automountServiceAccountToken"], false);

    // karmadactl init's Secret.
    let objects = render(
        k,
        &[
            "--set",
            "karmada.enabled=true",
            "--set",
            "karmada.kubeconfigSecret.name=karmada-controller-manager-config",
            "--set",
            "karmada.kubeconfigSecret.key=karmada.config",
        ],
    );
    check_all("karmadactl", &objects, &[k]);
    let sync = object(&objects, "Deployment", "mcs-policy-sync");
    let (_, volume, file) = deploy_common::mount_of(sync, "/etc/kubeconfig");
    assert_eq!(
        volume["secret"]["secretName"],
        "karmada-controller-manager-config"
    );
    assert_eq!(file, "karmada.config");
}

#[test]
fn target_karmada_apiserver() {
    let ca = ca_file();
    let set = set_file_ca(&ca);
    let objects = render(
        NS,
        &[
            "--set",
            "target=karmada-apiserver",
            "--set",
            "crd.install=true",
            "--set",
            "webhook.certificate.mode=cert-manager",
            "--set-file",
            &set,
        ],
    );
    let mut expected: Vec<_> = SYNC[..5].to_vec();
    expected.extend(CONFIGURATIONS);
    expected.extend([
        // Made when missing: `karmadactl init` and karmada-operator leave it to the first join.
        ("Namespace", "", "karmada-cluster"),
        ("ClusterRole", "", "mcs-policy-sync-karmada-clusters"),
        ("ClusterRoleBinding", "", "mcs-policy-sync-karmada-clusters"),
        (
            "Role",
            "karmada-cluster",
            "mcs-policy-sync-cluster-credentials",
        ),
        (
            "RoleBinding",
            "karmada-cluster",
            "mcs-policy-sync-cluster-credentials",
        ),
        (
            "CustomResourceDefinition",
            "",
            "multiclusterservices.networking.karmada.io",
        ),
    ]);
    assert_eq!(ids("karmada-apiserver", &objects), want(&expected));
    check_all("karmada-apiserver", &objects, &[NS]);
    let mut printed = manifests_webhooks(
        &[
            "--url",
            "https://mcs-policy.karmada-system.svc:443",
            "--ca-bundle",
            ca.to_str().unwrap(),
        ],
        true,
    );
    // ServiceExports are Karmada's in a karmada-apiserver: no ServiceExport webhook by default.
    drop_service_export_webhook(&mut printed);
    assert_eq!(chart_webhooks(&objects), printed);
    let namespace = object(&objects, "Namespace", "karmada-cluster");
    assert_eq!(
        namespace["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
        "Karmada's member credentials live in it"
    );
    // Off: the namespace is Karmada's to make.
    let without = render(
        NS,
        &[
            "--set",
            "target=karmada-apiserver",
            "--set",
            "webhook.enabled=false",
            "--set",
            "karmada.createClusterSecretsNamespace=false",
        ],
    );
    assert_eq!(of_kind(&without, "Namespace").count(), 0);
    assert_eq!(
        of_kind(&without, "ValidatingWebhookConfiguration").count(),
        0
    );
    check_all(
        "karmada-apiserver without",
        &without,
        &[NS, "karmada-cluster"],
    );
    let crd = object(
        &objects,
        "CustomResourceDefinition",
        "multiclusterservices.networking.karmada.io",
    );
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    // Its namespace is the one the host release's Lease is in.
    let out = run(
        &helm(),
        &[
            "template",
            "x",
            CHART,
            "-n",
            "elsewhere",
            "--set",
            "target=karmada-apiserver",
        ],
    );
    assert!(!out.status.success(), "another namespace is refused");
}

#[test]
fn target_karmada_apiserver_self_managed() {
    let objects = render(NS, &["--set", "target=karmada-apiserver"]);
    let mut expected: Vec<_> = SYNC[..5].to_vec();
    expected.extend(CONFIGURATIONS);
    expected.extend([
        ("Namespace", "", "karmada-cluster"),
        ("ClusterRole", "", "mcs-policy-sync-karmada-clusters"),
        ("ClusterRoleBinding", "", "mcs-policy-sync-karmada-clusters"),
        (
            "Role",
            "karmada-cluster",
            "mcs-policy-sync-cluster-credentials",
        ),
        (
            "RoleBinding",
            "karmada-cluster",
            "mcs-policy-sync-cluster-credentials",
        ),
        // The webhook server's least-privilege identity there, and its token.
        ("ServiceAccount", NS, "mcs-policy"),
        ("Secret", NS, "mcs-policy-token"),
        ("ClusterRole", "", "mcs-policy-webhook-configurations"),
        (
            "ClusterRoleBinding",
            "",
            "mcs-policy-webhook-configurations",
        ),
    ]);
    assert_eq!(
        ids("karmada-apiserver self-managed", &objects),
        want(&expected)
    );
    check_all("karmada-apiserver self-managed", &objects, &[NS]);
    // The URL of the Service in the host cluster, no caBundle (the server patches it in).
    self_managed_configurations(
        &objects,
        &["--url", "https://mcs-policy.karmada-system.svc:443"],
    );
    let role = object(&objects, "ClusterRole", "mcs-policy-webhook-configurations");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
            "resourceNames": ["mcs-policy"], "verbs": ["get", "patch"]}])
    );
    let binding = object(
        &objects,
        "ClusterRoleBinding",
        "mcs-policy-webhook-configurations",
    );
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "mcs-policy", "namespace": NS}])
    );
    let token = object(&objects, "Secret", "mcs-policy-token");
    assert_eq!(token["type"], "kubernetes.io/service-account-token");
    assert_eq!(
        token["metadata"]["annotations"]["kubernetes.io/service-account.name"],
        "mcs-policy"
    );
    // The ServiceExport webhook on request.
    let with = render(
        NS,
        &[
            "--set",
            "target=karmada-apiserver",
            "--set",
            "webhook.serviceExports.enabled=true",
        ],
    );
    let hooks = chart_webhooks(&with);
    assert!(
        hooks[0]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "serviceexport.multicluster.x-k8s.io")
    );
}

#[test]
fn the_service_export_webhook_is_a_value() {
    let names = |objects: &[Value]| -> Vec<String> {
        object(objects, "ValidatingWebhookConfiguration", "mcs-policy")["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap().to_string())
            .collect()
    };
    let both = [
        "multiclusterservice.karmada.io".to_string(),
        "serviceexport.multicluster.x-k8s.io".to_string(),
    ];
    assert_eq!(names(&render(NS, &[])), both, "on by default in a cluster");
    let off = render(NS, &["--set", "webhook.serviceExports.enabled=false"]);
    assert_eq!(names(&off), both[..1]);
    assert_eq!(
        names(&render(NS, &["--set", "target=karmada-apiserver"])),
        both[..1],
        "off by default in a karmada-apiserver"
    );
    // The mutating one never had it.
    let mutating = object(&off, "MutatingWebhookConfiguration", "mcs-policy");
    assert_eq!(mutating["webhooks"].as_array().unwrap().len(), 1);
}

const UPSTREAM_CRDS: [(&str, &str); 3] = [
    (
        "serviceexports.multicluster.x-k8s.io",
        "multicluster.x-k8s.io_serviceexports.yaml",
    ),
    (
        "serviceimports.multicluster.x-k8s.io",
        "multicluster.x-k8s.io_serviceimports.yaml",
    ),
    (
        "clusterproperties.about.k8s.io",
        "about.k8s.io_clusterproperties.yaml",
    ),
];

/// The member ClusterRole's rules for the upstream Multi-Cluster Services API, as
/// `(apiGroup, resource, verbs)`: exactly what the controller uses (sync_member_rbac.rs), in
/// order.
fn upstream_rules() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    vec![
        // The derived Services, server-side applied.
        ("", "services", vec!["patch"]),
        (
            "multicluster.x-k8s.io",
            "serviceexports",
            vec!["list", "watch"],
        ),
        (
            "multicluster.x-k8s.io",
            "serviceexports/status",
            vec!["patch"],
        ),
        (
            "multicluster.x-k8s.io",
            "serviceimports",
            vec!["list", "watch", "create", "patch", "delete"],
        ),
        (
            "multicluster.x-k8s.io",
            "serviceimports/status",
            vec!["patch"],
        ),
        ("about.k8s.io", "clusterproperties", vec!["list", "watch"]),
        // Those CRDs, watched by name while the member does not serve the API.
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            vec!["list", "watch"],
        ),
    ]
}

/// The rules of the member ClusterRole, as `(apiGroup, resource, verbs)`, each rule one group
/// and one resource.
fn member_rules(objects: &[Value]) -> Vec<(String, String, Vec<String>)> {
    let role = object(objects, "ClusterRole", "mcs-policy-member");
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| {
            let one = |key: &str| {
                let values = deploy_common::strings(&rule[key]);
                assert_eq!(values.len(), 1, "one {key} per rule: {rule}");
                values[0].to_string()
            };
            let verbs = deploy_common::strings(&rule["verbs"])
                .into_iter()
                .map(String::from)
                .collect();
            (one("apiGroups"), one("resources"), verbs)
        })
        .collect()
}

/// The member rules the controller had before the upstream API: EndpointSlices, Services,
/// Namespaces.
fn karmada_member_rules() -> Vec<(String, String, Vec<String>)> {
    [
        (
            "discovery.k8s.io",
            "endpointslices",
            &["list", "watch", "create", "patch", "delete"][..],
        ),
        (
            "",
            "services",
            &["get", "list", "watch", "create", "update", "delete"][..],
        ),
        ("", "namespaces", &["create"][..]),
    ]
    .iter()
    .map(|(g, r, v)| {
        (
            g.to_string(),
            r.to_string(),
            v.iter().map(|v| v.to_string()).collect(),
        )
    })
    .collect()
}

#[test]
fn target_member() {
    let objects = render(
        NS,
        &["--set", "target=member", "--set", "namespace.create=true"],
    );
    let mut expected = vec![
        ("Namespace", "", NS),
        ("ServiceAccount", NS, "mcs-policy-member"),
        ("ClusterRole", "", "mcs-policy-member"),
        ("ClusterRoleBinding", "", "mcs-policy-member"),
        ("Secret", NS, "mcs-policy-member-token"),
    ];
    expected.extend(DNS);
    expected.extend(
        UPSTREAM_CRDS
            .iter()
            .map(|(name, _)| ("CustomResourceDefinition", "", *name)),
    );
    assert_eq!(ids("member", &objects), want(&expected));
    check_all("member", &objects, &[]);

    // The CRDs are policies/crds/'s, kept on uninstall.
    for (name, file) in UPSTREAM_CRDS {
        let crd = object(&objects, "CustomResourceDefinition", name);
        assert_eq!(
            crd["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
            "{name}"
        );
        let shipped = &deploy_common::documents(
            &std::fs::read_to_string(workspace_root().join("policies/crds").join(file)).unwrap(),
            file,
        )[0];
        assert_eq!(crd["spec"], shipped["spec"], "{name}");
        assert_eq!(
            crd["metadata"]["labels"], shipped["metadata"]["labels"],
            "{name}"
        );
    }
    // The rules: today's, then exactly the upstream API's.
    let mut rules = karmada_member_rules();
    rules.extend(upstream_rules().into_iter().map(|(g, r, v)| {
        (
            g.to_string(),
            r.to_string(),
            v.into_iter().map(String::from).collect(),
        )
    }));
    assert_eq!(member_rules(&objects), rules);
}

/// The DNS server of a member release: `mcs-policy dns` with the zone, TTL and ports of the
/// values, port 53 UDP and TCP in front of it, rules to read ServiceImports and EndpointSlices
/// and nothing else; the scheduling values; off with dns.enabled=false and in other targets.
#[test]
fn target_member_dns_server() {
    let objects = render(
        NS,
        &[
            "--set",
            "target=member",
            "--set",
            "dns.zone=mcs.example",
            "--set",
            "dns.ttl=30",
            "--set",
            "dns.port=10053",
            "--set",
            "dns.clusterIP=10.96.0.53",
            "--set",
            "dns.nodeSelector.dns=yes",
            "--set",
            "nodeSelector.everyone=yes",
        ],
    );
    check_all("member dns", &objects, &[NS]);
    let deployment = object(&objects, "Deployment", "mcs-policy-dns");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let (args, command) = parsed("member dns", deployment);
    let McsCommand::Dns(dns) = command else {
        panic!("`mcs-policy dns`: {args:?}");
    };
    assert_eq!(dns.zone, "mcs.example");
    assert_eq!(dns.ttl, 30);
    assert_eq!(dns.listen.to_string(), ":10053");
    assert_eq!(dns.kubeconfig, None, "the member is read in-cluster");
    let spec = pod(deployment);
    assert_eq!(spec["serviceAccountName"], "mcs-policy-dns");
    assert_eq!(spec["automountServiceAccountToken"], true);
    assert_eq!(spec["nodeSelector"], json!({"dns": "yes"}));
    let ports = &container(deployment)["ports"];
    assert_eq!(
        ports[0],
        json!({"name": "dns-udp", "containerPort": 10053, "protocol": "UDP"})
    );
    assert_eq!(
        ports[1],
        json!({"name": "dns-tcp", "containerPort": 10053, "protocol": "TCP"})
    );
    let service = object(&objects, "Service", "mcs-policy-dns");
    assert_eq!(service["spec"]["clusterIP"], "10.96.0.53");
    assert_eq!(
        service["spec"]["selector"],
        json!({"app.kubernetes.io/name": "mcs-policy", "app.kubernetes.io/component": "dns"})
    );
    assert_eq!(
        service["spec"]["ports"],
        json!([
            {"name": "dns-udp", "port": 53, "targetPort": "dns-udp", "protocol": "UDP"},
            {"name": "dns-tcp", "port": 53, "targetPort": "dns-tcp", "protocol": "TCP"},
        ])
    );
    let role = object(&objects, "ClusterRole", "mcs-policy-dns");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": ["multicluster.x-k8s.io"], "resources": ["serviceimports"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
             "verbs": ["list", "watch"]},
        ])
    );
    let binding = object(&objects, "ClusterRoleBinding", "mcs-policy-dns");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "mcs-policy-dns", "namespace": NS}])
    );

    // Defaults: the zone clusterset.local, 5 s, :5353, no fixed ClusterIP; the release-wide
    // nodeSelector when the component has none.
    let defaults = render(
        NS,
        &[
            "--set",
            "target=member",
            "--set",
            "nodeSelector.everyone=yes",
        ],
    );
    let deployment = object(&defaults, "Deployment", "mcs-policy-dns");
    let (_, command) = parsed("member dns defaults", deployment);
    let McsCommand::Dns(dns) = command else {
        panic!("`mcs-policy dns`");
    };
    assert_eq!(
        (dns.zone.as_str(), dns.ttl, dns.listen.to_string()),
        ("clusterset.local", 5, ":5353".to_string())
    );
    assert_eq!(pod(deployment)["nodeSelector"], json!({"everyone": "yes"}));
    assert!(
        object(&defaults, "Service", "mcs-policy-dns")["spec"]
            .get("clusterIP")
            .is_none()
    );

    // Off: none of its objects.
    let off = render(
        NS,
        &["--set", "target=member", "--set", "dns.enabled=false"],
    );
    let dns_ids = want(&DNS);
    assert!(ids("member without dns", &off).is_disjoint(&dns_ids));
    // Other targets never render it.
    for target in ["cluster", "karmada-apiserver"] {
        let objects = render(NS, &["--set", &format!("target={target}")]);
        assert!(ids(target, &objects).is_disjoint(&dns_ids), "{target}");
    }
}

#[test]
fn target_member_without_the_upstream_crds_or_api() {
    let base = ["--set", "target=member"];
    // The CRDs off (the member has them already): the rules stay.
    let without_crds = render(
        NS,
        &[&base[..], &["--set", "upstreamAPI.crds=false"]].concat(),
    );
    assert_eq!(
        of_kind(&without_crds, "CustomResourceDefinition").count(),
        0
    );
    assert_eq!(
        member_rules(&without_crds).len(),
        karmada_member_rules().len() + upstream_rules().len()
    );
    check_all("member without CRDs", &without_crds, &[NS]);
    // The API off: neither CRDs nor its rules, today's rules as they were.
    let without_api = render(
        NS,
        &[&base[..], &["--set", "upstreamAPI.enabled=false"]].concat(),
    );
    assert_eq!(of_kind(&without_api, "CustomResourceDefinition").count(), 0);
    assert_eq!(member_rules(&without_api), karmada_member_rules());
    check_all("member without the upstream API", &without_api, &[NS]);
    // Other targets never install them.
    for target in ["cluster", "karmada-apiserver"] {
        let objects = render(
            NS,
            &[
                "--set",
                &format!("target={target}"),
                "--set",
                "webhook.enabled=false",
            ],
        );
        assert_eq!(
            of_kind(&objects, "CustomResourceDefinition").count(),
            0,
            "{target}"
        );
    }
}

#[test]
fn the_schema_refuses_a_bad_value() {
    for bad in [
        "webhook.certificate.mode=bogus",
        "target=everywhere",
        "policy=lenient",
        "sync.mode=pull",
        "unknownValue=1",
        "upstreamAPI.crds=maybe",
        "upstreamAPI.bogus=true",
        // The hook Job is gone, and its values with it.
        "webhook.unregisterJob.backoffLimit=2",
        "webhook.port=0",
        "webhook.port=70000",
        "webhook.port=https",
        "sync.metricsPort=-1",
        "webhook.extraEnv[0].value=no-name",
        "sync.extraEnv[0].name=A,sync.extraEnv[0].valueFrm=x",
        "webhook.serviceExports.enabled=maybe",
        "webhook.serviceExports.bogus=true",
        "webhook.nodeSelector.zone[0]=a",
        "sync.tolerations=none",
        "webhook.affinity=near",
        "sync.topologySpreadConstraints[0].maxSkew=1",
        "webhook.priorityClassName[0]=high",
        "podAnnotations.a[0]=b",
        "sync.podLabels.a[0]=b",
        "podSecurityContext=restricted",
        "securityContext=restricted",
        "serviceMonitor.enabled=yes",
        "serviceMonitor.interval=often",
        "serviceMonitor.bogus=true",
        "sync.members.kubeconfig[0]=x",
        "karmada.createClusterSecretsNamespace=maybe",
        "karmada.webhookKubeconfigSecret.name=Not_A_Name",
        "karmada.webhookKubeconfigSecret.key=",
        "global=1",
    ] {
        let out = run(&helm(), &["template", "x", CHART, "--set", bad]);
        assert!(!out.status.success(), "{bad} is refused");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("schema"), "{bad}: {stderr}");
    }
}

/// A subchart's parent passes `global`: accepted, whatever it holds, while every other unknown
/// key stays refused.
#[test]
fn the_schema_accepts_global_values_of_a_parent_chart() {
    for global in [
        "global.imageRegistry=my.registry",
        "global.anything.nested=true",
        "global.list[0]=x",
    ] {
        let objects = render(NS, &["--set", global]);
        check_all(global, &objects, &[NS]);
    }
}

/// `--set` flags of a `sync.members.kubeconfig` test, with a kubeconfig in a file of its own.
fn members_kubeconfig_file() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-policy-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("members.kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    path
}

#[test]
fn extra_args_come_after_the_charts_so_they_override_them() {
    let objects = render(
        NS,
        &[
            "--set",
            "webhook.extraArgs={--drain-timeout,5s}",
            // A number given with --set is a number, which the schema refuses: arguments are
            // strings.
            "--set-string",
            "sync.extraArgs={--workers,3}",
        ],
    );
    check_all("extraArgs", &objects, &[NS]);
    for (name, extra) in [
        ("mcs-policy", ["--drain-timeout", "5s"]),
        ("mcs-policy-sync", ["--workers", "3"]),
    ] {
        let d = object(&objects, "Deployment", name);
        let args = expanded_args(d);
        assert_eq!(args[args.len() - 2..], extra, "{name}: last: {args:?}");
    }
    // The chart's own flags are there before them (what a repeated flag overrides).
    let d = object(&objects, "Deployment", "mcs-policy");
    let args = expanded_args(d);
    let listen = args.iter().position(|a| a == "--listen").unwrap();
    assert!(listen < args.len() - 2);
}

#[test]
fn listen_addresses_are_every_address_on_the_ports_of_the_values() {
    let objects = render(NS, &[]);
    let d = object(&objects, "Deployment", "mcs-policy");
    assert_eq!(flag(&expanded_args(d), "--listen"), Some(":8443"));
    let sync = object(&objects, "Deployment", "mcs-policy-sync");
    assert_eq!(
        flag(&expanded_args(sync), "--metrics-listen"),
        Some(":8080")
    );
    let text = serde_json::to_string(&objects).unwrap();
    assert!(!text.contains("0.0.0.0"), "no IPv4-only address");

    let objects = render(
        NS,
        &[
            "--set",
            "webhook.port=9443",
            "--set",
            "sync.metricsPort=9090",
        ],
    );
    check_all("ports", &objects, &[NS]);
    let d = object(&objects, "Deployment", "mcs-policy");
    assert_eq!(flag(&expanded_args(d), "--listen"), Some(":9443"));
    assert_eq!(container(d)["ports"][0]["containerPort"], 9443);
    // The Service still answers on 443, to the named port.
    let service = object(&objects, "Service", "mcs-policy");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "https");
    let sync = object(&objects, "Deployment", "mcs-policy-sync");
    assert_eq!(
        flag(&expanded_args(sync), "--metrics-listen"),
        Some(":9090")
    );
    assert_eq!(container(sync)["ports"][0]["containerPort"], 9090);
    let metrics = object(&objects, "Service", "mcs-policy-sync-metrics");
    assert_eq!(metrics["spec"]["ports"][0]["port"], 9090);
    assert_eq!(metrics["spec"]["ports"][0]["targetPort"], "metrics");
}

#[test]
fn extra_env_is_added_to_each_components_container() {
    let objects = render(
        NS,
        &[
            "--set",
            "webhook.extraEnv[0].name=RUST_LOG",
            "--set",
            "webhook.extraEnv[0].value=debug",
            "--set",
            "sync.extraEnv[0].name=NODE",
            "--set",
            "sync.extraEnv[0].valueFrom.fieldRef.fieldPath=spec.nodeName",
        ],
    );
    check_valid_objects_only(&objects);
    let env = |name: &str| container(object(&objects, "Deployment", name))["env"].clone();
    let webhook = env("mcs-policy");
    assert_eq!(webhook[0]["name"], "POD_NAMESPACE", "the chart's first");
    assert_eq!(webhook[1], json!({"name": "RUST_LOG", "value": "debug"}));
    let sync = env("mcs-policy-sync");
    assert_eq!(
        sync[1],
        json!({"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})
    );
    // In Karmada mode the sync container has no env of its own.
    let karmada = render(
        "karmada-system",
        &[
            "--set",
            "karmada.enabled=true",
            "--set",
            "webhook.enabled=false",
            "--set",
            "sync.extraEnv[0].name=A",
            "--set",
            "sync.extraEnv[0].value=b",
        ],
    );
    assert_eq!(
        container(object(&karmada, "Deployment", "mcs-policy-sync"))["env"],
        json!([{"name": "A", "value": "b"}])
    );
}

/// Every object valid of its type, and the workloads restricted with their args parsed.
fn check_valid_objects_only(objects: &[Value]) {
    deploy_common::check_valid_objects("values", objects);
    for w in deploy_common::workloads(objects) {
        parsed("values", w);
    }
}

#[test]
fn scheduling_is_per_component_falling_back_to_the_release_wide_values() {
    // Release-wide only: both components take them.
    let objects = render(
        NS,
        &[
            "--set",
            "nodeSelector.pool=system",
            "--set",
            "tolerations[0].key=dedicated",
            "--set",
            "tolerations[0].operator=Exists",
            "--set",
            "priorityClassName=system-cluster-critical",
        ],
    );
    check_all("release-wide scheduling", &objects, &[NS]);
    for name in ["mcs-policy", "mcs-policy-sync"] {
        let p = pod(object(&objects, "Deployment", name));
        assert_eq!(p["nodeSelector"], json!({"pool": "system"}), "{name}");
        assert_eq!(
            p["tolerations"],
            json!([{"key": "dedicated", "operator": "Exists"}])
        );
        assert_eq!(p["priorityClassName"], "system-cluster-critical");
        // The chart's spreading by default.
        assert_eq!(
            p["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
                ["podAffinityTerm"]["topologyKey"],
            "kubernetes.io/hostname"
        );
    }
    assert_eq!(
        pod(object(&objects, "Deployment", "mcs-policy"))["topologySpreadConstraints"][0]["topologyKey"],
        "topology.kubernetes.io/zone"
    );
    assert!(
        pod(object(&objects, "Deployment", "mcs-policy-sync"))
            .get("topologySpreadConstraints")
            .is_none()
    );

    // The webhook's own win for the webhook; the sync controller keeps the release-wide ones.
    let objects = render(
        NS,
        &[
            "--set",
            "nodeSelector.pool=system",
            "--set",
            "priorityClassName=low",
            "--set",
            "webhook.nodeSelector.pool=edge",
            "--set",
            "webhook.tolerations[0].key=edge",
            "--set",
            "webhook.tolerations[0].operator=Exists",
            "--set",
            "webhook.priorityClassName=high",
            "--set",
            "webhook.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=zone",
            "--set",
            "webhook.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
            "--set",
            "sync.topologySpreadConstraints[0].maxSkew=2",
            "--set",
            "sync.topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname",
            "--set",
            "sync.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
            "--set",
            "sync.priorityClassName=sync-class",
        ],
    );
    check_all("component scheduling", &objects, &[NS]);
    let webhook = pod(object(&objects, "Deployment", "mcs-policy"));
    assert_eq!(webhook["nodeSelector"], json!({"pool": "edge"}));
    assert_eq!(
        webhook["tolerations"],
        json!([{"key": "edge", "operator": "Exists"}])
    );
    assert_eq!(webhook["priorityClassName"], "high");
    assert!(webhook["affinity"].get("podAntiAffinity").is_none());
    assert_eq!(
        webhook["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "zone"
    );
    let sync = pod(object(&objects, "Deployment", "mcs-policy-sync"));
    assert_eq!(sync["nodeSelector"], json!({"pool": "system"}));
    assert!(sync.get("tolerations").is_none());
    assert_eq!(sync["priorityClassName"], "sync-class");
    assert_eq!(
        sync["topologySpreadConstraints"],
        json!([{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule"}])
    );
}

#[test]
fn pod_annotations_and_labels_merge_release_wide_and_per_component() {
    let objects = render(
        NS,
        &[
            "--set",
            "podAnnotations.team=net",
            "--set",
            "podAnnotations.shared=release",
            "--set",
            "podLabels.tier=control",
            "--set",
            "webhook.podAnnotations.shared=webhook",
            "--set",
            "webhook.podLabels.role=admission",
            "--set",
            "sync.podLabels.role=sync",
            "--set",
            // The chart's selector labels cannot be taken over.
            "sync.podLabels.app\\.kubernetes\\.io/component=other",
        ],
    );
    check_all("pod metadata", &objects, &[NS]);
    let meta =
        |name: &str| object(&objects, "Deployment", name)["spec"]["template"]["metadata"].clone();
    let webhook = meta("mcs-policy");
    assert_eq!(
        webhook["annotations"],
        json!({"team": "net", "shared": "webhook"})
    );
    assert_eq!(webhook["labels"]["tier"], "control");
    assert_eq!(webhook["labels"]["role"], "admission");
    assert_eq!(webhook["labels"]["app.kubernetes.io/component"], "webhook");
    let sync = meta("mcs-policy-sync");
    assert_eq!(
        sync["annotations"],
        json!({"team": "net", "shared": "release"})
    );
    assert_eq!(sync["labels"]["role"], "sync");
    assert_eq!(sync["labels"]["app.kubernetes.io/component"], "sync");
    // Nothing given: no annotations at all.
    let plain = render(NS, &[]);
    assert!(
        object(&plain, "Deployment", "mcs-policy")["spec"]["template"]["metadata"]
            .get("annotations")
            .is_none()
    );
}

#[test]
fn security_contexts_are_values_restricted_by_default_without_a_fixed_uid() {
    let objects = render(NS, &[]);
    for name in ["mcs-policy", "mcs-policy-sync"] {
        let d = object(&objects, "Deployment", name);
        assert_eq!(
            pod(d)["securityContext"],
            json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}}),
            "{name}: the image's USER, or OpenShift's UID"
        );
        assert_eq!(
            container(d)["securityContext"],
            json!({"runAsNonRoot": true, "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"}})
        );
        // Secret volumes are readable whatever UID and group the pod gets.
        for volume in pod(d)["volumes"].as_array().unwrap() {
            if let Some(secret) = volume.get("secret") {
                assert_eq!(secret["defaultMode"], 0o444, "{name}: {volume}");
            }
        }
    }
    let objects = render(
        NS,
        &[
            "--set",
            "podSecurityContext.fsGroup=2000",
            "--set",
            "podSecurityContext.runAsUser=1000",
            "--set",
            "securityContext.runAsGroup=3000",
        ],
    );
    check_valid_objects_only(&objects);
    let d = object(&objects, "Deployment", "mcs-policy");
    assert_eq!(pod(d)["securityContext"]["fsGroup"], 2000);
    assert_eq!(pod(d)["securityContext"]["runAsUser"], 1000);
    assert_eq!(pod(d)["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container(d)["securityContext"]["runAsGroup"], 3000);
    assert_eq!(
        container(d)["securityContext"]["readOnlyRootFilesystem"],
        true
    );
}

#[test]
fn the_members_kubeconfig_secret_is_made_from_a_value_or_left_to_the_user() {
    // Without it: no Secret; the pods wait for the one the user makes (a required volume).
    let objects = render(NS, &["--set", "webhook.enabled=false"]);
    assert_eq!(of_kind(&objects, "Secret").count(), 0);
    let sync = object(&objects, "Deployment", "mcs-policy-sync");
    let (_, volume, file) = deploy_common::mount_of(sync, "/etc/mcs-policy/members/kubeconfig");
    assert_eq!(volume["secret"]["secretName"], "mcs-policy-sync-members");
    assert_eq!(file, "kubeconfig");
    assert!(volume["secret"].get("optional").is_none(), "required");

    let file = members_kubeconfig_file();
    let set = format!("sync.members.kubeconfig={}", file.display());
    let objects = render(NS, &["--set", "webhook.enabled=false", "--set-file", &set]);
    check_all("members kubeconfig", &objects, &[NS]);
    let secret = object(&objects, "Secret", "mcs-policy-sync-members");
    let data = secret["data"]["kubeconfig"]
        .as_str()
        .expect("data.kubeconfig");
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert_eq!(decoded, std::fs::read(&file).unwrap());
    // A new kubeconfig rolls the pods, which read it at start.
    let sync = object(&objects, "Deployment", "mcs-policy-sync");
    assert!(
        sync["spec"]["template"]["metadata"]["annotations"]["checksum/members-kubeconfig"]
            .is_string()
    );
    // Not in Karmada mode, whose members are Karmada's Clusters.
    let karmada = render(
        "karmada-system",
        &["--set", "karmada.enabled=true", "--set-file", &set],
    );
    assert_eq!(of_kind(&karmada, "Secret").count(), 0);
}

#[test]
fn metrics_services_and_optional_service_monitors() {
    let objects = render(NS, &[]);
    assert_eq!(
        of_kind(&objects, "ServiceMonitor").count(),
        0,
        "off by default"
    );
    let metrics = object(&objects, "Service", "mcs-policy-sync-metrics");
    assert_eq!(
        metrics["spec"]["selector"],
        json!({"app.kubernetes.io/name": "mcs-policy", "app.kubernetes.io/component": "sync"})
    );
    assert_eq!(metrics["spec"]["ports"][0]["name"], "metrics");

    let objects = render(
        NS,
        &[
            "--set",
            "serviceMonitor.enabled=true",
            "--set",
            "serviceMonitor.labels.release=prometheus",
            "--set",
            "serviceMonitor.interval=30s",
        ],
    );
    check_all("serviceMonitor", &objects, &[NS]);
    let sync = object(&objects, "ServiceMonitor", "mcs-policy-sync");
    assert_eq!(sync["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(sync["metadata"]["labels"]["release"], "prometheus");
    assert_eq!(
        sync["spec"]["endpoints"],
        json!([{"port": "metrics", "scheme": "http", "path": "/metrics", "interval": "30s"}])
    );
    // It selects the metrics Service only.
    let selector = sync["spec"]["selector"]["matchLabels"].as_object().unwrap();
    let selected: Vec<&Value> = of_kind(&objects, "Service")
        .filter(|s| {
            selector
                .iter()
                .all(|(k, v)| &s["metadata"]["labels"][k] == v)
        })
        .collect();
    assert_eq!(selected.len(), 1);
    assert_eq!(selected[0]["metadata"]["name"], "mcs-policy-sync-metrics");
    // The webhook's /metrics over HTTPS, verified with its certificate's CA.
    let webhook = object(&objects, "ServiceMonitor", "mcs-policy");
    let endpoint = &webhook["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "https");
    assert_eq!(endpoint["scheme"], "https");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(
        endpoint["tlsConfig"],
        json!({"serverName": "mcs-policy.mcs-policy-system.svc",
            "ca": {"secret": {"name": "mcs-policy-tls", "key": "ca.crt"}}})
    );
    // Not in the release without pods.
    let objects = render(
        NS,
        &[
            "--set",
            "target=karmada-apiserver",
            "--set",
            "serviceMonitor.enabled=true",
        ],
    );
    assert_eq!(of_kind(&objects, "ServiceMonitor").count(), 0);
    // A member's: the DNS server's metrics, on the one Service with a port named metrics.
    let member = |extra: &[&str]| {
        let mut values = vec![
            "--set",
            "target=member",
            "--set",
            "serviceMonitor.enabled=true",
        ];
        values.extend_from_slice(extra);
        render(NS, &values)
    };
    let objects = member(&[]);
    check_all("member serviceMonitor", &objects, &[NS]);
    let monitors: Vec<&Value> = of_kind(&objects, "ServiceMonitor").collect();
    assert_eq!(monitors.len(), 1);
    let dns = monitors[0];
    assert_eq!(dns["metadata"]["name"], "mcs-policy-dns");
    assert_eq!(
        dns["spec"]["endpoints"],
        json!([{"port": "metrics", "scheme": "http", "path": "/metrics"}])
    );
    let selector = dns["spec"]["selector"]["matchLabels"].as_object().unwrap();
    let with_metrics_port: Vec<&Value> = of_kind(&objects, "Service")
        .filter(|s| {
            selector
                .iter()
                .all(|(k, v)| &s["metadata"]["labels"][k] == v)
        })
        .filter(|s| {
            s["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "metrics")
        })
        .collect();
    assert_eq!(with_metrics_port.len(), 1);
    assert_eq!(
        with_metrics_port[0]["metadata"]["name"],
        "mcs-policy-dns-metrics"
    );
    assert_eq!(
        of_kind(&member(&["--set", "dns.enabled=false"]), "ServiceMonitor").count(),
        0
    );
}

/// A hub that is also a member: the `cluster` release and the `member` release into one cluster
/// and namespace. Helm refuses an object that another release owns, so none may be in both.
#[test]
fn a_hub_can_also_be_a_member_no_object_is_in_both_releases() {
    let hub = render(NS, &["--set", "crd.install=true"]);
    let member = render(NS, &["--set", "target=member"]);
    let hub_ids = ids("hub", &hub);
    let member_ids = ids("member", &member);
    let shared: Vec<_> = hub_ids.intersection(&member_ids).collect();
    assert!(shared.is_empty(), "in both releases: {shared:?}");
    assert!(member_ids.contains(&(
        "ServiceAccount".to_string(),
        NS.to_string(),
        "mcs-policy-member".to_string()
    )));
    // The karmada-apiserver release and a host release are in different API servers, but the
    // same holds for them.
    let karmada = render(NS, &["--set", "target=karmada-apiserver"]);
    let karmada_ids = ids("karmada-apiserver", &karmada);
    assert!(karmada_ids.intersection(&member_ids).next().is_none());
}

/// Every certificate mode renders both configurations under the same names: a mode switch is a
/// plain `helm upgrade` of objects the release owns, never a takeover.
#[test]
fn every_certificate_mode_renders_the_configurations_under_the_same_names() {
    let ca = ca_file();
    let set = set_file_ca(&ca);
    for mode in ["self-managed", "cert-manager", "secret"] {
        let mode_flag = format!("webhook.certificate.mode={mode}");
        let cluster = render(NS, &["--set", &mode_flag, "--set-file", &set]);
        let karmada = render(
            NS,
            &[
                "--set",
                "target=karmada-apiserver",
                "--set",
                &mode_flag,
                "--set-file",
                &set,
            ],
        );
        for objects in [&cluster, &karmada] {
            for (kind, _, name) in CONFIGURATIONS {
                object(objects, kind, name);
            }
        }
        let helm_owned = |objects: &[Value]| {
            objects
                .iter()
                .all(|o| o["metadata"]["annotations"].get("helm.sh/hook").is_none())
        };
        assert!(helm_owned(&cluster) && helm_owned(&karmada), "{mode}");
    }
    // Disabled: none (the release removes them).
    let off = render(NS, &["--set", "webhook.enabled=false"]);
    assert_eq!(of_kind(&off, "ValidatingWebhookConfiguration").count(), 0);
    assert_eq!(of_kind(&off, "MutatingWebhookConfiguration").count(), 0);
}

/// scripts/karmada-mcs-check.sh --from-file on a Deployment running `command`.
fn karmada_check(binary: &str, flags: &[&str]) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!("mcs-policy-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = vec![
        format!("/bin/{binary}"),
        "--kubeconfig=/etc/kubeconfig".into(),
    ];
    command.extend(flags.iter().map(|f| f.to_string()));
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": binary, "namespace": "karmada-system"},
        "spec": {
            "selector": {"matchLabels": {"app": binary}},
            "template": {
                "metadata": {"labels": {"app": binary}},
                "spec": {"containers": [{"name": binary, "image": "x", "command": command}]}
            }
        }
    });
    // One file per case (kubectl reads a comma in -f as a list of files).
    static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("deployment-{case}.json"));
    std::fs::write(&file, deployment.to_string()).unwrap();
    // The script reads the file with kubectl: the one deploy_kustomize.rs uses.
    deploy_common::tool("kubectl", &["version", "--client"]);
    let out = run(
        "scripts/karmada-mcs-check.sh",
        &["--from-file", file.to_str().unwrap()],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_karmada_check_fails_when_karmada_handles_multiclusterservices() {
    let cm = "karmada-controller-manager";
    let cases: &[(&[&str], bool)] = &[
        (&["--feature-gates=MultiClusterService=true"], false),
        (&["--feature-gates=AllAlpha=true"], false),
        (
            &["--feature-gates", "PropagateDeps=true,AllAlpha=true"],
            false,
        ),
        (
            &["--feature-gates=AllAlpha=true,MultiClusterService=false"],
            true,
        ),
        (&["--feature-gates=PropagateDeps=true"], true),
        (&[], true),
        // Later entries win, across repeated flags too.
        (
            &[
                "--feature-gates=MultiClusterService=true",
                "--feature-gates=MultiClusterService=false",
            ],
            true,
        ),
        (
            &[
                "--feature-gates=MultiClusterService=false",
                "--feature-gates=AllAlpha=true",
            ],
            true,
        ),
        // On, with its three controllers off: nothing runs.
        (
            &[
                "--feature-gates=MultiClusterService=true",
                "--controllers=*,-multiclusterservice,-endpointsliceCollect,-endpointsliceDispatch",
            ],
            true,
        ),
        // Only two off: endpointsliceDispatch still runs.
        (
            &[
                "--feature-gates=MultiClusterService=true",
                "--controllers=*,-multiclusterservice,-endpointsliceCollect",
            ],
            false,
        ),
        // A name listed before its `-name` wins.
        (
            &[
                "--feature-gates=MultiClusterService=true",
                "--controllers=multiclusterservice,*,-multiclusterservice,-endpointsliceCollect,-endpointsliceDispatch",
            ],
            false,
        ),
    ];
    for (flags, passes) in cases {
        let (ok, text) = karmada_check(cm, flags);
        assert_eq!(ok, *passes, "{flags:?}:\n{text}");
        if !passes {
            assert!(
                text.contains(&format!("Deployment {cm}")) && text.contains("--feature-gates"),
                "names the Deployment and the flag: {text}"
            );
        }
    }
    // The agent runs endpointsliceCollect only.
    let (ok, text) = karmada_check(
        "karmada-agent",
        &[
            "--feature-gates=MultiClusterService=true",
            "--controllers=*,-endpointsliceCollect",
        ],
    );
    assert!(ok, "{text}");
    let (ok, text) = karmada_check("karmada-agent", &["--feature-gates=AllAlpha=true"]);
    assert!(!ok, "{text}");
}

#[test]
fn every_value_is_documented_in_the_chart_readme() {
    let readme = std::fs::read_to_string(workspace_root().join(CHART).join("README.md")).unwrap();
    let values: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(workspace_root().join(CHART).join("values.yaml")).unwrap(),
    )
    .unwrap();
    let values: Value = serde_json::to_value(values).unwrap();
    let mut leaves = BTreeSet::new();
    fn walk(v: &Value, at: String, out: &mut BTreeSet<String>) {
        match v.as_object() {
            // Kubernetes objects given whole (resources, security contexts): one value each.
            Some(map)
                if !map.is_empty()
                    && !at.ends_with("resources")
                    && !at.ends_with("ecurityContext") =>
            {
                for (k, v) in map {
                    let next = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    walk(v, next, out);
                }
            }
            _ => {
                out.insert(at);
            }
        }
    }
    walk(&values, String::new(), &mut leaves);
    for leaf in leaves {
        assert!(
            readme.contains(&format!("| `{leaf}` |")),
            "README.md lists {leaf}"
        );
    }
}
