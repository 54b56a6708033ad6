//! Objects as the fieldmanager sees them, and the two walks field tracking is made of
//! (structured-merge-diff's `typed` package):
//!
//! - [`normalize`]: the typed view of an object. A built-in object is a Go struct there: an
//!   `omitempty` field holding "", 0, false, [] or {} is no field at all, a non-pointer struct
//!   field always exists (possibly `{}`), a non-`omitempty` list is `null` when unset, and
//!   fields the type does not declare are gone. A custom resource keeps its JSON (nulls aside).
//! - [`to_field_set`] (`TypedValue.ToFieldSet`): every field an applied configuration sets.
//! - [`compare`] (`TypedValue.Compare`): the fields added, modified and removed between two
//!   versions of an object, containers included (`.` entries) when they appear or disappear.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::path;
use super::set::{Element, FieldSet};
use super::shape::{ListKind, Presence, Shape, Zero};

/// The fields one version of an object adds, modifies and removes relative to another.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Leaves out `ignored` fields and everything below them (`Comparison.ExcludeFields`).
    pub fn excluding(self, ignored: &FieldSet) -> Self {
        Self {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }

    /// The fields the newer version sets: added or modified.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }
}

/// The typed view of `value` (see the module doc).
pub fn normalize(value: &Value, shape: &Shape) -> Value {
    match (shape, value) {
        (Shape::Struct(s), Value::Object(map)) => {
            let mut out = Map::new();
            for field in &s.fields {
                if let Some(v) = present(map.get(&field.name), field.presence) {
                    out.insert(field.name.clone(), normalize(&v, &field.shape));
                }
            }
            if let Some(others) = &s.others {
                for (k, v) in map {
                    if s.field(k).is_none() && !v.is_null() {
                        out.insert(k.clone(), normalize(v, others));
                    }
                }
            }
            Value::Object(out)
        }
        (Shape::Map(item), Value::Object(map)) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalize(v, item)))
                .collect(),
        ),
        (Shape::List(item, _), Value::Array(items)) => {
            Value::Array(items.iter().map(|v| normalize(v, item)).collect())
        }
        _ => value.clone(),
    }
}

/// An applied configuration as the fieldmanager reads it: JSON as sent, without the fields
/// the type does not declare.
pub fn declared(value: &Value, shape: &Shape) -> Value {
    match (shape, value) {
        (Shape::Struct(s), Value::Object(map)) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| {
                    let child = s.field(k).map(|f| &f.shape).or(s.others.as_deref())?;
                    Some((k.clone(), declared(v, child)))
                })
                .collect(),
        ),
        (Shape::Map(item), Value::Object(map)) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), declared(v, item)))
                .collect(),
        ),
        (Shape::List(item, _), Value::Array(items)) => {
            Value::Array(items.iter().map(|v| declared(v, item)).collect())
        }
        _ => value.clone(),
    }
}

/// The value a field of this presence has in the typed object, if it is there at all.
fn present(given: Option<&Value>, presence: Presence) -> Option<Value> {
    let given = given.filter(|v| !v.is_null());
    match presence {
        Presence::Pointer => given.cloned(),
        Presence::OmitEmpty => given.filter(|v| !is_empty(v)).cloned(),
        Presence::Always(zero) => Some(given.cloned().unwrap_or(match zero {
            Zero::Null => Value::Null,
            Zero::Str => Value::from(""),
            Zero::Int => Value::from(0),
            Zero::Object => Value::Object(Map::new()),
        })),
    }
}

/// Go's `omitempty` emptiness.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// The path element of an item of an associative list.
pub fn item_element(item: &Value, kind: &ListKind) -> Result<Element, String> {
    match kind {
        ListKind::Set => match item {
            Value::Object(_) | Value::Array(_) | Value::Null => {
                Err("associative list without keys has an element that is not a scalar".into())
            }
            scalar => Ok(path::value(scalar)),
        },
        ListKind::Map { keys, defaults } => {
            let Value::Object(map) = item else {
                return Err("associative list with keys has an element that is not a map".into());
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                let value = map.get(key).or_else(|| defaults.get(key)).ok_or_else(|| {
                    format!(
                        "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                    )
                })?;
                fields.push((key.as_str(), value));
            }
            Ok(path::key(fields))
        }
    }
}

/// Whether a value of this shape is walked into (rather than being a leaf).
fn is_granular(shape: &Shape, value: &Value) -> bool {
    match shape {
        Shape::Struct(_) | Shape::Map(_) => value.is_object() || value.is_null(),
        Shape::Untyped => value.is_object(),
        Shape::List(..) => value.is_array() || value.is_null(),
        Shape::Leaf => false,
    }
}

fn empty_or_null(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// Every field `value` sets (its leaves, the items of its associative lists, the keys of its
/// granular maps, and empty or null values).
pub fn to_field_set(value: &Value, shape: &Shape) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    fields_of(value, shape, &mut Vec::new(), &mut set)?;
    Ok(set)
}

fn fields_of(
    value: &Value,
    shape: &Shape,
    at: &mut Vec<Element>,
    set: &mut FieldSet,
) -> Result<(), String> {
    if !is_granular(shape, value) {
        set.insert(at);
        return Ok(());
    }
    match (shape, value) {
        (Shape::List(item, kind), Value::Array(items)) => {
            let elements = items
                .iter()
                .map(|i| item_element(i, kind))
                .collect::<Result<Vec<_>, _>>()?;
            let mut counts: HashMap<&Element, usize> = HashMap::new();
            for element in &elements {
                *counts.entry(element).or_default() += 1;
            }
            for (element, child) in elements.iter().zip(items) {
                at.push(element.clone());
                // A duplicated item is owned as a whole, once (`visitListItems`).
                if counts[element] == 1 {
                    fields_of(child, item, at, set)?;
                }
                set.insert(at);
                at.pop();
            }
        }
        (_, Value::Object(map)) => {
            for (key, child) in map {
                let Some(child_shape) = shape.child(&path::field(key)) else {
                    continue;
                };
                at.push(path::field(key));
                fields_of(child, child_shape, at, set)?;
                if empty_or_null(Some(child)) || !shape.declares(key) {
                    set.insert(at);
                }
                at.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// What changed from `old` to `new`.
pub fn compare(old: &Value, new: &Value, shape: &Shape) -> Result<Comparison, String> {
    let mut comparison = Comparison::default();
    diff(
        Some(old),
        Some(new),
        shape,
        &mut Vec::new(),
        &mut comparison,
    )?;
    Ok(comparison)
}

fn diff(
    old: Option<&Value>,
    new: Option<&Value>,
    shape: &Shape,
    at: &mut Vec<Element>,
    out: &mut Comparison,
) -> Result<(), String> {
    let granular = [old, new]
        .into_iter()
        .flatten()
        .all(|v| is_granular(shape, v));
    if !granular || (empty_or_null(old) && empty_or_null(new)) {
        match (old, new) {
            (None, Some(_)) => out.added.insert(at),
            (Some(_), None) => out.removed.insert(at),
            (Some(a), Some(b)) if a != b => out.modified.insert(at),
            _ => {}
        }
        return Ok(());
    }
    match shape {
        Shape::List(item, kind) => diff_items(old, new, item, kind, at, out)?,
        _ => diff_fields(old, new, shape, at, out)?,
    }
    match (old, new) {
        (None, Some(_)) => out.added.insert(at),
        (Some(_), None) => out.removed.insert(at),
        _ => {}
    }
    Ok(())
}

fn diff_fields(
    old: Option<&Value>,
    new: Option<&Value>,
    shape: &Shape,
    at: &mut Vec<Element>,
    out: &mut Comparison,
) -> Result<(), String> {
    let empty = Map::new();
    let old_map = old.and_then(Value::as_object).unwrap_or(&empty);
    let new_map = new.and_then(Value::as_object).unwrap_or(&empty);
    let added_keys = new_map.keys().filter(|k| !old_map.contains_key(*k));
    for key in old_map.keys().chain(added_keys) {
        let Some(child_shape) = shape.child(&path::field(key)) else {
            continue;
        };
        at.push(path::field(key));
        diff(old_map.get(key), new_map.get(key), child_shape, at, out)?;
        at.pop();
    }
    Ok(())
}

/// The items of a list by path element, in first-seen order, duplicates together.
fn items_by_element<'v>(
    list: Option<&'v Value>,
    kind: &ListKind,
) -> Result<Vec<(Element, Vec<&'v Value>)>, String> {
    let mut out: Vec<(Element, Vec<&Value>)> = Vec::new();
    let mut index: HashMap<Element, usize> = HashMap::new();
    for item in list.and_then(Value::as_array).into_iter().flatten() {
        let element = item_element(item, kind)?;
        match index.get(&element) {
            Some(&i) => out[i].1.push(item),
            None => {
                index.insert(element.clone(), out.len());
                out.push((element, vec![item]));
            }
        }
    }
    Ok(out)
}

fn diff_items(
    old: Option<&Value>,
    new: Option<&Value>,
    item: &Shape,
    kind: &ListKind,
    at: &mut Vec<Element>,
    out: &mut Comparison,
) -> Result<(), String> {
    let old_items = items_by_element(old, kind)?;
    let new_items = items_by_element(new, kind)?;
    let old_index: HashMap<&Element, &Vec<&Value>> =
        old_items.iter().map(|(e, v)| (e, v)).collect();
    let new_index: HashMap<&Element, &Vec<&Value>> =
        new_items.iter().map(|(e, v)| (e, v)).collect();
    let none = Vec::new();
    let mut elements: Vec<&Element> = old_items.iter().map(|(e, _)| e).collect();
    elements.extend(
        new_items
            .iter()
            .map(|(e, _)| e)
            .filter(|e| !old_index.contains_key(e)),
    );
    for element in elements {
        let l = old_index.get(element).copied().unwrap_or(&none);
        let r = new_index.get(element).copied().unwrap_or(&none);
        at.push(element.clone());
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => diff(l.first().copied(), r.first().copied(), item, at, out)?,
            (2.., 2..) if l != r => out.modified.insert(at),
            (2.., 2..) => {}
            (2.., _) => {
                if let Some(first) = r.first() {
                    diff(None, Some(first), item, at, out)?;
                }
                out.removed.insert(at);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    diff(Some(first), None, item, at, out)?;
                }
                out.added.insert(at);
            }
        }
        at.pop();
    }
    Ok(())
}

#[cfg(test)]
#[path = "typed_tests.rs"]
mod tests;
