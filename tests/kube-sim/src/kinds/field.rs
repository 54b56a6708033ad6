//! Field errors as apimachinery's `k8s.io/apimachinery/pkg/util/validation/field` makes them
//! (`field.Invalid`, `field.Required`, ...), and the 422 `Invalid` status `errors.NewInvalid`
//! builds from a list of them: one cause per error, the message aggregating the distinct ones.

use serde_json::{Value, json};

use crate::status::ApiError;

/// The kind of a field error: its `reason` in a `Status` cause and its wording.
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
    fn reason(self) -> &'static str {
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

    fn wording(self) -> &'static str {
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

    /// Types whose message never shows the bad value (`ErrorBody`).
    fn omits_value(self) -> bool {
        matches!(self, Self::Required | Self::Forbidden | Self::TooLong)
    }
}

/// One `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    /// The field path, as `field.Path.String()` renders it (`spec.ports[0].name`).
    pub field: String,
    pub value: Value,
    pub detail: String,
}

impl FieldError {
    pub fn new(kind: ErrorType, field: &str, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind,
            field: field.to_owned(),
            value,
            detail: detail.into(),
        }
    }

    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(ErrorType::Required, field, Value::Null, detail)
    }

    pub fn invalid(field: &str, value: Value, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, field, value, detail)
    }

    pub fn forbidden(field: &str, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, Value::Null, detail)
    }

    /// `field.NotSupported`: the detail lists the supported values, each quoted.
    pub fn not_supported(field: &str, value: Value, supported: &[String]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = format!("supported values: {}", quoted.join(", "));
        Self::new(ErrorType::NotSupported, field, value, detail)
    }

    /// `ErrorBody()`: the wording, the value (if shown) and the detail.
    pub fn body(&self) -> String {
        let mut body = self.kind.wording().to_owned();
        if !self.kind.omits_value() {
            body.push_str(": ");
            body.push_str(&render_value(&self.value));
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }

    /// `Error()`: `field: body`.
    pub fn message(&self) -> String {
        if self.field.is_empty() {
            self.body()
        } else {
            format!("{}: {}", self.field, self.body())
        }
    }
}

/// A bad value as `ErrorBody` prints it: strings quoted, numbers and booleans bare, `null`
/// for nil, anything else as JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// The 422 of `errors.NewInvalid(GroupKind{group, kind}, name, errors)`.
pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    let mut messages: Vec<String> = Vec::new();
    for message in errors.iter().map(FieldError::message) {
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    let aggregate = match messages.as_slice() {
        [] => String::new(),
        [one] => format!(": {one}"),
        many => format!(": [{}]", many.join(", ")),
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": e.kind.reason(), "message": e.body(), "field": e.field}))
        .collect();
    let mut details = json!({"name": name, "kind": kind, "causes": causes});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    ApiError {
        code: 422,
        reason: "Invalid",
        message: format!("{qualified} {name:?} is invalid{aggregate}"),
        details: Some(details),
        retry_after_seconds: None,
    }
}

/// A child path: `parent.child`, or `child` at the root.
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// An element path: `parent[index]`.
pub fn index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_show_the_value_as_the_apiserver_does() {
        let e = FieldError::invalid(
            "spec.leaseDurationSeconds",
            json!(0),
            "must be greater than 0",
        );
        assert_eq!(e.body(), "Invalid value: 0: must be greater than 0");
        let e = FieldError::new(
            ErrorType::Duplicate,
            "status.conditions[1]",
            json!({"type": "Valid"}),
            "",
        );
        assert_eq!(e.body(), "Duplicate value: {\"type\":\"Valid\"}");
        assert_eq!(
            FieldError::required("spec.types", "").body(),
            "Required value"
        );
        let e = FieldError::new(
            ErrorType::TooLong,
            "x",
            json!("xx"),
            "may not be more than 1 bytes",
        );
        assert_eq!(e.body(), "Too long: may not be more than 1 bytes");
        let e = FieldError::new(
            ErrorType::TooMany,
            "x",
            json!(3),
            "must have at most 2 items",
        );
        assert_eq!(e.body(), "Too many: 3: must have at most 2 items");
        let e = FieldError::not_supported("s", json!("Maybe"), &["True".into(), "False".into()]);
        assert_eq!(
            e.body(),
            "Unsupported value: \"Maybe\": supported values: \"True\", \"False\""
        );
    }

    #[test]
    fn the_message_aggregates_distinct_errors_and_keeps_every_cause() {
        let twice = [
            FieldError::forbidden("metadata.finalizers", "no"),
            FieldError::forbidden("metadata.finalizers", "no"),
        ];
        let status = invalid("example.com", "Widget", "w", &twice).to_status();
        assert_eq!(
            status["message"],
            "Widget.example.com \"w\" is invalid: metadata.finalizers: Forbidden: no"
        );
        assert_eq!(status["details"]["causes"].as_array().unwrap().len(), 2);
        let two = [FieldError::required("a", ""), FieldError::required("b", "")];
        let status = invalid("", "Event", "e", &two).to_status();
        assert_eq!(
            status["message"],
            "Event \"e\" is invalid: [a: Required value, b: Required value]"
        );
        assert!(status["details"].get("group").is_none());
    }
}
