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
    let stored = update_locked(&mut app.write(), target, |_| Ok(candidate))?;
    Ok(respond::object_response(
        StatusCode::OK,
        &target.rt,
        &stored,
    ))
}

/// Creates `obj` in the target collection (the store lock is held by the caller).
pub fn create_locked(
    store: &mut Store,
    target: &Target,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    let rt = &target.rt;
    let obj = lifecycle::prepare_create(rt, target.namespace.as_deref(), obj, &object::now())?;
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
    let candidate = make_candidate(&current)?;
    let result =
        lifecycle::merge_update(&target.rt, &current, candidate, target.part, &object::now())?;
    Ok(commit(store, &target.rt, &current, result))
}

/// Stores `result` over `current`: nothing when unchanged, removal when a deletion's last
/// finalizer is gone, else a modification.
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
        // The update's result, at the resourceVersion it was made from, is the answer
        // (`deleteWithoutFinalizers` returns the object of the request).
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
    if rt.special != Special::CustomResourceDefinition {
        return;
    }
    let name = object::name(obj);
    if removed {
        let dropped = store.registry.undefine(name);
        for gone in dropped.iter().map(|t| t.group_resource()) {
            if !store.registry.all().any(|t| t.group_resource() == gone) {
                store.drop_resource(&gone);
            }
        }
        return;
    }
    let types = crd::resource_types(obj).unwrap_or_default();
    for served in &types {
        store.ensure_resource(&served.group_resource());
    }
    tracing::info!(
        crd = name,
        versions = types.len(),
        "serving custom resource"
    );
    store.registry.define(name, types);
}
