//! The load balancer step of a pass (docs/sync.md#load-balancer-status): what each provider's
//! load balancer reports, kept or withdrawn while it is unreadable, and the MCS's status.

use serde_json::Value;

use super::copies::kept;
use super::{Decision, Failures, providers};
use crate::balancer;
use crate::{
    LoadBalancerIngress, MemberState, PassRead, PortStatus, ProviderIngress, ProviderLoadBalancer,
    RememberedIngress, SyncPlan, SyncSettings,
};

/// The load balancer step: each provider's Service `status.loadBalancer.ingress`, kept while
/// it is unreadable (until the stale timeout), and the MCS's status from them.
pub(super) fn load_balancer(
    plan: &SyncPlan,
    pass: &PassRead,
    settings: &SyncSettings,
    decision: &mut Decision,
) {
    let providers = providers(plan, pass);
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
