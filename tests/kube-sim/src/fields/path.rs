//! Path elements in their FieldsV1 spelling (structured-merge-diff's `fieldpath.PathElement`
//! and `serialize-pe.go`), and the human form of a path used in conflict messages
//! (`fieldpath.Path.String`: `.spec.ports[port=80,protocol="TCP"].targetPort`).
//!
//! The spelling is canonical so that equal elements are equal strings: a key lists its fields
//! sorted by name (as `value.FieldList.Sort` does) in compact JSON, a set value is compact JSON.

use serde_json::Value;

use super::set::Element;

/// `f:NAME`: a field of a map or struct.
pub fn field(name: &str) -> Element {
    format!("f:{name}")
}

/// `k:{...}`: the item of an associative list with these key fields.
pub fn key(mut fields: Vec<(&str, &Value)>) -> Element {
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let body: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("{}:{}", json(&Value::from(*name)), json(value)))
        .collect();
    format!("k:{{{}}}", body.join(","))
}

/// `v:VALUE`: the item of a set.
pub fn value(value: &Value) -> Element {
    format!("v:{}", json(value))
}

/// The canonical spelling of an element read from a client's FieldsV1, or why it is invalid.
pub fn canonical(element: &str) -> Result<Element, String> {
    let (prefix, rest) = element
        .split_once(':')
        .ok_or_else(|| format!("unknown path element prefix in {element:?}"))?;
    let parsed = || -> Result<Value, String> {
        serde_json::from_str(rest).map_err(|e| format!("invalid path element {element:?}: {e}"))
    };
    match prefix {
        "f" => Ok(element.to_owned()),
        "i" => rest
            .parse::<u64>()
            .map(|_| element.to_owned())
            .map_err(|e| format!("invalid index in {element:?}: {e}")),
        "v" => Ok(value(&parsed()?)),
        "k" => match parsed()? {
            Value::Object(fields) => Ok(key(fields.iter().map(|(k, v)| (k.as_str(), v)).collect())),
            _ => Err(format!("key path element {element:?} is not an object")),
        },
        _ => Err(format!("unknown path element prefix {prefix:?}")),
    }
}

/// A path as `fieldpath.Path.String` prints it.
pub fn display(path: &[Element]) -> String {
    path.iter().map(|e| display_element(e)).collect()
}

fn display_element(element: &str) -> String {
    let (prefix, rest) = element.split_once(':').unwrap_or(("", element));
    match prefix {
        "f" => format!(".{rest}"),
        "i" => format!("[{rest}]"),
        "v" => format!(
            "[={}]",
            serde_json::from_str(rest).map_or(rest.to_owned(), |v| to_string(&v))
        ),
        "k" => {
            let fields: serde_json::Map<String, Value> =
                serde_json::from_str(rest).unwrap_or_default();
            let shown: Vec<String> = fields
                .iter()
                .map(|(name, v)| format!("{name}={}", to_string(v)))
                .collect();
            format!("[{}]", shown.join(","))
        }
        _ => element.to_owned(),
    }
}

/// `value.ToString`: strings quoted, everything else as JSON.
fn to_string(value: &Value) -> String {
    json(value)
}

fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_by_field_name() {
        let (port, protocol) = (json!(80), json!("TCP"));
        assert_eq!(
            key(vec![("protocol", &protocol), ("port", &port)]),
            r#"k:{"port":80,"protocol":"TCP"}"#
        );
        assert_eq!(value(&json!("a/b")), r#"v:"a/b""#);
    }

    #[test]
    fn client_spellings_are_canonicalised_or_refused() {
        assert_eq!(
            canonical(r#"k:{"protocol": "TCP", "port": 80}"#).unwrap(),
            r#"k:{"port":80,"protocol":"TCP"}"#
        );
        assert_eq!(canonical("f:a.b").unwrap(), "f:a.b");
        assert!(canonical("x:1").is_err());
        assert!(canonical("k:[1]").is_err());
        assert!(canonical("nothing").is_err());
    }

    #[test]
    fn paths_display_like_fieldpath() {
        let p = vec![
            field("spec"),
            field("ports"),
            key(vec![("port", &json!(80)), ("protocol", &json!("TCP"))]),
            field("targetPort"),
        ];
        assert_eq!(
            display(&p),
            r#".spec.ports[port=80,protocol="TCP"].targetPort"#
        );
        assert_eq!(
            display(&[field("metadata"), field("finalizers"), value(&json!("x"))]),
            r#".metadata.finalizers[="x"]"#
        );
    }
}
