//! The error decoding JSON into a Go type gives, as `sigs.k8s.io/json` (Go's `encoding/json`,
//! case-sensitive) reports it, or none:
//!
//! - a value of the wrong JSON type is an `*UnmarshalTypeError`, saved while decoding goes on;
//!   the first one is reported, with the innermost struct and the path of JSON field names from
//!   the root (`json: cannot unmarshal string into Go struct field ServiceSpec.spec.ports of type
//!   []v1.ServicePort`; pointers are named by their element type, list indexes and map keys are
//!   not part of the path);
//! - integers that do not fit (or have a fraction) read `number 1.5`;
//! - `[]byte` takes base64 (`illegal base64 data at input byte N`, no context);
//! - types with their own `UnmarshalJSON` (times, `IntOrString`) fail at once, ending the
//!   decoding: a time that does not parse gives `time.Parse`'s error, a time or an int-or-string
//!   of another JSON type the `UnmarshalTypeError` of the value they decode into (`string`,
//!   `int32`), given the context of the field;
//! - `null` decodes into anything; unknown fields are ignored.

use serde_json::{Number, Value};

use super::go_time::{self, Layout};
use super::{Custom, GoType};

/// Go's error for decoding `value` into `ty`; None when it decodes.
pub fn error(ty: &GoType, value: &Value) -> Option<String> {
    let mut decoder = Decoder::default();
    match decoder.value(ty, value) {
        Err(immediate) => Some(immediate),
        Ok(()) => decoder.saved,
    }
}

#[derive(Default)]
struct Decoder {
    /// JSON names of the struct fields being decoded, from the root.
    fields: Vec<&'static str>,
    /// The struct whose field is being decoded (`errorContext.Struct`).
    structs: Vec<&'static str>,
    saved: Option<String>,
}

/// The JSON type Go names in its errors.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Null => "null",
    }
}

impl Decoder {
    /// An `UnmarshalTypeError` with the decoder's context (`addErrorContext`).
    fn type_error(&self, what: &str, type_name: &str) -> String {
        match self.structs.last() {
            Some(name) => format!(
                "json: cannot unmarshal {what} into Go struct field {name}.{} of type {type_name}",
                self.fields.join(".")
            ),
            None => format!("json: cannot unmarshal {what} into Go value of type {type_name}"),
        }
    }

    fn save(&mut self, error: String) {
        self.saved.get_or_insert(error);
    }

    fn value(&mut self, ty: &GoType, value: &Value) -> Result<(), String> {
        if value.is_null() {
            return Ok(());
        }
        match (ty, value) {
            (GoType::Ptr(inner), _) => return self.value(inner, value),
            (GoType::Custom(custom), _) => return self.custom(*custom, value),
            (GoType::Str(_), Value::String(_)) | (GoType::Bool, Value::Bool(_)) => {}
            (GoType::Int(name), Value::Number(n)) => {
                if !fits(n, name) {
                    self.save(self.type_error(&format!("number {n}"), name));
                }
            }
            (GoType::Bytes, Value::String(text)) => {
                if let Some(at) = base64_error(text.as_bytes()) {
                    self.save(format!("illegal base64 data at input byte {at}"));
                }
            }
            (GoType::Bytes, Value::Array(items)) => {
                for item in items {
                    self.value(&GoType::Int("uint8"), item)?;
                }
            }
            (GoType::Slice(element), Value::Array(items)) => {
                for item in items {
                    self.value(element, item)?;
                }
            }
            (GoType::Map(element), Value::Object(entries)) => {
                for item in entries.values() {
                    self.value(element, item)?;
                }
            }
            (GoType::Struct(s), Value::Object(entries)) => {
                for (key, item) in entries {
                    let Some((name, field)) = s.fields.iter().find(|(n, _)| n == key) else {
                        continue;
                    };
                    self.fields.push(name);
                    self.structs.push(s.short_name());
                    self.value(field, item)?;
                    self.fields.pop();
                    self.structs.pop();
                }
            }
            _ => self.save(self.type_error(kind(value), &ty.go_name())),
        }
        Ok(())
    }

    /// `UnmarshalJSON` of the custom types: errors end the decoding.
    fn custom(&mut self, custom: Custom, value: &Value) -> Result<(), String> {
        let layout = match custom {
            Custom::Any | Custom::FieldsV1 => return Ok(()),
            Custom::IntOrString => {
                return match value {
                    Value::String(_) => Ok(()),
                    Value::Number(n) if fits(n, "int32") => Ok(()),
                    Value::Number(n) => Err(self.type_error(&format!("number {n}"), "int32")),
                    other => Err(self.type_error(kind(other), "int32")),
                };
            }
            Custom::Time => Layout::Rfc3339,
            Custom::MicroTime => Layout::Rfc3339Micro,
        };
        match value {
            Value::String(text) => go_time::parse_error(layout, text).map_or(Ok(()), Err),
            other => Err(self.type_error(kind(other), "string")),
        }
    }
}

/// Whether `n` is an integer `strconv.ParseInt` reads and the Go integer type holds.
fn fits(n: &Number, type_name: &str) -> bool {
    let Some(value) = n.as_i64() else {
        return false;
    };
    match type_name {
        "int32" => i32::try_from(value).is_ok(),
        "uint8" => u8::try_from(value).is_ok(),
        _ => true,
    }
}

/// The offset Go's `base64.StdEncoding.Decode` reports as corrupt (`decodeQuantum`), if any:
/// `\r` and `\n` are skipped, `=` pads the last quantum.
fn base64_error(src: &[u8]) -> Option<usize> {
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    while si < src.len() {
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                return (j != 0).then(|| si - j);
            }
            let c = src[si];
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                while si < src.len() && newline(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Some(src.len());
                }
                if src[si] != b'=' {
                    return Some(si - 1);
                }
                si += 1;
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            return (si < src.len()).then_some(si);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::catalog;
    use super::*;
    use serde_json::json;

    fn service(value: Value) -> Option<String> {
        error(catalog::lookup("", "Service").unwrap(), &value)
    }

    #[test]
    fn wrong_types_name_the_innermost_struct_and_the_field_path() {
        assert_eq!(
            service(json!({"spec": {"ports": "x"}})).unwrap(),
            "json: cannot unmarshal string into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort"
        );
        assert_eq!(
            service(json!({"spec": {"ports": [{"port": "80"}]}})).unwrap(),
            "json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32"
        );
        assert_eq!(
            service(json!({"metadata": {"labels": {"a": 1}}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert_eq!(
            service(json!({"spec": {"ipFamilyPolicy": true}})).unwrap(),
            "json: cannot unmarshal bool into Go struct field ServiceSpec.spec.ipFamilyPolicy of type v1.IPFamilyPolicy"
        );
        assert_eq!(
            service(json!({"spec": {"ports": [{"port": 1.5}, {"port": 99999999999_i64}]}}))
                .unwrap(),
            "json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.port of type int32"
        );
        assert_eq!(
            service(json!({"spec": [], "status": 1})).unwrap(),
            "json: cannot unmarshal array into Go struct field Service.spec of type v1.ServiceSpec",
            "the first error in document order"
        );
    }

    #[test]
    fn valid_objects_nulls_and_unknown_fields_decode() {
        let valid = json!({"kind": "Service", "metadata": {"name": "a", "labels": null,
            "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"ports": [{"port": 80,
            "targetPort": "http"}], "bogus": [1]}, "status": {"loadBalancer": {}}});
        assert_eq!(service(valid), None);
    }

    #[test]
    fn custom_types_fail_at_once() {
        assert_eq!(
            service(json!({"metadata": {"creationTimestamp": 5}, "spec": {"ports": "x"}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
        );
        assert_eq!(
            service(json!({"metadata": {"creationTimestamp": "now"}})).unwrap(),
            "parsing time \"now\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"now\" as \"2006\""
        );
        assert_eq!(
            service(json!({"spec": {"ports": [{"targetPort": true}]}})).unwrap(),
            "json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of type int32"
        );
    }

    #[test]
    fn bytes_are_base64_with_gos_offsets() {
        let secret = catalog::lookup("", "Secret").unwrap();
        assert_eq!(
            error(secret, &json!({"data": {"a": "aGk=", "b": "aG\nk="}})),
            None
        );
        let bad = |text: &str| error(secret, &json!({"data": {"a": text}}));
        assert_eq!(bad("a!").unwrap(), "illegal base64 data at input byte 1");
        assert_eq!(bad("abc").unwrap(), "illegal base64 data at input byte 0");
        assert_eq!(bad("abcde").unwrap(), "illegal base64 data at input byte 4");
        assert_eq!(bad("ab=").unwrap(), "illegal base64 data at input byte 3");
        assert_eq!(bad("aGk=x").unwrap(), "illegal base64 data at input byte 4");
    }
}
