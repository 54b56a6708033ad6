//! What deploy_kustomize.rs and deploy_chart.rs check of a set of Kubernetes objects, whether a
//! real kustomize built them or a real `helm template` rendered them: each a valid object of its
//! type, every namespace, ServiceAccount and role that something needs present, the Deployments'
//! and Jobs' arguments accepted by `mcs-policy`'s own command line, probes on served ports,
//! restricted Pod Security, budgets that select their pods.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use clap::Parser;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use mcs_policy::config::{Args, Command as McsCommand};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `(kind, namespace or "", name)`.
pub type Id = (String, String, String);

/// The first `name` on PATH (`kubectl`, `helm`), or a panic saying how to get one.
pub fn tool(name: &str, version_args: &[&str]) -> String {
    match Command::new(name).args(version_args).output() {
        Ok(out) if out.status.success() => name.to_string(),
        other => panic!(
            "these tests run a real `{name}`, and none runs here ({other:?}): put one first on \
             PATH, e.g. PATH=\"$(scripts/k8s-tools.sh):$PATH\" (scripts/test.sh does)"
        ),
    }
}

/// The documents of a YAML stream, as JSON values (empty ones dropped).
pub fn documents(text: &str, origin: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("{origin}: not YAML: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

pub fn id(o: &Value) -> Id {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (
        text(&o["kind"]),
        text(&o["metadata"]["namespace"]),
        text(&o["metadata"]["name"]),
    )
}

pub fn of_kind<'a>(objects: &'a [Value], kind: &str) -> impl Iterator<Item = &'a Value> {
    let kind = kind.to_string();
    objects.iter().filter(move |o| o["kind"] == kind.as_str())
}

pub fn has(objects: &[Value], kind: &str, namespace: &str, name: &str) -> bool {
    let want = (kind.to_string(), namespace.to_string(), name.to_string());
    objects.iter().any(|o| id(o) == want)
}

/// The one object of that kind and name.
pub fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = of_kind(objects, kind)
        .filter(|o| o["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    found[0]
}

pub fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|s| s.as_str().expect("a string"))
        .collect()
}

/// The objects as a set of ids, checking none is there twice.
pub fn ids(label: &str, objects: &[Value]) -> BTreeSet<Id> {
    let got: BTreeSet<Id> = objects.iter().map(id).collect();
    assert_eq!(got.len(), objects.len(), "{label}: an object twice");
    got
}

/// `(kind, namespace, name)` triples as a set of ids.
pub fn want(objects: &[(&str, &str, &str)]) -> BTreeSet<Id> {
    objects
        .iter()
        .map(|(k, ns, n)| (k.to_string(), ns.to_string(), n.to_string()))
        .collect()
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

/// Every object is a valid object of its Kubernetes type, with no field the type lacks.
pub fn check_valid_objects(label: &str, objects: &[Value]) {
    for o in objects {
        let (kind, namespace, name) = id(o);
        let rbac = "rbac.authorization.k8s.io/v1";
        let admission = "admissionregistration.k8s.io/v1";
        let back = match (o["apiVersion"].as_str().unwrap_or_default(), kind.as_str()) {
            ("v1", "Namespace") => round_trip::<Namespace>(o),
            ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(o),
            ("v1", "Service") => round_trip::<Service>(o),
            ("v1", "Secret") => round_trip::<Secret>(o),
            ("apps/v1", "Deployment") => round_trip::<Deployment>(o),
            ("batch/v1", "Job") => round_trip::<Job>(o),
            ("policy/v1", "PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(o),
            (v, "ClusterRole") if v == rbac => round_trip::<ClusterRole>(o),
            (v, "ClusterRoleBinding") if v == rbac => round_trip::<ClusterRoleBinding>(o),
            (v, "Role") if v == rbac => round_trip::<Role>(o),
            (v, "RoleBinding") if v == rbac => round_trip::<RoleBinding>(o),
            (v, "ValidatingWebhookConfiguration") if v == admission => {
                round_trip::<ValidatingWebhookConfiguration>(o)
            }
            (v, "MutatingWebhookConfiguration") if v == admission => {
                round_trip::<MutatingWebhookConfiguration>(o)
            }
            // Read only: its schema's numbers (`minimum: 0`) come back as floats.
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
                serde_json::from_value::<CustomResourceDefinition>(o.clone()).unwrap_or_else(
                    |err| panic!("{label}: CustomResourceDefinition {name} is not valid: {err}"),
                );
                continue;
            }
            // cert-manager's and the Prometheus Operator's kinds: not Kubernetes types.
            ("cert-manager.io/v1", "Issuer" | "Certificate") => continue,
            ("monitoring.coreos.com/v1", "ServiceMonitor") => continue,
            (version, kind) => panic!("{label}: no check for {version} {kind}"),
        };
        let back = back
            .unwrap_or_else(|err| panic!("{label}: {kind} {namespace}/{name} is not valid: {err}"));
        if let Some(at) = first_difference(o, &back, String::new()) {
            panic!(
                "{label}: {kind} {namespace}/{name}: {at} is not a field of its type (or not of \
                 its type's shape)"
            );
        }
    }
}

/// Every namespace, ServiceAccount and role that an object needs is among `objects`, or (for
/// namespaces) in `given`: namespaces that exist before (the release namespace, Karmada's).
pub fn check_references(label: &str, objects: &[Value], given: &[&str]) {
    let present = |kind: &str, ns: &str, name: &str| has(objects, kind, ns, name);
    for o in objects {
        let (kind, namespace, name) = id(o);
        let cluster_scoped = matches!(
            kind.as_str(),
            "Namespace"
                | "ClusterRole"
                | "ClusterRoleBinding"
                | "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "CustomResourceDefinition"
        );
        if cluster_scoped {
            assert!(
                namespace.is_empty(),
                "{label}: {kind} {name} has a namespace"
            );
            continue;
        }
        // Never left to kubectl's current namespace.
        assert!(
            !namespace.is_empty(),
            "{label}: {kind} {name} has no namespace"
        );
        assert!(
            present("Namespace", "", &namespace) || given.contains(&namespace.as_str()),
            "{label}: {kind} {name}: namespace {namespace} is not made here"
        );
    }
    for binding in of_kind(objects, "RoleBinding").chain(of_kind(objects, "ClusterRoleBinding")) {
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
            "{label}: {kind} {name} refers to a missing {role}"
        );
        for subject in binding["subjects"].as_array().expect("subjects") {
            assert_eq!(subject["kind"], "ServiceAccount", "{label}: {kind} {name}");
            let (ns, account) = (
                subject["namespace"].as_str().expect("subject namespace"),
                subject["name"].as_str().unwrap(),
            );
            assert!(
                present("ServiceAccount", ns, account),
                "{label}: {kind} {name} binds {ns}/{account}, which is not made here"
            );
        }
    }
    for w in workloads(objects) {
        let (kind, namespace, name) = id(w);
        let account = pod(w)["serviceAccountName"]
            .as_str()
            .unwrap_or_else(|| panic!("{label}: {kind} {name} names its ServiceAccount"));
        assert!(
            present("ServiceAccount", &namespace, account),
            "{label}: {kind} {name} runs as {account}, which is not made here"
        );
    }
    for s in of_kind(objects, "Secret") {
        if s["type"] == "kubernetes.io/service-account-token" {
            let (_, namespace, name) = id(s);
            let account = s["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                .as_str()
                .unwrap_or_else(|| panic!("{label}: token {name} names its account"));
            assert!(
                present("ServiceAccount", &namespace, account),
                "{label}: {name}"
            );
        }
    }
}

/// The Deployments and Jobs.
pub fn workloads(objects: &[Value]) -> impl Iterator<Item = &Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == "Deployment" || o["kind"] == "Job")
}

/// The pod spec of a Deployment or Job.
pub fn pod(w: &Value) -> &Value {
    &w["spec"]["template"]["spec"]
}

/// The one container of a Deployment or Job.
pub fn container(w: &Value) -> &Value {
    let containers = pod(w)["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "one container");
    &containers[0]
}

/// The arguments of `w`'s container with `$(VAR)` replaced as the kubelet does, each VAR being
/// one of its `env` entries: a value, or the Pod's namespace (`fieldRef` `metadata.namespace`).
pub fn expanded_args(w: &Value) -> Vec<String> {
    let c = container(w);
    // Variables the kubelet fills from elsewhere (another field, a Secret) have no value here:
    // an argument may not use them.
    let env: BTreeMap<&str, Option<String>> = c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let name = e["name"].as_str().unwrap();
            let field = &e["valueFrom"]["fieldRef"]["fieldPath"];
            let value = match e["value"].as_str() {
                Some(value) => Some(value.to_string()),
                None if field == "metadata.namespace" => Some(id(w).1),
                None => None,
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
                    .unwrap_or_else(|| panic!("{arg}: ${name} is not in the container's env"))
                    .as_deref()
                    .unwrap_or_else(|| panic!("{arg}: ${name}: a value or the Pod's namespace"));
                arg.replace_range(start..=end, value);
            }
            arg
        })
        .collect()
}

/// The value following `flag`.
pub fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

/// The volume mounted over `path` in `w`'s container (the longest mount path that holds it),
/// and the file name it gives `path` within that volume.
pub fn mount_of<'a>(w: &'a Value, path: &str) -> (&'a Value, &'a Value, String) {
    let c = container(w);
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
    let volume = pod(w)["volumes"]
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

/// `w`'s arguments parsed by `mcs-policy`'s own command line.
pub fn parsed(label: &str, w: &Value) -> (Vec<String>, McsCommand) {
    let args = expanded_args(w);
    let argv = std::iter::once("mcs-policy".to_string()).chain(args.iter().cloned());
    let parsed = Args::try_parse_from(argv)
        .unwrap_or_else(|err| panic!("{label}: mcs-policy refuses {args:?}:\n{err}"));
    assert_eq!(parsed.log_format, "json", "{label}: logs for a collector");
    (args, parsed.command)
}

/// Every file a flag names (`--tls-cert`, `--kubeconfig`, ...) is mounted read-only from a
/// Secret; the cache (`--cache-dir`) is a writable emptyDir.
pub fn check_mounts(label: &str, w: &Value) {
    let args = expanded_args(w);
    for name in [
        "--tls-cert",
        "--tls-key",
        "--kubeconfig",
        "--member-kubeconfig",
        "--webhook-kubeconfig",
    ] {
        if let Some(path) = flag(&args, name) {
            let (mount, volume, _) = mount_of(w, path);
            assert_eq!(mount["readOnly"], true, "{label}: {name} read-only");
            assert!(
                volume["secret"]["secretName"].is_string(),
                "{label}: {name} comes from a Secret"
            );
        }
    }
    if let Some(cache) = flag(&args, "--cache-dir") {
        let (mount, volume, _) = mount_of(w, cache);
        assert!(
            volume.get("emptyDir").is_some(),
            "{label}: the cache is an emptyDir"
        );
        assert_ne!(mount["readOnly"], true, "{label}: the cache is writable");
    }
}

/// The probes ask /readyz and /healthz on the port `serve` or `sync` serves them, and a startup
/// probe (/healthz) gives a slow start a minute before the liveness probe counts.
pub fn check_probes(label: &str, d: &Value) {
    let c = container(d);
    let args = expanded_args(d);
    let (listen, scheme) = match args[0].as_str() {
        "serve" => (flag(&args, "--listen"), "HTTPS"),
        _ => (flag(&args, "--metrics-listen"), "HTTP"),
    };
    let port: u64 = listen
        .and_then(|l| l.rsplit(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{label}: the served address {listen:?}"));
    let named = c["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["containerPort"] == port)
        .unwrap_or_else(|| panic!("{label}: port {port} is declared"));
    for (probe, path) in [
        ("readinessProbe", "/readyz"),
        ("livenessProbe", "/healthz"),
        ("startupProbe", "/healthz"),
    ] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{label}: {probe}");
        assert_eq!(get["scheme"], scheme, "{label}: {probe}");
        assert!(
            get["port"] == named["name"] || get["port"] == port,
            "{label}: {probe} asks port {}",
            get["port"]
        );
    }
    let startup = &c["startupProbe"];
    let patience = startup["periodSeconds"].as_u64().expect("periodSeconds")
        * startup["failureThreshold"]
            .as_u64()
            .expect("failureThreshold");
    assert!(
        patience >= 60,
        "{label}: the startup probe waits a minute ({patience}s)"
    );
    assert!(
        c["livenessProbe"].get("initialDelaySeconds").is_none(),
        "{label}: the startup probe, not a delay, holds the liveness probe back"
    );
}

/// The pod of a Deployment or Job meets the restricted Pod Security Standard.
pub fn check_restricted(label: &str, w: &Value) {
    let pod = pod(w);
    let c = container(w);
    let sc = &c["securityContext"];
    let effective = |key: &str| sc.get(key).or_else(|| pod["securityContext"].get(key));
    assert_eq!(
        effective("runAsNonRoot"),
        Some(&Value::Bool(true)),
        "{label}"
    );
    // No user: the image's USER (65532) runs, or the one OpenShift assigns.
    assert_eq!(effective("runAsUser"), None, "{label}: no fixed UID");
    assert_eq!(pod["securityContext"].get("fsGroup"), None, "{label}");
    assert_eq!(
        effective("seccompProfile").map(|p| &p["type"]),
        Some(&Value::from("RuntimeDefault")),
        "{label}"
    );
    assert_eq!(sc["allowPrivilegeEscalation"], false, "{label}");
    assert_eq!(sc["readOnlyRootFilesystem"], true, "{label}");
    assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"], "{label}");
    assert!(sc["capabilities"].get("add").is_none(), "{label}");
    assert_ne!(sc["privileged"], true, "{label}");
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_ne!(pod[host], true, "{label}: {host}");
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
            "{label}: volume {volume} is not one restricted pods may have"
        );
    }
    let requests = &c["resources"]["requests"];
    let limits = &c["resources"]["limits"];
    assert!(
        requests["cpu"].is_string() && requests["memory"].is_string(),
        "{label}"
    );
    assert!(limits["memory"].is_string(), "{label}: a memory limit");
}

/// Every Namespace made enforces `restricted`.
pub fn check_namespaces_restricted(label: &str, objects: &[Value]) {
    for ns in of_kind(objects, "Namespace") {
        let labels = &ns["metadata"]["labels"];
        assert_eq!(
            labels["pod-security.kubernetes.io/enforce"], "restricted",
            "{label}: {}",
            ns["metadata"]["name"]
        );
    }
}

/// Every budget selects one Deployment, keeps one pod of it and lets one go.
pub fn check_budgets(label: &str, objects: &[Value]) {
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
        assert_eq!(selected.len(), 1, "{label}: {name} selects one Deployment");
        let replicas = selected[0]["spec"]["replicas"].as_u64().unwrap();
        let min = pdb["spec"]["minAvailable"].as_u64().expect("minAvailable");
        assert!(
            min >= 1 && min < replicas,
            "{label}: {name} keeps one pod and lets one go"
        );
    }
}

/// Everything above, for one set of objects.
pub fn check_all(label: &str, objects: &[Value], given_namespaces: &[&str]) {
    check_valid_objects(label, objects);
    check_references(label, objects, given_namespaces);
    check_namespaces_restricted(label, objects);
    check_budgets(label, objects);
    for w in workloads(objects) {
        let label = format!("{label}: {} {}", w["kind"].as_str().unwrap(), id(w).2);
        let (_, command) = parsed(&label, w);
        if w["kind"] == "Deployment" {
            check_probes(&label, w);
            if let McsCommand::Sync(sync) = command {
                sync.origins()
                    .unwrap_or_else(|err| panic!("{label}: `sync` would not start: {err}"));
                assert!(sync.leader.leader_elect, "{label}: replicas elect a leader");
            }
        }
        check_mounts(&label, w);
        check_restricted(&label, w);
    }
}
