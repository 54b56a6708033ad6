//! Many exports, one ServiceImport: the oldest valid export wins (creationTimestamp, ties by
//! cluster id), the ports are the union of every export's (the winner's first, then each
//! export's new ports in precedence order; a port is the same port as one already in the union
//! when it has its name, else its number and protocol), and every property on which some export
//! differs from the winner is a conflict, reported with the Multi-Cluster Services API's
//! reasons. Each export contributes the ports whose protocol is that of the union's port.

use std::collections::BTreeMap;

use crate::time::Timestamp;

use super::export::{Port, Properties};

/// `Conflict` reasons, in the order they are checked and reported.
pub const PORT_CONFLICT: &str = "PortConflict";
pub const TYPE_CONFLICT: &str = "TypeConflict";
pub const SESSION_AFFINITY_CONFLICT: &str = "SessionAffinityConflict";
pub const SESSION_AFFINITY_CONFIG_CONFLICT: &str = "SessionAffinityConfigConflict";
pub const INTERNAL_TRAFFIC_POLICY_CONFLICT: &str = "InternalTrafficPolicyConflict";
pub const TRAFFIC_DISTRIBUTION_CONFLICT: &str = "TrafficDistributionConflict";
pub const LABELS_CONFLICT: &str = "LabelsConflict";
pub const ANNOTATIONS_CONFLICT: &str = "AnnotationsConflict";
/// An export's IP families share none with the other exports' (mcs-api's `IPFamilyConflict`).
pub const IP_FAMILY_CONFLICT: &str = "IPFamilyConflict";

/// One valid export taking part.
#[derive(Clone, Copy, Debug)]
pub struct Contributor<'a> {
    pub id: &'a str,
    pub created: Option<Timestamp>,
    pub properties: &'a Properties,
}

/// What the exports resolve to.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The cluster id of the winning export.
    pub winner: String,
    /// The winner's properties, with the union of every export's ports and the union of every
    /// export's IP families (the winner's first).
    pub properties: Properties,
    /// The conflict reasons, in check order, each once.
    pub conflicts: Vec<&'static str>,
    /// Per contributor (cluster id): the ports its export contributes to the import, as the
    /// name of its Service's port (the name its slices' ports carry) mapped to the name of the
    /// import's port (the name the imported slices' ports must carry).
    pub contributed: BTreeMap<String, BTreeMap<String, String>>,
}

/// Merges `ports` (one export's) into `union`: a port is the union's port of the same name,
/// else of the same number and protocol, else a new port, added only when it and every port
/// of the union are named (a Service of several ports names them all). Answers the ports this
/// export contributes: its port's name to the union port's name, for every port whose protocol
/// is the union port's.
pub fn merge_ports(union: &mut Vec<Port>, ports: &[Port]) -> BTreeMap<String, String> {
    let mut contributed = BTreeMap::new();
    for port in ports {
        let same = union.iter().position(|u| u.name == port.name).or_else(|| {
            union
                .iter()
                .position(|u| u.port == port.port && u.protocol == port.protocol)
        });
        match same {
            Some(i) => {
                // A Service port's number is only its front: the backends serve the slice's
                // port, which the import's port reaches by name. Another protocol is another
                // port.
                let u = &union[i];
                if u.protocol == port.protocol {
                    contributed.insert(port.name.clone(), u.name.clone());
                }
            }
            None if !port.name.is_empty() && union.iter().all(|u| !u.name.is_empty()) => {
                contributed.insert(port.name.clone(), port.name.clone());
                union.push(port.clone());
            }
            None => {}
        }
    }
    contributed
}

/// Precedence: oldest first; an export without a creationTimestamp after every one with;
/// ties by cluster id.
pub fn precedence(contributors: &mut [Contributor<'_>]) {
    contributors.sort_by(|a, b| {
        (a.created.is_none(), a.created, a.id).cmp(&(b.created.is_none(), b.created, b.id))
    });
}

/// Resolves the valid exports; `None` when there is none.
pub fn resolve(contributors: &[Contributor<'_>]) -> Option<Resolved> {
    let mut ordered = contributors.to_vec();
    precedence(&mut ordered);
    let winner = ordered.first()?;
    let mut properties = winner.properties.clone();
    let mut contributed = BTreeMap::new();
    for c in &ordered {
        let theirs = merge_ports(&mut properties.ports, &c.properties.ports);
        contributed.insert(c.id.to_string(), theirs);
        for family in &c.properties.ip_families {
            if !properties.ip_families.contains(family) {
                properties.ip_families.push(family.clone());
            }
        }
    }
    let mut conflicts = Vec::new();
    let w = winner.properties;
    for other in &ordered[1..] {
        let o = other.properties;
        let checks: [(&'static str, bool); 8] = [
            (PORT_CONFLICT, sorted(&o.ports) != sorted(&w.ports)),
            (TYPE_CONFLICT, o.headless != w.headless),
            (
                SESSION_AFFINITY_CONFLICT,
                o.session_affinity != w.session_affinity,
            ),
            (
                SESSION_AFFINITY_CONFIG_CONFLICT,
                o.session_affinity == w.session_affinity
                    && o.session_affinity_config != w.session_affinity_config,
            ),
            (
                INTERNAL_TRAFFIC_POLICY_CONFLICT,
                o.internal_traffic_policy != w.internal_traffic_policy,
            ),
            (
                TRAFFIC_DISTRIBUTION_CONFLICT,
                o.traffic_distribution != w.traffic_distribution,
            ),
            (LABELS_CONFLICT, o.exported_labels != w.exported_labels),
            (
                ANNOTATIONS_CONFLICT,
                o.exported_annotations != w.exported_annotations,
            ),
        ];
        for (reason, differs) in checks {
            if differs && !conflicts.contains(&reason) {
                conflicts.push(reason);
            }
        }
    }
    if families_disjoint(&ordered) {
        conflicts.push(IP_FAMILY_CONFLICT);
    }
    let order = |r: &&str| ORDER.iter().position(|o| o == r);
    conflicts.sort_by_key(order);
    Some(Resolved {
        winner: winner.id.to_string(),
        properties,
        conflicts,
        contributed,
    })
}

/// Whether some export's IP families share none with those of the other exports (exports whose
/// families are unknown take no part): its endpoints are unreachable through a ClusterSetIP of
/// the others' families, and theirs through one of its own.
fn families_disjoint(contributors: &[Contributor<'_>]) -> bool {
    let known: Vec<&[String]> = contributors
        .iter()
        .map(|c| c.properties.ip_families.as_slice())
        .filter(|f| !f.is_empty())
        .collect();
    known.iter().enumerate().any(|(i, mine)| {
        let others: Vec<&String> = known
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, f)| f.iter())
            .collect();
        !others.is_empty() && !mine.iter().any(|f| others.contains(&f))
    })
}

const ORDER: [&str; 9] = [
    PORT_CONFLICT,
    TYPE_CONFLICT,
    SESSION_AFFINITY_CONFLICT,
    SESSION_AFFINITY_CONFIG_CONFLICT,
    INTERNAL_TRAFFIC_POLICY_CONFLICT,
    TRAFFIC_DISTRIBUTION_CONFLICT,
    LABELS_CONFLICT,
    ANNOTATIONS_CONFLICT,
    IP_FAMILY_CONFLICT,
];

fn sorted(ports: &[Port]) -> Vec<&Port> {
    let mut v: Vec<&Port> = ports.iter().collect();
    v.sort();
    v
}

/// What a reason says in a condition message.
pub fn describe(reason: &str) -> &'static str {
    match reason {
        PORT_CONFLICT => "ports",
        TYPE_CONFLICT => "headlessness",
        SESSION_AFFINITY_CONFLICT => "session affinity",
        SESSION_AFFINITY_CONFIG_CONFLICT => "session affinity config",
        INTERNAL_TRAFFIC_POLICY_CONFLICT => "internal traffic policy",
        TRAFFIC_DISTRIBUTION_CONFLICT => "traffic distribution",
        LABELS_CONFLICT => "exported labels",
        ANNOTATIONS_CONFLICT => "exported annotations",
        IP_FAMILY_CONFLICT => "IP families",
        _ => "properties",
    }
}
