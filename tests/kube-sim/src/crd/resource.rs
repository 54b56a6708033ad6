//! The custom resource strategy of apiextensions-apiserver (`customResourceStrategy`,
//! `statusStrategy`, `customResourceValidator`) for the steps kube-sim does not do for every
//! type: decoding against the version's structural schema (pruning with `unknown field`
//! warnings, defaulting), schema and list-type validation (ratcheting on updates; the status
//! subresource validates `status` only), the generic metadata validation (`types::meta`) the
//! validator and the generic `rest.BeforeCreate`/`BeforeUpdate` passes apply (so on updates the
//! metadata errors come twice, as the apiserver's do), and the finalizer warnings
//! (`types::finalizers::warnings`).

use serde_json::Value;

use super::schema::{self, Schema};
use super::{defaults, listtype, prune, validate};
use crate::lifecycle::Part;
use crate::registry::{GroupResource, ResourceType};
use crate::status::ApiError;
use crate::store::Store;
use crate::types::field::{self, FieldError};
use crate::types::finalizers;
use crate::types::meta::{self, NameRule};
use crate::warning;

/// The structural schema of the version `rt` serves, from its CRD in `store`.
pub fn schema_of(store: &Store, rt: &ResourceType) -> Option<Schema> {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let crd = store.get(&crds, "", rt.defined_by.as_deref()?)?;
    schema::of_version(&crd, &rt.version)
}

/// Decodes a custom resource body (or a patched object) as the apiserver's decoder does:
/// unknown fields pruned (each a warning), non-nullable nulls dropped, defaults applied.
pub fn decode(schema: &Schema, obj: &mut Value) {
    for path in prune::prune_resource(obj, schema) {
        warning::add(format!("unknown field {path:?}"));
    }
    defaults::apply(obj, schema);
}

/// `Validate` of a new custom resource (metadata, schema, list types), the generic name check
/// of `rest.BeforeCreate` once that passed, and `WarningsOnCreate`.
pub fn validate_create(rt: &ResourceType, schema: &Schema, obj: &Value) -> Result<(), ApiError> {
    let mut errors = meta::validate(obj, NameRule::Subdomain, rt.namespaced, false);
    errors.extend(validate::validate(obj, schema, "", None));
    errors.extend(listtype::validate(obj, schema, ""));
    fail_if_any(rt, obj, &errors)?;
    fail_if_any(rt, obj, &meta::validate_path_segment(obj))?;
    warn(obj, None);
    Ok(())
}

/// `ValidateUpdate` of the main resource or of its status (and `WarningsOnUpdate`).
pub fn validate_update(
    rt: &ResourceType,
    schema: &Schema,
    old: &Value,
    new: &Value,
    part: Part,
) -> Result<(), ApiError> {
    // The generic pass of `rest.BeforeUpdate` (`validateCommonFields`), then the custom
    // resource validator's own `ValidateObjectMetaAccessorUpdate`: the same metadata errors
    // come twice (a new finalizer while deleting, 10-mcs-crd step 25).
    let mut errors = meta::validate(new, NameRule::PathSegment, rt.namespaced, false);
    errors.extend(meta::validate_update(new, old, false));
    errors.extend(meta::validate_update(new, old, false));
    match part {
        Part::Main => errors.extend(validate::validate(new, schema, "", Some(old))),
        Part::Status => {
            if let (Some(status), Some(status_schema)) = (new.get("status"), schema.status()) {
                errors.extend(validate::validate(
                    status,
                    status_schema,
                    "status",
                    old.get("status"),
                ));
            }
        }
    }
    if listtype::validate(old, schema, "").is_empty() {
        errors.extend(listtype::validate(new, schema, ""));
    }
    fail_if_any(rt, new, &errors)?;
    warn(new, Some(old));
    Ok(())
}

/// `WarningsOnCreate` / `WarningsOnUpdate`: the finalizers the write adds.
fn warn(new: &Value, old: Option<&Value>) {
    finalizers::warnings(new, old)
        .into_iter()
        .for_each(warning::add);
}

fn fail_if_any(rt: &ResourceType, obj: &Value, errors: &[FieldError]) -> Result<(), ApiError> {
    field::refuse(&rt.group, &rt.kind, crate::object::name(obj), errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["types"], "properties": {"types": {"type": "array", "items": {"type": "string"}}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string", "enum": ["A", "B"]}}},
        }}))
    }

    fn rt() -> ResourceType {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]},
        });
        super::super::definition::resource_types(&crd)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn invalid_resources_are_refused_with_their_kind_and_group() {
        let obj = json!({"metadata": {"name": "w", "namespace": "default"}, "spec": {}});
        let status = validate_create(&rt(), &schema(), &obj)
            .unwrap_err()
            .to_status();
        assert_eq!(
            status["message"],
            "Widget.example.com \"w\" is invalid: spec.types: Required value"
        );
        assert_eq!(status["details"]["group"], "example.com");
        assert_eq!(status["details"]["kind"], "Widget");
    }

    #[test]
    fn metadata_is_validated_and_update_errors_come_twice() {
        let obj = json!({"metadata": {"name": "W", "namespace": "default"}, "spec": {"types": []}});
        let error = validate_create(&rt(), &schema(), &obj).unwrap_err();
        assert!(
            error
                .message
                .starts_with("Widget.example.com \"W\" is invalid: metadata.name: Invalid value: \"W\": a lowercase RFC 1123 subdomain"),
            "{}",
            error.message
        );
        let mut old = json!({"metadata": {"name": "w", "namespace": "default", "finalizers": ["a.io/x"],
            "deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"types": []}});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["a.io/x", "b.io/y"]);
        let status = validate_update(&rt(), &schema(), &old, &new, Part::Main)
            .unwrap_err()
            .to_status();
        let causes = status["details"]["causes"].as_array().unwrap();
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0], causes[1]);
        for obj in [&mut old, &mut new] {
            obj["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("deletionTimestamp");
        }
        assert!(validate_update(&rt(), &schema(), &old, &new, Part::Main).is_ok());
    }

    #[test]
    fn status_updates_validate_only_the_status() {
        let old = json!({"metadata": {"name": "w", "namespace": "default"}, "spec": {}});
        let mut new = old.clone();
        new["status"] = json!({"phase": "C"});
        let error = validate_update(&rt(), &schema(), &old, &new, Part::Status).unwrap_err();
        assert_eq!(
            error.message,
            "Widget.example.com \"w\" is invalid: status.phase: Unsupported value: \"C\": supported values: \"A\", \"B\""
        );
        new["status"] = json!({"phase": "A"});
        assert!(validate_update(&rt(), &schema(), &old, &new, Part::Status).is_ok());
    }

    /// The trimmed Karmada Cluster CRD the product's tests serve.
    fn karmada_cluster_crd() -> Value {
        let text = include_str!("../../../fixtures/crds/cluster.karmada.io_clusters.yaml");
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn karmada_clusters_keep_unlisted_fields_and_validate_their_conditions() {
        let crd = karmada_cluster_crd();
        let rt = super::super::definition::resource_types(&crd)
            .unwrap()
            .remove(0);
        let schema = schema::of_version(&crd, "v1alpha1").unwrap();
        let mut cluster = json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "member1"},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://10.0.0.1:6443",
                "secretRef": {"namespace": "karmada-cluster", "name": "member1"},
                "provider": "kind", "taints": [{"key": "k", "effect": "NoSchedule"}]},
        });
        decode(&schema, &mut cluster);
        assert_eq!(cluster["spec"]["provider"], "kind");
        assert!(validate_create(&rt, &schema, &cluster).is_ok());
        let mut ready = cluster.clone();
        ready["status"] = json!({"kubernetesVersion": "v1.36.2", "conditions": [{
            "type": "Ready", "status": "True", "reason": "ClusterReady",
            "message": "set by the test", "lastTransitionTime": "2024-01-01T00:00:00Z",
        }]});
        assert!(validate_update(&rt, &schema, &cluster, &ready, Part::Status).is_ok());
        ready["status"]["conditions"][0]["status"] = json!("Maybe");
        assert!(validate_update(&rt, &schema, &cluster, &ready, Part::Status).is_err());
        cluster["spec"]["syncMode"] = json!("Sideways");
        assert!(validate_create(&rt, &schema, &cluster).is_err());
    }

    #[test]
    fn decoding_prunes_unknown_fields() {
        let mut obj = json!({"spec": {"types": [], "bogus": 1}});
        decode(&schema(), &mut obj);
        assert_eq!(obj, json!({"spec": {"types": []}}));
    }
}
