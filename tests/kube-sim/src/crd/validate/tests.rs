use serde_json::{Value, json};

use super::*;

fn mcs_schema() -> Schema {
    Schema::parse(&json!({
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": {"type": "object", "required": ["types"], "properties": {
                "types": {"type": "array", "items": {"type": "string"}},
                "ports": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {
                    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                }}},
            }},
            "status": {"type": "object", "properties": {"conditions": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "required": ["lastTransitionTime", "message", "reason", "status", "type"], "properties": {
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                    "message": {"type": "string", "maxLength": 32768},
                    "reason": {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
                    "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                    "type": {"type": "string"},
                }},
            }}},
        },
    }))
}

fn messages(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(FieldError::message).collect()
}

fn condition(extra: Value) -> Value {
    let mut c = json!({"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

#[test]
fn required_fields_and_wrong_types() {
    let schema = mcs_schema();
    let errors = validate(&json!({"spec": {}}), &schema, "", None);
    assert_eq!(messages(&errors), vec!["spec.types: Required value"]);
    let errors = validate(
        &json!({"spec": {"types": "CrossCluster"}}),
        &schema,
        "",
        None,
    );
    assert_eq!(
        messages(&errors),
        vec![
            "spec.types: Invalid value: \"string\": spec.types in body must be of type array: \"string\""
        ]
    );
    assert_eq!(errors[0].kind, ErrorType::TypeInvalid);
}

#[test]
fn status_values_are_named_from_the_status() {
    let schema = mcs_schema();
    let status_schema = schema.status().unwrap();
    let status = json!({"conditions": [condition(json!({"reason": "bad reason!"}))]});
    let errors = validate(&status, status_schema, "status", None);
    assert_eq!(
        messages(&errors),
        vec![
            "status.conditions[0].reason: Invalid value: \"bad reason!\": conditions[0].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"
        ]
    );
    let long = "x".repeat(40_000);
    let status = json!({"conditions": [condition(json!({"message": long}))]});
    let errors = validate(&status, status_schema, "status", None);
    assert_eq!(
        messages(&errors),
        vec!["status.conditions[0].message: Too long: may not be more than 32768 bytes"]
    );
    let exact = "x".repeat(32_768);
    let status = json!({"conditions": [condition(json!({"message": exact}))]});
    assert!(validate(&status, status_schema, "status", None).is_empty());
}

#[test]
fn enum_errors_come_before_missing_required_fields() {
    let schema = mcs_schema();
    let status = json!({"conditions": [{"type": "Valid", "status": "Maybe", "reason": "R", "message": "m"}]});
    let errors = validate(&status, schema.status().unwrap(), "status", None);
    assert_eq!(
        messages(&errors),
        vec![
            "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\"",
            "status.conditions[0].lastTransitionTime: Required value",
        ]
    );
}

#[test]
fn numbers_and_list_sizes() {
    let schema = mcs_schema();
    let obj = json!({"spec": {"types": [], "ports": [{"port": 0}, {"port": 70000}, {"port": 1}]}});
    let errors = validate(&obj, &schema, "", None);
    assert_eq!(
        messages(&errors),
        vec![
            "spec.ports[0].port: Invalid value: 0: spec.ports[0].port in body should be greater than or equal to 1",
            "spec.ports[1].port: Invalid value: 70000: spec.ports[1].port in body should be less than or equal to 65535",
            "spec.ports: Too many: 3: must have at most 2 items",
        ]
    );
}

#[test]
fn unchanged_invalid_values_ratchet_on_update() {
    let schema = mcs_schema();
    let old = json!({"spec": {"types": [], "ports": [{"port": 0}]}});
    assert!(validate(&old, &schema, "", Some(&old)).is_empty());
    let new = json!({"spec": {"types": ["A"], "ports": [{"port": 0}]}});
    assert!(validate(&new, &schema, "", Some(&old)).is_empty());
    let worse = json!({"spec": {"types": ["A"], "ports": [{"port": -1}]}});
    assert_eq!(validate(&worse, &schema, "", Some(&old)).len(), 1);
}
