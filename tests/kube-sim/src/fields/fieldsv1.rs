//! The FieldsV1 encoding of a field set (`managedFields[].fieldsV1`), as apimachinery's
//! `SetToFields` / `FieldsToSet` and structured-merge-diff's `Set.ToJSON` write and read it:
//! one JSON object per node, keyed by path element; `{}` for a member without children, and a
//! `".": {}` entry in a node that is both a member and the parent of members.

use serde_json::{Map, Value};

use super::path;
use super::set::FieldSet;

/// The FieldsV1 object of `set`.
pub fn encode(set: &FieldSet) -> Value {
    let mut out = Map::new();
    for member in set.members() {
        if set.child(member).is_none() {
            out.insert(member.clone(), Value::Object(Map::new()));
        }
    }
    for (element, child) in set.children() {
        let mut node = match encode(child) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        if set.has_member(element) {
            node.insert(".".into(), Value::Object(Map::new()));
        }
        out.insert(element.clone(), Value::Object(node));
    }
    Value::Object(out)
}

/// The field set a FieldsV1 object describes, or why it is not one.
pub fn decode(fields: &Value) -> Result<FieldSet, String> {
    let map = fields
        .as_object()
        .ok_or_else(|| "FieldsV1 must be a JSON object".to_owned())?;
    let mut set = FieldSet::new();
    for (key, node) in map {
        if key == "." {
            continue;
        }
        let element = path::canonical(key)?;
        let node_map = node
            .as_object()
            .ok_or_else(|| format!("FieldsV1 entry {key:?} is not an object"))?;
        if node_map.is_empty() || node_map.contains_key(".") {
            set.insert_member(element.clone());
        }
        set.insert_child(element, decode(node)?);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::set::path as p;
    use serde_json::json;

    #[test]
    fn members_with_children_carry_a_dot() {
        let mut set = FieldSet::new();
        set.insert(&p(&["f:metadata", "f:labels"]));
        set.insert(&p(&["f:metadata", "f:labels", "f:app"]));
        set.insert(&p(&["f:spec", "f:type"]));
        assert_eq!(
            encode(&set),
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:type": {}}})
        );
    }

    #[test]
    fn decoding_inverts_encoding() {
        let fields = json!({"f:spec": {"f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}, "f:selector": {}}});
        let set = decode(&fields).unwrap();
        assert!(set.has(&p(&["f:spec", "f:ports"])));
        assert!(set.has(&p(&["f:spec", "f:selector"])));
        assert!(!set.has(&p(&["f:spec"])));
        assert_eq!(encode(&set), fields);
    }

    #[test]
    fn malformed_fields_are_refused() {
        assert!(decode(&json!([])).is_err());
        assert!(decode(&json!({"f:a": 1})).is_err());
        assert!(decode(&json!({"bogus": {}})).is_err());
        assert_eq!(decode(&json!({})).unwrap(), FieldSet::new());
    }
}
