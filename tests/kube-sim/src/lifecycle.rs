//! What the apiserver does to objects on the way into storage: server-set metadata on create,
//! merging an update into the live object (status subresource rules, preconditions, generation),
//! and marking an object for deletion.

use serde_json::{Value, json};

use crate::crd;
use crate::object;
use crate::registry::{GenerationPolicy, ResourceType, Special};
use crate::status::ApiError;

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: everything but `.status` where status is a subresource.
    Main,
    /// The `status` subresource: only `.status`.
    Status,
}

/// Metadata fields the server owns; updates cannot change them.
const SYSTEM_METADATA: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
];

/// A new object ready for storage (name, uid, timestamps, generation, status), or why not.
/// A `resourceVersion` in the body is kept for the storage step to refuse.
pub fn prepare_create(
    rt: &ResourceType,
    namespace: Option<&str>,
    mut obj: Value,
    now: &str,
) -> Result<Value, ApiError> {
    check_type(rt, &mut obj)?;
    set_namespace(rt, namespace, &mut obj)?;
    let meta = object::metadata_mut(&mut obj);
    let has_name = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name {
        let prefix = meta
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty());
        let Some(prefix) = prefix else {
            return Err(ApiError::invalid(
                &rt.kind,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            ));
        };
        let generated = object::generate_name(prefix);
        meta.insert("name".into(), json!(generated));
    }
    meta.insert("uid".into(), json!(object::new_uid()));
    meta.insert("creationTimestamp".into(), json!(now));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    match rt.generation {
        GenerationPolicy::None => meta.remove("generation"),
        GenerationPolicy::Spec | GenerationPolicy::ContentOrLabels => {
            meta.insert("generation".into(), json!(1))
        }
    };
    if rt.status_subresource {
        obj.as_object_mut().map(|o| o.remove("status"));
    }
    apply_special(rt, &mut obj, &Value::Null)?;
    Ok(obj)
}

/// The object an update of `part` of `current` with `candidate` stores, or why it is refused.
/// The result carries `current`'s resourceVersion; equal to `current` means nothing changed.
pub fn merge_update(
    rt: &ResourceType,
    current: &Value,
    mut candidate: Value,
    part: Part,
) -> Result<Value, ApiError> {
    check_type(rt, &mut candidate)?;
    let name = object::name(current);
    if object::name(&candidate) != name {
        let message = format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            object::name(&candidate)
        );
        return Err(ApiError::bad_request(message));
    }
    let namespace = rt.namespaced.then(|| object::namespace(current));
    set_namespace(rt, namespace, &mut candidate)?;
    check_preconditions(rt, current, &candidate)?;
    let mut result = match part {
        Part::Main => with_system_metadata(rt, current, candidate),
        Part::Status => with_status_of(current.clone(), &candidate),
    };
    if part == Part::Main {
        apply_special(rt, &mut result, current)?;
    }
    if generation_changes(rt, current, &result) {
        let generation = current["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
        object::metadata_mut(&mut result).insert("generation".into(), json!(generation));
    }
    Ok(result)
}

/// `current` marked for deletion: deletionTimestamp set, generation bumped (if it has one).
pub fn mark_deleting(current: &Value, now: &str) -> Value {
    let mut marked = current.clone();
    let generation = current["metadata"]["generation"].as_i64();
    let meta = object::metadata_mut(&mut marked);
    meta.insert("deletionTimestamp".into(), json!(now));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if let Some(generation) = generation {
        meta.insert("generation".into(), json!(generation + 1));
    }
    marked
}

/// Sets kind and apiVersion, refusing a body that names another type.
fn check_type(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    };
    let api_version = rt.api_version();
    if let Some(given) = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty() && *v != api_version)
    {
        let message = format!(
            "the API version in the data ({given}) does not match the expected API version ({api_version})"
        );
        return Err(ApiError::bad_request(message));
    }
    if let Some(given) = map
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty() && *k != rt.kind)
    {
        let message = format!(
            "the kind in the data ({given}) does not match the expected kind ({})",
            rt.kind
        );
        return Err(ApiError::bad_request(message));
    }
    map.insert("apiVersion".into(), json!(api_version));
    map.insert("kind".into(), json!(rt.kind));
    Ok(())
}

/// Sets `metadata.namespace` from the request (removes it for cluster-scoped resources).
fn set_namespace(
    rt: &ResourceType,
    namespace: Option<&str>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let given = object::namespace(obj).to_owned();
    let meta = object::metadata_mut(obj);
    match namespace.filter(|_| rt.namespaced) {
        Some(ns) if !given.is_empty() && given != ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        Some(ns) => {
            meta.insert("namespace".into(), json!(ns));
            Ok(())
        }
        None => {
            meta.remove("namespace");
            Ok(())
        }
    }
}

/// resourceVersion and uid in the candidate, when set, must be the live object's.
fn check_preconditions(
    rt: &ResourceType,
    current: &Value,
    candidate: &Value,
) -> Result<(), ApiError> {
    let gr = rt.group_resource();
    let name = object::name(current);
    let rv = object::resource_version(candidate);
    if !rv.is_empty() && rv != object::resource_version(current) {
        return Err(ApiError::stale_resource_version(&gr, name));
    }
    let uid = object::uid(candidate);
    if !uid.is_empty() && uid != object::uid(current) {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            object::uid(current)
        );
        return Err(ApiError::conflict(&gr, name, &why));
    }
    Ok(())
}

/// The candidate with the server-owned metadata (and, for a status subresource, the status) of `current`.
fn with_system_metadata(rt: &ResourceType, current: &Value, mut candidate: Value) -> Value {
    let meta = object::metadata_mut(&mut candidate);
    for field in SYSTEM_METADATA {
        match current["metadata"].get(field) {
            Some(value) => meta.insert(field.into(), value.clone()),
            None => meta.remove(field),
        };
    }
    meta.insert(
        "resourceVersion".into(),
        current["metadata"]["resourceVersion"].clone(),
    );
    if rt.status_subresource {
        with_status_of(candidate, current)
    } else {
        candidate
    }
}

/// `target` with the `.status` of `source` (none if `source` has none).
fn with_status_of(mut target: Value, source: &Value) -> Value {
    if let Some(map) = target.as_object_mut() {
        match source.get("status") {
            Some(status) => map.insert("status".into(), status.clone()),
            None => map.remove("status"),
        };
    }
    target
}

/// Resource-specific server-set fields.
fn apply_special(rt: &ResourceType, obj: &mut Value, previous: &Value) -> Result<(), ApiError> {
    match rt.special {
        Special::None | Special::Namespace => {}
        Special::CustomResourceDefinition => crd::prepare(obj, previous)?,
    }
    Ok(())
}

/// Whether a write from `before` to `after` bumps `metadata.generation`. Built-in types compare
/// as their strategies' `apiequality.Semantic.DeepEqual` does on the decoded Go structs, where
/// an absent, `null` or empty list or map are all the same; custom resources compare their
/// unstructured content as it is.
fn generation_changes(rt: &ResourceType, before: &Value, after: &Value) -> bool {
    let typed = rt.defined_by.is_none();
    let content = |obj: &Value, drop_status: bool| {
        let mut copy = obj.clone();
        if let Some(map) = copy.as_object_mut() {
            map.remove("metadata");
            if drop_status {
                map.remove("status");
            }
        }
        if typed {
            drop_empty(&mut copy);
        }
        copy
    };
    match rt.generation {
        GenerationPolicy::None => false,
        GenerationPolicy::Spec => {
            content(before, rt.status_subresource) != content(after, rt.status_subresource)
        }
        GenerationPolicy::ContentOrLabels => {
            content(before, false) != content(after, false)
                || before["metadata"]["labels"] != after["metadata"]["labels"]
        }
    }
}

/// Removes every `null` and every empty list or map inside object members, recursively.
fn drop_empty(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.values_mut().for_each(drop_empty);
            map.retain(|_, v| !is_empty(v));
        }
        Value::Array(items) => items.iter_mut().for_each(drop_empty),
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;

    const NOW: &str = "2024-01-01T00:00:00Z";

    fn rt(plural: &str) -> ResourceType {
        builtin::builtin_types()
            .into_iter()
            .find(|t| t.plural == plural)
            .unwrap()
    }

    /// A type with a status subresource whose generation follows spec changes (as a CRD's).
    fn spec_generation() -> ResourceType {
        ResourceType {
            generation: GenerationPolicy::Spec,
            ..rt("services")
        }
    }

    fn created_service() -> Value {
        let body = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}, "status": {"x": 1}});
        let mut svc = prepare_create(&spec_generation(), Some("default"), body, NOW).unwrap();
        svc["metadata"]["resourceVersion"] = json!("7");
        svc
    }

    #[test]
    fn create_sets_server_metadata_and_drops_subresource_status() {
        let svc = created_service();
        assert_eq!(svc["kind"], "Service");
        assert_eq!(svc["apiVersion"], "v1");
        assert_eq!(svc["metadata"]["namespace"], "default");
        assert_eq!(svc["metadata"]["generation"], 1);
        assert_eq!(svc["metadata"]["creationTimestamp"], NOW);
        assert_eq!(svc["metadata"]["uid"].as_str().unwrap().len(), 36);
        assert!(svc.get("status").is_none());
    }

    #[test]
    fn create_without_name_or_generate_name_is_invalid() {
        let error = prepare_create(
            &rt("configmaps"),
            Some("default"),
            json!({"metadata": {}}),
            NOW,
        )
        .unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
    }

    #[test]
    fn create_in_another_namespace_than_the_url_is_a_bad_request() {
        let body = json!({"metadata": {"name": "a", "namespace": "other"}});
        assert_eq!(
            prepare_create(&rt("configmaps"), Some("default"), body, NOW)
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn cluster_scoped_objects_have_no_namespace() {
        let ns = prepare_create(
            &rt("namespaces"),
            None,
            json!({"metadata": {"name": "prod", "namespace": "x"}}),
            NOW,
        )
        .unwrap();
        assert!(ns["metadata"].get("namespace").is_none());
    }

    #[test]
    fn update_with_stale_resource_version_is_conflict() {
        let mut candidate = created_service();
        candidate["metadata"]["resourceVersion"] = json!("6");
        let error = merge_update(
            &spec_generation(),
            &created_service(),
            candidate,
            Part::Main,
        )
        .unwrap_err();
        assert_eq!(error.code, 409);
        assert_eq!(error.reason, "Conflict");
    }

    #[test]
    fn main_update_keeps_status_and_bumps_generation_on_spec_change() {
        let mut current = created_service();
        current["status"] = json!({"loadBalancer": {}});
        let mut candidate = current.clone();
        candidate["spec"]["ports"][0]["port"] = json!(81);
        candidate["status"] = json!({"changed": true});
        let updated = merge_update(&spec_generation(), &current, candidate, Part::Main).unwrap();
        assert_eq!(updated["status"], json!({"loadBalancer": {}}));
        assert_eq!(updated["metadata"]["generation"], 2);
    }

    #[test]
    fn status_update_touches_only_status_and_keeps_generation() {
        let current = created_service();
        let mut candidate = current.clone();
        candidate["spec"] = json!({"ignored": true});
        candidate["status"] = json!({"ready": true});
        let updated = merge_update(&spec_generation(), &current, candidate, Part::Status).unwrap();
        assert_eq!(updated["spec"], current["spec"]);
        assert_eq!(updated["status"], json!({"ready": true}));
        assert_eq!(updated["metadata"]["generation"], 1);
    }

    #[test]
    fn unchanged_update_equals_the_live_object() {
        let current = created_service();
        let mut candidate = current.clone();
        candidate["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        candidate["metadata"].as_object_mut().unwrap().remove("uid");
        let updated = merge_update(&spec_generation(), &current, candidate, Part::Main).unwrap();
        assert_eq!(updated, current);
    }

    #[test]
    fn endpoint_slice_generation_bumps_on_label_change() {
        let body = json!({"metadata": {"name": "s", "labels": {"a": "1"}}, "addressType": "IPv4", "endpoints": []});
        let current = prepare_create(&rt("endpointslices"), Some("default"), body, NOW).unwrap();
        let mut relabelled = current.clone();
        relabelled["metadata"]["labels"]["a"] = json!("2");
        let updated =
            merge_update(&rt("endpointslices"), &current, relabelled, Part::Main).unwrap();
        assert_eq!(updated["metadata"]["generation"], 2);
        let mut annotated = current.clone();
        annotated["metadata"]["annotations"] = json!({"x": "y"});
        let updated = merge_update(&rt("endpointslices"), &current, annotated, Part::Main).unwrap();
        assert_eq!(updated["metadata"]["generation"], 1);
    }

    #[test]
    fn built_in_types_see_absent_null_and_empty_lists_as_equal() {
        let body = json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {}}], "ports": null});
        let current = prepare_create(&rt("endpointslices"), Some("default"), body, NOW).unwrap();
        let mut resent = current.clone();
        resent.as_object_mut().unwrap().remove("ports");
        resent["endpoints"][0]
            .as_object_mut()
            .unwrap()
            .remove("conditions");
        let updated = merge_update(&rt("endpointslices"), &current, resent, Part::Main).unwrap();
        assert_eq!(updated["metadata"]["generation"], 1);
        let mut changed = current.clone();
        changed["ports"] = json!([{"port": 80}]);
        let updated = merge_update(&rt("endpointslices"), &current, changed, Part::Main).unwrap();
        assert_eq!(updated["metadata"]["generation"], 2);
    }

    #[test]
    fn marking_for_deletion_sets_the_timestamp_and_bumps_generation() {
        let marked = mark_deleting(&created_service(), NOW);
        assert_eq!(marked["metadata"]["deletionTimestamp"], NOW);
        assert_eq!(marked["metadata"]["generation"], 2);
    }
}
