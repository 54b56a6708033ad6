//! The *load balancer* step, for an MCS whose types contain `LoadBalancer`: read each provider's
//! copy of the Service, and ask the component (`load-balancer-status`) what the MCS's
//! `status.loadBalancer.ingress` and its condition must be. A provider that cannot be read keeps
//! what it last reported, as its EndpointSlice copies stay ([`super::stale`]); past
//! `--stale-endpoint-timeout` its entries are withdrawn. This module reads and remembers; the
//! decision is the component's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::join_all;
use k8s_openapi::api::core::v1::LoadBalancerIngress;
use kube::api::DynamicObject;

use super::Context;
use super::decide::DecideError;
use super::read::ReadError;
use super::service::read_member;
use super::stale::kept_sources;
use crate::clusters::api_error::chain;
use crate::engine::convert;
use crate::engine::types::{
    self, LoadBalancerReport, ProviderIngress, ProviderLoadBalancer, SyncPlan,
};

/// What the controller remembers of one MCS's providers' load balancers.
#[derive(Clone, Debug, Default)]
pub struct Remembered {
    /// When each provider was first seen unreadable (as [`super::stale::RememberedByMcs`] for slices).
    since: BTreeMap<String, Instant>,
    /// What each provider reported when it was last read.
    last: BTreeMap<String, Vec<types::LoadBalancerIngress>>,
}

/// Per MCS uid.
pub type RememberedByMcs = Arc<Mutex<HashMap<String, Remembered>>>;

/// The component's report, the entries to write (`None`: the status already holds them), and
/// the read failures (logged; they make the pass be retried).
pub struct Gathered {
    pub report: LoadBalancerReport,
    pub write: Option<Vec<LoadBalancerIngress>>,
    pub failures: Vec<String>,
}

/// The load balancer status of `mcs` (planned as `plan`, remembered under `key`) from its
/// providers, the `ready` ones read at once.
pub async fn status(
    ctx: &Context,
    key: &str,
    mcs: &DynamicObject,
    plan: &SyncPlan,
    ready: &[String],
) -> Result<Gathered, DecideError> {
    let object = format!("{}/{}", plan.mcs.namespace, plan.mcs.name);
    let (ns, name) = (&plan.mcs.namespace, &plan.mcs.name);
    let providers: Vec<_> = plan
        .providers
        .iter()
        .filter_map(|p| ctx.registry.member(p))
        .collect();
    let reads = join_all(providers.iter().map(|cluster| async move {
        if !ready.contains(&cluster.name) {
            let err = ReadError::NotReady {
                cluster: cluster.name.clone(),
                why: ctx.not_ready,
            };
            return Err(chain(&err));
        }
        read_member(&cluster.client, &cluster.name, ns, name)
            .await
            .map(|service| {
                let status = service.and_then(|s| s.status);
                let ingress = status
                    .and_then(|s| s.load_balancer)
                    .and_then(|lb| lb.ingress);
                ingress
                    .iter()
                    .flatten()
                    .map(convert::ingress_to_wit)
                    .collect::<Vec<_>>()
            })
            .map_err(|err| chain(&err))
    }))
    .await;
    let mut failures = Vec::new();
    let mut unreadable = Vec::new();
    for (cluster, read) in providers.iter().zip(&reads) {
        if let Err(message) = read {
            tracing::warn!(mcs = %object, cluster = %cluster.name, error = %message, "load balancer not read");
            failures.push(message.clone());
            unreadable.push(cluster.name.clone());
        }
    }
    let states: Vec<ProviderLoadBalancer> = {
        let mut memory = ctx
            .balancers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let remembered = memory.entry(key.to_string()).or_default();
        let kept = kept_sources(
            &mut remembered.since,
            &unreadable,
            ctx.stale_timeout,
            Instant::now(),
        );
        remembered.last.retain(|p, _| plan.providers.contains(p));
        providers
            .iter()
            .zip(reads)
            .map(|(cluster, read)| {
                let ingress = match read {
                    Ok(ingress) => {
                        remembered
                            .last
                            .insert(cluster.name.clone(), ingress.clone());
                        ProviderIngress::Read(ingress)
                    }
                    Err(_) if kept.contains(&cluster.name) => {
                        ProviderIngress::Kept(remembered.last.get(&cluster.name).cloned())
                    }
                    Err(_) => ProviderIngress::Withdrawn,
                };
                ProviderLoadBalancer {
                    cluster: cluster.name.clone(),
                    ingress,
                }
            })
            .collect()
    };
    let current: Vec<LoadBalancerIngress> =
        serde_json::from_value(mcs.data["status"]["loadBalancer"]["ingress"].clone())
            .unwrap_or_default();
    let current = current.iter().map(convert::ingress_to_wit).collect();
    let report = ctx
        .decider
        .load_balancer_status(&object, states, current)
        .await?;
    let write = report.changed.then(|| {
        report
            .ingress
            .iter()
            .cloned()
            .map(convert::ingress_from_wit)
            .collect()
    });
    Ok(Gathered {
        report,
        write,
        failures,
    })
}
