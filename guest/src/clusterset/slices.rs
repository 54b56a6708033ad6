//! The imported EndpointSlices: in every member, one per source slice of each valid export,
//! labelled for the Multi-Cluster Services API and for the derived Service, named
//! deterministically within 63 bytes; the ones of ours no export asks for any longer go, except
//! those of an unreadable member's exports.

use std::collections::{BTreeMap, BTreeSet};

use super::owner::IMPORT_UID_ANNOTATION;
use crate::filter::{
    CLUSTERSET_MANAGER, DISPATCH_MANAGER, IMPORT_MANAGER, MANAGED_BY_LABEL, MC_SERVICE_NAME_LABEL,
    MC_SOURCE_CLUSTER_LABEL, SERVICE_NAME_LABEL, fnv1a64,
};
use crate::{DeletePrecondition, EndpointPort, EndpointSlice, ImportedSlice};

const MAX_NAME: usize = 63;
/// `-` and 16 hex digits.
const HASH_SUFFIX_LEN: usize = 17;

fn label<'a>(labels: &'a [(String, String)], key: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The managed-by value of Kubernetes' EndpointSlice controller.
pub const KUBERNETES_MANAGER: &str = "endpointslice-controller.k8s.io";
/// The label (value `true`) that makes a slice another controller (or a user) manages a source
/// slice, e.g. a selectorless Service's own slices.
pub const SOURCE_OPT_IN_LABEL: &str = "multicluster.karmada.io/clusterset-source";

/// Whether a slice an exporter holds is one of its Service's own: in the namespace, labelled with
/// the Service's name, managed by Kubernetes' EndpointSlice controller or opted in
/// ([`SOURCE_OPT_IN_LABEL`]), and not a copy (no copy's managed-by value, no source-cluster
/// label).
pub fn is_source(slice: &EndpointSlice, namespace: &str, name: &str) -> bool {
    let managed_by = label(&slice.labels, MANAGED_BY_LABEL);
    slice.namespace == namespace
        && label(&slice.labels, SERVICE_NAME_LABEL) == Some(name)
        && (managed_by == Some(KUBERNETES_MANAGER)
            || label(&slice.labels, SOURCE_OPT_IN_LABEL) == Some("true"))
        && !matches!(
            managed_by,
            Some(DISPATCH_MANAGER | IMPORT_MANAGER | CLUSTERSET_MANAGER)
        )
        && label(&slice.labels, MC_SOURCE_CLUSTER_LABEL).is_none()
}

/// Whether a slice a member holds is one of ours for `namespace/name`: only those are ever
/// changed or deleted.
pub fn is_ours(slice: &EndpointSlice, namespace: &str, name: &str) -> bool {
    slice.namespace == namespace
        && label(&slice.labels, MANAGED_BY_LABEL) == Some(CLUSTERSET_MANAGER)
        && label(&slice.labels, MC_SERVICE_NAME_LABEL) == Some(name)
}

/// `<name>-<cluster id>-<hash>` cut to fit 63 bytes; the hash (FNV-1a of the cluster id and the
/// source slice's name) keeps it unique and stable.
pub fn name(name: &str, cluster_id: &str, source: &str) -> String {
    let hash = fnv1a64(format!("{cluster_id}/{source}").as_bytes());
    let mut prefix = format!("{name}-{cluster_id}");
    let room = MAX_NAME - HASH_SUFFIX_LEN;
    if prefix.len() > room {
        let mut cut = room;
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix.truncate(cut);
    }
    let prefix = prefix.trim_end_matches(['-', '.']);
    format!("{prefix}-{hash:016x}")
}

/// The value of `multicluster.kubernetes.io/source-cluster` for a cluster id: the id when it is
/// a valid label value (at most 63 characters), else its first 46 characters (trailing `-` and
/// `.` trimmed), `-`, and the 16 hex digits of the FNV-1a (64-bit) hash of the whole id.
pub fn source_label(cluster_id: &str) -> String {
    if crate::names::label_value(cluster_id).is_empty() {
        return cluster_id.to_string();
    }
    let hash = fnv1a64(cluster_id.as_bytes());
    let mut cut = (MAX_NAME - HASH_SUFFIX_LEN).min(cluster_id.len());
    while !cluster_id.is_char_boundary(cut) {
        cut -= 1;
    }
    let prefix = cluster_id[..cut].trim_end_matches(['-', '.']);
    format!("{prefix}-{hash:016x}")
}

/// The ports of an exporter's slice its export contributes to the import: those whose name is
/// a key of `contributed` (the exporter's Service port name, empty for an unnamed port), named
/// as the import's port (its value).
pub fn contributed_ports(
    ports: &[EndpointPort],
    contributed: &BTreeMap<String, String>,
) -> Vec<EndpointPort> {
    ports
        .iter()
        .filter_map(|p| {
            let import_name = contributed.get(p.name.as_deref().unwrap_or_default())?;
            Some(EndpointPort {
                name: if import_name.is_empty() {
                    None
                } else {
                    Some(import_name.clone())
                },
                ..p.clone()
            })
        })
        .collect()
}

/// The imported slice made from `source`, an exporter's slice, with the ports its export
/// contributes (`contributed`, see [`contributed_ports`]).
pub fn imported(
    source: &EndpointSlice,
    name_: &str,
    cluster_id: &str,
    derived: &str,
    contributed: &BTreeMap<String, String>,
) -> EndpointSlice {
    EndpointSlice {
        name: name(name_, cluster_id, &source.name),
        namespace: source.namespace.clone(),
        // In key order.
        labels: vec![
            (MANAGED_BY_LABEL.into(), CLUSTERSET_MANAGER.into()),
            (SERVICE_NAME_LABEL.into(), derived.into()),
            (MC_SERVICE_NAME_LABEL.into(), name_.into()),
            (MC_SOURCE_CLUSTER_LABEL.into(), source_label(cluster_id)),
        ],
        annotations: Vec::new(),
        address_type: source.address_type.clone(),
        endpoints: source.endpoints.clone(),
        ports: contributed_ports(&source.ports, contributed),
    }
}

/// `desired` as a member applies it: with its ServiceImport's uid (`owner`) as the annotation
/// [`IMPORT_UID_ANNOTATION`] when it has one.
fn owned(desired: &EndpointSlice, owner: Option<&str>) -> EndpointSlice {
    let mut out = desired.clone();
    if let Some(uid) = owner {
        out.annotations
            .push((IMPORT_UID_ANNOTATION.into(), uid.to_string()));
    }
    out
}

/// Whether a held slice is `desired` owned by `owner` (maps compared in any order).
fn same(held: &EndpointSlice, desired: &EndpointSlice, owner: Option<&str>) -> bool {
    let sorted = |m: &[(String, String)]| {
        let mut v = m.to_vec();
        v.sort();
        v
    };
    let mut annotations = desired.annotations.clone();
    if let Some(uid) = owner {
        annotations.push((IMPORT_UID_ANNOTATION.into(), uid.to_string()));
    }
    held.namespace == desired.namespace
        && sorted(&held.labels) == sorted(&desired.labels)
        && sorted(&held.annotations) == sorted(&annotations)
        && held.address_type == desired.address_type
        && held.endpoints == desired.endpoints
        && held.ports == desired.ports
}

/// What one member must write of the imported slices.
#[derive(Debug, Default, PartialEq)]
pub struct Writes {
    pub apply: Vec<EndpointSlice>,
    pub delete: Vec<DeletePrecondition>,
    pub notes: Vec<String>,
}

/// The writes that make `held` (a member's imported slices) `desired`, owned by the member's
/// ServiceImport of uid `owner` when it has one, keeping ours from a source cluster in `kept`.
pub fn writes(
    held: &[ImportedSlice],
    desired: &[EndpointSlice],
    owner: Option<&str>,
    kept: &BTreeSet<String>,
    namespace: &str,
    name: &str,
) -> Writes {
    let mut out = Writes::default();
    for want in desired {
        match held.iter().find(|h| h.slice.name == want.name) {
            Some(h) if !is_ours(&h.slice, namespace, name) => out.notes.push(format!(
                "EndpointSlice {namespace}/{} exists and is not ours: left as it is",
                want.name
            )),
            Some(h) if same(&h.slice, want, owner) => {}
            _ => out.apply.push(owned(want, owner)),
        }
    }
    let wanted: BTreeSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
    for h in held {
        if !is_ours(&h.slice, namespace, name) || wanted.contains(h.slice.name.as_str()) {
            continue;
        }
        if label(&h.slice.labels, MC_SOURCE_CLUSTER_LABEL)
            .is_some_and(|s| kept.iter().any(|k| source_label(k) == s))
        {
            continue;
        }
        if h.uid.is_empty() {
            out.notes.push(format!(
                "EndpointSlice {namespace}/{} has no uid to delete it on: left as it is",
                h.slice.name
            ));
            continue;
        }
        out.delete.push(DeletePrecondition {
            name: h.slice.name.clone(),
            uid: h.uid.clone(),
            resource_version: h.resource_version.clone(),
        });
    }
    out
}

/// The source cluster id a slice of ours names.
pub fn source_cluster(slice: &EndpointSlice) -> Option<&str> {
    label(&slice.labels, MC_SOURCE_CLUSTER_LABEL)
}
