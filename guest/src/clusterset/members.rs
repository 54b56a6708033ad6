//! Each member as the pass reads it: its cluster id, and its objects decoded.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::export::{self, Export, Validity};
use super::{import, slices};
use crate::names;
use crate::{ClustersetMemberState, ClustersetRead, EndpointSlice, ImportedSlice};

/// What a readable member holds, decoded.
pub struct Readable<'a> {
    /// Its ServiceExport and Service.
    pub export: Option<Export>,
    pub slices: &'a [EndpointSlice],
    pub import: Option<Value>,
    pub derived: Option<Value>,
    pub imported: &'a [ImportedSlice],
}

pub enum Seen<'a> {
    Readable(Box<Readable<'a>>),
    Unreadable(&'a str),
}

pub struct Member<'a> {
    pub cluster: &'a str,
    pub id: String,
    pub seen: Seen<'a>,
    /// Unreadable for longer than the stale timeout: what it exported is withdrawn.
    pub stale: bool,
}

/// The longest cluster id (KEP-2149).
pub const CLUSTER_ID_MAX: usize = 128;

/// A member's cluster id: its `cluster.clusterset.k8s.io` ClusterProperty when that is a valid
/// DNS-1123 subdomain of at most 128 characters (KEP-2149), else its name.
pub fn cluster_id(cluster: &str, property: Option<&str>) -> String {
    match property {
        Some(p) if p.len() <= CLUSTER_ID_MAX && names::dns1123_subdomain(p).is_empty() => {
            p.to_string()
        }
        _ => cluster.to_string(),
    }
}

/// Every member decoded, and the cluster ids two members or more share (those members' exports
/// are invalid: [`Validity::DuplicateClusterId`]); `Err` names the member and the object that
/// is not JSON.
pub fn read(read: &ClustersetRead) -> Result<(Vec<Member<'_>>, BTreeSet<String>), String> {
    let ids: Vec<String> = read
        .members
        .iter()
        .map(|m| cluster_id(&m.cluster, m.cluster_property.as_deref()))
        .collect();
    let mut sharing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (m, id) in read.members.iter().zip(&ids) {
        sharing.entry(id).or_default().push(&m.cluster);
    }
    let duplicated: BTreeSet<String> = sharing
        .iter()
        .filter(|(_, clusters)| clusters.len() > 1)
        .map(|(id, _)| id.to_string())
        .collect();
    let mut out = Vec::with_capacity(read.members.len());
    for (m, id) in read.members.iter().zip(ids.iter().cloned()) {
        let stale = matches!(m.state, ClustersetMemberState::Unreadable(_))
            && read
                .stale_timeout_ms
                .is_some_and(|timeout| m.unreadable_ms > timeout);
        let seen = match &m.state {
            ClustersetMemberState::Unreadable(why) => Seen::Unreadable(why),
            ClustersetMemberState::Readable(o) => {
                let ctx = |e: String| format!("cluster {}: {e}", m.cluster);
                let mut export = o
                    .service_export
                    .as_deref()
                    .map(|e| export::read(e, o.service.as_deref()))
                    .transpose()
                    .map_err(ctx)?;
                if let Some(Validity::Valid(p)) = export.as_mut().map(|e| &mut e.validity)
                    && p.ip_families.is_empty()
                {
                    // No `ipFamilies` on the Service: the families its endpoints are published in.
                    let name = read.name.as_str();
                    p.ip_families = export::slice_families(
                        o.slices
                            .iter()
                            .filter(|s| slices::is_source(s, &read.namespace, name))
                            .map(|s| s.address_type.as_str()),
                    );
                }
                if let Some(e) = export.as_mut().filter(|_| duplicated.contains(&id)) {
                    e.validity = Validity::DuplicateClusterId(format!(
                        "clusters {} share the cluster id {id}",
                        sharing[id.as_str()].join(", ")
                    ));
                }
                let import = o
                    .service_import
                    .as_deref()
                    .map(|t| export::object(t, "the ServiceImport"))
                    .transpose()
                    .map_err(ctx)?;
                let derived = o
                    .derived_service
                    .as_deref()
                    .map(|t| export::object(t, "the derived Service"))
                    .transpose()
                    .map_err(ctx)?;
                Seen::Readable(Box::new(Readable {
                    export,
                    slices: &o.slices,
                    import,
                    derived,
                    imported: &o.imported_slices,
                }))
            }
        };
        out.push(Member {
            cluster: &m.cluster,
            id,
            seen,
            stale,
        });
    }
    Ok((out, duplicated))
}

/// The cluster ids that readable members show as exporters: listed by a ServiceImport of ours,
/// or the source of an imported slice of ours.
pub fn known_exporters(members: &[Member<'_>], namespace: &str, name: &str) -> BTreeSet<String> {
    let mut known = BTreeSet::new();
    for m in members {
        let Seen::Readable(r) = &m.seen else {
            continue;
        };
        if let Some(i) = r.import.as_ref().filter(|i| import::is_ours(i)) {
            known.extend(import::status_clusters(i));
        }
        for held in r.imported {
            if slices::is_ours(&held.slice, namespace, name)
                && let Some(source) = slices::source_cluster(&held.slice)
            {
                // The label is the id, or its short form for an id too long for a label.
                let id = members
                    .iter()
                    .find(|m| slices::source_label(&m.id) == source)
                    .map_or(source, |m| m.id.as_str());
                known.insert(id.to_string());
            }
        }
    }
    known
}
