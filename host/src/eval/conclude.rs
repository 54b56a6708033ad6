//! `mcs-policy eval conclude`: the end of one sync pass (WIT `conclude`), offline; the input
//! and answer are shaped as for `eval decide` ([`super::decide`]).

use k8s_openapi::api::core::v1::LoadBalancerIngress;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{EvalError, ingress_list, read_json};
use crate::engine::PolicyEngine;
use crate::engine::types::{
    EventNote, LoadBalancerReport, Reported, StatusBasis, StatusNow, StatusUpdate, WriteFailures,
};

use super::decide::{UnsyncedInput, text};

/// The input of `eval conclude` (the `input` of a `tests/fixtures/conclude` case).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConcludeInput {
    basis: BasisInput,
    #[serde(default)]
    failures: FailuresInput,
    current: CurrentInput,
    #[serde(default)]
    reported: Option<ReportedInput>,
}

/// WIT `status-basis`, as `eval decide` prints it; lists and options may be left out.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BasisInput {
    report: bool,
    #[serde(default)]
    invalid: Option<String>,
    #[serde(default)]
    dispatches: bool,
    #[serde(default)]
    service_failures: Vec<String>,
    #[serde(default)]
    template_missing: bool,
    #[serde(default)]
    dispatch_failures: Vec<String>,
    #[serde(default)]
    load_balancer_failures: Vec<String>,
    #[serde(default)]
    load_balancer: Option<ReportInput>,
    #[serde(default)]
    unknown_providers: Vec<String>,
    #[serde(default)]
    unknown_consumers: Vec<String>,
    #[serde(default)]
    incompatible: Vec<String>,
    #[serde(default)]
    unsynced: Vec<UnsyncedInput>,
}

/// WIT `load-balancer-report`, as `eval load-balancer` prints it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportInput {
    #[serde(default)]
    ingress: Vec<LoadBalancerIngress>,
    changed: bool,
    complete: bool,
    reason: String,
    message: String,
}

/// WIT `write-failures`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FailuresInput {
    #[serde(default)]
    service: Vec<String>,
    #[serde(default)]
    dispatch: Vec<String>,
}

/// WIT `status-now`: `conditions` as a JSON array (or a string holding the exact text; absent
/// is `[]`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CurrentInput {
    #[serde(default)]
    conditions: Option<Value>,
    #[serde(default)]
    generation: Option<i64>,
    now: String,
}

/// WIT `reported`, as `eval conclude` prints it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReportedInput {
    #[serde(default)]
    unknown: Vec<String>,
    #[serde(default)]
    incompatible: Vec<String>,
    #[serde(default)]
    unsynced: Vec<String>,
    #[serde(default)]
    service_applied: Option<bool>,
    #[serde(default)]
    dispatched: Option<bool>,
    #[serde(default)]
    load_balancer: Option<bool>,
}

/// The arguments of `conclude`.
#[derive(Clone, Debug)]
pub struct ConcludeArgs {
    pub basis: StatusBasis,
    pub failures: WriteFailures,
    pub current: StatusNow,
    pub reported: Option<Reported>,
}

/// `eval conclude`: the component's `status-update` as JSON.
pub fn conclude(
    engine: &PolicyEngine,
    input: &str,
    budget: std::time::Duration,
) -> Result<Value, EvalError> {
    conclude_json(engine, &read_json(input)?, input, budget)
}

/// `eval conclude` on JSON text already read; `input` names it in errors.
pub fn conclude_json(
    engine: &PolicyEngine,
    json: &str,
    input: &str,
    budget: std::time::Duration,
) -> Result<Value, EvalError> {
    let a = conclude_input(json, input)?;
    let update = engine.conclude(
        &a.basis,
        &a.failures,
        &a.current,
        a.reported.as_ref(),
        budget,
    )?;
    Ok(conclude_answer(update))
}

/// The arguments of `conclude` from a conclude input (JSON text); `input` names it in errors.
pub fn conclude_input(json: &str, input: &str) -> Result<ConcludeArgs, EvalError> {
    let parsed: ConcludeInput =
        serde_json::from_str(json).map_err(|e| EvalError::ConcludeInput {
            input: input.to_string(),
            reason: e.to_string(),
        })?;
    let b = parsed.basis;
    let basis = StatusBasis {
        report: b.report,
        invalid: b.invalid,
        dispatches: b.dispatches,
        service_failures: b.service_failures,
        template_missing: b.template_missing,
        dispatch_failures: b.dispatch_failures,
        load_balancer_failures: b.load_balancer_failures,
        load_balancer: b.load_balancer.map(|r| LoadBalancerReport {
            ingress: ingress_list(&r.ingress),
            changed: r.changed,
            complete: r.complete,
            reason: r.reason,
            message: r.message,
        }),
        unknown_providers: b.unknown_providers,
        unknown_consumers: b.unknown_consumers,
        incompatible: b.incompatible,
        unsynced: b.unsynced.into_iter().map(UnsyncedInput::wit).collect(),
    };
    let current = StatusNow {
        conditions: parsed
            .current
            .conditions
            .map_or_else(|| "[]".to_string(), text),
        generation: parsed.current.generation,
        now: parsed.current.now,
    };
    let reported = parsed.reported.map(|r| Reported {
        unknown: r.unknown,
        incompatible: r.incompatible,
        unsynced: r.unsynced,
        service_applied: r.service_applied,
        dispatched: r.dispatched,
        load_balancer: r.load_balancer,
    });
    Ok(ConcludeArgs {
        basis,
        failures: WriteFailures {
            service: parsed.failures.service,
            dispatch: parsed.failures.dispatch,
        },
        current,
        reported,
    })
}

/// A `status-update` as `eval conclude` prints it: `conditions` as JSON (`null`: unchanged);
/// `reported.unsynced` only when there is one.
pub fn conclude_answer(update: StatusUpdate) -> Value {
    let conditions = update
        .conditions
        .map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t)));
    let events: Vec<Value> = update.events.into_iter().map(event_json).collect();
    let r = update.reported;
    let mut reported = json!({
        "unknown": r.unknown,
        "incompatible": r.incompatible,
        "serviceApplied": r.service_applied,
        "dispatched": r.dispatched,
        "loadBalancer": r.load_balancer,
    });
    if !r.unsynced.is_empty() {
        reported["unsynced"] = json!(r.unsynced);
    }
    json!({
        "conditions": conditions,
        "events": events,
        "reported": reported,
        "retry": update.retry,
    })
}

fn event_json(e: EventNote) -> Value {
    json!({ "warning": e.warning, "reason": e.reason, "message": e.message })
}
