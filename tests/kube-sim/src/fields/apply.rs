//! Server-side apply: apimachinery's `FieldManager.Apply` (`versionCheckManager`,
//! `structuredMergeManager.Apply`, `managedFieldsUpdater`, `stripMetaManager`) over
//! structured-merge-diff's `Updater.Apply`.
//!
//! The applied configuration's fields become the applier's (`operation: Apply`); it is merged
//! into the live object by the type's shape; fields the applier applied last time and no
//! longer applies are removed unless another manager owns them; changing a field another
//! manager owns is a conflict (409) unless forced, when the field changes hands. An apply that
//! changes nothing returns the live object (the applier's entry keeps its time).

use serde_json::Value;

use super::conflict::{self, Conflict};
use super::managed::{self, Entry, Managed, ManagerId, Operation};
use super::merge;
use super::set::FieldSet;
use super::typed::{self, Comparison};
use super::update::{strip_meta, take_managed_fields};
use super::{TypeContext, subresource};
use crate::lifecycle::Part;
use crate::status::ApiError;

/// One apply request.
pub struct Apply<'a> {
    pub part: Part,
    /// The live object; None when the apply creates it.
    pub live: Option<&'a Value>,
    pub config: &'a Value,
    pub manager: &'a str,
    pub force: bool,
    pub now: &'a str,
}

/// The object `request` makes, with its `managedFields`, or why it is refused.
pub fn apply(ctx: &TypeContext, request: &Apply<'_>) -> Result<Value, ApiError> {
    check_type(ctx, request.config)?;
    if !request.config["metadata"]["managedFields"].is_null() {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let internal =
        |what: &str, e: String| ApiError::internal(format!("Internal error occurred: {what}: {e}"));
    let mut live = request
        .live
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let mut managed = managed::decode(take_managed_fields(&mut live).as_ref())
        .map_err(|e| internal("failed to decode managed fields", e))?;
    let shape = &ctx.shape;
    let live_t = typed::normalize(&live, shape);
    let config_t = typed::declared(request.config, shape);
    let applied = typed::to_field_set(&config_t, shape)
        .map_err(|e| internal("failed to create typed patch object", e))?
        .recursive_difference(ctx.ignored(request.part));
    let merged = merge::merge(Some(&live_t), Some(&config_t), shape)
        .map_err(|e| internal("failed to merge config", e))?;
    let id = ManagerId::new(
        request.manager,
        Operation::Apply,
        "",
        subresource(request.part),
    );
    let last = managed.remove(&id);
    let entry = Entry {
        fields: applied,
        api_version: ctx.api_version.clone(),
        time: last.as_ref().and_then(|e| e.time.clone()),
    };
    managed.insert(id.clone(), entry);
    let all_owned = managed
        .values()
        .fold(FieldSet::new(), |all, e| all.union(&e.fields));
    let last_fields = last.map(|e| e.fields).unwrap_or_default();
    let merged = merge::prune(merged, &last_fields, &all_owned, shape)
        .map_err(|e| internal("failed to prune fields", e))?
        .unwrap_or_else(|| Value::Object(Default::default()));
    let comparison = typed::compare(&live_t, &merged, shape)
        .map_err(|e| internal("failed to compare objects", e))?
        .excluding(ctx.ignored(request.part));
    take_ownership(&mut managed, &id, &comparison, request.force)?;
    finish_applier(&mut managed, &id, live_t != merged, request.now);
    managed::cap_updaters(&mut managed);
    let mut object = if live_t == merged {
        live
    } else {
        typed::normalize(&merged, shape)
    };
    if let (Some(fields), Some(meta)) = (
        managed::encode(&managed),
        object.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("managedFields".into(), fields);
    }
    Ok(object)
}

/// `versionCheckManager`: the configuration must be of the type applied to.
fn check_type(ctx: &TypeContext, config: &Value) -> Result<(), ApiError> {
    let api_version = config["apiVersion"].as_str().unwrap_or_default();
    let kind = config["kind"].as_str().unwrap_or_default();
    if api_version == ctx.api_version && kind == ctx.kind {
        return Ok(());
    }
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [version] => ("", version),
        [group, version] => (group, version),
        _ => ("", ""),
    };
    Err(ApiError::bad_request(format!(
        "invalid object type: {group}/{version}, Kind={kind}"
    )))
}

/// Other managers give up the fields the apply changes (409 unless `force`) and those it
/// removes; managers left with nothing are dropped (`Updater.update`).
fn take_ownership(
    managed: &mut Managed,
    applier: &ManagerId,
    comparison: &Comparison,
    force: bool,
) -> Result<(), ApiError> {
    let changed = comparison.changed();
    let conflicts: Vec<Conflict> = managed
        .iter()
        .filter(|(id, _)| *id != applier)
        .flat_map(|(id, entry)| {
            let owned = entry.fields.intersection(&changed);
            owned.paths().into_iter().map(|path| Conflict {
                owner: id.clone(),
                path,
            })
        })
        .collect();
    if !force && !conflicts.is_empty() {
        let mut conflicts = conflicts;
        conflicts.sort_by_key(|c| c.owner.spelling());
        return Err(conflict::error(&conflicts));
    }
    for (id, entry) in managed.iter_mut() {
        if id != applier {
            entry.fields = entry
                .fields
                .difference(&changed)
                .difference(&comparison.removed);
        }
    }
    managed.retain(|_, entry| !entry.fields.is_empty());
    Ok(())
}

/// The applier's entry without the fields nobody owns, timed now if the object changed.
fn finish_applier(managed: &mut Managed, applier: &ManagerId, changed: bool, now: &str) {
    let Some(entry) = managed.get_mut(applier) else {
        return;
    };
    entry.fields = strip_meta(&entry.fields);
    if changed {
        entry.time = Some(now.to_owned());
    }
    if entry.fields.is_empty() {
        managed.remove(applier);
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
