//! The MultiClusterService policy component. This file is glue only: WIT bindings, the export,
//! and conversions between WIT records and the plain functions in the modules below, which
//! compile and are tested natively (`cargo test -p guest`).

wit_bindgen::generate!({
    world: "mcs-policy",
    path: "../wit",
    additional_derives: [PartialEq],
});

#[cfg(target_arch = "wasm32")]
mod bump;
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: bump::Bump = bump::Bump::new();

pub mod decode;
pub mod defaults;
pub mod field;
pub mod filter;
mod gofmt;
mod meta;
pub mod names;
pub mod plan;
mod schema;
pub mod service;
mod strict;
mod time;
pub mod validate;

use exports::karmada::mcs_policy::policy::Guest;
pub use exports::karmada::mcs_policy::policy::{
    AdmissionRequest, Context, Denial, Endpoint, EndpointConditions, EndpointHints, EndpointPort,
    EndpointSlice, ErrorType, ExposurePort, FieldError, McsRef, ObjectReference, Operation,
    PatchOp, PatchOperation, Rejection, ServiceAction, ServicePort, Settings, SliceCopy,
    SliceSummary, SyncPlan,
};

/// The exported component.
pub struct Policy;

impl Guest for Policy {
    fn validate(
        request: AdmissionRequest,
        settings: Settings,
        context: Context,
    ) -> Result<Vec<String>, Denial> {
        validate_request(&request, &settings, &context)
    }

    fn mutate(
        request: AdmissionRequest,
        _settings: Settings,
    ) -> Result<Vec<PatchOperation>, String> {
        mutate_request(&request)
    }

    fn filter(
        mcs: McsRef,
        service_ports: Option<Vec<ServicePort>>,
        source_cluster: String,
        consumer_cluster: String,
        slices: Vec<SliceSummary>,
    ) -> Vec<SliceCopy> {
        filter::copies(
            &mcs,
            service_ports.as_deref(),
            &source_cluster,
            &consumer_cluster,
            &slices,
        )
    }

    fn plan(mcs: String, registered_clusters: Vec<String>) -> Result<SyncPlan, String> {
        plan_sync(&mcs, &registered_clusters)
    }

    fn prune(
        mcs: McsRef,
        existing: Vec<EndpointSlice>,
        desired: Vec<String>,
        kept_sources: Vec<String>,
    ) -> Vec<String> {
        plan::prune(&mcs, &existing, &desired, &kept_sources)
    }

    fn service(template: String, existing: Option<String>) -> Result<ServiceAction, String> {
        service_action(&template, existing.as_deref())
    }

    fn cluster_name_problem(name: String) -> Option<String> {
        names::cluster_name_problem(&name)
    }
}

#[cfg(target_arch = "wasm32")]
export!(Policy);

/// `plan` on WIT records.
pub fn plan_sync(mcs: &str, registered: &[String]) -> Result<SyncPlan, String> {
    plan::plan(mcs, registered).map(|p| SyncPlan {
        active: p.active,
        deleting: p.deleting,
        invalid: p.invalid,
        mcs: p.mcs,
        providers: p.providers,
        consumers: p.consumers,
        unknown_providers: p.unknown_providers,
        unknown_consumers: p.unknown_consumers,
    })
}

/// `service` on WIT records.
pub fn service_action(template: &str, existing: Option<&str>) -> Result<ServiceAction, String> {
    service::service(template, existing).map(|action| match action {
        service::Action::Unchanged => ServiceAction::Unchanged,
        service::Action::Create(object) => ServiceAction::Create(object),
        service::Action::Replace(object) => ServiceAction::Replace(object),
        service::Action::Recreate(object) => ServiceAction::Recreate(object),
        service::Action::Conflict(why) => ServiceAction::Conflict(why),
    })
}

/// `validate` on WIT records; also the native entry point for benchmarks and tests.
pub fn validate_request(
    request: &AdmissionRequest,
    settings: &Settings,
    context: &Context,
) -> Result<Vec<String>, Denial> {
    let rules = validate::Rules {
        reject_empty_types: settings.reject_empty_types,
        reject_repeated_types: settings.reject_repeated_types,
        reject_duplicate_cluster_names: settings.reject_duplicate_cluster_names,
        reject_unknown_port_names: settings.reject_unknown_port_names,
        warn_unregistered_clusters: settings.warn_unregistered_clusters,
    };
    let known = validate::Known {
        registered_clusters: context.registered_clusters.clone(),
        service_ports: context
            .service_ports
            .as_ref()
            .map(|ports| ports.iter().map(|p| (p.name.clone(), p.port)).collect()),
    };
    validate::validate_request(
        op(request.operation),
        &request.object,
        request.old_object.as_deref(),
        &rules,
        &known,
    )
    .map_err(|refusal| match refusal {
        validate::Refusal::Malformed(message) => Denial::Malformed(message),
        validate::Refusal::Forbidden {
            errors,
            message,
            warnings,
        } => Denial::Forbidden(Rejection {
            errors: errors.iter().map(wit_field_error).collect(),
            message,
            warnings,
        }),
    })
}

/// `mutate` on WIT records; also the native entry point for benchmarks and tests.
pub fn mutate_request(request: &AdmissionRequest) -> Result<Vec<PatchOperation>, String> {
    defaults::default_request(
        op(request.operation),
        &request.uid,
        &request.object,
        request.old_object.as_deref(),
    )
    .map(|ops| {
        ops.into_iter()
            .map(|p| PatchOperation {
                op: match p.kind {
                    defaults::PatchKind::Add => PatchOp::Add,
                    defaults::PatchKind::Replace => PatchOp::Replace,
                },
                path: p.path,
                value: p.value,
            })
            .collect()
    })
}

fn op(operation: Operation) -> validate::Op {
    match operation {
        Operation::Create => validate::Op::Create,
        Operation::Update => validate::Op::Update,
        Operation::Delete | Operation::Connect => validate::Op::Other,
    }
}

fn wit_field_error(e: &field::FieldError) -> FieldError {
    FieldError {
        error_type: match e.kind {
            field::Kind::Required => ErrorType::Required,
            field::Kind::Invalid => ErrorType::Invalid,
            field::Kind::Duplicate => ErrorType::Duplicate,
            field::Kind::Unsupported => ErrorType::Unsupported,
            field::Kind::Forbidden => ErrorType::Forbidden,
            field::Kind::TooLong => ErrorType::TooLong,
        },
        field: e.field.clone(),
        value: e.rendered_value(),
        detail: e.detail.clone(),
    }
}
