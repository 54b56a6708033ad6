//! Objects as the store keeps them: the JSON value with its labels, its storage key and its
//! encoding, all made once per write.
//!
//! The encoding is of the object *without* `kind` and `apiVersion`, which is how the
//! apiserver serializes the items of a list of a built-in type (the typed list's items carry
//! an empty TypeMeta). The object form (GET answers, watch events, custom resource list
//! items) prefixes that encoding with the type, so no answer re-serializes a stored object,
//! whichever version it is served at.
//!
//! [`ObjectKey`] orders objects as etcd orders their keys (`/registry/<resource>/<ns>/<name>`):
//! byte-wise on `namespace/name`, which is the order of every list and what continue tokens
//! point into.

use std::cmp::Ordering;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::object::{self, Labels};

/// Where an object lives: its namespace ("" for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The first key of `namespace` in key order.
    pub fn namespace_start(namespace: &str) -> Self {
        Self::new(namespace, "")
    }

    /// The key below a list's prefix, as continue tokens carry it: `name` within a namespace
    /// or for cluster-scoped objects, `namespace/name` across all namespaces.
    pub fn relative(&self, across_namespaces: bool) -> String {
        if across_namespaces && !self.namespace.is_empty() {
            format!("{}/{}", self.namespace, self.name)
        } else {
            self.name.clone()
        }
    }

    /// The bytes etcd orders this key by (below the resource prefix).
    fn ordered_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let separator: &[u8] = if self.namespace.is_empty() { b"" } else { b"/" };
        self.namespace
            .bytes()
            .chain(separator.iter().copied())
            .chain(self.name.bytes())
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> Ordering {
        // Most comparisons are within one namespace: compare the names directly.
        if self.namespace == other.namespace {
            return self.name.cmp(&other.name);
        }
        self.ordered_bytes().cmp(other.ordered_bytes())
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A stored object with what was derived from it when it was written.
#[derive(Debug, Clone)]
pub struct Stored {
    pub value: Arc<Value>,
    pub labels: Arc<Labels>,
    /// The JSON encoding of `value` without `kind` and `apiVersion` (a JSON object).
    pub body: Arc<[u8]>,
    pub key: Arc<ObjectKey>,
}

impl Stored {
    pub fn new(value: Value) -> Self {
        let body = encode_without_type(&value);
        Self {
            key: Arc::new(ObjectKey::new(
                object::namespace(&value),
                object::name(&value),
            )),
            labels: Arc::new(object::labels(&value)),
            value: Arc::new(value),
            body: body.into(),
        }
    }

    /// `metadata.resourceVersion` as a number (0 when absent or not a number).
    #[cfg(test)]
    pub fn resource_version(&self) -> u64 {
        object::resource_version(&self.value)
            .parse()
            .unwrap_or_default()
    }

    /// The object as a list item of a built-in type: without `kind` and `apiVersion`.
    pub fn item_json(&self) -> &[u8] {
        &self.body
    }

    /// The object with `kind` and `apiVersion` (of the version it is served at) first.
    pub fn write_object_json(&self, kind: &str, api_version: &str, out: &mut Vec<u8>) {
        write_with_type(kind, api_version, &self.body, out);
    }

    #[cfg(test)]
    pub fn object_json(&self, kind: &str, api_version: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + kind.len() + api_version.len() + 32);
        self.write_object_json(kind, api_version, &mut out);
        out
    }
}

/// `{"kind":K,"apiVersion":V,...}` from the encoding of the rest of the object.
pub fn write_with_type(kind: &str, api_version: &str, body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"kind\":");
    write_json_string(kind, out);
    out.extend_from_slice(b",\"apiVersion\":");
    write_json_string(api_version, out);
    match body {
        b"{}" | b"" => out.push(b'}'),
        _ => {
            out.push(b',');
            out.extend_from_slice(&body[1..]);
        }
    }
}

fn write_json_string(text: &str, out: &mut Vec<u8>) {
    // Encoding a string cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// The top-level map of an object without its type fields, serialized as it is.
struct WithoutType<'a>(&'a Map<String, Value>);

impl Serialize for WithoutType<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = self
            .0
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "kind" | "apiVersion"));
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in fields {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

fn encode_without_type(value: &Value) -> Vec<u8> {
    // Encoding a `Value` cannot fail (its map keys are strings).
    match value.as_object() {
        Some(map) => serde_json::to_vec(&WithoutType(map)).unwrap_or_default(),
        None => b"{}".to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sort_like_etcd_keys() {
        let mut keys = [
            ObjectKey::new("a", "x"),
            ObjectKey::new("a-b", "x"),
            ObjectKey::new("a", "b"),
            ObjectKey::new("a.b", "a"),
            ObjectKey::new("ab", "a"),
        ];
        keys.sort();
        let order: Vec<String> = keys.iter().map(|k| k.relative(true)).collect();
        // '-' and '.' sort before '/', which sorts before letters.
        assert_eq!(order, vec!["a-b/x", "a.b/a", "a/b", "a/x", "ab/a"]);
        assert!(ObjectKey::namespace_start("a") < ObjectKey::new("a", "0"));
        assert!(ObjectKey::new("", "b") > ObjectKey::new("", "a"));
    }

    #[test]
    fn item_and_object_forms_encode_like_the_value() {
        let value = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a\"b"}, "data": {"k": "v"}});
        let stored = Stored::new(value.clone());
        let item: Value = serde_json::from_slice(stored.item_json()).unwrap();
        assert_eq!(
            item,
            json!({"metadata": {"name": "a\"b"}, "data": {"k": "v"}})
        );
        let object: Value = serde_json::from_slice(&stored.object_json("ConfigMap", "v1")).unwrap();
        assert_eq!(object, value);
        let bare = Stored::new(json!({"kind": "X", "apiVersion": "v1"}));
        assert_eq!(bare.item_json(), b"{}");
        let object: Value = serde_json::from_slice(&bare.object_json("X", "g/v2")).unwrap();
        assert_eq!(object, json!({"kind": "X", "apiVersion": "g/v2"}));
    }
}
