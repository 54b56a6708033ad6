//! The derived Service: a selectorless `ClusterIP` Service named as the reference controller
//! names it, whose IP is the ServiceImport's clusterset IP in that member. Stock kube-proxy
//! routes it to the imported EndpointSlices, labelled `kubernetes.io/service-name` with its name.

use serde_json::{Map, Value, json};

use super::export::{Properties, map_at, ports, str_at};
use super::import::{Allocated, escape, ports_json, shared_spec};
use super::owner::{Owner, owned_as};
use super::{CREATED_BY, CREATED_BY_LABEL};
use crate::filter::MC_SERVICE_NAME_LABEL;

/// Its `ipFamilyPolicy`: a cluster IP of every family the member serves, so that whichever
/// families the exporters' endpoints are in, the member has a ClusterSetIP of that family when
/// it serves it. No `ipFamilies`: an API server refuses a Service that lists a family it does
/// not serve, and which families a member serves is its own (a dual-stack member answers with
/// both, its primary first; a single-stack member with its one).
pub const IP_FAMILY_POLICY: &str = "PreferDualStack";

/// The derived Service to apply for the import of `name`, owned by the member's ServiceImport
/// when it has a uid.
pub fn body(
    namespace: &str,
    name: &str,
    derived: &str,
    p: &Properties,
    owner: Option<&Owner>,
) -> Value {
    let mut spec = Map::new();
    spec.insert("type".into(), json!("ClusterIP"));
    spec.insert("ipFamilyPolicy".into(), json!(IP_FAMILY_POLICY));
    shared_spec(p, &mut spec);
    let mut body = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": derived,
            "namespace": namespace,
            "labels": { CREATED_BY_LABEL: CREATED_BY, MC_SERVICE_NAME_LABEL: name },
        },
        "spec": spec,
    });
    if let Some(owner) = owner {
        body["metadata"]["ownerReferences"] = json!([owner.reference()]);
    }
    body
}

/// Whether a Service as read carries our marker.
pub fn is_ours(existing: &Value) -> bool {
    str_at(
        existing,
        &format!("/metadata/labels/{}", escape(CREATED_BY_LABEL)),
    ) == Some(CREATED_BY)
}

/// Whether `existing` is as `desired` says, API-server defaults and assigned fields aside: our
/// labels, type `ClusterIP` and not headless, no selector, the same ports (by name, protocol,
/// app protocol and port), affinity, traffic and IP family policies, and the owner `desired`
/// names among its owners.
pub fn same(existing: &Value, desired: &Value) -> bool {
    let have = map_at(existing, "/metadata/labels");
    let labels_kept = map_at(desired, "/metadata/labels")
        .iter()
        .all(|(k, v)| have.get(k) == Some(v));
    let e = existing.get("spec").cloned().unwrap_or(Value::Null);
    let d = &desired["spec"];
    let text = |v: &Value, key: &str, default: &str| -> String {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    };
    let value = |v: &Value, key: &str| v.get(key).cloned().unwrap_or(Value::Null);
    labels_kept
        && owned_as(existing, desired)
        && text(&e, "type", "ClusterIP") == "ClusterIP"
        && str_at(&e, "/clusterIP") != Some("None")
        && e.get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        && ports_json(&ports(&e)) == ports_json(&ports(d))
        && text(&e, "sessionAffinity", "None") == text(d, "sessionAffinity", "None")
        && (text(d, "sessionAffinity", "None") == "None"
            || value(&e, "sessionAffinityConfig") == value(d, "sessionAffinityConfig"))
        && text(&e, "internalTrafficPolicy", "Cluster")
            == text(d, "internalTrafficPolicy", "Cluster")
        && text(&e, "ipFamilyPolicy", "SingleStack") == text(d, "ipFamilyPolicy", "SingleStack")
        && value(&e, "trafficDistribution") == value(d, "trafficDistribution")
}

/// The IPs the API server allocated to a derived Service of ours (none while headless).
pub fn allocated(existing: &Value) -> Allocated {
    let strings = |pointer: &str| -> Vec<String> {
        existing
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut ips = strings("/spec/clusterIPs");
    if ips.is_empty()
        && let Some(ip) = str_at(existing, "/spec/clusterIP")
        && !ip.is_empty()
    {
        ips.push(ip.to_string());
    }
    ips.retain(|ip| ip != "None");
    let families = if ips.is_empty() {
        Vec::new()
    } else {
        strings("/spec/ipFamilies")
    };
    Allocated { ips, families }
}

/// Why the ClusterSetIPs a member was given reach no endpoint, when they do not: its derived
/// Service's families (those the member serves) share none with the exports' (`p.ip_families`;
/// unknown families are no reason).
pub fn unreachable(allocated: &Allocated, p: &Properties, ns: &str, name: &str) -> Option<String> {
    let disjoint = !allocated.families.is_empty()
        && !p.ip_families.is_empty()
        && !allocated.families.iter().any(|f| p.ip_families.contains(f));
    disjoint.then(|| {
        format!(
            "the ClusterSetIP of {ns}/{name} here is {} only and the exported endpoints are {}: it reaches none of them",
            allocated.families.join(" and "),
            p.ip_families.join(" and ")
        )
    })
}
