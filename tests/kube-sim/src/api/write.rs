//! The write verbs create (POST) and update (PUT), and the commit steps every write shares:
//! storing or removing the result, finishing deletions whose finalizers are gone, and keeping
//! the served types in step with CustomResourceDefinitions.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::body;
use super::respond;
use super::target::Target;
use crate::app::App;
use crate::crd;
use crate::kinds;
use crate::lifecycle;
use crate::object;
use crate::registry::{ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;

pub fn create(
    app: &App,
    target: &Target,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let obj = body::decode_object(headers, body)?;
    let stored = create_locked(&mut app.write(), target, obj)?;
    Ok(respond::object_response(
        StatusCode::CREATED,
        &target.rt,
        &stored,
    ))
}

pub fn update(
    app: &App,
    target: &Target,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let candidate = body::decode_object(headers, body)?;
    let mut store = app.write();
    if creates_on_update(&store, target) {
        let stored = create_locked(
            &mut store,
            target,
            kinds::named(candidate, target.name_or_empty())?,
        )?;
        return Ok(respond::object_response(
            StatusCode::CREATED,
            &target.rt,
            &stored,
        ));
    }
    let stored = update_locked(&mut store, target, |_| Ok(candidate))?;
    Ok(respond::object_response(
        StatusCode::OK,
        &target.rt,
        &stored,
    ))
}

/// Whether a PUT creates the missing object it addresses (`AllowCreateOnUpdate`).
fn creates_on_update(store: &Store, target: &Target) -> bool {
    let gr = target.rt.group_resource();
    target.part == lifecycle::Part::Main
        && kinds::allows_create_on_update(&target.rt)
        && store
            .get(&gr, target.key_namespace(), target.name_or_empty())
            .is_none()
}

/// Creates `obj` in the target collection (the store lock is held by the caller).
pub fn create_locked(
    store: &mut Store,
    target: &Target,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    let rt = &target.rt;
    let mut obj = obj;
    kinds::decode(store, rt, &mut obj);
    let obj = lifecycle::prepare_create(rt, target.namespace.as_deref(), obj, &object::now())?;
    let obj = kinds::admit_create(store, rt, obj)?;
    let gr = rt.group_resource();
    if store
        .get(&gr, target.key_namespace(), object::name(&obj))
        .is_some()
    {
        return Err(ApiError::already_exists(&gr, object::name(&obj)));
    }
    let stored = store.put(&gr, obj);
    sync_served_types(store, rt, &stored, false);
    Ok(stored)
}

/// Updates the target object with the candidate `make_candidate` builds from the live object
/// (the store lock is held by the caller).
pub fn update_locked(
    store: &mut Store,
    target: &Target,
    make_candidate: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Arc<Value>, ApiError> {
    let gr = target.rt.group_resource();
    let name = target.name_or_empty();
    let current = store
        .get(&gr, target.key_namespace(), name)
        .ok_or_else(|| ApiError::not_found(&gr, name))?;
    let rt = &target.rt;
    let shown = respond::present(rt, &current);
    let mut candidate = make_candidate(&shown)?;
    kinds::decode(store, rt, &mut candidate);
    kinds::check_unconditional_update(rt, &candidate)?;
    let result = lifecycle::merge_update(rt, &shown, candidate, target.part)?;
    let result = kinds::admit_update(store, rt, &current, result, target.part)?;
    Ok(commit(store, rt, &current, result))
}

/// Stores `result` over `current`: nothing when unchanged, removal when a deletion's last
/// finalizer is gone (answered with `result`, as the apiserver answers such an update), else a
/// modification.
pub fn commit(
    store: &mut Store,
    rt: &ResourceType,
    current: &Arc<Value>,
    result: Value,
) -> Arc<Value> {
    if result == **current {
        return current.clone();
    }
    let gr = rt.group_resource();
    if object::is_deleting(&result) && !object::has_finalizers(&result) {
        remove(store, rt, &result);
        return Arc::new(result);
    }
    let stored = store.put(&gr, result);
    sync_served_types(store, rt, &stored, false);
    stored
}

/// Removes `obj` from the store; returns its last state.
pub fn remove(store: &mut Store, rt: &ResourceType, obj: &Value) -> Arc<Value> {
    let gr = rt.group_resource();
    let removed = store.remove(&gr, object::namespace(obj), object::name(obj));
    let last = removed.unwrap_or_else(|| Arc::new(obj.clone()));
    sync_served_types(store, rt, &last, true);
    last
}

/// After a write of a CustomResourceDefinition: serve (or stop serving) what it defines.
fn sync_served_types(store: &mut Store, rt: &ResourceType, obj: &Value, removed: bool) {
    if rt.special == Special::CustomResourceDefinition {
        crd::sync(store, obj, removed);
    }
}
