//! The deployment manifests (policies/deploy) and the CRD (policies/crds), file by file: every
//! YAML document parses and names a Kubernetes object, the fields that make the webhook server
//! run safely are set, the sync controller's hub rules are exactly what it does, each
//! kustomization lists its folder's files, the Dockerfile hangs together, and
//! `mcs-policy manifests` prints the webhook configurations that point an API server at the
//! Service. What a real kustomize builds of them is checked in deploy_kustomize.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tests::{binary, workspace_root};

const NAMESPACE: &str = "mcs-policy-system";
const SERVICE: &str = "mcs-policy";

fn deploy_dir() -> PathBuf {
    workspace_root().join("policies/deploy")
}

/// The webhook server's kustomization with cert-manager's certificate, which most of these
/// tests read: the server with no API access at all.
fn webhook_dir() -> PathBuf {
    deploy_dir().join("webhook-cert-manager")
}

/// The webhook server's kustomization with its self-managed certificate.
fn self_managed_dir() -> PathBuf {
    deploy_dir().join("webhook")
}

/// The folders of policies/deploy, sorted.
fn deploy_folders() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .expect("policies/deploy")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The `*.yaml` / `*.yml` files of a folder, sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no YAML files in {}", dir.display());
    files
}

/// Every non-empty document of a YAML stream, as JSON values.
fn documents_of(text: &str, origin: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .enumerate()
        .map(|(i, doc)| {
            Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{origin}: document {} is not valid YAML: {e}", i + 1))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn documents(path: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let docs = documents_of(&text, &path.display().to_string());
    assert!(!docs.is_empty(), "{} holds no document", path.display());
    docs
}

/// Every document of the YAML files of `dir`, with the file it comes from.
fn objects_in(dir: &Path) -> Vec<(String, Value)> {
    yaml_files(dir)
        .iter()
        .flat_map(|path| {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            documents(path)
                .into_iter()
                .map(move |doc| (file.clone(), doc))
        })
        .collect()
}

/// Every document of the webhook server's folder, with the file it comes from.
fn webhook_objects() -> Vec<(String, Value)> {
    objects_in(&webhook_dir())
}

/// Every document of every folder of policies/deploy, with `folder/file`.
fn all_deploy_objects() -> Vec<(String, Value)> {
    deploy_folders()
        .iter()
        .flat_map(|dir| {
            let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
            objects_in(dir)
                .into_iter()
                .map(move |(file, doc)| (format!("{folder}/{file}"), doc))
        })
        .collect()
}

/// The one object of `kind` named `name` in the webhook server's folder.
fn object(kind: &str, name: &str) -> Value {
    let found: Vec<Value> = webhook_objects()
        .into_iter()
        .map(|(_, doc)| doc)
        .filter(|doc| doc["kind"] == kind && doc["metadata"]["name"] == name)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected exactly one {kind} {name} in {}",
        webhook_dir().display()
    );
    found.into_iter().next().unwrap()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected a list, got {v}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("expected a string, got {s}"))
        })
        .collect()
}

fn deployment() -> Value {
    object("Deployment", SERVICE)
}

/// The container that runs `mcs-policy serve`.
fn serve_container(deployment: &Value) -> Value {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("the Deployment has containers");
    containers
        .iter()
        .find(|c| c["args"].get(0).and_then(Value::as_str) == Some("serve"))
        .cloned()
        .expect("a container whose args start with `serve`")
}

/// The value following `flag` in an argument list.
fn flag_value<'a>(args: &[&'a str], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1))
        .copied()
}

fn mcs_policy(args: &[&str]) -> Output {
    Command::new(binary("mcs-policy"))
        .args(args)
        .output()
        .expect("mcs-policy runs")
}

/// The `--flags` that `mcs-policy serve --help` documents.
fn serve_flags() -> BTreeSet<String> {
    let out = mcs_policy(&["serve", "--help"]);
    assert!(
        out.status.success(),
        "serve --help: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '[' || c == ']')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string()
        })
        .collect()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-policy-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn every_yaml_document_in_deploy_and_crds_is_a_named_kubernetes_object() {
    // Unique within a folder: folders applied to different clusters share a namespace.
    let mut dirs = deploy_folders();
    dirs.push(workspace_root().join("policies/crds"));
    for dir in &dirs {
        every_document_is_a_named_object_once(dir);
    }
}

fn every_document_is_a_named_object_once(dir: &Path) {
    let mut seen = BTreeSet::new();
    for path in yaml_files(dir) {
        for doc in documents(&path) {
            let field = |pointer: &str| {
                doc.pointer(pointer)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| {
                        panic!("{}: a document has no {pointer}: {doc}", path.display())
                    })
                    .to_string()
            };
            let id = (
                field("/apiVersion"),
                field("/kind"),
                doc["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                field("/metadata/name"),
            );
            assert!(
                seen.insert(id.clone()),
                "{}: {id:?} is defined twice",
                path.display()
            );
        }
    }
}

#[test]
fn namespaced_objects_of_the_server_live_in_its_namespace() {
    let cluster_scoped = [
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "Kustomization",
    ];
    for (file, doc) in webhook_objects() {
        let kind = doc["kind"].as_str().unwrap_or_default();
        let namespace = doc["metadata"]["namespace"].as_str();
        if cluster_scoped.contains(&kind) {
            assert_eq!(namespace, None, "{file}: {kind} is cluster-scoped");
        } else {
            assert_eq!(
                namespace,
                Some(NAMESPACE),
                "{file}: {kind} {}",
                doc["metadata"]["name"]
            );
        }
    }
    assert_eq!(object("Namespace", NAMESPACE)["kind"], "Namespace");
}

#[test]
fn the_deployment_runs_two_replicas_of_serve_with_the_expected_arguments() {
    let d = deployment();
    assert_eq!(d["apiVersion"], "apps/v1");
    assert_eq!(d["spec"]["replicas"], 2);
    let c = serve_container(&d);
    let args = strings(&c["args"]);
    assert_eq!(args[0], "serve");
    let expected = [
        // Every address of the pod, IPv6 and IPv4.
        ("--listen", ":8443"),
        ("--tls-cert", "/etc/mcs-policy/tls/tls.crt"),
        ("--tls-key", "/etc/mcs-policy/tls/tls.key"),
        ("--policy", "karmada-compatible"),
        ("--cache-dir", "/var/cache/mcs-policy"),
        ("--log-format", "json"),
    ];
    for (flag, value) in expected {
        assert_eq!(flag_value(&args, flag), Some(value), "{flag} in {args:?}");
    }
    assert!(
        c["image"].as_str().is_some_and(|i| !i.is_empty()),
        "the container has an image"
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "https", "containerPort": 8443, "protocol": "TCP"}])
    );
    let resources = &c["resources"];
    for pointer in [
        "/requests/cpu",
        "/requests/memory",
        "/limits/cpu",
        "/limits/memory",
    ] {
        assert!(
            resources.pointer(pointer).is_some(),
            "resources{pointer} is set"
        );
    }
    let selector = d["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    let labels = &d["spec"]["template"]["metadata"]["labels"];
    for (k, v) in selector {
        assert_eq!(
            &labels[k], v,
            "the pod template carries the selector label {k}"
        );
    }
}

#[test]
fn the_deployment_arguments_are_flags_that_serve_accepts() {
    let flags = serve_flags();
    assert!(
        flags.contains("--tls-cert"),
        "serve --help lists its flags: {flags:?}"
    );
    let args = serve_container(&deployment())["args"].clone();
    for arg in strings(&args).into_iter().filter(|a| a.starts_with("--")) {
        assert!(
            flags.contains(arg),
            "`serve` has no flag {arg} (it has {flags:?})"
        );
    }
}

#[test]
fn the_probes_ask_readyz_and_healthz_over_https_on_the_served_port() {
    let c = serve_container(&deployment());
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(get["scheme"], "HTTPS", "{probe}");
        assert!(
            get["port"] == "https" || get["port"] == 8443,
            "{probe} port: {}",
            get["port"]
        );
    }
}

#[test]
fn the_pods_run_non_root_read_only_without_privileges_or_capabilities() {
    let d = deployment();
    let pod = &d["spec"]["template"]["spec"];
    let c = serve_container(&d);
    let sc = &c["securityContext"];
    // A container setting wins over the pod setting: look at the container first.
    let effective = |key: &str| {
        sc.get(key)
            .or_else(|| pod["securityContext"].get(key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(effective("runAsNonRoot"), true);
    // No fixed UID: the image's USER (65532), or the one OpenShift's restricted SCC assigns.
    assert_eq!(effective("runAsUser"), Value::Null);
    assert_eq!(effective("seccompProfile")["type"], "RuntimeDefault");
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert!(
        sc["capabilities"].get("add").is_none(),
        "no capability is added"
    );
    assert_ne!(sc["privileged"], true);
    assert_eq!(pod["serviceAccountName"], SERVICE);
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert!(pod.get("hostNetwork").is_none() && pod.get("hostPID").is_none());
    let anti =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
    assert_eq!(
        anti[0]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname",
        "replicas are spread over nodes"
    );
}

#[test]
fn the_tls_secret_and_the_cache_are_mounted_where_the_arguments_point() {
    let d = deployment();
    let c = serve_container(&d);
    let args = strings(&c["args"]);
    let volumes: BTreeMap<&str, &Value> = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| (v["name"].as_str().expect("volume name"), v))
        .collect();
    let mounts = c["volumeMounts"].as_array().expect("volumeMounts");
    let mount_of = |path: &str| {
        mounts
            .iter()
            .filter(|m| {
                let dir = m["mountPath"].as_str().unwrap_or_default();
                path == dir || path.starts_with(&format!("{}/", dir.trim_end_matches('/')))
            })
            .max_by_key(|m| m["mountPath"].as_str().unwrap_or_default().len())
            .unwrap_or_else(|| panic!("nothing is mounted at {path}"))
    };

    for flag in ["--tls-cert", "--tls-key"] {
        let path = flag_value(&args, flag).expect(flag);
        let m = mount_of(path);
        assert_eq!(m["readOnly"], true, "{flag} is mounted read-only");
        let volume = volumes[m["name"].as_str().unwrap()];
        assert_eq!(
            volume["secret"]["secretName"], "mcs-policy-tls",
            "{flag} comes from the TLS secret"
        );
        let file = path.rsplit('/').next().unwrap();
        assert!(
            file == "tls.crt" || file == "tls.key",
            "{flag} is a kubernetes.io/tls key: {file}"
        );
    }

    let cache = mount_of(flag_value(&args, "--cache-dir").expect("--cache-dir"));
    let volume = volumes[cache["name"].as_str().unwrap()];
    assert!(
        volume.get("emptyDir").is_some(),
        "the cache is an emptyDir: {volume}"
    );
    assert_ne!(cache["readOnly"], true, "the cache is writable");
}

#[test]
fn the_service_sends_port_443_to_the_https_container_port() {
    let s = object("Service", SERVICE);
    assert_eq!(s["metadata"]["namespace"], NAMESPACE);
    assert_eq!(s["spec"]["type"], "ClusterIP");
    let ports = s["spec"]["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["port"], 443);
    assert_eq!(ports[0]["targetPort"], "https");
    let d = deployment();
    let container_ports = serve_container(&d)["ports"].clone();
    assert!(
        container_ports
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"] == "https"),
        "the container has a port named https: {container_ports}"
    );
    let labels = &d["spec"]["template"]["metadata"]["labels"];
    for (k, v) in s["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(
            &labels[k], v,
            "the Service selects the Deployment's pods ({k})"
        );
    }
}

#[test]
fn the_disruption_budget_keeps_one_server_pod_up() {
    let pdb = object("PodDisruptionBudget", SERVICE);
    assert_eq!(pdb["apiVersion"], "policy/v1");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        deployment()["spec"]["selector"]["matchLabels"]
    );
}

#[test]
fn with_cert_manager_the_server_account_mounts_no_token_and_no_role_is_bound_to_it() {
    let sa = object("ServiceAccount", SERVICE);
    assert_eq!(sa["automountServiceAccountToken"], false);
    // The self-managed folder binds the certificate's rights to an account of the same name.
    for (file, doc) in all_deploy_objects()
        .into_iter()
        .filter(|(file, _)| !file.starts_with("webhook/"))
    {
        if !matches!(
            doc["kind"].as_str(),
            Some("RoleBinding" | "ClusterRoleBinding")
        ) {
            continue;
        }
        for subject in doc["subjects"].as_array().into_iter().flatten() {
            assert!(
                !(subject["kind"] == "ServiceAccount" && subject["name"] == SERVICE),
                "{file}: {} binds a role to the webhook server's ServiceAccount",
                doc["metadata"]["name"]
            );
        }
    }
}

/// `(namespace or "*", apiGroup, resource, verb)` for every rule of the Roles and ClusterRoles
/// bound to `account`.
fn grants(
    objects: &[(String, Value)],
    account: &str,
) -> BTreeSet<(String, String, String, String)> {
    let mut out = BTreeSet::new();
    for (_, binding) in objects {
        let (role_kind, scope) = match binding["kind"].as_str() {
            Some("ClusterRoleBinding") => ("ClusterRole", "*".to_string()),
            Some("RoleBinding") => (
                "Role",
                binding["metadata"]["namespace"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            _ => continue,
        };
        let bound = binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["kind"] == "ServiceAccount" && s["name"] == account);
        if !bound {
            continue;
        }
        assert_eq!(
            binding["roleRef"]["kind"], role_kind,
            "{}",
            binding["metadata"]["name"]
        );
        let role = objects
            .iter()
            .map(|(_, r)| r)
            .find(|r| {
                r["kind"] == role_kind
                    && r["metadata"]["name"] == binding["roleRef"]["name"]
                    && (role_kind == "ClusterRole"
                        || r["metadata"]["namespace"] == binding["metadata"]["namespace"])
            })
            .unwrap_or_else(|| {
                panic!(
                    "{} refers to a missing {role_kind}",
                    binding["metadata"]["name"]
                )
            });
        for rule in role["rules"].as_array().expect("rules") {
            // A rule limited to some names grants `resource[name]`, each.
            let names: Vec<&str> = match rule.get("resourceNames") {
                Some(names) => strings(names),
                None => vec![""],
            };
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        assert_ne!(verb, "*", "no wildcard verbs");
                        assert_ne!(resource, "*", "no wildcard resources");
                        for name in &names {
                            let resource = match *name {
                                "" => resource.to_string(),
                                name => format!("{resource}[{name}]"),
                            };
                            out.insert((
                                scope.clone(),
                                group.to_string(),
                                resource,
                                verb.to_string(),
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// Every rule bound to the sync controller's ServiceAccount in the hub by the files `paths` (of
/// policies/deploy), as `(namespace or "*", apiGroup, resource, verb)`.
fn hub_grants(paths: &[&str]) -> BTreeSet<(String, String, String, String)> {
    let objects: Vec<(String, Value)> = paths
        .iter()
        .flat_map(|path| {
            documents(&deploy_dir().join(path))
                .into_iter()
                .map(move |d| (path.to_string(), d))
        })
        .collect();
    grants(&objects, "mcs-policy-sync")
}

/// `(scope, group, resource, verb)` for each of `verbs`.
fn rules(
    scope: &str,
    group: &str,
    resource: &str,
    verbs: &[&str],
) -> BTreeSet<(String, String, String, String)> {
    verbs
        .iter()
        .map(|verb| {
            (
                scope.to_string(),
                group.to_string(),
                resource.to_string(),
                verb.to_string(),
            )
        })
        .collect()
}

fn assert_same_grants(
    got: &BTreeSet<(String, String, String, String)>,
    want: &BTreeSet<(String, String, String, String)>,
) {
    let extra: Vec<_> = got.difference(want).collect();
    let missing: Vec<_> = want.difference(got).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "granted but not needed: {extra:?}\nneeded but not granted: {missing:?}"
    );
}

/// What the controller asks of the hub in any deployment (host/src/controller: cache/ lists
/// and watches, schedule/ gets, pass/write/apply.rs patches the finalizer, pass/report/status.rs
/// patches /status, pass/report/events.rs creates core Events, leader/elector.rs reads, creates and
/// replaces its Lease and reads the Lease's namespace, which the manifests create).
fn hub_rules() -> BTreeSet<(String, String, String, String)> {
    let net = "networking.karmada.io";
    [
        rules(
            "*",
            net,
            "multiclusterservices",
            &["get", "list", "watch", "patch"],
        ),
        rules("*", net, "multiclusterservices/status", &["patch"]),
        rules("*", "", "services", &["get", "list", "watch"]),
        rules("*", "", "events", &["create"]),
        rules("*", "", "namespaces[mcs-policy-system]", &["get"]),
        rules(
            NAMESPACE,
            "coordination.k8s.io",
            "leases",
            &["get", "create", "update"],
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[test]
fn the_sync_controller_hub_rbac_grants_exactly_what_it_needs() {
    assert_same_grants(&hub_grants(&["sync-rbac/rbac.yaml"]), &hub_rules());
}

#[test]
fn in_karmada_it_may_also_read_clusters_and_their_secrets_and_nothing_more() {
    let mut want = hub_rules();
    want.extend(rules(
        "*",
        "cluster.karmada.io",
        "clusters",
        &["get", "list", "watch"],
    ));
    // clusters/karmada/clients.rs reads each Cluster's Secret by name.
    want.extend(rules("karmada-cluster", "", "secrets", &["get"]));
    let got = hub_grants(&["sync-rbac/rbac.yaml", "karmada-hub/karmada.yaml"]);
    assert_same_grants(&got, &want);
}

/// What the controller may do in a member with the upstream Multi-Cluster Services API
/// (ServiceExports read and their status patched, ServiceImports and their status managed,
/// ClusterProperties read), on top of the rules sync_member_rbac.rs checks against its
/// requests.
fn member_upstream_rules() -> BTreeSet<(String, String, String, String)> {
    let mcs = "multicluster.x-k8s.io";
    [
        rules("*", mcs, "serviceexports", &["list", "watch"]),
        rules("*", mcs, "serviceexports/status", &["patch"]),
        rules(
            "*",
            mcs,
            "serviceimports",
            &["list", "watch", "create", "patch", "delete"],
        ),
        rules("*", mcs, "serviceimports/status", &["patch"]),
        rules("*", "about.k8s.io", "clusterproperties", &["list", "watch"]),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[test]
fn in_members_it_gets_exactly_the_upstream_apis_rules_and_the_derived_services_patch() {
    let objects: Vec<(String, Value)> = documents(&deploy_dir().join("member/rbac.yaml"))
        .into_iter()
        .map(|d| ("member/rbac.yaml".to_string(), d))
        .collect();
    // The member identity's own name: not the hub's mcs-policy-sync, so that a hub can also be
    // a member (both releases in one cluster).
    let got = grants(&objects, "mcs-policy-member");
    assert!(grants(&objects, "mcs-policy-sync").is_empty());
    let upstream: BTreeSet<_> = got
        .iter()
        .filter(|(_, group, _, _)| group == "multicluster.x-k8s.io" || group == "about.k8s.io")
        .cloned()
        .collect();
    assert_same_grants(&upstream, &member_upstream_rules());
    // The derived Services (`derived-...`) are server-side applied: patch, besides the Service
    // verbs the member role already had.
    let services: BTreeSet<_> = got
        .iter()
        .filter(|(_, group, resource, _)| group.is_empty() && resource == "services")
        .cloned()
        .collect();
    assert_same_grants(
        &services,
        &rules(
            "*",
            "",
            "services",
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
    );
}

/// POSTs `body` to the kube-sim at `url`; the status code and the answer.
async fn post(http: &reqwest::Client, url: &str, path: &str, body: &Value) -> (u16, Value) {
    let reply = http
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .expect("kube-sim answers");
    let status = reply.status().as_u16();
    (status, reply.json().await.expect("a JSON answer"))
}

#[tokio::test]
async fn the_member_folders_crds_are_served_once_applied_to_an_api_server() {
    let (_sim, url) = tests::kube_sim("member");
    let http = reqwest::Client::new();
    let crds: Vec<Value> = documents(&deploy_dir().join("member/upstream-crds.yaml"));
    assert_eq!(crds.len(), 3);
    for crd in &crds {
        let (status, body) = post(
            &http,
            &url,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    for (version, resources) in [
        (
            "multicluster.x-k8s.io/v1alpha1",
            &["serviceexports", "serviceimports"][..],
        ),
        (
            "multicluster.x-k8s.io/v1beta1",
            &["serviceexports", "serviceimports"][..],
        ),
        ("about.k8s.io/v1alpha1", &["clusterproperties"][..]),
        ("about.k8s.io/v1beta1", &["clusterproperties"][..]),
    ] {
        let list: Value = http
            .get(format!("{url}/apis/{version}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let served: BTreeSet<&str> = list["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{version} is served: {list}"))
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        for resource in resources {
            assert!(
                served.contains(resource),
                "{version} {resource}: {served:?}"
            );
            assert!(
                served.contains(format!("{resource}/status").as_str()),
                "{version} {resource}/status: {served:?}"
            );
        }
    }
    let group: Value = http
        .get(format!("{url}/apis/multicluster.x-k8s.io"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1beta1");
    // Objects of each: a ServiceExport, a ServiceImport, the member's ClusterProperty.
    let (status, body) = post(
        &http,
        &url,
        "/apis/multicluster.x-k8s.io/v1beta1/namespaces/default/serviceexports",
        &json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
            "metadata": {"name": "web"}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(
        &http,
        &url,
        "/apis/multicluster.x-k8s.io/v1beta1/namespaces/default/serviceimports",
        &json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
            "metadata": {"name": "web"},
            "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(
        &http,
        &url,
        "/apis/about.k8s.io/v1beta1/clusterproperties",
        &json!({"apiVersion": "about.k8s.io/v1beta1", "kind": "ClusterProperty",
            "metadata": {"name": "cluster.clusterset.k8s.io"}, "spec": {"value": "member1"}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn the_webhook_configurations_are_accepted_by_an_api_server_without_the_upstream_crds() {
    // admissionregistration does not look a rule's resource up: the ServiceExport webhook is
    // accepted where no CRD serves ServiceExports (kube-sim validates rules as the apiserver).
    let pem = rcgen::generate_simple_self_signed(vec!["localhost".into()])
        .unwrap()
        .cert
        .pem();
    let ca = temp_dir().join("apply-ca.crt");
    std::fs::write(&ca, &pem).unwrap();
    let out = mcs_policy(&[
        "manifests",
        "--namespace",
        NAMESPACE,
        "--service",
        SERVICE,
        "--ca-bundle",
        ca.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_sim, url) = tests::kube_sim("hub");
    let http = reqwest::Client::new();
    for doc in documents_of(&String::from_utf8(out.stdout).unwrap(), "manifests") {
        let plural = format!("{}s", doc["kind"].as_str().unwrap().to_lowercase());
        let (status, stored) = post(
            &http,
            &url,
            &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
            &doc,
        )
        .await;
        assert_eq!(status, 201, "{plural}: {stored}");
        for (sent, kept) in doc["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .zip(stored["webhooks"].as_array().unwrap())
        {
            assert_eq!(kept["rules"], sent["rules"], "{plural}");
            assert_eq!(kept["failurePolicy"], "Fail", "{plural}");
            assert_eq!(kept["matchPolicy"], "Equivalent", "{plural}");
        }
        assert_eq!(
            stored["webhooks"].as_array().unwrap().len(),
            doc["webhooks"].as_array().unwrap().len(),
            "{plural}"
        );
    }
    // A rule the apiserver refuses is refused here too: kube-sim does validate rules.
    let bad = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bad"},
        "webhooks": [{"name": "serviceexport.multicluster.x-k8s.io",
            "clientConfig": {"url": "https://x/validate"}, "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": ["multicluster.x-k8s.io"],
                "apiVersions": ["v1beta1"], "resources": ["serviceexports"], "scope": "Namespace"}]}]});
    let (status, body) = post(
        &http,
        &url,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        &bad,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: webhooks[0].rules[0].scope: Unsupported value: \"Namespace\": supported values: \"*\", \"Cluster\", \"Namespaced\""
    );
}

#[test]
fn every_kustomization_lists_every_other_yaml_file_of_its_folder() {
    for dir in deploy_folders() {
        let listed = kustomization_lists_every_other_yaml_file(&dir);
        assert!(
            !listed
                .iter()
                .any(|r| r.contains("../") && r.ends_with(".yaml")),
            "{}: a file outside the folder: {listed:?}",
            dir.display()
        );
    }
    let listed = kustomization_lists_every_other_yaml_file(&webhook_dir());
    for needed in [
        "namespace.yaml",
        "serviceaccount.yaml",
        "deployment.yaml",
        "service.yaml",
        "pdb.yaml",
    ] {
        assert!(
            listed.contains(needed),
            "webhook/kustomization.yaml applies {needed}"
        );
    }
}

/// The resources `dir/kustomization.yaml` lists, after checking that they are all of the
/// folder's other YAML files (or other folders), opt-in files as commented-out entries.
fn kustomization_lists_every_other_yaml_file(dir: &Path) -> BTreeSet<String> {
    let path = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = &documents(&path)[0];
    assert_eq!(doc["kind"], "Kustomization");
    let listed: BTreeSet<String> = strings(&doc["resources"])
        .into_iter()
        .map(String::from)
        .collect();
    // Opt-in files may be listed as commented-out entries (`# - extra.yaml`), so applying the
    // folder does not make what the user did not ask for.
    let opt_in: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix('#')?.trim().strip_prefix("- "))
        .map(|s| s.trim().to_string())
        .filter(|s| s.ends_with(".yaml"))
        .collect();
    let files: BTreeSet<String> = yaml_files(dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|f| f != "kustomization.yaml")
        .collect();
    let shown = path.display();
    for f in &listed {
        let folder = dir.join(f).is_dir();
        assert!(
            files.contains(f) || folder,
            "{shown} lists {f}, which does not exist"
        );
    }
    let covered: BTreeSet<String> = listed.union(&opt_in).cloned().collect();
    let unlisted: Vec<&String> = files.difference(&covered).collect();
    assert!(unlisted.is_empty(), "{shown} does not list {unlisted:?}");
    listed
}

#[test]
fn the_optional_certificate_fills_the_tls_secret_for_the_service_name() {
    let cert = object("Certificate", SERVICE);
    assert_eq!(cert["spec"]["secretName"], "mcs-policy-tls");
    let names = strings(&cert["spec"]["dnsNames"]);
    assert!(
        names.contains(&"mcs-policy.mcs-policy-system.svc"),
        "dnsNames: {names:?}"
    );
    let issuer = cert["spec"]["issuerRef"]["name"]
        .as_str()
        .expect("issuerRef");
    assert_eq!(object("Issuer", issuer)["metadata"]["namespace"], NAMESPACE);
}

/// Dockerfile instructions (`\` continuations joined, comments dropped), grouped by stage.
/// `(namespace or "*", resource, resourceNames, verbs)` of every rule bound to the ServiceAccount
/// `mcs-policy` in the self-managed folder.
fn self_managed_rules() -> BTreeSet<(String, String, Vec<String>, Vec<String>)> {
    let objects: Vec<Value> = objects_in(&self_managed_dir())
        .into_iter()
        .map(|(_, doc)| doc)
        .collect();
    let mut rules = BTreeSet::new();
    for binding in objects.iter().filter(|d| {
        matches!(
            d["kind"].as_str(),
            Some("RoleBinding" | "ClusterRoleBinding")
        )
    }) {
        let ours = binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| {
                s["kind"] == "ServiceAccount" && s["name"] == SERVICE && s["namespace"] == NAMESPACE
            });
        if !ours {
            continue;
        }
        let role_ref = &binding["roleRef"];
        let role = objects
            .iter()
            .find(|d| d["kind"] == role_ref["kind"] && d["metadata"]["name"] == role_ref["name"])
            .unwrap_or_else(|| {
                panic!(
                    "{} binds {role_ref}, which the folder has",
                    binding["metadata"]["name"]
                )
            });
        let scope = if binding["kind"] == "RoleBinding" {
            binding["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        } else {
            "*".to_string()
        };
        for rule in role["rules"].as_array().into_iter().flatten() {
            let list = |key: &str| -> Vec<String> {
                let mut v: Vec<String> = rule[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| x.as_str().unwrap_or_default().to_string())
                    .collect();
                v.sort();
                v
            };
            for resource in list("resources") {
                rules.insert((
                    scope.clone(),
                    resource,
                    list("resourceNames"),
                    list("verbs"),
                ));
            }
        }
    }
    rules
}

#[test]
fn the_self_managed_server_gets_its_token_and_exactly_the_rights_of_its_certificate() {
    let objects = objects_in(&self_managed_dir());
    let find = |kind: &str| {
        objects
            .iter()
            .map(|(_, d)| d)
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == SERVICE)
            .unwrap_or_else(|| panic!("a {kind} {SERVICE} in policies/deploy/webhook"))
            .clone()
    };
    let d = find("Deployment");
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], true);
    assert_eq!(find("ServiceAccount")["automountServiceAccountToken"], true);
    let c = serve_container(&d);
    let args = strings(&c["args"]);
    for (flag, value) in [
        ("--certificate-secret", "mcs-policy-tls"),
        ("--service", SERVICE),
        ("--webhook-configuration", "mcs-policy"),
    ] {
        assert_eq!(flag_value(&args, flag), Some(value), "{flag} in {args:?}");
    }
    assert!(
        flag_value(&args, "--tls-cert").is_none(),
        "no certificate file: {args:?}"
    );
    let flags = serve_flags();
    for arg in args.iter().filter(|a| a.starts_with("--")) {
        assert!(flags.contains(*arg), "`serve` has no flag {arg}");
    }
    // The Secret's namespace: the Pod's own, from the downward API.
    let namespace_from_pod = c["env"].as_array().into_iter().flatten().any(|e| {
        e["name"] == "POD_NAMESPACE"
            && e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    }) || flag_value(&args, "--certificate-namespace") == Some(NAMESPACE);
    assert!(
        namespace_from_pod,
        "the Secret's namespace is the Pod's: {c}"
    );

    let s = |x: &str| x.to_string();
    let configurations = [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ];
    let mut want = BTreeSet::from([
        (
            s(NAMESPACE),
            s("secrets"),
            vec![s("mcs-policy-tls")],
            vec![s("get"), s("update")],
        ),
        (s(NAMESPACE), s("secrets"), vec![], vec![s("create")]),
    ]);
    // The configurations are the installation's (configurations.yaml): the server reads them
    // and patches its CA in, by name; it never creates or deletes one.
    for resource in configurations {
        want.insert((
            s("*"),
            s(resource),
            vec![s("mcs-policy")],
            vec![s("get"), s("patch")],
        ));
    }
    assert_eq!(self_managed_rules(), want);
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let config = find(kind);
        for webhook in config["webhooks"].as_array().unwrap() {
            let client = &webhook["clientConfig"];
            assert!(
                client.get("caBundle").is_none(),
                "{kind}: the server patches its CA in: {client}"
            );
            assert_eq!(client["service"]["name"], SERVICE, "{kind}");
            assert_eq!(client["service"]["namespace"], NAMESPACE, "{kind}");
            assert_eq!(webhook["failurePolicy"], "Fail", "{kind}");
        }
    }
}

fn dockerfile_stages(text: &str) -> Vec<Vec<(String, String)>> {
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    let mut current = String::new();
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(body) = trimmed.strip_suffix('\\') {
            current.push_str(body);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            lines.push(std::mem::take(&mut current));
        }
    }
    for line in lines {
        let (instr, rest) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let instr = instr.to_ascii_uppercase();
        if instr == "FROM" {
            stages.push(Vec::new());
        }
        stages
            .last_mut()
            .unwrap_or_else(|| panic!("Dockerfile: {instr} before the first FROM"))
            .push((instr, rest.trim().to_string()));
    }
    stages
}

#[test]
fn the_dockerfile_builds_the_component_and_the_binary_then_runs_it_as_entrypoint() {
    let text = std::fs::read_to_string(deploy_dir().join("Dockerfile"))
        .expect("policies/deploy/Dockerfile");
    let stages = dockerfile_stages(&text);
    assert!(
        stages.len() >= 2,
        "a multi-stage build: {} stage(s)",
        stages.len()
    );
    let runs = |stage: &[(String, String)]| -> String {
        stage
            .iter()
            .filter(|(i, _)| i == "RUN")
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };

    let builder = &stages[0];
    let from = &builder[0].1;
    assert!(
        from.starts_with("rust:"),
        "the builder starts from a Rust image: {from}"
    );
    let alias = from
        .split_whitespace()
        .last()
        .expect("FROM ... AS name")
        .to_string();
    assert!(
        from.to_ascii_lowercase().contains(" as "),
        "the builder stage is named: {from}"
    );
    let build = runs(builder);
    assert!(
        build.contains("rustup target add wasm32-unknown-unknown"),
        "the builder adds the wasm target:\n{build}"
    );
    // The shipped binary is the profile-guided build of scripts/build-release.sh, whose builds
    // are of the locked release of mcs-policy.
    let release = build
        .split("&&")
        .find(|c| c.contains("scripts/build-release.sh"))
        .unwrap_or_else(|| panic!("the builder runs scripts/build-release.sh:\n{build}"));
    let binary = release
        .split_whitespace()
        .last()
        .filter(|b| b.starts_with('/'))
        .unwrap_or_else(|| panic!("`{}` names where the binary goes", release.trim()));
    let script = std::fs::read_to_string(workspace_root().join("scripts/build-release.sh"))
        .expect("scripts/build-release.sh");
    let cargo = script
        .lines()
        .find(|l| !l.starts_with('#') && l.contains("cargo build --release"))
        .expect("scripts/build-release.sh runs cargo build --release");
    for part in ["-p mcs-policy", "--locked"] {
        assert!(cargo.contains(part), "`{}` has {part}", cargo.trim());
    }
    assert!(
        script.contains("build \"-Cprofile-use="),
        "scripts/build-release.sh builds with the profile"
    );

    let runtime = stages.last().unwrap();
    assert_eq!(
        runtime[0].1, "scratch",
        "the runtime is scratch plus the staged root"
    );
    // The root is staged by scripts/image-rootfs.sh from the binary the builder made, the one
    // script scripts/build-image.sh uses too.
    let rootfs = build
        .lines()
        .find(|l| l.contains("scripts/image-rootfs.sh"))
        .unwrap_or_else(|| {
            panic!("the builder stages the root with scripts/image-rootfs.sh:\n{build}")
        });
    let staged = rootfs
        .split_whitespace()
        .last()
        .expect("the root's directory")
        .to_string();
    assert!(
        rootfs.contains(binary),
        "image-rootfs.sh stages {binary}: {rootfs}"
    );
    let instr = |name: &str| {
        runtime
            .iter()
            .filter(|(i, _)| i == name)
            .map(|(_, r)| r.clone())
            .collect::<Vec<_>>()
    };
    assert!(
        instr("COPY")
            .iter()
            .any(|c| c.trim() == format!("--from={alias} {staged} /")),
        "the runtime copies the staged root {staged} from the {alias} stage"
    );
    let entrypoint = instr("ENTRYPOINT");
    assert_eq!(entrypoint.len(), 1, "one ENTRYPOINT in the final stage");
    let entrypoint: Vec<String> =
        serde_json::from_str(&entrypoint[0]).expect("ENTRYPOINT in exec form");
    assert_eq!(entrypoint, ["/mcs-policy"]);
    let user = instr("USER");
    assert!(
        user.last()
            .is_some_and(|u| !u.starts_with("root") && !u.starts_with('0')),
        "runs as non-root: {user:?}"
    );
    let cmd = instr("CMD");
    let cmd: Vec<String> =
        serde_json::from_str(cmd.last().expect("a CMD")).expect("CMD in exec form");
    assert_eq!(cmd[0], "serve");
    let flags = serve_flags();
    for arg in cmd.iter().filter(|a| a.starts_with("--")) {
        assert!(
            flags.contains(arg),
            "CMD passes {arg}, which `serve` does not have"
        );
    }
}

#[test]
fn the_crd_is_the_namespaced_multiclusterservice_with_a_status_subresource() {
    let crds: Vec<Value> = yaml_files(&workspace_root().join("policies/crds"))
        .iter()
        .flat_map(|p| documents(p))
        .filter(|d| d["kind"] == "CustomResourceDefinition")
        .collect();
    let crd = crds
        .iter()
        .find(|d| d["metadata"]["name"] == "multiclusterservices.networking.karmada.io")
        .expect("the MultiClusterService CRD");
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "networking.karmada.io");
    assert_eq!(spec["names"]["kind"], "MultiClusterService");
    assert_eq!(spec["names"]["plural"], "multiclusterservices");
    assert_eq!(spec["names"]["shortNames"], json!(["mcs"]));
    assert_eq!(spec["scope"], "Namespaced");
    let versions = spec["versions"].as_array().expect("versions");
    assert!(
        versions
            .iter()
            .any(|v| v["name"] == "v1alpha1" && v["served"] == true && v["storage"] == true),
        "v1alpha1 is served and stored"
    );
    for v in versions {
        assert!(
            v["subresources"]["status"].is_object(),
            "{} has the status subresource",
            v["name"]
        );
    }
}

#[test]
fn manifests_prints_a_validating_and_a_mutating_configuration_for_the_service() {
    let service = object("Service", SERVICE);
    let namespace = service["metadata"]["namespace"].as_str().unwrap();
    let name = service["metadata"]["name"].as_str().unwrap();
    let port = service["spec"]["ports"][0]["port"].clone();
    assert_eq!((namespace, name), (NAMESPACE, SERVICE));

    let pem = rcgen::generate_simple_self_signed(vec!["localhost".into()])
        .expect("self-signed certificate")
        .cert
        .pem();
    let ca = temp_dir().join("ca.crt");
    std::fs::write(&ca, &pem).unwrap();
    let out = mcs_policy(&[
        "manifests",
        "--namespace",
        namespace,
        "--service",
        name,
        "--ca-bundle",
        ca.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "manifests: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents_of(
        &String::from_utf8(out.stdout).expect("UTF-8"),
        "mcs-policy manifests",
    );
    let kinds: Vec<&str> = docs
        .iter()
        .map(|d| d["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration"
        ]
    );

    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
    for (doc, path) in docs.iter().zip([
        "/validate-multiclusterservice",
        "/mutate-multiclusterservice",
    ]) {
        let kind = doc["kind"].as_str().unwrap();
        assert_eq!(
            doc["apiVersion"], "admissionregistration.k8s.io/v1",
            "{kind}"
        );
        assert!(
            doc["metadata"]["name"]
                .as_str()
                .is_some_and(|n| !n.is_empty()),
            "{kind} is named"
        );
        let webhooks = doc["webhooks"].as_array().expect("webhooks");
        let names: Vec<&str> = webhooks
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        if kind == "ValidatingWebhookConfiguration" {
            // ServiceExports of the upstream MCS API are validated too, never defaulted.
            assert_eq!(
                names,
                [
                    "multiclusterservice.karmada.io",
                    "serviceexport.multicluster.x-k8s.io"
                ]
            );
            let export = &webhooks[1];
            assert_eq!(
                export["rules"],
                json!([{
                    "operations": ["CREATE", "UPDATE"],
                    "apiGroups": ["multicluster.x-k8s.io"],
                    "apiVersions": ["v1alpha1", "v1beta1"],
                    "resources": ["serviceexports"],
                    "scope": "Namespaced",
                }])
            );
            // Everything but the name and the rule as the MultiClusterService webhook has it.
            let without = |w: &Value| {
                let mut w = w.clone();
                let map = w.as_object_mut().unwrap();
                map.remove("name");
                map.remove("rules");
                w
            };
            assert_eq!(without(export), without(&webhooks[0]));
        } else {
            assert_eq!(names, ["multiclusterservice.karmada.io"]);
        }
        let w = &webhooks[0];
        let rules = w["rules"].as_array().expect("rules");
        assert_eq!(rules.len(), 1, "{kind} has one rule");
        assert_eq!(
            rules[0]["operations"],
            json!(["CREATE", "UPDATE"]),
            "{kind}"
        );
        assert_eq!(
            rules[0]["apiGroups"],
            json!(["networking.karmada.io"]),
            "{kind}"
        );
        assert_eq!(
            rules[0]["resources"],
            json!(["multiclusterservices"]),
            "{kind}"
        );
        assert_eq!(rules[0]["scope"], "Namespaced", "{kind}");
        assert_eq!(w["sideEffects"], "None", "{kind}");
        assert_eq!(w["admissionReviewVersions"], json!(["v1"]), "{kind}");
        assert_eq!(w["failurePolicy"], "Fail", "{kind}");
        assert_eq!(w["matchPolicy"], "Equivalent", "{kind}");
        assert_eq!(w["timeoutSeconds"], 3, "{kind}");
        assert_eq!(
            w["clientConfig"]["service"],
            json!({"namespace": NAMESPACE, "name": SERVICE, "path": path, "port": port}),
            "{kind}"
        );
        assert_eq!(w["clientConfig"]["service"]["port"], 443, "{kind}");
        assert_eq!(
            w["clientConfig"]["caBundle"],
            ca_bundle.as_str(),
            "{kind}: caBundle is the PEM file in base64"
        );
    }
}

#[test]
fn manifests_refuses_a_ca_bundle_that_is_not_pem() {
    let not_pem = temp_dir().join("not-a-certificate.txt");
    std::fs::write(&not_pem, "this is not a certificate\n").unwrap();
    let out = mcs_policy(&[
        "manifests",
        "--namespace",
        NAMESPACE,
        "--service",
        SERVICE,
        "--ca-bundle",
        not_pem.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "a non-PEM CA bundle is refused");
    assert!(
        out.stdout.is_empty(),
        "nothing is printed for kubectl to apply"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not-a-certificate.txt") && stderr.contains("PEM"),
        "the message names the file and says what is wrong: {stderr}"
    );
}

#[test]
fn manifests_can_point_at_a_url_for_api_servers_that_cannot_resolve_the_service() {
    let pem = rcgen::generate_simple_self_signed(vec!["localhost".into()])
        .expect("self-signed certificate")
        .cert
        .pem();
    let ca = temp_dir().join("url-ca.crt");
    std::fs::write(&ca, &pem).unwrap();
    let out = mcs_policy(&[
        "manifests",
        "--url",
        "https://mcs-policy.example.com:8443/",
        "--ca-bundle",
        ca.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents_of(&String::from_utf8(out.stdout).unwrap(), "manifests --url");
    let urls: Vec<&str> = docs
        .iter()
        .flat_map(|d| d["webhooks"].as_array().unwrap())
        .map(|w| w["clientConfig"]["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "https://mcs-policy.example.com:8443/validate-multiclusterservice",
            "https://mcs-policy.example.com:8443/validate-multiclusterservice",
            "https://mcs-policy.example.com:8443/mutate-multiclusterservice"
        ]
    );
    assert!(
        docs.iter()
            .flat_map(|d| d["webhooks"].as_array().unwrap())
            .all(|w| w["clientConfig"].get("service").is_none())
    );

    let both = mcs_policy(&[
        "manifests",
        "--url",
        "https://x",
        "--namespace",
        "n",
        "--service",
        "s",
        "--ca-bundle",
        ca.to_str().unwrap(),
    ]);
    assert!(
        !both.status.success(),
        "--url with a Service reference must be refused"
    );
    let neither = mcs_policy(&["manifests", "--ca-bundle", ca.to_str().unwrap()]);
    assert!(!neither.status.success(), "a target is required");
}
