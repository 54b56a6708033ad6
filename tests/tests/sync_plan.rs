//! The sync controller's decisions (`plan`, `prune`) through the embedded component: the same
//! answers as the guest code compiled natively, and its documented behaviour.

use std::time::Duration;

use mcs_policy::engine::types::{EndpointSlice, McsRef};
use mcs_policy::engine::{EngineOptions, PolicyEngine};

const BUDGET: Duration = Duration::from_secs(5);

fn engine() -> PolicyEngine {
    PolicyEngine::embedded(EngineOptions::default()).unwrap()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn plan_selects_clusters_and_reports_unknown_ones_through_the_component() {
    let mcs = r#"{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService",
        "metadata":{"name":"web","namespace":"shop"},
        "spec":{"types":["CrossCluster"],"providerClusters":[{"name":"member1"},{"name":"gone"}],
                "ports":[{"name":"http","port":80}]}}"#;
    let plan = engine()
        .plan(mcs, &names(&["member1", "member2"]), BUDGET)
        .unwrap()
        .unwrap();
    assert!(plan.active && !plan.deleting && plan.invalid.is_none());
    assert_eq!(plan.providers, names(&["member1"]));
    assert_eq!(plan.unknown_providers, names(&["gone"]));
    assert_eq!(
        plan.consumers,
        names(&["member1", "member2"]),
        "empty consumers = all registered"
    );
    assert_eq!(plan.mcs.ports[0].name, "http");
    let native = guest::plan::plan(mcs, &names(&["member1", "member2"])).unwrap();
    assert_eq!(
        (native.providers, native.consumers, native.unknown_providers),
        (plan.providers, plan.consumers, plan.unknown_providers)
    );
}

#[test]
fn plan_refuses_what_is_not_a_multicluster_service() {
    let err = engine()
        .plan(r#"{"apiVersion":"v1","kind":"Service"}"#, &[], BUDGET)
        .unwrap()
        .unwrap_err();
    assert!(err.contains("Service"), "{err}");
}

#[test]
fn an_invalid_mcs_does_not_act_and_says_why() {
    let mcs = r#"{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService",
        "metadata":{"name":"web","namespace":"shop"},"spec":{"types":["CrossCluster"],"ports":[{"port":70000}]}}"#;
    let plan = engine().plan(mcs, &[], BUDGET).unwrap().unwrap();
    assert!(!plan.active);
    assert_eq!(
        plan.invalid.as_deref(),
        Some("spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive")
    );
}

fn slice(name: &str, managed_by: &str, provision: Option<&str>) -> EndpointSlice {
    EndpointSlice {
        name: name.into(),
        namespace: "shop".into(),
        labels: vec![
            ("kubernetes.io/service-name".into(), "web".into()),
            (
                "endpointslice.kubernetes.io/managed-by".into(),
                managed_by.into(),
            ),
        ],
        annotations: provision
            .map(|p| {
                vec![(
                    "endpointslice.karmada.io/provision-cluster".into(),
                    p.into(),
                )]
            })
            .unwrap_or_default(),
        address_type: "IPv4".into(),
        endpoints: vec![],
        ports: vec![],
    }
}

#[test]
fn prune_returns_only_stale_copies_carrying_every_marker() {
    let dispatch = "endpointslice-dispatch-controller.karmada.io";
    let existing = vec![
        slice("member1-a", dispatch, Some("member1")),
        slice("member1-b", dispatch, Some("member1")),
        slice("hand-made", dispatch, None),
        slice("local", "endpointslice-controller.k8s.io", None),
    ];
    let mcs = McsRef {
        name: "web".into(),
        namespace: "shop".into(),
        ports: vec![],
    };
    let stale = engine()
        .prune(&mcs, &existing, &names(&["member1-a"]), &[], BUDGET)
        .unwrap();
    assert_eq!(stale, names(&["member1-b"]));
    let everything = engine().prune(&mcs, &existing, &[], &[], BUDGET).unwrap();
    assert_eq!(
        everything,
        names(&["member1-a", "member1-b"]),
        "deleting the MCS never touches foreign slices"
    );
    let kept = engine()
        .prune(&mcs, &existing, &[], &names(&["member1"]), BUDGET)
        .unwrap();
    assert!(
        kept.is_empty(),
        "an unreadable provider's copies stay: {kept:?}"
    );
}

#[test]
fn cluster_name_problems_come_from_the_component_as_validation_words_them() {
    let engine = engine();
    let cases = [
        ("member1", None),
        ("", Some("must be not empty")),
        (
            "Member1",
            Some(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ),
        ),
        ("member.one", Some("must not contain dots")),
        (&*"a".repeat(49), Some("must be no more than 48 characters")),
        (&*"a".repeat(48), None),
    ];
    for (name, want) in cases {
        let got = engine.cluster_name_problem(name, BUDGET).unwrap();
        assert_eq!(got.as_deref(), want, "{name:?}");
        assert_eq!(got, guest::names::cluster_name_problem(name), "{name:?}");
    }
}
