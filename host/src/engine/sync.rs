//! The sync controller's functions of [`PolicyEngine`]: a pass (`decide`, `conclude`) and the
//! rules it is built from, which hosts may also call alone (`plan`, `prune`, `service`,
//! `load-balancer-status`, `cluster-name-problem`).

use std::time::Duration;

use super::runtime::{Function, sig};
use super::types::{
    EndpointSlice, LoadBalancerIngress, LoadBalancerReport, McsRef, PassDecision, PassRead,
    ProviderLoadBalancer, Reported, ServiceAction, StatusBasis, StatusNow, StatusUpdate, SyncPlan,
    SyncSettings, WriteFailures,
};
use super::{EngineError, PolicyEngine};

impl PolicyEngine {
    /// The sync controller's plan for one MultiClusterService given as JSON text (WIT `plan`).
    pub fn plan(
        &self,
        mcs: &str,
        registered_clusters: &[String],
        budget: Duration,
    ) -> Result<Result<SyncPlan, String>, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Plan, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `plan`.
                let f = unsafe { callee.typed::<sig::Plan<'_>, sig::PlanOut>() };
                f.call(store, (mcs, registered_clusters)).map(|(r,)| r)
            })
    }

    /// Names of the stale copies of `mcs` among a member's `existing` slices (WIT `prune`):
    /// not `desired`, and not copied from a provider in `kept_sources`.
    pub fn prune(
        &self,
        mcs: &McsRef,
        existing: &[EndpointSlice],
        desired: &[String],
        kept_sources: &[String],
        budget: Duration,
    ) -> Result<Vec<String>, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Prune, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `prune`.
                let f = unsafe { callee.typed::<sig::Prune<'_>, sig::PruneOut>() };
                f.call(store, (mcs, existing, desired, kept_sources))
                    .map(|(r,)| r)
            })
    }

    /// What a member cluster must do with its copy of the hub Service (WIT `service`):
    /// `template` and `existing` are `v1` Service JSON text.
    pub fn service(
        &self,
        template: &str,
        existing: Option<&str>,
        budget: Duration,
    ) -> Result<Result<ServiceAction, String>, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Service, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `service`.
                let f = unsafe { callee.typed::<sig::Service<'_>, sig::ServiceOut>() };
                f.call(store, (template, existing)).map(|(r,)| r)
            })
    }
}

impl PolicyEngine {
    /// The MultiClusterService's `status.loadBalancer.ingress` from its providers' load
    /// balancers, and its condition (WIT `load-balancer-status`).
    pub fn load_balancer_status(
        &self,
        providers: &[ProviderLoadBalancer],
        current: &[LoadBalancerIngress],
        budget: Duration,
    ) -> Result<LoadBalancerReport, EngineError> {
        let loaded = self.current();
        self.inner.runtime.run(
            &loaded,
            Function::LoadBalancerStatus,
            budget,
            |callee, store| {
                // SAFETY: these are the `sig` types of `load-balancer-status`.
                let f = unsafe {
                    callee.typed::<sig::LoadBalancerStatus<'_>, sig::LoadBalancerStatusOut>()
                };
                f.call(store, (providers, current)).map(|(r,)| r)
            },
        )
    }

    /// Every decision of one sync pass over one MultiClusterService, from what the pass read
    /// (WIT `decide`); `Err` carries the decode error of an object that is not one.
    pub fn decide(
        &self,
        pass: &PassRead,
        settings: SyncSettings,
        budget: Duration,
    ) -> Result<Result<PassDecision, String>, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Decide, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `decide`.
                let f = unsafe { callee.typed::<sig::Decide<'_>, sig::DecideOut>() };
                f.call(store, (pass, settings)).map(|(r,)| r)
            })
    }

    /// The end of a sync pass: conditions, Events due and whether to retry (WIT `conclude`).
    pub fn conclude(
        &self,
        basis: &StatusBasis,
        failures: &WriteFailures,
        current: &StatusNow,
        reported: Option<&Reported>,
        budget: Duration,
    ) -> Result<StatusUpdate, EngineError> {
        let loaded = self.current();
        self.inner
            .runtime
            .run(&loaded, Function::Conclude, budget, |callee, store| {
                // SAFETY: these are the `sig` types of `conclude`.
                let f = unsafe { callee.typed::<sig::Conclude<'_>, sig::ConcludeOut>() };
                f.call(store, (basis, failures, current, reported))
                    .map(|(r,)| r)
            })
    }

    /// Why `name` cannot name a member cluster, or `None` when it can (WIT
    /// `cluster-name-problem`).
    pub fn cluster_name_problem(
        &self,
        name: &str,
        budget: Duration,
    ) -> Result<Option<String>, EngineError> {
        let loaded = self.current();
        self.inner.runtime.run(
            &loaded,
            Function::ClusterNameProblem,
            budget,
            |callee, store| {
                // SAFETY: these are the `sig` types of `cluster-name-problem`.
                let f = unsafe {
                    callee.typed::<sig::ClusterNameProblem<'_>, sig::ClusterNameProblemOut>()
                };
                f.call(store, (name,)).map(|(r,)| r)
            },
        )
    }
}
