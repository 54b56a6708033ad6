//! `mcs-policy eval decide` and `eval conclude`: the two calls of one sync pass (WIT `decide`,
//! `conclude`; docs/sync.md#one-pass-over-one-multiclusterservice), offline. The input is the
//! WIT arguments as JSON with camelCase field names; objects the WIT passes as JSON text (the
//! MCS, Services, conditions) are JSON values, or strings holding the exact text; EndpointSlices
//! and load balancer entries are Kubernetes JSON (the slices go to the component as slice
//! names, bodies, maps and port lists, `PassSlices::read`). A `result` is `{"ok": ...}` or `{"err": ...}`, a variant
//! `{"case": payload}` or `"case"`. The answer is printed the same way, with each copy made from
//! its source slice as the controller makes it (`PassSlices::copy`), so the `status` of a
//! `decide` answer is a `conclude` input's `basis`, and the `reported` of a `conclude` answer the
//! next one's `reported`.

use k8s_openapi::api::core::v1::LoadBalancerIngress;
use k8s_openapi::api::discovery::v1::EndpointSlice as KubeSlice;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    EvalError, ingress_json, ingress_list, kube_slice_json, load_balancer_answer, read_json,
    service_answer,
};
use crate::engine::types::{
    FinalizerChange, MemberObjects, MemberRead, MemberState, PassDecision, PassRead, ReadFailure,
    StatusBasis, SyncPlan, SyncSettings, UnsyncedCluster,
};
use crate::engine::{EngineError, PassSlices, PolicyEngine};

/// WIT `result<T, E>`.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum ResultInput<T, E> {
    Ok(T),
    Err(E),
}

impl<T, E> ResultInput<T, E> {
    pub(super) fn wit<U, F>(
        self,
        ok: impl FnOnce(T) -> U,
        err: impl FnOnce(E) -> F,
    ) -> Result<U, F> {
        match self {
            ResultInput::Ok(v) => Ok(ok(v)),
            ResultInput::Err(e) => Err(err(e)),
        }
    }
}

/// JSON text as the WIT passes it: a string is the text itself, anything else its JSON.
pub(super) fn text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// The input of `eval decide` (the `input` of a `tests/fixtures/decide` case).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecideInput {
    pass: PassInput,
    #[serde(default)]
    settings: SettingsInput,
}

/// WIT `pass-read`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PassInput {
    mcs: Value,
    #[serde(default)]
    members: Vec<MemberInput>,
    template: ResultInput<Option<Value>, String>,
    #[serde(default)]
    unsynced: Vec<UnsyncedInput>,
}

/// WIT `unsynced-cluster`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UnsyncedInput {
    cluster: String,
    reason: String,
}

impl UnsyncedInput {
    pub(super) fn wit(self) -> UnsyncedCluster {
        UnsyncedCluster {
            cluster: self.cluster,
            reason: self.reason,
        }
    }
}

/// WIT `member-read`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MemberInput {
    cluster: String,
    state: StateInput,
    #[serde(default)]
    unreadable_ms: u64,
    #[serde(default)]
    last_ingress: Option<Vec<LoadBalancerIngress>>,
}

/// WIT `member-state`: `{"notReady": "why"}` or `{"ready": {"slices": ..., "service": ...}}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum StateInput {
    NotReady(String),
    Ready(ObjectsInput),
}

/// WIT `member-objects`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectsInput {
    slices: ResultInput<Vec<KubeSlice>, FailureInput>,
    service: ResultInput<Option<Value>, FailureInput>,
}

/// WIT `read-failure`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FailureInput {
    message: String,
    #[serde(default)]
    not_served: bool,
}

impl FailureInput {
    fn wit(self) -> ReadFailure {
        ReadFailure {
            message: self.message,
            not_served: self.not_served,
        }
    }
}

/// WIT `sync-settings`.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SettingsInput {
    #[serde(default)]
    stale_timeout_ms: Option<u64>,
}

/// `eval decide`: the component's `decide` answer as JSON, `{"ok": decision}` or
/// `{"err": message}`.
pub fn decide(
    engine: &PolicyEngine,
    input: &str,
    budget: std::time::Duration,
) -> Result<Value, EvalError> {
    decide_json(engine, &read_json(input)?, input, budget)
}

/// `eval decide` on JSON text already read; `input` names it in errors.
pub fn decide_json(
    engine: &PolicyEngine,
    json: &str,
    input: &str,
    budget: std::time::Duration,
) -> Result<Value, EvalError> {
    let args = decide_input(json, input)?;
    let answer = engine.decide(&args.pass, args.settings, budget)?;
    decide_answer(answer, &args.slices)
}

/// The arguments of `decide` from a decide input, and the slices its copies are made from.
#[derive(Debug)]
pub struct DecideArgs {
    pub pass: PassRead,
    pub settings: SyncSettings,
    /// The members' EndpointSlices, as read.
    pub slices: PassSlices,
}

/// The arguments of `decide` from a decide input (JSON text); `input` names it in errors.
pub fn decide_input(json: &str, input: &str) -> Result<DecideArgs, EvalError> {
    let parsed: DecideInput = serde_json::from_str(json).map_err(|e| EvalError::DecideInput {
        input: input.to_string(),
        reason: e.to_string(),
    })?;
    let mut slices = PassSlices::new();
    let members = parsed
        .pass
        .members
        .into_iter()
        .map(|m| MemberRead {
            state: match m.state {
                StateInput::NotReady(why) => MemberState::NotReady(why),
                StateInput::Ready(objects) => MemberState::Ready(MemberObjects {
                    slices: objects
                        .slices
                        .wit(|list| slices.read(&m.cluster, list), FailureInput::wit),
                    service: objects
                        .service
                        .wit(|service| service.map(text), FailureInput::wit),
                }),
            },
            cluster: m.cluster,
            unreadable_ms: m.unreadable_ms,
            last_ingress: m.last_ingress.as_deref().map(ingress_list),
        })
        .collect();
    let pass = PassRead {
        mcs: text(parsed.pass.mcs),
        members,
        template: parsed.pass.template.wit(|t| t.map(text), |e| e),
        slice_bodies: slices.bodies().to_vec(),
        slice_maps: slices.maps().to_vec(),
        slice_ports: slices.ports().to_vec(),
        unsynced: parsed
            .pass
            .unsynced
            .into_iter()
            .map(UnsyncedInput::wit)
            .collect(),
    };
    let settings = SyncSettings {
        stale_timeout_ms: parsed.settings.stale_timeout_ms,
    };
    Ok(DecideArgs {
        pass,
        settings,
        slices,
    })
}

/// A `decide` answer as `eval decide` prints it, each copy made from `slices` (the pass's). An
/// error when the component named a slice or a port that the pass did not have.
pub fn decide_answer(
    answer: Result<PassDecision, String>,
    slices: &PassSlices,
) -> Result<Value, EvalError> {
    Ok(match answer {
        Ok(decision) => json!({ "ok": decision_json(decision, slices)? }),
        Err(message) => json!({ "err": message }),
    })
}

fn decision_json(d: PassDecision, slices: &PassSlices) -> Result<Value, EvalError> {
    let finalizer = match d.finalizer {
        FinalizerChange::Keep => json!("keep"),
        FinalizerChange::Add(name) => json!({ "add": name }),
        FinalizerChange::Release(name) => json!({ "release": name }),
    };
    let copies = d
        .copies
        .iter()
        .map(|w| {
            let slice = slices.copy(w).map_err(|message| EngineError::Trap {
                function: "decide",
                message,
            })?;
            Ok(json!({ "cluster": w.cluster, "slice": kube_slice_json(slice) }))
        })
        .collect::<Result<Vec<Value>, EvalError>>()?;
    let deletions: Vec<Value> = d
        .deletions
        .into_iter()
        .map(|o| json!({ "cluster": o.cluster, "name": o.name }))
        .collect();
    let services: Vec<Value> = d
        .services
        .into_iter()
        .map(|w| {
            let mut action = service_answer(Ok(w.action));
            if let Some(fields) = action.as_object_mut() {
                fields.insert("cluster".into(), json!(w.cluster));
            }
            action
        })
        .collect();
    let remember: Vec<Value> = d
        .remember_ingress
        .into_iter()
        .map(|r| json!({ "cluster": r.cluster, "ingress": ingress_json(r.ingress) }))
        .collect();
    Ok(json!({
        "plan": plan_json(d.plan),
        "finalizer": finalizer,
        "copies": copies,
        "deletions": deletions,
        "services": services,
        "ingress": d.ingress.map(ingress_json),
        "rememberIngress": remember,
        "status": basis_json(d.status),
    }))
}

fn plan_json(p: SyncPlan) -> Value {
    let ports: Vec<Value> = p
        .mcs
        .ports
        .into_iter()
        .map(|port| json!({ "name": port.name, "port": port.port }))
        .collect();
    json!({
        "active": p.active,
        "deleting": p.deleting,
        "invalid": p.invalid,
        "mcs": { "name": p.mcs.name, "namespace": p.mcs.namespace, "ports": ports },
        "providers": p.providers,
        "consumers": p.consumers,
        "unknownProviders": p.unknown_providers,
        "unknownConsumers": p.unknown_consumers,
        "loadBalancer": p.load_balancer,
        "sweepable": p.sweepable,
    })
}

/// A `status-basis` as `eval decide` prints it and `eval conclude` reads it; `unsynced` only
/// when there is one.
fn basis_json(b: StatusBasis) -> Value {
    let mut basis = json!({
        "report": b.report,
        "invalid": b.invalid,
        "dispatches": b.dispatches,
        "serviceFailures": b.service_failures,
        "templateMissing": b.template_missing,
        "dispatchFailures": b.dispatch_failures,
        "loadBalancerFailures": b.load_balancer_failures,
        "loadBalancer": b.load_balancer.map(load_balancer_answer),
        "unknownProviders": b.unknown_providers,
        "unknownConsumers": b.unknown_consumers,
        "incompatible": b.incompatible,
    });
    if !b.unsynced.is_empty() {
        let unsynced: Vec<Value> = b
            .unsynced
            .into_iter()
            .map(|u| json!({ "cluster": u.cluster, "reason": u.reason }))
            .collect();
        basis["unsynced"] = json!(unsynced);
    }
    basis
}
