//! What the apiserver's per-type code does to built-in objects on their way into storage, in
//! the order the write paths call it:
//!
//! 1. [`decode_defaults`]: the defaults the scheme applies when a body (or a patched object)
//!    is decoded (`SetDefaults_*` in `pkg/apis/*/v1/defaults.go`);
//! 2. admission: [`admit_create`] / [`admit_update`] / [`admit_delete`] (the
//!    `NamespaceLifecycle` plugin);
//! 3. the registry's strategy: [`prepare_create`] / [`prepare_update`] (`PrepareForCreate`,
//!    allocations such as a Service's clusterIP, then `Validate` / `ValidateUpdate`).
//!
//! Each type lives in its own module. Events, Leases and custom resources have their strategies
//! in `kinds` (and `crd`), which the write paths call right after these; the metadata and
//! finalizer rules ([`meta`], [`finalizers`]) and the field errors ([`field`]) here serve them
//! too.

pub mod endpointslice;
pub mod field;
pub mod finalizers;
pub mod ip;
pub mod job;
pub mod meta;
pub mod names;
pub mod namespace;
pub mod secret;
pub mod service;
pub mod webhook_configuration;

use serde_json::Value;

use crate::lifecycle::Part;
use crate::object;
use crate::registry::{GroupResource, ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;
use field::ErrorList;
use meta::NameRule;

/// The built-in types with behaviour of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    Namespace,
    Service,
    EndpointSlice,
    /// ConfigMaps: metadata validation only.
    Plain,
    Secret,
    /// batch/v1 Jobs.
    Job,
    /// Validating (false) and mutating (true) webhook configurations.
    WebhookConfiguration {
        mutating: bool,
    },
}

fn builtin(rt: &ResourceType) -> Option<Builtin> {
    if rt.defined_by.is_some() {
        return None;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") if rt.special == Special::Namespace => Some(Builtin::Namespace),
        ("", "services") => Some(Builtin::Service),
        ("discovery.k8s.io", "endpointslices") => Some(Builtin::EndpointSlice),
        ("", "configmaps") => Some(Builtin::Plain),
        ("", "secrets") => Some(Builtin::Secret),
        ("batch", "jobs") => Some(Builtin::Job),
        (webhook_configuration::GROUP, "validatingwebhookconfigurations") => {
            Some(Builtin::WebhookConfiguration { mutating: false })
        }
        (webhook_configuration::GROUP, "mutatingwebhookconfigurations") => {
            Some(Builtin::WebhookConfiguration { mutating: true })
        }
        _ => None,
    }
}

/// The defaults a real server fills in when it decodes `obj` as `rt`. Write paths call this
/// right after decoding a body or computing a patched object, before anything else looks at it.
pub fn decode_defaults(rt: &ResourceType, obj: &mut Value) {
    match builtin(rt) {
        Some(Builtin::Namespace) => namespace::decode_defaults(obj),
        Some(Builtin::Service) => service::decode_defaults(obj),
        Some(Builtin::EndpointSlice) => endpointslice::decode_defaults(obj),
        Some(Builtin::Secret) => secret::decode_defaults(obj),
        Some(Builtin::Job) => job::decode_defaults(obj),
        Some(Builtin::WebhookConfiguration { mutating }) => {
            webhook_configuration::decode_defaults(obj, mutating);
        }
        Some(Builtin::Plain) | None => {}
    }
}

/// The 400 a body (of a create or update) gets when it does not decode into the Go type of
/// `rt`; only checked for the types that model it (webhook configurations).
pub fn decode_error(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    match builtin(rt) {
        Some(Builtin::WebhookConfiguration { .. }) => {
            webhook_configuration::decode_error(&rt.kind, obj)
        }
        _ => Ok(()),
    }
}

/// `errors` as the 422 answer about `obj` of `rt`.
fn refuse(rt: &ResourceType, obj: &Value, errors: &ErrorList) -> Result<(), ApiError> {
    match field::invalid(&rt.group, &rt.kind, object::name(obj), errors) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Admission of a write that creates the object `name` ("" when generated) of `rt` in
/// `namespace` ("" for cluster-scoped objects).
pub fn admit_create(
    store: &Store,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    namespace::admit_create(store, rt, namespace, name)
}

/// Admission of an update of an existing object in `namespace`.
pub fn admit_update(store: &Store, rt: &ResourceType, namespace: &str) -> Result<(), ApiError> {
    namespace::admit_update(store, rt, namespace)
}

/// The values the objects of `resource` must not share, which the store indexes
/// ([`crate::value_index`]): a Service's cluster IPs and node ports.
pub fn unique_values(resource: &GroupResource) -> Option<crate::value_index::Extract> {
    (resource.group.is_empty() && resource.resource == "services")
        .then_some(service::allocated_values as _)
}

/// Admission of a DELETE of the object `name`.
pub fn admit_delete(rt: &ResourceType, name: &str) -> Result<(), ApiError> {
    namespace::admit_delete(rt, name)
}

/// The registry's create steps for a new object whose generic metadata is set:
/// `PrepareForCreate` and allocations, the type's validation, then the generic name check.
pub fn prepare_create(store: &Store, rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    match builtin(rt) {
        Some(Builtin::Namespace) => {
            namespace::prepare_create(obj);
            refuse(rt, obj, &meta::validate(obj, NameRule::Label, false, true))?;
        }
        Some(Builtin::Service) => service::prepare_create(store, obj)?,
        Some(Builtin::EndpointSlice) => {
            refuse(rt, obj, &endpointslice::validate_create(obj))?;
            endpointslice::storage_form(obj);
        }
        Some(Builtin::Plain) => {
            refuse(
                rt,
                obj,
                &meta::validate(obj, NameRule::Subdomain, true, true),
            )?;
        }
        Some(Builtin::Secret) => {
            let mut errors = meta::validate(obj, NameRule::Subdomain, true, true);
            errors.extend(secret::validate(obj));
            refuse(rt, obj, &errors)?;
            refuse(rt, obj, &meta::validate_path_segment(obj))?;
            secret::warnings(obj)
                .into_iter()
                .for_each(crate::warning::add);
            return Ok(());
        }
        Some(Builtin::Job) => {
            job::prepare_create(obj);
            let mut errors = meta::validate(obj, NameRule::Subdomain, true, true);
            errors.extend(job::validate(obj));
            refuse(rt, obj, &errors)?;
        }
        Some(Builtin::WebhookConfiguration { .. }) => {
            let mut errors = meta::validate(obj, NameRule::Subdomain, false, false);
            errors.extend(webhook_configuration::validate(obj));
            refuse(rt, obj, &errors)?;
        }
        // Custom resources, Events, Leases: `kinds`.
        None => return Ok(()),
    }
    refuse(rt, obj, &meta::validate_path_segment(obj))
}

/// The registry's update steps for `new` replacing `old` (already merged by the lifecycle):
/// `PrepareForUpdate`, allocations, `ValidateUpdate`.
pub fn prepare_update(
    store: &Store,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
    part: Part,
) -> Result<(), ApiError> {
    if part == Part::Status {
        if builtin(rt) == Some(Builtin::Job) {
            return refuse(rt, new, &job::validate_status_update(new, old));
        }
        return Ok(());
    }
    match builtin(rt) {
        Some(Builtin::Namespace) => {
            namespace::prepare_update(old, new);
            refuse(rt, new, &meta::validate_update(new, old, true))
        }
        Some(Builtin::Service) => service::prepare_update(store, old, new),
        Some(Builtin::EndpointSlice) => {
            refuse(rt, new, &endpointslice::validate_update(new, old))?;
            endpointslice::storage_form(new);
            Ok(())
        }
        Some(Builtin::Plain) => refuse(rt, new, &meta::validate_update(new, old, true)),
        Some(Builtin::Secret) => {
            let mut errors = meta::validate_update(new, old, true);
            errors.extend(secret::validate_update(new, old));
            refuse(rt, new, &errors)?;
            secret::warnings(new)
                .into_iter()
                .for_each(crate::warning::add);
            Ok(())
        }
        Some(Builtin::Job) => {
            let mut errors = meta::validate_update(new, old, true);
            errors.extend(job::validate_update(new, old));
            refuse(rt, new, &errors)
        }
        Some(Builtin::WebhookConfiguration { .. }) => {
            let mut errors = meta::validate_update(new, old, false);
            errors.extend(webhook_configuration::validate(new));
            refuse(rt, new, &errors)
        }
        // Custom resources, Events, Leases: `kinds`.
        None => Ok(()),
    }
}

/// What the type's registry does instead of the generic DELETE of `current`: the object to
/// store (marked for deletion, or unchanged), or None for the generic deletion.
pub fn delete(rt: &ResourceType, current: &Value, now: &str) -> Option<Value> {
    if rt.special == Special::CustomResourceDefinition {
        return (!object::is_deleting(current)).then(|| crate::crd::terminate(current, now));
    }
    namespace::terminate(rt, current, now)
}

/// Whether `obj`, marked for deletion, must stay: finalizers in `metadata` (any type) or in
/// `spec` (Namespaces).
pub fn held_by_finalizers(rt: &ResourceType, obj: &Value) -> bool {
    crate::object::has_finalizers(obj)
        || (builtin(rt) == Some(Builtin::Namespace) && namespace::held_by_spec(obj))
}

/// What a fresh cluster holds before any request: the default namespaces and the
/// `default/kubernetes` Service of an API server listening on `port`.
pub fn seed(store: &mut Store, port: u16) {
    let now = object::now();
    for name in crate::builtin::DEFAULT_NAMESPACES {
        let body = serde_json::json!({"metadata": {"name": name}});
        seed_one(store, ("", "v1", "namespaces"), None, body, &now);
    }
    let body = service::kubernetes(&store.service_cidr, port);
    seed_one(store, ("", "v1", "services"), Some("default"), body, &now);
}

fn seed_one(
    store: &mut Store,
    (group, version, plural): (&str, &str, &str),
    namespace: Option<&str>,
    mut body: Value,
    now: &str,
) {
    let Some(rt) = store.registry.lookup(group, version, plural) else {
        return;
    };
    decode_defaults(&rt, &mut body);
    crate::fields::record_server_create(store, &rt, &mut body, now);
    let created = crate::lifecycle::prepare_create(&rt, namespace, body, now)
        .and_then(|mut obj| prepare_create(store, &rt, &mut obj).map(|()| obj));
    match created {
        Ok(obj) => {
            store.put(&rt.group_resource(), obj);
        }
        Err(e) => tracing::error!(resource = plural, error = e.message, "seeding failed"),
    }
}
