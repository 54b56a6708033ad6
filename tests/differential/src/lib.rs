//! Differential testing of the policy: the same call answered by the component under wasmtime
//! (`mcs_policy::engine::PolicyEngine`, as the webhook and the sync controller run it) and by the
//! guest compiled natively, which must give the same answer, byte for byte; a trap, a timeout or
//! a memory-cap hit in the component is a failure too. On top of agreement, [`properties`]
//! checks what must hold of any answer (a patch applies and defaulting again changes nothing, a
//! Service action converges, copies are never copied again, ...).
//!
//! The fuzz targets in `fuzz/` are one-line calls into [`targets`]; the differential test
//! (tests/tests/differential.rs) runs [`targets::structured`] on random bytes in every
//! `cargo test`, and replays the checked-in fuzz corpus through every target.

pub mod inputs;
mod native;
pub mod properties;
pub mod structure;
pub mod targets;

use std::sync::OnceLock;
use std::time::Duration;

use mcs_policy::engine::types as h;
use mcs_policy::engine::{EngineError, EngineOptions, PassSlices, PolicyEngine};

/// Time budget of one component call: generous, so only a runaway call (never a busy machine)
/// ends in a timeout.
pub const BUDGET: Duration = Duration::from_secs(20);

/// One call of an exported function, with its arguments as host records.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Validate {
        request: h::AdmissionRequest,
        settings: h::Settings,
        context: h::Context,
    },
    Mutate {
        request: h::AdmissionRequest,
        settings: h::Settings,
    },
    Filter {
        mcs: h::McsRef,
        service_ports: Option<Vec<h::ServicePort>>,
        source_cluster: String,
        consumer_cluster: String,
        slices: Vec<h::EndpointSlice>,
    },
    Plan {
        mcs: String,
        registered_clusters: Vec<String>,
    },
    Prune {
        mcs: h::McsRef,
        existing: Vec<h::EndpointSlice>,
        desired: Vec<String>,
        kept_sources: Vec<String>,
    },
    Service {
        template: String,
        existing: Option<String>,
    },
    ClusterNameProblem {
        name: String,
    },
    LoadBalancerStatus {
        providers: Vec<h::ProviderLoadBalancer>,
        current: Vec<h::LoadBalancerIngress>,
    },
    /// `pass` as a host makes it from the Kubernetes slices in `slices`, which the copies of
    /// the answer are made from (`PassSlices`).
    Decide {
        pass: h::PassRead,
        settings: h::SyncSettings,
        slices: Box<PassSlices>,
    },
    Conclude {
        basis: Box<h::StatusBasis>,
        failures: h::WriteFailures,
        current: h::StatusNow,
        reported: Option<h::Reported>,
    },
    ClustersetDecide {
        read: Box<h::ClustersetRead>,
    },
    ClustersetDerivedName {
        namespace: String,
        name: String,
    },
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Validate(Result<Vec<String>, h::Denial>),
    Mutate(Result<Vec<h::PatchOperation>, String>),
    Filter(Vec<h::EndpointSlice>),
    Plan(Result<h::SyncPlan, String>),
    Prune(Vec<String>),
    Service(Result<h::ServiceAction, String>),
    ClusterNameProblem(Option<String>),
    LoadBalancerStatus(h::LoadBalancerReport),
    Decide(Result<Box<h::PassDecision>, String>),
    Conclude(h::StatusUpdate),
    ClustersetDecide(Result<Box<h::ClustersetDecision>, String>),
    ClustersetDerivedName(String),
}

/// The engine every comparison uses: the embedded component, default bounds.
pub fn engine() -> &'static PolicyEngine {
    static ENGINE: OnceLock<PolicyEngine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        PolicyEngine::embedded(EngineOptions::default()).expect("the embedded component loads")
    })
}

/// The component's answer to `call`.
pub fn component(call: &Call) -> Result<Answer, EngineError> {
    component_within(call, BUDGET)
}

/// The component's answer to `call`, within `budget`.
pub fn component_within(call: &Call, budget: Duration) -> Result<Answer, EngineError> {
    let e = engine();
    Ok(match call {
        Call::Validate {
            request,
            settings,
            context,
        } => Answer::Validate(e.validate(request, settings, context, budget)?),
        Call::Mutate { request, settings } => Answer::Mutate(e.mutate(request, settings, budget)?),
        Call::Filter {
            mcs,
            service_ports,
            source_cluster,
            consumer_cluster,
            slices,
        } => Answer::Filter(e.filter(
            mcs,
            service_ports.as_deref(),
            source_cluster,
            consumer_cluster,
            slices,
            budget,
        )?),
        Call::Plan {
            mcs,
            registered_clusters,
        } => Answer::Plan(e.plan(mcs, registered_clusters, budget)?),
        Call::Prune {
            mcs,
            existing,
            desired,
            kept_sources,
        } => Answer::Prune(e.prune(mcs, existing, desired, kept_sources, budget)?),
        Call::Service { template, existing } => {
            Answer::Service(e.service(template, existing.as_deref(), budget)?)
        }
        Call::ClusterNameProblem { name } => {
            Answer::ClusterNameProblem(e.cluster_name_problem(name, budget)?)
        }
        Call::LoadBalancerStatus { providers, current } => {
            Answer::LoadBalancerStatus(e.load_balancer_status(providers, current, budget)?)
        }
        Call::Decide { pass, settings, .. } => {
            Answer::Decide(e.decide(pass, *settings, budget)?.map(Box::new))
        }
        Call::Conclude {
            basis,
            failures,
            current,
            reported,
        } => Answer::Conclude(e.conclude(basis, failures, current, reported.as_ref(), budget)?),
        Call::ClustersetDecide { read } => {
            Answer::ClustersetDecide(e.clusterset_decide(read, budget)?.map(Box::new))
        }
        Call::ClustersetDerivedName { namespace, name } => {
            Answer::ClustersetDerivedName(e.clusterset_derived_name(namespace, name, budget)?)
        }
    })
}

/// The native guest's answer to `call`.
pub fn native(call: &Call) -> Answer {
    native::answer(call)
}

/// Runs `call` natively and in the component; panics (a fuzzer crash, a test failure) when the
/// component fails or the answers differ, else returns the answer.
pub fn agree(call: &Call) -> Answer {
    agree_within(call, BUDGET)
}

/// [`agree`] with the component bounded by `budget`.
pub fn agree_within(call: &Call, budget: Duration) -> Answer {
    let native = native(call);
    let component = match component_within(call, budget) {
        Ok(answer) => answer,
        Err(e) => panic!("the component failed: {e}\ncall: {}", shown(call)),
    };
    assert!(
        component == native,
        "the component and the native guest differ\ncall: {}\ncomponent: {}\nnative: {}",
        shown(call),
        shown(&component),
        shown(&native)
    );
    native
}

/// `value` pretty-printed for a failure message, cut short when it is huge.
pub fn shown(value: &impl std::fmt::Debug) -> String {
    const LIMIT: usize = 8 << 10;
    let mut text = format!("{value:#?}");
    if text.len() > LIMIT {
        let total = text.len();
        text.truncate(text.floor_char_boundary(LIMIT));
        text.push_str(&format!("... ({total} bytes)"));
    }
    text
}

/// [`agree`], then [`properties::check`].
pub fn check(call: &Call) -> Answer {
    let answer = agree(call);
    properties::check(call, &answer);
    answer
}
