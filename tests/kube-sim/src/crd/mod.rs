//! CustomResourceDefinitions and the custom resources they define, modelled on
//! apiextensions-apiserver:
//!
//! - `definition`: the CRD object (defaults, status, the resource types it serves), with
//!   `structural`: whether each version's schema is one the apiserver accepts;
//! - `controllers`-like step [`sync`]: serving what a stored CRD defines and establishing it,
//!   as the naming and establishing controllers do;
//! - `resource`: the custom resource strategy (decode, validate, warnings), built on
//!   `schema` (the structural schema), `prune`, `defaults`, `validate` (kube-openapi's
//!   schema validator), `formats` and `listtype`; the metadata and finalizer rules are
//!   `types::meta` and `types::finalizers`.

mod defaults;
mod definition;
mod formats;
mod listtype;
mod prune;
pub mod resource;
mod schema;
mod structural;
mod validate;

pub use definition::{CLEANUP_FINALIZER, prepare, resource_types, terminate};

use serde_json::Value;

use crate::fields;
use crate::object;
use crate::registry::GroupResource;
use crate::store::Store;

/// After a write of the CustomResourceDefinition `crd`: serve what it defines (or, when
/// `removed`, stop serving it and drop its objects), and give it the Established status the
/// apiserver's controllers converge to (a second write, as theirs is).
pub fn sync(store: &mut Store, crd: &Value, removed: bool) {
    let name = object::name(crd);
    if removed {
        let dropped = store.registry.undefine(name);
        for gone in dropped.iter().map(|t| t.group_resource()) {
            if !store.registry.all().any(|t| t.group_resource() == gone) {
                store.drop_resource(&gone);
            }
        }
        return;
    }
    let types = resource_types(crd).unwrap_or_default();
    for served in &types {
        store.ensure_resource(&served.group_resource());
    }
    tracing::info!(
        crd = name,
        versions = types.len(),
        "serving custom resource"
    );
    store.registry.define(name, types);
    if !object::is_deleting(crd) {
        establish(store, crd);
    }
}

/// Writes the established status of `crd` unless it has it already, recorded in
/// `managedFields` as the controllers' write through the status subresource.
fn establish(store: &mut Store, crd: &Value) {
    let now = object::now();
    let status = definition::established_status(crd, &crd["status"], &now);
    if crd["status"] == status {
        return;
    }
    let mut established = crd.clone();
    established["status"] = status;
    fields::record_server_status(&crd["status"], &mut established, &now);
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    store.put(&crds, established);
}
