//! The guest compiled natively, called through the same `Guest` implementation the component
//! exports (guest/src/lib.rs), with its WIT records converted to and from the host's. The two
//! sets of records are generated from the same WIT (wit-bindgen in the guest, wasmtime's
//! bindgen in the host), so the conversions are field-for-field copies.

use guest::exports::karmada::mcs_policy::policy::Guest as _;
use mcs_policy::engine::types as h;

use crate::{Answer, Call};

/// `guest::*`: the guest's records.
mod g {
    pub use guest::*;
}

/// A field-for-field copy between a host record and the guest record of the same WIT type.
trait Conv<T> {
    fn conv(self) -> T;
}

macro_rules! same {
    ($($t:ty),*) => {$(
        impl Conv<$t> for $t {
            fn conv(self) -> $t {
                self
            }
        }
    )*};
}
same!(String, bool, i32, u32, u64, i64);

impl<A: Conv<B>, B> Conv<Option<B>> for Option<A> {
    fn conv(self) -> Option<B> {
        self.map(Conv::conv)
    }
}

impl<A: Conv<B>, B> Conv<Vec<B>> for Vec<A> {
    fn conv(self) -> Vec<B> {
        self.into_iter().map(Conv::conv).collect()
    }
}

impl Conv<(String, String)> for (String, String) {
    fn conv(self) -> (String, String) {
        self
    }
}

/// Both directions for a record: `record!(Name { field, ... })`.
macro_rules! record {
    ($name:ident { $($field:ident),* $(,)? }) => {
        impl Conv<g::$name> for h::$name {
            fn conv(self) -> g::$name {
                g::$name { $($field: self.$field.conv()),* }
            }
        }
        impl Conv<h::$name> for g::$name {
            fn conv(self) -> h::$name {
                h::$name { $($field: self.$field.conv()),* }
            }
        }
    };
}

/// Both directions for an enum without payloads.
macro_rules! unit_enum {
    ($name:ident { $($case:ident),* $(,)? }) => {
        impl Conv<g::$name> for h::$name {
            fn conv(self) -> g::$name {
                match self { $(h::$name::$case => g::$name::$case),* }
            }
        }
        impl Conv<h::$name> for g::$name {
            fn conv(self) -> h::$name {
                match self { $(g::$name::$case => h::$name::$case),* }
            }
        }
    };
}

unit_enum!(Operation {
    Create,
    Update,
    Delete,
    Connect
});
unit_enum!(PatchOp { Add, Replace });
unit_enum!(ErrorType {
    Required,
    Invalid,
    Duplicate,
    Unsupported,
    Forbidden,
    TooLong
});
record!(AdmissionRequest {
    uid,
    operation,
    object,
    old_object
});
record!(Settings {
    reject_empty_types,
    reject_repeated_types,
    reject_duplicate_cluster_names,
    reject_unknown_port_names,
    warn_unregistered_clusters,
});
record!(ServicePort { name, port });
record!(Context {
    registered_clusters,
    service_ports
});
record!(FieldError {
    error_type,
    field,
    value,
    detail
});
record!(Rejection {
    errors,
    message,
    warnings
});
record!(PatchOperation { op, path, value });
record!(ExposurePort { name, port });
record!(McsRef {
    name,
    namespace,
    ports
});
record!(ObjectReference {
    kind,
    namespace,
    name,
    uid,
    api_version,
    resource_version,
    field_path,
});
record!(EndpointConditions {
    ready,
    serving,
    terminating
});
record!(EndpointHints {
    for_zones,
    for_nodes
});
record!(Endpoint {
    addresses,
    conditions,
    hostname,
    node_name,
    zone,
    target_ref,
    hints,
    deprecated_topology,
});
record!(EndpointPort {
    name,
    port,
    protocol,
    app_protocol
});
record!(EndpointSlice {
    name,
    namespace,
    labels,
    annotations,
    address_type,
    endpoints,
    ports,
});
record!(SyncPlan {
    active,
    deleting,
    invalid,
    mcs,
    providers,
    consumers,
    unknown_providers,
    unknown_consumers,
    load_balancer,
    sweepable,
});

record!(PortStatus {
    port,
    protocol,
    error
});
record!(LoadBalancerIngress {
    ip,
    hostname,
    ip_mode,
    ports
});
record!(ProviderLoadBalancer { cluster, ingress });
record!(LoadBalancerReport {
    ingress,
    changed,
    complete,
    reason,
    message
});

impl Conv<g::ProviderIngress> for h::ProviderIngress {
    fn conv(self) -> g::ProviderIngress {
        match self {
            h::ProviderIngress::Read(list) => g::ProviderIngress::Read(list.conv()),
            h::ProviderIngress::Kept(list) => g::ProviderIngress::Kept(list.conv()),
            h::ProviderIngress::Withdrawn => g::ProviderIngress::Withdrawn,
        }
    }
}

impl Conv<h::ProviderIngress> for g::ProviderIngress {
    fn conv(self) -> h::ProviderIngress {
        match self {
            g::ProviderIngress::Read(list) => h::ProviderIngress::Read(list.conv()),
            g::ProviderIngress::Kept(list) => h::ProviderIngress::Kept(list.conv()),
            g::ProviderIngress::Withdrawn => h::ProviderIngress::Withdrawn,
        }
    }
}

record!(ReadFailure {
    message,
    not_served
});
record!(MemberSlices {
    names,
    name_lengths,
    bodies
});
record!(SliceBody {
    namespace,
    labels,
    annotations,
    ports,
    content
});
record!(SliceCopy {
    source,
    name,
    labels,
    annotations,
    ports
});
record!(MemberObjects { slices, service });
record!(MemberRead {
    cluster,
    state,
    unreadable_ms,
    last_ingress
});
record!(UnsyncedCluster { cluster, reason });
record!(PassRead {
    mcs,
    members,
    template,
    slice_bodies,
    slice_maps,
    slice_ports,
    unsynced,
});
record!(SyncSettings { stale_timeout_ms });
record!(SliceWrite {
    cluster,
    source_cluster,
    copy
});
record!(MemberObject { cluster, name });
record!(ServiceWrite { cluster, action });
record!(RememberedIngress { cluster, ingress });
record!(StatusBasis {
    report,
    invalid,
    dispatches,
    service_failures,
    template_missing,
    dispatch_failures,
    load_balancer_failures,
    load_balancer,
    unknown_providers,
    unknown_consumers,
    incompatible,
    unsynced,
});
record!(PassDecision {
    plan,
    finalizer,
    copies,
    deletions,
    services,
    ingress,
    remember_ingress,
    status,
});
record!(WriteFailures { service, dispatch });
record!(StatusNow {
    conditions,
    generation,
    now
});
record!(Reported {
    unknown,
    incompatible,
    unsynced,
    service_applied,
    dispatched,
    load_balancer,
});
record!(EventNote {
    warning,
    reason,
    message
});
record!(StatusUpdate {
    conditions,
    events,
    reported,
    retry
});

impl Conv<g::MemberState> for h::MemberState {
    fn conv(self) -> g::MemberState {
        match self {
            h::MemberState::NotReady(why) => g::MemberState::NotReady(why),
            h::MemberState::Ready(objects) => g::MemberState::Ready(objects.conv()),
        }
    }
}

impl Conv<h::MemberState> for g::MemberState {
    fn conv(self) -> h::MemberState {
        match self {
            g::MemberState::NotReady(why) => h::MemberState::NotReady(why),
            g::MemberState::Ready(objects) => h::MemberState::Ready(objects.conv()),
        }
    }
}

impl Conv<g::FinalizerChange> for h::FinalizerChange {
    fn conv(self) -> g::FinalizerChange {
        match self {
            h::FinalizerChange::Keep => g::FinalizerChange::Keep,
            h::FinalizerChange::Add(name) => g::FinalizerChange::Add(name),
            h::FinalizerChange::Release(name) => g::FinalizerChange::Release(name),
        }
    }
}

impl Conv<h::FinalizerChange> for g::FinalizerChange {
    fn conv(self) -> h::FinalizerChange {
        match self {
            g::FinalizerChange::Keep => h::FinalizerChange::Keep,
            g::FinalizerChange::Add(name) => h::FinalizerChange::Add(name),
            g::FinalizerChange::Release(name) => h::FinalizerChange::Release(name),
        }
    }
}

impl Conv<g::ServiceAction> for h::ServiceAction {
    fn conv(self) -> g::ServiceAction {
        match self {
            h::ServiceAction::Unchanged => g::ServiceAction::Unchanged,
            h::ServiceAction::Create(object) => g::ServiceAction::Create(object),
            h::ServiceAction::Replace(object) => g::ServiceAction::Replace(object),
            h::ServiceAction::Recreate(object) => g::ServiceAction::Recreate(object),
            h::ServiceAction::Conflict(why) => g::ServiceAction::Conflict(why),
        }
    }
}

impl Conv<h::Denial> for g::Denial {
    fn conv(self) -> h::Denial {
        match self {
            g::Denial::Malformed(message) => h::Denial::Malformed(message),
            g::Denial::Forbidden(rejection) => h::Denial::Forbidden(rejection.conv()),
        }
    }
}

impl Conv<h::ServiceAction> for g::ServiceAction {
    fn conv(self) -> h::ServiceAction {
        match self {
            g::ServiceAction::Unchanged => h::ServiceAction::Unchanged,
            g::ServiceAction::Create(object) => h::ServiceAction::Create(object),
            g::ServiceAction::Replace(object) => h::ServiceAction::Replace(object),
            g::ServiceAction::Recreate(object) => h::ServiceAction::Recreate(object),
            g::ServiceAction::Conflict(why) => h::ServiceAction::Conflict(why),
        }
    }
}

impl<T: Conv<U>, U, E: Conv<F>, F> Conv<Result<U, F>> for Result<T, E> {
    fn conv(self) -> Result<U, F> {
        self.map(Conv::conv).map_err(Conv::conv)
    }
}

/// The native guest's answer to `call`, as host records.
pub fn answer(call: &Call) -> Answer {
    let call = call.clone();
    match call {
        Call::Validate {
            request,
            settings,
            context,
        } => Answer::Validate(
            g::Component::validate(request.conv(), settings.conv(), context.conv()).conv(),
        ),
        Call::Mutate { request, settings } => {
            Answer::Mutate(g::Component::mutate(request.conv(), settings.conv()).conv())
        }
        Call::Filter {
            mcs,
            service_ports,
            source_cluster,
            consumer_cluster,
            slices,
        } => {
            // The WIT function takes summaries and answers with copy instructions; the copies
            // are assembled as a host assembles them (`guest::filter::apply`).
            let slices: Vec<g::EndpointSlice> = slices.conv();
            let summaries = slices.iter().map(guest::filter::summary).collect();
            let copies = g::Component::filter(
                mcs.conv(),
                service_ports.conv(),
                source_cluster,
                consumer_cluster,
                summaries,
            );
            let assembled: Vec<g::EndpointSlice> = copies
                .into_iter()
                .map(|copy| {
                    let source = slices[copy.source as usize].clone();
                    guest::filter::apply(copy, source)
                })
                .collect();
            Answer::Filter(assembled.conv())
        }
        Call::Plan {
            mcs,
            registered_clusters,
        } => Answer::Plan(g::Component::plan(mcs, registered_clusters).conv()),
        Call::Prune {
            mcs,
            existing,
            desired,
            kept_sources,
        } => Answer::Prune(g::Component::prune(
            mcs.conv(),
            existing.conv(),
            desired,
            kept_sources,
        )),
        Call::Service { template, existing } => {
            Answer::Service(g::Component::service(template, existing).conv())
        }
        Call::ClusterNameProblem { name } => {
            Answer::ClusterNameProblem(g::Component::cluster_name_problem(name))
        }
        Call::LoadBalancerStatus { providers, current } => Answer::LoadBalancerStatus(
            g::Component::load_balancer_status(providers.conv(), current.conv()).conv(),
        ),
        Call::Decide { pass, settings, .. } => {
            let decision: Result<h::PassDecision, String> =
                g::Component::decide(pass.conv(), settings.conv()).conv();
            Answer::Decide(decision.map(Box::new))
        }
        Call::Conclude {
            basis,
            failures,
            current,
            reported,
        } => Answer::Conclude(
            g::Component::conclude(
                (*basis).conv(),
                failures.conv(),
                current.conv(),
                reported.conv(),
            )
            .conv(),
        ),
        Call::ClustersetDecide { read } => {
            let decision: Result<h::ClustersetDecision, String> =
                g::Component::clusterset_decide((*read).conv()).conv();
            Answer::ClustersetDecide(decision.map(Box::new))
        }
        Call::ClustersetDerivedName { namespace, name } => Answer::ClustersetDerivedName(
            g::Component::clusterset_derived_name(namespace.clone(), name.clone()),
        ),
    }
}

record!(ImportedSlice {
    slice,
    uid,
    resource_version
});
record!(ClustersetObjects {
    service_export,
    service,
    slices,
    service_import,
    derived_service,
    imported_slices,
});
record!(ClustersetMember {
    cluster,
    cluster_property,
    state,
    unreadable_ms,
});
record!(ClustersetRead {
    namespace,
    name,
    now,
    members,
    stale_timeout_ms,
});
record!(DeletePrecondition {
    name,
    uid,
    resource_version
});
record!(ClustersetMemberDecision {
    cluster,
    cluster_id,
    export_conditions,
    service_import,
    service_import_status,
    derived_service,
    apply_slices,
    slice_owner,
    delete_slices,
    notes,
});
record!(ClustersetDecision {
    members,
    exporters,
    winner,
    conflicts
});

impl Conv<g::ClustersetMemberState> for h::ClustersetMemberState {
    fn conv(self) -> g::ClustersetMemberState {
        match self {
            h::ClustersetMemberState::Readable(o) => g::ClustersetMemberState::Readable(o.conv()),
            h::ClustersetMemberState::Unreadable(why) => g::ClustersetMemberState::Unreadable(why),
        }
    }
}

impl Conv<h::ClustersetMemberState> for g::ClustersetMemberState {
    fn conv(self) -> h::ClustersetMemberState {
        match self {
            g::ClustersetMemberState::Readable(o) => h::ClustersetMemberState::Readable(o.conv()),
            g::ClustersetMemberState::Unreadable(why) => h::ClustersetMemberState::Unreadable(why),
        }
    }
}

impl Conv<g::ObjectWrite> for h::ObjectWrite {
    fn conv(self) -> g::ObjectWrite {
        match self {
            h::ObjectWrite::Leave => g::ObjectWrite::Leave,
            h::ObjectWrite::Apply(body) => g::ObjectWrite::Apply(body),
            h::ObjectWrite::Delete(p) => g::ObjectWrite::Delete(p.conv()),
        }
    }
}

impl Conv<h::ObjectWrite> for g::ObjectWrite {
    fn conv(self) -> h::ObjectWrite {
        match self {
            g::ObjectWrite::Leave => h::ObjectWrite::Leave,
            g::ObjectWrite::Apply(body) => h::ObjectWrite::Apply(body),
            g::ObjectWrite::Delete(p) => h::ObjectWrite::Delete(p.conv()),
        }
    }
}
