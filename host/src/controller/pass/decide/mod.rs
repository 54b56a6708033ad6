//! The *decide* step: every decision, asked of the policy component — a pass's (`decide`,
//! then `conclude`), a Service's again after a 409 (`service`), and a sweep's (`plan`,
//! `prune`). No client here; a call runs on the calling task's worker for a short slice, then on
//! the blocking pool if it needs longer ([`Decider::blocking`]).

pub mod memory;
pub mod quiet;

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;

use crate::engine::convert::{self, ServiceChange};
use crate::engine::types::{
    ClustersetDecision, ClustersetRead, EndpointSlice, McsRef, PassDecision, PassRead, Reported,
    StatusBasis, StatusNow, StatusUpdate, SyncPlan, SyncSettings, WriteFailures,
};
use crate::engine::{EngineError, INLINE_SLICE, PolicyEngine};

/// Why the component gave no decision.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("asking the policy component about multiclusterservice {object}")]
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

/// `--stale-endpoint-timeout` as `sync-settings` carries it.
pub fn stale_timeout_ms(stale_timeout: Option<Duration>) -> Option<u64> {
    stale_timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
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
        let engine = self.engine.clone();
        let answer = self
            .blocking(object, move |budget| {
                engine.plan(&json, &registered, budget)
            })
            .await?;
        answer.map_err(|message| DecideError::Decode {
            object: object.to_string(),
            message,
        })
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
        let engine = self.engine.clone();
        let mcs = mcs.clone();
        let object = format!("{}/{}", mcs.namespace, mcs.name);
        self.blocking(&object, move |budget| {
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
        let engine = self.engine.clone();
        let action = self
            .blocking(&object, move |budget| {
                engine.service(&template, existing.as_deref(), budget)
            })
            .await?
            .map_err(refused)?;
        convert::service_change(action)
            .map_err(|e| refused(format!("the component's object is not a Service: {e}")))
    }

    /// WIT `decide`: every decision of one pass over the MCS `object`, from what it read.
    pub async fn decide(
        &self,
        object: &str,
        pass: PassRead,
        stale_timeout: Option<Duration>,
    ) -> Result<PassDecision, DecideError> {
        let engine = self.engine.clone();
        let settings = SyncSettings {
            stale_timeout_ms: stale_timeout_ms(stale_timeout),
        };
        let answer = self
            .blocking(object, move |budget| engine.decide(&pass, settings, budget))
            .await?;
        answer.map_err(|message| DecideError::Decode {
            object: object.to_string(),
            message,
        })
    }

    /// WIT `conclude`: the status, Events and retry of a pass over the MCS `object`.
    pub async fn conclude(
        &self,
        object: &str,
        basis: StatusBasis,
        failures: WriteFailures,
        current: StatusNow,
        reported: Option<Reported>,
    ) -> Result<StatusUpdate, DecideError> {
        let engine = self.engine.clone();
        self.blocking(object, move |budget| {
            engine.conclude(&basis, &failures, &current, reported.as_ref(), budget)
        })
        .await
    }

    /// WIT `clusterset-decide`: what every member must write for the exported name `object`
    /// (`namespace/name`), from what the pass read. `Err(Decode)` carries the component's
    /// answer when an object is not JSON of its kind (members sharing a cluster id are not an
    /// error: the component reports them on their exports and serves the rest).
    pub async fn clusterset_decide(
        &self,
        object: &str,
        read: ClustersetRead,
    ) -> Result<ClustersetDecision, DecideError> {
        let engine = self.engine.clone();
        let answer = self
            .blocking(object, move |budget| {
                engine.clusterset_decide(&read, budget)
            })
            .await?;
        answer.map_err(|message| DecideError::Decode {
            object: object.to_string(),
            message,
        })
    }

    /// Runs `call` (a pure component call, given its budget) on this task's worker first, with
    /// [`INLINE_SLICE`] as its budget, and again on the blocking pool with the whole budget
    /// when that slice runs out. Most calls end well inside the slice (a 20-member `decide` takes
    /// ~0.3 ms), and handing each one to the blocking pool cost a thread wake-up and two
    /// context switches per call: ~15% of a resync's CPU in `perf`. A looping or slow call
    /// holds a worker for one slice at most; re-running it is safe because the component is
    /// pure (the same arguments give the same answer, and it writes nothing).
    async fn blocking<T: Send + 'static>(
        &self,
        object: &str,
        call: impl Fn(Duration) -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, DecideError> {
        let answer = match call(INLINE_SLICE.min(self.budget)) {
            Err(EngineError::Timeout { .. }) if self.budget > INLINE_SLICE => {
                tracing::debug!(%object, "policy call moved to a blocking thread after its inline slice");
                let budget = self.budget;
                tokio::task::spawn_blocking(move || call(budget))
                    .await
                    .map_err(|e| DecideError::Join {
                        object: object.to_string(),
                        message: e.to_string(),
                    })?
            }
            answer => answer,
        };
        answer.map_err(|source| DecideError::Engine {
            object: object.to_string(),
            source,
        })
    }
}
