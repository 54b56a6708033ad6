//! Field errors (the WIT `field-error`) and their rendering, byte for byte as Kubernetes'
//! `field.Error` and `ErrorList.ToAggregate()` print them
//! ([rendering](../../docs/validation.md#rendering-of-errors)). Every rule module produces these.

use std::collections::BTreeSet;

use crate::gofmt::{go_json_string, go_quote};
use crate::{ErrorType, FieldError};

impl ErrorType {
    /// The text Kubernetes prints for the kind.
    pub fn label(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Unsupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
        }
    }

    /// Required, Forbidden and Too long never print the bad value.
    fn prints_value(self) -> bool {
        matches!(
            self,
            ErrorType::Invalid | ErrorType::Duplicate | ErrorType::Unsupported
        )
    }
}

/// A bad value as Go would print it inside a field error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadValue {
    /// A Go `string`: printed with `%q`.
    Str(String),
    /// A Go integer: printed bare.
    Int(i64),
    /// Anything else (named string types, lists, structs, pointers): printed as compact JSON.
    Json(String),
}

impl BadValue {
    /// A named string type (`ExposureType`, `types.UID`): Go prints it as JSON, not `%q`.
    pub fn named_str(s: &str) -> BadValue {
        BadValue::Json(go_json_string(s))
    }

    /// A `[]string` or `[]NamedString`: compact JSON.
    pub fn str_list(items: &[String]) -> BadValue {
        let parts: Vec<String> = items.iter().map(|s| go_json_string(s)).collect();
        BadValue::Json(format!("[{}]", parts.join(",")))
    }

    pub fn render(&self) -> String {
        match self {
            BadValue::Str(s) => go_quote(s),
            BadValue::Int(i) => i.to_string(),
            BadValue::Json(j) => j.clone(),
        }
    }
}

/// One validation failure: `<field>: <Type>[: <value>][: <detail>]`. The bad value is rendered
/// when the error is made, and only for the kinds that print it.
impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, field, None, detail)
    }
    pub fn invalid(field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, field, Some(value), detail)
    }
    pub fn duplicate(field: impl Into<String>, value: BadValue) -> Self {
        Self::new(ErrorType::Duplicate, field, Some(value), "")
    }
    pub fn unsupported(field: impl Into<String>, value: BadValue, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::Unsupported, field, Some(value), detail)
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, None, detail)
    }
    /// `field.TooLong(path, _, max)` with a byte limit.
    pub fn too_long_bytes(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            ErrorType::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    fn new(
        error_type: ErrorType,
        field: impl Into<String>,
        value: Option<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            error_type,
            field: field.into(),
            value: value
                .filter(|_| error_type.prints_value())
                .map(|v| v.render()),
            detail: detail.into(),
        }
    }

    /// `<field>: <Type>[: <value>][: <detail>]`
    pub fn render(&self) -> String {
        let label = self.error_type.label();
        let value = self.value.as_deref().unwrap_or_default();
        let mut s = String::with_capacity(
            self.field.len() + label.len() + value.len() + self.detail.len() + 6,
        );
        s.push_str(&self.field);
        s.push_str(": ");
        s.push_str(label);
        if let Some(v) = &self.value {
            s.push_str(": ");
            s.push_str(v);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

/// `ErrorList.ToAggregate().Error()`: de-duplicate by rendered text keeping the first, join with
/// `, `, and wrap in brackets when more than one message remains. O(n log n): an object can
/// carry a hundred thousand errors.
pub fn aggregate(errors: &[FieldError]) -> String {
    let rendered: Vec<String> = errors.iter().map(FieldError::render).collect();
    let mut seen = BTreeSet::new();
    let kept: Vec<&str> = rendered
        .iter()
        .map(String::as_str)
        .filter(|line| seen.insert(*line))
        .collect();
    match kept.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        _ => {
            let mut joined = String::from("[");
            joined.push_str(&kept.join(", "));
            joined.push(']');
            joined
        }
    }
}

/// Builds `base[i]` and `base.child` paths the way `field.Path.String()` prints them. Every
/// element of a list gets its path whether or not it has an error, so these are written with
/// `push_str` rather than `format!`: in the component, the formatting machinery was a
/// noticeable part of a validate call (BENCHMARKS.md, "Webhook CPU per request").
pub fn index(base: &str, i: usize) -> String {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = i;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut path = String::with_capacity(base.len() + 2 + digits.len() - start);
    path.push_str(base);
    path.push('[');
    path.extend(digits[start..].iter().map(|&d| char::from(d)));
    path.push(']');
    path
}

pub fn child(base: &str, name: &str) -> String {
    let mut path = String::with_capacity(base.len() + 1 + name.len());
    path.push_str(base);
    path.push('.');
    path.push_str(name);
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_paths_as_field_path_prints_them() {
        assert_eq!(index("spec.ports", 0), "spec.ports[0]");
        assert_eq!(index("spec.ports", 10), "spec.ports[10]");
        assert_eq!(index("a", usize::MAX), format!("a[{}]", usize::MAX));
        assert_eq!(child(&index("spec.ports", 7), "name"), "spec.ports[7].name");
    }

    #[test]
    fn renders_each_kind_as_kubernetes_does() {
        let cases = [
            (
                FieldError::required("metadata.namespace", ""),
                "metadata.namespace: Required value",
            ),
            (
                FieldError::invalid(
                    "spec.ports[0].name",
                    BadValue::Str("foo.withdot".into()),
                    "must not contain dots",
                ),
                "spec.ports[0].name: Invalid value: \"foo.withdot\": must not contain dots",
            ),
            (
                FieldError::duplicate("spec.ports[1].name", BadValue::Str("foo".into())),
                "spec.ports[1].name: Duplicate value: \"foo\"",
            ),
            (
                FieldError::invalid(
                    "spec.types[0]",
                    BadValue::named_str(""),
                    "ExposureType Error",
                ),
                "spec.types[0]: Invalid value: \"\": ExposureType Error",
            ),
            (
                FieldError::invalid(
                    "spec.types",
                    BadValue::str_list(&["LoadBalancer".into()]),
                    "MultiClusterService types are immutable",
                ),
                "spec.types: Invalid value: [\"LoadBalancer\"]: MultiClusterService types are immutable",
            ),
            (
                FieldError::invalid(
                    "spec.ports[0].port",
                    BadValue::Int(0),
                    "must be between 1 and 65535, inclusive",
                ),
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                FieldError::forbidden("metadata.finalizers", "no"),
                "metadata.finalizers: Forbidden: no",
            ),
            (
                FieldError::too_long_bytes("metadata.annotations", 262144),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
            ),
            (
                FieldError::unsupported(
                    "spec.ports[0].name",
                    BadValue::Str("x".into()),
                    &["http".into(), "grpc".into()],
                ),
                "spec.ports[0].name: Unsupported value: \"x\": supported values: \"http\", \"grpc\"",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.render(), want);
        }
    }

    #[test]
    fn aggregates_one_error_without_brackets() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            aggregate(&[e]),
            "metadata.name: Required value: name or generateName is required"
        );
    }

    #[test]
    fn aggregates_many_errors_deduplicated_in_brackets() {
        let a = FieldError::duplicate("spec.ports[1].name", BadValue::Str("foo".into()));
        let b = FieldError::required("metadata.namespace", "");
        assert_eq!(
            aggregate(&[a.clone(), b.clone(), a.clone()]),
            "[spec.ports[1].name: Duplicate value: \"foo\", metadata.namespace: Required value]"
        );
        // Duplicates that collapse to one message print without brackets.
        assert_eq!(
            aggregate(&[b.clone(), b]),
            "metadata.namespace: Required value"
        );
    }
}
