//! Pruning of custom resources: fields the structural schema does not declare are dropped
//! (`structuralpruning.PruneWithOptions`, reporting each dropped path for the
//! `unknown field "..."` warning), unless `x-kubernetes-preserve-unknown-fields` keeps them;
//! `null`s of non-nullable fields without a default are dropped silently
//! (`PruneNonNullableNullsWithoutDefaults`); `metadata` keeps only ObjectMeta's fields, and
//! loses the empty ones Go's `omitempty` leaves out (`objectmeta.Coerce` round-trips it through
//! `metav1.ObjectMeta`: an emptied `finalizers` list disappears).

use serde_json::{Map, Value};

use super::schema::Schema;
use crate::types::field;

/// The fields of ObjectMeta; others are dropped from `metadata`.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes the custom resource `obj` against its `schema`; returns the dropped paths, sorted.
pub fn prune_resource(obj: &mut Value, schema: &Schema) -> Vec<String> {
    let mut pruned = Vec::new();
    let root = Schema {
        embedded_resource: true,
        ..schema.clone()
    };
    prune(obj, Some(&root), "", &mut pruned);
    prune_nulls(obj, Some(schema));
    coerce_metadata(obj, "", &mut pruned);
    pruned.sort();
    pruned
}

fn prune(value: &mut Value, schema: Option<&Schema>, path: &str, pruned: &mut Vec<String>) {
    let preserve = schema.is_some_and(|s| s.preserve_unknown_fields);
    match value {
        Value::Object(map) => {
            let embedded = schema.is_some_and(|s| s.embedded_resource);
            let mut dropped = Vec::new();
            for (key, child) in map.iter_mut() {
                if embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_path = field::child(path, key);
                match schema.and_then(|s| s.field(key)) {
                    Some(child_schema) => prune(child, Some(child_schema), &child_path, pruned),
                    None if preserve => {}
                    None => dropped.push(key.clone()),
                }
            }
            for key in dropped {
                map.remove(&key);
                pruned.push(field::child(path, &key));
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            for (i, item) in items.iter_mut().enumerate() {
                if preserve && item_schema.is_none() {
                    continue;
                }
                prune(item, item_schema, &field::index(path, i), pruned);
            }
        }
        _ => {}
    }
}

/// Drops `null` values of fields that are neither nullable nor defaulted.
fn prune_nulls(value: &mut Value, schema: Option<&Schema>) {
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                let child_schema = schema.and_then(|s| s.field(key));
                !(child.is_null()
                    && child_schema.is_some_and(|s| !s.nullable && s.default.is_none()))
            });
            for (key, child) in map.iter_mut() {
                prune_nulls(child, schema.and_then(|s| s.field(key)));
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            items.iter_mut().for_each(|i| prune_nulls(i, item_schema));
        }
        _ => {}
    }
}

/// Keeps only ObjectMeta's fields in `metadata`; a `metadata` that is not an object is dropped.
fn coerce_metadata(obj: &mut Value, path: &str, pruned: &mut Vec<String>) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match map.get_mut("metadata") {
        Some(Value::Object(meta)) => {
            let unknown: Vec<String> = meta
                .keys()
                .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
                .cloned()
                .collect();
            for key in unknown {
                meta.remove(&key);
                pruned.push(field::child(&field::child(path, "metadata"), &key));
            }
            meta.retain(|key, value| !omitted_when_empty(key, value));
        }
        Some(_) => {
            map.insert("metadata".into(), Value::Object(Map::new()));
        }
        None => {}
    }
}

/// Whether Go leaves the ObjectMeta field `key` out when it holds `value`: unset pointers,
/// empty strings, maps and lists, and a zero generation (`deletionGracePeriodSeconds` is a
/// pointer: 0 stays).
fn omitted_when_empty(key: &str, value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => key == "generation" && n.as_i64() == Some(0),
        Value::Bool(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "types": {"type": "array", "items": {"type": "string"}},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "name": {"type": "string"},
                    "maybe": {"type": "string", "nullable": true},
                }},
            },
        }))
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported_with_their_paths() {
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "bogus": 1},
            "spec": {"types": ["A"], "bogus": 1, "ports": [{"port": 80, "extra": true}], "free": {"any": {"thing": 1}}},
            "top": 1,
        });
        let pruned = prune_resource(&mut obj, &schema());
        assert_eq!(
            pruned,
            vec!["metadata.bogus", "spec.bogus", "spec.ports[0].extra", "top"]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                "spec": {"types": ["A"], "ports": [{"port": 80}], "free": {"any": {"thing": 1}}},
            })
        );
    }

    #[test]
    fn empty_metadata_fields_are_left_out() {
        let mut obj = json!({"metadata": {"name": "a", "finalizers": [], "labels": {}, "generation": 0, "deletionGracePeriodSeconds": 0}});
        prune_resource(&mut obj, &schema());
        assert_eq!(
            obj,
            json!({"metadata": {"name": "a", "deletionGracePeriodSeconds": 0}})
        );
    }

    #[test]
    fn nulls_of_non_nullable_fields_are_dropped_silently() {
        let mut obj = json!({"spec": {"name": null, "maybe": null}});
        assert!(prune_resource(&mut obj, &schema()).is_empty());
        assert_eq!(obj, json!({"spec": {"maybe": null}}));
    }
}
