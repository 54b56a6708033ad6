//! The sync controller's functions of [`PolicyEngine`]: a pass (`decide`, `conclude`) and the
//! rules it is built from, which hosts may also call alone (`plan`, `prune`, `service`,
//! `load-balancer-status`, `cluster-name-problem`), and the Multi-Cluster Services API's pass
//! over one exported name (`clusterset-decide`).

use std::time::Duration;

use super::exports::{Function, sig};
use super::types::{
    ClustersetDecision, ClustersetRead, EndpointSlice, LoadBalancerIngress, LoadBalancerReport,
    McsRef, PassDecision, PassRead, ProviderLoadBalancer, Reported, ServiceAction, StatusBasis,
    StatusNow, StatusUpdate, SyncPlan, SyncSettings, WriteFailures,
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

    /// One pass of the Multi-Cluster Services API over one exported name across the clusterset
    /// (WIT `clusterset-decide`): every member's ServiceExport conditions, ServiceImport,
    /// derived Service and imported EndpointSlices; `Err` names the object that is not JSON
    /// of its kind, or the members that share a cluster id.
    pub fn clusterset_decide(
        &self,
        read: &ClustersetRead,
        budget: Duration,
    ) -> Result<Result<ClustersetDecision, String>, EngineError> {
        let loaded = self.current();
        self.inner.runtime.run(
            &loaded,
            Function::ClustersetDecide,
            budget,
            |callee, store| {
                // SAFETY: these are the `sig` types of `clusterset-decide`.
                let f = unsafe {
                    callee.typed::<sig::ClustersetDecide<'_>, sig::ClustersetDecideOut>()
                };
                f.call(store, (read,)).map(|(r,)| r)
            },
        )
    }

    /// The name of the derived Service of the exported `namespace/name` (WIT
    /// `clusterset-derived-name`): where the host reads it and the imported slices.
    pub fn clusterset_derived_name(
        &self,
        namespace: &str,
        name: &str,
        budget: Duration,
    ) -> Result<String, EngineError> {
        let loaded = self.current();
        self.inner.runtime.run(
            &loaded,
            Function::ClustersetDerivedName,
            budget,
            |callee, store| {
                // SAFETY: these are the `sig` types of `clusterset-derived-name`.
                let f = unsafe {
                    callee.typed::<sig::ClustersetDerivedName<'_>, sig::ClustersetDerivedNameOut>()
                };
                f.call(store, (namespace, name)).map(|(r,)| r)
            },
        )
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::types::{
        ClustersetMember, ClustersetMemberState, ClustersetObjects, ClustersetRead, ObjectWrite,
    };
    use super::super::{EngineError, EngineOptions, PolicyEngine};

    fn member(cluster: &str, export: Option<&str>, service: Option<&str>) -> ClustersetMember {
        ClustersetMember {
            cluster: cluster.into(),
            cluster_property: None,
            state: ClustersetMemberState::Readable(ClustersetObjects {
                service_export: export.map(str::to_string),
                service: service.map(str::to_string),
                slices: vec![],
                service_import: None,
                derived_service: None,
                imported_slices: vec![],
            }),
            unreadable_ms: 0,
        }
    }

    fn read(members: Vec<ClustersetMember>) -> ClustersetRead {
        ClustersetRead {
            namespace: "shop".into(),
            name: "web".into(),
            now: "2026-11-29T10:00:00Z".into(),
            members,
            stale_timeout_ms: None,
        }
    }

    const EXPORT: &str = r#"{"apiVersion":"multicluster.x-k8s.io/v1beta1","kind":"ServiceExport","metadata":{"name":"web","namespace":"shop","creationTimestamp":"2026-11-01T00:00:00Z"}}"#;
    const SERVICE: &str = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.1","ports":[{"name":"http","port":80,"protocol":"TCP"}]}}"#;

    #[test]
    fn clusterset_decide_puts_the_import_in_every_member() {
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        let decision = engine
            .clusterset_decide(
                &read(vec![
                    member("m1", Some(EXPORT), Some(SERVICE)),
                    member("m2", None, None),
                ]),
                Duration::from_secs(5),
            )
            .unwrap()
            .unwrap();
        assert_eq!(decision.exporters, ["m1"]);
        assert_eq!(decision.winner.as_deref(), Some("m1"));
        for m in &decision.members {
            let ObjectWrite::Apply(body) = &m.service_import else {
                panic!("{m:?}")
            };
            assert!(body.contains(r#""type":"ClusterSetIP""#), "{body}");
            assert!(matches!(m.derived_service, ObjectWrite::Apply(_)));
        }
        assert!(decision.members[0].export_conditions.is_some());
    }

    #[test]
    fn clusterset_decide_answers_a_malformed_object_with_err() {
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        let answer = engine
            .clusterset_decide(
                &read(vec![member("m1", Some("{"), None)]),
                Duration::from_secs(5),
            )
            .unwrap();
        assert!(
            answer
                .unwrap_err()
                .starts_with("cluster m1: the ServiceExport is not JSON"),
        );
    }

    #[test]
    fn clusterset_decide_runs_within_the_budget_like_every_call() {
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        // Enough members that the pass cannot finish in no time at all.
        let members: Vec<ClustersetMember> = (0..2000)
            .map(|i| member(&format!("m{i}"), Some(EXPORT), Some(SERVICE)))
            .collect();
        match engine.clusterset_decide(&read(members), Duration::ZERO) {
            Err(EngineError::Timeout { function, .. }) => {
                assert_eq!(function, "clusterset-decide")
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    /// The derived Service's name is the component's: the one `clusterset-derived-name`
    /// answers is the one `clusterset-decide` applies and the ServiceImport names.
    #[test]
    fn the_derived_name_is_asked_of_the_component_and_is_the_one_it_applies() {
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        let budget = Duration::from_secs(5);
        let named = engine
            .clusterset_derived_name("shop", "web", budget)
            .unwrap();
        assert!(named.starts_with("derived-") && named.len() == "derived-".len() + 10);
        assert_ne!(
            named,
            engine
                .clusterset_derived_name("shop", "api", budget)
                .unwrap()
        );
        let decision = engine
            .clusterset_decide(
                &read(vec![member("m1", Some(EXPORT), Some(SERVICE))]),
                budget,
            )
            .unwrap()
            .unwrap();
        let m = &decision.members[0];
        let body = |w: &ObjectWrite| match w {
            ObjectWrite::Apply(b) => serde_json::from_str::<serde_json::Value>(b).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(body(&m.derived_service)["metadata"]["name"], named.as_str());
        assert_eq!(
            body(&m.service_import)["metadata"]["annotations"]["multicluster.kubernetes.io/derived-service"],
            named.as_str()
        );
    }
}
