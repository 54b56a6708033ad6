//! DELETE of one object or a collection. Objects with finalizers are only marked
//! (deletionTimestamp set) and removed once an update leaves their finalizers empty.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::body;
use super::params::Params;
use super::read;
use super::respond;
use super::target::Target;
use super::write;
use crate::app::App;
use crate::lifecycle;
use crate::object;
use crate::registry::ResourceType;
use crate::status::ApiError;
use crate::store::Store;
use crate::types;

/// What deleting an object did.
enum Deletion {
    /// Removed now; its last state.
    Removed(Arc<Value>),
    /// Marked for deletion, waiting for its finalizers.
    Pending(Arc<Value>),
}

/// Answers with a `Status` success when the object is gone, or the marked object when pending.
pub fn delete(app: &App, target: &Target, body: &[u8]) -> Result<Response, ApiError> {
    let options = delete_options(body)?;
    let gr = target.rt.group_resource();
    let name = target.name_or_empty();
    types::admit_delete(&target.rt, name)?;
    let mut store = app.write();
    let current = store
        .get(&gr, target.key_namespace(), name)
        .ok_or_else(|| ApiError::not_found(&gr, name))?;
    check_preconditions(&target.rt, &current, &options)?;
    let response = match delete_locked(&mut store, &target.rt, &current) {
        Deletion::Removed(last) => respond::deleted_response(&target.rt, &last),
        Deletion::Pending(marked) => respond::object_response(StatusCode::OK, &target.rt, &marked),
    };
    Ok(response)
}

/// Deletes every object the selectors match; answers with the list of their last states.
pub fn delete_collection(
    app: &App,
    target: &Target,
    params: &Params,
    body: &[u8],
) -> Result<Response, ApiError> {
    delete_options(body)?;
    let (matching, _) = read::matching(app, target, params)?;
    let mut store = app.write();
    let gr = target.rt.group_resource();
    let mut results = Vec::with_capacity(matching.len());
    for obj in matching.iter().map(|s| &s.value) {
        let Some(current) = store.get(&gr, object::namespace(obj), object::name(obj)) else {
            continue;
        };
        let (Deletion::Removed(last) | Deletion::Pending(last)) =
            delete_locked(&mut store, &target.rt, &current);
        results.push(last);
    }
    let rv = store.resource_version();
    Ok(respond::list_response(&target.rt, &results, rv))
}

fn delete_locked(store: &mut Store, rt: &ResourceType, current: &Arc<Value>) -> Deletion {
    if let Some(kept) = types::delete(rt, current, &object::now()) {
        return Deletion::Pending(write::commit(store, rt, current, kept));
    }
    if !object::has_finalizers(current) {
        return Deletion::Removed(write::remove(store, rt, current));
    }
    if object::is_deleting(current) {
        return Deletion::Pending(current.clone());
    }
    let marked = lifecycle::mark_deleting(current, &object::now());
    Deletion::Pending(write::commit(store, rt, current, marked))
}

/// The DeleteOptions body (empty means none).
fn delete_options(body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    body::decode_json(body)
}

/// `preconditions.uid` and `preconditions.resourceVersion`, when given, must match.
fn check_preconditions(
    rt: &ResourceType,
    current: &Value,
    options: &Value,
) -> Result<(), ApiError> {
    let gr = rt.group_resource();
    let name = object::name(current);
    let preconditions = &options["preconditions"];
    if let Some(uid) = preconditions["uid"]
        .as_str()
        .filter(|u| *u != object::uid(current))
    {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            object::uid(current)
        );
        return Err(ApiError::conflict(&gr, name, &why));
    }
    if let Some(rv) = preconditions["resourceVersion"]
        .as_str()
        .filter(|rv| *rv != object::resource_version(current))
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            object::resource_version(current)
        );
        return Err(ApiError::conflict(&gr, name, &why));
    }
    Ok(())
}
