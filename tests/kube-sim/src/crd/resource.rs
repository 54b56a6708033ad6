//! The custom resource strategy of apiextensions-apiserver (`customResourceStrategy`,
//! `statusStrategy`, `customResourceValidator`) for the steps kube-sim does not do for every
//! type: decoding against the version's structural schema (pruning with `unknown field`
//! warnings, defaulting), schema and list-type validation (ratcheting on updates; the status
//! subresource validates `status` only), the metadata rules the generic and the custom resource
//! validation both apply on updates (so their errors come twice, as the apiserver's do), and
//! the finalizer-name warnings.

use serde_json::Value;

use super::schema::{self, Schema};
use super::{defaults, finalizers, listtype, prune, validate};
use crate::kinds::field::{self, FieldError};
use crate::lifecycle::Part;
use crate::registry::{GroupResource, ResourceType};
use crate::status::ApiError;
use crate::store::Store;
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

/// `Validate` of a new custom resource (and `WarningsOnCreate`).
pub fn validate_create(rt: &ResourceType, schema: &Schema, obj: &Value) -> Result<(), ApiError> {
    let mut errors = validate::validate(obj, schema, "", None);
    errors.extend(listtype::validate(obj, schema, ""));
    fail_if_any(rt, obj, &errors)?;
    finalizers::warn_about_new(obj, None);
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
    // The generic update checks (`rest.BeforeUpdate`), then the same metadata checks again
    // from the custom resource validator.
    let metadata = finalizers::no_new_while_deleting(new, old);
    let mut errors = metadata.clone();
    errors.extend(metadata);
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
    finalizers::warn_about_new(new, Some(old));
    Ok(())
}

fn fail_if_any(rt: &ResourceType, obj: &Value, errors: &[FieldError]) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let name = crate::object::name(obj);
    Err(field::invalid(&rt.group, &rt.kind, name, errors))
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
        let obj = json!({"metadata": {"name": "w"}, "spec": {}});
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
    fn status_updates_validate_only_the_status() {
        let old = json!({"metadata": {"name": "w"}, "spec": {}});
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
