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
//! Each type lives in its own module; types without one are stored as sent.

pub mod namespace;

use serde_json::Value;

use crate::lifecycle::Part;
use crate::registry::{ResourceType, Special};
use crate::status::ApiError;
use crate::store::Store;

/// The built-in types with behaviour of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    Namespace,
}

fn builtin(rt: &ResourceType) -> Option<Builtin> {
    if rt.defined_by.is_some() {
        return None;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") if rt.special == Special::Namespace => Some(Builtin::Namespace),
        _ => None,
    }
}

/// The defaults a real server fills in when it decodes `obj` as `rt`. Write paths call this
/// right after decoding a body or computing a patched object, before anything else looks at it.
pub fn decode_defaults(rt: &ResourceType, obj: &mut Value) {
    match builtin(rt) {
        Some(Builtin::Namespace) => namespace::decode_defaults(obj),
        None => {}
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

/// Admission of a DELETE of the object `name`.
pub fn admit_delete(rt: &ResourceType, name: &str) -> Result<(), ApiError> {
    namespace::admit_delete(rt, name)
}

/// The registry's create steps for a new object whose generic metadata is set.
pub fn prepare_create(_store: &Store, rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    match builtin(rt) {
        Some(Builtin::Namespace) => namespace::prepare_create(obj),
        None => {}
    }
    Ok(())
}

/// The registry's update steps for `new` replacing `old` (already merged by the lifecycle).
pub fn prepare_update(
    _store: &Store,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
    part: Part,
) -> Result<(), ApiError> {
    if part == Part::Status {
        return Ok(());
    }
    match builtin(rt) {
        Some(Builtin::Namespace) => namespace::prepare_update(old, new),
        None => {}
    }
    Ok(())
}

/// What the type's registry does instead of the generic DELETE of `current`: the object to
/// store (marked for deletion, or unchanged), or None for the generic deletion.
pub fn delete(rt: &ResourceType, current: &Value, now: &str) -> Option<Value> {
    namespace::terminate(rt, current, now)
}

/// Whether `obj`, marked for deletion, must stay: finalizers in `metadata` (any type) or in
/// `spec` (Namespaces).
pub fn held_by_finalizers(rt: &ResourceType, obj: &Value) -> bool {
    crate::object::has_finalizers(obj)
        || (builtin(rt) == Some(Builtin::Namespace) && namespace::held_by_spec(obj))
}

/// What a fresh cluster holds before any request: the default namespaces.
pub fn seed(store: &mut Store) {
    let Some(rt) = store.registry.lookup("", "v1", "namespaces") else {
        return;
    };
    let now = crate::object::now();
    for name in crate::builtin::DEFAULT_NAMESPACES {
        let body = serde_json::json!({"metadata": {"name": name}});
        let Ok(mut ns) = crate::lifecycle::prepare_create(&rt, None, body, &now) else {
            continue;
        };
        namespace::prepare_create(&mut ns);
        store.put(&rt.group_resource(), ns);
    }
}
