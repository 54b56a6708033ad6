//! The copies step of a pass (docs/sync.md#dispatch-and-prune): which copies each ready member
//! must hold, which of them it does not hold yet, and which of its copies are stale.

use std::collections::BTreeMap;

use super::{Decision, Failures, member, providers, ready};
use crate::filter;
use crate::plan::prune;
use crate::{
    EndpointPort, EndpointSlice, MemberRead, MemberState, PassRead, ServicePort, SliceCopy,
    SliceWrite, SyncPlan, SyncSettings,
};

/// Which unreadable providers keep their copies (and their load balancer entries): all of
/// them without a stale timeout; with one, those unreadable for no longer than it.
pub fn kept(unreadable: &[&MemberRead], settings: &SyncSettings) -> Vec<String> {
    unreadable
        .iter()
        .filter(|m| {
            settings
                .stale_timeout_ms
                .is_none_or(|timeout| m.unreadable_ms <= timeout)
        })
        .map(|m| m.cluster.clone())
        .collect()
}

/// One readable provider's slices of the Service.
struct Provided<'a> {
    cluster: &'a str,
    slices: &'a [EndpointSlice],
    summaries: Vec<crate::SliceSummary>,
}

/// The copies step: collect the providers' slices, then in every ready member write the
/// copies it must hold and not yet holds (when it is a consumer), and delete the stale ones.
pub(super) fn copies(
    plan: &SyncPlan,
    pass: &PassRead,
    ports: Option<&[ServicePort]>,
    settings: &SyncSettings,
    decision: &mut Decision,
) {
    let providers = providers(plan, pass);
    let mut unreadable = Vec::new();
    for m in &providers {
        if let MemberState::NotReady(why) = &m.state {
            Failures::Dispatch.push(decision, why.clone());
            unreadable.push(*m);
        }
    }
    let mut provided = Vec::new();
    for m in &providers {
        match ready(m).map(|o| &o.slices) {
            Some(Ok(slices)) => provided.push(Provided {
                cluster: &m.cluster,
                slices,
                summaries: slices.iter().map(filter::summary).collect(),
            }),
            Some(Err(failure)) => {
                Failures::list(decision, "Provider", &m.cluster, failure);
                unreadable.push(*m);
            }
            None => {}
        }
    }
    let kept = kept(&unreadable, settings);
    for consumer in &plan.consumers {
        // Skipped this pass; caught up when it is ready again.
        if let Some(MemberState::NotReady(why)) = member(pass, consumer).map(|m| &m.state)
            && !plan.providers.contains(consumer)
        {
            Failures::Dispatch.push(decision, why.clone());
        }
    }
    for m in &pass.members {
        let Some(objects) = ready(m) else { continue };
        let is_consumer = plan.consumers.contains(&m.cluster);
        let held = match &objects.slices {
            Ok(held) => held,
            // A provider's failed list is reported once, above.
            Err(_) if plan.providers.contains(&m.cluster) => continue,
            Err(failure) => {
                let role = if is_consumer { "Consumer" } else { "Provider" };
                Failures::list(decision, role, &m.cluster, failure);
                continue;
            }
        };
        let mut desired = Vec::new();
        // A member that is no longer a consumer keeps nothing, whoever could be read; a
        // consumer keeps the copies of the providers that could not be read.
        let sources = if is_consumer {
            kept.clone()
        } else {
            Vec::new()
        };
        if is_consumer {
            for p in provided.iter().filter(|p| p.cluster != m.cluster) {
                let made = filter::copies(&plan.mcs, ports, p.cluster, &m.cluster, &p.summaries);
                for copy in made {
                    let source = &p.slices[copy.source as usize];
                    desired.push(copy.name.clone());
                    // A copy already held as it must be is not written again (a resync then
                    // costs one list per member, not an apply per copy).
                    if !held.iter().any(|h| holds_copy(h, &copy, source)) {
                        decision.copies.push(SliceWrite {
                            cluster: m.cluster.clone(),
                            slice: filter::apply(copy, source.clone()),
                        });
                    }
                }
            }
        }
        let stale = prune(&plan.mcs, held, &desired, &sources);
        decision.delete(&m.cluster, stale);
    }
}

/// Whether `held`, as read from a cluster, is the copy `copy` describes of `source` as it reads
/// back once written (`filter::apply`): maps (labels, annotations, an endpoint's
/// `deprecatedTopology`) compare as maps, in any order. Compared in place: a resync compares
/// every copy of every member, and nothing is copied to do it. The name and namespace are
/// compared first, so a scan of what a member holds costs little.
pub fn holds_copy(held: &EndpointSlice, copy: &SliceCopy, source: &EndpointSlice) -> bool {
    if held.name != copy.name || held.namespace != source.namespace {
        return false;
    }
    let ports: Vec<&EndpointPort> = copy
        .ports
        .iter()
        .filter_map(|&i| source.ports.get(i as usize))
        .collect();
    held.address_type == source.address_type
        && same_map(&held.labels, &copy.labels)
        && same_map(&held.annotations, &copy.annotations)
        && held.ports.iter().eq(ports)
        && held.endpoints.len() == source.endpoints.len()
        && held.endpoints.iter().zip(&source.endpoints).all(|(h, s)| {
            h.addresses == s.addresses
                && h.conditions == s.conditions
                && h.hostname == s.hostname
                && h.node_name == s.node_name
                && h.zone == s.zone
                && h.target_ref == s.target_ref
                && h.hints == s.hints
                && same_map(&h.deprecated_topology, &s.deprecated_topology)
        })
}

/// Whether two maps given as key/value pairs are the same map (the last value of a key wins,
/// as in the object a cluster stores).
fn same_map(a: &[(String, String)], b: &[(String, String)]) -> bool {
    a == b || as_map(a) == as_map(b)
}

fn as_map(pairs: &[(String, String)]) -> BTreeMap<&str, &str> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}
