//! One pass of the sync controller over one MultiClusterService, decided at once (WIT `decide`
//! and `conclude`; docs/sync.md#one-pass-over-one-multiclusterservice). The host reads, calls
//! [`decide`], writes what it answers, then calls [`status::conclude`] with what failed, and
//! writes the status and the Events. Every rule of a pass is here, or named here:
//!
//! - **Which MCS acts, P and C, unknown names**: [`crate::plan`]; a listed name that is a
//!   cluster the host knows but does not sync (`pass-read.unsynced`) is *not synced*, not
//!   unknown ([`not_synced`]).
//! - **An invalid MCS** keeps its copies and reports `Valid=False` only; one that is deleted or
//!   no longer acts has its copies withdrawn and reports nothing ([`decide`]).
//! - **The finalizer**: added before any copy is written when the MCS is CrossCluster and syncs;
//!   released once every copy is withdrawn from the ready members ([`withdraw`]).
//! - **Which clusters receive the hub Service**: the ready members of P, and of C when the MCS
//!   is CrossCluster; unready ones are skipped, not reported ([`services`]). How each member's
//!   Service looks: [`crate::service`].
//! - **Which copies each member holds**: a ready consumer holds the copies of every other
//!   readable provider's slices ([`crate::filter`] names and shapes them); a member that is not
//!   a consumer holds none; a copy already held as it must be is not written again
//!   ([`copies`]).
//! - **Which copies are stale**: [`crate::plan::prune`], keeping the copies of providers that
//!   could not be read until the stale timeout ([`kept`]).
//! - **Which failures are reported, and under which condition**: [`Failures`]; a cluster that
//!   answers 404 to a list of EndpointSlices does not serve them (`APIIncompatible`).
//! - **The load balancer status**: [`crate::balancer`], providers kept or withdrawn as for the
//!   copies ([`load_balancer`]).
//! - **Conditions, Events, their wording and size, and when to retry**: [`status`].

mod copies;
mod load_balancer;
pub mod status;

use serde_json::{Map, Value};

use crate::decode::decode_mcs;
// The finalizer is the plan's (a sweep asks it too); a pass adds and releases it.
pub use crate::plan::FINALIZER;
use crate::plan::{holds_finalizer, plan_of, prune};
use crate::service;
use crate::slices::{Slice, slices_by_member};
use crate::{
    FinalizerChange, LoadBalancerIngress, McsRef, MemberObject, MemberObjects, MemberRead,
    MemberState, PassDecision, PassRead, ReadFailure, RememberedIngress, ServiceAction,
    ServicePort, ServiceWrite, SliceWrite, StatusBasis, SyncPlan, SyncSettings, UnsyncedCluster,
};

use copies::copies;
pub use copies::{holds_copy, kept};
use load_balancer::load_balancer;

/// See WIT `decide`.
pub fn decide(pass: &PassRead, settings: &SyncSettings) -> Result<PassDecision, String> {
    let mcs = decode_mcs(&pass.mcs)?;
    let read = slices_by_member(pass)?;
    let registered: Vec<String> = pass.members.iter().map(|m| m.cluster.clone()).collect();
    let mut plan = plan_of(&mcs, &registered);
    let unsynced = not_synced(&mut plan, &pass.unsynced);
    let finalized = holds_finalizer(&mcs);
    let mut decision = Decision::new(&plan);
    decision.status.unsynced = unsynced;
    if plan.deleting || !(plan.active || plan.load_balancer) {
        match (&plan.invalid, plan.deleting) {
            // An invalid MCS keeps what it has until it is fixed or deleted.
            (Some(invalid), false) => {
                decision.status.report = true;
                decision.status.invalid = Some(invalid.clone());
            }
            // Deleted, or no longer CrossCluster: withdraw every copy, then release it.
            _ => withdraw(&mut decision, &plan.mcs, pass, &read, finalized),
        }
        return Ok(decision.into_wit(plan));
    }
    decision.status.report = true;
    if plan.active {
        if !finalized {
            decision.finalizer = FinalizerChange::Add(FINALIZER.to_string());
        }
    } else {
        // Copies are made only for CrossCluster. A LoadBalancer MCS holding our finalizer had
        // copies made (its types changed while no webhook guarded them): withdraw them.
        withdraw(&mut decision, &plan.mcs, pass, &read, finalized);
    }
    let template = Template::read(&plan, &pass.template, &mut decision);
    services(&plan, pass, template.as_ref(), &mut decision);
    if plan.active {
        decision.status.dispatches = true;
        let ports = template.as_ref().map(|t| t.ports.as_slice());
        copies(&plan, pass, &read, ports, settings, &mut decision);
    }
    if plan.load_balancer {
        load_balancer(&plan, pass, settings, &mut decision);
    }
    Ok(decision.into_wit(plan))
}

/// The decision as it is built.
struct Decision {
    finalizer: FinalizerChange,
    copies: Vec<SliceWrite>,
    deletions: Vec<MemberObject>,
    services: Vec<ServiceWrite>,
    ingress: Option<Vec<LoadBalancerIngress>>,
    remember_ingress: Vec<RememberedIngress>,
    status: StatusBasis,
}

impl Decision {
    fn new(plan: &SyncPlan) -> Self {
        Decision {
            finalizer: FinalizerChange::Keep,
            copies: Vec::new(),
            deletions: Vec::new(),
            services: Vec::new(),
            ingress: None,
            remember_ingress: Vec::new(),
            status: StatusBasis {
                report: false,
                invalid: None,
                dispatches: false,
                service_failures: Vec::new(),
                template_missing: false,
                dispatch_failures: Vec::new(),
                load_balancer_failures: Vec::new(),
                load_balancer: None,
                unknown_providers: plan.unknown_providers.clone(),
                unknown_consumers: plan.unknown_consumers.clone(),
                incompatible: Vec::new(),
                unsynced: Vec::new(),
            },
        }
    }

    fn into_wit(self, plan: SyncPlan) -> PassDecision {
        PassDecision {
            plan,
            finalizer: self.finalizer,
            copies: self.copies,
            deletions: self.deletions,
            services: self.services,
            ingress: self.ingress,
            remember_ingress: self.remember_ingress,
            status: self.status,
        }
    }

    /// Deletes `names` from `cluster`.
    fn delete(&mut self, cluster: &str, names: Vec<String>) {
        self.deletions
            .extend(names.into_iter().map(|name| MemberObject {
                cluster: cluster.to_string(),
                name,
            }));
    }
}

/// Where a failure found while reading is reported.
enum Failures {
    /// `ServiceApplied`.
    Service,
    /// `EndpointSliceDispatched` (and the withdrawal of copies, which is retried).
    Dispatch,
    /// The load balancer status (retried; its condition says what is missing).
    LoadBalancer,
}

impl Failures {
    fn push(self, decision: &mut Decision, message: String) {
        let status = &mut decision.status;
        match self {
            Failures::Service => status.service_failures.push(message),
            Failures::Dispatch => status.dispatch_failures.push(message),
            Failures::LoadBalancer => status.load_balancer_failures.push(message),
        }
    }

    /// A failed list of EndpointSlices in a `role` cluster: one that answers 404 does not serve
    /// them at all.
    fn list(decision: &mut Decision, role: &str, cluster: &str, failure: &ReadFailure) {
        if failure.not_served {
            let message = status::incompatible(role, cluster);
            let incompatible = &mut decision.status.incompatible;
            if !incompatible.contains(&message) {
                incompatible.push(message);
            }
        }
        Failures::Dispatch.push(decision, failure.message.clone());
    }
}

/// The listed names of `plan` that are clusters that exist but are not synced (`unsynced`),
/// each once, providers first: they are taken out of the plan's unknown names, for they are
/// not unknown.
fn not_synced(plan: &mut SyncPlan, unsynced: &[UnsyncedCluster]) -> Vec<UnsyncedCluster> {
    let mut found: Vec<UnsyncedCluster> = Vec::new();
    if unsynced.is_empty() {
        return found;
    }
    for names in [&mut plan.unknown_providers, &mut plan.unknown_consumers] {
        names.retain(|name| {
            let Some(cluster) = unsynced.iter().find(|u| &u.cluster == name) else {
                return true;
            };
            if !found.iter().any(|f| f.cluster == cluster.cluster) {
                found.push(cluster.clone());
            }
            false
        });
    }
    found
}

/// The objects of a member that is ready.
fn ready(member: &MemberRead) -> Option<&MemberObjects> {
    match &member.state {
        MemberState::Ready(objects) => Some(objects),
        MemberState::NotReady(_) => None,
    }
}

/// The providers of the plan, as read this pass.
fn providers<'a>(plan: &SyncPlan, pass: &'a PassRead) -> Vec<&'a MemberRead> {
    plan.providers
        .iter()
        .filter_map(|p| member(pass, p))
        .collect()
}

fn member<'a>(pass: &'a PassRead, cluster: &str) -> Option<&'a MemberRead> {
    pass.members.iter().find(|m| m.cluster == cluster)
}

/// Withdraws every copy of the MCS from every ready member, then releases the finalizer (when
/// it holds ours, else there is nothing to withdraw). An unready member is left to the sweep
/// that runs when it is ready again; a member whose slices cannot be listed keeps the
/// finalizer on, and the pass is retried.
fn withdraw(
    decision: &mut Decision,
    mcs: &McsRef,
    pass: &PassRead,
    read: &[Option<Vec<Slice<'_>>>],
    finalized: bool,
) {
    if !finalized {
        return;
    }
    let mut clean = true;
    for (m, slices) in pass.members.iter().zip(read) {
        let Some(objects) = ready(m) else { continue };
        match &objects.slices {
            Ok(_) => {
                let existing = slices.as_deref().unwrap_or_default();
                let stale = prune(mcs, existing, &[], &[]);
                decision.delete(&m.cluster, stale);
            }
            Err(failure) => {
                clean = false;
                Failures::Dispatch.push(decision, failure.message.clone());
            }
        }
    }
    if clean {
        decision.finalizer = FinalizerChange::Release(FINALIZER.to_string());
    }
}

/// The hub's Service of the MCS, decoded once for every member (or why it does not decode,
/// which each member's Service decision reports) and its ports.
struct Template {
    decoded: Result<Map<String, Value>, String>,
    ports: Vec<ServicePort>,
}

impl Template {
    /// The template, or `None` with the failure recorded (a missing one is not retried).
    fn read(
        plan: &SyncPlan,
        read: &Result<Option<String>, String>,
        decision: &mut Decision,
    ) -> Option<Self> {
        match read {
            Ok(Some(json)) => {
                let decoded = service::decode_template(json);
                let ports = decoded
                    .as_ref()
                    .map(service::service_ports)
                    .unwrap_or_default();
                Some(Template { decoded, ports })
            }
            Ok(None) => {
                decision.status.template_missing = true;
                let (ns, name) = (&plan.mcs.namespace, &plan.mcs.name);
                let message = format!("service {ns}/{name} not found in the hub");
                Failures::Service.push(decision, message);
                None
            }
            Err(message) => {
                Failures::Service.push(decision, message.clone());
                None
            }
        }
    }
}

/// The hub Service in every ready cluster of P, and of C when the MCS is CrossCluster (a
/// LoadBalancer MCS needs it only in the providers, where a member's cloud controller gives it
/// a load balancer). Unready clusters are skipped; they are caught up when ready.
fn services(
    plan: &SyncPlan,
    pass: &PassRead,
    template: Option<&Template>,
    decision: &mut Decision,
) {
    let Some(template) = template else { return };
    let consumers: &[String] = if plan.active { &plan.consumers } else { &[] };
    let mut targets: Vec<&String> = plan.providers.iter().chain(consumers).collect();
    targets.sort();
    targets.dedup();
    let (ns, name) = (&plan.mcs.namespace, &plan.mcs.name);
    for cluster in targets {
        let Some(objects) = member(pass, cluster).and_then(ready) else {
            continue;
        };
        let existing = match &objects.service {
            Ok(existing) => existing.as_deref(),
            Err(failure) => {
                Failures::Service.push(decision, failure.message.clone());
                continue;
            }
        };
        let action = match &template.decoded {
            Ok(decoded) => service::service_for(decoded, existing),
            Err(why) => Err(why.clone()),
        };
        match action {
            Ok(ServiceAction::Unchanged) => {}
            Ok(ServiceAction::Conflict(why)) => {
                let message = format!("service {ns}/{name} in cluster {cluster}: {why}");
                Failures::Service.push(decision, message);
            }
            Ok(action) => decision.services.push(ServiceWrite {
                cluster: cluster.clone(),
                action,
            }),
            Err(why) => {
                let message = format!("deciding service {ns}/{name} for cluster {cluster}: {why}");
                Failures::Service.push(decision, message);
            }
        }
    }
}

#[cfg(test)]
mod tests;
