//! Whether a CRD version's `openAPIV3Schema` is a structural schema the apiextensions-apiserver
//! accepts, as far as kube-sim checks it: part of `schema.ValidateStructural`
//! (`pkg/apiserver/schema/validation.go`) and of the `x-kubernetes-list-type` rules of
//! `ValidateCustomResourceDefinitionOpenAPISchema` and `validateMapListKeysMaintainability`
//! (`pkg/apis/apiextensions/validation/validation.go`). Each field error's path starts at
//! `spec.versions[i].schema.openAPIV3Schema`, as the apiserver's do; the structural errors are
//! sorted by their text, as `ValidateStructural` sorts them.
//!
//! Checked: a `type` at the root (`object`), for every property, `additionalProperties` schema
//! and array items, except under `x-kubernetes-int-or-string` or
//! `x-kubernetes-preserve-unknown-fields`; `items` for every array; `x-kubernetes-list-map-keys`
//! only with `x-kubernetes-list-type: map`, which needs them, object items, keys naming scalar
//! properties of the items, no key twice, and each key required or defaulted. Not checked: the
//! rest of structurality (value validations under `allOf`/`anyOf`/`oneOf`/`not` specifying
//! types or properties, `metadata` restrictions, embedded resources, int-or-string shapes),
//! formats, CEL rules, defaults against their schema. No recorded transcript covers these
//! answers: the wording follows the apiserver's source.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::types::field::{ErrorList, FieldError, child};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The errors of the schema `schema` found at `path`.
pub fn errors(schema: &Value, path: &str) -> ErrorList {
    let mut structural = ErrorList::new();
    invariants(schema, Level::Root, path, &mut structural);
    structural.sort_by_key(FieldError::message);
    let mut lists = ErrorList::new();
    list_types(schema, path, &mut lists);
    structural.extend(lists);
    structural
}

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

fn flag(value: &Value, key: &str) -> bool {
    value[key].as_bool().unwrap_or(false)
}

fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema["properties"].as_object().into_iter().flatten()
}

/// `validateStructuralInvariants`' type and items checks, through the whole tree.
fn invariants(schema: &Value, level: Level, path: &str, errors: &mut ErrorList) {
    let kind = text(schema, "type");
    if kind == "array" && schema["items"].is_null() {
        errors.push(FieldError::required(
            &child(path, "items"),
            "must be specified",
        ));
    }
    if schema["items"].is_object() {
        invariants(&schema["items"], Level::Item, &child(path, "items"), errors);
    }
    for (name, property) in properties(schema) {
        let at = format!("{}[{name}]", child(path, "properties"));
        invariants(property, Level::Field, &at, errors);
    }
    if schema["additionalProperties"].is_object() {
        let at = child(path, "additionalProperties");
        invariants(&schema["additionalProperties"], Level::Field, &at, errors);
    }
    let untyped_allowed = flag(schema, "x-kubernetes-int-or-string")
        || flag(schema, "x-kubernetes-preserve-unknown-fields");
    if kind.is_empty() && !untyped_allowed {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(&child(path, "type"), detail));
    }
    if level == Level::Root && !kind.is_empty() && kind != "object" {
        errors.push(FieldError::invalid(
            &child(path, "type"),
            kind,
            "must be object at the root",
        ));
    }
}

/// The `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` rules, through the tree.
fn list_types(schema: &Value, path: &str, errors: &mut ErrorList) {
    let list_type = schema["x-kubernetes-list-type"].as_str();
    let keys: Vec<&str> = schema["x-kubernetes-list-map-keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let keys_path = child(path, "x-kubernetes-list-map-keys");
    if list_type.is_some_and(|t| t != "map") && !keys.is_empty() {
        errors.push(FieldError::forbidden(
            &keys_path,
            "must not be set if x-kubernetes-list-type is not map",
        ));
    }
    if list_type == Some("map") {
        let items = &schema["items"];
        let items_path = child(path, "items");
        if keys.is_empty() {
            errors.push(FieldError::required(
                &keys_path,
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        if !items.is_object() {
            errors.push(FieldError::required(
                &items_path,
                "must have a schema if x-kubernetes-list-type is map",
            ));
        } else if text(items, "type") != "object" {
            errors.push(FieldError::invalid(
                &child(&items_path, "type"),
                text(items, "type"),
                "must be object if parent array's x-kubernetes-list-type is map",
            ));
        } else {
            let mut seen = BTreeSet::new();
            for key in &keys {
                let property_path = format!("{}[{key}]", child(&items_path, "properties"));
                match items["properties"].get(*key) {
                    Some(property) => {
                        let kind = text(property, "type");
                        if kind == "array" || kind == "object" {
                            errors.push(FieldError::invalid(
                                &child(&property_path, "type"),
                                kind,
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            ));
                        }
                        let required = items["required"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|r| r == key);
                        if property["default"].is_null() && !required {
                            errors.push(FieldError::required(
                                &child(&property_path, "default"),
                                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                            ));
                        }
                    }
                    None => errors.push(FieldError::invalid(
                        &keys_path,
                        schema["x-kubernetes-list-map-keys"].clone(),
                        "entries must all be names of item properties",
                    )),
                }
                if !seen.insert(*key) {
                    errors.push(FieldError::invalid(
                        &keys_path,
                        schema["x-kubernetes-list-map-keys"].clone(),
                        "must not contain duplicate entries",
                    ));
                }
            }
        }
    }
    if schema["items"].is_object() {
        list_types(&schema["items"], &child(path, "items"), errors);
    }
    for (name, property) in properties(schema) {
        list_types(
            property,
            &format!("{}[{name}]", child(path, "properties")),
            errors,
        );
    }
    if schema["additionalProperties"].is_object() {
        list_types(
            &schema["additionalProperties"],
            &child(path, "additionalProperties"),
            errors,
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(schema: Value) -> Vec<String> {
        errors(&schema, "spec.versions[0].schema.openAPIV3Schema")
            .iter()
            .map(FieldError::message)
            .collect()
    }

    #[test]
    fn a_structural_schema_has_no_errors() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "ports": {"type": "array", "x-kubernetes-list-type": "atomic",
                    "items": {"type": "object", "required": ["port"],
                        "properties": {"port": {"type": "integer"}}}},
                "anything": {"x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "required": ["type"],
                        "properties": {"type": {"type": "string"}}}},
            }},
        }});
        assert_eq!(messages(schema), Vec::<String>::new());
    }

    #[test]
    fn types_and_items_are_required_where_the_apiserver_requires_them() {
        let schema = json!({"properties": {
            "spec": {"properties": {
                "list": {"type": "array"},
                "items": {"type": "array", "items": {}},
                "labels": {"type": "object", "additionalProperties": {}},
            }},
        }});
        let p = "spec.versions[0].schema.openAPIV3Schema";
        assert_eq!(
            messages(schema),
            [
                format!(
                    "{p}.properties[spec].properties[items].items.type: Required value: must not be empty for specified array items"
                ),
                format!(
                    "{p}.properties[spec].properties[labels].additionalProperties.type: Required value: must not be empty for specified object fields"
                ),
                format!(
                    "{p}.properties[spec].properties[list].items: Required value: must be specified"
                ),
                format!(
                    "{p}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
                format!("{p}.type: Required value: must not be empty at the root"),
            ]
        );
        assert_eq!(
            messages(json!({"type": "string"})),
            [format!(
                "{p}.type: Invalid value: \"string\": must be object at the root"
            )]
        );
    }

    #[test]
    fn map_lists_need_keys_that_are_required_or_defaulted_scalar_properties() {
        let list = |extra: Value| {
            let mut conditions = json!({"type": "array", "items": {"type": "object",
                "required": ["type"], "properties": {
                    "type": {"type": "string"}, "reason": {"type": "string"},
                    "nested": {"type": "object"}, "zone": {"type": "string", "default": "a"}}}});
            for (key, value) in extra.as_object().unwrap() {
                conditions[key] = value.clone();
            }
            json!({"type": "object", "properties": {"conditions": conditions}})
        };
        let p = "spec.versions[0].schema.openAPIV3Schema.properties[conditions]";
        assert_eq!(
            messages(list(json!({"x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type", "zone"]}))),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(list(json!({"x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["reason"]}))),
            [format!(
                "{p}.items.properties[reason].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            )]
        );
        assert_eq!(
            messages(list(json!({"x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["nested", "missing", "type", "type"]}))),
            [
                format!(
                    "{p}.items.properties[nested].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"
                ),
                format!(
                    "{p}.items.properties[nested].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    "{p}.x-kubernetes-list-map-keys: Invalid value: [\"nested\",\"missing\",\"type\",\"type\"]: entries must all be names of item properties"
                ),
                format!(
                    "{p}.x-kubernetes-list-map-keys: Invalid value: [\"nested\",\"missing\",\"type\",\"type\"]: must not contain duplicate entries"
                ),
            ]
        );
        assert_eq!(
            messages(list(json!({"x-kubernetes-list-type": "map"}))),
            [format!(
                "{p}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
            )]
        );
        assert_eq!(
            messages(list(json!({"x-kubernetes-list-type": "atomic",
                "x-kubernetes-list-map-keys": ["type"]}))),
            [format!(
                "{p}.x-kubernetes-list-map-keys: Forbidden: must not be set if x-kubernetes-list-type is not map"
            )]
        );
    }
}
