//! The uniqueness invariants of `x-kubernetes-list-type: set` (whole items) and `map` (the
//! `x-kubernetes-list-map-keys` of each item) lists, as `listtype.ValidateListSetsAndMaps`
//! checks them: each repeated value is reported once, at its second appearance, as
//! `Duplicate value`; items of a `map` list must be objects.

use serde_json::{Map, Value};

use super::schema::Schema;
use crate::types::field::{self, ErrorType, FieldError};

/// The list invariants `value` (an object) breaks, its paths from `path`.
pub fn validate(value: &Value, schema: &Schema, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(value, schema, path, &mut errors);
    errors
}

fn walk(value: &Value, schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if let Some(child_schema) = schema.field(key) {
                    walk(child, child_schema, &field::child(path, key), errors);
                }
            }
        }
        Value::Array(items) => {
            match schema.list_type.as_deref() {
                Some("set") => errors.extend(duplicates(items, path, |item| item.clone())),
                Some("map") => errors.extend(map_list(items, schema, path)),
                _ => {}
            }
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    walk(item, item_schema, &field::index(path, i), errors);
                }
            }
        }
        _ => {}
    }
}

fn map_list(items: &[Value], schema: &Schema, path: &str) -> Vec<FieldError> {
    if let Some((i, item)) = items
        .iter()
        .enumerate()
        .find(|(_, item)| !item.is_null() && !item.is_object())
    {
        let detail = "must be an object for an array of list-type map";
        return vec![FieldError::invalid(
            &field::index(path, i),
            item.clone(),
            detail,
        )];
    }
    duplicates(items, path, |item| {
        let keys: Map<String, Value> = schema
            .list_map_keys
            .iter()
            .filter_map(|k| Some((k.clone(), item.get(k)?.clone())))
            .collect();
        Value::Object(keys)
    })
}

/// `Duplicate value` errors for the first repeat of each value `key_of` gives.
fn duplicates(items: &[Value], path: &str, key_of: impl Fn(&Value) -> Value) -> Vec<FieldError> {
    let keys: Vec<Value> = items.iter().map(key_of).collect();
    let mut errors = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let earlier = keys[..i].iter().filter(|k| *k == key).count();
        if earlier == 1 {
            errors.push(FieldError::new(
                ErrorType::Duplicate,
                &field::index(path, i),
                key.clone(),
                "",
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(
            &json!({"type": "object", "properties": {"status": {"type": "object", "properties": {
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object"}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            }}}}),
        )
    }

    #[test]
    fn repeated_map_keys_are_duplicates_at_their_second_appearance() {
        let obj = json!({"status": {"conditions": [
            {"type": "Valid", "status": "True"}, {"type": "Valid", "status": "False"},
            {"type": "Valid"}, {"type": "Other"},
        ]}});
        let errors = validate(&obj, &schema(), "");
        let messages: Vec<String> = errors.iter().map(FieldError::message).collect();
        assert_eq!(
            messages,
            vec!["status.conditions[1]: Duplicate value: {\"type\":\"Valid\"}"]
        );
    }

    #[test]
    fn sets_must_hold_distinct_items() {
        let obj = json!({"status": {"tags": ["a", "b", "a", "a"]}});
        let errors = validate(&obj, &schema(), "");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "status.tags[2]");
        assert!(validate(&json!({"status": {"tags": ["a", "b"]}}), &schema(), "").is_empty());
    }
}
