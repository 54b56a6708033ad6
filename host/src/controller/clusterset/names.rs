//! What the clusterset side reads and writes, named: the Multi-Cluster Services API's resources,
//! its labels, and the derived Service's name (as the component computes it,
//! docs/clusterset-rules.md).

use kube::api::{ApiResource, GroupVersionKind};
use sha2::{Digest, Sha256};

/// The label of an imported EndpointSlice that names its exported Service.
pub const MCS_SERVICE_NAME_LABEL: &str = "multicluster.kubernetes.io/service-name";
/// The marker label of the ServiceImports and derived Services the component makes.
pub const CREATED_BY_LABEL: &str = "networking.karmada.io/created-by";
/// Its value on what the clusterset side makes.
pub const CREATED_BY: &str = "mcs-policy-clusterset";
/// The managed-by value of the imported EndpointSlices.
pub const CLUSTERSET_MANAGER: &str = "endpointslice-clusterset-controller.karmada.io";
/// The ClusterProperty whose value is a member's cluster id.
pub const CLUSTER_PROPERTY: &str = "cluster.clusterset.k8s.io";

/// `multicluster.x-k8s.io/v1beta1` `ServiceExport`.
pub fn export_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("multicluster.x-k8s.io", "v1beta1", "ServiceExport"),
        "serviceexports",
    )
}

/// `multicluster.x-k8s.io/v1beta1` `ServiceImport`.
pub fn import_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("multicluster.x-k8s.io", "v1beta1", "ServiceImport"),
        "serviceimports",
    )
}

/// `about.k8s.io/v1beta1` `ClusterProperty` (cluster-scoped).
pub fn property_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("about.k8s.io", "v1beta1", "ClusterProperty"),
        "clusterproperties",
    )
}

/// The name of the derived Service of the exported `namespace/name`: `derived-` and the first
/// 10 characters of the lower-case, unpadded base32hex encoding of SHA-256(`namespace/name`).
pub fn derived_name(namespace: &str, name: &str) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let digest = Sha256::digest(format!("{namespace}/{name}").as_bytes());
    // 10 characters of 5 bits: the first 50 bits of the digest.
    let mut bits: u64 = 0;
    for byte in &digest[..8] {
        bits = (bits << 8) | u64::from(*byte);
    }
    let mut out = String::from("derived-");
    for i in 0..10 {
        let index = (bits >> (64 - 5 * (i + 1))) & 0x1f;
        out.push(char::from(ALPHABET[index as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_name_is_ten_base32hex_characters_of_the_names_hash() {
        let name = derived_name("shop", "web");
        assert_eq!(name.len(), "derived-".len() + 10);
        assert!(
            name["derived-".len()..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'v').contains(&b))
        );
        assert_ne!(name, derived_name("shop", "api"));
    }

    #[test]
    fn the_derived_name_is_the_components() {
        use crate::engine::types::{
            ClustersetMember, ClustersetMemberState, ClustersetObjects, ClustersetRead, ObjectWrite,
        };
        use crate::engine::{EngineOptions, PolicyEngine};
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        let export = r#"{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceExport","metadata":{"name":"web","namespace":"shop"}}"#;
        let service = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.1","ports":[{"name":"http","port":80,"protocol":"TCP"}]}}"#;
        let read = ClustersetRead {
            namespace: "shop".into(),
            name: "web".into(),
            now: "2026-11-29T10:00:00Z".into(),
            members: vec![ClustersetMember {
                cluster: "m1".into(),
                cluster_property: None,
                state: ClustersetMemberState::Readable(ClustersetObjects {
                    service_export: Some(export.into()),
                    service: Some(service.into()),
                    slices: vec![],
                    service_import: None,
                    derived_service: None,
                    imported_slices: vec![],
                }),
            }],
        };
        let decision = engine
            .clusterset_decide(&read, std::time::Duration::from_secs(5))
            .unwrap()
            .unwrap();
        let ObjectWrite::Apply(body) = &decision.members[0].derived_service else {
            panic!("{decision:?}")
        };
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["metadata"]["name"], derived_name("shop", "web"));
    }
}
