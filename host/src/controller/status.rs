//! The *status* step: conditions on the MultiClusterService in the hub (docs/sync.md#status-conditions-and-events), with the
//! metav1 rules: one condition per type, `lastTransitionTime` moves only when `status` does;
//! and `status.loadBalancer`, when the component says it changed.

use k8s_openapi::api::core::v1::LoadBalancerIngress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::messages;
use super::read::{mcs_resource, object_name};
use super::retry::on_conflict;
use crate::engine::types::LoadBalancerReport;

/// Condition type of the dispatch outcome.
pub const DISPATCHED: &str = "EndpointSliceDispatched";
/// Condition type of the Service propagation outcome.
pub const SERVICE_APPLIED: &str = "ServiceApplied";
/// Condition type of the validation outcome.
pub const VALID: &str = "Valid";
/// Condition type of the load balancer status (docs/sync.md, "Load balancer status").
pub const LOAD_BALANCER: &str = "LoadBalancerStatusReported";

/// Why the status could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("patching the status of multiclusterservice {object} in the hub")]
    Patch {
        object: String,
        #[source]
        source: Box<kube::Error>,
    },
}

/// One condition to set (the time fields are filled in by [`merge`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

impl Condition {
    /// `EndpointSliceDispatched` for a pass that succeeded, or failed with `error`.
    pub fn dispatched(error: Option<String>) -> Self {
        match error {
            None => Condition {
                type_: DISPATCHED,
                status: true,
                reason: "EndpointSliceDispatchedSucceed".into(),
                message: "EndpointSlice are dispatched successfully".into(),
            },
            Some(message) => Condition {
                type_: DISPATCHED,
                status: false,
                reason: "EndpointSliceDispatchedFailed".into(),
                message,
            },
        }
    }

    /// `ServiceApplied` for a propagation that succeeded, or failed with `error`.
    pub fn service_applied(error: Option<String>) -> Self {
        match error {
            None => Condition {
                type_: SERVICE_APPLIED,
                status: true,
                reason: "ServiceAppliedSucceed".into(),
                message: "Service is propagated to target clusters.".into(),
            },
            Some(message) => Condition {
                type_: SERVICE_APPLIED,
                status: false,
                reason: "ServiceAppliedFailed".into(),
                message,
            },
        }
    }

    /// `LoadBalancerStatusReported` as the component decided it.
    pub fn load_balancer(report: &LoadBalancerReport) -> Self {
        Condition {
            type_: LOAD_BALANCER,
            status: report.complete,
            reason: report.reason.clone(),
            message: messages::join_bounded(
                std::slice::from_ref(&report.message),
                messages::CONDITION_LIMIT,
            ),
        }
    }

    /// `Valid`: True, or False with the rendered validation errors.
    pub fn valid(invalid: Option<String>) -> Self {
        match invalid {
            None => Condition {
                type_: VALID,
                status: true,
                reason: "ValidationSucceed".into(),
                message: String::new(),
            },
            Some(message) => Condition {
                type_: VALID,
                status: false,
                reason: "ValidationFailed".into(),
                message,
            },
        }
    }
}

/// The conditions after setting `wanted` on `current`, or `None` when nothing would change.
/// Conditions of other types are kept as they are.
pub fn merge(
    current: &[Value],
    wanted: &[Condition],
    generation: Option<i64>,
    now: &str,
) -> Option<Vec<Value>> {
    let mut out = current.to_vec();
    let mut changed = false;
    for c in wanted {
        let status = if c.status { "True" } else { "False" };
        let existing = out.iter().position(|v| v["type"] == c.type_);
        let old = existing.map(|i| &out[i]);
        let same = old.is_some_and(|o| {
            o["status"] == status
                && o["reason"] == c.reason
                && o["message"] == c.message.as_str()
                && o.get("observedGeneration").and_then(Value::as_i64) == generation
        });
        if same {
            continue;
        }
        let transition = match old {
            Some(o) if o["status"] == status => o["lastTransitionTime"].clone(),
            _ => json!(now),
        };
        let mut value = json!({
            "type": c.type_, "status": status, "reason": c.reason,
            "message": c.message, "lastTransitionTime": transition,
        });
        if let Some(g) = generation {
            value["observedGeneration"] = json!(g);
        }
        match existing {
            Some(i) => out[i] = value,
            None => out.push(value),
        }
        changed = true;
    }
    changed.then_some(out)
}

/// Sets `wanted` on the MCS's `/status` (a merge patch of `status.conditions`); writes nothing
/// when they are already there.
pub async fn set_conditions(
    hub: &Client,
    mcs: &DynamicObject,
    wanted: &[Condition],
) -> Result<(), StatusError> {
    set_status(hub, mcs, wanted, None).await
}

/// [`set_conditions`], and `status.loadBalancer.ingress` set to `ingress` when it is given (in
/// the same patch; an empty list removes the field, leaving `loadBalancer: {}` as a Service
/// without ingress has it).
pub async fn set_status(
    hub: &Client,
    mcs: &DynamicObject,
    wanted: &[Condition],
    ingress: Option<Vec<LoadBalancerIngress>>,
) -> Result<(), StatusError> {
    let current = mcs.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let now = serde_json::to_value(Time(Timestamp::now()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let conditions = merge(&current, wanted, mcs.metadata.generation, &now);
    if conditions.is_none() && ingress.is_none() {
        return Ok(());
    }
    let api: Api<DynamicObject> = Api::namespaced_with(
        hub.clone(),
        mcs.metadata.namespace.as_deref().unwrap_or_default(),
        &mcs_resource(),
    );
    let name = mcs.metadata.name.as_deref().unwrap_or_default();
    let mut status = serde_json::Map::new();
    if let Some(conditions) = conditions {
        status.insert("conditions".into(), json!(conditions));
    }
    if let Some(ingress) = ingress {
        let ingress = (!ingress.is_empty()).then_some(ingress);
        status.insert("loadBalancer".into(), json!({ "ingress": ingress }));
    }
    let value = json!({ "status": status });
    let (params, patch) = (PatchParams::default(), Patch::Merge(&value));
    on_conflict(|| api.patch_status(name, &params, &patch))
        .await
        .map(drop)
        .map_err(|source| StatusError::Patch {
            object: object_name(mcs),
            source: Box::new(source),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_transition_time_while_the_status_stays() {
        let first = merge(&[], &[Condition::dispatched(None)], Some(1), "t1").unwrap();
        assert_eq!(first[0]["lastTransitionTime"], "t1");
        assert_eq!(
            merge(&first, &[Condition::dispatched(None)], Some(1), "t2"),
            None
        );
        let failed = merge(
            &first,
            &[Condition::dispatched(Some("boom".into()))],
            Some(1),
            "t3",
        )
        .unwrap();
        assert_eq!(failed[0]["lastTransitionTime"], "t3");
        let again = merge(
            &failed,
            &[Condition::dispatched(Some("other".into()))],
            Some(1),
            "t4",
        )
        .unwrap();
        assert_eq!(again[0]["lastTransitionTime"], "t3");
        assert_eq!(again[0]["message"], "other");
    }

    #[test]
    fn keeps_conditions_of_other_types() {
        let other = json!({"type": "ServiceApplied", "status": "True"});
        let out = merge(
            std::slice::from_ref(&other),
            &[Condition::dispatched(None)],
            None,
            "t",
        )
        .unwrap();
        assert_eq!(out[0], other);
        assert_eq!(out[1]["type"], DISPATCHED);
    }
}
