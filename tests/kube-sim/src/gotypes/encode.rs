//! JSON text as Go's `encoding/json` writes a typed object: struct fields in declaration order,
//! map keys sorted, strings escaped as Go escapes them (`<`, `>`, `&`, U+2028 and U+2029 as
//! `\u003c`...; `\b`, `\f`, `\n`, `\r`, `\t`; other control characters as `\u00XX`). The
//! object is kube-sim's stored form, which already has exactly the fields Go would write; keys
//! the type does not declare (none, for stored objects) come after the declared ones.

use serde_json::Value;

use super::{Custom, GoType, fields_v1};

/// `value` encoded as Go encodes it as a `ty` (None: untyped, keys sorted).
#[cfg(test)]
pub fn encode(ty: Option<&GoType>, value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, ty, value);
    out
}

/// Writes `value` typed as `ty`.
pub fn write(out: &mut Vec<u8>, ty: Option<&GoType>, value: &Value) {
    let ty = ty.map(element_type);
    match value {
        Value::Object(entries) => {
            let order = field_order(ty, entries);
            out.push(b'{');
            for (i, key) in order.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, key);
                out.push(b':');
                write(out, child_type(ty, key), &entries[key.as_str()]);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            let element = match ty {
                Some(GoType::Slice(element)) => Some(&**element),
                _ => None,
            };
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, element, item);
            }
            out.push(b']');
        }
        Value::String(text) => write_string(out, text),
        // Numbers, booleans and null print the same in Go.
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

/// A pointer encodes as what it points to.
fn element_type(ty: &GoType) -> &GoType {
    match ty {
        GoType::Ptr(inner) => element_type(inner),
        other => other,
    }
}

/// The keys of an object in the order Go writes them.
fn field_order(ty: Option<&GoType>, entries: &serde_json::Map<String, Value>) -> Vec<String> {
    let s = match ty {
        Some(GoType::Struct(s)) => s,
        Some(GoType::Custom(Custom::FieldsV1)) => {
            let mut keys: Vec<String> = entries.keys().cloned().collect();
            keys.sort_by(|a, b| fields_v1::compare(a, b));
            return keys;
        }
        _ => return entries.keys().cloned().collect(),
    };
    let declared = s.fields.iter().map(|(name, _)| *name);
    let mut order: Vec<String> = declared
        .filter(|name| entries.contains_key(*name))
        .map(str::to_owned)
        .collect();
    order.extend(entries.keys().filter(|k| s.field(k).is_none()).cloned());
    order
}

/// The type of the value under `key` of a value of type `ty`.
pub fn child_type<'a>(ty: Option<&'a GoType>, key: &str) -> Option<&'a GoType> {
    match ty.map(element_type)? {
        GoType::Struct(s) => s.field(key),
        GoType::Map(element) => Some(element),
        // Every level of a FieldsV1 set is one.
        fields @ GoType::Custom(Custom::FieldsV1) => Some(fields),
        _ => None,
    }
}

/// A string as Go's encoder (with HTML escaping, as the apiserver's serializer has) writes it.
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if u32::from(c) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.extend_from_slice(format!("\\u{:04x}", u32::from(c)).as_bytes());
            }
            c => {
                let mut buffer = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::super::catalog;
    use super::*;
    use serde_json::json;

    #[test]
    fn structs_follow_declaration_order_and_maps_sort() {
        let service = catalog::lookup("", "Service");
        let obj = json!({"apiVersion": "v1", "kind": "Service", "status": {"loadBalancer": {}},
            "metadata": {"uid": "u", "name": "a", "labels": {"z": "1", "b": "<&>"}},
            "spec": {"type": "ClusterIP", "ports": [{"targetPort": 80, "port": 80, "name": "x"}]}});
        assert_eq!(
            String::from_utf8(encode(service, &obj)).unwrap(),
            r#"{"kind":"Service","apiVersion":"v1","metadata":{"name":"a","uid":"u","labels":{"b":"\u003c\u0026\u003e","z":"1"}},"spec":{"ports":[{"name":"x","port":80,"targetPort":80}],"type":"ClusterIP"},"status":{"loadBalancer":{}}}"#
        );
    }

    #[test]
    fn strings_escape_as_go_escapes_them() {
        let mut out = Vec::new();
        write_string(&mut out, "a\"\\\n\u{1}\u{8}\u{2028}é");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"\\\\\\n\\u0001\\b\\u2028é\""
        );
    }
}
