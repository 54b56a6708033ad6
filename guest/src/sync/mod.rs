//! One pass of the sync controller over one MultiClusterService, decided at once (WIT `decide`
//! and `conclude`; docs/sync.md#one-pass-over-one-multiclusterservice). The host reads, calls
//! [`decide`], writes what it answers, then calls [`status::conclude`] with what failed, and
//! writes the status and the Events. Every rule of a pass is here, or named here:
//!
//! - **Which MCS acts, P and C, unknown names**: [`crate::plan`].
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

pub mod status;

use serde_json::Value;

use crate::balancer;
use crate::decode::decode_mcs;
use crate::filter;
use crate::plan::{plan_of, prune};
use crate::service;
use crate::{
    EndpointSlice, FinalizerChange, LoadBalancerIngress, McsRef, MemberObject, MemberObjects,
    MemberRead, MemberState, PassDecision, PassRead, PortStatus, ProviderIngress,
    ProviderLoadBalancer, ReadFailure, RememberedIngress, ServiceAction, ServicePort, ServiceWrite,
    SliceWrite, StatusBasis, SyncPlan, SyncSettings,
};

/// The finalizer that keeps a syncing MCS until its copies are withdrawn.
pub const FINALIZER: &str = "networking.karmada.io/mcs-policy-sync";

/// See WIT `decide`.
pub fn decide(pass: &PassRead, settings: &SyncSettings) -> Result<PassDecision, String> {
    let mcs = decode_mcs(&pass.mcs)?;
    let registered: Vec<String> = pass.members.iter().map(|m| m.cluster.clone()).collect();
    let plan = plan_of(&mcs, &registered);
    let finalized = mcs.meta.finalizers.iter().any(|f| f == FINALIZER);
    let mut decision = Decision::new(&plan);
    if plan.deleting || !(plan.active || plan.load_balancer) {
        match (&plan.invalid, plan.deleting) {
            // An invalid MCS keeps what it has until it is fixed or deleted.
            (Some(invalid), false) => {
                decision.status.report = true;
                decision.status.invalid = Some(invalid.clone());
            }
            // Deleted, or no longer CrossCluster: withdraw every copy, then release it.
            _ => withdraw(&mut decision, &plan.mcs, pass, finalized),
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
        withdraw(&mut decision, &plan.mcs, pass, finalized);
    }
    let template = Template::read(&plan, &pass.template, &mut decision);
    services(&plan, pass, template.as_ref(), &mut decision);
    if plan.active {
        decision.status.dispatches = true;
        let ports = template.as_ref().map(|t| t.ports.as_slice());
        copies(&plan, pass, ports, settings, &mut decision);
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

/// The objects of a member that is ready.
fn ready(member: &MemberRead) -> Option<&MemberObjects> {
    match &member.state {
        MemberState::Ready(objects) => Some(objects),
        MemberState::NotReady(_) => None,
    }
}

fn member<'a>(pass: &'a PassRead, cluster: &str) -> Option<&'a MemberRead> {
    pass.members.iter().find(|m| m.cluster == cluster)
}

/// Withdraws every copy of the MCS from every ready member, then releases the finalizer (when
/// it holds ours, else there is nothing to withdraw). An unready member is left to the sweep
/// that runs when it is ready again; a member whose slices cannot be listed keeps the
/// finalizer on, and the pass is retried.
fn withdraw(decision: &mut Decision, mcs: &McsRef, pass: &PassRead, finalized: bool) {
    if !finalized {
        return;
    }
    let mut clean = true;
    for m in &pass.members {
        let Some(objects) = ready(m) else { continue };
        match &objects.slices {
            Ok(existing) => {
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

/// The hub's Service of the MCS.
struct Template<'a> {
    json: &'a str,
    ports: Vec<ServicePort>,
}

impl<'a> Template<'a> {
    /// The template, or `None` with the failure recorded (a missing one is not retried).
    fn read(
        plan: &SyncPlan,
        read: &'a Result<Option<String>, String>,
        decision: &mut Decision,
    ) -> Option<Self> {
        match read {
            Ok(Some(json)) => Some(Template {
                json,
                ports: service::service_ports(json),
            }),
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
    template: Option<&Template<'_>>,
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
        match service::service(template.json, existing) {
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
fn copies(
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

/// The load balancer step: each provider's Service `status.loadBalancer.ingress`, kept while
/// it is unreadable (until the stale timeout), and the MCS's status from them.
fn load_balancer(
    plan: &SyncPlan,
    pass: &PassRead,
    settings: &SyncSettings,
    decision: &mut Decision,
) {
    let providers: Vec<&MemberRead> = plan
        .providers
        .iter()
        .filter_map(|p| member(pass, p))
        .collect();
    let mut read = Vec::new();
    let mut unreadable = Vec::new();
    for m in &providers {
        let ingress = match &m.state {
            MemberState::NotReady(why) => Err(why.clone()),
            MemberState::Ready(objects) => match &objects.service {
                Ok(service) => Ok(service.as_deref().map(ingress_of).unwrap_or_default()),
                Err(failure) => Err(failure.message.clone()),
            },
        };
        if let Err(message) = &ingress {
            Failures::LoadBalancer.push(decision, message.clone());
            unreadable.push(*m);
        }
        read.push(ingress.ok());
    }
    let kept = kept(&unreadable, settings);
    let mut states = Vec::new();
    for (m, ingress) in providers.iter().zip(read) {
        let remembered = match &ingress {
            Some(ingress) => Some(ingress.clone()),
            None => m.last_ingress.clone(),
        };
        if let Some(ingress) = remembered {
            decision.remember_ingress.push(RememberedIngress {
                cluster: m.cluster.clone(),
                ingress,
            });
        }
        let ingress = match ingress {
            Some(ingress) => ProviderIngress::Read(ingress),
            None if kept.contains(&m.cluster) => ProviderIngress::Kept(m.last_ingress.clone()),
            None => ProviderIngress::Withdrawn,
        };
        states.push(ProviderLoadBalancer {
            cluster: m.cluster.clone(),
            ingress,
        });
    }
    let current = serde_json::from_str::<Value>(&pass.mcs)
        .ok()
        .map(|mcs| ingress_list(&mcs["status"]["loadBalancer"]["ingress"]))
        .unwrap_or_default();
    let report = balancer::status(&states, &current);
    decision.ingress = report.changed.then(|| report.ingress.clone());
    decision.status.load_balancer = Some(report);
}

/// `status.loadBalancer.ingress` of a Service (JSON text); none when it does not decode.
fn ingress_of(service: &str) -> Vec<LoadBalancerIngress> {
    serde_json::from_str::<Value>(service)
        .map(|s| ingress_list(&s["status"]["loadBalancer"]["ingress"]))
        .unwrap_or_default()
}

/// A `[]LoadBalancerIngress` JSON value; entries and ports of the wrong shape are left out.
fn ingress_list(value: &Value) -> Vec<LoadBalancerIngress> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry.is_object())
        .map(|entry| LoadBalancerIngress {
            ip: text(entry, "ip"),
            hostname: text(entry, "hostname"),
            ip_mode: text(entry, "ipMode"),
            ports: entry["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    Some(PortStatus {
                        port: i32::try_from(p.get("port")?.as_i64()?).ok()?,
                        protocol: text(p, "protocol")?,
                        error: text(p, "error"),
                    })
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
