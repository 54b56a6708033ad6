//! Field tracking of create, update and non-apply patch: apimachinery's `FieldManager.Update`
//! with its managers (`decodeLiveOrNew`, `managedFieldsUpdater`, `stripMetaManager`,
//! `capManagersManager`) over structured-merge-diff's `Updater.Update`, and the
//! `IgnoreManagedFieldsTimestampsTransformer` that keeps a write that changes nothing a no-op.
//!
//! The fields a write changed (added or modified, on the typed objects, the fields the
//! subresource cannot write left out) become the writer's, merged into its earlier Update
//! entry with a new time; other managers lose the fields the write changed or removed, and
//! managers left with nothing are dropped. A write that changes no field leaves the writer's
//! entry (and its time) alone. An update of an object without managers (all dropped, or
//! stripped by sending `managedFields: []`) records nothing.

use serde_json::Value;

use super::TypeContext;
use super::managed::{self, Entry, Managed, ManagerId, Operation};
use super::set::FieldSet;
use super::typed;
use crate::lifecycle::Part;

/// Fields nobody owns (`stripMetaManager`): type and server-set metadata.
fn stripped() -> FieldSet {
    let mut set = FieldSet::new();
    for path in [
        &["apiVersion"][..],
        &["kind"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "namespace"],
        &["metadata", "creationTimestamp"],
        &["metadata", "selfLink"],
        &["metadata", "uid"],
        &["metadata", "clusterName"],
        &["metadata", "generation"],
        &["metadata", "managedFields"],
        &["metadata", "resourceVersion"],
    ] {
        let path: Vec<String> = path.iter().map(|f| super::path::field(f)).collect();
        set.insert(&path);
    }
    set
}

/// `set` without the fields nobody owns.
pub fn strip_meta(set: &FieldSet) -> FieldSet {
    set.difference(&stripped())
}

/// `obj` without `metadata.managedFields`, and what it held.
pub fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove("managedFields"))
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut copy = obj.clone();
    take_managed_fields(&mut copy);
    copy
}

/// The managers a write starts from: the client's `managedFields` when it sent valid ones
/// (main resource only; `[]` or `[{}]` resets them), else the live object's.
fn starting_managers(live: Option<&Value>, given: Option<&Value>, part: Part) -> Managed {
    let from_live = || {
        managed::decode(live.and_then(|l| l["metadata"].get("managedFields"))).unwrap_or_default()
    };
    if part == Part::Status {
        return from_live();
    }
    if managed::is_reset(given) {
        return Managed::new();
    }
    match managed::decode(given) {
        Ok(m) if !m.is_empty() => m,
        _ => from_live(),
    }
}

/// The `managedFields` after `manager` wrote `new` over `live` (None: a create), `new`'s own
/// `managedFields` taken out; `None` when no manager is left. A value that does not fit the
/// type's shape leaves the live object's `managedFields` (`UpdateNoErrors`).
pub fn track(
    ctx: &TypeContext,
    part: Part,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
    now: &str,
) -> Option<Value> {
    let given = take_managed_fields(new);
    let mut managed = starting_managers(live, given.as_ref(), part);
    if managed.is_empty() && live.is_some() {
        // An update of an object nobody manages is not tracked (`skipNonAppliedManager`):
        // only an apply (or a create) starts tracking again.
        return None;
    }
    let empty = Value::Object(Default::default());
    let live_t = typed::normalize(&without_managed_fields(live.unwrap_or(&empty)), &ctx.shape);
    let new_t = typed::normalize(new, &ctx.shape);
    let Ok(comparison) = typed::compare(&live_t, &new_t, &ctx.shape) else {
        return live.and_then(|l| l["metadata"].get("managedFields").cloned());
    };
    let comparison = comparison.excluding(ctx.ignored(part));
    let changed = comparison.changed();
    for entry in managed.values_mut() {
        entry.fields = entry
            .fields
            .difference(&changed)
            .difference(&comparison.removed);
    }
    managed.retain(|_, entry| !entry.fields.is_empty());
    let owned_now = strip_meta(&changed);
    if !owned_now.is_empty() {
        let id = ManagerId::new(
            manager,
            Operation::Update,
            &ctx.api_version,
            super::subresource(part),
        );
        let previous = managed.remove(&id).map(|e| e.fields).unwrap_or_default();
        let entry = Entry {
            fields: owned_now.union(&previous),
            api_version: ctx.api_version.clone(),
            time: Some(now.to_owned()),
        };
        managed.insert(id, entry);
    }
    managed::cap_updaters(&mut managed);
    managed::encode(&managed)
}

/// Stores `managed_fields` in `result`, unless `result` is `current` apart from entry times:
/// then `current`'s `managedFields` stay, so that the write is a no-op
/// (`IgnoreManagedFieldsTimestampsTransformer`).
pub fn record(current: Option<&Value>, result: &mut Value, managed_fields: Option<Value>) {
    take_managed_fields(result);
    if let Some(current) = current {
        let old = current["metadata"].get("managedFields");
        if same_but_times(old, managed_fields.as_ref())
            && without_managed_fields(current) == *result
        {
            set_managed_fields(result, old.cloned());
            return;
        }
    }
    set_managed_fields(result, managed_fields);
}

fn set_managed_fields(obj: &mut Value, managed_fields: Option<Value>) {
    if let (Some(fields), Some(meta)) = (
        managed_fields,
        obj.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("managedFields".into(), fields);
    }
}

fn same_but_times(a: Option<&Value>, b: Option<&Value>) -> bool {
    let untimed = |v: Option<&Value>| -> Value {
        let mut v = v.cloned().unwrap_or(Value::Null);
        for entry in v.as_array_mut().into_iter().flatten() {
            if let Some(map) = entry.as_object_mut() {
                map.remove("time");
            }
        }
        v
    };
    untimed(a) == untimed(b)
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
