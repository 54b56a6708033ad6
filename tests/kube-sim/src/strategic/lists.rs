//! Merging lists the way `strategicpatch.mergeSlice` does: `$patch` elements first (delete
//! matching elements, replace the list), then patch elements merged into the elements with the
//! same merge key (or added), then `normalizeElementOrder`: patch elements in patch order,
//! server-only elements slotted in by their order in the live list (`mergeSortedSlice`).

use serde_json::Value;

use super::{PATCH, PatchError, Schema, merge_map};

/// The identity of an element: its merge key's value (maps) or itself (primitives).
fn identity<'a>(item: &'a Value, key: Option<&str>) -> Option<&'a Value> {
    match key {
        Some(key) => item.get(key),
        None => Some(item),
    }
}

fn position(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    let id = identity(item, key)?;
    list.iter()
        .position(|other| identity(other, key) == Some(id))
}

/// `patch` without `$patch` directive elements.
pub fn without_directives(patch: &[Value]) -> Vec<Value> {
    patch
        .iter()
        .filter(|item| item.get(PATCH).is_none())
        .cloned()
        .collect()
}

/// `original` merged with `patch` by `key` (None: a list of primitives); `element_order` is
/// the patch's `$setElementOrder` for this list, if any.
pub fn merge(
    schema: &Schema,
    path: &str,
    original: &[Value],
    patch: &[Value],
    key: Option<&str>,
    element_order: Option<&Vec<Value>>,
) -> Result<Vec<Value>, PatchError> {
    let mut base = original.to_vec();
    for directive in patch
        .iter()
        .filter_map(|item| item.get(PATCH).map(|d| (item, d)))
    {
        match directive {
            (_, d) if d == "replace" => return Ok(without_directives(patch)),
            (item, d) if d == "delete" => {
                let id = key.and_then(|k| item.get(k));
                base.retain(|other| key.and_then(|k| other.get(k)) != id);
            }
            (_, d) if d == "merge" => {}
            (_, d) => return Err(PatchError(format!("unknown patch type: {d} in list"))),
        }
    }
    let patch_items = without_directives(patch);
    let mut merged = base.clone();
    for item in &patch_items {
        if let Some(k) = key
            && item.get(k).is_none()
        {
            return Err(PatchError(format!(
                "map: {item} does not contain declared merge key: {k}"
            )));
        }
        match (position(&merged, item, key), item.as_object()) {
            (Some(i), Some(fields)) if key.is_some() => {
                let current = merged[i].as_object().cloned().unwrap_or_default();
                match merge_map(schema, path, current, fields)? {
                    Some(m) => merged[i] = Value::Object(m),
                    None => {
                        merged.remove(i);
                    }
                }
            }
            (Some(_), _) => {}
            (None, _) => merged.push(item.clone()),
        }
    }
    let order = element_order.cloned().unwrap_or(patch_items);
    Ok(normalize_order(merged, &order, original, key))
}

/// The live list reordered by a `$setElementOrder` list (the patch had no elements for it).
pub fn order_by(list: &[Value], order: &[Value], key: Option<&str>) -> Vec<Value> {
    normalize_order(list.to_vec(), order, list, key)
}

/// `normalizeElementOrder`: elements named in `patch_order` sorted by it, the others by their
/// place in `server_order`, the two interleaved by `mergeSortedSlice`.
fn normalize_order(
    merged: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let (mut from_patch, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position(patch_order, item, key).is_some());
    let rank = |order: &[Value], item: &Value| position(order, item, key).unwrap_or(usize::MAX);
    from_patch.sort_by_key(|item| rank(patch_order, item));
    server_only.sort_by_key(|item| rank(server_order, item));
    merge_sorted(server_only, from_patch, server_order, key)
}

/// `mergeSortedSlice`: inserts each of `left` into `right` before the first element the live
/// list has after it; the relative order within each list is kept.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut result = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (position(server, l, key), position(server, r, key)) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        result.extend(next);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replace_directive_replaces_the_whole_list() {
        let schema = super::super::schema::for_resource("", "services").unwrap();
        let merged = merge(
            &schema,
            "spec.ports",
            &[json!({"port": 1}), json!({"port": 2})],
            &[json!({"$patch": "replace"}), json!({"port": 3})],
            Some("port"),
            None,
        )
        .unwrap();
        assert_eq!(merged, vec![json!({"port": 3})]);
    }

    #[test]
    fn server_only_elements_keep_their_place_around_patched_ones() {
        let server = [json!({"port": 1}), json!({"port": 2}), json!({"port": 3})];
        let merged = normalize_order(
            vec![
                json!({"port": 1}),
                json!({"port": 2, "x": 1}),
                json!({"port": 3}),
            ],
            &[json!({"port": 2})],
            &server,
            Some("port"),
        );
        assert_eq!(
            merged,
            vec![
                json!({"port": 1}),
                json!({"port": 2, "x": 1}),
                json!({"port": 3})
            ]
        );
    }
}
