//! Reading Karmada `Cluster` objects, with no I/O: what one object means for the membership
//! ([`decide`]: a push-mode member to reach and where its credentials are, or why not) and
//! whether its name can name a cluster ([`name_problem`], the policy component's rule).

use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde::Deserialize;

use crate::engine::PolicyEngine;

/// Time budget of the policy's cluster-name check (a few microseconds of work).
const NAME_CHECK_BUDGET: Duration = Duration::from_secs(1);

/// `cluster.karmada.io/v1alpha1` `Cluster`, cluster-scoped.
pub fn resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster");
    ApiResource::from_gvk_with_plural(&gvk, "clusters")
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

impl Skip {
    /// Why a Cluster object left out is not synced, as an MCS that lists it reports it (WIT
    /// `unsynced-cluster.reason`: `Cluster <name> is not synced: <reason>`); `None` when there
    /// is no such Cluster object (a `--member` name of none), which an MCS reports as unknown.
    pub fn unsynced_reason(&self) -> Option<String> {
        match self {
            Skip::Pull => Some(
                "pull mode (Karmada's agent in the cluster syncs it; this controller reaches \
                 push-mode clusters only)"
                    .to_string(),
            ),
            Skip::NotFound => None,
            other => Some(other.to_string()),
        }
    }
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
/// `cluster-name-problem`: the rule of the names MCS `providerClusters` and `consumerClusters`
/// use, and the prefix of every copied slice's name; see `docs/validation.md`, "Cluster
/// names"). Karmada's API enforces the same on its
/// Cluster objects; this guards the controller against stores that do not. A component that
/// gives no answer leaves the cluster out too, saying so.
pub fn name_problem(policy: &PolicyEngine, name: &str) -> Option<String> {
    policy
        .cluster_name_problem(name, NAME_CHECK_BUDGET)
        .unwrap_or_else(|err| Some(format!("the policy component gave no answer: {err}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::{cluster, push, valid};
    use super::*;

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

    #[test]
    fn a_cluster_left_out_is_not_synced_with_its_reason_unless_it_does_not_exist() {
        let pull = Skip::Pull.unsynced_reason().unwrap();
        assert!(pull.starts_with("pull mode (Karmada's agent"), "{pull}");
        assert_eq!(
            Skip::SecretMissing("karmada-cluster/m3".into()).unsynced_reason(),
            Some("its secret karmada-cluster/m3 does not exist".into())
        );
        assert_eq!(
            Skip::NotSelected.unsynced_reason(),
            Some("it is not one of the --member names".into())
        );
        assert_eq!(Skip::NotFound.unsynced_reason(), None);
    }
}
