//! The Multi-Cluster Services API (`multicluster.x-k8s.io`, SIG Multicluster KEP-1645) over one
//! exported name across the clusterset (WIT `clusterset-decide`, docs/clusterset-rules.md): the
//! ServiceExports' conditions, and the ServiceImport, derived Service and imported
//! EndpointSlices every member holds.
//!
//! - `export.rs`: what a ServiceExport and its Service say;
//! - `resolve.rs`: the winner, the port union and the conflicts;
//! - `conditions.rs`: the ServiceExport conditions;
//! - `import.rs`, `derived.rs`, `slices.rs`: the objects a member holds;
//! - `owner.rs`: their owner, the member's ServiceImport;
//! - `members.rs`: cluster ids and what each member holds as read;
//! - `admission.rs`: the ServiceExport admission rule;
//! - `digest.rs`: SHA-256 and base32hex, for the derived Service's name.

pub mod admission;
pub mod conditions;
pub mod derived;
pub mod digest;
pub mod export;
pub mod import;
mod members;
pub mod owner;
pub mod resolve;
pub mod slices;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use serde_json::Value;

use crate::{
    ClustersetDecision, ClustersetMemberDecision, ClustersetRead, DeletePrecondition,
    EndpointSlice, ObjectWrite,
};
use members::{Member, Seen};
use resolve::Contributor;

/// The API group of ServiceExport and ServiceImport.
pub const GROUP: &str = "multicluster.x-k8s.io";
/// The version of the ServiceImports written.
pub const GROUP_VERSION: &str = "multicluster.x-k8s.io/v1beta1";
/// The ClusterProperty whose value is a member's cluster id.
pub const CLUSTER_ID_PROPERTY: &str = "cluster.clusterset.k8s.io";
/// Names the derived Service on a ServiceImport (the reference controller's annotation).
pub const DERIVED_SERVICE_ANNOTATION: &str = "multicluster.kubernetes.io/derived-service";
/// Our marker on ServiceImports and derived Services: the label of the MultiClusterService's
/// Service copies, with a value of its own, so neither API's rules touch the other's objects.
pub use crate::service::CREATED_BY_LABEL;
pub const CREATED_BY: &str = "mcs-policy-clusterset";

/// What the pass does with the ServiceImports.
enum Mode {
    /// Some readable export is valid: every readable member holds the import.
    Apply(Box<resolve::Resolved>),
    /// No readable export is valid, but an unreadable member exported the name: keep what is.
    Keep,
    /// Nothing exports the name: withdraw everything of ours.
    Withdraw,
}

/// See WIT `clusterset-decide`.
pub fn decide(read: &ClustersetRead) -> Result<ClustersetDecision, String> {
    let (members, duplicated) = members::read(read)?;
    let contributors: Vec<Contributor<'_>> = members
        .iter()
        .filter_map(|m| {
            let Seen::Readable(r) = &m.seen else {
                return None;
            };
            let export = r.export.as_ref()?;
            match &export.validity {
                export::Validity::Valid(p) if !export.deleting => Some(Contributor {
                    id: &m.id,
                    created: export.created,
                    properties: p,
                }),
                _ => None,
            }
        })
        .collect();
    // What members that cannot be read (for no longer than the stale timeout), or whose id is
    // shared, exported stays as it is.
    let mut unreadable: BTreeSet<String> = members
        .iter()
        .filter(|m| matches!(m.seen, Seen::Unreadable(_)) && !m.stale)
        .map(|m| m.id.clone())
        .collect();
    unreadable.extend(duplicated.iter().cloned());
    let known = members::known_exporters(&members, &read.namespace, &read.name);
    let kept_exporters: BTreeSet<String> = unreadable.intersection(&known).cloned().collect();

    let mode = match resolve::resolve(&contributors) {
        Some(r) => Mode::Apply(Box::new(r)),
        None if !kept_exporters.is_empty() => Mode::Keep,
        None => Mode::Withdraw,
    };
    let derived_name = digest::derived_name(&read.namespace, &read.name);
    let mut clusters: BTreeSet<String> = contributors.iter().map(|c| c.id.to_string()).collect();
    clusters.extend(kept_exporters.iter().cloned());
    let clusters: Vec<String> = clusters.into_iter().collect();

    let desired: Vec<EndpointSlice> = match &mode {
        Mode::Apply(resolved) => members
            .iter()
            .flat_map(|m| {
                let Seen::Readable(r) = &m.seen else {
                    return Vec::new();
                };
                let Some(ports) = resolved.contributed.get(&m.id).filter(|_| {
                    contributors
                        .iter()
                        .any(|c| c.id == m.id && imported(c, resolved))
                }) else {
                    return Vec::new();
                };
                r.slices
                    .iter()
                    .filter(|s| slices::is_source(s, &read.namespace, &read.name))
                    .map(|s| slices::imported(s, &read.name, &m.id, &derived_name, ports))
                    .collect()
            })
            .collect(),
        _ => Vec::new(),
    };

    let (winner, conflicts) = match &mode {
        Mode::Apply(r) => (Some(r.winner.as_str()), r.conflicts.as_slice()),
        _ => (None, &[][..]),
    };
    let outcome = conditions::Outcome {
        namespace: &read.namespace,
        name: &read.name,
        winner,
        conflicts,
    };
    let decisions = members
        .iter()
        .map(|m| {
            member(
                m,
                read,
                &mode,
                &outcome,
                &derived_name,
                &clusters,
                &desired,
                &unreadable,
            )
        })
        .collect();
    Ok(ClustersetDecision {
        members: decisions,
        exporters: contributors
            .iter()
            .map(|c| c.id.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        winner: winner.map(str::to_string),
        conflicts: conflicts.iter().map(|c| c.to_string()).collect(),
    })
}

#[allow(clippy::too_many_arguments)]
fn member(
    m: &Member<'_>,
    read: &ClustersetRead,
    mode: &Mode,
    outcome: &conditions::Outcome<'_>,
    derived_name: &str,
    clusters: &[String],
    desired: &[EndpointSlice],
    kept: &BTreeSet<String>,
) -> ClustersetMemberDecision {
    let mut decision = ClustersetMemberDecision {
        cluster: m.cluster.to_string(),
        cluster_id: m.id.clone(),
        export_conditions: None,
        service_import: ObjectWrite::Leave,
        service_import_status: None,
        derived_service: ObjectWrite::Leave,
        apply_slices: Vec::new(),
        slice_owner: None,
        delete_slices: Vec::new(),
        notes: Vec::new(),
    };
    let r = match &m.seen {
        Seen::Unreadable(why) if m.stale => {
            decision.notes.push(format!(
                "cluster {} has been unreadable for longer than the stale endpoint timeout, so nothing is written there and what it exported is withdrawn: {why}",
                m.cluster
            ));
            return decision;
        }
        Seen::Unreadable(why) => {
            decision.notes.push(format!(
                "cluster {} is unreadable, so nothing is written there and what it exported stays: {why}",
                m.cluster
            ));
            return decision;
        }
        Seen::Readable(r) => r,
    };
    let (ns, name) = (read.namespace.as_str(), read.name.as_str());
    if let Some(export) = r.export.as_ref().filter(|e| !e.deleting) {
        let imported = match mode {
            Mode::Apply(resolved) => resolved.contributed.get(&m.id).is_none_or(|ports| {
                !ports.is_empty()
                    || matches!(&export.validity, export::Validity::Valid(p) if p.ports.is_empty())
            }),
            _ => true,
        };
        decision.export_conditions =
            conditions::export_conditions(export, outcome, imported, &read.now);
    }
    let import_ours = r.import.as_ref().map(import::is_ours);
    let owner = owner::Owner::of(r.import.as_ref());
    let derived_ours = r.derived.as_ref().map(derived::is_ours);
    if import_ours == Some(false) {
        decision.notes.push(format!(
            "ServiceImport {ns}/{name} exists and is not ours: left as it is"
        ));
    }
    if derived_ours == Some(false) {
        decision.notes.push(format!(
            "Service {ns}/{derived_name} exists and is not ours: left as it is"
        ));
    }
    match mode {
        Mode::Apply(resolved) => {
            let p = &resolved.properties;
            let mut allocated = import::Allocated::default();
            let mut unreachable = None;
            if p.headless {
                // A headless import has no IP: no derived Service.
                if derived_ours == Some(true) {
                    decision.derived_service = delete(r.derived.as_ref(), &mut decision.notes);
                }
            } else {
                let want = derived::body(ns, name, derived_name, p, owner.as_ref());
                match (&r.derived, derived_ours) {
                    (Some(held), Some(true)) => {
                        if str_at_is_headless(held) {
                            // An API server never gives a headless Service an IP in place.
                            decision.derived_service = delete(Some(held), &mut decision.notes);
                        } else {
                            allocated = derived::allocated(held);
                            unreachable = derived::unreachable(&allocated, p, ns, name);
                            decision.notes.extend(unreachable.clone());
                            if !derived::same(held, &want) {
                                decision.derived_service = ObjectWrite::Apply(want.to_string());
                            }
                        }
                    }
                    (None, _) => decision.derived_service = ObjectWrite::Apply(want.to_string()),
                    _ => {}
                }
            }
            let derived_ref = (!p.headless).then_some(derived_name);
            let want = import::body(ns, name, p, derived_ref, &allocated);
            let ready = import::ready(p, &allocated, unreachable.as_deref(), derived_name);
            let status = |held| import::status(held, ns, name, clusters, &ready, &read.now);
            match (&r.import, import_ours) {
                (Some(held), Some(true)) => {
                    if !import::same(held, &want) {
                        decision.service_import = ObjectWrite::Apply(want.to_string());
                    }
                    decision.service_import_status = status(Some(held)).map(|s| s.to_string());
                }
                (None, _) => {
                    decision.service_import = ObjectWrite::Apply(want.to_string());
                    decision.service_import_status = status(None).map(|s| s.to_string());
                }
                _ => {}
            }
        }
        Mode::Keep => {}
        Mode::Withdraw => {
            if import_ours == Some(true) {
                decision.service_import = delete(r.import.as_ref(), &mut decision.notes);
            }
            if derived_ours == Some(true) {
                decision.derived_service = delete(r.derived.as_ref(), &mut decision.notes);
            }
        }
    }
    let owner_uid = owner.as_ref().map(|o| o.uid.as_str());
    let writes = slices::writes(r.imported, desired, owner_uid, kept, ns, name);
    decision.apply_slices = writes.apply;
    decision.slice_owner = owner.map(|o| o.reference().to_string());
    if derived_ours == Some(false) && !decision.apply_slices.is_empty() {
        // The imported slices name the derived Service: kube-proxy would send that Service's
        // traffic to them.
        decision.apply_slices.clear();
        decision.notes.push(format!(
            "imported EndpointSlices not written: Service {ns}/{derived_name} is not ours and they would serve it"
        ));
    }
    decision.delete_slices = writes.delete;
    decision.notes.extend(writes.notes);
    decision
}

/// Whether an export's endpoints are imported: it has no ports, or it contributes at least one
/// (see [`resolve::merge_ports`]).
fn imported(c: &Contributor<'_>, resolved: &resolve::Resolved) -> bool {
    c.properties.ports.is_empty()
        || resolved
            .contributed
            .get(c.id)
            .is_some_and(|ports| !ports.is_empty())
}

fn str_at_is_headless(service: &Value) -> bool {
    export::str_at(service, "/spec/clusterIP") == Some("None")
}

/// A deletion of `held` with its uid and resourceVersion as preconditions; without a uid it is
/// left (a deletion never goes without one).
fn delete(held: Option<&Value>, notes: &mut Vec<String>) -> ObjectWrite {
    let Some(held) = held else {
        return ObjectWrite::Leave;
    };
    let name = export::str_at(held, "/metadata/name").unwrap_or_default();
    match export::str_at(held, "/metadata/uid") {
        Some(uid) if !uid.is_empty() => ObjectWrite::Delete(DeletePrecondition {
            name: name.to_string(),
            uid: uid.to_string(),
            resource_version: export::str_at(held, "/metadata/resourceVersion")
                .unwrap_or_default()
                .to_string(),
        }),
        _ => {
            notes.push(format!("{name} has no uid to delete it on: left as it is"));
            ObjectWrite::Leave
        }
    }
}
