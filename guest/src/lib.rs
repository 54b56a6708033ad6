//! The MultiClusterService policy component. This file is glue only: the WIT bindings, whose
//! types are the crate's types, and the export, each function delegating to a plain function
//! of the modules below, which compile and are tested natively (`cargo test -p guest`).

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

pub mod balancer;
pub mod clusterset;
pub mod condition;
pub mod decode;
pub mod defaults;
pub mod field;
pub mod filter;
mod gofmt;
pub mod json;
pub mod memcmp;
mod meta;
pub mod names;
pub mod plan;
mod schema;
pub mod service;
pub mod slices;
mod strict;
pub mod sync;
mod time;
pub mod validate;

pub use exports::karmada::mcs_policy::policy::*;

/// The exported component.
pub struct Component;

impl Guest for Component {
    fn validate(
        request: AdmissionRequest,
        settings: Settings,
        context: Context,
    ) -> Result<Vec<String>, Denial> {
        validate::validate_request(&request, &settings, &context)
    }

    fn mutate(request: AdmissionRequest, _: Settings) -> Result<Vec<PatchOperation>, String> {
        defaults::default_request(&request)
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
        plan::plan(&mcs, &registered_clusters)
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
        service::service(&template, existing.as_deref())
    }

    fn load_balancer_status(
        providers: Vec<ProviderLoadBalancer>,
        current: Vec<LoadBalancerIngress>,
    ) -> LoadBalancerReport {
        balancer::status(&providers, &current)
    }

    fn decide(pass: PassRead, settings: SyncSettings) -> Result<PassDecision, String> {
        sync::decide(&pass, &settings)
    }

    fn conclude(
        basis: StatusBasis,
        failures: WriteFailures,
        current: StatusNow,
        reported: Option<Reported>,
    ) -> StatusUpdate {
        sync::status::conclude(&basis, &failures, &current, reported.as_ref())
    }

    fn clusterset_decide(read: ClustersetRead) -> Result<ClustersetDecision, String> {
        clusterset::decide(&read)
    }

    fn clusterset_derived_name(namespace: String, name: String) -> String {
        clusterset::digest::derived_name(&namespace, &name)
    }

    fn cluster_name_problem(name: String) -> Option<String> {
        names::cluster_name_problem(&name)
    }
}

#[cfg(target_arch = "wasm32")]
export!(Component);
