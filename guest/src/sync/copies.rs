//! The copies step of a pass (docs/sync.md#dispatch-and-prune): which copies each ready member
//! must hold, which of them it does not hold yet, and which of its copies are stale.

use super::{Decision, Failures, member, ready};
use crate::filter;
use crate::plan::prune;
use crate::{
    EndpointSlice, MemberRead, MemberState, PassRead, ServicePort, SliceWrite, SyncPlan,
    SyncSettings,
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
    let providers: Vec<&MemberRead> = plan
        .providers
        .iter()
        .filter_map(|p| member(pass, p))
        .collect();
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
                    let source = p.slices[copy.source as usize].clone();
                    let slice = filter::apply(copy, source);
                    desired.push(slice.name.clone());
                    // A copy already held as it must be is not written again (a resync then
                    // costs one list per member, not an apply per copy).
                    if !held.iter().any(|h| same_object(h, &slice)) {
                        decision.copies.push(SliceWrite {
                            cluster: m.cluster.clone(),
                            slice,
                        });
                    }
                }
            }
        }
        let stale = prune(&plan.mcs, held, &desired, &sources);
        decision.delete(&m.cluster, stale);
    }
}

/// Whether `held`, as read from a cluster, is `copy` as it reads back once written: maps
/// (labels, annotations, an endpoint's `deprecatedTopology`) compare in key order, the last
/// value of a key winning.
pub fn same_object(held: &EndpointSlice, copy: &EndpointSlice) -> bool {
    let canonical = |pairs: &[(String, String)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .cloned()
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect()
    };
    held.name == copy.name
        && held.namespace == copy.namespace
        && held.address_type == copy.address_type
        && held.ports == copy.ports
        && canonical(&held.labels) == canonical(&copy.labels)
        && canonical(&held.annotations) == canonical(&copy.annotations)
        && held.endpoints.len() == copy.endpoints.len()
        && held.endpoints.iter().zip(&copy.endpoints).all(|(h, c)| {
            let (mut h, mut c) = (h.clone(), c.clone());
            h.deprecated_topology = canonical(&h.deprecated_topology);
            c.deprecated_topology = canonical(&c.deprecated_topology);
            h == c
        })
}
