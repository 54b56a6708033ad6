//! The sync controller's decisions that are not about a single slice (docs/sync.md#which-multiclusterservices-act, docs/sync.md#provider-and-consumer-sets, docs/sync.md#dispatch-and-prune,
//! docs/sync.md#deletion-and-the-finalizer): whether an MCS acts, which clusters provide and consume, which names are unknown,
//! and which existing copies are stale.

use std::collections::BTreeSet;

use crate::decode::{Mcs, decode_mcs};
use crate::field::aggregate;
use crate::filter::{
    DISPATCH_MANAGER, MANAGED_BY_LABEL, PROVISION_CLUSTER_ANNOTATION, SERVICE_NAME_LABEL,
};
use crate::slices::SliceMeta;
use crate::validate::{
    CROSS_CLUSTER, KARMADA_COMPATIBLE, LOAD_BALANCER, NOTHING_KNOWN, validate_mcs,
};
use crate::{ExposurePort, McsRef, SyncPlan};

/// The finalizer that keeps a syncing MCS until its copies are withdrawn.
pub const FINALIZER: &str = "networking.karmada.io/mcs-policy-sync";

/// Whether the MCS holds the sync controller's finalizer.
pub fn holds_finalizer(mcs: &Mcs) -> bool {
    mcs.meta.finalizers.iter().any(|f| f == FINALIZER)
}

/// Plans the sync of an MCS (JSON text) against the registered cluster names.
pub fn plan(raw: &str, registered: &[String]) -> Result<SyncPlan, String> {
    Ok(plan_of(&decode_mcs(raw)?, registered))
}

/// Plans the sync of a decoded MCS against the registered cluster names.
pub fn plan_of(mcs: &Mcs, registered: &[String]) -> SyncPlan {
    let errors = validate_mcs(mcs, &KARMADA_COMPATIBLE, &NOTHING_KNOWN);
    let invalid = (!errors.is_empty()).then(|| aggregate(&errors));
    let deleting = mcs.meta.deletion_timestamp.is_some();
    let types = mcs.spec.types.as_deref().unwrap_or_default();
    let cross_cluster = types.iter().any(|t| t == CROSS_CLUSTER);
    let load_balancer = types.iter().any(|t| t == LOAD_BALANCER);
    let acts = invalid.is_none() && !deleting;
    // An MCS that syncs, is invalid (its copies stay), or holds our finalizer (its passes
    // withdraw its copies) looks after its copies itself.
    let sweepable = !(cross_cluster && acts) && invalid.is_none() && !holds_finalizer(mcs);
    let (providers, unknown_providers) = select(&mcs.spec.provider_clusters, registered);
    let (consumers, unknown_consumers) = select(&mcs.spec.consumer_clusters, registered);
    SyncPlan {
        active: cross_cluster && acts,
        deleting,
        invalid,
        mcs: McsRef {
            name: mcs.meta.name.clone(),
            namespace: mcs.meta.namespace.clone(),
            ports: mcs
                .spec
                .ports
                .iter()
                .map(|p| ExposurePort {
                    name: p.name.clone(),
                    port: p.port,
                })
                .collect(),
        },
        providers,
        consumers,
        unknown_providers,
        unknown_consumers,
        load_balancer: load_balancer && acts,
        sweepable,
    }
}

/// `(registered names selected, listed names not registered)`: an empty list selects every
/// registered cluster; listed names keep their order and appear once.
fn select(listed: &[String], registered: &[String]) -> (Vec<String>, Vec<String>) {
    if listed.is_empty() {
        return (registered.to_vec(), Vec::new());
    }
    let registered: BTreeSet<&str> = registered.iter().map(String::as_str).collect();
    let mut seen = BTreeSet::new();
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for name in listed {
        if !seen.insert(name.as_str()) {
            continue;
        }
        if registered.contains(name.as_str()) {
            known.push(name.clone());
        } else {
            unknown.push(name.clone());
        }
    }
    (known, unknown)
}

/// Names of the stale copies of `mcs` among `existing` (see WIT `prune`): our copies of this
/// Service ([`copied_from`]) that are not `desired` and were not copied from a provider in
/// `kept_sources` (one that could not be read: its copies stay until it can be).
pub fn prune(
    mcs: &McsRef,
    existing: &[impl SliceMeta],
    desired: &[String],
    kept_sources: &[String],
) -> Vec<String> {
    let desired: BTreeSet<&str> = desired.iter().map(String::as_str).collect();
    existing
        .iter()
        .filter(|s| {
            copied_from(mcs, s.namespace(), s.labels(), s.annotations())
                .is_some_and(|source| is_stale(source, desired.contains(s.name()), kept_sources))
        })
        .map(|s| s.name().to_string())
        .collect()
}

/// The provider a slice in `namespace` with `labels` and `annotations` was copied from, when
/// it is one of our copies of `mcs`, which `prune` may delete: in the MCS's namespace, labelled
/// with its service name and our managed-by value, and carrying a provision-cluster annotation
/// (the provider's name).
pub fn copied_from<'a>(
    mcs: &McsRef,
    namespace: &str,
    labels: &[(String, String)],
    annotations: &'a [(String, String)],
) -> Option<&'a str> {
    let ours = namespace == mcs.namespace
        && value(labels, SERVICE_NAME_LABEL) == Some(mcs.name.as_str())
        && value(labels, MANAGED_BY_LABEL) == Some(DISPATCH_MANAGER);
    ours.then(|| value(annotations, PROVISION_CLUSTER_ANNOTATION))
        .flatten()
}

/// Whether one of our copies, copied from `source`, is stale: it is not desired, and `source`
/// is not among the providers whose copies are kept.
pub fn is_stale(source: &str, desired: bool, kept_sources: &[String]) -> bool {
    !desired && !kept_sources.iter().any(|kept| kept == source)
}

/// The first non-empty value of `key` among `pairs`.
fn value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, v)| k == key && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EndpointSlice;

    fn mcs_json(spec: &str, meta_extra: &str) -> String {
        format!(
            r#"{{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService",
                "metadata":{{"name":"web","namespace":"shop"{meta_extra}}},"spec":{spec}}}"#
        )
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn empty_lists_select_every_registered_cluster() {
        let p = plan(
            &mcs_json(r#"{"types":["CrossCluster"]}"#, ""),
            &names(&["m1", "m2", "m3"]),
        )
        .unwrap();
        assert!(p.active);
        assert_eq!(p.providers, names(&["m1", "m2", "m3"]));
        assert_eq!(p.consumers, names(&["m1", "m2", "m3"]));
        assert!(p.unknown_providers.is_empty() && p.unknown_consumers.is_empty());
    }

    #[test]
    fn listed_clusters_are_split_into_known_and_unknown() {
        let spec = r#"{"types":["CrossCluster"],"providerClusters":[{"name":"m2"},{"name":"gone"},{"name":"m2"}],"consumerClusters":[{"name":"m9"}],"ports":[{"name":"http","port":80}]}"#;
        let p = plan(&mcs_json(spec, ""), &names(&["m1", "m2"])).unwrap();
        assert_eq!(p.providers, names(&["m2"]));
        assert_eq!(p.unknown_providers, names(&["gone"]));
        assert!(p.consumers.is_empty());
        assert_eq!(p.unknown_consumers, names(&["m9"]));
        assert_eq!(
            p.mcs.ports,
            vec![ExposurePort {
                name: "http".into(),
                port: 80
            }]
        );
        assert_eq!(
            (p.mcs.name.as_str(), p.mcs.namespace.as_str()),
            ("web", "shop")
        );
    }

    /// A sweep may remove an MCS's copies from a returning member only when no pass of it will
    /// look at that member again.
    #[test]
    fn only_an_mcs_no_pass_looks_after_is_sweepable() {
        let finalized = r#","finalizers":["networking.karmada.io/mcs-policy-sync"]"#;
        let deleted = r#","deletionTimestamp":"2024-05-01T10:00:00Z""#;
        let sweepable =
            |spec: &str, meta: &str| plan(&mcs_json(spec, meta), &[]).unwrap().sweepable;
        let cross = r#"{"types":["CrossCluster"]}"#;
        let lb = r#"{"types":["LoadBalancer"]}"#;
        let invalid = r#"{"types":["CrossCluster"],"ports":[{"port":0}]}"#;
        assert!(!sweepable(cross, ""), "it syncs");
        assert!(!sweepable(invalid, ""), "its copies stay until it is fixed");
        assert!(!sweepable(lb, finalized), "its passes withdraw the copies");
        let both = format!("{finalized}{deleted}");
        assert!(!sweepable(cross, &both), "its passes withdraw the copies");
        assert!(sweepable(lb, ""));
        assert!(sweepable(cross, deleted));
        assert!(sweepable(r#"{"types":[]}"#, ""));
    }

    #[test]
    fn only_valid_cross_cluster_objects_not_being_deleted_act() {
        let lb = plan(&mcs_json(r#"{"types":["LoadBalancer"]}"#, ""), &[]).unwrap();
        assert!(!lb.active && lb.load_balancer && lb.invalid.is_none());
        let both = plan(
            &mcs_json(r#"{"types":["CrossCluster","LoadBalancer"]}"#, ""),
            &[],
        )
        .unwrap();
        // Karmada allows one type only: such an MCS is invalid and does nothing.
        assert!(!both.active && !both.load_balancer && both.invalid.is_some());
        let invalid = plan(
            &mcs_json(r#"{"types":["CrossCluster"],"ports":[{"port":0}]}"#, ""),
            &[],
        )
        .unwrap();
        assert!(!invalid.active);
        assert_eq!(
            invalid.invalid.as_deref(),
            Some("spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive")
        );
        let deleting = |types: &str| {
            let spec = format!(r#"{{"types":["{types}"]}}"#);
            plan(
                &mcs_json(&spec, r#","deletionTimestamp":"2024-05-01T10:00:00Z""#),
                &[],
            )
            .unwrap()
        };
        let cross_cluster = deleting("CrossCluster");
        assert!(cross_cluster.deleting && !cross_cluster.active);
        let load_balancer = deleting("LoadBalancer");
        assert!(load_balancer.deleting && !load_balancer.load_balancer);
        assert!(!invalid.load_balancer);
        assert!(plan(r#"{"apiVersion":"v1","kind":"Service"}"#, &[]).is_err());
    }

    fn slice(name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> EndpointSlice {
        let pairs = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        EndpointSlice {
            name: name.into(),
            namespace: "shop".into(),
            labels: pairs(labels),
            annotations: pairs(annotations),
            address_type: "IPv4".into(),
            endpoints: vec![],
            ports: vec![],
        }
    }

    #[test]
    fn prunes_only_undesired_copies_with_every_marker() {
        let ours = [
            (SERVICE_NAME_LABEL, "web"),
            (MANAGED_BY_LABEL, DISPATCH_MANAGER),
        ];
        let from_m1 = [(PROVISION_CLUSTER_ANNOTATION, "m1")];
        let existing = vec![
            slice("m1-keep", &ours, &from_m1),
            slice("m1-stale", &ours, &from_m1),
            slice("foreign", &[(SERVICE_NAME_LABEL, "web")], &[]),
            slice("no-annotation", &ours, &[]),
            slice(
                "other-service",
                &[
                    (SERVICE_NAME_LABEL, "api"),
                    (MANAGED_BY_LABEL, DISPATCH_MANAGER),
                ],
                &from_m1,
            ),
            slice(
                "other-manager",
                &[
                    (SERVICE_NAME_LABEL, "web"),
                    (MANAGED_BY_LABEL, "endpointslice-controller.k8s.io"),
                ],
                &from_m1,
            ),
        ];
        let mcs = McsRef {
            name: "web".into(),
            namespace: "shop".into(),
            ports: vec![],
        };
        assert_eq!(
            prune(&mcs, &existing, &names(&["m1-keep"]), &[]),
            names(&["m1-stale"])
        );
        let mut elsewhere = existing[1].clone();
        elsewhere.namespace = "other".into();
        assert!(prune(&mcs, &[elsewhere], &[], &[]).is_empty());
    }

    #[test]
    fn copies_from_a_kept_source_stay_and_the_others_go() {
        let ours = [
            (SERVICE_NAME_LABEL, "web"),
            (MANAGED_BY_LABEL, DISPATCH_MANAGER),
        ];
        let existing = vec![
            slice("m1-a", &ours, &[(PROVISION_CLUSTER_ANNOTATION, "m1")]),
            slice("m2-a", &ours, &[(PROVISION_CLUSTER_ANNOTATION, "m2")]),
            slice("m2-b", &ours, &[(PROVISION_CLUSTER_ANNOTATION, "m2")]),
        ];
        let mcs = McsRef {
            name: "web".into(),
            namespace: "shop".into(),
            ports: vec![],
        };
        // m1 could not be read: its copy stays; m2's undesired copy goes.
        assert_eq!(
            prune(&mcs, &existing, &names(&["m2-a"]), &names(&["m1"])),
            names(&["m2-b"])
        );
        assert_eq!(
            prune(&mcs, &existing, &[], &[]),
            names(&["m1-a", "m2-a", "m2-b"])
        );
    }
}
