//! Field errors as apimachinery's `k8s.io/apimachinery/pkg/util/validation/field` makes them
//! (`field.Required`, `field.Invalid`, ...) and their rendering as a 422 `Invalid` Status the
//! way `apierrors.NewInvalid` does: one cause per error, the message aggregating the distinct
//! errors (`Kind "name" is invalid: [a, b]`). Every type's validation (built-in types, Events,
//! Leases, custom resources) reports through this module.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::status::ApiError;

/// The kinds of field error (`field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    /// `field.TypeInvalid`: worded like Invalid, with its own reason.
    TypeInvalid,
    NotSupported,
    Duplicate,
    Forbidden,
    TooLong,
    TooMany,
}

impl ErrorType {
    /// The text the error starts with (`ErrorType.String()`).
    fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Duplicate => "Duplicate value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
        }
    }

    /// The `reason` of the Status cause.
    fn cause(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
        }
    }

    /// Whether the bad value is shown (`ErrorBody` leaves it out for these).
    fn shows_value(self) -> bool {
        !matches!(self, Self::Required | Self::Forbidden | Self::TooLong)
    }
}

/// One field error: the field path (`spec.ports[0].name`), the bad value, a detail.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    /// The bad value, None when the error shows none (Go's `omitValue`).
    pub value: Option<Value>,
    pub detail: String,
}

/// A list of field errors (`field.ErrorList`).
pub type ErrorList = Vec<FieldError>;

impl FieldError {
    fn make(kind: ErrorType, field: &str, value: Option<Value>, detail: impl Into<String>) -> Self {
        Self {
            kind,
            field: field.to_owned(),
            value,
            detail: detail.into(),
        }
    }

    /// An error of any kind about `value` (shown or not as the kind's wording says).
    pub fn new(
        kind: ErrorType,
        field: &str,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::make(kind, field, Some(value.into()), detail)
    }

    pub fn required(field: &str, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Required, field, None, detail)
    }

    pub fn invalid(field: &str, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// `field.Invalid(path, field.OmitValueType{}, detail)`: `Invalid value: detail`.
    pub fn invalid_without_value(field: &str, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Invalid, field, None, detail)
    }

    pub fn forbidden(field: &str, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Forbidden, field, None, detail)
    }

    pub fn duplicate(field: &str, value: impl Into<Value>) -> Self {
        Self::make(ErrorType::Duplicate, field, Some(value.into()), "")
    }

    /// `field.NotSupported`: the supported values are listed quoted, in the given order.
    pub fn not_supported(
        field: &str,
        value: impl Into<Value>,
        supported: &[impl AsRef<str>],
    ) -> Self {
        let list: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
        let detail = format!("supported values: {}", list.join(", "));
        Self::make(ErrorType::NotSupported, field, Some(value.into()), detail)
    }

    /// `field.TooMany`: more than `max` items.
    pub fn too_many(field: &str, actual: usize, max: usize) -> Self {
        let items = if max == 1 { "item" } else { "items" };
        let detail = format!("must have at most {max} {items}");
        Self::make(ErrorType::TooMany, field, Some(json!(actual)), detail)
    }

    /// `field.TooLong` without the value: longer than `max` bytes.
    pub fn too_long(field: &str, max: usize) -> Self {
        let detail = format!("may not be more than {max} bytes");
        Self::make(ErrorType::TooLong, field, None, detail)
    }

    /// The error without its field (`ErrorBody`), e.g. `Invalid value: "x": detail`.
    pub fn body(&self) -> String {
        let mut text = self.kind.text().to_owned();
        if let Some(value) = self.value.as_ref().filter(|_| self.kind.shows_value()) {
            text.push_str(": ");
            text.push_str(&render_value(value));
        }
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }

    /// The whole error, `field: body`.
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }
}

/// A bad value as `ErrorBody` prints it: strings quoted like Go's `%q`, numbers and booleans
/// plain, anything else as JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// `s` quoted as Go's `strconv.Quote` does (`%q`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The 422 `Invalid` answer for `errors` about the object `name` of `kind` in `group`
/// (`apierrors.NewInvalid`); None when there are no errors.
pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Option<ApiError> {
    if errors.is_empty() {
        return None;
    }
    let qualified_kind = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    let message = format!(
        "{qualified_kind} {} is invalid: {}",
        go_quote(name),
        aggregate(errors)
    );
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.kind.cause(), "message": e.body(), "field": e.field}))
        .collect();
    let mut details = serde_json::Map::new();
    if !name.is_empty() {
        details.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        details.insert("kind".into(), json!(kind));
    }
    details.insert("causes".into(), Value::Array(causes));
    Some(ApiError::invalid_with_details(
        message,
        Value::Object(details),
    ))
}

/// `Err` with the 422 answer for `errors` (see [`invalid`]), `Ok` when there are none.
pub fn refuse(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Result<(), ApiError> {
    invalid(group, kind, name, errors).map_or(Ok(()), Err)
}

/// A child path (`field.Path.Child`): `parent.child`, or `child` at the root.
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// An element path (`field.Path.Index`): `parent[index]`.
pub fn index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The distinct messages of `errors`, one alone or several as `[a, b]` (`ToAggregate`).
fn aggregate(errors: &[FieldError]) -> String {
    let mut seen = BTreeSet::new();
    let distinct: Vec<String> = errors
        .iter()
        .map(FieldError::message)
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match distinct.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_show_values_as_the_apiserver_does() {
        assert_eq!(
            FieldError::required("spec.ports", "").body(),
            "Required value"
        );
        assert_eq!(
            FieldError::invalid("a", json!(["None"]), "may not change once set").body(),
            "Invalid value: [\"None\"]: may not change once set"
        );
        assert_eq!(
            FieldError::not_supported("t", "IPv5", &["FQDN", "IPv4"]).body(),
            "Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\""
        );
        assert_eq!(
            FieldError::too_many("endpoints", 1001, 1000).body(),
            "Too many: 1001: must have at most 1000 items"
        );
        assert_eq!(
            FieldError::forbidden("x", "may not be used").body(),
            "Forbidden: may not be used"
        );
        assert_eq!(
            FieldError::duplicate("n", "http").body(),
            "Duplicate value: \"http\""
        );
    }

    #[test]
    fn one_error_is_inline_several_are_bracketed_and_deduplicated() {
        let one = [FieldError::required("spec.ports", "")];
        let error = invalid("", "Service", "web", &one).unwrap();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            "Service \"web\" is invalid: spec.ports: Required value"
        );
        let two = [
            FieldError::required("a", ""),
            FieldError::required("a", ""),
            FieldError::required("b", ""),
        ];
        let error = invalid("discovery.k8s.io", "EndpointSlice", "s", &two).unwrap();
        assert_eq!(
            error.message,
            "EndpointSlice.discovery.k8s.io \"s\" is invalid: [a: Required value, b: Required value]"
        );
        let details = error.details.unwrap();
        assert_eq!(details["group"], "discovery.k8s.io");
        assert_eq!(details["causes"].as_array().unwrap().len(), 3);
        assert!(invalid("", "Service", "web", &[]).is_none());
        assert!(refuse("", "Service", "web", &[]).is_ok());
    }

    #[test]
    fn type_errors_are_worded_as_invalid_with_their_own_reason() {
        let error = FieldError::new(
            ErrorType::TypeInvalid,
            &child("spec", "types"),
            "string",
            "spec.types in body must be of type array: \"string\"",
        );
        assert_eq!(
            error.message(),
            "spec.types: Invalid value: \"string\": spec.types in body must be of type array: \"string\""
        );
        let status = refuse("example.com", "Widget", "w", &[error])
            .unwrap_err()
            .to_status();
        assert_eq!(
            status["details"]["causes"][0]["reason"],
            "FieldValueTypeInvalid"
        );
        assert_eq!(index("spec.ports", 2), "spec.ports[2]");
        assert_eq!(child("", "spec"), "spec");
    }

    #[test]
    fn quoting_follows_go() {
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("é"), "\"é\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
    }
}
