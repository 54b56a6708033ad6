//! The shape of a type as structured-merge-diff's `schema.Schema` sees it: which maps are
//! structs with named fields, which are granular maps, which lists are associative (sets, or
//! maps keyed by some fields) and which values are atomic leaves. For built-in types the shapes
//! are in [`super::builtin`]; for custom resources they come from the CRD's openAPIV3Schema
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`,
//! `x-kubernetes-preserve-unknown-fields`), as kube-openapi's `schemaconv` builds them.
//!
//! Struct fields of built-in types also carry their Go encoding (`omitempty`, pointer, or
//! always present), which decides whether an empty value is a field at all: see
//! [`super::typed`].

use serde_json::{Map, Value};

use super::builtin;

/// The shape of a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A scalar, or an atomic list, map or struct: owned and compared as a whole.
    Leaf,
    /// A struct: named fields, and what other keys are (`None`: not part of the type).
    Struct(Struct),
    /// A granular map: every key is its own field.
    Map(Box<Shape>),
    /// An associative list: a set of scalars, or a list of maps keyed by some of their fields.
    List(Box<Shape>, ListKind),
    /// A value without a schema (`x-kubernetes-preserve-unknown-fields`): maps are granular,
    /// lists atomic.
    Untyped,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    pub fields: Vec<Field>,
    pub others: Option<Box<Shape>>,
}

/// A named field of a struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub shape: Shape,
    pub presence: Presence,
}

/// How a field of a Go struct is encoded, hence when it exists in the typed object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Presence {
    /// `omitempty` on a value type: absent when null, "", 0, false, [] or {}.
    OmitEmpty,
    /// A pointer (or a custom-resource field): absent only when null.
    Pointer,
    /// Always encoded; this is its value when the object has none.
    Always(Zero),
}

/// The zero value of an always-present field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Zero {
    Null,
    Str,
    Int,
    Object,
}

/// The kind of an associative list.
#[derive(Debug, Clone, PartialEq)]
pub enum ListKind {
    Set,
    /// Keyed by these fields; the defaults stand for key fields an item omits.
    Map {
        keys: Vec<String>,
        defaults: Map<String, Value>,
    },
}

impl Shape {
    /// The shape of the value at `element` below a value of this shape.
    pub fn child(&self, element: &str) -> Option<&Shape> {
        match self {
            Shape::Struct(s) => {
                let name = element.strip_prefix("f:")?;
                s.field(name).map(|f| &f.shape).or(s.others.as_deref())
            }
            Shape::Map(item) => element.starts_with("f:").then_some(&**item),
            Shape::List(item, _) => (!element.starts_with("f:")).then_some(&**item),
            Shape::Untyped => Some(&Shape::Untyped),
            Shape::Leaf => None,
        }
    }

    /// Whether `name` is a declared field of this struct (`schema.Map.FindField`).
    pub fn declares(&self, name: &str) -> bool {
        matches!(self, Shape::Struct(s) if s.field(name).is_some())
    }
}

impl Struct {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A struct of fields (unknown keys are not part of it).
pub fn structure(fields: Vec<Field>) -> Shape {
    Shape::Struct(Struct {
        fields,
        others: None,
    })
}

/// A field, `omitempty` unless changed by [`Field::ptr`] or [`Field::always`].
pub fn field(name: &str, shape: Shape) -> Field {
    Field {
        name: name.to_owned(),
        shape,
        presence: Presence::OmitEmpty,
    }
}

impl Field {
    pub fn ptr(mut self) -> Self {
        self.presence = Presence::Pointer;
        self
    }

    pub fn always(mut self, zero: Zero) -> Self {
        self.presence = Presence::Always(zero);
        self
    }
}

/// A list keyed by `keys` (no defaults).
pub fn list_map(item: Shape, keys: &[&str]) -> Shape {
    let keys = keys.iter().map(|k| (*k).to_owned()).collect();
    Shape::List(
        Box::new(item),
        ListKind::Map {
            keys,
            defaults: Map::new(),
        },
    )
}

pub fn set() -> Shape {
    Shape::List(Box::new(Shape::Leaf), ListKind::Set)
}

pub fn map_of(item: Shape) -> Shape {
    Shape::Map(Box::new(item))
}

/// The shape of a custom resource whose version is described by `schema`
/// (its openAPIV3Schema): its properties, with `apiVersion`, `kind` and `metadata` as for every
/// object.
pub fn custom_resource(schema: &Value) -> Shape {
    let mut root = match from_openapi(schema) {
        Shape::Struct(s) => s,
        _ => Struct {
            fields: Vec::new(),
            others: Some(Box::new(Shape::Untyped)),
        },
    };
    root.fields
        .retain(|f| !matches!(f.name.as_str(), "apiVersion" | "kind" | "metadata"));
    root.fields.push(field("apiVersion", Shape::Leaf));
    root.fields.push(field("kind", Shape::Leaf));
    root.fields
        .push(field("metadata", builtin::object_meta()).always(Zero::Object));
    Shape::Struct(root)
}

/// The shape an OpenAPI v3 schema (structural, as CRDs have) describes.
pub fn from_openapi(schema: &Value) -> Shape {
    let extension = |name: &str| schema.get(name).and_then(Value::as_str);
    let preserves = schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
    match schema["type"].as_str() {
        Some("object") if extension("x-kubernetes-map-type") == Some("atomic") => Shape::Leaf,
        Some("object") => object_shape(schema, preserves),
        Some("array") => array_shape(schema),
        None if preserves => Shape::Untyped,
        _ => Shape::Leaf,
    }
}

fn object_shape(schema: &Value, preserves: bool) -> Shape {
    let fields: Vec<Field> = schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| field(name, from_openapi(prop)).ptr())
                .collect()
        })
        .unwrap_or_default();
    let others = match &schema["additionalProperties"] {
        Value::Object(items) => Some(Box::new(from_openapi(&Value::Object(items.clone())))),
        Value::Bool(true) => Some(Box::new(Shape::Untyped)),
        _ if preserves => Some(Box::new(Shape::Untyped)),
        _ => None,
    };
    match others {
        Some(item) if fields.is_empty() => Shape::Map(item),
        others => Shape::Struct(Struct { fields, others }),
    }
}

fn array_shape(schema: &Value) -> Shape {
    let items = &schema["items"];
    match schema["x-kubernetes-list-type"].as_str() {
        Some("set") => Shape::List(Box::new(from_openapi(items)), ListKind::Set),
        Some("map") => {
            let keys: Vec<String> = schema["x-kubernetes-list-map-keys"]
                .as_array()
                .map(|k| {
                    k.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let defaults = keys
                .iter()
                .filter_map(|k| Some((k.clone(), items["properties"][k].get("default")?.clone())))
                .collect();
            Shape::List(
                Box::new(from_openapi(items)),
                ListKind::Map { keys, defaults },
            )
        }
        _ => Shape::Leaf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openapi_list_and_map_types_become_shapes() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "types": {"type": "array", "items": {"type": "string"}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "sel": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }},
            "status": {"type": "object", "properties": {"conditions": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "properties": {"type": {"type": "string"}}}
            }}}
        }});
        let shape = custom_resource(&schema);
        let spec = shape.child("f:spec").unwrap();
        assert_eq!(
            spec.child("f:types"),
            Some(&Shape::Leaf),
            "lists are atomic by default"
        );
        assert_eq!(spec.child("f:sel"), Some(&Shape::Leaf));
        assert_eq!(spec.child("f:tags"), Some(&set()));
        assert_eq!(spec.child("f:labels"), Some(&map_of(Shape::Leaf)));
        assert_eq!(spec.child("f:free"), Some(&map_of(Shape::Untyped)));
        assert!(
            spec.child("f:unknown").is_none(),
            "pruned fields are not part of the type"
        );
        let conditions = shape
            .child("f:status")
            .unwrap()
            .child("f:conditions")
            .unwrap();
        assert!(
            matches!(conditions, Shape::List(_, ListKind::Map { keys, .. }) if keys == &["type"])
        );
        assert!(shape.declares("metadata") && shape.declares("apiVersion"));
    }
}
