//! The endpoint filter (docs/sync.md#collect, docs/sync.md#copies-the-endpoint-filter): which EndpointSlices of a provider cluster a consumer
//! cluster receives, and in what shape.
//!
//! The decision is taken on slice summaries (name, namespace, labels, port names) and answered
//! with copy instructions (`SliceCopy`): the endpoints, which a copy carries verbatim, never
//! cross the component boundary (WIT `filter`). `filter` applies the same decision to whole
//! slices, for native callers and tests.

use std::collections::{BTreeMap, BTreeSet};

use crate::slices::SliceMeta;
use crate::{EndpointPort, EndpointSlice, McsRef, ServicePort, SliceCopy, SliceSummary};

pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
pub const DISPATCH_MANAGER: &str = "endpointslice-dispatch-controller.karmada.io";
pub const IMPORT_MANAGER: &str = "endpointslice-controller.karmada.io";
pub const PROVISION_CLUSTER_ANNOTATION: &str = "endpointslice.karmada.io/provision-cluster";
/// The managed-by value of the EndpointSlices the clusterset rules import (`clusterset/`):
/// distinct from the MultiClusterService copies', so neither API's prune touches the other's.
pub const CLUSTERSET_MANAGER: &str = "endpointslice-clusterset-controller.karmada.io";
/// The Multi-Cluster Services API's label naming the multi-cluster service a slice belongs to.
pub const MC_SERVICE_NAME_LABEL: &str = "multicluster.kubernetes.io/service-name";
/// The Multi-Cluster Services API's label naming the cluster a slice's endpoints are in.
pub const MC_SOURCE_CLUSTER_LABEL: &str = "multicluster.kubernetes.io/source-cluster";

const MAX_NAME: usize = 253;
/// `-` plus 16 hex digits of the hash.
const HASH_SUFFIX_LEN: usize = 17;

/// The copies `consumer` must hold of `source`'s slices for this MCS, as instructions: which
/// slice, under what name, labels and annotations, with which of its ports.
pub fn copies(
    mcs: &McsRef,
    service_ports: Option<&[ServicePort]>,
    source: &str,
    consumer: &str,
    slices: &[SliceSummary],
) -> Vec<SliceCopy> {
    if source == consumer {
        return Vec::new();
    }
    copies_from(mcs, service_ports, source, slices)
}

/// The copies every cluster but `source` must hold of `source`'s slices: [`copies`] for any
/// other consumer (a copy does not depend on which cluster holds it).
pub fn copies_from(
    mcs: &McsRef,
    service_ports: Option<&[ServicePort]>,
    source: &str,
    slices: &[SliceSummary],
) -> Vec<SliceCopy> {
    let allowed = allowed_port_names(mcs, service_ports);
    slices
        .iter()
        .enumerate()
        .filter(|(_, s)| is_source_slice(&s.namespace, &s.labels, mcs))
        .filter_map(|(i, s)| copy_of(i, s, mcs, source, allowed.as_ref()))
        .collect()
}

/// The copies `consumer` must hold of `source`'s slices for this MCS (`copies`, applied).
pub fn filter(
    mcs: &McsRef,
    service_ports: Option<&[ServicePort]>,
    source: &str,
    consumer: &str,
    slices: Vec<EndpointSlice>,
) -> Vec<EndpointSlice> {
    let summaries: Vec<SliceSummary> = slices.iter().map(summary).collect();
    let plan = copies(mcs, service_ports, source, consumer, &summaries);
    let mut slices: Vec<Option<EndpointSlice>> = slices.into_iter().map(Some).collect();
    plan.into_iter()
        .filter_map(|copy| {
            let slice = slices.get_mut(copy.source as usize)?.take()?;
            Some(apply(copy, slice))
        })
        .collect()
}

/// What `copies` reads of a slice.
pub fn summary(slice: &impl SliceMeta) -> SliceSummary {
    SliceSummary {
        name: slice.name().to_string(),
        namespace: slice.namespace().to_string(),
        labels: slice.labels().to_vec(),
        port_names: slice.ports().iter().map(|p| p.name.clone()).collect(),
    }
}

/// The copy `copy` describes, made from `slice` (the one at `copy.source`).
pub fn apply(copy: SliceCopy, slice: EndpointSlice) -> EndpointSlice {
    let mut ports: Vec<Option<EndpointPort>> = slice.ports.into_iter().map(Some).collect();
    EndpointSlice {
        name: copy.name,
        namespace: slice.namespace,
        labels: copy.labels,
        annotations: copy.annotations,
        address_type: slice.address_type,
        endpoints: slice.endpoints,
        ports: copy
            .ports
            .iter()
            .filter_map(|&i| ports.get_mut(i as usize)?.take())
            .collect(),
    }
}

/// Whether a slice in `namespace` with `labels` is one of this Service's that the multi-cluster
/// machinery did not make (the loop guard): one that `copies` copies.
pub fn is_source_slice(namespace: &str, labels: &[(String, String)], mcs: &McsRef) -> bool {
    let label = |key: &str| {
        labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    namespace == mcs.namespace
        && label(SERVICE_NAME_LABEL) == Some(mcs.name.as_str())
        && !matches!(
            label(MANAGED_BY_LABEL),
            Some(DISPATCH_MANAGER | IMPORT_MANAGER | CLUSTERSET_MANAGER)
        )
}

/// Names of the slice ports to keep; `None` keeps every port.
/// An MCS entry picks a Service port by name when it has one, else by number; the slice port
/// serving that Service port carries the Service port's name. Without the Service's ports,
/// named entries match slice ports by name and numbered ones match nothing.
fn allowed_port_names(
    mcs: &McsRef,
    service_ports: Option<&[ServicePort]>,
) -> Option<BTreeSet<String>> {
    if mcs.ports.is_empty() {
        return None;
    }
    // The Service's port names, and the name of the first port with each number.
    let mut names: BTreeSet<&str> = BTreeSet::new();
    let mut by_number: BTreeMap<i32, &str> = BTreeMap::new();
    for sp in service_ports.unwrap_or_default() {
        names.insert(&sp.name);
        by_number.entry(sp.port).or_insert(&sp.name);
    }
    let allowed = mcs
        .ports
        .iter()
        .filter_map(|entry| match (service_ports, entry.name.is_empty()) {
            (Some(_), true) => by_number.get(&entry.port).map(|name| name.to_string()),
            (Some(_), false) => names
                .contains(entry.name.as_str())
                .then(|| entry.name.clone()),
            (None, empty) => (!empty).then(|| entry.name.clone()),
        })
        .collect();
    Some(allowed)
}

fn copy_of(
    index: usize,
    slice: &SliceSummary,
    mcs: &McsRef,
    source: &str,
    allowed: Option<&BTreeSet<String>>,
) -> Option<SliceCopy> {
    let ports: Vec<u32> = slice
        .port_names
        .iter()
        .enumerate()
        .filter(|(_, name)| match allowed {
            None => true,
            Some(names) => names.contains(name.as_deref().unwrap_or("")),
        })
        .map(|(i, _)| i as u32)
        .collect();
    if allowed.is_some() && ports.is_empty() {
        return None;
    }
    Some(SliceCopy {
        source: index as u32,
        name: copy_name(source, &slice.name),
        // In key order, as a cluster returns them: a held copy then compares without sorting.
        // Karmada's labels only, as Karmada's own copies carry: never the Multi-Cluster
        // Services API's (`MC_SERVICE_NAME_LABEL`, `MC_SOURCE_CLUSTER_LABEL`), which KEP-1645
        // DNS (CoreDNS `multicluster`) lists to answer `clusterset.local` names, so the
        // upstream API's consumers never see a MultiClusterService's endpoints
        // (docs/clusterset.md#multiclusterservice-copies-and-clusterset-dns).
        labels: vec![
            (MANAGED_BY_LABEL.to_string(), DISPATCH_MANAGER.to_string()),
            (SERVICE_NAME_LABEL.to_string(), mcs.name.clone()),
        ],
        annotations: vec![(PROVISION_CLUSTER_ANNOTATION.to_string(), source.to_string())],
        ports,
    })
}

/// `<source>-<slice>`; past 253 bytes, a truncated prefix plus a hash of the full name, so names
/// stay unique, stable and valid DNS subdomains.
pub fn copy_name(source: &str, slice: &str) -> String {
    let mut full = String::with_capacity(source.len() + 1 + slice.len());
    full.push_str(source);
    full.push('-');
    full.push_str(slice);
    if full.len() <= MAX_NAME {
        return full;
    }
    let mut cut = MAX_NAME - HASH_SUFFIX_LEN;
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    let prefix = full[..cut].trim_end_matches(['-', '.']);
    format!("{prefix}-{:016x}", fnv1a64(full.as_bytes()))
}

/// FNV-1a, 64 bit: stable across hosts and versions, no dependencies.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Endpoint, EndpointConditions, ExposurePort};

    fn mcs(ports: &[(&str, i32)]) -> McsRef {
        McsRef {
            name: "web".into(),
            namespace: "shop".into(),
            ports: ports
                .iter()
                .map(|(n, p)| ExposurePort {
                    name: n.to_string(),
                    port: *p,
                })
                .collect(),
        }
    }

    fn port(name: &str, number: i32) -> EndpointPort {
        EndpointPort {
            name: Some(name.into()),
            port: Some(number),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }
    }

    fn slice(name: &str, labels: &[(&str, &str)], ports: Vec<EndpointPort>) -> EndpointSlice {
        EndpointSlice {
            name: name.into(),
            namespace: "shop".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: vec![("note".into(), "x".into())],
            address_type: "IPv4".into(),
            endpoints: vec![Endpoint {
                addresses: vec!["10.0.0.1".into()],
                conditions: EndpointConditions {
                    ready: Some(true),
                    serving: Some(true),
                    terminating: Some(false),
                },
                hostname: None,
                node_name: Some("node-1".into()),
                zone: Some("z1".into()),
                target_ref: None,
                hints: None,
                deprecated_topology: vec![],
            }],
            ports,
        }
    }

    fn own(name: &str) -> EndpointSlice {
        slice(
            name,
            &[
                (SERVICE_NAME_LABEL, "web"),
                (MANAGED_BY_LABEL, "endpointslice-controller.k8s.io"),
            ],
            vec![port("http", 8080), port("metrics", 9090)],
        )
    }

    fn service_ports() -> Vec<ServicePort> {
        vec![
            ServicePort {
                name: "http".into(),
                port: 80,
            },
            ServicePort {
                name: "metrics".into(),
                port: 9100,
            },
        ]
    }

    #[test]
    fn copies_a_slice_with_exactly_the_dispatch_labels_and_annotation() {
        let out = filter(&mcs(&[]), None, "member1", "member2", vec![own("web-abc")]);
        assert_eq!(out.len(), 1);
        let copy = &out[0];
        assert_eq!(copy.name, "member1-web-abc");
        assert_eq!(copy.namespace, "shop");
        assert_eq!(
            copy.labels,
            vec![
                (MANAGED_BY_LABEL.to_string(), DISPATCH_MANAGER.to_string()),
                (SERVICE_NAME_LABEL.to_string(), "web".to_string()),
            ]
        );
        assert_eq!(
            copy.annotations,
            vec![(
                PROVISION_CLUSTER_ANNOTATION.to_string(),
                "member1".to_string()
            )]
        );
        assert_eq!(copy.endpoints, own("x").endpoints);
        assert_eq!(copy.ports.len(), 2);
    }

    #[test]
    fn copies_name_the_input_slice_and_the_ports_kept_by_index() {
        let other = slice("b", &[(SERVICE_NAME_LABEL, "api")], vec![]);
        let summaries: Vec<SliceSummary> =
            [other, own("a"), own("c")].iter().map(summary).collect();
        let sp = service_ports();
        let plan = copies(&mcs(&[("metrics", 0)]), Some(&sp), "m1", "m2", &summaries);
        assert_eq!(
            plan.iter()
                .map(|c| (c.source, c.name.as_str(), c.ports.clone()))
                .collect::<Vec<_>>(),
            vec![(1, "m1-a", vec![1]), (2, "m1-c", vec![1])]
        );
        assert_eq!(
            plan[0].annotations,
            vec![(PROVISION_CLUSTER_ANNOTATION.to_string(), "m1".to_string())]
        );
    }

    #[test]
    fn never_sends_a_providers_slices_back_to_itself() {
        assert!(filter(&mcs(&[]), None, "member1", "member1", vec![own("a")]).is_empty());
    }

    #[test]
    fn skips_slices_made_by_the_multi_cluster_machinery() {
        let dispatched = slice(
            "a",
            &[
                (SERVICE_NAME_LABEL, "web"),
                (MANAGED_BY_LABEL, DISPATCH_MANAGER),
            ],
            vec![],
        );
        let imported = slice(
            "b",
            &[
                (SERVICE_NAME_LABEL, "web"),
                (MANAGED_BY_LABEL, IMPORT_MANAGER),
            ],
            vec![],
        );
        let other_service = slice("c", &[(SERVICE_NAME_LABEL, "api")], vec![]);
        let out = filter(
            &mcs(&[]),
            None,
            "m1",
            "m2",
            vec![dispatched, imported, other_service, own("d")],
        );
        assert_eq!(
            out.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            vec!["m1-d"]
        );
    }

    #[test]
    fn filters_ports_by_service_port_name_or_number() {
        let sp = service_ports();
        let by_name = filter(&mcs(&[("http", 0)]), Some(&sp), "m1", "m2", vec![own("a")]);
        assert_eq!(by_name[0].ports, vec![port("http", 8080)]);
        let by_number = filter(&mcs(&[("", 9100)]), Some(&sp), "m1", "m2", vec![own("a")]);
        assert_eq!(by_number[0].ports, vec![port("metrics", 9090)]);
    }

    #[test]
    fn an_unnamed_entry_picks_the_first_service_port_with_its_number() {
        let sp = vec![
            ServicePort {
                name: "metrics".into(),
                port: 80,
            },
            ServicePort {
                name: "http".into(),
                port: 80,
            },
        ];
        let out = filter(&mcs(&[("", 80)]), Some(&sp), "m1", "m2", vec![own("a")]);
        assert_eq!(out[0].ports, vec![port("metrics", 9090)]);
    }

    #[test]
    fn drops_slices_left_without_ports() {
        let sp = service_ports();
        assert!(filter(&mcs(&[("grpc", 0)]), Some(&sp), "m1", "m2", vec![own("a")]).is_empty());
        assert!(filter(&mcs(&[("", 1)]), Some(&sp), "m1", "m2", vec![own("a")]).is_empty());
    }

    #[test]
    fn without_service_ports_named_entries_match_slice_port_names() {
        let out = filter(
            &mcs(&[("metrics", 0), ("", 80)]),
            None,
            "m1",
            "m2",
            vec![own("a")],
        );
        assert_eq!(out[0].ports, vec![port("metrics", 9090)]);
    }

    #[test]
    fn hashes_names_longer_than_253_characters() {
        let long = "s".repeat(260);
        let a = copy_name("member1", &long);
        let b = copy_name("member2", &long);
        assert_eq!(a.len(), 253);
        assert_ne!(a, b);
        assert_eq!(a, copy_name("member1", &long));
        assert!(crate::names::dns1123_subdomain(&a).is_empty(), "{a}");
        // a cut landing on '.' or '-' must not leave an invalid name
        let dotted = format!("{}.{}", "a".repeat(234), "b".repeat(30));
        assert!(crate::names::dns1123_subdomain(&copy_name("m", &dotted)).is_empty());
        assert_eq!(copy_name("m", "x"), "m-x");
    }
}
