//! The component's exports: the functions of the interface (`wit/policy.wit`), their Rust
//! signatures, and the check, made once when a component is loaded, that the component exports
//! each with exactly those types (so a call needs no check of its own).

use wasmtime::Store;
use wasmtime::component::{
    Component, ComponentExportIndex, ComponentNamedList, Func, Lift, Lower, TypedFunc,
};

use super::types::{
    AdmissionRequest, ClustersetDecision, ClustersetRead, Context, Denial, EndpointSlice,
    LoadBalancerIngress, LoadBalancerReport, McsRef, PassDecision, PassRead, PatchOperation,
    ProviderLoadBalancer, Reported, ServiceAction, ServicePort, Settings, SliceCopy, SliceSummary,
    StatusBasis, StatusNow, StatusUpdate, SyncPlan, SyncSettings, WriteFailures,
};

/// The exported interface (`wit/policy.wit`).
const INTERFACE: &str = "karmada:mcs-policy/policy@0.1.0";

/// The Rust signatures of the interface's functions, as `(parameters, results)` tuples: what
/// `Exports::check` verifies once per component and every call relies on.
pub mod sig {
    use super::*;

    pub type Validate<'a> = (&'a AdmissionRequest, Settings, &'a Context);
    pub type ValidateOut = (Result<Vec<String>, Denial>,);
    pub type Mutate<'a> = (&'a AdmissionRequest, Settings);
    pub type MutateOut = (Result<Vec<PatchOperation>, String>,);
    pub type Filter<'a> = (
        &'a McsRef,
        Option<&'a [ServicePort]>,
        &'a str,
        &'a str,
        &'a [SliceSummary],
    );
    pub type FilterOut = (Vec<SliceCopy>,);
    pub type Plan<'a> = (&'a str, &'a [String]);
    pub type PlanOut = (Result<SyncPlan, String>,);
    pub type Prune<'a> = (&'a McsRef, &'a [EndpointSlice], &'a [String], &'a [String]);
    pub type PruneOut = (Vec<String>,);
    pub type Service<'a> = (&'a str, Option<&'a str>);
    pub type ServiceOut = (Result<ServiceAction, String>,);
    pub type ClusterNameProblem<'a> = (&'a str,);
    pub type ClusterNameProblemOut = (Option<String>,);
    pub type LoadBalancerStatus<'a> = (&'a [ProviderLoadBalancer], &'a [LoadBalancerIngress]);
    pub type LoadBalancerStatusOut = (LoadBalancerReport,);
    pub type Decide<'a> = (&'a PassRead, SyncSettings);
    pub type DecideOut = (Result<PassDecision, String>,);
    pub type Conclude<'a> = (
        &'a StatusBasis,
        &'a WriteFailures,
        &'a StatusNow,
        Option<&'a Reported>,
    );
    pub type ConcludeOut = (StatusUpdate,);
    pub type ClustersetDecide<'a> = (&'a ClustersetRead,);
    pub type ClustersetDecideOut = (Result<ClustersetDecision, String>,);
    pub type ClustersetDerivedName<'a> = (&'a str, &'a str);
    pub type ClustersetDerivedNameOut = (String,);
}

/// A function of the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Validate,
    Mutate,
    Filter,
    Plan,
    Prune,
    Service,
    ClusterNameProblem,
    LoadBalancerStatus,
    Decide,
    Conclude,
    ClustersetDecide,
    ClustersetDerivedName,
}

impl Function {
    const ALL: [Function; 12] = [
        Function::Validate,
        Function::Mutate,
        Function::Filter,
        Function::Plan,
        Function::Prune,
        Function::Service,
        Function::ClusterNameProblem,
        Function::LoadBalancerStatus,
        Function::Decide,
        Function::Conclude,
        Function::ClustersetDecide,
        Function::ClustersetDerivedName,
    ];

    /// The WIT name, as in errors and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Function::Validate => "validate",
            Function::Mutate => "mutate",
            Function::Filter => "filter",
            Function::Plan => "plan",
            Function::Prune => "prune",
            Function::Service => "service",
            Function::ClusterNameProblem => "cluster-name-problem",
            Function::LoadBalancerStatus => "load-balancer-status",
            Function::Decide => "decide",
            Function::Conclude => "conclude",
            Function::ClustersetDecide => "clusterset-decide",
            Function::ClustersetDerivedName => "clusterset-derived-name",
        }
    }
}

/// The export index of every function, checked against `sig` when the component was loaded.
pub(super) struct Exports([ComponentExportIndex; 12]);

impl Exports {
    /// Where `function` is in the component.
    pub(super) fn index(&self, function: Function) -> &ComponentExportIndex {
        &self.0[function as usize]
    }

    pub(super) fn find(component: &Component) -> Result<Self, String> {
        let interface = component
            .get_export_index(None, INTERFACE)
            .ok_or_else(|| format!("the component does not export `{INTERFACE}`"))?;
        let mut found = Vec::with_capacity(Function::ALL.len());
        for function in Function::ALL {
            found.push(
                component
                    .get_export_index(Some(&interface), function.name())
                    .ok_or_else(|| {
                        format!("`{INTERFACE}` has no function `{}`", function.name())
                    })?,
            );
        }
        Ok(Exports(found.try_into().map_err(|_| "export count")?))
    }

    /// Type-checks every export against `sig` on one instance; after this, `TypedFunc`s of
    /// any instance of the same component may be made without checking again.
    pub(super) fn check<T: 'static>(
        &self,
        instance: &wasmtime::component::Instance,
        store: &mut Store<T>,
    ) -> wasmtime::Result<()> {
        fn one<T: 'static, P, R>(
            instance: &wasmtime::component::Instance,
            store: &mut Store<T>,
            index: &ComponentExportIndex,
            name: &str,
        ) -> wasmtime::Result<()>
        where
            P: ComponentNamedList + Lower,
            R: ComponentNamedList + Lift,
        {
            instance
                .get_typed_func::<P, R>(&mut *store, index)
                .map(drop)
                .map_err(|e| e.context(format!("type-checking export `{name}`")))
        }
        for function in Function::ALL {
            let index = &self.0[function as usize];
            let name = function.name();
            match function {
                Function::Validate => {
                    one::<T, sig::Validate<'_>, sig::ValidateOut>(instance, store, index, name)
                }
                Function::Mutate => {
                    one::<T, sig::Mutate<'_>, sig::MutateOut>(instance, store, index, name)
                }
                Function::Filter => {
                    one::<T, sig::Filter<'_>, sig::FilterOut>(instance, store, index, name)
                }
                Function::Plan => {
                    one::<T, sig::Plan<'_>, sig::PlanOut>(instance, store, index, name)
                }
                Function::Prune => {
                    one::<T, sig::Prune<'_>, sig::PruneOut>(instance, store, index, name)
                }
                Function::Service => {
                    one::<T, sig::Service<'_>, sig::ServiceOut>(instance, store, index, name)
                }
                Function::ClusterNameProblem => {
                    one::<T, sig::ClusterNameProblem<'_>, sig::ClusterNameProblemOut>(
                        instance, store, index, name,
                    )
                }
                Function::LoadBalancerStatus => {
                    one::<T, sig::LoadBalancerStatus<'_>, sig::LoadBalancerStatusOut>(
                        instance, store, index, name,
                    )
                }
                Function::Decide => {
                    one::<T, sig::Decide<'_>, sig::DecideOut>(instance, store, index, name)
                }
                Function::Conclude => {
                    one::<T, sig::Conclude<'_>, sig::ConcludeOut>(instance, store, index, name)
                }
                Function::ClustersetDecide => {
                    one::<T, sig::ClustersetDecide<'_>, sig::ClustersetDecideOut>(
                        instance, store, index, name,
                    )
                }
                Function::ClustersetDerivedName => {
                    one::<T, sig::ClustersetDerivedName<'_>, sig::ClustersetDerivedNameOut>(
                        instance, store, index, name,
                    )
                }
            }?;
        }
        Ok(())
    }
}

/// A function of one fresh instance, to be called with its `sig` types.
pub struct Callee(pub(super) Func);

impl Callee {
    /// The typed function.
    ///
    /// # Safety
    /// `P` and `R` must be the `sig` types of the `Function` passed to `Runtime::run`:
    /// `Exports::check` verified exactly those for this component when it was loaded, and every
    /// instance of a component has the same types.
    pub unsafe fn typed<P, R>(self) -> TypedFunc<P, R>
    where
        P: ComponentNamedList + Lower,
        R: ComponentNamedList + Lift,
    {
        // SAFETY: see the function's contract.
        unsafe { TypedFunc::new_unchecked(self.0) }
    }
}
