//! `mcs-policy eval clusterset-decide`: one pass of the Multi-Cluster Services API over one
//! exported name (WIT `clusterset-decide`, docs/clusterset-rules.md), offline. The input is the
//! WIT `clusterset-read` as JSON with camelCase field names, as in `tests/fixtures/clusterset/`:
//! objects the WIT passes as JSON text (ServiceExport, Service, ServiceImport, derived Service)
//! are JSON values, or strings holding the exact text, absent when the member has none;
//! EndpointSlices are Kubernetes JSON (an imported slice's `metadata.uid` and
//! `resourceVersion` are its delete preconditions); a member with `unreadable` (the reason) was
//! not read, `unreadableMs` for how long, and the read's `staleTimeoutMs` is
//! `--stale-endpoint-timeout`. The answer is `{"ok": decision}` or `{"err": message}`, the
//! objects to write as JSON and the slices to apply as Kubernetes JSON (with the member's
//! ServiceImport as owner, as the host applies them), and `derivedName`, the derived Service's
//! name (WIT `clusterset-derived-name`).

use k8s_openapi::api::discovery::v1::EndpointSlice as KubeSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde::Deserialize;
use serde_json::{Value, json};

use super::decide::text;
use super::{EvalError, kube_slice_json, read_json};
use crate::engine::PolicyEngine;
use crate::engine::convert;
use crate::engine::types::{
    ClustersetDecision, ClustersetMember, ClustersetMemberState, ClustersetObjects, ClustersetRead,
    DeletePrecondition, ImportedSlice, ObjectWrite,
};

/// WIT `clusterset-read`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    namespace: String,
    name: String,
    #[serde(default)]
    now: String,
    #[serde(default)]
    members: Vec<MemberInput>,
    /// `--stale-endpoint-timeout` in milliseconds.
    #[serde(default, rename = "staleTimeoutMs")]
    stale_timeout_ms: Option<u64>,
}

/// WIT `clusterset-member`, its `clusterset-objects` inline; `unreadable` makes it
/// `unreadable(reason)` (and then the objects must be absent).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MemberInput {
    cluster: String,
    #[serde(default)]
    cluster_property: Option<String>,
    #[serde(default)]
    unreadable: Option<String>,
    /// For how long it has been unreadable, in milliseconds.
    #[serde(default)]
    unreadable_ms: u64,
    #[serde(default)]
    service_export: Option<Value>,
    #[serde(default)]
    service: Option<Value>,
    #[serde(default)]
    slices: Vec<KubeSlice>,
    #[serde(default)]
    service_import: Option<Value>,
    #[serde(default)]
    derived_service: Option<Value>,
    #[serde(default)]
    imported_slices: Vec<KubeSlice>,
}

/// `eval clusterset-decide`: the component's answer as JSON, `{"ok": decision}` or
/// `{"err": message}`.
pub fn clusterset_decide(
    engine: &PolicyEngine,
    input: &str,
    budget: std::time::Duration,
) -> Result<Value, EvalError> {
    clusterset_decide_json(engine, &read_json(input)?, input, budget)
}

/// `eval clusterset-decide` on JSON text already read; `input` names it in errors.
pub fn clusterset_decide_json(
    engine: &PolicyEngine,
    json: &str,
    input: &str,
    budget: std::time::Duration,
) -> Result<Value, EvalError> {
    let read = clusterset_input(json, input)?;
    let mut answer = clusterset_answer(engine.clusterset_decide(&read, budget)?);
    if let Some(ok) = answer.get_mut("ok") {
        // The name the host reads the derived Service and the imported slices under.
        ok["derivedName"] =
            json!(engine.clusterset_derived_name(&read.namespace, &read.name, budget)?);
    }
    Ok(answer)
}

/// The `clusterset-read` of a clusterset-decide input (JSON text); `input` names it in errors.
pub fn clusterset_input(json: &str, input: &str) -> Result<ClustersetRead, EvalError> {
    let refuse = |reason: String| EvalError::ClustersetInput {
        input: input.to_string(),
        reason,
    };
    let parsed: ReadInput = serde_json::from_str(json).map_err(|e| refuse(e.to_string()))?;
    let members = parsed
        .members
        .into_iter()
        .map(|m| {
            let state = match m.unreadable {
                Some(why) => {
                    let has_objects = m.service_export.is_some()
                        || m.service.is_some()
                        || !m.slices.is_empty()
                        || m.service_import.is_some()
                        || m.derived_service.is_some()
                        || !m.imported_slices.is_empty();
                    if has_objects {
                        return Err(refuse(format!(
                            "member {} is unreadable and yet has objects",
                            m.cluster
                        )));
                    }
                    ClustersetMemberState::Unreadable(why)
                }
                None => ClustersetMemberState::Readable(ClustersetObjects {
                    service_export: m.service_export.map(text),
                    service: m.service.map(text),
                    slices: m.slices.iter().map(convert::slice_to_wit).collect(),
                    service_import: m.service_import.map(text),
                    derived_service: m.derived_service.map(text),
                    imported_slices: m
                        .imported_slices
                        .iter()
                        .map(|s| ImportedSlice {
                            slice: convert::slice_to_wit(s),
                            uid: s.metadata.uid.clone().unwrap_or_default(),
                            resource_version: s
                                .metadata
                                .resource_version
                                .clone()
                                .unwrap_or_default(),
                        })
                        .collect(),
                }),
            };
            Ok(ClustersetMember {
                cluster: m.cluster,
                cluster_property: m.cluster_property,
                state,
                unreadable_ms: m.unreadable_ms,
            })
        })
        .collect::<Result<Vec<_>, EvalError>>()?;
    Ok(ClustersetRead {
        namespace: parsed.namespace,
        name: parsed.name,
        now: parsed.now,
        members,
        stale_timeout_ms: parsed.stale_timeout_ms,
    })
}

/// JSON text the component wrote, as JSON (as a string when it is not JSON).
fn parsed(body: String) -> Value {
    serde_json::from_str(&body).unwrap_or(Value::String(body))
}

fn precondition(p: DeletePrecondition) -> Value {
    json!({"name": p.name, "uid": p.uid, "resourceVersion": p.resource_version})
}

fn write(w: ObjectWrite) -> Value {
    match w {
        ObjectWrite::Leave => json!("leave"),
        ObjectWrite::Apply(body) => json!({ "apply": parsed(body) }),
        ObjectWrite::Delete(p) => json!({ "delete": precondition(p) }),
    }
}

/// A `clusterset-decide` answer as `eval clusterset-decide` prints it.
pub fn clusterset_answer(answer: Result<ClustersetDecision, String>) -> Value {
    let d = match answer {
        Ok(d) => d,
        Err(message) => return json!({ "err": message }),
    };
    let members: Vec<Value> = d
        .members
        .into_iter()
        .map(|m| {
            let owner: Option<OwnerReference> = m
                .slice_owner
                .as_deref()
                .and_then(|o| serde_json::from_str(o).ok());
            let slices: Vec<Value> = m
                .apply_slices
                .into_iter()
                .map(|s| {
                    // As the host applies it: owned by the member's ServiceImport.
                    let mut slice = convert::slice_from_wit(s);
                    slice.metadata.owner_references = owner.clone().map(|o| vec![o]);
                    kube_slice_json(slice)
                })
                .collect();
            let deletions: Vec<Value> = m.delete_slices.into_iter().map(precondition).collect();
            json!({
                "cluster": m.cluster,
                "clusterId": m.cluster_id,
                "exportConditions": m.export_conditions.map(parsed),
                "serviceImport": write(m.service_import),
                "serviceImportStatus": m.service_import_status.map(parsed),
                "derivedService": write(m.derived_service),
                "applySlices": slices,
                "sliceOwner": m.slice_owner.map(parsed),
                "deleteSlices": deletions,
                "notes": m.notes,
            })
        })
        .collect();
    json!({ "ok": {
        "members": members,
        "exporters": d.exporters,
        "winner": d.winner,
        "conflicts": d.conflicts,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> PolicyEngine {
        PolicyEngine::embedded(crate::engine::EngineOptions::default()).unwrap()
    }

    const BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

    /// member1 exported `shop/web` (member2's imported slice says so) and has been unreadable for
    /// `unreadable_ms`; member2 holds the import (with a uid) and member1's imported slice.
    fn input(unreadable_ms: u64, stale_timeout_ms: Option<u64>) -> String {
        let mut input = json!({
            "namespace": "shop", "name": "web", "now": "2026-12-07T10:00:00Z",
            "members": [
                {"cluster": "member1", "unreadable": "connection refused", "unreadableMs": unreadable_ms},
                {"cluster": "member2",
                 "serviceImport": {"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
                    "metadata": {"name": "web", "namespace": "shop", "uid": "import-uid", "resourceVersion": "5",
                        "labels": {"networking.karmada.io/created-by": "mcs-policy-clusterset"}},
                    "spec": {"type": "ClusterSetIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
                    "status": {"clusters": [{"cluster": "member1"}]}},
                 "importedSlices": [{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"name": "web-member1-0123456789abcdef", "namespace": "shop", "uid": "s1", "resourceVersion": "7",
                        "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-clusterset-controller.karmada.io",
                            "multicluster.kubernetes.io/service-name": "web",
                            "multicluster.kubernetes.io/source-cluster": "member1"}},
                    "addressType": "IPv4", "endpoints": []}]},
            ],
        });
        if let Some(t) = stale_timeout_ms {
            input["staleTimeoutMs"] = json!(t);
        }
        input.to_string()
    }

    #[test]
    fn eval_takes_the_stale_timeout_and_names_the_derived_service() {
        let engine = engine();
        let answer = |ms, timeout| {
            clusterset_decide_json(&engine, &input(ms, timeout), "input", BUDGET).unwrap()
        };
        // Within the timeout (or without one) member1's slice stays; past it, it goes with the
        // import it alone exported.
        for kept in [answer(10_000, None), answer(1_000, Some(5_000))] {
            assert_eq!(
                kept["ok"]["members"][1]["deleteSlices"],
                json!([]),
                "{kept}"
            );
            assert_eq!(kept["ok"]["members"][1]["serviceImport"], "leave", "{kept}");
        }
        let stale = answer(5_001, Some(5_000));
        let member2 = &stale["ok"]["members"][1];
        assert_eq!(member2["deleteSlices"][0]["uid"], "s1", "{stale}");
        assert_eq!(
            member2["serviceImport"]["delete"]["uid"], "import-uid",
            "{stale}"
        );
        assert_eq!(
            stale["ok"]["derivedName"],
            engine
                .clusterset_derived_name("shop", "web", BUDGET)
                .unwrap()
        );
    }
}
