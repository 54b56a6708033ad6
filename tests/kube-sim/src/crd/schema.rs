//! A CustomResourceDefinition version's `openAPIV3Schema`, read into the structural schema the
//! apiextensions-apiserver validates, prunes and defaults with (`schema.Structural` of
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema`): one node per object, list or value,
//! with the value validations (`ValueValidation`) and the `x-kubernetes-*` extensions.
//! `allOf`/`anyOf`/`oneOf`/`not` carry only value validations in a structural schema; they
//! are checked as such (see `validate`).

use std::collections::BTreeMap;

use serde_json::Value;

/// One node of a structural schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// `type`: object, array, string, integer, number, boolean (empty: any).
    pub kind: String,
    pub format: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties` with a schema (a map).
    pub additional_properties: Option<Box<Schema>>,
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<String>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    /// `allOf`, `anyOf`, `oneOf` and `not`: value validations only.
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`: atomic, set or map.
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
}

impl Schema {
    /// Reads a JSON schema object (anything else reads as the empty schema).
    pub fn parse(value: &Value) -> Self {
        let int = |key: &str| value[key].as_i64();
        let float = |key: &str| value[key].as_f64();
        let flag = |key: &str| value[key].as_bool().unwrap_or(false);
        let string = |key: &str| value[key].as_str().unwrap_or_default().to_owned();
        let many = |key: &str| -> Vec<Schema> {
            value[key]
                .as_array()
                .map(|a| a.iter().map(Schema::parse).collect())
                .unwrap_or_default()
        };
        Self {
            kind: string("type"),
            format: string("format"),
            nullable: flag("nullable"),
            default: value.get("default").cloned(),
            properties: value["properties"]
                .as_object()
                .map(|p| {
                    p.iter()
                        .map(|(k, v)| (k.clone(), Schema::parse(v)))
                        .collect()
                })
                .unwrap_or_default(),
            additional_properties: value["additionalProperties"]
                .is_object()
                .then(|| Box::new(Schema::parse(&value["additionalProperties"]))),
            items: value["items"]
                .is_object()
                .then(|| Box::new(Schema::parse(&value["items"]))),
            required: strings(&value["required"]),
            enumeration: value["enum"].as_array().cloned(),
            max_length: int("maxLength"),
            min_length: int("minLength"),
            pattern: value["pattern"].as_str().map(str::to_owned),
            max_items: int("maxItems"),
            min_items: int("minItems"),
            unique_items: flag("uniqueItems"),
            max_properties: int("maxProperties"),
            min_properties: int("minProperties"),
            maximum: float("maximum"),
            exclusive_maximum: flag("exclusiveMaximum"),
            minimum: float("minimum"),
            exclusive_minimum: flag("exclusiveMinimum"),
            multiple_of: float("multipleOf"),
            all_of: many("allOf"),
            any_of: many("anyOf"),
            one_of: many("oneOf"),
            not: value["not"]
                .is_object()
                .then(|| Box::new(Schema::parse(&value["not"]))),
            preserve_unknown_fields: flag("x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag("x-kubernetes-embedded-resource"),
            int_or_string: flag("x-kubernetes-int-or-string"),
            list_type: value["x-kubernetes-list-type"].as_str().map(str::to_owned),
            list_map_keys: strings(&value["x-kubernetes-list-map-keys"]),
        }
    }

    /// The schema of the object field `name`: a declared property, else `additionalProperties`.
    pub fn field(&self, name: &str) -> Option<&Schema> {
        self.properties
            .get(name)
            .or(self.additional_properties.as_deref())
    }

    /// The schema of the `status` property, where the status subresource validates against.
    pub fn status(&self) -> Option<&Schema> {
        self.properties.get("status")
    }
}

/// The schema of the served `version` of the CustomResourceDefinition `crd`, if it has one.
pub fn of_version(crd: &Value, version: &str) -> Option<Schema> {
    let versions = crd["spec"]["versions"].as_array()?;
    let found = versions.iter().find(|v| v["name"] == version)?;
    let schema = &found["schema"]["openAPIV3Schema"];
    schema.is_object().then(|| Schema::parse(schema))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_nested_properties_validations_and_extensions() {
        let schema = Schema::parse(&json!({
            "type": "object",
            "required": ["spec"],
            "properties": {"status": {"type": "object", "properties": {"conditions": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "properties": {"message": {"type": "string", "maxLength": 32768}}},
            }}}},
        }));
        assert_eq!(schema.required, vec!["spec"]);
        let conditions = &schema.status().unwrap().properties["conditions"];
        assert_eq!(conditions.list_type.as_deref(), Some("map"));
        assert_eq!(conditions.list_map_keys, vec!["type"]);
        let message = &conditions.items.as_ref().unwrap().properties["message"];
        assert_eq!(message.max_length, Some(32768));
    }

    #[test]
    fn fields_fall_back_to_additional_properties() {
        let schema =
            Schema::parse(&json!({"type": "object", "additionalProperties": {"type": "string"}}));
        assert_eq!(schema.field("anything").unwrap().kind, "string");
        assert!(
            Schema::parse(&json!({"type": "object"}))
                .field("x")
                .is_none()
        );
    }
}
