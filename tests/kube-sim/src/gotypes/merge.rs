//! The text evanphx/json-patch v4's `MergePatch` makes of the Go-encoded live object and a
//! JSON merge patch: what the apiserver decodes (and quotes when decoding fails). Its documents
//! are maps of lazily decoded nodes, so:
//!
//! - every object the patch merges into (the top level, and each object the patch has an
//!   object for) is written again from a map: keys sorted, `null`s of the patch deleting keys;
//! - what the patch does not touch keeps the live object's Go encoding (struct field order);
//! - a value the patch brings in where the live object had none (or `null`, or no object) has
//!   its objects' `null`s pruned and is written from maps too (keys sorted); one that replaces
//!   an object is taken as the patch has it (kube-sim writes its keys sorted, not in the
//!   client's order).

use std::collections::BTreeSet;

use serde_json::Value;

use super::GoType;
use super::encode::{self, child_type};

/// The merged text for `current` (typed as `ty`) and `patch`.
pub fn render(ty: Option<&GoType>, current: &Value, patch: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    merged(&mut out, ty, current, patch);
    out
}

fn merged(out: &mut Vec<u8>, ty: Option<&GoType>, current: &Value, patch: &Value) {
    let (Value::Object(live), Value::Object(changes)) = (current, patch) else {
        match current {
            // `merge`: a patch that is no object replaces an object as it is.
            Value::Object(_) => encode::write(out, None, patch),
            _ => encode::write(out, None, &pruned(patch)),
        }
        return;
    };
    let keys: BTreeSet<&str> = live
        .keys()
        .chain(changes.keys())
        .map(String::as_str)
        .collect();
    out.push(b'{');
    let mut first = true;
    for key in keys {
        let change = changes.get(key);
        if change.is_some_and(Value::is_null) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        encode::write_string(out, key);
        out.push(b':');
        let child = child_type(ty, key);
        match (live.get(key).filter(|v| !v.is_null()), change) {
            (Some(old), Some(new)) => merged(out, child, old, new),
            (None, Some(new)) => encode::write(out, None, &pruned(new)),
            (old, None) => encode::write(out, child, old.unwrap_or(&Value::Null)),
        }
    }
    out.push(b'}');
}

/// `pruneNulls`: `null` members of objects dropped, at any depth (list items stay).
fn pruned(value: &Value) -> Value {
    match value {
        Value::Object(entries) => Value::Object(
            entries
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), pruned(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(pruned).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::catalog;
    use super::*;
    use serde_json::json;

    fn render_service(current: &Value, patch: &Value) -> String {
        String::from_utf8(render(catalog::lookup("", "Service"), current, patch)).unwrap()
    }

    #[test]
    fn touched_objects_sort_and_untouched_ones_keep_go_order() {
        let live = json!({"kind": "Service", "apiVersion": "v1",
            "metadata": {"name": "a", "namespace": "n", "uid": "u"},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}, "type": "ClusterIP"},
            "status": {"loadBalancer": {}}});
        assert_eq!(
            render_service(&live, &json!({"spec": {"ports": "x"}})),
            r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"n","uid":"u"},"spec":{"ports":"x","selector":{"app":"web"},"type":"ClusterIP"},"status":{"loadBalancer":{}}}"#
        );
    }

    #[test]
    fn nulls_delete_and_new_values_are_pruned() {
        let live =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"type": "ClusterIP"}});
        let patch = json!({"metadata": {"labels": null}, "spec": {"type": null,
            "selector": {"b": "1", "a": null}, "ports": [{"port": 80, "name": null}]}});
        assert_eq!(
            render_service(&live, &patch),
            r#"{"metadata":{"name":"a"},"spec":{"ports":[{"port":80}],"selector":{"b":"1"}}}"#
        );
    }
}
