//! PATCH: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch of
//! built-in types (`crate::strategic`), and server-side apply (field ownership in
//! [`crate::fields`]).

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::body;
use super::params::Params;
use super::respond;
use super::target::Target;
use super::write;
use crate::app::App;
use crate::fields::{self, Options, Tracking};
use crate::gotypes;
use crate::lifecycle::Part;
use crate::object;
use crate::status::ApiError;
use crate::strategic;

/// The patch formats, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKind {
    Merge,
    Json,
    Strategic,
    /// Server-side apply: the applied configuration is merged into the live object by field
    /// ownership, creating the object if absent.
    Apply,
}

impl PatchKind {
    fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        match content_type {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/json-patch+json" => Ok(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            _ => Err(ApiError::unsupported_patch_media_type()),
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
    let (code, stored) = match PatchKind::from_content_type(&body::content_type(headers))? {
        PatchKind::Merge => {
            let tracking = write::update_tracking(Options::Patch, params, headers)?;
            let patch = merge_patch_body(body)?;
            let stored = write::update_locked(&mut app.write(), target, &tracking, |current| {
                let patched = merged(current, &patch);
                gotypes::check_merge_patch(&target.rt, current, &patch, &patched)?;
                Ok(patched)
            })?;
            (StatusCode::OK, stored)
        }
        PatchKind::Strategic => {
            let Some(schema) = strategic::schema::for_resource(&target.rt.group, &target.rt.plural)
            else {
                return Err(ApiError::strategic_patch_unsupported());
            };
            let tracking = write::update_tracking(Options::Patch, params, headers)?;
            let patch = merge_patch_body(body)?;
            let stored = write::update_locked(&mut app.write(), target, &tracking, |current| {
                strategic::patch(&schema, current, &patch).map_err(|e| ApiError::bad_request(e.0))
            })?;
            (StatusCode::OK, stored)
        }
        PatchKind::Json => {
            let tracking = write::update_tracking(Options::Patch, params, headers)?;
            let operations = json_patch_body(body)?;
            let stored = write::update_locked(&mut app.write(), target, &tracking, |current| {
                json_patched(target, current, &operations)
            })?;
            (StatusCode::OK, stored)
        }
        PatchKind::Apply => apply(app, target, params, body)?,
    };
    Ok(respond::object_response(code, &target.rt, &stored))
}

fn merge_patch_body(body: &[u8]) -> Result<Value, ApiError> {
    let patch = decode_patch(body)?;
    if patch.is_object() {
        Ok(patch)
    } else {
        Err(ApiError::bad_request("a merge patch must be a JSON object"))
    }
}

fn json_patch_body(body: &[u8]) -> Result<json_patch::Patch, ApiError> {
    serde_json::from_value(decode_patch(body)?)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))
}

/// A patch body as JSON; malformed ones are refused with Go's decoding message.
fn decode_patch(body: &[u8]) -> Result<Value, ApiError> {
    if let Some(syntax) = crate::gojson::syntax_error(body) {
        return Err(ApiError::bad_request(format!(
            "error decoding patch: {syntax}"
        )));
    }
    body::decode_json(body)
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
        tracing::debug!(resource = %target.rt.group_resource(), error = %e, "JSON patch failed");
        // How the apiserver wraps a failed operation: a generic 422 without details.
        ApiError::unprocessable_generic()
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
    let manager = fields::manager(Options::Apply, params.get("fieldManager"), None, None)?;
    let config: Value = super::body::from_yaml_text(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: an applied configuration must be an object",
        ));
    }
    let mut store = app.write();
    let name = target.name_or_empty();
    let stored = store.get(&target.rt.group_resource(), target.key_namespace(), name);
    if stored.is_none() && target.part == Part::Status {
        return Err(ApiError::not_found(&target.rt.group_resource(), name));
    }
    // The live object as the applied version shows it (the field manager works in that version).
    let current = stored.as_deref().map(|s| respond::present(&target.rt, s));
    let Some(context) = fields::context(&store, &target.rt) else {
        return Err(ApiError::internal(
            "no schema for an apply to this resource",
        ));
    };
    let request = fields::Apply {
        part: target.part,
        live: current.as_deref(),
        config: &config,
        manager: &manager,
        force: params.flag("force"),
        now: &object::now(),
    };
    let applied = fields::apply(&context, &request)?;
    check_name(target, &applied)?;
    if current.is_some() {
        let updated =
            write::update_locked(&mut store, target, &Tracking::Applied, |_| Ok(applied))?;
        return Ok((StatusCode::OK, updated));
    }
    let created =
        write::create_through_write(app, &mut store, target, &Tracking::Applied, applied)?;
    Ok((StatusCode::CREATED, created))
}

/// The applied object must be the one the URL names (the patch handler's `checkName`).
fn check_name(target: &Target, applied: &Value) -> Result<(), ApiError> {
    let (name, url_name) = (object::name(applied), target.name_or_empty());
    if name != url_name {
        let message = format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        );
        return Err(ApiError::bad_request(message));
    }
    let (namespace, url_namespace) = (object::namespace(applied), target.key_namespace());
    if !url_namespace.is_empty() && !namespace.is_empty() && namespace != url_namespace {
        let message = format!(
            "the namespace of the object ({namespace}) does not match the namespace on the URL ({url_namespace})"
        );
        return Err(ApiError::bad_request(message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types_select_the_patch_format() {
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json"),
            Ok(PatchKind::Strategic)
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
