//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}` and
//! `/apis/{group}/{version}`, generated from the registry.

use serde_json::{Value, json};

use crate::kinds;
use crate::registry::{GroupVersions, Registry, ResourceType};

/// The Kubernetes version kube-sim claims to be.
pub const GIT_VERSION: &str = "v1.32.0";

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The verbs of a custom resource, in the order apiextensions-apiserver lists them.
const CUSTOM_RESOURCE_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];
const STATUS_VERBS: [&str; 3] = ["get", "patch", "update"];

/// The `version.Info` of `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.4",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// The `APIVersions` of `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// The `APIGroupList` of `/apis`.
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry.groups().iter().map(group_entry).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The `APIGroup` of `/apis/{group}`, if the group is served.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let groups = registry.groups();
    let found = groups.iter().find(|g| g.group == name)?;
    let mut entry = group_entry(found);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

/// The `APIResourceList` of `/api/v1` or `/apis/{group}/{version}`, if that version is served.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.resources_in(group, version);
    let first = types.first()?;
    let resources: Vec<Value> = types.iter().flat_map(|t| resource_entries(t)).collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": first.api_version(), "resources": resources}),
    )
}

fn group_entry(group: &GroupVersions) -> Value {
    let version =
        |v: &String| json!({"groupVersion": format!("{}/{v}", group.group), "version": v});
    let versions: Vec<Value> = group.versions.iter().map(version).collect();
    json!({"name": group.group, "versions": versions, "preferredVersion": versions[0]})
}

fn resource_entries(t: &ResourceType) -> Vec<Value> {
    let verbs: &[&str] = if t.defined_by.is_some() {
        &CUSTOM_RESOURCE_VERBS
    } else {
        &VERBS
    };
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": verbs,
    });
    if !t.short_names.is_empty() {
        main["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    let storage_group = kinds::storage_resource(&t.group_resource()).group;
    main["storageVersionHash"] = json!(storage_version_hash(
        &storage_group,
        &t.storage_version,
        &t.kind
    ));
    let mut entries = vec![main];
    if t.status_subresource {
        entries.push(json!({
            "name": format!("{}/status", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": STATUS_VERBS,
        }));
    }
    entries
}

/// `discovery.StorageVersionHash`: the first 8 bytes of the SHA-256 of
/// `group/version/kind` (the version objects are stored at), base64-encoded.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}"));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;

    fn registry() -> Registry {
        Registry::with_types(builtin::builtin_types())
    }

    #[test]
    fn core_resource_list_includes_the_status_subresource() {
        let list = resource_list(&registry(), "", "v1").unwrap();
        assert_eq!(list["groupVersion"], "v1");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"services")
                && names.contains(&"services/status")
                && names.contains(&"namespaces")
        );
    }

    #[test]
    fn group_list_names_every_builtin_group_with_a_preferred_version() {
        let list = group_list(&registry());
        let groups = list["groups"].as_array().unwrap();
        let discovery = groups
            .iter()
            .find(|g| g["name"] == "discovery.k8s.io")
            .unwrap();
        assert_eq!(
            discovery["preferredVersion"]["groupVersion"],
            "discovery.k8s.io/v1"
        );
        assert!(groups.iter().all(|g| g["name"] != ""));
    }

    #[test]
    fn storage_version_hashes_match_the_apiservers() {
        assert_eq!(
            storage_version_hash("discovery.k8s.io", "v1", "EndpointSlice"),
            "qgS0xkrxYAI="
        );
        assert_eq!(
            storage_version_hash("coordination.k8s.io", "v1", "Lease"),
            "gqkMMb/YqFM="
        );
        assert_eq!(
            storage_version_hash("networking.karmada.io", "v1alpha1", "MultiClusterService"),
            "Ro1J95gtLoc="
        );
    }

    #[test]
    fn unknown_group_versions_have_no_resource_list() {
        assert!(resource_list(&registry(), "example.com", "v1").is_none());
        assert!(group(&registry(), "example.com").is_none());
    }
}
