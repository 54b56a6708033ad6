//! Every kustomization of the repository, built by a real kustomize: `kubectl kustomize DIR`
//! with the first `kubectl` on PATH (scripts/test.sh puts scripts/k8s-tools.sh's kubectl 1.36
//! first). The folders' files are rendered from the Helm chart (scripts/render-deploy.sh;
//! deploy_chart.rs checks the chart itself). Kustomize itself refuses a file reached through
//! `../`; what it builds is then checked object by object (deploy_common): the objects each
//! kustomization is for (kinds, names, namespaces), each a valid object of its Kubernetes type,
//! every namespace, ServiceAccount and role that something needs present, the Deployments'
//! arguments parsed by `mcs-policy`'s own command line and pointing at mounted files, probes on
//! served ports, restricted Pod Security, the image scripts/build-image.sh builds, budgets that
//! select their pods.

#[allow(dead_code)] // each test file uses its part
mod deploy_common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use deploy_common::{
    Id, check_budgets, check_namespaces_restricted, check_probes, check_references,
    check_restricted, check_valid_objects, container, flag, ids, mount_of, of_kind, parsed, want,
};
use mcs_policy::clusters::origin::{HubOrigin, MemberOrigin};
use mcs_policy::config::Command as McsCommand;
use serde_json::Value;
use tests::workspace_root;

/// The image every Deployment runs: what scripts/build-image.sh builds (the user sets another in
/// `images:`).
const IMAGE: &str = "localhost/mcs-policy:0.1.0";

/// What a kustomization is for.
struct Expected {
    /// Its folder, from the repository root.
    dir: &'static str,
    /// Exactly the objects it builds, as `(kind, namespace, name)`.
    objects: &'static [(&'static str, &'static str, &'static str)],
    /// Namespaces it uses without making them: they belong to someone else (Karmada).
    foreign_namespaces: &'static [&'static str],
}

const SYNC_RBAC: [(&str, &str, &str); 6] = [
    ("Namespace", "", "mcs-policy-system"),
    ("ServiceAccount", "mcs-policy-system", "mcs-policy-sync"),
    ("ClusterRole", "", "mcs-policy-sync"),
    ("ClusterRoleBinding", "", "mcs-policy-sync"),
    (
        "Role",
        "mcs-policy-system",
        "mcs-policy-sync-leader-election",
    ),
    (
        "RoleBinding",
        "mcs-policy-system",
        "mcs-policy-sync-leader-election",
    ),
];

const EXPECTED: &[Expected] = &[
    Expected {
        dir: "policies/deploy/webhook",
        objects: &[
            ("Namespace", "", "mcs-policy-system"),
            ("ServiceAccount", "mcs-policy-system", "mcs-policy"),
            ("Role", "mcs-policy-system", "mcs-policy-certificate"),
            ("RoleBinding", "mcs-policy-system", "mcs-policy-certificate"),
            ("ClusterRole", "", "mcs-policy-webhook-configurations"),
            (
                "ClusterRoleBinding",
                "",
                "mcs-policy-webhook-configurations",
            ),
            ("Deployment", "mcs-policy-system", "mcs-policy"),
            ("Service", "mcs-policy-system", "mcs-policy"),
            ("PodDisruptionBudget", "mcs-policy-system", "mcs-policy"),
            // Owned by the installation; the server patches its CA in.
            ("ValidatingWebhookConfiguration", "", "mcs-policy"),
            ("MutatingWebhookConfiguration", "", "mcs-policy"),
        ],
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/webhook-cert-manager",
        objects: &[
            ("Namespace", "", "mcs-policy-system"),
            ("ServiceAccount", "mcs-policy-system", "mcs-policy"),
            ("Deployment", "mcs-policy-system", "mcs-policy"),
            ("Service", "mcs-policy-system", "mcs-policy"),
            ("PodDisruptionBudget", "mcs-policy-system", "mcs-policy"),
            ("Issuer", "mcs-policy-system", "mcs-policy-selfsigned"),
            ("Issuer", "mcs-policy-system", "mcs-policy-ca"),
            ("Certificate", "mcs-policy-system", "mcs-policy-ca"),
            ("Certificate", "mcs-policy-system", "mcs-policy"),
            // cert-manager injects the CA.
            ("ValidatingWebhookConfiguration", "", "mcs-policy"),
            ("MutatingWebhookConfiguration", "", "mcs-policy"),
        ],
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/sync-rbac",
        objects: &SYNC_RBAC,
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/sync",
        objects: &[
            SYNC_RBAC[0],
            SYNC_RBAC[1],
            SYNC_RBAC[2],
            SYNC_RBAC[3],
            SYNC_RBAC[4],
            SYNC_RBAC[5],
            ("Deployment", "mcs-policy-system", "mcs-policy-sync"),
            (
                "PodDisruptionBudget",
                "mcs-policy-system",
                "mcs-policy-sync",
            ),
            ("Service", "mcs-policy-system", "mcs-policy-sync-metrics"),
        ],
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/member",
        objects: &[
            ("Namespace", "", "mcs-policy-system"),
            // Not the hub's names: a hub can be a member too.
            ("ServiceAccount", "mcs-policy-system", "mcs-policy-member"),
            ("ClusterRole", "", "mcs-policy-member"),
            ("ClusterRoleBinding", "", "mcs-policy-member"),
            ("Secret", "mcs-policy-system", "mcs-policy-member-token"),
            // The upstream Multi-Cluster Services API (upstream-crds.yaml).
            (
                "CustomResourceDefinition",
                "",
                "serviceexports.multicluster.x-k8s.io",
            ),
            (
                "CustomResourceDefinition",
                "",
                "serviceimports.multicluster.x-k8s.io",
            ),
            (
                "CustomResourceDefinition",
                "",
                "clusterproperties.about.k8s.io",
            ),
        ],
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/karmada-hub",
        objects: &[
            SYNC_RBAC[0],
            SYNC_RBAC[1],
            SYNC_RBAC[2],
            SYNC_RBAC[3],
            SYNC_RBAC[4],
            SYNC_RBAC[5],
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
            // Where `karmadactl join` keeps the members' Secrets, made when missing (a fresh
            // control plane of `karmadactl init` or karmada-operator).
            ("Namespace", "", "karmada-cluster"),
        ],
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/karmada",
        objects: &[
            ("ServiceAccount", "karmada-system", "mcs-policy-sync"),
            ("Deployment", "karmada-system", "mcs-policy-sync"),
            ("PodDisruptionBudget", "karmada-system", "mcs-policy-sync"),
            ("Service", "karmada-system", "mcs-policy-sync-metrics"),
        ],
        // Karmada's own namespace in its host cluster.
        foreign_namespaces: &["karmada-system"],
    },
];

/// The first `kubectl` on PATH, checked to carry a kustomize of v5 or later (kubectl 1.20's
/// kustomize is too old for these files).
fn kubectl() -> &'static str {
    static CHECKED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    CHECKED.get_or_init(|| {
        let out = Command::new("kubectl")
            .args(["version", "--client"])
            .output()
            .unwrap_or_else(|err| {
                panic!(
                    "these tests build the kustomizations with a real kustomize, `kubectl \
                     kustomize`, and no kubectl runs here ({err}): put one first on PATH, e.g. \
                     PATH=\"$(scripts/k8s-tools.sh):$PATH\" (scripts/test.sh does)"
                )
            });
        let text = String::from_utf8_lossy(&out.stdout);
        let major = text
            .lines()
            .find_map(|l| l.strip_prefix("Kustomize Version: v"))
            .and_then(|v| v.split('.').next()?.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("`kubectl version --client` names no kustomize:\n{text}"));
        assert!(
            major >= 5,
            "kubectl's kustomize is older than v5:\n{text}\nput a newer kubectl first on PATH"
        );
    });
    "kubectl"
}

/// Every folder of the repository holding a kustomization, from the root, sorted.
fn kustomization_dirs() -> Vec<String> {
    let root = workspace_root();
    let mut found = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                    pending.push(path);
                }
            } else if matches!(
                name.as_str(),
                "kustomization.yaml" | "kustomization.yml" | "Kustomization"
            ) {
                let relative = dir.strip_prefix(&root).unwrap();
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// What `kubectl kustomize <dir>` builds, as JSON documents.
fn build(dir: &str) -> Vec<Value> {
    let path: PathBuf = workspace_root().join(dir);
    let out = Command::new(kubectl())
        .arg("kustomize")
        .arg(&path)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    deploy_common::documents(&text, dir)
}

/// Every expected kustomization, built once.
fn built() -> &'static Vec<(&'static Expected, Vec<Value>)> {
    static BUILT: std::sync::OnceLock<Vec<(&'static Expected, Vec<Value>)>> =
        std::sync::OnceLock::new();
    BUILT.get_or_init(|| EXPECTED.iter().map(|e| (e, build(e.dir))).collect())
}

#[test]
fn every_kustomization_in_the_repository_is_one_these_tests_know() {
    let known: Vec<String> = EXPECTED.iter().map(|e| e.dir.to_string()).collect();
    let mut known_sorted = known.clone();
    known_sorted.sort();
    assert_eq!(
        kustomization_dirs(),
        known_sorted,
        "a kustomization was added or moved: say what it builds in EXPECTED"
    );
}

#[test]
fn every_kustomization_builds_exactly_the_objects_it_is_for() {
    for (expected, objects) in built() {
        let got: BTreeSet<Id> = ids(expected.dir, objects);
        assert_eq!(got, want(expected.objects), "{}", expected.dir);
    }
}

#[test]
fn every_object_is_a_valid_object_of_its_kubernetes_type() {
    for (expected, objects) in built() {
        check_valid_objects(expected.dir, objects);
    }
}

#[test]
fn every_namespace_account_and_role_that_something_needs_is_there() {
    for (expected, objects) in built() {
        check_references(expected.dir, objects, expected.foreign_namespaces);
    }
}

/// The Deployments of every kustomization, with the folder.
fn deployments() -> Vec<(&'static str, &'static Value)> {
    built()
        .iter()
        .flat_map(|(e, objects)| of_kind(objects, "Deployment").map(move |d| (e.dir, d)))
        .collect()
}

#[test]
fn the_deployments_arguments_are_ones_mcs_policy_accepts() {
    let mut commands = BTreeSet::new();
    for (dir, d) in deployments() {
        match parsed(dir, d).1 {
            McsCommand::Serve(_) => {
                commands.insert("serve");
            }
            McsCommand::Sync(sync) => {
                commands.insert("sync");
                sync.origins()
                    .unwrap_or_else(|err| panic!("{dir}: `sync` would not start: {err}"));
                assert!(sync.leader.leader_elect, "{dir}: replicas elect a leader");
                assert!(
                    sync.metrics_listen.is_some(),
                    "{dir}: the probes are served"
                );
            }
            other => panic!("{dir}: the Deployment runs {other:?}"),
        }
        deploy_common::check_mounts(dir, d);
    }
    assert_eq!(commands, BTreeSet::from(["serve", "sync"]));
}

#[test]
fn the_sync_deployments_reach_the_hub_and_the_members_as_documented() {
    for (dir, d) in deployments() {
        let (args, command) = parsed(dir, d);
        let McsCommand::Sync(sync) = command else {
            continue;
        };
        let origins = sync.origins().unwrap();
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(d["spec"]["replicas"], 2, "{dir}: a leader and a standby");
        // A token only where the hub is reached with it.
        let in_cluster = origins.hub == HubOrigin::InCluster;
        assert_eq!(pod["automountServiceAccountToken"], in_cluster, "{dir}");
        // Every file a flag names is mounted, from the Secret the docs tell the user about.
        let deploying =
            std::fs::read_to_string(workspace_root().join("docs/deploying.md")).unwrap();
        let secret_file = |path: &Path| {
            let (mount, volume, file) = mount_of(d, path.to_str().unwrap());
            assert_eq!(
                mount["readOnly"],
                true,
                "{dir}: {} read-only",
                path.display()
            );
            let secret = volume["secret"]["secretName"]
                .as_str()
                .unwrap_or_else(|| panic!("{dir}: {} comes from a Secret", path.display()));
            let key_told = deploying.contains(&format!("key `{file}`"))
                || deploying.contains(&format!("--from-file={file}="));
            assert!(
                deploying.contains(secret) && key_told,
                "{dir}: docs/deploying.md says how Secret {secret} gets its key {file}"
            );
            secret.to_string()
        };
        match (&origins.hub, &origins.members) {
            (HubOrigin::InCluster, MemberOrigin::Kubeconfig(members)) => {
                assert_eq!(secret_file(members), "mcs-policy-sync-members", "{dir}");
            }
            (HubOrigin::Kubeconfig { path, context }, MemberOrigin::Karmada) => {
                // Karmada's kubeconfig has one context, the karmada-apiserver's.
                assert_eq!(context, &None, "{dir}: the kubeconfig's current context");
                assert_eq!(secret_file(path), "karmada-kubeconfig", "{dir}");
            }
            other => panic!("{dir}: an unexpected deployment of the controller: {other:?}"),
        }
        let cache = flag(&args, "--cache-dir").expect("a compiled-component cache");
        let (mount, volume, _) = mount_of(d, cache);
        assert!(
            volume.get("emptyDir").is_some(),
            "{dir}: the cache is an emptyDir"
        );
        assert_ne!(mount["readOnly"], true, "{dir}: the cache is writable");
        // The lease lives in the namespace the hub rules grant it.
        assert_eq!(
            flag(&args, "--lease-namespace"),
            Some("mcs-policy-system"),
            "{dir}"
        );
    }
}

#[test]
fn the_probes_ask_healthz_and_readyz_on_the_served_port() {
    for (dir, d) in deployments() {
        check_probes(dir, d);
    }
}

#[test]
fn the_pods_meet_the_restricted_pod_security_standard() {
    for (dir, d) in deployments() {
        check_restricted(dir, d);
    }
    // Where the pods' namespace is made here, it enforces `restricted`.
    for (expected, objects) in built() {
        check_namespaces_restricted(expected.dir, objects);
    }
}

#[test]
fn the_image_is_the_one_build_image_makes_not_a_published_one() {
    for (dir, d) in deployments() {
        let image = container(d)["image"].as_str().unwrap();
        assert_eq!(image, IMAGE, "{dir}");
    }
    // Nowhere in the built manifests does the image pretend to come from Karmada.
    for (expected, objects) in built() {
        let text = serde_json::to_string(objects).unwrap();
        assert!(
            !text.contains("ghcr.io/karmada-io") && !text.contains("karmada-io/mcs-policy"),
            "{}",
            expected.dir
        );
    }
}

#[test]
fn every_disruption_budget_keeps_one_pod_of_its_deployment() {
    for (expected, objects) in built() {
        check_budgets(expected.dir, objects);
    }
}
