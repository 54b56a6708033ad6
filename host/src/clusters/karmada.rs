//! The Karmada source of member clusters (SPEC §4.1, push mode), behind
//! [`super::Source::Karmada`]: the members are the hub's `clusters.cluster.karmada.io` objects
//! in `Push` mode, each reached at its `spec.apiEndpoint` with the token and CA bundle of the
//! Secret its `spec.secretRef` names (as `karmadactl join` writes it); a member is ready when
//! its `Ready` condition is `True`. The controller asks for the membership every probe
//! interval, so clusters joining or leaving Karmada join or leave the sync without a restart.
//!
//! Reading an object is pure ([`decide`], [`connection`], [`fingerprint`], [`kubeconfig`]);
//! only listing the clusters, reading their secrets and building clients touch the hub.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Api, Config};
use serde::Deserialize;
use serde_json::json;

use super::api_error::chain;
use super::{ClientOptions, Cluster, ClusterError, Membership, Registry, build_client};
use crate::engine::PolicyEngine;

/// The Secret key of the bearer token (Karmada's `SecretTokenKey`).
const TOKEN_KEY: &str = "token";
/// The Secret key of the PEM CA bundle (Karmada's `SecretCADataKey`).
const CA_KEY: &str = "caBundle";
/// Time budget of the policy's cluster-name check (a few microseconds of work).
const NAME_CHECK_BUDGET: Duration = Duration::from_secs(1);
/// The context name of the in-memory kubeconfig a member's client is built from.
const CONTEXT: &str = "karmada-member";

/// `cluster.karmada.io/v1alpha1` `Cluster`, cluster-scoped.
pub fn resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster");
    ApiResource::from_gvk_with_plural(&gvk, "clusters")
}

/// The members as Karmada's Cluster objects in the hub describe them.
pub struct Karmada {
    hub: Cluster,
    /// `--member` names: when not empty, only these clusters are members.
    only: Vec<String>,
    options: ClientOptions,
    /// The policy component: which names can name a cluster is its rule.
    policy: PolicyEngine,
    memory: Mutex<Memory>,
}

/// Why a member's secret could not be had: for this pass only, or until it changes.
enum SecretError {
    Transient(Skip),
    Final(Skip),
}

/// One Cluster object this pass: a member with its client, or why not.
type Outcome = Result<(Target, Cluster), Skip>;

/// What the source keeps between passes.
#[derive(Default)]
struct Memory {
    /// Clients by cluster name, with what they were built from.
    clients: HashMap<String, (Fingerprint, Cluster)>,
    /// Why each cluster was last left out, as logged (logged again only when it changes).
    skipped: HashMap<String, Skip>,
    /// The members of the last pass and whether they were ready.
    members: HashMap<String, bool>,
}

impl Karmada {
    /// The source for `hub`; `only`, when not empty, restricts the members to those names;
    /// `policy` says which names are cluster names.
    pub fn new(
        hub: Cluster,
        only: Vec<String>,
        options: ClientOptions,
        policy: PolicyEngine,
    ) -> Self {
        Karmada {
            hub,
            only,
            options,
            policy,
            memory: Mutex::new(Memory::default()),
        }
    }

    /// The source whose hub is the context `hub` of the kubeconfig at `path`.
    pub async fn from_kubeconfig(
        path: &Path,
        hub: &str,
        only: &[String],
        options: &ClientOptions,
        policy: PolicyEngine,
    ) -> Result<Self, ClusterError> {
        let shown = path.display().to_string();
        let kubeconfig = super::read_kubeconfig(path)?;
        if !kubeconfig.contexts.iter().any(|c| c.name == hub) {
            return Err(ClusterError::UnknownContext {
                path: shown,
                context: hub.to_string(),
            });
        }
        let hub = super::cluster(&kubeconfig, hub, hub, options).await?;
        Ok(Karmada::new(hub, only.to_vec(), options.clone(), policy))
    }

    /// The hub.
    pub fn hub(&self) -> &Cluster {
        &self.hub
    }

    /// The push-mode clusters that can be reached now, and which are ready. A cluster that
    /// cannot be used (Pull mode, no endpoint, secret missing, ...) is left out and logged,
    /// once per reason; only a failure to list the clusters fails the whole membership.
    pub async fn membership(&self) -> Result<Membership, ClusterError> {
        let api: Api<DynamicObject> = Api::all_with(self.hub.client.clone(), &resource());
        let objects = api
            .list(&ListParams::default())
            .await
            .map_err(|source| ClusterError::KarmadaClusters {
                source: Box::new(source),
            })?
            .items;
        let mut outcomes = Vec::with_capacity(objects.len());
        for object in &objects {
            let name = object.metadata.name.clone().unwrap_or_default();
            let name_problem = |name: &str| name_problem(&self.policy, name);
            let outcome = match decide(object, &self.only, name_problem) {
                Ok(target) => self.connect(&target).await.map(|cluster| (target, cluster)),
                Err(Skip::NotSelected) => continue,
                Err(skip) => Err(skip),
            };
            outcomes.push((name, outcome));
        }
        for wanted in &self.only {
            if !objects
                .iter()
                .any(|o| o.metadata.name.as_ref() == Some(wanted))
            {
                outcomes.push((wanted.clone(), Err(Skip::NotFound)));
            }
        }
        Ok(self.record(outcomes))
    }

    /// The member `target` with a client: the cached one while its fingerprint holds, else a
    /// new one (with a new [`Cluster::client_id`]).
    async fn connect(&self, target: &Target) -> Result<Cluster, Skip> {
        let secret = match self.secret(&target.secret).await {
            Ok(secret) => secret,
            // A hub that does not answer now says nothing about the member: keep its client
            // rather than drop it (and its watch) for one pass.
            Err(SecretError::Transient(skip)) => {
                let cached = self.cached(&target.name, None).ok_or(skip.clone())?;
                tracing::warn!(cluster = %target.name, "{skip}; keeping its client");
                return Ok(cached);
            }
            Err(SecretError::Final(skip)) => return Err(skip),
        };
        let print = fingerprint(target, &secret);
        if let Some(cluster) = self.cached(&target.name, Some(&print)) {
            return Ok(cluster);
        }
        let connection = connection(target, &secret)?;
        let config = config(&connection)
            .await
            .map_err(|err| Skip::InvalidConfig(chain(&err)))?;
        let client =
            build_client(config, &self.options).map_err(|err| Skip::Client(chain(&err)))?;
        tracing::info!(cluster = %target.name, server = %connection.server, "built a client for the karmada cluster");
        let cluster = Cluster::new(target.name.clone(), client);
        if let Ok(mut memory) = self.memory.lock() {
            memory
                .clients
                .insert(target.name.clone(), (print, cluster.clone()));
        }
        Ok(cluster)
    }

    /// The cached member `name`, if its fingerprint is `print` (any, when `None`).
    fn cached(&self, name: &str, print: Option<&Fingerprint>) -> Option<Cluster> {
        let memory = self.memory.lock().ok()?;
        let (cached, cluster) = memory.clients.get(name)?;
        print.is_none_or(|p| p == cached).then(|| cluster.clone())
    }

    /// The Secret `reference` points at, from the hub.
    async fn secret(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        let api: Api<Secret> = Api::namespaced(self.hub.client.clone(), &reference.namespace);
        match api.get_opt(&reference.name).await {
            Ok(Some(secret)) => Ok(secret),
            Ok(None) => Err(SecretError::Final(Skip::SecretMissing(
                reference.to_string(),
            ))),
            Err(err) => {
                // 429 and 5xx answers, timeouts and connection failures pass; other answers
                // (403: no permission) are the secret's state.
                let transient = match &err {
                    kube::Error::Api(status) => status.code == 429 || status.code >= 500,
                    _ => true,
                };
                let skip = Skip::SecretUnreadable {
                    secret: reference.to_string(),
                    reason: chain(&err),
                };
                Err(if transient {
                    SecretError::Transient(skip)
                } else {
                    SecretError::Final(skip)
                })
            }
        }
    }

    /// Turns this pass's outcomes into the membership: logs what changed, forgets the clients
    /// of clusters that are gone.
    fn record(&self, outcomes: Vec<(String, Outcome)>) -> Membership {
        let mut members = Vec::new();
        let mut ready = Vec::new();
        let Ok(mut memory) = self.memory.lock() else {
            return Membership {
                registry: Registry {
                    hub: self.hub.clone(),
                    members,
                },
                ready,
            };
        };
        let mut present = HashSet::new();
        let mut skipped = HashSet::new();
        for (name, outcome) in outcomes {
            match outcome {
                Ok((target, cluster)) => {
                    memory.skipped.remove(&name);
                    log_member(&name, memory.members.get(&name).copied(), target.ready);
                    if target.ready {
                        ready.push(name.clone());
                    }
                    present.insert(name.clone());
                    members.push(cluster);
                }
                Err(skip) => {
                    skipped.insert(name.clone());
                    if memory.skipped.get(&name) != Some(&skip) {
                        log_skip(&name, &skip);
                        memory.skipped.insert(name.clone(), skip);
                    }
                }
            }
        }
        for gone in memory.members.keys().filter(|n| !present.contains(*n)) {
            tracing::info!(cluster = %gone, "karmada cluster is no longer a member");
        }
        memory.members = members
            .iter()
            .map(|m| (m.name.clone(), ready.contains(&m.name)))
            .collect();
        memory.clients.retain(|name, _| present.contains(name));
        memory.skipped.retain(|name, _| skipped.contains(name));
        Membership {
            registry: Registry {
                hub: self.hub.clone(),
                members,
            },
            ready,
        }
    }
}

fn log_member(name: &str, before: Option<bool>, ready: bool) {
    match (before, ready) {
        (None, _) => tracing::info!(cluster = %name, ready, "karmada cluster is a member"),
        (Some(false), true) => tracing::info!(cluster = %name, "karmada cluster is ready"),
        (Some(true), false) => {
            tracing::warn!(cluster = %name, "karmada cluster is not ready: its Ready condition is not True")
        }
        _ => {}
    }
}

fn log_skip(name: &str, skip: &Skip) {
    match skip {
        Skip::Pull => tracing::info!(cluster = %name, "karmada cluster is not a member: {skip}"),
        _ => tracing::warn!(cluster = %name, "karmada cluster is not a member: {skip}"),
    }
}

/// A push-mode Cluster object the controller may reach, before its secret is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    /// `spec.apiEndpoint`, as written.
    pub endpoint: String,
    pub secret: SecretRef,
    /// `spec.insecureSkipTLSVerification`.
    pub insecure: bool,
    /// `spec.proxyURL`, when not empty.
    pub proxy: Option<String>,
    /// Its `Ready` condition is `True`.
    pub ready: bool,
}

/// `spec.secretRef`: where the member's credentials are.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct SecretRef {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Why a Cluster object is not a member this pass.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    #[error(
        "it is in Pull mode: Karmada's agent in the cluster syncs it; this controller cannot reach it"
    )]
    Pull,
    #[error("it is not one of the --member names")]
    NotSelected,
    #[error("it was named by --member but no Cluster object has this name")]
    NotFound,
    #[error("its spec.syncMode {0:?} is neither Push nor Pull")]
    UnknownMode(String),
    #[error("its spec cannot be read: {0}")]
    Malformed(String),
    #[error("its name is not a valid cluster name: {0}")]
    InvalidName(String),
    #[error("its spec.apiEndpoint is empty")]
    NoEndpoint,
    #[error("it has no spec.secretRef with a namespace and a name")]
    NoSecret,
    #[error("its secret {0} does not exist")]
    SecretMissing(String),
    #[error("reading its secret {secret} failed: {reason}")]
    SecretUnreadable { secret: String, reason: String },
    #[error("its secret {secret} has no non-empty {key:?}")]
    NoToken { secret: String, key: &'static str },
    #[error("its endpoint, proxy or CA bundle is invalid: {0}")]
    InvalidConfig(String),
    #[error("building its client failed: {0}")]
    Client(String),
}

/// The parts of `spec` membership reads (Karmada's `ClusterSpec`; the JSON names are
/// Karmada's, not camelCase of ours).
#[derive(Debug, Default, Deserialize)]
struct Spec {
    #[serde(default, rename = "syncMode")]
    sync_mode: String,
    #[serde(default, rename = "apiEndpoint")]
    api_endpoint: String,
    #[serde(default, rename = "secretRef")]
    secret_ref: Option<SecretRef>,
    #[serde(default, rename = "insecureSkipTLSVerification")]
    insecure: bool,
    #[serde(default, rename = "proxyURL")]
    proxy_url: String,
}

#[derive(Debug, Default, Deserialize)]
struct Status {
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Debug, Deserialize)]
struct Condition {
    #[serde(default, rename = "type")]
    type_: String,
    #[serde(default)]
    status: String,
}

/// What the Cluster `object` means for the membership (`only`: the `--member` names;
/// `name_problem`: why a name cannot name a cluster, see [`name_problem`]).
pub fn decide(
    object: &DynamicObject,
    only: &[String],
    name_problem: impl Fn(&str) -> Option<String>,
) -> Result<Target, Skip> {
    let name = object.metadata.name.clone().unwrap_or_default();
    if !only.is_empty() && !only.contains(&name) {
        return Err(Skip::NotSelected);
    }
    let spec: Spec = match object.data.get("spec") {
        Some(spec) => Spec::deserialize(spec).map_err(|err| Skip::Malformed(err.to_string()))?,
        None => return Err(Skip::Malformed("it has no spec".to_string())),
    };
    match spec.sync_mode.as_str() {
        "Push" => {}
        "Pull" => return Err(Skip::Pull),
        other => return Err(Skip::UnknownMode(other.to_string())),
    }
    if let Some(problem) = name_problem(&name) {
        return Err(Skip::InvalidName(problem));
    }
    if spec.api_endpoint.is_empty() {
        return Err(Skip::NoEndpoint);
    }
    let secret = match spec.secret_ref {
        Some(r) if !r.namespace.is_empty() && !r.name.is_empty() => r,
        _ => return Err(Skip::NoSecret),
    };
    Ok(Target {
        ready: is_ready(object),
        name,
        endpoint: spec.api_endpoint,
        secret,
        insecure: spec.insecure,
        proxy: Some(spec.proxy_url).filter(|p| !p.is_empty()),
    })
}

/// Its `Ready` condition is `True`; a status that cannot be read counts as not ready.
fn is_ready(object: &DynamicObject) -> bool {
    let Some(status) = object.data.get("status") else {
        return false;
    };
    Status::deserialize(status).is_ok_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// Why `name` cannot name a cluster, as the policy component says (WIT
/// `cluster-name-problem`, SPEC §2.3.4: the names MCS `providerClusters` and `consumerClusters`
/// use, and the prefix of every copied slice's name). Karmada's API enforces the same on its
/// Cluster objects; this guards the controller against stores that do not. A component that
/// gives no answer leaves the cluster out too, saying so.
pub fn name_problem(policy: &PolicyEngine, name: &str) -> Option<String> {
    policy
        .cluster_name_problem(name, NAME_CHECK_BUDGET)
        .unwrap_or_else(|err| Some(format!("the policy component gave no answer: {err}")))
}

/// How to reach a member: what its client is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The endpoint as a URL.
    pub server: String,
    pub token: String,
    /// The PEM CA bundle, unless TLS verification is off.
    pub ca: Option<Vec<u8>>,
    pub insecure: bool,
    pub proxy: Option<String>,
}

/// `target` with the credentials of `secret`, as Karmada builds a member's client: the token
/// is required; the CA bundle is used unless TLS verification is off.
pub fn connection(target: &Target, secret: &Secret) -> Result<Connection, Skip> {
    let data = secret.data.as_ref();
    let value = |key: &str| {
        data.and_then(|d| d.get(key))
            .map(|v| v.0.clone())
            .filter(|v| !v.is_empty())
    };
    let token = value(TOKEN_KEY)
        .and_then(|t| String::from_utf8(t).ok())
        .ok_or_else(|| Skip::NoToken {
            secret: target.secret.to_string(),
            key: TOKEN_KEY,
        })?;
    let ca = if target.insecure { None } else { value(CA_KEY) };
    Ok(Connection {
        server: server_url(&target.endpoint, ca.is_some() || target.insecure),
        token,
        ca,
        insecure: target.insecure,
        proxy: target.proxy.clone(),
    })
}

/// `endpoint` as a URL. Karmada allows `host`, `host:port`, `IP` or `IP:port`; like
/// client-go, a scheme-less endpoint gets `https://` when TLS is configured (a CA bundle, or
/// verification off) and `http://` otherwise.
fn server_url(endpoint: &str, tls: bool) -> String {
    match endpoint.split_once("://") {
        Some((scheme, rest)) if !scheme.is_empty() && !rest.is_empty() => endpoint.to_string(),
        _ if tls => format!("https://{endpoint}"),
        _ => format!("http://{endpoint}"),
    }
}

/// What a member's client depends on: when it changes (a rotated secret gets a new
/// resourceVersion), the client is built again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    endpoint: String,
    secret: SecretRef,
    secret_version: Option<String>,
    insecure: bool,
    proxy: Option<String>,
}

/// The fingerprint of `target` reached with `secret`.
pub fn fingerprint(target: &Target, secret: &Secret) -> Fingerprint {
    Fingerprint {
        endpoint: target.endpoint.clone(),
        secret: target.secret.clone(),
        secret_version: secret.metadata.resource_version.clone(),
        insecure: target.insecure,
        proxy: target.proxy.clone(),
    }
}

/// A one-context kubeconfig for `connection`, so kube reads the CA bundle, the TLS and proxy
/// settings exactly as it reads them from a file.
pub fn kubeconfig(connection: &Connection) -> Result<Kubeconfig, serde_json::Error> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let document = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": connection.server,
            "certificate-authority-data": connection.ca.as_ref().map(|ca| b64.encode(ca)),
            "insecure-skip-tls-verify": connection.insecure,
            "proxy-url": connection.proxy,
        }}],
        "users": [{"name": CONTEXT, "user": {"token": connection.token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
        "current-context": CONTEXT,
    });
    serde_json::from_value(document)
}

/// The client configuration for `connection`.
pub async fn config(connection: &Connection) -> Result<Config, ConfigError> {
    let kubeconfig = kubeconfig(connection).map_err(ConfigError::Document)?;
    let options = KubeConfigOptions {
        context: Some(CONTEXT.to_string()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(ConfigError::Kubeconfig)?;
    // As client-go: a CA bundle without a certificate is an error, not an empty trust store
    // that fails every connection later.
    if connection.ca.is_some() && config.root_cert.as_ref().is_none_or(Vec::is_empty) {
        return Err(ConfigError::NoCertificate);
    }
    Ok(config)
}

/// Why a member's client configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("writing its kubeconfig")]
    Document(#[source] serde_json::Error),
    #[error("reading its kubeconfig")]
    Kubeconfig(#[source] KubeconfigError),
    #[error("its caBundle holds no PEM certificate")]
    NoCertificate,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;
    use serde_json::Value;

    use super::*;

    /// Every name is a cluster name (for tests of the other rules).
    fn valid(_: &str) -> Option<String> {
        None
    }

    /// A Cluster object `name` with `spec` and, if given, a `Ready` condition of `ready`.
    fn cluster(name: &str, spec: Value, ready: Option<&str>) -> DynamicObject {
        let mut object = DynamicObject::new(name, &resource());
        object.data = json!({"spec": spec});
        if let Some(status) = ready {
            object.data["status"] = json!({"conditions": [
                {"type": "Ready", "status": status, "reason": "ClusterReady",
                 "message": "cluster is healthy and ready to accept workloads",
                 "lastTransitionTime": "2024-01-01T00:00:00Z"},
            ]});
        }
        object
    }

    fn push(endpoint: &str) -> Value {
        json!({
            "syncMode": "Push",
            "apiEndpoint": endpoint,
            "secretRef": {"namespace": "karmada-cluster", "name": "member1"},
        })
    }

    fn secret(version: &str, data: &[(&str, &str)]) -> Secret {
        let mut secret = Secret::default();
        secret.metadata.resource_version = Some(version.to_string());
        secret.data = Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect::<BTreeMap<_, _>>(),
        );
        secret
    }

    /// A real self-signed certificate, PEM-encoded.
    fn pem() -> String {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        cert.cert.pem()
    }

    #[test]
    fn a_ready_push_cluster_is_a_member_with_its_spec() {
        let mut spec = push("https://10.0.0.1:6443");
        spec["insecureSkipTLSVerification"] = json!(true);
        spec["proxyURL"] = json!("socks5://proxy:1080");
        let target = decide(&cluster("member1", spec, Some("True")), &[], valid).unwrap();
        assert_eq!(
            target,
            Target {
                name: "member1".into(),
                endpoint: "https://10.0.0.1:6443".into(),
                secret: SecretRef {
                    namespace: "karmada-cluster".into(),
                    name: "member1".into()
                },
                insecure: true,
                proxy: Some("socks5://proxy:1080".into()),
                ready: true,
            }
        );
    }

    #[test]
    fn ready_follows_the_ready_condition_only() {
        let member = |ready| decide(&cluster("m", push("https://m"), ready), &[], valid).unwrap();
        assert!(member(Some("True")).ready);
        assert!(!member(Some("False")).ready);
        assert!(!member(Some("Unknown")).ready);
        assert!(!member(None).ready);
        let mut other = cluster("m", push("https://m"), None);
        other.data["status"] = json!({"conditions": [{"type": "Healthy", "status": "True"}]});
        assert!(!decide(&other, &[], valid).unwrap().ready);
    }

    #[test]
    fn pull_mode_clusters_are_not_members() {
        let mut spec = push("https://m");
        spec["syncMode"] = json!("Pull");
        assert_eq!(
            decide(&cluster("m", spec, Some("True")), &[], valid),
            Err(Skip::Pull)
        );
    }

    #[test]
    fn unknown_or_missing_sync_modes_are_not_members() {
        let mut spec = push("https://m");
        spec["syncMode"] = json!("Both");
        assert_eq!(
            decide(&cluster("m", spec, None), &[], valid),
            Err(Skip::UnknownMode("Both".into()))
        );
        let spec = json!({"apiEndpoint": "https://m"});
        assert_eq!(
            decide(&cluster("m", spec, None), &[], valid),
            Err(Skip::UnknownMode(String::new()))
        );
    }

    #[test]
    fn clusters_without_endpoint_or_secret_are_not_members() {
        let mut spec = push("");
        assert_eq!(
            decide(&cluster("m", spec.clone(), None), &[], valid),
            Err(Skip::NoEndpoint)
        );
        spec["apiEndpoint"] = json!("https://m");
        spec["secretRef"] = json!({"name": "m"});
        assert_eq!(
            decide(&cluster("m", spec, None), &[], valid),
            Err(Skip::NoSecret)
        );
    }

    #[test]
    fn a_spec_of_the_wrong_shape_is_not_a_member() {
        let spec = json!({"syncMode": "Push", "apiEndpoint": 6443});
        assert!(matches!(
            decide(&cluster("m", spec, None), &[], valid),
            Err(Skip::Malformed(_))
        ));
    }

    #[test]
    fn names_must_be_cluster_names() {
        let policy = PolicyEngine::embedded(Default::default()).unwrap();
        let rule = |name: &str| name_problem(&policy, name);
        let bad = |name: &str| decide(&cluster(name, push("https://m"), None), &[], rule);
        assert!(matches!(bad("Member1"), Err(Skip::InvalidName(_))));
        assert!(matches!(bad("member.one"), Err(Skip::InvalidName(_))));
        assert_eq!(
            bad(&"a".repeat(49)),
            Err(Skip::InvalidName(
                "must be no more than 48 characters".into()
            ))
        );
        assert!(bad(&"a".repeat(48)).is_ok());
    }

    #[test]
    fn member_flags_restrict_the_members() {
        let only = ["member2".to_string()];
        let object = cluster("member1", push("https://m"), Some("True"));
        assert_eq!(decide(&object, &only, valid), Err(Skip::NotSelected));
        let object = cluster("member2", push("https://m"), Some("True"));
        assert!(decide(&object, &only, valid).is_ok());
    }

    fn target(endpoint: &str, insecure: bool) -> Target {
        let mut spec = push(endpoint);
        spec["insecureSkipTLSVerification"] = json!(insecure);
        decide(&cluster("member1", spec, Some("True")), &[], valid).unwrap()
    }

    #[test]
    fn the_connection_takes_token_and_ca_bundle_from_the_secret() {
        let s = secret("7", &[("token", "abc"), ("caBundle", pem().as_str())]);
        let c = connection(&target("https://10.0.0.1:6443", false), &s).unwrap();
        assert_eq!(c.server, "https://10.0.0.1:6443");
        assert_eq!(c.token, "abc");
        assert!(
            c.ca.as_deref()
                .is_some_and(|ca| ca.starts_with(b"-----BEGIN CERTIFICATE"))
        );
        assert!(!c.insecure);
    }

    #[test]
    fn insecure_clusters_ignore_the_ca_bundle() {
        let s = secret("7", &[("token", "abc"), ("caBundle", pem().as_str())]);
        let c = connection(&target("https://m", true), &s).unwrap();
        assert_eq!(c.ca, None);
        assert!(c.insecure);
    }

    #[test]
    fn a_secret_without_token_gives_no_connection() {
        let s = secret("7", &[("caBundle", pem().as_str())]);
        let err = connection(&target("https://m", false), &s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "its secret karmada-cluster/member1 has no non-empty \"token\""
        );
        let s = secret("7", &[("token", "")]);
        assert!(connection(&target("https://m", false), &s).is_err());
    }

    #[test]
    fn scheme_less_endpoints_get_https_only_with_tls() {
        assert_eq!(server_url("10.0.0.1:6443", true), "https://10.0.0.1:6443");
        assert_eq!(server_url("10.0.0.1:6443", false), "http://10.0.0.1:6443");
        assert_eq!(server_url("kube.example", true), "https://kube.example");
        assert_eq!(server_url("http://127.0.0.1:1", true), "http://127.0.0.1:1");
    }

    #[test]
    fn the_fingerprint_changes_when_the_secret_rotates() {
        let t = target("https://m", false);
        let before = secret("7", &[("token", "abc")]);
        let same = secret("7", &[("token", "abc")]);
        let rotated = secret("8", &[("token", "xyz")]);
        assert_eq!(fingerprint(&t, &before), fingerprint(&t, &same));
        assert_ne!(fingerprint(&t, &before), fingerprint(&t, &rotated));
    }

    #[test]
    fn the_fingerprint_changes_with_endpoint_tls_and_proxy() {
        let s = secret("7", &[("token", "abc")]);
        let base = fingerprint(&target("https://m", false), &s);
        assert_ne!(base, fingerprint(&target("https://n", false), &s));
        assert_ne!(base, fingerprint(&target("https://m", true), &s));
        let mut proxied = target("https://m", false);
        proxied.proxy = Some("http://proxy:3128".into());
        assert_ne!(base, fingerprint(&proxied, &s));
    }

    #[tokio::test]
    async fn the_config_carries_server_token_and_tls_settings() {
        let c = Connection {
            server: "https://10.0.0.1:6443".into(),
            token: "abc".into(),
            ca: None,
            insecure: true,
            proxy: None,
        };
        let config = config(&c).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:6443/");
        assert!(config.accept_invalid_certs);
        assert!(config.auth_info.token.is_some());
        assert_eq!(config.root_cert, None);
    }

    #[tokio::test]
    async fn a_pem_ca_bundle_becomes_the_root_certificate() {
        let c = Connection {
            server: "https://10.0.0.1:6443".into(),
            token: "abc".into(),
            ca: Some(pem().into_bytes()),
            insecure: false,
            proxy: None,
        };
        let config = config(&c).await.unwrap();
        assert_eq!(config.root_cert.as_ref().map(Vec::len), Some(1));
        assert!(!config.accept_invalid_certs);
        assert!(build_client(config, &ClientOptions::default()).is_ok());
    }

    #[tokio::test]
    async fn the_proxy_url_reaches_the_client() {
        for proxy in ["http://proxy:3128", "socks5://proxy:1080"] {
            let c = Connection {
                server: "https://10.0.0.1:6443".into(),
                token: "abc".into(),
                ca: None,
                insecure: true,
                proxy: Some(proxy.into()),
            };
            let config = config(&c).await.unwrap();
            assert_eq!(
                config.proxy_url.as_ref().map(|u| u.to_string()),
                Some(format!("{proxy}/"))
            );
            assert!(
                build_client(config, &ClientOptions::default()).is_ok(),
                "{proxy}"
            );
        }
    }

    #[tokio::test]
    async fn an_invalid_ca_bundle_or_endpoint_gives_no_config() {
        let c = Connection {
            server: "https://m".into(),
            token: "abc".into(),
            ca: Some(b"not a certificate".to_vec()),
            insecure: false,
            proxy: None,
        };
        assert!(config(&c).await.is_err());
        let c = Connection {
            server: "http://bad host:1".into(),
            ca: None,
            ..c
        };
        assert!(config(&c).await.is_err());
    }
}
