//! Defaulting of custom resources from their structural schema (`structuraldefaulting.Default`):
//! an absent field, or a `null` one that is not nullable, whose schema has a `default` gets a
//! copy of it; defaults apply inside defaults, and inside lists and maps.

use serde_json::Value;

use super::schema::Schema;

/// Applies the schema's defaults to `value` in place.
pub fn apply(value: &mut Value, schema: &Schema) {
    match value {
        Value::Object(map) => {
            for (key, property) in &schema.properties {
                let Some(default) = &property.default else {
                    continue;
                };
                let missing = map
                    .get(key)
                    .is_none_or(|v| v.is_null() && !property.nullable);
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(child_schema) = schema.field(key) {
                    apply(child, child_schema);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.items.as_deref() else {
                return;
            };
            for item in items.iter_mut() {
                let replaceable = item.is_null() && !item_schema.nullable;
                if let Some(default) = item_schema.default.as_ref().filter(|_| replaceable) {
                    *item = default.clone();
                }
                apply(item, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_and_null_fields_get_their_defaults_recursively() {
        let schema = Schema::parse(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "default": {}, "properties": {
                "mode": {"type": "string", "default": "Push"},
                "kept": {"type": "string", "default": "x"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"},
                }}},
            }},
        }}));
        let mut obj = json!({});
        apply(&mut obj, &schema);
        assert_eq!(obj, json!({"spec": {"mode": "Push", "kept": "x"}}));
        let mut obj = json!({"spec": {"mode": null, "kept": "y", "ports": [{"port": 80}]}});
        apply(&mut obj, &schema);
        assert_eq!(
            obj,
            json!({"spec": {"mode": "Push", "kept": "y", "ports": [{"port": 80, "protocol": "TCP"}]}})
        );
    }
}
