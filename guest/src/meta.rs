//! ObjectMeta rules (SPEC §2.2 and §2.4 items 1–3): Kubernetes' `ValidateObjectMeta` with names
//! checked as DNS-1035 labels, and the metadata part of `ValidateObjectMetaUpdate`.
//! Maps are visited in sorted key order (Go's order is random; ours is stable).

use std::collections::BTreeSet;

use crate::decode::{ManagedFields, ObjectMeta, OwnerReference};
use crate::field::{BadValue, FieldError};
use crate::gofmt::{go_json_string, go_string_slice_literal};
use crate::names;
use crate::time::json_or_null;

const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
const FIELD_IMMUTABLE: &str = "field is immutable";

/// `ValidateObjectMeta(meta, requiresNamespace=true, NameIsDNS1035Label, "metadata")`.
pub fn validate_create(meta: &ObjectMeta) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !meta.generate_name.is_empty() {
        for msg in names::dns1035_name(&meta.generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                BadValue::Str(meta.generate_name.clone()),
                msg,
            ));
        }
    }
    if meta.name.is_empty() {
        // SPEC §2.2.1: only when there is no generateName either.
        if meta.generate_name.is_empty() {
            errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for msg in names::dns1035_name(&meta.name, false) {
            errs.push(FieldError::invalid(
                "metadata.name",
                BadValue::Str(meta.name.clone()),
                msg,
            ));
        }
    }
    if meta.namespace.is_empty() {
        errs.push(FieldError::required("metadata.namespace", ""));
    } else {
        for msg in names::dns1123_label(&meta.namespace) {
            errs.push(FieldError::invalid(
                "metadata.namespace",
                BadValue::Str(meta.namespace.clone()),
                msg,
            ));
        }
    }
    if meta.generation < 0 {
        errs.push(FieldError::invalid(
            "metadata.generation",
            BadValue::Int(meta.generation),
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(labels(meta));
    errs.extend(annotations(meta));
    errs.extend(owner_references(&meta.owner_references));
    errs.extend(finalizers(&meta.finalizers));
    errs.extend(managed_fields(&meta.managed_fields));
    errs
}

/// The metadata checks of an update (SPEC §2.4 items 1–3, plus the generation and deletion
/// fields Kubernetes checks in the same step).
pub fn validate_update(new: &ObjectMeta, old: &ObjectMeta) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if old.deletion_timestamp.is_some() {
        let old_finalizers: BTreeSet<&str> = old.finalizers.iter().map(String::as_str).collect();
        let mut extra: Vec<String> = new
            .finalizers
            .iter()
            .filter(|f| !old_finalizers.contains(f.as_str()))
            .cloned()
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice_literal(&extra)
                ),
            ));
        }
    }
    if new.resource_version.is_empty() {
        errs.push(FieldError::invalid(
            "metadata.resourceVersion",
            BadValue::Str(String::new()),
            "must be specified for an update",
        ));
    }
    if new.generation < old.generation {
        errs.push(FieldError::invalid(
            "metadata.generation",
            BadValue::Int(new.generation),
            "must not be decremented",
        ));
    }
    let immutable = [
        (
            "metadata.name",
            new.name != old.name,
            BadValue::Str(new.name.clone()),
        ),
        (
            "metadata.namespace",
            new.namespace != old.namespace,
            BadValue::Str(new.namespace.clone()),
        ),
        (
            "metadata.uid",
            new.uid != old.uid,
            BadValue::named_str(&new.uid),
        ),
        (
            "metadata.creationTimestamp",
            new.creation_timestamp != old.creation_timestamp,
            BadValue::Json(json_or_null(new.creation_timestamp)),
        ),
        (
            "metadata.deletionTimestamp",
            new.deletion_timestamp != old.deletion_timestamp,
            BadValue::Json(json_or_null(new.deletion_timestamp)),
        ),
        (
            "metadata.deletionGracePeriodSeconds",
            new.deletion_grace_period_seconds != old.deletion_grace_period_seconds,
            BadValue::Json(
                new.deletion_grace_period_seconds
                    .map_or_else(|| "null".to_string(), |s| s.to_string()),
            ),
        ),
    ];
    for (path, changed, value) in immutable {
        if changed {
            errs.push(FieldError::invalid(path, value, FIELD_IMMUTABLE));
        }
    }
    errs
}

fn labels(meta: &ObjectMeta) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in &meta.labels {
        for msg in names::qualified_name(k) {
            errs.push(FieldError::invalid(
                "metadata.labels",
                BadValue::Str(k.clone()),
                msg,
            ));
        }
        for msg in names::label_value(v) {
            errs.push(FieldError::invalid(
                "metadata.labels",
                BadValue::Str(v.clone()),
                msg,
            ));
        }
    }
    errs
}

fn annotations(meta: &ObjectMeta) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for k in meta.annotations.keys() {
        // Kubernetes: the rule is QualifiedName except that case doesn't matter.
        for msg in names::qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(
                "metadata.annotations",
                BadValue::Str(k.clone()),
                msg,
            ));
        }
    }
    let total: usize = meta
        .annotations
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long_bytes(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }
    errs
}

/// `schema.FromAPIVersionAndKind(...).Version`: empty for `""`, `"/"`, `"g/"` and for more than
/// one slash (a parse error).
fn api_version_has_version(api_version: &str) -> bool {
    match api_version.matches('/').count() {
        0 => !api_version.is_empty(),
        1 => !api_version.ends_with('/'),
        _ => false,
    }
}

fn owner_references(refs: &[OwnerReference]) -> Vec<FieldError> {
    let path = "metadata.ownerReferences";
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let checks = [
            (
                "apiVersion",
                api_version_has_version(&r.api_version),
                BadValue::Str(r.api_version.clone()),
                "version must not be empty",
            ),
            (
                "kind",
                !r.kind.is_empty(),
                BadValue::Str(r.kind.clone()),
                "kind must not be empty",
            ),
            (
                "name",
                !r.name.is_empty(),
                BadValue::Str(r.name.clone()),
                "name must not be empty",
            ),
            (
                "uid",
                !r.uid.is_empty(),
                BadValue::named_str(&r.uid),
                "uid must not be empty",
            ),
        ];
        for (child, ok, value, detail) in checks {
            if !ok {
                errs.push(FieldError::invalid(
                    format!("{path}.{child}"),
                    value,
                    detail,
                ));
            }
        }
        if r.api_version == "v1" && r.kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                BadValue::Json(owner_reference_json(r)),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    BadValue::Json(format!(
                        "[{}]",
                        refs.iter()
                            .map(owner_reference_json)
                            .collect::<Vec<_>>()
                            .join(",")
                    )),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `json.Marshal(metav1.OwnerReference)`: fields in struct order, pointers omitted when nil.
fn owner_reference_json(r: &OwnerReference) -> String {
    let mut s = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
        go_json_string(&r.api_version),
        go_json_string(&r.kind),
        go_json_string(&r.name),
        go_json_string(&r.uid)
    );
    if let Some(c) = r.controller {
        s.push_str(&format!(",\"controller\":{c}"));
    }
    if let Some(b) = r.block_owner_deletion {
        s.push_str(&format!(",\"blockOwnerDeletion\":{b}"));
    }
    s.push('}');
    s
}

fn finalizers(list: &[String]) -> Vec<FieldError> {
    let path = "metadata.finalizers";
    let mut errs = Vec::new();
    for f in list {
        for msg in names::qualified_name(f) {
            errs.push(FieldError::invalid(path, BadValue::Str(f.clone()), msg));
        }
    }
    if list.iter().any(|f| f == "orphan") && list.iter().any(|f| f == "foregroundDeletion") {
        errs.push(FieldError::invalid(
            path,
            BadValue::str_list(list),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

fn managed_fields(list: &[ManagedFields]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, f) in list.iter().enumerate() {
        if f.operation != "Apply" && f.operation != "Update" {
            errs.push(FieldError::invalid(
                format!("metadata.managedFields[{i}].operation"),
                BadValue::named_str(&f.operation),
                "must be `Apply` or `Update`",
            ));
        }
        if !f.fields_type.is_empty() && f.fields_type != "FieldsV1" {
            errs.push(FieldError::invalid(
                format!("metadata.managedFields[{i}].fieldsType"),
                BadValue::Str(f.fields_type.clone()),
                "must be `FieldsV1`",
            ));
        }
    }
    errs
}
