//! What the apiserver's per-type strategies do for the small built-in types kube-sim models
//! (Events, Leases) and for custom resources, hooked into the generic write path
//! (`api::write`) at a few points:
//!
//! - [`decode`]: a body or patched object as the type's decoder leaves it (custom resources:
//!   pruned and defaulted against their schema);
//! - [`check_unconditional_update`]: `AllowUnconditionalUpdate` (false for custom resources,
//!   CRDs, Leases and webhook configurations: a PUT needs a resourceVersion);
//! - [`admit_create`] / [`admit_update`]: `Validate`/`ValidateUpdate` and the warnings, and the
//!   form the object is stored in;
//! - [`storage_resource`] and [`present`]: one storage for both Event APIs, converted per API.

pub mod event;
mod event_validation;
mod go_time;
pub mod lease;

use serde_json::{Value, json};

use crate::crd::resource as custom_resource;
use crate::lifecycle::Part;
use crate::object;
use crate::registry::{GroupResource, ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;
use crate::types::field::{self, FieldError};
use crate::types::webhook_configuration;

/// Where the objects of `resource` are stored (Events of both APIs: core `events`).
pub fn storage_resource(resource: &GroupResource) -> GroupResource {
    if event::is_event(&resource.group, &resource.resource) {
        event::storage_resource()
    } else {
        resource.clone()
    }
}

/// A stored object as the API version of `rt` shows it, when that is another form
/// (`events.k8s.io/v1` Events); None when the stored form serves as it is.
pub fn present(rt: &ResourceType, stored: &Value) -> Option<Value> {
    (rt.group == event::GROUP && rt.plural == "events").then(|| event::to_events_v1(stored))
}

/// A body, or a patched object, as the type's decoder leaves it.
pub fn decode(store: &Store, rt: &ResourceType, obj: &mut Value) {
    if let Some(schema) = custom_resource::schema_of(store, rt) {
        custom_resource::decode(&schema, obj);
    }
}

/// The 422 `rest.Update` answers a PUT without resourceVersion for types whose strategy
/// refuses unconditional updates.
pub fn check_unconditional_update(rt: &ResourceType, candidate: &Value) -> Result<(), ApiError> {
    let refuses = rt.defined_by.is_some()
        || rt.special == Special::CustomResourceDefinition
        || (rt.group == lease::GROUP && rt.plural == "leases")
        || (rt.group == webhook_configuration::GROUP && rt.defined_by.is_none());
    if !refuses || !object::resource_version(candidate).is_empty() {
        return Ok(());
    }
    let error = FieldError::invalid(
        "metadata.resourceVersion",
        json!(0),
        "must be specified for an update",
    );
    field::refuse(&rt.group, &rt.plural, object::name(candidate), &[error])
}

/// `AllowCreateOnUpdate`: a PUT of a missing Event or Lease creates it.
pub fn allows_create_on_update(rt: &ResourceType) -> bool {
    event::is_event(&rt.group, &rt.plural) || (rt.group == lease::GROUP && rt.plural == "leases")
}

/// The body of a PUT that creates its object, named as the URL names it (a body naming another
/// object is a 400, as for any update).
pub fn named(mut obj: Value, name: &str) -> Result<Value, ApiError> {
    match object::name(&obj) {
        "" => {
            object::metadata_mut(&mut obj).insert("name".into(), json!(name));
            Ok(obj)
        }
        given if given == name => Ok(obj),
        given => Err(ApiError::bad_request(format!(
            "the name of the object ({given}) does not match the name on the URL ({name})"
        ))),
    }
}

/// A new object after the generic create steps: validated, in its stored form.
pub fn admit_create(store: &Store, rt: &ResourceType, obj: Value) -> Result<Value, ApiError> {
    if let Some(schema) = custom_resource::schema_of(store, rt) {
        custom_resource::validate_create(rt, &schema, &obj)?;
        return Ok(obj);
    }
    if event::is_event(&rt.group, &rt.plural) {
        let strict = rt.group == event::GROUP;
        let stored = stored_event(rt, &obj);
        event_validation::validate_create(&stored, strict)?;
        return Ok(stored);
    }
    if rt.group == lease::GROUP && rt.plural == "leases" {
        let stored = lease::canonical(obj);
        lease::validate(&stored)?;
        return Ok(stored);
    }
    Ok(obj)
}

/// An updated object after the generic update steps (`result`, in the request's form) over
/// the stored `current`: validated, in its stored form.
pub fn admit_update(
    store: &Store,
    rt: &ResourceType,
    current: &Value,
    result: Value,
    part: Part,
) -> Result<Value, ApiError> {
    if let Some(schema) = custom_resource::schema_of(store, rt) {
        custom_resource::validate_update(rt, &schema, current, &result, part)?;
        return Ok(result);
    }
    if event::is_event(&rt.group, &rt.plural) {
        let strict = rt.group == event::GROUP;
        let stored = stored_event(rt, &result);
        event_validation::validate_update(&stored, current, strict)?;
        return Ok(stored);
    }
    if rt.group == lease::GROUP && rt.plural == "leases" {
        let stored = lease::canonical(result);
        lease::validate(&stored)?;
        return Ok(stored);
    }
    Ok(result)
}

fn stored_event(rt: &ResourceType, obj: &Value) -> Value {
    if rt.group == event::GROUP {
        event::from_events_v1(obj)
    } else {
        event::core(obj)
    }
}
