//! Who a write is recorded for, and the checks of the `fieldManager` and `force` options
//! (apiserver's `managerOrUserAgent` / `prefixFromUserAgent`, apimachinery's
//! `ValidatePatchOptions` and `ValidateFieldManager`): the `fieldManager` query parameter, else
//! the User-Agent up to its first `/`, else `unknown`.

use serde_json::json;

use crate::status::ApiError;

/// `FieldManagerMaxLength`.
const MAX_LENGTH: usize = 128;

/// The request kinds whose options carry a field manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Options {
    Create,
    Update,
    Patch,
    Apply,
}

impl Options {
    fn kind(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Patch | Self::Apply => "PatchOptions",
        }
    }
}

/// The manager a write is recorded for, or 422 when the options are invalid.
pub fn manager(
    options: Options,
    field_manager: Option<&str>,
    force: Option<&str>,
    user_agent: Option<&str>,
) -> Result<String, ApiError> {
    let field_manager = field_manager.unwrap_or_default();
    let mut errors: Vec<(&str, &str, String)> = Vec::new();
    match options {
        Options::Patch if force.is_some() => errors.push((
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch".into(),
        )),
        Options::Apply if field_manager.is_empty() => errors.push((
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch".into(),
        )),
        _ => {}
    }
    if field_manager.len() > MAX_LENGTH {
        errors.push((
            "fieldManager",
            "FieldValueTooLong",
            format!("Too long: may not be more than {MAX_LENGTH} bytes"),
        ));
    }
    if let Some((i, c)) = field_manager.char_indices().find(|(_, c)| c.is_control()) {
        let value = serde_json::to_string(field_manager).unwrap_or_default();
        errors.push((
            "fieldManager",
            "FieldValueInvalid",
            format!(
                "Invalid value: {value}: invalid character U+{:04X} (at position {i})",
                u32::from(c)
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(invalid(options.kind(), &errors));
    }
    if !field_manager.is_empty() {
        return Ok(field_manager.to_owned());
    }
    let prefix = prefix_of(user_agent.unwrap_or_default());
    Ok(if prefix.is_empty() {
        "unknown".into()
    } else {
        prefix
    })
}

/// The User-Agent before its first `/`, printable characters only, at most 128 bytes.
fn prefix_of(user_agent: &str) -> String {
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or_default().chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// `OPTIONS.meta.k8s.io "" is invalid: ...`.
fn invalid(kind: &str, errors: &[(&str, &str, String)]) -> ApiError {
    let shown: Vec<String> = errors.iter().map(|(f, _, d)| format!("{f}: {d}")).collect();
    let listed = match shown.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes: Vec<_> = errors
        .iter()
        .map(|(field, reason, detail)| json!({"reason": reason, "message": detail, "field": field}))
        .collect();
    ApiError {
        code: 422,
        reason: "Invalid",
        message: format!("{kind}.meta.k8s.io \"\" is invalid: {listed}"),
        details: Some(json!({"group": "meta.k8s.io", "kind": kind, "causes": causes})),
        retry_after_seconds: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_wins_then_the_user_agent_then_unknown() {
        let ua = Some("kubectl/v1.36.0 (linux/amd64) kubernetes/abc");
        assert_eq!(
            manager(Options::Update, Some("ctl"), None, ua).unwrap(),
            "ctl"
        );
        assert_eq!(manager(Options::Update, None, None, ua).unwrap(), "kubectl");
        assert_eq!(
            manager(Options::Create, Some(""), None, None).unwrap(),
            "unknown"
        );
    }

    #[test]
    fn apply_needs_a_field_manager() {
        let error = manager(Options::Apply, None, None, Some("kube-rs/1")).unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                "reason": "Invalid",
                "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                    {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]},
                "code": 422})
        );
    }

    #[test]
    fn force_is_only_for_apply_and_names_are_bounded() {
        let error = manager(Options::Patch, None, Some("true"), None).unwrap_err();
        assert!(
            error
                .message
                .ends_with("force: Forbidden: may not be specified for non-apply patch")
        );
        let long = "m".repeat(129);
        let error = manager(Options::Create, Some(&long), None, None).unwrap_err();
        assert_eq!(
            error.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
        );
        assert_eq!(prefix_of(&"x".repeat(200)).len(), 128);
    }
}
