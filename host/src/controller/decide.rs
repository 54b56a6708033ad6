//! The *decide* step: every decision of a pass, asked of the policy component (`plan`, `filter`,
//! `prune`, `service`, `load-balancer-status`). No client here; calls run on the blocking pool because the engine
//! blocks.

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;

use crate::engine::convert::{self, ServiceChange};
use crate::engine::types::{
    EndpointSlice, LoadBalancerIngress, LoadBalancerReport, McsRef, ProviderLoadBalancer,
    ServicePort, SyncPlan,
};
use crate::engine::{EngineError, PolicyEngine};

/// Why the component gave no decision.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("planning multiclusterservice {object}")]
    Engine {
        object: String,
        #[source]
        source: EngineError,
    },
    #[error("multiclusterservice {object} does not decode: {message}")]
    Decode { object: String, message: String },
    #[error("the policy gives no service {object}: {message}")]
    Service { object: String, message: String },
    #[error("the policy call for {object} did not finish: {message}")]
    Join { object: String, message: String },
}

/// The component, with the budget of each call.
#[derive(Clone, Debug)]
pub struct Decider {
    pub engine: PolicyEngine,
    pub budget: Duration,
}

impl Decider {
    /// WIT `plan` for the MCS (JSON text) `object` names.
    pub async fn plan(
        &self,
        object: &str,
        json: String,
        registered: Vec<String>,
    ) -> Result<SyncPlan, DecideError> {
        let (engine, budget) = (self.engine.clone(), self.budget);
        let answer = self
            .blocking(object, move || engine.plan(&json, &registered, budget))
            .await?;
        answer.map_err(|message| DecideError::Decode {
            object: object.to_string(),
            message,
        })
    }

    /// WIT `filter`: the copies `consumer` must hold of `provider`'s `slices`, given the hub
    /// Service's ports (`None` when the hub has no such Service).
    pub async fn filter(
        &self,
        mcs: &McsRef,
        service_ports: Option<&[ServicePort]>,
        provider: &str,
        consumer: &str,
        slices: &[EndpointSlice],
    ) -> Result<Vec<EndpointSlice>, DecideError> {
        let (engine, budget) = (self.engine.clone(), self.budget);
        let service_ports = service_ports.map(<[ServicePort]>::to_vec);
        let (mcs, provider, consumer, slices) = (
            mcs.clone(),
            provider.to_string(),
            consumer.to_string(),
            slices.to_vec(),
        );
        let object = format!("{}/{}", mcs.namespace, mcs.name);
        self.blocking(&object, move || {
            engine.filter(
                &mcs,
                service_ports.as_deref(),
                &provider,
                &consumer,
                &slices,
                budget,
            )
        })
        .await
    }

    /// WIT `prune`: names among `existing` that are stale copies of `mcs` (copies from the
    /// providers in `kept_sources` are kept).
    pub async fn prune(
        &self,
        mcs: &McsRef,
        existing: Vec<EndpointSlice>,
        desired: Vec<String>,
        kept_sources: Vec<String>,
    ) -> Result<Vec<String>, DecideError> {
        let (engine, budget) = (self.engine.clone(), self.budget);
        let mcs = mcs.clone();
        let object = format!("{}/{}", mcs.namespace, mcs.name);
        self.blocking(&object, move || {
            engine.prune(&mcs, &existing, &desired, &kept_sources, budget)
        })
        .await
    }

    /// WIT `service`: what a member holding `existing` (`None`: no such Service) must do to
    /// hold the hub's Service `template`.
    pub async fn service(
        &self,
        template: &Service,
        existing: Option<&Service>,
    ) -> Result<ServiceChange, DecideError> {
        let meta = &template.metadata;
        let object = format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        );
        let refused = |message: String| DecideError::Service {
            object: object.clone(),
            message,
        };
        let encode = |s: &Service| {
            convert::service_to_json(s).map_err(|e| refused(format!("does not encode: {e}")))
        };
        let (template, existing) = (encode(template)?, existing.map(encode).transpose()?);
        let (engine, budget) = (self.engine.clone(), self.budget);
        let action = self
            .blocking(&object, move || {
                engine.service(&template, existing.as_deref(), budget)
            })
            .await?
            .map_err(refused)?;
        convert::service_change(action)
            .map_err(|e| refused(format!("the component's object is not a Service: {e}")))
    }

    /// WIT `load-balancer-status`: the MCS `object`'s `status.loadBalancer.ingress` from its
    /// providers' load balancers, given its `current` entries, and the condition.
    pub async fn load_balancer_status(
        &self,
        object: &str,
        providers: Vec<ProviderLoadBalancer>,
        current: Vec<LoadBalancerIngress>,
    ) -> Result<LoadBalancerReport, DecideError> {
        let (engine, budget) = (self.engine.clone(), self.budget);
        self.blocking(object, move || {
            engine.load_balancer_status(&providers, &current, budget)
        })
        .await
    }

    async fn blocking<T: Send + 'static>(
        &self,
        object: &str,
        call: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, DecideError> {
        tokio::task::spawn_blocking(call)
            .await
            .map_err(|e| DecideError::Join {
                object: object.to_string(),
                message: e.to_string(),
            })?
            .map_err(|source| DecideError::Engine {
                object: object.to_string(),
                source,
            })
    }
}
