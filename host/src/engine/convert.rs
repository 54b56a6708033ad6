//! Kubernetes objects (k8s-openapi) ⇄ WIT records for the endpoint filter (with its slice
//! summaries and the assembly of its copies), for `decide` (slice states, whose content is a
//! digest of the endpoints, and the assembly of its copies) and the load balancer status, and
//! Services ⇄ the JSON text of the `service` function. Field-for-field copies: no decision is
//! taken here.

use std::collections::BTreeMap;
use std::io::Write;

use sha2::{Digest, Sha256};

use k8s_openapi::api::core::v1::{LoadBalancerIngress, ObjectReference, PortStatus, Service};
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::types;

/// An EndpointSlice as the component sees it.
pub fn slice_to_wit(slice: &discovery::EndpointSlice) -> types::EndpointSlice {
    let meta = &slice.metadata;
    types::EndpointSlice {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        labels: pairs(meta.labels.as_ref()),
        annotations: pairs(meta.annotations.as_ref()),
        address_type: slice.address_type.clone(),
        endpoints: slice
            .endpoints
            .iter()
            .flatten()
            .map(endpoint_to_wit)
            .collect(),
        ports: slice.ports.iter().flatten().map(port_to_wit).collect(),
    }
}

/// What the endpoint filter reads of a slice (WIT `slice-summary`).
pub fn summary(slice: &types::EndpointSlice) -> types::SliceSummary {
    types::SliceSummary {
        name: slice.name.clone(),
        namespace: slice.namespace.clone(),
        labels: slice.labels.clone(),
        port_names: slice.ports.iter().map(|p| p.name.clone()).collect(),
    }
}

/// The copy the filter described, made from the slice it names in `slices`: its namespace,
/// address type and endpoints, the ports it lists. An error when the component named a slice or
/// a port that does not exist.
pub fn assemble(
    copy: types::SliceCopy,
    slices: &[types::EndpointSlice],
) -> Result<types::EndpointSlice, String> {
    let slice = slices.get(copy.source as usize).ok_or_else(|| {
        format!(
            "the filter answered with a copy of slice {} of {}",
            copy.source,
            slices.len()
        )
    })?;
    let ports = copy
        .ports
        .iter()
        .map(|&i| {
            slice.ports.get(i as usize).cloned().ok_or_else(|| {
                format!(
                    "the filter kept port {i} of the {} of slice {}",
                    slice.ports.len(),
                    slice.name
                )
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(types::EndpointSlice {
        name: copy.name,
        namespace: slice.namespace.clone(),
        labels: copy.labels,
        annotations: copy.annotations,
        address_type: slice.address_type.clone(),
        endpoints: slice.endpoints.clone(),
        ports,
    })
}

/// What `decide` reads of an EndpointSlice besides its name: its metadata and ports as they
/// are, its address type and endpoints as their [`content`]. A controller makes it once for each
/// slice it reads (or caches), and keeps the Kubernetes object next to it: a copy `decide` asks
/// for is made from that object ([`copy_slice`]). [`super::PassSlices`] turns the facts of a
/// pass's slices into its `slice-bodies`, `slice-maps` and `slice-ports`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceFacts {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.labels`, as key/value pairs in key order.
    pub labels: Vec<(String, String)>,
    /// `metadata.annotations`, as key/value pairs in key order.
    pub annotations: Vec<(String, String)>,
    /// `ports`.
    pub ports: Vec<types::EndpointPort>,
    /// WIT `slice-body.content`.
    pub content: String,
}

/// The [`SliceFacts`] of `slice`.
pub fn slice_facts(slice: &discovery::EndpointSlice) -> SliceFacts {
    let meta = &slice.metadata;
    SliceFacts {
        namespace: meta.namespace.clone().unwrap_or_default(),
        labels: pairs(meta.labels.as_ref()),
        annotations: pairs(meta.annotations.as_ref()),
        ports: slice.ports.iter().flatten().map(port_to_wit).collect(),
        content: content(slice),
    }
}

/// WIT `slice-body.content` (docs/sync.md#slice-content): the SHA-256, in lowercase hex, of
/// the JSON `{"addressType": ..., "endpoints": [...]}` of the slice as its copies are written
/// ([`written_endpoint`]). Two slices get the same text exactly when a copy of the one, read
/// back, has the address type and endpoints of the other: what `decide` compares.
pub fn content(slice: &discovery::EndpointSlice) -> String {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Content<'a> {
        address_type: &'a str,
        endpoints: Vec<discovery::Endpoint>,
    }
    let content = Content {
        address_type: &slice.address_type,
        endpoints: slice
            .endpoints
            .iter()
            .flatten()
            .map(written_endpoint)
            .collect(),
    };
    let mut digest = Sha256::new();
    serde_json::to_writer(&mut digest, &content).expect("an EndpointSlice encodes as JSON");
    digest.flush().expect("hashing does not fail");
    format!("{:x}", digest.finalize())
}

/// An endpoint as a copy carries it: as it is, but without empty `conditions`,
/// `deprecatedTopology`, `hints.forZones` or `hints.forNodes`, which the component's records
/// cannot tell from absent ones (what [`slice_from_wit`] of [`slice_to_wit`] writes).
pub fn written_endpoint(endpoint: &discovery::Endpoint) -> discovery::Endpoint {
    let mut e = endpoint.clone();
    e.conditions = e
        .conditions
        .filter(|c| c.ready.is_some() || c.serving.is_some() || c.terminating.is_some());
    e.deprecated_topology = e.deprecated_topology.filter(|t| !t.is_empty());
    if let Some(hints) = &mut e.hints {
        hints.for_zones = hints.for_zones.take().filter(|z| !z.is_empty());
        hints.for_nodes = hints.for_nodes.take().filter(|n| !n.is_empty());
    }
    e
}

/// The copy `copy` (of a `decide` or `filter` answer) of `source`, as the object to apply: the
/// copy's name, labels and annotations, and the source's namespace, address type, endpoints (as
/// copies carry them, [`written_endpoint`]) and the ports the copy keeps. An error when the
/// component kept a port the source does not have.
pub fn copy_slice(
    copy: &types::SliceCopy,
    source: &discovery::EndpointSlice,
) -> Result<discovery::EndpointSlice, String> {
    let ports = source.ports.as_deref().unwrap_or_default();
    let kept = copy
        .ports
        .iter()
        .map(|&i| {
            ports.get(i as usize).cloned().ok_or_else(|| {
                format!(
                    "the component kept port {i} of the {} of slice {}",
                    ports.len(),
                    source.metadata.name.as_deref().unwrap_or_default()
                )
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(discovery::EndpointSlice {
        metadata: ObjectMeta {
            name: Some(copy.name.clone()),
            namespace: Some(source.metadata.namespace.clone().unwrap_or_default()),
            labels: map(copy.labels.clone()),
            annotations: map(copy.annotations.clone()),
            ..ObjectMeta::default()
        },
        address_type: source.address_type.clone(),
        endpoints: Some(
            source
                .endpoints
                .iter()
                .flatten()
                .map(written_endpoint)
                .collect(),
        ),
        ports: Some(kept),
    })
}

/// A copy made by the component, as a Kubernetes object.
pub fn slice_from_wit(slice: types::EndpointSlice) -> discovery::EndpointSlice {
    discovery::EndpointSlice {
        metadata: ObjectMeta {
            name: Some(slice.name),
            namespace: Some(slice.namespace),
            labels: map(slice.labels),
            annotations: map(slice.annotations),
            ..ObjectMeta::default()
        },
        address_type: slice.address_type,
        endpoints: Some(slice.endpoints.into_iter().map(endpoint_from_wit).collect()),
        ports: Some(slice.ports.into_iter().map(port_from_wit).collect()),
    }
}

fn pairs(map: Option<&BTreeMap<String, String>>) -> Vec<(String, String)> {
    map.into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Key/value pairs as a Kubernetes map (`None` when empty).
pub fn map(pairs: Vec<(String, String)>) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| pairs.into_iter().collect())
}

fn endpoint_to_wit(e: &discovery::Endpoint) -> types::Endpoint {
    let conditions = e.conditions.clone().unwrap_or_default();
    types::Endpoint {
        addresses: e.addresses.clone(),
        conditions: types::EndpointConditions {
            ready: conditions.ready,
            serving: conditions.serving,
            terminating: conditions.terminating,
        },
        hostname: e.hostname.clone(),
        node_name: e.node_name.clone(),
        zone: e.zone.clone(),
        target_ref: e.target_ref.as_ref().map(|r| types::ObjectReference {
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            api_version: r.api_version.clone(),
            resource_version: r.resource_version.clone(),
            field_path: r.field_path.clone(),
        }),
        hints: e.hints.as_ref().map(|h| types::EndpointHints {
            for_zones: h
                .for_zones
                .iter()
                .flatten()
                .map(|z| z.name.clone())
                .collect(),
            for_nodes: h
                .for_nodes
                .iter()
                .flatten()
                .map(|n| n.name.clone())
                .collect(),
        }),
        deprecated_topology: pairs(e.deprecated_topology.as_ref()),
    }
}

fn endpoint_from_wit(e: types::Endpoint) -> discovery::Endpoint {
    let c = e.conditions;
    let has_conditions = c.ready.is_some() || c.serving.is_some() || c.terminating.is_some();
    discovery::Endpoint {
        addresses: e.addresses,
        conditions: has_conditions.then_some(discovery::EndpointConditions {
            ready: c.ready,
            serving: c.serving,
            terminating: c.terminating,
        }),
        deprecated_topology: map(e.deprecated_topology),
        hints: e.hints.map(|h| discovery::EndpointHints {
            for_zones: (!h.for_zones.is_empty()).then(|| {
                h.for_zones
                    .into_iter()
                    .map(|name| discovery::ForZone { name })
                    .collect()
            }),
            for_nodes: (!h.for_nodes.is_empty()).then(|| {
                h.for_nodes
                    .into_iter()
                    .map(|name| discovery::ForNode { name })
                    .collect()
            }),
        }),
        hostname: e.hostname,
        node_name: e.node_name,
        target_ref: e.target_ref.map(|r| ObjectReference {
            api_version: r.api_version,
            field_path: r.field_path,
            kind: r.kind,
            name: r.name,
            namespace: r.namespace,
            resource_version: r.resource_version,
            uid: r.uid,
        }),
        zone: e.zone,
    }
}

fn port_to_wit(p: &discovery::EndpointPort) -> types::EndpointPort {
    types::EndpointPort {
        name: p.name.clone(),
        port: p.port,
        protocol: p.protocol.clone(),
        app_protocol: p.app_protocol.clone(),
    }
}

/// A WIT endpoint port as a Kubernetes one (every field kept).
pub fn port_from_wit(p: types::EndpointPort) -> discovery::EndpointPort {
    discovery::EndpointPort {
        app_protocol: p.app_protocol,
        name: p.name,
        port: p.port,
        protocol: p.protocol,
    }
}

/// The component's `service-action`, its object decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum ServiceChange {
    Unchanged,
    Create(Service),
    Replace(Service),
    /// Delete the member's Service, then create this one.
    Recreate(Service),
    /// Leave the member's Service alone: why it cannot be made to match.
    Conflict(String),
}

/// A Service as the component's `service` function takes it (JSON text).
pub fn service_to_json(service: &Service) -> Result<String, serde_json::Error> {
    serde_json::to_string(service)
}

/// The component's `service-action` with its object decoded; an error means the component
/// answered with something that is not a Service.
pub fn service_change(action: types::ServiceAction) -> Result<ServiceChange, serde_json::Error> {
    Ok(match action {
        types::ServiceAction::Unchanged => ServiceChange::Unchanged,
        types::ServiceAction::Create(json) => ServiceChange::Create(serde_json::from_str(&json)?),
        types::ServiceAction::Replace(json) => ServiceChange::Replace(serde_json::from_str(&json)?),
        types::ServiceAction::Recreate(json) => {
            ServiceChange::Recreate(serde_json::from_str(&json)?)
        }
        types::ServiceAction::Conflict(why) => ServiceChange::Conflict(why),
    })
}

/// A `status.loadBalancer.ingress[]` entry as the component sees it.
pub fn ingress_to_wit(entry: &LoadBalancerIngress) -> types::LoadBalancerIngress {
    types::LoadBalancerIngress {
        ip: entry.ip.clone(),
        hostname: entry.hostname.clone(),
        ip_mode: entry.ip_mode.clone(),
        ports: entry
            .ports
            .iter()
            .flatten()
            .map(|p| types::PortStatus {
                port: p.port,
                protocol: p.protocol.clone(),
                error: p.error.clone(),
            })
            .collect(),
    }
}

/// The component's entry as Kubernetes writes it (`ports` absent when empty).
pub fn ingress_from_wit(entry: types::LoadBalancerIngress) -> LoadBalancerIngress {
    LoadBalancerIngress {
        ip: entry.ip,
        hostname: entry.hostname,
        ip_mode: entry.ip_mode,
        ports: (!entry.ports.is_empty()).then(|| {
            entry
                .ports
                .into_iter()
                .map(|p| PortStatus {
                    port: p.port,
                    protocol: p.protocol,
                    error: p.error,
                })
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The component compares the copies it wants with what a member holds as the host reads
    /// it back (`slice_facts` of what the API server returns): maps come back in key order,
    /// empty fields absent. A copy written and read back must count as held, or every resync
    /// would write every copy again.
    #[test]
    fn a_copy_written_and_read_back_is_held_as_the_component_made_it() {
        use crate::engine::types::{
            MemberObjects, MemberRead, MemberState, PassRead, SyncSettings,
        };
        use crate::engine::{EngineOptions, PassSlices, PolicyEngine};
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        let source: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "shop",
                         "labels": {"kubernetes.io/service-name": "web", "z": "1", "a": "2"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                           "deprecatedTopology": {"z": "1", "a": "2"},
                           "hints": {"forZones": [{"name": "zone-a"}], "forNodes": []}},
                          {"addresses": ["10.0.0.2"], "conditions": {}, "deprecatedTopology": {}}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"},
                      {"name": "metrics", "port": 9090}]
        }))
        .unwrap();
        let mcs = r#"{"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u1",
                         "finalizers": ["networking.karmada.io/mcs-policy-sync"]},
            "spec": {"types": ["CrossCluster"], "providerClusters": [{"name": "m1"}],
                     "consumerClusters": [{"name": "m2"}],
                     "ports": [{"name": "metrics", "port": 9090}]}}"#;
        let member = |name: &str, slices: types::MemberSlices| MemberRead {
            cluster: name.into(),
            state: MemberState::Ready(MemberObjects {
                slices: Ok(slices),
                service: Ok(None),
            }),
            unreadable_ms: 0,
            last_ingress: None,
        };
        let decide = |held: Vec<discovery::EndpointSlice>| {
            let mut slices = PassSlices::new();
            let pass = PassRead {
                mcs: mcs.into(),
                members: vec![
                    member("m1", slices.read("m1", vec![source.clone()])),
                    member("m2", slices.read("m2", held)),
                ],
                template: Ok(None),
                slice_bodies: slices.bodies().to_vec(),
                slice_maps: slices.maps().to_vec(),
                slice_ports: slices.ports().to_vec(),
                unsynced: Vec::new(),
            };
            let settings = SyncSettings {
                stale_timeout_ms: None,
            };
            let budget = std::time::Duration::from_secs(5);
            let decision = engine.decide(&pass, settings, budget).unwrap().unwrap();
            let copies: Vec<_> = decision
                .copies
                .iter()
                .map(|w| slices.copy(w).unwrap())
                .collect();
            (copies, decision.deletions)
        };
        let (first, _) = decide(Vec::new());
        assert_eq!(first.len(), 1, "m2 lacks the copy");
        let sent = serde_json::to_string(&first[0]).unwrap();
        let read_back: discovery::EndpointSlice = serde_json::from_str(&sent).unwrap();
        assert_eq!(
            read_back.ports.as_deref().unwrap(),
            &source.ports.as_ref().unwrap()[1..],
            "the copy keeps the metrics port only"
        );
        let (again, deletions) = decide(vec![read_back.clone()]);
        assert!(again.is_empty(), "{again:?}");
        assert!(deletions.is_empty());
        // A copy whose endpoints changed since is written again.
        let mut stale = read_back;
        stale.endpoints.as_mut().unwrap()[1].addresses = vec!["10.0.0.3".into()];
        let (again, _) = decide(vec![stale]);
        assert_eq!(again, first);
    }

    /// The content is the same for two slices exactly when their copies carry the same address
    /// type and endpoints: empty and absent fields alike, maps in any order, anything else apart.
    #[test]
    fn content_tells_slices_apart_by_what_their_copies_carry() {
        let slice = |address_type: &str, endpoints: serde_json::Value| {
            let slice: discovery::EndpointSlice = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web-1", "namespace": "shop"},
                "addressType": address_type, "endpoints": endpoints
            }))
            .unwrap();
            content(&slice)
        };
        let endpoint =
            serde_json::json!({"addresses": ["10.0.0.1"], "conditions": {"ready": true}});
        let base = slice("IPv4", serde_json::json!([endpoint]));
        assert_eq!(base.len(), 64);
        assert!(
            base.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        let same = [
            serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                                "deprecatedTopology": {}, "hints": null}]),
            serde_json::json!([{"conditions": {"ready": true}, "addresses": ["10.0.0.1"]}]),
        ];
        for endpoints in same {
            assert_eq!(slice("IPv4", endpoints.clone()), base, "{endpoints}");
        }
        assert_eq!(
            slice("IPv4", serde_json::json!(null)),
            slice("IPv4", serde_json::json!([]))
        );
        let different = [
            serde_json::json!([{"addresses": ["10.0.0.2"], "conditions": {"ready": true}}]),
            serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": false}}]),
            serde_json::json!([{"addresses": ["10.0.0.1"]}]),
            serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                                "zone": "z"}]),
            serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                                "hints": {}}]),
            serde_json::json!([endpoint, endpoint]),
            serde_json::json!([]),
        ];
        for endpoints in different {
            assert_ne!(slice("IPv4", endpoints.clone()), base, "{endpoints}");
        }
        assert_ne!(slice("IPv6", serde_json::json!([endpoint])), base);
    }

    /// A copy carries each endpoint as the component's records would have written it.
    #[test]
    fn a_written_endpoint_is_what_the_records_would_write() {
        let endpoints = serde_json::json!([
            {"addresses": ["10.0.0.1"]},
            {"addresses": [], "conditions": {}, "deprecatedTopology": {},
             "hints": {"forZones": [], "forNodes": []}},
            {"addresses": ["a", "b"], "conditions": {"serving": false}, "hostname": "h",
             "nodeName": "n", "zone": "z", "deprecatedTopology": {"b": "1", "a": "2"},
             "hints": {"forNodes": [{"name": "n1"}]},
             "targetRef": {"kind": "Pod", "name": "p", "uid": "u"}},
            {"addresses": ["c"], "hints": {}}
        ]);
        let endpoints: Vec<discovery::Endpoint> = serde_json::from_value(endpoints).unwrap();
        for e in &endpoints {
            assert_eq!(
                written_endpoint(e),
                endpoint_from_wit(endpoint_to_wit(e)),
                "{e:?}"
            );
        }
    }

    #[test]
    fn assembles_a_copy_from_the_slice_and_ports_it_names() {
        let port = |name: &str| types::EndpointPort {
            name: Some(name.into()),
            port: Some(80),
            protocol: None,
            app_protocol: None,
        };
        let source = types::EndpointSlice {
            name: "web-1".into(),
            namespace: "shop".into(),
            labels: vec![("a".into(), "b".into())],
            annotations: vec![("c".into(), "d".into())],
            address_type: "IPv6".into(),
            endpoints: vec![],
            ports: vec![port("http"), port("metrics")],
        };
        let copy = |source: u32, ports: Vec<u32>| types::SliceCopy {
            source,
            name: "m1-web-1".into(),
            labels: vec![("l".into(), "v".into())],
            annotations: vec![],
            ports,
        };
        let summary = summary(&source);
        assert_eq!(
            summary.port_names,
            vec![Some("http".into()), Some("metrics".into())]
        );
        let slices = [source];
        let made = assemble(copy(0, vec![1]), &slices).unwrap();
        assert_eq!(
            (
                made.name.as_str(),
                made.namespace.as_str(),
                made.address_type.as_str()
            ),
            ("m1-web-1", "shop", "IPv6")
        );
        assert_eq!(made.labels, vec![("l".to_string(), "v".to_string())]);
        assert_eq!(made.ports, vec![port("metrics")]);
        assert!(assemble(copy(1, vec![]), &slices).is_err());
        assert!(assemble(copy(0, vec![2]), &slices).is_err());
    }

    #[test]
    fn round_trips_every_endpoint_field() {
        let json = serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"a": "b"}, "annotations": {"c": "d"}},
            "addressType": "IPv6",
            "endpoints": [{
                "addresses": ["fd00::1"],
                "conditions": {"ready": true, "serving": false, "terminating": true},
                "hostname": "h", "nodeName": "n", "zone": "z",
                "targetRef": {"kind": "Pod", "namespace": "shop", "name": "p", "uid": "u", "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "f"},
                "hints": {"forZones": [{"name": "z1"}], "forNodes": [{"name": "n1"}]},
                "deprecatedTopology": {"k": "v"}
            }],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}]
        });
        let slice: discovery::EndpointSlice = serde_json::from_value(json.clone()).unwrap();
        let back = slice_from_wit(slice_to_wit(&slice));
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
}
