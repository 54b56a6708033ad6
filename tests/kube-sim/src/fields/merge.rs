//! Merging an applied configuration into the live object, and removing the fields an applier
//! gave up (structured-merge-diff's `TypedValue.Merge`, `TypedValue.RemoveItems`,
//! `Set.EnsureNamedFieldsAreMembers` and `Updater.prune`).
//!
//! Merge rules follow the shape: scalars and atomic values are replaced, structs and granular
//! maps are merged key by key, associative lists item by item (matched by key or value), with
//! the applied order for the items both sides have and the live position for the others.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::path;
use super::set::{Element, FieldSet};
use super::shape::{ListKind, Shape};
use super::typed::{item_element, to_field_set};

/// `live` with `applied` merged in (either may be absent; not both).
pub fn merge(
    live: Option<&Value>,
    applied: Option<&Value>,
    shape: &Shape,
) -> Result<Option<Value>, String> {
    let present = [live, applied].into_iter().flatten();
    let granular = present.clone().all(|v| walks_into(shape, v));
    let all_empty = present.clone().all(is_empty_container);
    if !granular || all_empty {
        return Ok(applied.or(live).cloned());
    }
    match shape {
        Shape::List(item, kind) => merge_items(live, applied, item, kind),
        _ => merge_fields(live, applied, shape),
    }
}

fn walks_into(shape: &Shape, value: &Value) -> bool {
    match shape {
        Shape::Struct(_) | Shape::Map(_) => value.is_object() || value.is_null(),
        Shape::Untyped => value.is_object(),
        Shape::List(..) => value.is_array() || value.is_null(),
        Shape::Leaf => false,
    }
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn merge_fields(
    live: Option<&Value>,
    applied: Option<&Value>,
    shape: &Shape,
) -> Result<Option<Value>, String> {
    let empty = Map::new();
    let lhs = live.and_then(Value::as_object).unwrap_or(&empty);
    let rhs = applied.and_then(Value::as_object).unwrap_or(&empty);
    let mut out = Map::new();
    let new_keys = rhs.keys().filter(|k| !lhs.contains_key(*k));
    for key in lhs.keys().chain(new_keys) {
        let (l, r) = (lhs.get(key), rhs.get(key));
        let merged = match shape.child(&path::field(key)) {
            Some(child) => merge(l, r, child)?,
            None => r.or(l).cloned(),
        };
        if let Some(value) = merged {
            out.insert(key.clone(), value);
        }
    }
    Ok((!out.is_empty()).then_some(Value::Object(out)))
}

/// The items of a list with their path elements; `unique` refuses duplicates.
fn indexed<'v>(
    list: Option<&'v Value>,
    kind: &ListKind,
    unique: bool,
) -> Result<Vec<(Element, &'v Value)>, String> {
    let items = list
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let element = item_element(item, kind)?;
        if !seen.insert(element.clone()) && unique {
            return Err(format!(
                "duplicate entries for key {}",
                path::display(&[element])
            ));
        }
        out.push((element, item));
    }
    Ok(out)
}

/// Items of both sides merged: shared items in the applied order, live-only items where they
/// were, applied-only items where the applied list has them (`mergingWalker.visitListItems`).
fn merge_items(
    live: Option<&Value>,
    applied: Option<&Value>,
    item: &Shape,
    kind: &ListKind,
) -> Result<Option<Value>, String> {
    let lhs = indexed(live, kind, false)?;
    let rhs = indexed(applied, kind, true)?;
    let mut lhs_counts: HashMap<&Element, usize> = HashMap::new();
    let mut lhs_first: HashMap<&Element, &Value> = HashMap::new();
    for (e, v) in &lhs {
        *lhs_counts.entry(e).or_default() += 1;
        lhs_first.entry(e).or_insert(v);
    }
    // A duplicated live item is not merged with the applied one (`indexListPathElements`).
    let lhs_value = |e: &Element| -> Option<&Value> {
        (lhs_counts.get(e) == Some(&1))
            .then(|| lhs_first.get(e).copied())
            .flatten()
    };
    let rhs_index: HashMap<&Element, &Value> = rhs.iter().map(|(e, v)| (e, *v)).collect();
    let mut shared = rhs
        .iter()
        .map(|(e, _)| e)
        .filter(|e| lhs_counts.contains_key(e));
    let mut next_shared = shared.next();
    let mut merged_rhs: HashSet<&Element> = HashSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                merged_rhs.insert(pe);
                out.extend(merge(lhs_value(pe), Some(rhs[ri].1), item)?);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if rhs_index.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = &lhs[li].0;
            if !rhs_index.contains_key(pe) {
                out.extend(merge(Some(lhs[li].1), None, item)?);
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs.len() {
            let pe = &rhs[ri].0;
            merged_rhs.insert(pe);
            out.extend(merge(lhs_value(pe), Some(rhs[ri].1), item)?);
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok((!out.is_empty()).then_some(Value::Array(out)))
}

/// `value` without the fields and items that are members of `set` (a container left empty
/// goes too).
pub fn remove_items(value: &Value, set: &FieldSet, shape: &Shape) -> Option<Value> {
    match (shape, value) {
        (Shape::Struct(_) | Shape::Map(_) | Shape::Untyped, Value::Object(map)) => {
            let mut out = Map::new();
            for (key, child) in map {
                let element = path::field(key);
                if set.has_member(&element) {
                    continue;
                }
                let kept = match (set.child(&element), shape.child(&element)) {
                    (Some(below), Some(child_shape)) => remove_items(child, below, child_shape),
                    _ => Some(child.clone()),
                };
                if let Some(kept) = kept {
                    out.insert(key.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Shape::List(item, kind), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for child in items {
                let Ok(element) = item_element(child, kind) else {
                    out.push(child.clone());
                    continue;
                };
                if set.has_member(&element) {
                    continue;
                }
                match set.child(&element) {
                    Some(below) => out.extend(remove_items(child, below, item)),
                    None => out.push(child.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(value.clone()),
    }
}

/// `set` where every declared struct field with members below it is a member too.
pub fn ensure_named(set: &FieldSet, shape: &Shape) -> FieldSet {
    let mut out = FieldSet::new();
    for member in set.members() {
        out.insert_member(member.clone());
    }
    for (element, child) in set.children() {
        if element
            .strip_prefix("f:")
            .is_some_and(|name| shape.declares(name))
        {
            out.insert_member(element.clone());
        }
        let child_shape = match shape {
            Shape::List(..) if element.starts_with("v:") => &Shape::Leaf,
            _ => shape.child(element).unwrap_or(&Shape::Leaf),
        };
        out.insert_child(element.clone(), ensure_named(child, child_shape));
    }
    out
}

fn fields(value: Option<&Value>, shape: &Shape) -> Result<FieldSet, String> {
    value.map_or(Ok(FieldSet::new()), |v| to_field_set(v, shape))
}

fn removing(value: Option<&Value>, set: &FieldSet, shape: &Shape) -> Option<Value> {
    value.and_then(|v| remove_items(v, set, shape))
}

/// `merged` without the fields the applier owned last time (`last`) that no manager
/// (`all_owned`, the applier's new set included) owns now (`Updater.prune`).
pub fn prune(
    merged: Option<Value>,
    last: &FieldSet,
    all_owned: &FieldSet,
    shape: &Shape,
) -> Result<Option<Value>, String> {
    if last.is_empty() {
        return Ok(merged);
    }
    let merged = merged.as_ref();
    let last = ensure_named(last, shape);
    let merged_set = ensure_named(&fields(merged, shape)?, shape);
    let pruned = removing(merged, &last, shape);
    let pruned_set = ensure_named(&fields(pruned.as_ref(), shape)?, shape);
    let keep = pruned_set.union(&ensure_named(all_owned, shape));
    let owned_back = removing(merged, &merged_set.difference(&keep), shape);
    let owned_back_set = ensure_named(&fields(owned_back.as_ref(), shape)?, shape);
    let dangling = merged_set.difference(&owned_back_set).intersection(&last);
    Ok(removing(merged, &dangling, shape))
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
