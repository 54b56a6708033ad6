//! The owner of what a member holds for an import: its ServiceImport. The derived Service and
//! the imported EndpointSlices name it in `metadata.ownerReferences`, so that Kubernetes'
//! garbage collector deletes them with it, also when the ServiceImport goes while the
//! controller is stopped. The reference is upstream's (mcs-api's reference controller names
//! its derived Service's ServiceImport the same way): not a controller reference, and
//! `blockOwnerDeletion: false`, so that writing it needs no permission on the import's
//! finalizers.

use serde_json::{Value, json};

use super::export::str_at;
use super::{GROUP_VERSION, import};

/// The annotation of an imported slice that carries its owner's uid: the caches keep a slice's
/// annotations but not its owner references, so this is how a pass tells a slice applied
/// before its ServiceImport had a uid from one that names it.
pub const IMPORT_UID_ANNOTATION: &str = "multicluster.karmada.io/service-import-uid";

/// A member's ServiceImport of ours, as read, with its uid.
#[derive(Clone, Debug, PartialEq)]
pub struct Owner {
    pub name: String,
    pub uid: String,
}

impl Owner {
    /// The owner a member's objects name: its ServiceImport as read, when it is ours and has a
    /// uid (a ServiceImport this pass creates has none yet: the next pass adds the owner).
    pub fn of(held: Option<&Value>) -> Option<Owner> {
        let held = held.filter(|i| import::is_ours(i))?;
        let uid = str_at(held, "/metadata/uid").filter(|u| !u.is_empty())?;
        Some(Owner {
            name: str_at(held, "/metadata/name")
                .unwrap_or_default()
                .to_string(),
            uid: uid.to_string(),
        })
    }

    /// The `metadata.ownerReferences` entry.
    pub fn reference(&self) -> Value {
        json!({
            "apiVersion": GROUP_VERSION,
            "kind": import::KIND,
            "name": self.name,
            "uid": self.uid,
            "blockOwnerDeletion": false,
        })
    }
}

/// Whether `existing` names every owner `desired` names (by uid); owners of others are kept.
pub fn owned_as(existing: &Value, desired: &Value) -> bool {
    let uids = |v: &Value| -> Vec<String> {
        v.pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| str_at(r, "/uid").map(str::to_string))
            .collect()
    };
    let have = uids(existing);
    uids(desired).iter().all(|u| have.contains(u))
}
