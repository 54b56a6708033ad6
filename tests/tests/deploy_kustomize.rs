//! Every kustomization of the repository, built by a real kustomize: `kubectl kustomize DIR`
//! with the first `kubectl` on PATH (scripts/test.sh installs Debian's kubernetes-client when
//! there is none). Kustomize itself refuses a file reached through `../`; what it builds is then
//! checked object by object: the objects each kustomization is for (kinds, names, namespaces),
//! each a valid object of its Kubernetes type, every namespace, ServiceAccount and role that
//! something needs present, the Deployments' arguments parsed by `mcs-policy`'s own command
//! line and pointing at mounted files, probes on served ports, restricted Pod Security, the
//! placeholder image, budgets that select their pods.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use mcs_policy::clusters::origin::{HubOrigin, MemberOrigin};
use mcs_policy::config::{Args, Command as McsCommand};
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tests::workspace_root;

/// The image every Deployment runs: a placeholder the user sets (no image is published).
const IMAGE: &str = "registry.example.com/mcs-policy:0.1.0";

/// `(kind, namespace or "", name)`.
type Id = (String, String, String);

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
            ("Deployment", "mcs-policy-system", "mcs-policy"),
            ("Service", "mcs-policy-system", "mcs-policy"),
            ("PodDisruptionBudget", "mcs-policy-system", "mcs-policy"),
            ("Issuer", "mcs-policy-system", "mcs-policy-selfsigned"),
            ("Issuer", "mcs-policy-system", "mcs-policy-ca"),
            ("Certificate", "mcs-policy-system", "mcs-policy-ca"),
            ("Certificate", "mcs-policy-system", "mcs-policy"),
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
        ],
        foreign_namespaces: &[],
    },
    Expected {
        dir: "policies/deploy/member",
        objects: &[
            ("Namespace", "", "mcs-policy-system"),
            ("ServiceAccount", "mcs-policy-system", "mcs-policy-sync"),
            ("ClusterRole", "", "mcs-policy-sync-member"),
            ("ClusterRoleBinding", "", "mcs-policy-sync-member"),
            ("Secret", "mcs-policy-system", "mcs-policy-sync-token"),
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
        ],
        // Where `karmadactl join` keeps the members' Secrets.
        foreign_namespaces: &["karmada-cluster"],
    },
    Expected {
        dir: "policies/deploy/karmada",
        objects: &[
            ("ServiceAccount", "karmada-system", "mcs-policy-sync"),
            ("Deployment", "karmada-system", "mcs-policy-sync"),
            ("PodDisruptionBudget", "karmada-system", "mcs-policy-sync"),
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
                     kustomize`, and no kubectl runs here ({err}); install one (scripts/test.sh \
                     installs Debian's kubernetes-client when none is on PATH)"
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
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).expect("kustomize writes YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

/// Every expected kustomization, built once.
fn built() -> &'static Vec<(&'static Expected, Vec<Value>)> {
    static BUILT: std::sync::OnceLock<Vec<(&'static Expected, Vec<Value>)>> =
        std::sync::OnceLock::new();
    BUILT.get_or_init(|| EXPECTED.iter().map(|e| (e, build(e.dir))).collect())
}

fn id(o: &Value) -> Id {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (
        text(&o["kind"]),
        text(&o["metadata"]["namespace"]),
        text(&o["metadata"]["name"]),
    )
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> impl Iterator<Item = &'a Value> {
    let kind = kind.to_string();
    objects.iter().filter(move |o| o["kind"] == kind.as_str())
}

fn has(objects: &[Value], kind: &str, namespace: &str, name: &str) -> bool {
    let want = (kind.to_string(), namespace.to_string(), name.to_string());
    objects.iter().any(|o| id(o) == want)
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|s| s.as_str().expect("a string"))
        .collect()
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
        let got: BTreeSet<Id> = objects.iter().map(id).collect();
        assert_eq!(
            got.len(),
            objects.len(),
            "{}: an object twice",
            expected.dir
        );
        let want: BTreeSet<Id> = expected
            .objects
            .iter()
            .map(|(k, ns, n)| (k.to_string(), ns.to_string(), n.to_string()))
            .collect();
        assert_eq!(got, want, "{}", expected.dir);
    }
}

/// `doc` read as `T` and written back: any field `T` does not know, or a value of the wrong
/// type, shows as a difference or an error.
fn round_trip<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// Where `written` first differs from `read`, as a JSON pointer.
fn first_difference(written: &Value, read: &Value, at: String) -> Option<String> {
    match (written, read) {
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .find_map(|(k, v)| match b.get(k) {
                Some(w) => first_difference(v, w, format!("{at}/{k}")),
                None => Some(format!("{at}/{k}")),
            })
            .or_else(|| {
                b.keys()
                    .find(|k| !a.contains_key(*k))
                    .map(|k| format!("{at}/{k}"))
            }),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, format!("{at}/{i}"))),
        (a, b) => (a != b).then_some(at),
    }
}

#[test]
fn every_object_is_a_valid_object_of_its_kubernetes_type() {
    for (expected, objects) in built() {
        for o in objects {
            let (kind, namespace, name) = id(o);
            let back = match (o["apiVersion"].as_str().unwrap_or_default(), kind.as_str()) {
                ("v1", "Namespace") => round_trip::<Namespace>(o),
                ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(o),
                ("v1", "Service") => round_trip::<Service>(o),
                ("v1", "Secret") => round_trip::<Secret>(o),
                ("apps/v1", "Deployment") => round_trip::<Deployment>(o),
                ("policy/v1", "PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(o),
                ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<ClusterRole>(o),
                ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
                    round_trip::<ClusterRoleBinding>(o)
                }
                ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(o),
                ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(o),
                // cert-manager's kinds (webhook/certificate.yaml): not Kubernetes types.
                ("cert-manager.io/v1", "Issuer" | "Certificate") => continue,
                (version, kind) => panic!("{}: no check for {version} {kind}", expected.dir),
            };
            let back = back.unwrap_or_else(|err| {
                panic!(
                    "{}: {kind} {namespace}/{name} is not valid: {err}",
                    expected.dir
                )
            });
            if let Some(at) = first_difference(o, &back, String::new()) {
                panic!(
                    "{}: {kind} {namespace}/{name}: {at} is not a field of its type (or not \
                     of its type's shape)",
                    expected.dir
                );
            }
        }
    }
}

#[test]
fn every_namespace_account_and_role_that_something_needs_is_there() {
    for (expected, objects) in built() {
        let dir = expected.dir;
        let present = |kind: &str, ns: &str, name: &str| has(objects, kind, ns, name);
        let namespace_ok =
            |ns: &str| present("Namespace", "", ns) || expected.foreign_namespaces.contains(&ns);
        for o in objects {
            let (kind, namespace, name) = id(o);
            let cluster_scoped = matches!(
                kind.as_str(),
                "Namespace" | "ClusterRole" | "ClusterRoleBinding"
            );
            if cluster_scoped {
                assert!(namespace.is_empty(), "{dir}: {kind} {name} has a namespace");
                continue;
            }
            // Never left to kubectl's current namespace.
            assert!(
                !namespace.is_empty(),
                "{dir}: {kind} {name} has no namespace"
            );
            assert!(
                namespace_ok(&namespace),
                "{dir}: {kind} {name}: namespace {namespace} is not made here"
            );
        }
        for binding in of_kind(objects, "RoleBinding").chain(of_kind(objects, "ClusterRoleBinding"))
        {
            let (kind, namespace, name) = id(binding);
            let role = &binding["roleRef"];
            let role_ns = if role["kind"] == "Role" {
                namespace.as_str()
            } else {
                ""
            };
            assert!(
                present(
                    role["kind"].as_str().unwrap(),
                    role_ns,
                    role["name"].as_str().unwrap()
                ),
                "{dir}: {kind} {name} refers to a missing {role}"
            );
            for subject in binding["subjects"].as_array().expect("subjects") {
                assert_eq!(subject["kind"], "ServiceAccount", "{dir}: {kind} {name}");
                let (ns, account) = (
                    subject["namespace"].as_str().expect("subject namespace"),
                    subject["name"].as_str().unwrap(),
                );
                assert!(
                    present("ServiceAccount", ns, account),
                    "{dir}: {kind} {name} binds {ns}/{account}, which is not made here"
                );
            }
        }
        for d in of_kind(objects, "Deployment") {
            let (_, namespace, name) = id(d);
            let account = d["spec"]["template"]["spec"]["serviceAccountName"]
                .as_str()
                .unwrap_or_else(|| panic!("{dir}: Deployment {name} names its ServiceAccount"));
            assert!(
                present("ServiceAccount", &namespace, account),
                "{dir}: Deployment {name} runs as {account}, which is not made here"
            );
        }
        for s in of_kind(objects, "Secret") {
            if s["type"] == "kubernetes.io/service-account-token" {
                let (_, namespace, name) = id(s);
                let account = s["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{dir}: token {name} names its account"));
                assert!(
                    present("ServiceAccount", &namespace, account),
                    "{dir}: {name}"
                );
            }
        }
    }
}

/// The Deployments of every kustomization, with the folder.
fn deployments() -> Vec<(&'static str, &'static Value)> {
    built()
        .iter()
        .flat_map(|(e, objects)| of_kind(objects, "Deployment").map(move |d| (e.dir, d)))
        .collect()
}

/// The one container of a Deployment.
fn container(d: &Value) -> &Value {
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container");
    &containers[0]
}

/// The arguments of `d`'s container with `$(VAR)` replaced as the kubelet does, each VAR being
/// one of its `env` entries: a value, or the Pod's namespace (`fieldRef` `metadata.namespace`).
fn expanded_args(d: &Value) -> Vec<String> {
    let c = container(d);
    let env: BTreeMap<&str, String> = c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let name = e["name"].as_str().unwrap();
            let field = &e["valueFrom"]["fieldRef"]["fieldPath"];
            let value = match e["value"].as_str() {
                Some(value) => value.to_string(),
                None if field == "metadata.namespace" => id(d).1,
                None => panic!("env {name}: a value or the Pod's namespace"),
            };
            (name, value)
        })
        .collect();
    strings(&c["args"])
        .into_iter()
        .map(|arg| {
            let mut arg = arg.to_string();
            while let Some(start) = arg.find("$(") {
                let end = arg[start..].find(')').expect("a closed $(") + start;
                let name = &arg[start + 2..end];
                let value = env
                    .get(name)
                    .unwrap_or_else(|| panic!("{arg}: ${name} is not in the container's env"));
                arg.replace_range(start..=end, value);
            }
            arg
        })
        .collect()
}

/// The value following `flag`.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

/// The volume mounted over `path` in `d`'s container (the longest mount path that holds it),
/// and the file name it gives `path` within that volume.
fn mount_of<'a>(d: &'a Value, path: &str) -> (&'a Value, &'a Value, String) {
    let c = container(d);
    let mount = c["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .filter(|m| {
            let at = m["mountPath"].as_str().unwrap().trim_end_matches('/');
            path == at || path.starts_with(&format!("{at}/"))
        })
        .max_by_key(|m| m["mountPath"].as_str().unwrap().len())
        .unwrap_or_else(|| panic!("nothing is mounted at {path}"));
    let volume = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mounted volume exists");
    let at = mount["mountPath"].as_str().unwrap();
    let file = match mount["subPath"].as_str() {
        Some(sub) => {
            assert_eq!(path, at, "a subPath mount is the file itself");
            sub.to_string()
        }
        None => path[at.len()..].trim_start_matches('/').to_string(),
    };
    (mount, volume, file)
}

#[test]
fn the_deployments_arguments_are_ones_mcs_policy_accepts() {
    let mut commands = BTreeSet::new();
    for (dir, d) in deployments() {
        let args = expanded_args(d);
        let argv = std::iter::once("mcs-policy".to_string()).chain(args.iter().cloned());
        let parsed = Args::try_parse_from(argv)
            .unwrap_or_else(|err| panic!("{dir}: mcs-policy refuses {args:?}:\n{err}"));
        assert_eq!(parsed.log_format, "json", "{dir}: logs for a collector");
        match parsed.command {
            McsCommand::Serve(_) => {
                commands.insert("serve");
            }
            McsCommand::Sync(sync) => {
                commands.insert("sync");
                sync.origins()
                    .unwrap_or_else(|err| panic!("{dir}: `sync {args:?}` would not start: {err}"));
                assert!(sync.leader.leader_elect, "{dir}: replicas elect a leader");
                assert!(
                    sync.metrics_listen.is_some(),
                    "{dir}: the probes are served"
                );
            }
            other => panic!("{dir}: the Deployment runs {other:?}"),
        }
    }
    assert_eq!(commands, BTreeSet::from(["serve", "sync"]));
}

#[test]
fn the_sync_deployments_reach_the_hub_and_the_members_as_documented() {
    for (dir, d) in deployments() {
        let args = expanded_args(d);
        let argv = std::iter::once("mcs-policy".to_string()).chain(args.iter().cloned());
        let parsed = Args::try_parse_from(argv).unwrap_or_else(|err| panic!("{dir}: {err}"));
        let McsCommand::Sync(sync) = parsed.command else {
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
        let c = container(d);
        let args = expanded_args(d);
        let (listen, scheme) = match args[0].as_str() {
            "serve" => (flag(&args, "--listen"), "HTTPS"),
            _ => (flag(&args, "--metrics-listen"), "HTTP"),
        };
        let port: u64 = listen
            .and_then(|l| l.rsplit(':').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{dir}: the served address {listen:?}"));
        let named = c["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["containerPort"] == port)
            .unwrap_or_else(|| panic!("{dir}: port {port} is declared"));
        for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
            let get = &c[probe]["httpGet"];
            assert_eq!(get["path"], path, "{dir}: {probe}");
            assert_eq!(get["scheme"], scheme, "{dir}: {probe}");
            assert!(
                get["port"] == named["name"] || get["port"] == port,
                "{dir}: {probe} asks port {}",
                get["port"]
            );
        }
    }
}

#[test]
fn the_pods_meet_the_restricted_pod_security_standard() {
    for (dir, d) in deployments() {
        let pod = &d["spec"]["template"]["spec"];
        let c = container(d);
        let sc = &c["securityContext"];
        let effective = |key: &str| sc.get(key).or_else(|| pod["securityContext"].get(key));
        assert_eq!(effective("runAsNonRoot"), Some(&Value::Bool(true)), "{dir}");
        assert_eq!(
            effective("seccompProfile").map(|p| &p["type"]),
            Some(&Value::from("RuntimeDefault")),
            "{dir}"
        );
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{dir}");
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{dir}");
        assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"], "{dir}");
        assert!(sc["capabilities"].get("add").is_none(), "{dir}");
        assert_ne!(sc["privileged"], true, "{dir}");
        for host in ["hostNetwork", "hostPID", "hostIPC"] {
            assert_ne!(pod[host], true, "{dir}: {host}");
        }
        for volume in pod["volumes"].as_array().into_iter().flatten() {
            let kind: Vec<&String> = volume
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| *k != "name")
                .collect();
            assert!(
                matches!(kind[..], [k] if ["secret", "emptyDir", "configMap", "projected"].contains(&k.as_str())),
                "{dir}: volume {volume} is not one restricted pods may have"
            );
        }
        let requests = &c["resources"]["requests"];
        let limits = &c["resources"]["limits"];
        assert!(
            requests["cpu"].is_string() && requests["memory"].is_string(),
            "{dir}"
        );
        assert!(limits["memory"].is_string(), "{dir}: a memory limit");
    }
    // Where the pods' namespace is made here, it enforces `restricted`.
    for (expected, objects) in built() {
        for ns in of_kind(objects, "Namespace") {
            let labels = &ns["metadata"]["labels"];
            assert_eq!(
                labels["pod-security.kubernetes.io/enforce"], "restricted",
                "{}: {}",
                expected.dir, ns["metadata"]["name"]
            );
        }
    }
}

#[test]
fn the_image_is_the_placeholder_the_user_sets_not_a_published_one() {
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
        for pdb in of_kind(objects, "PodDisruptionBudget") {
            let (_, namespace, name) = id(pdb);
            let selector = pdb["spec"]["selector"]["matchLabels"].as_object().unwrap();
            let selected: Vec<&Value> = of_kind(objects, "Deployment")
                .filter(|d| id(d).1 == namespace)
                .filter(|d| {
                    let labels = &d["spec"]["template"]["metadata"]["labels"];
                    selector.iter().all(|(k, v)| &labels[k] == v)
                })
                .collect();
            assert_eq!(
                selected.len(),
                1,
                "{}: {name} selects one Deployment",
                expected.dir
            );
            let replicas = selected[0]["spec"]["replicas"].as_u64().unwrap();
            let min = pdb["spec"]["minAvailable"].as_u64().expect("minAvailable");
            assert!(
                min >= 1 && min < replicas,
                "{}: {name} keeps one pod and lets one go",
                expected.dir
            );
        }
    }
}
