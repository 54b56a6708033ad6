//! The order structured-merge-diff writes a FieldsV1 set in (`Set.emitContentsV1`): `.` first,
//! then the path elements as `PathElement.Compare` orders them: field names (`f:`) before keys
//! (`k:`) before values (`v:`) before indexes (`i:`); names by string, keys field by field
//! (name, then value), values as `value.Compare` orders them (numbers by value, then strings,
//! booleans, lists, maps), indexes by number. kube-sim keeps FieldsV1 as JSON objects, whose
//! keys sort as strings (`k:{"port":7000}` before `k:{"port":80}`); the Go encoding of a
//! stored object needs SMD's order back.

use std::cmp::Ordering;

use serde_json::Value;

/// The order of two FieldsV1 keys.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (rank_a, rest_a) = split(a);
    let (rank_b, rest_b) = split(b);
    rank_a.cmp(&rank_b).then_with(|| match rank_a {
        // Keys and values: as the values they spell.
        2 | 3 => match (parse(rest_a), parse(rest_b)) {
            (Some(x), Some(y)) if rank_a == 2 => compare_keys(&x, &y),
            (Some(x), Some(y)) => compare_values(&x, &y),
            _ => rest_a.cmp(rest_b),
        },
        4 => match (rest_a.parse::<u64>(), rest_b.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => rest_a.cmp(rest_b),
        },
        _ => rest_a.cmp(rest_b),
    })
}

/// The element's rank (`.`, `f:`, `k:`, `v:`, `i:`, anything else) and what follows its prefix.
fn split(key: &str) -> (u8, &str) {
    if key == "." {
        return (0, "");
    }
    let ranks = [("f:", 1), ("k:", 2), ("v:", 3), ("i:", 4)];
    ranks
        .iter()
        .find_map(|(prefix, rank)| key.strip_prefix(prefix).map(|rest| (*rank, rest)))
        .unwrap_or((5, key))
}

fn parse(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// `value.FieldList.Compare`: field by field (the fields are sorted by name), name then value;
/// a shorter list first.
fn compare_keys(a: &Value, b: &Value) -> Ordering {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return compare_values(a, b);
    };
    for ((name_a, value_a), (name_b, value_b)) in a.iter().zip(b) {
        let order = name_a
            .cmp(name_b)
            .then_with(|| compare_values(value_a, value_b));
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// `value.Compare`: numbers (by value), strings, booleans, lists, maps, null, in that order.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    let rank = |v: &Value| match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    };
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.total_cmp(&y)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(p, q)| compare_values(p, q))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        _ => a.to_string().cmp(&b.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_order_as_structured_merge_diff_orders_them() {
        let mut keys = vec![
            "i:10",
            "v:\"b\"",
            "k:{\"port\":7000,\"protocol\":\"TCP\"}",
            "f:b",
            "k:{\"port\":80,\"protocol\":\"UDP\"}",
            "i:9",
            "k:{\"port\":80,\"protocol\":\"TCP\"}",
            "v:3",
            ".",
            "f:a",
        ];
        keys.sort_by(|a, b| compare(a, b));
        assert_eq!(
            keys,
            [
                ".",
                "f:a",
                "f:b",
                "k:{\"port\":80,\"protocol\":\"TCP\"}",
                "k:{\"port\":80,\"protocol\":\"UDP\"}",
                "k:{\"port\":7000,\"protocol\":\"TCP\"}",
                "v:3",
                "v:\"b\"",
                "i:9",
                "i:10",
            ]
        );
    }
}
