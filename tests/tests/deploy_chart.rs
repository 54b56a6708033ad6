//! The Helm chart policies/chart/mcs-policy, with the first `helm` on PATH (scripts/test.sh puts
//! scripts/k8s-tools.sh's helm v4 first): `helm lint --strict`, then a real `helm template` of
//! the main value combinations, each output checked as deploy_kustomize.rs checks the
//! kustomizations (deploy_common: valid objects, RBAC complete, arguments accepted by
//! `mcs-policy`'s own parser, mounts, probes, restricted Pod Security), the webhook
//! configurations the chart renders against what `mcs-policy manifests` prints, the self-managed
//! mode's rules and uninstall hook, values.schema.json refusing a bad value, and
//! scripts/karmada-mcs-check.sh on sample Deployments of Karmada.

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
const SELF_MANAGED: [(&str, &str, &str); 5] = [
    ("Role", NS, "mcs-policy-certificate"),
    ("RoleBinding", NS, "mcs-policy-certificate"),
    ("ClusterRole", "", "mcs-policy-webhook-configurations"),
    (
        "ClusterRoleBinding",
        "",
        "mcs-policy-webhook-configurations",
    ),
    ("Job", NS, "mcs-policy-unregister"),
];
const SYNC: [(&str, &str, &str); 7] = [
    ("ServiceAccount", NS, "mcs-policy-sync"),
    ("ClusterRole", "", "mcs-policy-sync"),
    ("ClusterRoleBinding", "", "mcs-policy-sync"),
    ("Role", NS, "mcs-policy-sync-leader-election"),
    ("RoleBinding", NS, "mcs-policy-sync-leader-election"),
    ("Deployment", NS, "mcs-policy-sync"),
    ("PodDisruptionBudget", NS, "mcs-policy-sync"),
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
    let cluster_role = object(&objects, "ClusterRole", "mcs-policy-webhook-configurations");
    assert_eq!(
        cluster_role["rules"],
        json!([
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": resources,
             "resourceNames": ["mcs-policy"], "verbs": ["get", "update", "delete"]},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": resources,
             "verbs": ["create"]},
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
    unregister_hook(&objects, None);
    // Helm's labels by default; none with helmLabels=false (the kustomize folders).
    assert_eq!(
        d["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    let plain = render(NS, &["--set", "helmLabels=false"]);
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("helm.sh/chart") && !text.contains("\"Helm\""));
}

/// The pre-delete hook: `mcs-policy unregister` of the configurations, as the server's account,
/// restricted, bounded, removed once it succeeded.
fn unregister_hook(objects: &[Value], kubeconfig: Option<&str>) {
    let job = object(objects, "Job", "mcs-policy-unregister");
    let annotations = &job["metadata"]["annotations"];
    assert_eq!(annotations["helm.sh/hook"], "pre-delete");
    assert_eq!(
        annotations["helm.sh/hook-delete-policy"],
        "before-hook-creation,hook-succeeded"
    );
    let backoff = job["spec"]["backoffLimit"].as_u64().expect("backoffLimit");
    assert!(backoff <= 3, "a few retries: {backoff}");
    assert!(job["spec"]["activeDeadlineSeconds"].as_u64().is_some());
    assert_eq!(pod(job)["restartPolicy"], "Never");
    assert_eq!(pod(job)["serviceAccountName"], "mcs-policy");
    let server = object(objects, "Deployment", "mcs-policy");
    assert_eq!(container(job)["image"], container(server)["image"]);
    let McsCommand::Unregister(_) = parsed("unregister hook", job).1 else {
        panic!("the hook runs `mcs-policy unregister`");
    };
    let args = expanded_args(job);
    assert_eq!(flag(&args, "--webhook-configuration"), Some("mcs-policy"));
    assert_eq!(flag(&args, "--webhook-kubeconfig"), kubeconfig);
    // check_all checked it restricted and its files mounted.
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
        ("Job", k, "mcs-policy-unregister"),
        ("ServiceAccount", k, "mcs-policy-sync"),
        ("Deployment", k, "mcs-policy-sync"),
        ("PodDisruptionBudget", k, "mcs-policy-sync"),
    ];
    // No ClusterRole: the configurations live in the karmada-apiserver; no hub RBAC here.
    assert_eq!(ids("karmada", &objects), want(&expected));
    check_all("karmada", &objects, &[k]);
    let d = object(&objects, "Deployment", "mcs-policy");
    let args = expanded_args(d);
    assert_eq!(
        flag(&args, "--webhook-url"),
        Some("https://mcs-policy.karmada-system.svc:443")
    );
    assert_eq!(flag(&args, "--webhook-kubeconfig"), Some("/etc/kubeconfig"));
    let (_, volume, file) = deploy_common::mount_of(d, "/etc/kubeconfig");
    assert_eq!(volume["secret"]["secretName"], "karmada-kubeconfig");
    assert_eq!(file, "kubeconfig");
    unregister_hook(&objects, Some("/etc/kubeconfig"));

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
    check_all("karmada-apiserver", &objects, &[NS, "karmada-cluster"]);
    let printed = manifests_webhooks(
        &[
            "--url",
            "https://mcs-policy.karmada-system.svc:443",
            "--ca-bundle",
            ca.to_str().unwrap(),
        ],
        true,
    );
    assert_eq!(chart_webhooks(&objects), printed);
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
    ]
}

/// The rules of the member ClusterRole, as `(apiGroup, resource, verbs)`, each rule one group
/// and one resource.
fn member_rules(objects: &[Value]) -> Vec<(String, String, Vec<String>)> {
    let role = object(objects, "ClusterRole", "mcs-policy-sync-member");
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
        ("ServiceAccount", NS, "mcs-policy-sync"),
        ("ClusterRole", "", "mcs-policy-sync-member"),
        ("ClusterRoleBinding", "", "mcs-policy-sync-member"),
        ("Secret", NS, "mcs-policy-sync-token"),
    ];
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
    ] {
        let out = run(&helm(), &["template", "x", CHART, "--set", bad]);
        assert!(!out.status.success(), "{bad} is refused");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("schema"), "{bad}: {stderr}");
    }
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
            Some(map) if !map.is_empty() && !at.ends_with("resources") => {
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
