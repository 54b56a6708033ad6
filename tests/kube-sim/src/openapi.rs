//! A minimal OpenAPI v3 index and per-group-version documents: schema-free, but listing each
//! kind's PATCH operation with the `fieldValidation` parameter, which is all kubectl looks at to
//! decide that the server validates fields itself (so `kubectl create -f` works without
//! `--validate=false`).

use serde_json::{Map, Value, json};

use crate::discovery::GIT_VERSION;
use crate::registry::{Registry, ResourceType};

/// The `/openapi/v3` index: one entry per served group/version.
pub fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, version) in group_versions(registry) {
        let path = gv_path(&group, &version);
        let doc = document(registry, &group, &version).unwrap_or(Value::Null);
        let url = format!(
            "/openapi/v3/{path}?hash={:016X}",
            fnv1a(doc.to_string().as_bytes())
        );
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// The document of `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`, if served.
pub fn document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.resources_in(group, version);
    if types.is_empty() {
        return None;
    }
    let paths: Map<String, Value> = types
        .iter()
        .map(|t| (item_path(t), json!({"patch": patch_operation(t)})))
        .collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut gvs: Vec<(String, String)> = registry
        .all()
        .map(|t| (t.group.clone(), t.version.clone()))
        .collect();
    gvs.dedup();
    gvs
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn item_path(t: &ResourceType) -> String {
    let scope = if t.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    format!(
        "/{}{scope}/{}/{{name}}",
        gv_path(&t.group, &t.version),
        t.plural
    )
}

fn patch_operation(t: &ResourceType) -> Value {
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    json!({
        "operationId": format!("patch{}", t.kind),
        "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
    })
}

/// FNV-1a, 64 bits: a stable content hash for cache-busting URLs.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;

    #[test]
    fn index_points_at_each_group_version_document() {
        let registry = Registry::with_types(builtin::builtin_types());
        let index = index(&registry);
        let url = index["paths"]["apis/discovery.k8s.io/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(
            url.starts_with("/openapi/v3/apis/discovery.k8s.io/v1?hash="),
            "{url}"
        );
        assert!(index["paths"]["api/v1"].is_object());
    }

    #[test]
    fn documents_declare_field_validation_on_patch() {
        let registry = Registry::with_types(builtin::builtin_types());
        let doc = document(&registry, "", "v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Service");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
    }
}
