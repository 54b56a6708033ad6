//! Validation of a custom resource against its structural schema, as kube-openapi's
//! `validate.SchemaValidator` does it and apiextensions' `kubeOpenAPIResultToFieldErrors`
//! turns the result into field errors: per node the type, string (first failing of
//! maxLength, minLength, pattern), format, number, list, enum and object validators, in that
//! order; an object's properties before its `required` fields.
//!
//! Messages name the node by its path from where validation started (the whole object, or
//! `status` for the status subresource), as kube-openapi does: `spec.types in body must be of
//! type array: "string"`; field paths are prefixed with the starting point.
//!
//! Updates ratchet (`CRDValidationRatcheting`, on by default): the errors of a node whose
//! value equals the old value it correlates with (same field; same index, or same key in a
//! `map` list) are dropped.

use serde_json::Value;

use super::formats;
use super::schema::Schema;
use crate::types::field::{self, ErrorType, FieldError};

/// The errors of `value` against `schema`; `root` prefixes field paths (`""` or `"status"`);
/// `old` is the previous value on updates (for ratcheting).
pub fn validate(
    value: &Value,
    schema: &Schema,
    root: &str,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let mut node = Node {
        root,
        errors: Vec::new(),
    };
    node.value(value, schema, "", old);
    node.errors
}

struct Node<'a> {
    root: &'a str,
    errors: Vec<FieldError>,
}

impl Node<'_> {
    /// Validates one node (`path` from where validation started), ratcheting against `old`.
    fn value(&mut self, value: &Value, schema: &Schema, path: &str, old: Option<&Value>) {
        let before = self.errors.len();
        self.type_check(value, schema, path);
        if !value.is_null() {
            self.combinators(value, schema, path);
            if let Value::String(s) = value {
                self.string(s, schema, path);
            }
            self.number(value, schema, path);
            if let Value::Array(items) = value {
                self.list(items, schema, path, old);
            }
        }
        self.enumeration(value, schema, path);
        if let Value::Object(map) = value {
            self.object(map, schema, path, old);
        }
        if old == Some(value) {
            self.errors.truncate(before);
        }
    }

    /// Adds the field error kube-openapi's error at `path` becomes.
    fn push(&mut self, kind: ErrorType, path: &str, value: Value, detail: String) {
        let field_path = match (self.root, path) {
            (root, "") => root.to_owned(),
            (root, path) => field::child(root, path),
        };
        self.errors
            .push(FieldError::new(kind, &field_path, value, detail));
    }

    fn type_check(&mut self, value: &Value, schema: &Schema, path: &str) {
        let allowed = allowed_types(schema);
        if allowed.is_empty() {
            return;
        }
        let actual = json_type(value);
        let fits = match actual {
            "null" => schema.nullable,
            "number" => {
                allowed.contains(&"number")
                    || (allowed.contains(&"integer")
                        && value.as_f64().is_some_and(|f| f.fract() == 0.0))
            }
            "integer" => allowed.contains(&"integer") || allowed.contains(&"number"),
            other => allowed.contains(&other),
        };
        if !fits {
            let message = format!(
                "{} in body must be of type {}: {actual:?}",
                path,
                allowed.join(",")
            );
            self.push(ErrorType::TypeInvalid, path, Value::from(actual), message);
        }
    }

    fn combinators(&mut self, value: &Value, schema: &Schema, path: &str) {
        for sub in &schema.all_of {
            self.value(value, sub, path, None);
        }
        let passes = |s: &Schema| validate(value, s, "", None).is_empty();
        let checks = [
            (
                !schema.any_of.is_empty() && !schema.any_of.iter().any(passes),
                "must validate at least one schema (anyOf)",
            ),
            (
                !schema.one_of.is_empty()
                    && schema.one_of.iter().filter(|s| passes(s)).count() != 1,
                "must validate one and only one schema (oneOf)",
            ),
            (
                schema.not.as_deref().is_some_and(passes),
                "must not validate the schema (not)",
            ),
        ];
        for (failed, what) in checks {
            if failed {
                let message = format!("{} {what}", path);
                self.push(ErrorType::Invalid, path, Value::from(""), message);
            }
        }
    }

    fn string(&mut self, s: &str, schema: &Schema, path: &str) {
        let length = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
        let value = Value::from(s);
        if let Some(max) = schema.max_length.filter(|max| length > *max) {
            self.push(
                ErrorType::TooLong,
                path,
                value,
                format!("may not be more than {max} bytes"),
            );
        } else if let Some(min) = schema.min_length.filter(|min| length < *min) {
            let message = format!("{} in body should be at least {min} chars long", path);
            self.push(ErrorType::Invalid, path, value, message);
        } else if let Some(pattern) = schema
            .pattern
            .as_deref()
            .filter(|p| !formats::matches(p, s))
        {
            let message = format!("{} in body should match '{pattern}'", path);
            self.push(ErrorType::Invalid, path, value, message);
        } else if !formats::valid(&schema.format, s) {
            let message = format!("{} in body must be of type {}: {s:?}", path, schema.format);
            self.push(ErrorType::TypeInvalid, path, value, message);
        }
    }

    fn number(&mut self, value: &Value, schema: &Schema, path: &str) {
        let Some(n) = value.as_f64() else {
            return;
        };
        if let Some(factor) = schema
            .multiple_of
            .filter(|f| *f > 0.0 && (n / f).fract() != 0.0)
        {
            let message = format!(
                "{} in body should be a multiple of {}",
                path,
                number(factor)
            );
            self.push(ErrorType::Invalid, path, value.clone(), message);
        }
        if let Some(min) = schema.minimum {
            let (fails, words) = if schema.exclusive_minimum {
                (n <= min, "greater than")
            } else {
                (n < min, "greater than or equal to")
            };
            if fails {
                let message = format!("{} in body should be {words} {}", path, number(min));
                self.push(ErrorType::Invalid, path, value.clone(), message);
            }
        }
        if let Some(max) = schema.maximum {
            let (fails, words) = if schema.exclusive_maximum {
                (n >= max, "less than")
            } else {
                (n > max, "less than or equal to")
            };
            if fails {
                let message = format!("{} in body should be {words} {}", path, number(max));
                self.push(ErrorType::Invalid, path, value.clone(), message);
            }
        }
    }

    fn list(&mut self, items: &[Value], schema: &Schema, path: &str, old: Option<&Value>) {
        if let Some(item_schema) = schema.items.as_deref() {
            for (i, item) in items.iter().enumerate() {
                let old_item = correlate(schema, old, items, i);
                self.value(item, item_schema, &field::index(path, i), old_item);
            }
        }
        let size = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(min) = schema.min_items.filter(|min| size < *min) {
            let message = format!("{} in body should have at least {min} items", path);
            self.push(ErrorType::Invalid, path, Value::from(size), message);
        }
        if let Some(max) = schema.max_items.filter(|max| size > *max) {
            self.push(
                ErrorType::TooMany,
                path,
                Value::from(size),
                format!("must have at most {max} items"),
            );
        }
        if schema.unique_items && has_duplicates(items) {
            let message = format!("{} in body shouldn't contain duplicates", path);
            self.push(ErrorType::Invalid, path, Value::from(""), message);
        }
    }

    fn enumeration(&mut self, value: &Value, schema: &Schema, path: &str) {
        let Some(allowed) = &schema.enumeration else {
            return;
        };
        if allowed.is_empty() || allowed.iter().any(|a| same_value(a, value)) {
            return;
        }
        let supported: Vec<String> = allowed
            .iter()
            .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
            .collect();
        let error = FieldError::not_supported("", value.clone(), &supported);
        self.push(ErrorType::NotSupported, path, value.clone(), error.detail);
    }

    fn object(
        &mut self,
        map: &serde_json::Map<String, Value>,
        schema: &Schema,
        path: &str,
        old: Option<&Value>,
    ) {
        let count = i64::try_from(map.len()).unwrap_or(i64::MAX);
        if let Some(min) = schema.min_properties.filter(|min| count < *min) {
            let message = format!("{} in body should have at least {min} properties", path);
            self.push(ErrorType::Invalid, path, Value::from(min), message);
            return;
        }
        if let Some(max) = schema.max_properties.filter(|max| count > *max) {
            self.push(
                ErrorType::TooMany,
                path,
                Value::from(count),
                format!("must have at most {max} items"),
            );
            return;
        }
        for (key, child) in map {
            let Some(child_schema) = schema.field(key) else {
                continue;
            };
            let old_child = old.and_then(|o| o.get(key));
            self.value(child, child_schema, &field::child(path, key), old_child);
        }
        for key in schema.required.iter().filter(|k| !map.contains_key(*k)) {
            self.push(
                ErrorType::Required,
                &field::child(path, key),
                Value::Null,
                String::new(),
            );
        }
    }
}

/// The old item an item of a list correlates with: by key in a `map` list, by index in a list
/// without a list type, none in `set` and `atomic` lists.
fn correlate<'a>(
    schema: &Schema,
    old: Option<&'a Value>,
    items: &[Value],
    i: usize,
) -> Option<&'a Value> {
    let old_items = old?.as_array()?;
    match schema.list_type.as_deref() {
        Some("map") => {
            let key = |item: &Value| -> Vec<Value> {
                schema
                    .list_map_keys
                    .iter()
                    .map(|k| item[k.as_str()].clone())
                    .collect()
            };
            let wanted = key(&items[i]);
            old_items.iter().find(|o| key(o) == wanted)
        }
        Some(_) => None,
        None => old_items.get(i),
    }
}

/// The types a node accepts (`x-kubernetes-int-or-string`: integer or string).
fn allowed_types(schema: &Schema) -> Vec<&str> {
    if schema.int_or_string {
        vec!["integer", "string"]
    } else if schema.kind.is_empty() {
        Vec::new()
    } else {
        vec![schema.kind.as_str()]
    }
}

/// The JSON schema type of a decoded value (integral numbers are `integer`).
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Enum membership: equal JSON values, numbers compared by value.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].iter().any(|b| same_value(a, b)))
}

/// A bound as Go's `%v` prints a float64: integral values without a fraction.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{n:.0}")
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests;
