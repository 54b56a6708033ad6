//! Field management as kube-apiserver does it with structured-merge-diff and apimachinery's
//! fieldmanager: `metadata.managedFields` on every object written, and server-side apply with
//! real ownership.
//!
//! Where it sits in a write (the order matters, as in kube-apiserver):
//!
//! 1. the body is decoded, or the patch applied to the live object;
//! 2. decode-time defaults are set (`crate::types::decode_defaults`, owned elsewhere): the
//!    fields they set count as written by the request, as in the real server where defaulting
//!    happens while decoding;
//! 3. **field tracking** ([`track`]): the fields the write added or changed become the
//!    writer's (an `Update` entry), other managers lose what it changed or removed;
//! 4. the registry: server-set metadata, status subresource rules, allocation, validation;
//!    nothing it sets is owned by anyone (a Service's allocated `clusterIP`);
//! 5. [`record`] stores the entries, keeping the live ones when nothing but their times
//!    changed, so that a write that changes nothing stays a no-op.
//!
//! Server-side apply ([`apply()`]) replaces steps 1 and 3: the applied configuration is merged
//! into the live object by the type's shape, ownership moves (or conflicts), and step 2 then
//! defaults the merged object (`structuredMergeManager.Apply` defaults after merging).
//!
//! The work is proportional to the object written (and, for custom resources, its schema,
//! whose shape is cached per CRD version).

mod apply;
mod builtin;
mod conflict;
mod fieldsv1;
mod managed;
mod merge;
mod options;
mod path;
mod set;
mod shape;
mod typed;
mod update;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::Value;

use crate::lifecycle::Part;
use crate::registry::{GroupResource, ResourceType};
use crate::store::Store;
pub use apply::Apply;
pub use options::Options;
use set::FieldSet;
use shape::Shape;

/// What a write does with `managedFields`.
#[derive(Debug, Clone, PartialEq)]
pub enum Tracking {
    /// An update, create or non-apply patch by this manager: track what it changes.
    Update(String),
    /// The object comes from [`apply()`], its `managedFields` already worked out.
    Applied,
}

/// What field tracking knows of a type.
pub struct TypeContext {
    shape: Arc<Shape>,
    ignored_main: FieldSet,
    ignored_status: FieldSet,
    api_version: String,
    kind: String,
}

impl TypeContext {
    /// The fields a write of `part` cannot change (the strategy's reset fields).
    fn ignored(&self, part: Part) -> &FieldSet {
        match part {
            Part::Main => &self.ignored_main,
            Part::Status => &self.ignored_status,
        }
    }
}

/// `managedFields[].subresource` of a write to `part`.
fn subresource(part: Part) -> &'static str {
    match part {
        Part::Main => "",
        Part::Status => "status",
    }
}

fn top_level(fields: &[&str]) -> FieldSet {
    let mut set = FieldSet::new();
    for name in fields {
        set.insert(&[path::field(name)]);
    }
    set
}

/// The type context of `rt`: a built-in type's, or a custom resource's from its CRD.
pub fn context(store: &Store, rt: &ResourceType) -> Option<TypeContext> {
    let (shape, reset_main, reset_status) = match builtin::lookup(&rt.group, &rt.kind) {
        Some(b) => (b.shape.clone(), b.reset_main, b.reset_status),
        None => {
            let reset_main: &[&str] = if rt.status_subresource {
                &["status"]
            } else {
                &[]
            };
            (custom_resource_shape(store, rt)?, reset_main, &["spec"][..])
        }
    };
    Some(TypeContext {
        shape,
        ignored_main: top_level(reset_main),
        ignored_status: top_level(reset_status),
        api_version: rt.api_version(),
        kind: rt.kind.clone(),
    })
}

/// The context of a built-in type.
fn builtin_context(group: &str, kind: &str, api_version: &str) -> TypeContext {
    let b = builtin::lookup(group, kind).expect("a built-in type");
    TypeContext {
        shape: b.shape.clone(),
        ignored_main: top_level(b.reset_main),
        ignored_status: top_level(b.reset_status),
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    }
}

/// Custom resource shapes by CRD name, CRD resourceVersion and version.
type ShapeCache = HashMap<(String, String, String), Arc<Shape>>;

/// The shape of a custom resource version, from its CRD's schema (cached by CRD
/// resourceVersion).
fn custom_resource_shape(store: &Store, rt: &ResourceType) -> Option<Arc<Shape>> {
    static CACHE: LazyLock<Mutex<ShapeCache>> = LazyLock::new(Default::default);
    let name = rt.defined_by.as_deref()?;
    let gr = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let crd = store.get(&gr, "", name)?;
    let key = (
        name.to_owned(),
        crate::object::resource_version(&crd).to_owned(),
        rt.version.clone(),
    );
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(shape) = cache.get(&key) {
        return Some(shape.clone());
    }
    let versions = crd["spec"]["versions"].as_array()?;
    let version = versions.iter().find(|v| v["name"] == rt.version.as_str())?;
    let shape = Arc::new(shape::custom_resource(
        &version["schema"]["openAPIV3Schema"],
    ));
    if cache.len() > 64 {
        cache.clear();
    }
    cache.insert(key, shape.clone());
    Some(shape)
}

/// The `managedFields` a write of `candidate` over `live` (None: a create) leaves, taken out
/// of `candidate` (see [`Tracking`]); store them with [`record`].
pub fn track(
    ctx: Option<&TypeContext>,
    part: Part,
    tracking: &Tracking,
    live: Option<&Value>,
    candidate: &mut Value,
    now: &str,
) -> Option<Value> {
    match (tracking, ctx) {
        (Tracking::Update(manager), Some(ctx)) => {
            update::track(ctx, part, live, candidate, manager, now)
        }
        _ => update::take_managed_fields(candidate),
    }
}

/// Stores `managed_fields` (from [`track`]) in `result`, the object a write of `current`
/// (None: a create) produced.
pub fn record(current: Option<&Value>, result: &mut Value, managed_fields: Option<Value>) {
    update::record(current, result, managed_fields);
}

/// Records the status the server itself wrote on the CustomResourceDefinition `crd` (the
/// naming and establishing controllers, as manager `kube-apiserver` through the status
/// subresource): `previous` is the status the CRD had before, `crd` carries the new one.
pub fn record_server_status(previous: &Value, crd: &mut Value, now: &str) {
    if *previous == crd["status"] {
        return;
    }
    let ctx = builtin_context(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
    );
    let mut before = crd.clone();
    before["status"] = previous.clone();
    let mut written = crd.clone();
    let managed = update::track(&ctx, Part::Status, Some(&before), &mut written, SERVER, now);
    update::record(None, crd, managed);
}

/// Records an object the server creates itself (the default namespaces) as written by
/// `kube-apiserver`.
pub fn record_server_create(store: &Store, rt: &ResourceType, obj: &mut Value, now: &str) {
    let ctx = context(store, rt);
    let tracking = Tracking::Update(SERVER.to_owned());
    let managed = track(ctx.as_ref(), Part::Main, &tracking, None, obj, now);
    record(None, obj, managed);
}

/// The manager of the server's own writes (the apiserver's loopback client User-Agent).
const SERVER: &str = "kube-apiserver";

/// The object a server-side apply makes (see [`Apply`]), its `managedFields` set.
pub fn apply(ctx: &TypeContext, request: &Apply<'_>) -> Result<Value, crate::status::ApiError> {
    apply::apply(ctx, request)
}

/// The manager of a write (see [`options`]).
pub fn manager(
    options: Options,
    field_manager: Option<&str>,
    force: Option<&str>,
    user_agent: Option<&str>,
) -> Result<String, crate::status::ApiError> {
    options::manager(options, field_manager, force, user_agent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_status_the_crd_controllers_write_is_kube_apiservers_through_status() {
        let creator = json!({"manager": "unknown", "operation": "Update",
            "apiVersion": "apiextensions.k8s.io/v1", "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:group": {}}}});
        let previous = json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": ["v1"]});
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "xs.example.com", "managedFields": [creator.clone()]},
            "spec": {"group": "example.com"},
            "status": {"conditions": [{"type": "Established", "status": "True"}],
                "acceptedNames": {"plural": "xs", "kind": "X"}, "storedVersions": ["v1"]}});
        let now = "2026-01-01T00:00:01Z";
        record_server_status(&previous, &mut crd, now);
        let entries = crd["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0], creator,
            "the creator keeps its fields (and, older, comes first)"
        );
        assert_eq!(
            entries[1],
            json!({"manager": "kube-apiserver", "operation": "Update",
                "apiVersion": "apiextensions.k8s.io/v1", "time": now, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {
                    "f:acceptedNames": {"f:kind": {}, "f:plural": {}},
                    "f:conditions": {"k:{\"type\":\"Established\"}": {
                        ".": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}}},
                "subresource": "status"}),
            "only what changed (not the storedVersions the strategy set) is the server's"
        );
        let unchanged = crd.clone();
        record_server_status(&unchanged["status"], &mut crd, now);
        assert_eq!(crd, unchanged, "an unchanged status records nothing");
    }
}
