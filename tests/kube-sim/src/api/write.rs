//! The write verbs create (POST) and update (PUT), and the commit steps every write shares:
//! field tracking (`managedFields`, [`crate::fields`]), storing or removing the result,
//! finishing deletions whose finalizers are gone, and keeping the served types in step with
//! CustomResourceDefinitions.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::body;
use super::params::Params;
use super::request_info::Attributes;
use super::respond;
use super::target::Target;
use crate::app::App;
use crate::crd;
use crate::fields::{self, Options, Tracking};
use crate::kinds;
use crate::lifecycle;
use crate::object;
use crate::registry::{ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;
use crate::types;

pub fn create(
    app: &App,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let tracking = update_tracking(Options::Create, params, headers)?;
    let obj = body::decode_object(headers, body)?;
    let stored = create_locked(&mut app.write(), target, &tracking, obj)?;
    Ok(respond::object_response(
        StatusCode::CREATED,
        &target.rt,
        &stored,
    ))
}

pub fn update(
    app: &App,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let tracking = update_tracking(Options::Update, params, headers)?;
    let candidate = body::decode_object(headers, body)?;
    let mut store = app.write();
    if creates_on_update(&store, target) {
        let candidate = kinds::named(candidate, target.name_or_empty())?;
        let stored = create_through_write(app, &mut store, target, &tracking, candidate)?;
        return Ok(respond::object_response(
            StatusCode::CREATED,
            &target.rt,
            &stored,
        ));
    }
    let stored = update_locked(&mut store, target, &tracking, |_| Ok(candidate))?;
    Ok(respond::object_response(
        StatusCode::OK,
        &target.rt,
        &stored,
    ))
}

/// The field tracking of a create, update or non-apply patch: who the write is recorded for
/// (the `fieldManager` option, else the User-Agent), or 422 when the options are invalid.
pub fn update_tracking(
    options: Options,
    params: &Params,
    headers: &HeaderMap,
) -> Result<Tracking, ApiError> {
    let user_agent = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let manager = fields::manager(
        options,
        params.get("fieldManager"),
        params.get("force"),
        user_agent,
    )?;
    Ok(Tracking::Update(manager))
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

/// What decoding a body (or computing a patched object) does for `rt`, before any other step
/// looks at it: the refusal of a body that does not decode into the Go type (for the types
/// that model it), the scheme's defaults of built-in types, then the pruning and defaulting of
/// a custom resource against its schema.
fn decode(store: &Store, rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    types::decode_error(rt, obj)?;
    types::decode_defaults(rt, obj);
    kinds::decode(store, rt, obj);
    Ok(())
}

/// Creates `obj` in the target collection (the store lock is held by the caller). The steps, in
/// the apiserver's order: decoding (an apply's merged object is defaulted here too), field
/// tracking, the generic metadata (`lifecycle`), admission, the type's strategy (built-in types
/// in `types`, Events, Leases and custom resources in `kinds`), and the storage layer's own
/// refusal of a resourceVersion. Nothing the server sets after tracking is owned by anyone.
pub fn create_locked(
    store: &mut Store,
    target: &Target,
    tracking: &Tracking,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    let obj = admit_create_locked(store, target, tracking, obj)?;
    store_created(store, target, obj)
}

/// A create made by an update (a PUT of a missing Lease or Event) or a server-side apply: as
/// [`create_locked`], with the extra authorization check the apiserver's update and patch
/// handlers make once the new object is validated (`withAuthorization` around
/// `createValidation`): `create` on the resource, recorded in the request log.
pub fn create_through_write(
    app: &App,
    store: &mut Store,
    target: &Target,
    tracking: &Tracking,
    obj: Value,
) -> Result<Arc<Value>, ApiError> {
    let obj = admit_create_locked(store, target, tracking, obj)?;
    app.requests.record(Attributes::create_check(target));
    store_created(store, target, obj)
}

/// The steps of [`create_locked`] up to the validated object in its stored form.
fn admit_create_locked(
    store: &mut Store,
    target: &Target,
    tracking: &Tracking,
    mut obj: Value,
) -> Result<Value, ApiError> {
    let rt = &target.rt;
    let now = object::now();
    decode(store, rt, &mut obj)?;
    let context = fields::context(store, rt);
    let managed = fields::track(
        context.as_ref(),
        target.part,
        tracking,
        None,
        &mut obj,
        &now,
    );
    let requested_name = object::name(&obj).to_owned();
    let mut obj = lifecycle::prepare_create(rt, target.namespace.as_deref(), obj, &now)?;
    types::admit_create(store, rt, target.key_namespace(), &requested_name)?;
    types::prepare_create(store, rt, &mut obj)?;
    let mut obj = kinds::admit_create(store, rt, obj)?;
    fields::record(None, &mut obj, managed);
    Ok(obj)
}

/// The storage layer's create: refused when the object has a resourceVersion or exists.
fn store_created(store: &mut Store, target: &Target, obj: Value) -> Result<Arc<Value>, ApiError> {
    let rt = &target.rt;
    if !object::resource_version(&obj).is_empty() {
        // Refused by the storage layer, as a plain error (500 without a reason).
        return Err(ApiError::internal_unclassified(
            "resourceVersion should not be set on objects to be created",
        ));
    }
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
/// (the store lock is held by the caller). The steps as in [`create_locked`]: decoding, field
/// tracking (of the candidate over the live object, both as the request's version shows them),
/// the update checks and admission, the generic merge, the type's strategy; the entries are
/// stored last, so that a write changing nothing stays a no-op.
pub fn update_locked(
    store: &mut Store,
    target: &Target,
    tracking: &Tracking,
    make_candidate: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Arc<Value>, ApiError> {
    let gr = target.rt.group_resource();
    let name = target.name_or_empty();
    let rt = &target.rt;
    let Some(current) = store.get(&gr, target.key_namespace(), name) else {
        // A write that would create is admitted as a create before it is refused.
        types::admit_create(store, rt, target.key_namespace(), name)?;
        return Err(ApiError::not_found(&gr, name));
    };
    let shown = respond::present(rt, &current);
    let mut candidate = make_candidate(&shown)?;
    decode(store, rt, &mut candidate)?;
    let now = object::now();
    let context = fields::context(store, rt);
    let managed = fields::track(
        context.as_ref(),
        target.part,
        tracking,
        Some(&shown),
        &mut candidate,
        &now,
    );
    kinds::check_unconditional_update(rt, &candidate)?;
    types::admit_update(store, rt, target.key_namespace())?;
    let mut result = lifecycle::merge_update(rt, &shown, candidate, target.part)?;
    types::prepare_update(store, rt, &current, &mut result, target.part)?;
    let mut result = kinds::admit_update(store, rt, &current, result, target.part)?;
    fields::record(Some(&current), &mut result, managed);
    Ok(commit(store, rt, &current, result))
}

/// Stores `result` over `current`: nothing when unchanged, removal when nothing holds a deletion
/// any more (`types::held_by_finalizers`: `metadata.finalizers`, or a Namespace's
/// `spec.finalizers`), answered with `result` at its last resourceVersion as the apiserver
/// answers such an update; else a modification.
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
    if object::is_deleting(&result) && !types::held_by_finalizers(rt, &result) {
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
    if rt.special == Special::CustomResourceDefinition {
        crd::sync(store, obj, removed);
    }
}
