//! Leases (`coordination.k8s.io/v1`): the spec as Go renders `LeaseSpec` (`acquireTime` and
//! `renewTime` are `MicroTime`s, always with six fractional digits; unset pointers omitted;
//! `spec` always present; unknown fields dropped with a warning), `ValidateLeaseSpec`, and the
//! strategy's refusal of unconditional updates (a PUT must carry a resourceVersion).
//! Leases have no `metadata.generation`.

use serde_json::{Map, Value, json};

use crate::status::ApiError;
use crate::types::field::{self, FieldError};
use crate::warning;

pub const GROUP: &str = "coordination.k8s.io";

const SPEC_FIELDS: [&str; 7] = [
    "holderIdentity",
    "leaseDurationSeconds",
    "acquireTime",
    "renewTime",
    "leaseTransitions",
    "strategy",
    "preferredHolder",
];

/// The Lease as stored: its spec rendered as Go renders it.
pub fn canonical(mut lease: Value) -> Value {
    let spec = lease
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Map::new();
    for (key, value) in spec {
        if !SPEC_FIELDS.contains(&key.as_str()) {
            warning::add(format!("unknown field \"spec.{key}\""));
            continue;
        }
        let value = match key.as_str() {
            "acquireTime" | "renewTime" => super::go_time::micro_time(&value),
            _ => value,
        };
        if !value.is_null() {
            out.insert(key, value);
        }
    }
    lease["spec"] = Value::Object(out);
    lease
}

/// `ValidateLease` / `ValidateLeaseUpdate` (the spec part).
pub fn validate(lease: &Value) -> Result<(), ApiError> {
    let spec = &lease["spec"];
    let mut errors = Vec::new();
    if let Some(duration) = spec["leaseDurationSeconds"].as_i64().filter(|d| *d <= 0) {
        errors.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            json!(duration),
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = spec["leaseTransitions"].as_i64().filter(|t| *t < 0) {
        errors.push(FieldError::invalid(
            "spec.leaseTransitions",
            json!(transitions),
            "must be greater than or equal to 0",
        ));
    }
    let strategy = spec["strategy"].as_str();
    if let Some(strategy) = strategy {
        errors.extend(strategy_errors(strategy));
    }
    let preferred = spec["preferredHolder"]
        .as_str()
        .is_some_and(|p| !p.is_empty());
    if preferred && strategy.is_none_or(str::is_empty) {
        errors.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    field::refuse(GROUP, "Lease", crate::object::name(lease), &errors)
}

/// `ValidateCoordinatedLeaseStrategy`.
fn strategy_errors(strategy: &str) -> Vec<FieldError> {
    const FIELD: &str = "spec.strategy.strategy";
    if strategy.contains('/') {
        return crate::types::names::qualified_name(strategy)
            .into_iter()
            .map(|problem| FieldError::invalid(FIELD, json!(strategy), problem))
            .collect();
    }
    if strategy == "OldestEmulationVersion" {
        return Vec::new();
    }
    vec![FieldError::not_supported(
        FIELD,
        json!(strategy),
        &["OldestEmulationVersion"],
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(spec: Value) -> Value {
        json!({"metadata": {"name": "mcs-policy-sync", "namespace": "rec-12"}, "spec": spec})
    }

    #[test]
    fn micro_times_get_six_digits_and_nulls_go() {
        let stored = canonical(lease(json!({
            "holderIdentity": "pod-a", "renewTime": "2026-01-01T00:00:00Z", "acquireTime": null,
        })));
        assert_eq!(
            stored["spec"],
            json!({"holderIdentity": "pod-a", "renewTime": "2026-01-01T00:00:00.000000Z"})
        );
        assert_eq!(canonical(json!({"metadata": {}}))["spec"], json!({}));
    }

    #[test]
    fn durations_must_be_positive() {
        assert!(validate(&lease(json!({"leaseDurationSeconds": 15}))).is_ok());
        let error = validate(&lease(json!({"leaseDurationSeconds": 0}))).unwrap_err();
        assert_eq!(
            error.message,
            "Lease.coordination.k8s.io \"mcs-policy-sync\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
        );
        let error = validate(&lease(json!({"preferredHolder": "b"}))).unwrap_err();
        assert!(
            error
                .message
                .contains("may only be specified if `strategy` is defined")
        );
    }
}
