//! PATCH: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch (treated as
//! a merge patch), and a simplified server-side apply.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::body;
use super::params::Params;
use super::respond;
use super::target::Target;
use super::write;
use crate::app::App;
use crate::crd::resource as custom_resource;
use crate::lifecycle::Part;
use crate::object;
use crate::status::ApiError;

/// The patch formats, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKind {
    Merge,
    Json,
    /// Server-side apply: the applied object is merged into the live one (maps merged, lists
    /// replaced), creating the object if absent. No field ownership, so never a conflict.
    Apply,
}

impl PatchKind {
    fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        match content_type {
            "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                Ok(Self::Merge)
            }
            "application/json-patch+json" => Ok(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

pub fn patch(
    app: &App,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let content_type = body::content_type(headers);
    if target.rt.defined_by.is_some() && content_type == "application/strategic-merge-patch+json" {
        return Err(custom_resource::strategic_merge_unsupported());
    }
    let (code, stored) = match PatchKind::from_content_type(&content_type)? {
        PatchKind::Merge => {
            let patch = merge_patch_body(body)?;
            let stored = write::update_locked(&mut app.write(), target, |current| {
                Ok(merged(current, &patch))
            })?;
            (StatusCode::OK, stored)
        }
        PatchKind::Json => {
            let operations = json_patch_body(body)?;
            let stored = write::update_locked(&mut app.write(), target, |current| {
                json_patched(target, current, &operations)
            })?;
            (StatusCode::OK, stored)
        }
        PatchKind::Apply => apply(app, target, params, body)?,
    };
    Ok(respond::object_response(code, &target.rt, &stored))
}

fn merge_patch_body(body: &[u8]) -> Result<Value, ApiError> {
    let patch = body::decode_json(body)?;
    if patch.is_object() {
        Ok(patch)
    } else {
        Err(ApiError::bad_request("a merge patch must be a JSON object"))
    }
}

fn json_patch_body(body: &[u8]) -> Result<json_patch::Patch, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))
}

fn merged(current: &Value, patch: &Value) -> Value {
    let mut doc = current.clone();
    json_patch::merge(&mut doc, patch);
    doc
}

fn json_patched(
    target: &Target,
    current: &Value,
    operations: &json_patch::Patch,
) -> Result<Value, ApiError> {
    let mut doc = current.clone();
    json_patch::patch(&mut doc, operations).map_err(|e| {
        tracing::debug!(resource = %target.rt.group_resource(), "JSON patch failed: {e}");
        ApiError::rejected()
    })?;
    Ok(doc)
}

/// Server-side apply: 201 with the new object when absent, else 200 with the merged one.
fn apply(
    app: &App,
    target: &Target,
    params: &Params,
    body: &[u8],
) -> Result<(StatusCode, std::sync::Arc<Value>), ApiError> {
    if params.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(
            "PATCH /apply requires fieldManager to be set",
        ));
    }
    let mut applied = body::decode_yaml(body)?;
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "an applied configuration must be an object",
        ));
    }
    let name = target.name_or_empty();
    match object::name(&applied) {
        "" => {
            object::metadata_mut(&mut applied).insert("name".into(), json!(name));
        }
        given if given != name => {
            let message = format!(
                "the name of the object ({given}) does not match the name on the URL ({name})"
            );
            return Err(ApiError::bad_request(message));
        }
        _ => {}
    }
    let mut store = app.write();
    let exists = store
        .get(&target.rt.group_resource(), target.key_namespace(), name)
        .is_some();
    if exists {
        let stored =
            write::update_locked(&mut store, target, |current| Ok(merged(current, &applied)))?;
        Ok((StatusCode::OK, stored))
    } else if target.part == Part::Status {
        Err(ApiError::not_found(&target.rt.group_resource(), name))
    } else {
        Ok((
            StatusCode::CREATED,
            write::create_locked(&mut store, target, applied)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_select_the_patch_format() {
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json"),
            Ok(PatchKind::Merge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/json-patch+json"),
            Ok(PatchKind::Json)
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml"),
            Ok(PatchKind::Apply)
        );
        assert_eq!(
            PatchKind::from_content_type("text/plain").unwrap_err().code,
            415
        );
    }

    #[test]
    fn merge_patch_merges_maps_replaces_lists_and_removes_nulls() {
        let current = json!({"spec": {"a": 1, "b": 2, "list": [1, 2]}});
        let patch = json!({"spec": {"b": null, "c": 3, "list": [3]}});
        assert_eq!(
            merged(&current, &patch),
            json!({"spec": {"a": 1, "c": 3, "list": [3]}})
        );
    }
}
