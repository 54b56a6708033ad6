//! The Go types of the built-in kinds kube-sim serves (`k8s.io/api`), as far as decoding JSON
//! into them goes: which JSON values each field accepts, the order Go encodes the fields in, and
//! the names Go's `encoding/json` uses in its errors. kube-apiserver decodes every patched
//! object into its Go type (`runtime.DecodeInto` in the patch handler), so a patch giving a field
//! a value of the wrong JSON type is refused with Go's error, quoting the patched object:
//!
//! - [`catalog`] and [`kinds`]: the types, field by field;
//! - [`decode`]: the error `sigs.k8s.io/json` (Go's decoder) reports, if any;
//! - [`go_time`]: the errors of `time.Parse` for `metav1.Time` and `metav1.MicroTime`;
//! - [`encode`]: an object encoded as Go encodes its struct (fields in declaration order,
//!   managed fields in [`fields_v1`] order);
//! - [`merge`]: the text `jsonpatch.MergePatch` (evanphx/json-patch v4) makes of a Go-encoded
//!   object and a merge patch.
//!
//! Only JSON merge patches of built-in types are checked (see `api::patch`). Custom resources
//! are unstructured (their schema validates them instead).

pub mod catalog;
pub mod decode;
pub mod encode;
mod fields_v1;
mod go_time;
mod kinds;
pub mod merge;

use std::sync::Arc;

use serde_json::Value;

use crate::registry::ResourceType;
use crate::status::ApiError;
use crate::types::field::{self, FieldError};

/// The patch handler's decoding of a JSON merge patch's result into the Go type of `rt`
/// (`jsonPatcher.applyPatchToCurrentObject`): for built-in kinds, a result that does not decode
/// is a 422 `Invalid` of the field `patch`, its value the merged text, its detail Go's error
/// (`"" is invalid: patch: Invalid value: "{...}": json: cannot unmarshal ...`).
pub fn check_merge_patch(
    rt: &ResourceType,
    current: &Value,
    patch: &Value,
    patched: &Value,
) -> Result<(), ApiError> {
    if rt.defined_by.is_some() {
        return Ok(());
    }
    let Some(ty) = catalog::lookup(&rt.group, &rt.kind) else {
        return Ok(());
    };
    let Some(error) = decode::error(ty, patched) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(&merge::render(Some(ty), current, patch)).into_owned();
    field::refuse("", "", "", &[FieldError::invalid("patch", text, error)])
}

/// A Go type, as the JSON decoder sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum GoType {
    /// A string kind, named as `reflect.Type.String` names it (`string`, `v1.ServiceType`).
    Str(&'static str),
    /// An integer kind (`int32`, `int64`).
    Int(&'static str),
    Bool,
    /// `[]byte`: a base64 string (or an array of bytes).
    Bytes,
    /// A pointer: `null`, or a value of the element type (errors name the element type).
    Ptr(Box<GoType>),
    Slice(Box<GoType>),
    /// `map[string]T`.
    Map(Box<GoType>),
    Struct(Arc<GoStruct>),
    /// A type with its own `UnmarshalJSON`.
    Custom(Custom),
}

/// The types kube-sim meets that decode themselves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Custom {
    /// `metav1.Time`: `null` or an RFC 3339 string.
    Time,
    /// `metav1.MicroTime`: `null` or an RFC 3339 string with six fractional digits.
    MicroTime,
    /// `intstr.IntOrString`: a string, else an `int32`.
    IntOrString,
    /// `metav1.FieldsV1`: anything, kept as raw JSON (written in structured-merge-diff's
    /// order, see [`fields_v1`]).
    FieldsV1,
    /// Anything (`metav1.FieldsV1`, `runtime.RawExtension`, `apiextensions.JSON`).
    Any,
}

/// A Go struct: its name (`v1.ServiceSpec`) and JSON fields in declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct GoStruct {
    pub name: &'static str,
    pub fields: Vec<(&'static str, GoType)>,
}

impl GoStruct {
    pub fn field(&self, json: &str) -> Option<&GoType> {
        self.fields.iter().find(|(n, _)| *n == json).map(|(_, t)| t)
    }

    /// The name without its package, as `reflect.Type.Name` gives it (`ServiceSpec`).
    pub fn short_name(&self) -> &'static str {
        self.name.rsplit('.').next().unwrap_or(self.name)
    }
}

impl GoType {
    /// The type as `reflect.Type.String` prints it.
    pub fn go_name(&self) -> String {
        match self {
            Self::Str(name) | Self::Int(name) => (*name).to_owned(),
            Self::Bool => "bool".to_owned(),
            Self::Bytes => "[]uint8".to_owned(),
            Self::Ptr(t) => format!("*{}", t.go_name()),
            Self::Slice(t) => format!("[]{}", t.go_name()),
            Self::Map(t) => format!("map[string]{}", t.go_name()),
            Self::Struct(s) => s.name.to_owned(),
            Self::Custom(Custom::Time) => "v1.Time".to_owned(),
            Self::Custom(Custom::MicroTime) => "v1.MicroTime".to_owned(),
            Self::Custom(Custom::IntOrString) => "intstr.IntOrString".to_owned(),
            Self::Custom(Custom::FieldsV1) => "v1.FieldsV1".to_owned(),
            Self::Custom(Custom::Any) => "runtime.RawExtension".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_print_as_reflect_prints_them() {
        let port = Arc::new(GoStruct {
            name: "v1.ServicePort",
            fields: vec![],
        });
        assert_eq!(
            GoType::Slice(Box::new(GoType::Struct(port.clone()))).go_name(),
            "[]v1.ServicePort"
        );
        assert_eq!(port.short_name(), "ServicePort");
        assert_eq!(
            GoType::Ptr(Box::new(GoType::Int("int32"))).go_name(),
            "*int32"
        );
        assert_eq!(
            GoType::Map(Box::new(GoType::Str("string"))).go_name(),
            "map[string]string"
        );
        assert_eq!(GoType::Bytes.go_name(), "[]uint8");
    }
}
