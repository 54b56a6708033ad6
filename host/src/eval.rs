//! `mcs-policy eval`: one decision offline, through the component (never a native copy).
//! Reads an AdmissionReview (or, for `filter`, `service`, `load-balancer`, `decide`,
//! `conclude` and `clusterset-decide`, their input) as JSON or YAML from a file or stdin and
//! prints the answer as JSON on stdout. `decide` and `conclude`, the sync pass's calls, are in
//! [`decide`] and [`conclude`]; `clusterset-decide`, the Multi-Cluster Services API's pass, in
//! [`clusterset`].

mod clusterset;
mod conclude;
mod decide;

pub use clusterset::{
    clusterset_answer, clusterset_decide, clusterset_decide_json, clusterset_input,
};

pub use conclude::{ConcludeArgs, conclude, conclude_answer, conclude_input, conclude_json};
pub use decide::{DecideArgs, decide, decide_answer, decide_input, decide_json};

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::LoadBalancerIngress;
use k8s_openapi::api::discovery::v1::EndpointSlice as KubeSlice;
use serde::Deserialize;

use crate::engine::types::{
    EndpointSlice, ExposurePort, LoadBalancerIngress as WitIngress, LoadBalancerReport, McsRef,
    ProviderIngress, ProviderLoadBalancer, ServiceAction, ServicePort,
};
use crate::engine::{EngineArgs, EngineError, PolicyEngine, convert};
use crate::settings::{ContextFile, Policy, PolicyArgs};
use crate::webhook::review::{
    ReviewError, ReviewOut, mutation_response, parse_review, validation_response,
};

/// `mcs-policy eval <what>`: one request, the policy and engine to answer it with.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The request, as JSON or YAML; `-` reads stdin.
    #[arg(value_name = "REQUEST")]
    pub request: String,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub engine: EngineArgs,

    /// Time budget of the evaluation, in milliseconds.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub budget_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("reading {input} failed")]
    Read {
        input: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{input} is neither JSON nor YAML: {reason}")]
    Syntax { input: String, reason: String },
    #[error("{input} is not a usable AdmissionReview: {source}")]
    Review {
        input: String,
        #[source]
        source: ReviewError,
    },
    #[error("{input} is not a filter input: {reason}")]
    FilterInput { input: String, reason: String },
    #[error("{input} is not a service input: {reason}")]
    ServiceInput { input: String, reason: String },
    #[error("{input} is not a load-balancer input: {reason}")]
    LoadBalancerInput { input: String, reason: String },
    #[error("{input} is not a decide input: {reason}")]
    DecideInput { input: String, reason: String },
    #[error("{input} is not a conclude input: {reason}")]
    ConcludeInput { input: String, reason: String },
    #[error("{input} is not a clusterset-decide input: {reason}")]
    ClustersetInput { input: String, reason: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Reads `input` (`-` = stdin) and returns it as JSON text (YAML is converted).
pub fn read_json(input: &str) -> Result<String, EvalError> {
    let mut text = String::new();
    let read = if input == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(Path::new(input)).map(|t| text = t)
    };
    read.map_err(|source| EvalError::Read {
        input: input.to_string(),
        source,
    })?;
    if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        return Ok(text);
    }
    let value: serde_json::Value = serde_yaml::from_str(&text).map_err(|e| EvalError::Syntax {
        input: input.to_string(),
        reason: e.to_string(),
    })?;
    Ok(value.to_string())
}

/// `eval validate` / `eval mutate`: the response AdmissionReview.
pub fn admission(
    engine: &PolicyEngine,
    mutate: bool,
    policy: &Policy,
    context: &ContextFile,
    input: &str,
    budget: Duration,
) -> Result<ReviewOut, EvalError> {
    let json = read_json(input)?;
    let review = parse_review(json.as_bytes()).map_err(|source| EvalError::Review {
        input: input.to_string(),
        source,
    })?;
    if mutate {
        let patch = engine.mutate(&review.request, &policy.settings, budget)?;
        Ok(mutation_response(&review, patch))
    } else {
        let ctx = context.for_object(&review.namespace, &review.name);
        let verdict = engine.validate(&review.request, &policy.settings, &ctx, budget)?;
        Ok(validation_response(&review, verdict))
    }
}

/// The input of `eval filter` (the `input` of a `tests/fixtures/filter` case).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FilterInput {
    mcs: McsInput,
    #[serde(default)]
    service_ports: Option<Vec<PortInput>>,
    source_cluster: String,
    consumer_cluster: String,
    #[serde(default)]
    slices: Vec<KubeSlice>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McsInput {
    name: String,
    namespace: String,
    #[serde(default)]
    ports: Vec<PortInput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PortInput {
    #[serde(default)]
    name: String,
    #[serde(default)]
    port: i32,
}

/// `eval filter`: the EndpointSlice copies for the consumer, as Kubernetes JSON.
pub fn filter(
    engine: &PolicyEngine,
    input: &str,
    budget: Duration,
) -> Result<serde_json::Value, EvalError> {
    filter_json(engine, &read_json(input)?, input, budget)
}

/// `eval filter` on JSON text already read; `input` names it in errors.
pub fn filter_json(
    engine: &PolicyEngine,
    json: &str,
    input: &str,
    budget: Duration,
) -> Result<serde_json::Value, EvalError> {
    let parsed: FilterInput = serde_json::from_str(json).map_err(|e| EvalError::FilterInput {
        input: input.to_string(),
        reason: e.to_string(),
    })?;
    let mcs = McsRef {
        name: parsed.mcs.name,
        namespace: parsed.mcs.namespace,
        ports: parsed
            .mcs
            .ports
            .into_iter()
            .map(|p| ExposurePort {
                name: p.name,
                port: p.port,
            })
            .collect(),
    };
    let service_ports: Option<Vec<ServicePort>> = parsed.service_ports.map(|ports| {
        ports
            .into_iter()
            .map(|p| ServicePort {
                name: p.name,
                port: p.port,
            })
            .collect()
    });
    let slices: Vec<_> = parsed.slices.iter().map(convert::slice_to_wit).collect();
    let copies = engine.filter(
        &mcs,
        service_ports.as_deref(),
        &parsed.source_cluster,
        &parsed.consumer_cluster,
        &slices,
        budget,
    )?;
    Ok(serde_json::Value::Array(
        copies.into_iter().map(slice_json).collect(),
    ))
}

/// An EndpointSlice the component made, as Kubernetes JSON with `apiVersion` and `kind` (how
/// `eval filter` prints copies).
pub fn slice_json(slice: EndpointSlice) -> serde_json::Value {
    kube_slice_json(convert::slice_from_wit(slice))
}

/// A copy as `eval filter` and `eval decide` print it: Kubernetes JSON with `apiVersion` and
/// `kind`.
pub fn kube_slice_json(slice: KubeSlice) -> serde_json::Value {
    let mut v = serde_json::to_value(slice).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("apiVersion".into(), "discovery.k8s.io/v1".into());
        obj.insert("kind".into(), "EndpointSlice".into());
    }
    v
}

/// The input of `eval service` (the `input` of a `tests/fixtures/service` case): Services as
/// JSON objects, or as strings holding the exact text to pass.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceInput {
    template: serde_json::Value,
    #[serde(default)]
    existing: Option<serde_json::Value>,
}

/// `eval service`: the component's `service-action` as JSON, `{"action": "unchanged"}`,
/// `{"action": "create"|"replace", "object": {...}}`, or `{"action": "error", "message": ...}`.
pub fn service(
    engine: &PolicyEngine,
    input: &str,
    budget: Duration,
) -> Result<serde_json::Value, EvalError> {
    service_json(engine, &read_json(input)?, input, budget)
}

/// `eval service` on JSON text already read; `input` names it in errors.
pub fn service_json(
    engine: &PolicyEngine,
    json: &str,
    input: &str,
    budget: Duration,
) -> Result<serde_json::Value, EvalError> {
    let parsed: ServiceInput = serde_json::from_str(json).map_err(|e| EvalError::ServiceInput {
        input: input.to_string(),
        reason: e.to_string(),
    })?;
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    let template = text(parsed.template);
    let existing = parsed.existing.filter(|v| !v.is_null()).map(text);
    let answer = engine.service(&template, existing.as_deref(), budget)?;
    Ok(service_answer(answer))
}

/// A `service` answer as `eval service` prints it; the objects are the component's JSON.
pub fn service_answer(answer: Result<ServiceAction, String>) -> serde_json::Value {
    let object = |action: &str, json: String| {
        let object = serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json));
        serde_json::json!({"action": action, "object": object})
    };
    match answer {
        Ok(ServiceAction::Unchanged) => serde_json::json!({"action": "unchanged"}),
        Ok(ServiceAction::Create(json)) => object("create", json),
        Ok(ServiceAction::Replace(json)) => object("replace", json),
        Ok(ServiceAction::Recreate(json)) => object("recreate", json),
        Ok(ServiceAction::Conflict(why)) => {
            serde_json::json!({"action": "conflict", "message": why})
        }
        Err(message) => serde_json::json!({"action": "error", "message": message}),
    }
}

/// The input of `eval load-balancer` (the `input` of a `tests/fixtures/load-balancer` case):
/// the WIT arguments, with `status.loadBalancer.ingress` entries as Kubernetes JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadBalancerInput {
    providers: Vec<ProviderInput>,
    #[serde(default)]
    current: Vec<LoadBalancerIngress>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderInput {
    cluster: String,
    ingress: IngressInput,
}

/// WIT `provider-ingress`: `{"read": [...]}`, `{"kept": [...] | null}`, `"withdrawn"`.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum IngressInput {
    Read(Vec<LoadBalancerIngress>),
    Kept(Option<Vec<LoadBalancerIngress>>),
    Withdrawn,
}

/// `eval load-balancer`: the component's `load-balancer-report` as JSON, the entries as
/// Kubernetes writes them.
pub fn load_balancer(
    engine: &PolicyEngine,
    input: &str,
    budget: Duration,
) -> Result<serde_json::Value, EvalError> {
    load_balancer_json(engine, &read_json(input)?, input, budget)
}

/// `eval load-balancer` on JSON text already read; `input` names it in errors.
pub fn load_balancer_json(
    engine: &PolicyEngine,
    json: &str,
    input: &str,
    budget: Duration,
) -> Result<serde_json::Value, EvalError> {
    let (providers, current) = load_balancer_input(json, input)?;
    Ok(load_balancer_answer(
        engine.load_balancer_status(&providers, &current, budget)?,
    ))
}

/// The arguments of `load-balancer-status` from a load-balancer input (JSON text); `input`
/// names it in errors.
pub fn load_balancer_input(
    json: &str,
    input: &str,
) -> Result<(Vec<ProviderLoadBalancer>, Vec<WitIngress>), EvalError> {
    let parsed: LoadBalancerInput =
        serde_json::from_str(json).map_err(|e| EvalError::LoadBalancerInput {
            input: input.to_string(),
            reason: e.to_string(),
        })?;
    let wit = |list: Vec<LoadBalancerIngress>| ingress_list(&list);
    let providers = parsed
        .providers
        .into_iter()
        .map(|p| ProviderLoadBalancer {
            cluster: p.cluster,
            ingress: match p.ingress {
                IngressInput::Read(list) => ProviderIngress::Read(wit(list)),
                IngressInput::Kept(list) => ProviderIngress::Kept(list.map(wit)),
                IngressInput::Withdrawn => ProviderIngress::Withdrawn,
            },
        })
        .collect();
    Ok((providers, wit(parsed.current)))
}

/// A `load-balancer-status` answer as `eval load-balancer` prints it.
/// Load balancer entries as Kubernetes JSON gives them, as the component's records.
fn ingress_list(list: &[LoadBalancerIngress]) -> Vec<WitIngress> {
    list.iter().map(convert::ingress_to_wit).collect()
}

/// The component's load balancer entries as Kubernetes JSON.
fn ingress_json(list: Vec<WitIngress>) -> serde_json::Value {
    let list: Vec<LoadBalancerIngress> = list.into_iter().map(convert::ingress_from_wit).collect();
    serde_json::json!(list)
}

pub fn load_balancer_answer(report: LoadBalancerReport) -> serde_json::Value {
    serde_json::json!({
        "ingress": ingress_json(report.ingress),
        "changed": report.changed,
        "complete": report.complete,
        "reason": report.reason,
        "message": report.message,
    })
}
