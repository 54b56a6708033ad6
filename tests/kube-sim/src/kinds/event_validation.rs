//! Event validation (`k8s.io/kubernetes/pkg/apis/core/validation/events.go`), on the stored
//! core/v1 form whatever API the request came through: `legacyValidateEvent` for every Event
//! (the involved object's namespace; for Events with an eventTime, the reporting fields), and
//! for `events.k8s.io/v1` requests the strict checks of `ValidateEventCreate` and the
//! immutable fields of `ValidateEventUpdate`. Errors name the internal fields
//! (`firstTimestamp`, not `deprecatedFirstTimestamp`), as the apiserver's do.

use serde_json::Value;

use crate::status::ApiError;
use crate::types::field::{self, FieldError};
use crate::types::names::qualified_name;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// `ValidateEventCreate`; `strict` for `events.k8s.io/v1` requests.
pub fn validate_create(event: &Value, strict: bool) -> Result<(), ApiError> {
    let mut errors = legacy(event);
    if strict {
        errors.extend(series(event));
        errors.extend(strict_create(event));
    }
    fail_if_any(event, &errors)
}

/// `ValidateEventUpdate`; `strict` for `events.k8s.io/v1` requests.
pub fn validate_update(new: &Value, old: &Value, strict: bool) -> Result<(), ApiError> {
    let mut errors = legacy(new);
    if strict {
        if new["series"] != old["series"] {
            errors.extend(series(new));
        }
        for key in IMMUTABLE {
            if new[key] != old[key] {
                errors.push(FieldError::invalid(
                    key,
                    new[key].clone(),
                    "field is immutable",
                ));
            }
        }
    }
    fail_if_any(new, &errors)
}

const IMMUTABLE: [&str; 13] = [
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];

fn fail_if_any(event: &Value, errors: &[FieldError]) -> Result<(), ApiError> {
    field::refuse("", "Event", crate::object::name(event), errors)
}

fn text<'a>(event: &'a Value, key: &str) -> &'a str {
    event[key].as_str().unwrap_or_default()
}

/// `legacyValidateEvent`.
fn legacy(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = crate::object::namespace(event);
    let involved_namespace = event["involvedObject"]["namespace"]
        .as_str()
        .unwrap_or_default();
    let mismatch = |errors: &mut Vec<FieldError>| {
        errors.push(FieldError::invalid(
            "involvedObject.namespace",
            Value::from(involved_namespace),
            "does not match event.namespace",
        ));
    };
    if event["eventTime"].is_null() {
        let agrees = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !agrees {
            mismatch(&mut errors);
        }
        return errors;
    }
    if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
        mismatch(&mut errors);
    }
    let controller = text(event, "reportingComponent");
    if controller.is_empty() {
        errors.push(FieldError::required("reportingController", ""));
    }
    for problem in qualified_name(controller) {
        errors.push(FieldError::invalid(
            "reportingController",
            Value::from(controller),
            problem,
        ));
    }
    required_within(
        &mut errors,
        event,
        "reportingInstance",
        "reportingInstance",
        REPORTING_INSTANCE_LIMIT,
    );
    required_within(&mut errors, event, "action", "action", ACTION_LIMIT);
    required_within(&mut errors, event, "reason", "reason", REASON_LIMIT);
    if text(event, "message").len() > NOTE_LIMIT {
        errors.push(too_long("message", NOTE_LIMIT));
    }
    errors
}

fn required_within(
    errors: &mut Vec<FieldError>,
    event: &Value,
    key: &str,
    field: &str,
    limit: usize,
) {
    let value = text(event, key);
    if value.is_empty() {
        errors.push(FieldError::required(field, ""));
    }
    if value.len() > limit {
        errors.push(too_long(field, limit));
    }
}

fn too_long(field: &str, limit: usize) -> FieldError {
    FieldError::invalid(
        field,
        Value::from(""),
        format!("can have at most {limit} characters"),
    )
}

/// `validateV1EventSeries`.
fn series(event: &Value) -> Vec<FieldError> {
    let series = &event["series"];
    if !series.is_object() {
        return Vec::new();
    }
    let mut errors = Vec::new();
    if series["count"].as_i64().unwrap_or(0) < 2 {
        errors.push(FieldError::invalid(
            "series.count",
            Value::from(""),
            "should be at least 2",
        ));
    }
    if series["lastObservedTime"].is_null() {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

/// The strict part of `ValidateEventCreate`.
fn strict_create(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if event["eventTime"].is_null() {
        errors.push(FieldError::required("eventTime", ""));
    }
    let kind = text(event, "type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(FieldError::invalid(
            "type",
            Value::from(""),
            format!("has invalid value: {kind}"),
        ));
    }
    for key in ["firstTimestamp", "lastTimestamp"] {
        if !event[key].is_null() {
            errors.push(FieldError::invalid(
                key,
                Value::from(""),
                "needs to be unset",
            ));
        }
    }
    if event["count"].as_i64().unwrap_or(0) != 0 {
        errors.push(FieldError::invalid(
            "count",
            Value::from(""),
            "needs to be unset",
        ));
    }
    if event["source"].as_object().is_some_and(|s| !s.is_empty()) {
        errors.push(FieldError::invalid(
            "source",
            Value::from(""),
            "needs to be unset",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core_event(extra: Value) -> Value {
        let mut event = json!({
            "metadata": {"name": "web.1", "namespace": "rec-11"},
            "involvedObject": {"kind": "MultiClusterService", "namespace": "rec-11", "name": "web"},
            "reason": "SyncServiceFailed", "type": "Warning", "source": {},
            "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
            "reportingComponent": "", "reportingInstance": "",
        });
        event
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        event
    }

    #[test]
    fn the_involved_object_must_be_in_the_events_namespace() {
        assert!(validate_create(&core_event(json!({})), false).is_ok());
        let elsewhere = core_event(json!({"involvedObject": {"namespace": "elsewhere"}}));
        let error = validate_create(&elsewhere, false).unwrap_err();
        assert_eq!(
            error.message,
            "Event \"web.1\" is invalid: involvedObject.namespace: Invalid value: \"elsewhere\": does not match event.namespace"
        );
    }

    #[test]
    fn events_k8s_io_events_need_an_event_time() {
        let error = validate_create(&core_event(json!({})), true).unwrap_err();
        assert_eq!(
            error.message,
            "Event \"web.1\" is invalid: eventTime: Required value"
        );
        let complete = core_event(json!({
            "eventTime": "2026-01-01T00:00:00.000000Z", "action": "Reconcile",
            "reportingComponent": "mcs-policy", "reportingInstance": "mcs-policy-0",
        }));
        assert!(validate_create(&complete, true).is_ok());
        let mut changed = complete.clone();
        changed["reason"] = json!("Other");
        let error = validate_update(&changed, &complete, true).unwrap_err();
        assert!(
            error
                .message
                .ends_with("reason: Invalid value: \"Other\": field is immutable"),
            "{}",
            error.message
        );
        assert!(validate_update(&changed, &complete, false).is_ok());
    }
}
