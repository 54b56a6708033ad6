//! The ServiceImport a member must hold, its status, and whether what it holds already is so.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::export::{Port, Properties, map_at, ports, str_at};
use super::{CREATED_BY, CREATED_BY_LABEL, DERIVED_SERVICE_ANNOTATION, GROUP_VERSION};
use crate::condition::{Condition, merge};

pub const KIND: &str = "ServiceImport";

/// The IPs of a member's derived Service, as read: what its ServiceImport lists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocated {
    pub ips: Vec<String>,
    pub families: Vec<String>,
}

/// The ports as a ServiceImport or Service `spec.ports` lists them.
pub fn ports_json(ports: &[Port]) -> Value {
    Value::Array(
        ports
            .iter()
            .map(|p| {
                let mut o = Map::new();
                if !p.name.is_empty() {
                    o.insert("name".into(), json!(p.name));
                }
                o.insert("protocol".into(), json!(p.protocol));
                if let Some(a) = &p.app_protocol {
                    o.insert("appProtocol".into(), json!(a));
                }
                o.insert("port".into(), json!(p.port));
                Value::Object(o)
            })
            .collect(),
    )
}

/// The `spec` fields a ServiceImport and a derived Service both take from the winner.
pub fn shared_spec(p: &Properties, spec: &mut Map<String, Value>) {
    spec.insert("ports".into(), ports_json(&p.ports));
    spec.insert("sessionAffinity".into(), json!(p.session_affinity));
    if !p.session_affinity_config.is_null() {
        spec.insert(
            "sessionAffinityConfig".into(),
            p.session_affinity_config.clone(),
        );
    }
    spec.insert(
        "internalTrafficPolicy".into(),
        json!(p.internal_traffic_policy),
    );
    if let Some(t) = &p.traffic_distribution {
        spec.insert("trafficDistribution".into(), json!(t));
    }
}

/// The ServiceImport body to apply: exported labels and annotations (the winner's) plus our
/// marker, the derived Service's name for a `ClusterSetIP` one.
pub fn body(
    namespace: &str,
    name: &str,
    p: &Properties,
    derived: Option<&str>,
    allocated: &Allocated,
) -> Value {
    let mut labels = p.exported_labels.clone();
    labels.insert(CREATED_BY_LABEL.into(), CREATED_BY.into());
    let mut annotations = p.exported_annotations.clone();
    annotations.remove(DERIVED_SERVICE_ANNOTATION);
    if let Some(d) = derived {
        annotations.insert(DERIVED_SERVICE_ANNOTATION.into(), d.into());
    }
    let mut spec = Map::new();
    spec.insert(
        "type".into(),
        json!(if p.headless {
            "Headless"
        } else {
            "ClusterSetIP"
        }),
    );
    shared_spec(p, &mut spec);
    if !allocated.ips.is_empty() {
        spec.insert("ips".into(), json!(allocated.ips));
    }
    if !allocated.families.is_empty() {
        spec.insert("ipFamilies".into(), json!(allocated.families));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("labels".into(), json!(labels));
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), json!(annotations));
    }
    json!({
        "apiVersion": GROUP_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": spec,
    })
}

/// The status subresource body: `status.clusters` lists the exporting cluster ids, and
/// `status.conditions` our conditions (`Ready`; a server-side apply keeps the other types,
/// which other managers own).
pub fn status_body(
    namespace: &str,
    name: &str,
    clusters: &[String],
    conditions: &[Value],
) -> Value {
    let clusters: Vec<Value> = clusters.iter().map(|c| json!({ "cluster": c })).collect();
    json!({
        "apiVersion": GROUP_VERSION,
        "kind": KIND,
        "metadata": { "name": name, "namespace": namespace },
        "status": { "clusters": clusters, "conditions": conditions },
    })
}

/// The ServiceImport condition mcs-api `v1beta1` defines.
pub const READY: &str = "Ready";
/// `Ready=True`.
pub const REASON_READY: &str = "Ready";
/// `Ready=False`: the import is being created or updated (no ClusterSetIP yet).
pub const REASON_PENDING: &str = "Pending";
/// `Ready=False`: the member's ClusterSetIP is of no family of the exported endpoints.
pub const REASON_IP_FAMILY_NOT_SUPPORTED: &str = "IPFamilyNotSupported";

/// A member's import's `Ready` condition: a headless import is ready; a `ClusterSetIP` one once
/// its derived Service has an IP (`allocated`) of a family the exported endpoints are in
/// (`unreachable` says why not, see [`super::derived::unreachable`]).
pub fn ready(
    p: &Properties,
    allocated: &Allocated,
    unreachable: Option<&str>,
    derived: &str,
) -> Condition {
    if p.headless {
        return Condition::new(
            READY,
            true,
            REASON_READY,
            "the exported endpoints are imported (headless: no ClusterSetIP)",
        );
    }
    if allocated.ips.is_empty() {
        return Condition::new(
            READY,
            false,
            REASON_PENDING,
            &format!("waiting for the derived Service {derived} to be given a ClusterSetIP"),
        );
    }
    match unreachable {
        Some(why) => Condition::new(READY, false, REASON_IP_FAMILY_NOT_SUPPORTED, why),
        None => Condition::new(
            READY,
            true,
            REASON_READY,
            &format!(
                "the ClusterSetIP {} reaches the exported endpoints",
                allocated.ips.join(", ")
            ),
        ),
    }
}

/// The status body to apply to `held` (the member's ServiceImport of ours, `None`: none yet)
/// for `clusters` and the `ready` condition at `now`, `None` when its status already says so.
pub fn status(
    held: Option<&Value>,
    namespace: &str,
    name: &str,
    clusters: &[String],
    ready: &Condition,
    now: &str,
) -> Option<Value> {
    let current: Vec<Value> = held
        .and_then(|h| h.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let merged = merge(&current, std::slice::from_ref(ready), None, now);
    let same_clusters = held.is_some_and(|h| status_clusters(h) == clusters);
    if same_clusters && merged.is_none() {
        return None;
    }
    let ours: Vec<Value> = merged
        .unwrap_or(current)
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some(READY))
        .collect();
    Some(status_body(namespace, name, clusters, &ours))
}

/// Whether a ServiceImport as read carries our marker.
pub fn is_ours(existing: &Value) -> bool {
    str_at(
        existing,
        &format!("/metadata/labels/{}", escape(CREATED_BY_LABEL)),
    ) == Some(CREATED_BY)
}

/// RFC 6901 escaping of a key.
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether `existing` holds what `desired` (a [`body`]) says: the same labels and annotations,
/// and the same spec once absent and empty fields are set aside and ports normalised.
pub fn same(existing: &Value, desired: &Value) -> bool {
    map_at(existing, "/metadata/labels") == map_at(desired, "/metadata/labels")
        && map_at(existing, "/metadata/annotations") == map_at(desired, "/metadata/annotations")
        && canonical(existing.get("spec")) == canonical(desired.get("spec"))
}

fn canonical(spec: Option<&Value>) -> BTreeMap<String, Value> {
    let Some(Value::Object(spec)) = spec else {
        return BTreeMap::new();
    };
    let mut out: BTreeMap<String, Value> = spec
        .iter()
        .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if out.contains_key("ports") {
        out.insert(
            "ports".into(),
            ports_json(&ports(&Value::Object(spec.clone()))),
        );
    }
    out
}

/// The cluster ids a ServiceImport's status lists.
pub fn status_clusters(existing: &Value) -> Vec<String> {
    existing
        .pointer("/status/clusters")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| str_at(c, "/cluster").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
