//! `clusterset-decide` fixtures (tests/fixtures/clusterset/): their input as the WIT read, the
//! answer summarised in the fixtures' `expect` shape, and both in WAVE for the wasmtime CLI. The
//! JavaScript host (tests/js/lib/host.mjs `clustersetRead`, `clustersetSummary`) does the same.

use mcs_policy::engine::types::{
    ClustersetDecision, ClustersetMember, ClustersetMemberState, ClustersetObjects, ClustersetRead,
    DeletePrecondition, Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice,
    ImportedSlice, ObjectReference, ObjectWrite,
};
use serde_json::{Map, Value, json};

use crate::wave::{endpoint_port, list, option, pairs, record, result, string, strings};

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn map_pairs(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A Kubernetes EndpointSlice (JSON) as the WIT record.
pub fn slice_to_wit(s: &Value) -> EndpointSlice {
    let meta = &s["metadata"];
    let endpoints = s["endpoints"].as_array().cloned().unwrap_or_default();
    EndpointSlice {
        name: text(meta, "name").unwrap_or_default(),
        namespace: text(meta, "namespace").unwrap_or_default(),
        labels: map_pairs(meta.get("labels")),
        annotations: map_pairs(meta.get("annotations")),
        address_type: text(s, "addressType").unwrap_or_default(),
        endpoints: endpoints
            .iter()
            .map(|e| {
                let c = &e["conditions"];
                Endpoint {
                    addresses: e["addresses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect(),
                    conditions: EndpointConditions {
                        ready: c.get("ready").and_then(Value::as_bool),
                        serving: c.get("serving").and_then(Value::as_bool),
                        terminating: c.get("terminating").and_then(Value::as_bool),
                    },
                    hostname: text(e, "hostname"),
                    node_name: text(e, "nodeName"),
                    zone: text(e, "zone"),
                    target_ref: e.get("targetRef").map(|r| ObjectReference {
                        kind: text(r, "kind"),
                        namespace: text(r, "namespace"),
                        name: text(r, "name"),
                        uid: text(r, "uid"),
                        api_version: text(r, "apiVersion"),
                        resource_version: text(r, "resourceVersion"),
                        field_path: text(r, "fieldPath"),
                    }),
                    hints: e.get("hints").map(|h| EndpointHints {
                        for_zones: names(h.get("forZones")),
                        for_nodes: names(h.get("forNodes")),
                    }),
                    deprecated_topology: map_pairs(e.get("deprecatedTopology")),
                }
            })
            .collect(),
        ports: s["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| EndpointPort {
                name: text(p, "name"),
                port: p.get("port").and_then(Value::as_i64).map(|n| n as i32),
                protocol: text(p, "protocol"),
                app_protocol: text(p, "appProtocol"),
            })
            .collect(),
    }
}

fn names(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|z| text(z, "name"))
        .collect()
}

/// A fixture's `input` as the WIT read. Objects are sent as compact JSON text.
pub fn read_input(input: &Value) -> ClustersetRead {
    let object = |m: &Value, key: &str| m.get(key).map(Value::to_string);
    ClustersetRead {
        namespace: text(input, "namespace").unwrap_or_default(),
        name: text(input, "name").unwrap_or_default(),
        now: text(input, "now").unwrap_or_default(),
        members: input["members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| ClustersetMember {
                cluster: text(m, "cluster").unwrap_or_default(),
                cluster_property: text(m, "clusterProperty"),
                state: match text(m, "unreadable") {
                    Some(why) => ClustersetMemberState::Unreadable(why),
                    None => ClustersetMemberState::Readable(ClustersetObjects {
                        service_export: object(m, "serviceExport"),
                        service: object(m, "service"),
                        slices: m["slices"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(slice_to_wit)
                            .collect(),
                        service_import: object(m, "serviceImport"),
                        derived_service: object(m, "derivedService"),
                        imported_slices: m["importedSlices"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|s| ImportedSlice {
                                slice: slice_to_wit(s),
                                uid: text(&s["metadata"], "uid").unwrap_or_default(),
                                resource_version: text(&s["metadata"], "resourceVersion")
                                    .unwrap_or_default(),
                            })
                            .collect(),
                    }),
                },
                unreadable_ms: m["unreadableMs"].as_u64().unwrap_or(0),
            })
            .collect(),
        stale_timeout_ms: input["staleTimeoutMs"].as_u64(),
    }
}

fn precondition(p: &DeletePrecondition) -> Value {
    json!({"name": p.name, "uid": p.uid, "resourceVersion": p.resource_version})
}

fn write(w: &ObjectWrite) -> Value {
    match w {
        ObjectWrite::Leave => json!("leave"),
        ObjectWrite::Apply(body) => json!({"apply": parse(body)}),
        ObjectWrite::Delete(p) => json!({"delete": precondition(p)}),
    }
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|_| json!({"notJson": body}))
}

/// The answer in the fixtures' `expect` shape: `{"ok": ...}` or `{"err": ...}`; applied
/// objects as JSON, conditions as `"<status> <reason>"` per type, the ServiceImport status as
/// its cluster ids, applied slices as their name, labels and addresses.
pub fn summary(answer: &Result<ClustersetDecision, String>) -> Value {
    let d = match answer {
        Err(e) => return json!({ "err": e }),
        Ok(d) => d,
    };
    let members: Vec<Value> = d
        .members
        .iter()
        .map(|m| {
            let conditions = m.export_conditions.as_deref().map(|c| {
                let mut out = Map::new();
                for c in parse(c).as_array().into_iter().flatten() {
                    out.insert(
                        text(c, "type").unwrap_or_default(),
                        json!(format!(
                            "{} {}",
                            text(c, "status").unwrap_or_default(),
                            text(c, "reason").unwrap_or_default()
                        )),
                    );
                }
                Value::Object(out)
            });
            let status = m.service_import_status.as_deref().map(|s| {
                let clusters: Vec<Value> = parse(s)["status"]["clusters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["cluster"].clone())
                    .collect();
                Value::Array(clusters)
            });
            let slices: Vec<Value> = m
                .apply_slices
                .iter()
                .map(|s| {
                    let labels: Map<String, Value> = s
                        .labels
                        .iter()
                        .map(|(k, v)| (k.clone(), json!(v)))
                        .collect();
                    let addresses: Vec<&String> =
                        s.endpoints.iter().flat_map(|e| &e.addresses).collect();
                    json!({"name": s.name, "labels": labels, "addresses": addresses})
                })
                .collect();
            json!({
                "cluster": m.cluster,
                "clusterId": m.cluster_id,
                "conditions": conditions,
                "serviceImport": write(&m.service_import),
                "serviceImportStatus": status,
                "derivedService": write(&m.derived_service),
                "applySlices": slices,
                "deleteSlices": m.delete_slices.iter().map(precondition).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({"ok": {
        "exporters": d.exporters,
        "winner": d.winner,
        "conflicts": d.conflicts,
        "members": members,
    }})
}

fn endpoint_slice(s: &EndpointSlice, printed: bool) -> String {
    let opt_str = |v: &Option<String>| Err(v.as_deref().map(string));
    let opt_bool = |v: Option<bool>| Err(v.map(|b| b.to_string()));
    let endpoints = list(&s.endpoints, |e| {
        let c = &e.conditions;
        let conditions = record(
            vec![
                ("ready", opt_bool(c.ready)),
                ("serving", opt_bool(c.serving)),
                ("terminating", opt_bool(c.terminating)),
            ],
            printed,
        );
        let target = e.target_ref.as_ref().map(|r| {
            record(
                vec![
                    ("kind", opt_str(&r.kind)),
                    ("namespace", opt_str(&r.namespace)),
                    ("name", opt_str(&r.name)),
                    ("uid", opt_str(&r.uid)),
                    ("api-version", opt_str(&r.api_version)),
                    ("resource-version", opt_str(&r.resource_version)),
                    ("field-path", opt_str(&r.field_path)),
                ],
                printed,
            )
        });
        let hints = e.hints.as_ref().map(|h| {
            format!(
                "{{for-zones: {}, for-nodes: {}}}",
                strings(&h.for_zones),
                strings(&h.for_nodes)
            )
        });
        record(
            vec![
                ("addresses", Ok(strings(&e.addresses))),
                ("conditions", Ok(conditions)),
                ("hostname", opt_str(&e.hostname)),
                ("node-name", opt_str(&e.node_name)),
                ("zone", opt_str(&e.zone)),
                ("target-ref", Err(target)),
                ("hints", Err(hints)),
                ("deprecated-topology", Ok(pairs(&e.deprecated_topology))),
            ],
            printed,
        )
    });
    format!(
        "{{name: {}, namespace: {}, labels: {}, annotations: {}, address-type: {}, endpoints: {endpoints}, ports: {}}}",
        string(&s.name),
        string(&s.namespace),
        pairs(&s.labels),
        pairs(&s.annotations),
        string(&s.address_type),
        list(&s.ports, |p| endpoint_port(p, printed)),
    )
}

/// The `clusterset-read` argument in WAVE.
pub fn wave_read(r: &ClustersetRead) -> String {
    let opt_str = |v: &Option<String>| option(v.as_deref().map(string));
    let members = list(&r.members, |m| {
        let state = match &m.state {
            ClustersetMemberState::Unreadable(why) => format!("unreadable({})", string(why)),
            ClustersetMemberState::Readable(o) => format!(
                "readable({{service-export: {}, service: {}, slices: {}, service-import: {}, \
                 derived-service: {}, imported-slices: {}}})",
                opt_str(&o.service_export),
                opt_str(&o.service),
                list(&o.slices, |s| endpoint_slice(s, false)),
                opt_str(&o.service_import),
                opt_str(&o.derived_service),
                list(&o.imported_slices, |i| format!(
                    "{{slice: {}, uid: {}, resource-version: {}}}",
                    endpoint_slice(&i.slice, false),
                    string(&i.uid),
                    string(&i.resource_version)
                )),
            ),
        };
        format!(
            "{{cluster: {}, cluster-property: {}, state: {state}, unreadable-ms: {}}}",
            string(&m.cluster),
            opt_str(&m.cluster_property),
            m.unreadable_ms
        )
    });
    format!(
        "{{namespace: {}, name: {}, now: {}, members: {members}, stale-timeout-ms: {}}}",
        string(&r.namespace),
        string(&r.name),
        string(&r.now),
        option(r.stale_timeout_ms.map(|t| t.to_string()))
    )
}

fn wave_precondition(p: &DeletePrecondition) -> String {
    format!(
        "{{name: {}, uid: {}, resource-version: {}}}",
        string(&p.name),
        string(&p.uid),
        string(&p.resource_version)
    )
}

fn wave_write(w: &ObjectWrite) -> String {
    match w {
        ObjectWrite::Leave => "leave".to_string(),
        ObjectWrite::Apply(body) => format!("apply({})", string(body)),
        ObjectWrite::Delete(p) => format!("delete({})", wave_precondition(p)),
    }
}

/// A `clusterset-decide` answer as `wasmtime run --invoke` prints it.
pub fn wave_answer(answer: &Result<ClustersetDecision, String>) -> String {
    result(
        answer,
        |d| {
            let members = list(&d.members, |m| {
                record(
                    vec![
                        ("cluster", Ok(string(&m.cluster))),
                        ("cluster-id", Ok(string(&m.cluster_id))),
                        (
                            "export-conditions",
                            Err(m.export_conditions.as_deref().map(string)),
                        ),
                        ("service-import", Ok(wave_write(&m.service_import))),
                        (
                            "service-import-status",
                            Err(m.service_import_status.as_deref().map(string)),
                        ),
                        ("derived-service", Ok(wave_write(&m.derived_service))),
                        (
                            "apply-slices",
                            Ok(list(&m.apply_slices, |s| endpoint_slice(s, true))),
                        ),
                        ("slice-owner", Err(m.slice_owner.as_deref().map(string))),
                        (
                            "delete-slices",
                            Ok(list(&m.delete_slices, wave_precondition)),
                        ),
                        ("notes", Ok(strings(&m.notes))),
                    ],
                    true,
                )
            });
            record(
                vec![
                    ("members", Ok(members)),
                    ("exporters", Ok(strings(&d.exporters))),
                    ("winner", Err(d.winner.as_deref().map(string))),
                    ("conflicts", Ok(strings(&d.conflicts))),
                ],
                true,
            )
        },
        |e| string(e),
    )
}
