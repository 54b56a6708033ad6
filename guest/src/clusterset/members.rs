//! Each member as the pass reads it: its cluster id, and its objects decoded.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::export::{self, Export};
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
}

/// A member's cluster id: its `cluster.clusterset.k8s.io` ClusterProperty when that is a valid
/// DNS-1123 label (it labels slices), else its name.
pub fn cluster_id(cluster: &str, property: Option<&str>) -> String {
    match property {
        Some(p) if names::dns1123_label(p).is_empty() => p.to_string(),
        _ => cluster.to_string(),
    }
}

/// Every member decoded; `Err` names the member and the object that is not JSON, or the
/// members that share a cluster id.
pub fn read(read: &ClustersetRead) -> Result<Vec<Member<'_>>, String> {
    let mut ids: BTreeMap<String, &str> = BTreeMap::new();
    let mut out = Vec::with_capacity(read.members.len());
    for m in &read.members {
        let id = cluster_id(&m.cluster, m.cluster_property.as_deref());
        if let Some(other) = ids.insert(id.clone(), &m.cluster) {
            return Err(format!(
                "clusters {other} and {} share the cluster id {id}",
                m.cluster
            ));
        }
        let seen = match &m.state {
            ClustersetMemberState::Unreadable(why) => Seen::Unreadable(why),
            ClustersetMemberState::Readable(o) => {
                let ctx = |e: String| format!("cluster {}: {e}", m.cluster);
                let export = o
                    .service_export
                    .as_deref()
                    .map(|e| export::read(e, o.service.as_deref()))
                    .transpose()
                    .map_err(ctx)?;
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
        });
    }
    Ok(out)
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
                known.insert(source.to_string());
            }
        }
    }
    known
}
