//! Strategic merge patch (`k8s.io/apimachinery/pkg/util/strategicpatch`) of built-in types:
//! maps merge (a `null` removes a key), lists merge or are replaced as the type's patch
//! strategies say ([`schema`]), merged lists keep the order `normalizeElementOrder` gives, and
//! the directives `$patch` (`replace`, `delete`, `merge`), `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` work.
//!
//! Entry point: [`patch`]. Custom resources have no patch strategies: the caller refuses
//! strategic merge patches for them (415), as the apiserver does.

mod lists;
pub mod schema;

use serde_json::{Map, Value};

use schema::{ListStrategy, Schema};

/// Why a strategic merge patch cannot be applied (answered as a 422 or 400 by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError(pub String);

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";
const ELEMENT_ORDER: &str = "$setElementOrder/";

/// `current` with `patch` applied by the patch strategies of `schema`.
pub fn patch(schema: &Schema, current: &Value, patch: &Value) -> Result<Value, PatchError> {
    let (Some(original), Some(patch)) = (current.as_object(), patch.as_object()) else {
        return Err(PatchError(
            "a strategic merge patch must be a JSON object".to_owned(),
        ));
    };
    Ok(merge_map(schema, "", original.clone(), patch)?.map_or(Value::Null, Value::Object))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Merges `patch` into `original` (the map at `path`); None when the patch deletes the map.
fn merge_map(
    schema: &Schema,
    path: &str,
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, PatchError> {
    match patch.get(PATCH).and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut replaced = patch.clone();
            replaced.remove(PATCH);
            return Ok(Some(replaced));
        }
        Some("merge") | None => {}
        Some(other) => return Err(PatchError(format!("unknown patch type: {other} in map"))),
    }
    if let Some(retained) = patch.get(RETAIN_KEYS).and_then(Value::as_array) {
        original.retain(|k, _| retained.iter().any(|r| r == k.as_str()));
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM) {
            let doomed = value.as_array().cloned().unwrap_or_default();
            if let Some(list) = original.get_mut(field).and_then(Value::as_array_mut) {
                list.retain(|item| !doomed.contains(item));
            }
        }
    }
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        let field_path = child(path, key);
        let merged = merge_value(
            schema,
            &field_path,
            original.remove(key),
            value,
            patch.get(&format!("{ELEMENT_ORDER}{key}")),
        )?;
        if let Some(merged) = merged {
            original.insert(key.clone(), merged);
        }
    }
    for (key, order) in patch {
        let Some(field) = key.strip_prefix(ELEMENT_ORDER) else {
            continue;
        };
        if patch.contains_key(field) {
            continue; // ordered with its patch above
        }
        let strategy = schema.list(&child(path, field));
        if let (Some(list), Some(order), ListStrategy::Merge(merge_key)) = (
            original.get(field).and_then(Value::as_array),
            order.as_array(),
            strategy,
        ) {
            let reordered = lists::order_by(list, order, merge_key);
            original.insert(field.to_owned(), Value::Array(reordered));
        }
    }
    Ok(Some(original))
}

/// The new value of one field: removed (None) for a `null` patch, merged for maps and merging
/// lists, else the patch's value.
fn merge_value(
    schema: &Schema,
    path: &str,
    original: Option<Value>,
    patch: &Value,
    element_order: Option<&Value>,
) -> Result<Option<Value>, PatchError> {
    match (original, patch) {
        (_, Value::Null) => Ok(None),
        (Some(Value::Object(original)), Value::Object(patch)) => {
            Ok(merge_map(schema, path, original, patch)?.map(Value::Object))
        }
        (None, Value::Object(patch)) => {
            Ok(merge_map(schema, path, Map::new(), patch)?.map(Value::Object))
        }
        (original, Value::Array(patch)) => match schema.list(path) {
            ListStrategy::Merge(key) => {
                let original = original
                    .and_then(|o| o.as_array().cloned())
                    .unwrap_or_default();
                let order = element_order.and_then(Value::as_array);
                lists::merge(schema, path, &original, patch, key, order)
                    .map(|l| Some(Value::Array(l)))
            }
            ListStrategy::Replace => Ok(Some(Value::Array(lists::without_directives(patch)))),
        },
        (_, other) => Ok(Some(other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service() -> Schema {
        schema::for_resource("", "services").unwrap()
    }

    fn ports(list: Value) -> Value {
        json!({"metadata": {"name": "s", "labels": {"a": "1"}}, "spec": {"ports": list, "selector": {"app": "web"}}})
    }

    #[test]
    fn ports_merge_by_port_and_new_ones_come_first() {
        let current = ports(
            json!([{"name": "http", "port": 80, "targetPort": 8080}, {"name": "https", "port": 443}]),
        );
        let patched = patch(
            &service(),
            &current,
            &json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
        )
        .unwrap();
        assert_eq!(
            patched["spec"]["ports"],
            json!([{"name": "http", "port": 80, "targetPort": 9090}, {"name": "https", "port": 443}])
        );
        let patched = patch(
            &service(),
            &current,
            &json!({"spec": {"ports": [{"port": 443, "$patch": "delete"}]}}),
        )
        .unwrap();
        assert_eq!(
            patched["spec"]["ports"],
            json!([{"name": "http", "port": 80, "targetPort": 8080}])
        );
        let added = patch(
            &service(),
            &patched,
            &json!({"spec": {"ports": [{"name": "metrics", "port": 9100}]}}),
        )
        .unwrap();
        assert_eq!(
            added["spec"]["ports"],
            json!([{"name": "metrics", "port": 9100}, {"name": "http", "port": 80, "targetPort": 8080}])
        );
    }

    #[test]
    fn maps_merge_nulls_remove_and_other_lists_are_replaced() {
        let current = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"clusterIPs": ["10.0.0.1"]}});
        let patched = patch(&service(), &current, &json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"clusterIPs": ["10.0.0.2"]}})).unwrap();
        assert_eq!(
            patched,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"clusterIPs": ["10.0.0.2"]}})
        );
        let replaced = patch(
            &service(),
            &current,
            &json!({"metadata": {"labels": {"$patch": "replace", "z": "9"}}}),
        )
        .unwrap();
        assert_eq!(replaced["metadata"]["labels"], json!({"z": "9"}));
    }

    #[test]
    fn finalizers_merge_as_a_set_and_can_be_deleted_from() {
        let current = json!({"metadata": {"finalizers": ["a.io/x", "b.io/y"]}});
        let patched = patch(
            &service(),
            &current,
            &json!({"metadata": {"finalizers": ["c.io/z"]}}),
        )
        .unwrap();
        assert_eq!(
            patched["metadata"]["finalizers"],
            json!(["c.io/z", "a.io/x", "b.io/y"])
        );
        let removed = patch(
            &service(),
            &current,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.io/x"]}}),
        )
        .unwrap();
        assert_eq!(removed["metadata"]["finalizers"], json!(["b.io/y"]));
    }

    #[test]
    fn set_element_order_orders_the_merged_list() {
        let current = ports(json!([{"port": 80}, {"port": 443}]));
        let order = json!({"spec": {"$setElementOrder/ports": [{"port": 443}, {"port": 80}]}});
        let patched = patch(&service(), &current, &order).unwrap();
        assert_eq!(
            patched["spec"]["ports"],
            json!([{"port": 443}, {"port": 80}])
        );
    }
}
