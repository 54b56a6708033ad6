//! Builders of Cluster objects, Secrets and certificates for the tests of this module.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;
use serde_json::{Value, json};

use super::object::{Target, decide, resource};

/// Every name is a cluster name (for tests of the other rules).
pub fn valid(_: &str) -> Option<String> {
    None
}

/// A Cluster object `name` with `spec` and, if given, a `Ready` condition of `ready`.
pub fn cluster(name: &str, spec: Value, ready: Option<&str>) -> DynamicObject {
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

/// The spec of a push-mode cluster at `endpoint` whose secret is `karmada-cluster/member1`.
pub fn push(endpoint: &str) -> Value {
    json!({
        "syncMode": "Push",
        "apiEndpoint": endpoint,
        "secretRef": {"namespace": "karmada-cluster", "name": "member1"},
    })
}

/// A ready push-mode member `member1` at `endpoint`.
pub fn target(endpoint: &str, insecure: bool) -> Target {
    let mut spec = push(endpoint);
    spec["insecureSkipTLSVerification"] = json!(insecure);
    decide(&cluster("member1", spec, Some("True")), &[], valid).unwrap()
}

/// A Secret at resourceVersion `version` holding `data`.
pub fn secret(version: &str, data: &[(&str, &str)]) -> Secret {
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
pub fn pem() -> String {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    cert.cert.pem()
}
