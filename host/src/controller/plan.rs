//! The *plan* step: every decision of a pass, asked of the policy component (`plan`, `filter`,
//! `prune`). No client here; calls run on the blocking pool because the engine blocks.

use std::time::Duration;

use crate::engine::types::{EndpointSlice, McsRef, ServicePort, SyncPlan};
use crate::engine::{EngineError, PolicyEngine};

/// Why the component gave no decision.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("planning multiclusterservice {object}")]
    Engine {
        object: String,
        #[source]
        source: EngineError,
    },
    #[error("multiclusterservice {object} does not decode: {message}")]
    Decode { object: String, message: String },
    #[error("the policy call for {object} did not finish: {message}")]
    Join { object: String, message: String },
}

/// The component, with the budget of each call.
#[derive(Clone, Debug)]
pub struct Planner {
    pub engine: PolicyEngine,
    pub budget: Duration,
}

impl Planner {
    /// WIT `plan` for the MCS (JSON text) `object` names.
    pub async fn plan(
        &self,
        object: &str,
        json: String,
        registered: Vec<String>,
    ) -> Result<SyncPlan, PlanError> {
        let (engine, budget) = (self.engine.clone(), self.budget);
        let answer = self
            .blocking(object, move || engine.plan(&json, &registered, budget))
            .await?;
        answer.map_err(|message| PlanError::Decode {
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
    ) -> Result<Vec<EndpointSlice>, PlanError> {
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

    /// WIT `prune`: names among `existing` that are stale copies of `mcs`.
    pub async fn prune(
        &self,
        mcs: &McsRef,
        existing: Vec<EndpointSlice>,
        desired: Vec<String>,
    ) -> Result<Vec<String>, PlanError> {
        let (engine, budget) = (self.engine.clone(), self.budget);
        let mcs = mcs.clone();
        let object = format!("{}/{}", mcs.namespace, mcs.name);
        self.blocking(&object, move || {
            engine.prune(&mcs, &existing, &desired, budget)
        })
        .await
    }

    async fn blocking<T: Send + 'static>(
        &self,
        object: &str,
        call: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, PlanError> {
        tokio::task::spawn_blocking(call)
            .await
            .map_err(|e| PlanError::Join {
                object: object.to_string(),
                message: e.to_string(),
            })?
            .map_err(|source| PlanError::Engine {
                object: object.to_string(),
                source,
            })
    }
}
