//! `clusterset-decide` calls: one to three members, each readable or not, with ServiceExports,
//! Services and slices of the exported name, and held ServiceImports, derived Services and
//! imported slices that are ours or not, with or without a uid; unreadable members for a while,
//! with or without a stale timeout. And `clusterset-derived-name` calls.

use arbitrary::{Result, Unstructured};
use guest::clusterset::{CREATED_BY, CREATED_BY_LABEL, digest};
use guest::filter::{
    CLUSTERSET_MANAGER, MANAGED_BY_LABEL, MC_SERVICE_NAME_LABEL, MC_SOURCE_CLUSTER_LABEL,
};
use mcs_policy::engine::types as h;
use serde_json::{Value, json};

use super::{
    BAD_TIMESTAMPS, MEMBERS, SOURCE_MANAGERS, TIMESTAMPS, list, service, slice, string, text,
};
use crate::Call;

const IDS: &[&str] = &[
    "east-1",
    "member2",
    "Not_An_Id",
    "",
    "east-1.prod.example.com",
    "a-cluster-id-well-over-sixty-three-characters-long.region-one.example.com",
];
const API_VERSIONS: &[&str] = &[
    "multicluster.x-k8s.io/v1beta1",
    "multicluster.x-k8s.io/v1alpha1",
];

fn maybe<T>(
    u: &mut Unstructured<'_>,
    f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Option<T>> {
    Ok(if u.arbitrary()? { Some(f(u)?) } else { None })
}

fn export(u: &mut Unstructured<'_>) -> Result<Value> {
    let created = if u.ratio(1, 10)? {
        string(u, BAD_TIMESTAMPS)?
    } else {
        string(u, TIMESTAMPS)?
    };
    let mut e = json!({
        "apiVersion": string(u, API_VERSIONS)?, "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": created, "generation": 1},
    });
    if u.ratio(1, 4)? {
        e["spec"] = json!({"exportedLabels": {"team": string(u, &["a", "b", "not a value!"])?}});
    }
    if u.ratio(1, 6)? {
        e["metadata"]["deletionTimestamp"] = json!("2024-05-01T10:00:00Z");
    }
    if u.ratio(1, 4)? {
        e["status"] = json!({"conditions": [{"type": "Conflict", "status": "True", "reason": "PortConflict",
            "message": "", "lastTransitionTime": "2024-05-01T10:00:00Z"}]});
    }
    Ok(e)
}

fn ours(u: &mut Unstructured<'_>, mut v: Value) -> Result<Value> {
    if u.ratio(3, 4)? {
        v["metadata"]["labels"] = json!({ CREATED_BY_LABEL: CREATED_BY });
    }
    if u.ratio(7, 8)? {
        v["metadata"]["uid"] = json!(string(u, &["uid-1", ""])?);
        v["metadata"]["resourceVersion"] = json!("7");
    }
    Ok(v)
}

fn objects(u: &mut Unstructured<'_>) -> Result<h::ClustersetObjects> {
    let web = h::McsRef {
        name: "web".into(),
        namespace: "shop".into(),
        ports: vec![],
    };
    let service_export = maybe(u, export)?.map(|e| e.to_string());
    let service = match maybe(u, service)? {
        Some(s) => Some(text(u, &s)?),
        None => None,
    };
    let slices = list(u, |u| slice(u, &web, SOURCE_MANAGERS))?;
    let service_import = match maybe(u, |u| {
        ours(
            u,
            json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
                "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"type": "ClusterSetIP", "ports": []},
                "status": {"clusters": [{"cluster": "member2"}]}}),
        )
    })? {
        Some(v) => Some(text(u, &v)?),
        None => None,
    };
    let derived_service = maybe(u, |u| {
        let ip = string(u, &["10.96.0.9", "None", ""])?;
        ours(
            u,
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": digest::derived_name("shop", "web"), "namespace": "shop"},
                "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "ipFamilies": ["IPv4"]}}),
        )
        .map(|v| v.to_string())
    })?;
    let imported_slices = list(u, |u| {
        let mut s = slice(
            u,
            &web,
            &[CLUSTERSET_MANAGER, "endpointslice-controller.k8s.io"],
        )?;
        s.labels.retain(|(k, _)| k != MANAGED_BY_LABEL);
        if u.ratio(3, 4)? {
            s.labels
                .push((MANAGED_BY_LABEL.into(), CLUSTERSET_MANAGER.into()));
        }
        if u.ratio(3, 4)? {
            s.labels.push((MC_SERVICE_NAME_LABEL.into(), "web".into()));
        }
        if u.ratio(3, 4)? {
            s.labels
                .push((MC_SOURCE_CLUSTER_LABEL.into(), string(u, MEMBERS)?));
        }
        Ok(h::ImportedSlice {
            slice: s,
            uid: string(u, &["uid-s", ""])?,
            resource_version: "9".into(),
        })
    })?;
    Ok(h::ClustersetObjects {
        service_export,
        service,
        slices,
        service_import,
        derived_service,
        imported_slices,
    })
}

/// One `clusterset-decide` call built from `u`.
pub fn clusterset(u: &mut Unstructured<'_>) -> Result<Call> {
    let n = u.int_in_range(1..=3)?;
    let mut members = Vec::new();
    for cluster in &MEMBERS[..n] {
        members.push(h::ClustersetMember {
            cluster: cluster.to_string(),
            cluster_property: if u.ratio(1, 4)? {
                Some(string(u, IDS)?)
            } else {
                None
            },
            state: if u.ratio(1, 6)? {
                h::ClustersetMemberState::Unreadable("not ready".into())
            } else {
                h::ClustersetMemberState::Readable(objects(u)?)
            },
            unreadable_ms: *u.choose(&[0, 5_000, 5_001, 3_600_000])?,
        });
    }
    let stale_timeout_ms = *u.choose(&[None, Some(0), Some(5_000)])?;
    Ok(Call::ClustersetDecide {
        read: Box::new(h::ClustersetRead {
            namespace: "shop".into(),
            name: "web".into(),
            now: "2026-11-29T10:00:00Z".into(),
            members,
            stale_timeout_ms,
        }),
    })
}

/// One `clusterset-derived-name` call: names valid or not, empty, long, not ASCII.
pub fn derived_name(u: &mut Unstructured<'_>) -> Result<Call> {
    const NAMES: &[&str] = &[
        "shop",
        "web",
        "",
        "a-name-well-over-sixty-three-characters-long-for-a-kubernetes-object",
        "ünïcode",
        "a/b",
    ];
    Ok(Call::ClustersetDerivedName {
        namespace: string(u, NAMES)?,
        name: string(u, NAMES)?,
    })
}
