//! Field errors and their rendering, byte for byte as Kubernetes' `field.Error` and
//! `ErrorList.ToAggregate()` print them (SPEC §2.5). Every rule module produces these.

use std::collections::BTreeSet;

use crate::gofmt::{go_json_string, go_quote};

/// Kind of a field error; `label()` is the text Kubernetes prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Required,
    Invalid,
    Duplicate,
    Unsupported,
    Forbidden,
    TooLong,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Required => "Required value",
            Kind::Invalid => "Invalid value",
            Kind::Duplicate => "Duplicate value",
            Kind::Unsupported => "Unsupported value",
            Kind::Forbidden => "Forbidden",
            Kind::TooLong => "Too long",
        }
    }

    /// Required, Forbidden and Too long never print the bad value.
    fn prints_value(self) -> bool {
        matches!(self, Kind::Invalid | Kind::Duplicate | Kind::Unsupported)
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

/// One validation failure: `<field>: <Type>[: <value>][: <detail>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub kind: Kind,
    pub field: String,
    pub value: Option<BadValue>,
    pub detail: String,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(Kind::Required, field, None, detail)
    }
    pub fn invalid(field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        Self::new(Kind::Invalid, field, Some(value), detail)
    }
    pub fn duplicate(field: impl Into<String>, value: BadValue) -> Self {
        Self::new(Kind::Duplicate, field, Some(value), "")
    }
    pub fn unsupported(field: impl Into<String>, value: BadValue, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(Kind::Unsupported, field, Some(value), detail)
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(Kind::Forbidden, field, None, detail)
    }
    /// `field.TooLong(path, _, max)` with a byte limit.
    pub fn too_long_bytes(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            Kind::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    fn new(
        kind: Kind,
        field: impl Into<String>,
        value: Option<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// The value as printed in the message, or `None` for kinds that print no value.
    pub fn rendered_value(&self) -> Option<String> {
        if !self.kind.prints_value() {
            return None;
        }
        self.value.as_ref().map(BadValue::render)
    }

    /// `<field>: <Type>[: <value>][: <detail>]`
    pub fn render(&self) -> String {
        let mut s = format!("{}: {}", self.field, self.kind.label());
        if let Some(v) = self.rendered_value() {
            s.push_str(": ");
            s.push_str(&v);
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
        _ => format!("[{}]", kept.join(", ")),
    }
}

/// Builds `base[i]` and `base.child` paths the way `field.Path.String()` prints them.
pub fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

pub fn child(base: &str, name: &str) -> String {
    format!("{base}.{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
