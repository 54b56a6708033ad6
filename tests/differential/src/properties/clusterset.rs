//! `clusterset-decide`: one answer per member in order; nothing written in an unreadable member;
//! nothing deleted that does not carry our markers or was read without a uid; imported slices
//! ours and named within 63 bytes, their source-cluster label a valid label value, and none
//! beside a derived Service that is not ours; a conflict only with a winner; members sharing a
//! cluster id are no error.

use guest::clusterset::{CREATED_BY, CREATED_BY_LABEL};
use guest::filter::{
    CLUSTERSET_MANAGER, MANAGED_BY_LABEL, MC_SERVICE_NAME_LABEL, MC_SOURCE_CLUSTER_LABEL,
};
use mcs_policy::engine::types as h;
use serde_json::Value;

use crate::Call;

fn label<'a>(labels: &'a [(String, String)], key: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Whether `text` (a held object) carries our marker and the uid a deletion names.
fn deletable(text: Option<&String>, p: &h::DeletePrecondition) -> bool {
    let Some(v) = text.and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return false;
    };
    v.pointer(&format!(
        "/metadata/labels/{}",
        CREATED_BY_LABEL.replace('/', "~1")
    ))
    .and_then(Value::as_str)
        == Some(CREATED_BY)
        && !p.uid.is_empty()
        && v.pointer("/metadata/uid").and_then(Value::as_str) == Some(p.uid.as_str())
}

pub(super) fn decide(
    call: &Call,
    read: &h::ClustersetRead,
    answer: &Result<Box<h::ClustersetDecision>, String>,
) {
    let d = match answer {
        Err(message) => {
            ensure!(call, !message.is_empty(), "an error says why");
            ensure!(
                call,
                !message.contains("share the cluster id"),
                "members sharing an id are no error: {message}"
            );
            return;
        }
        Ok(d) => d,
    };
    ensure!(
        call,
        d.members.len() == read.members.len(),
        "one decision per member"
    );
    ensure!(
        call,
        d.conflicts.is_empty() || d.winner.is_some(),
        "a conflict has a winner"
    );
    for (m, r) in d.members.iter().zip(&read.members) {
        ensure!(call, m.cluster == r.cluster, "members in input order");
        let o = match &r.state {
            h::ClustersetMemberState::Unreadable(_) => {
                ensure!(
                    call,
                    m.service_import == h::ObjectWrite::Leave
                        && m.derived_service == h::ObjectWrite::Leave
                        && m.export_conditions.is_none()
                        && m.service_import_status.is_none()
                        && m.apply_slices.is_empty()
                        && m.delete_slices.is_empty(),
                    "nothing is written in unreadable {}",
                    m.cluster
                );
                continue;
            }
            h::ClustersetMemberState::Readable(o) => o,
        };
        if let h::ObjectWrite::Delete(p) = &m.service_import {
            ensure!(
                call,
                deletable(o.service_import.as_ref(), p),
                "{}: a ServiceImport deleted that is not ours or has no uid",
                m.cluster
            );
        }
        if let h::ObjectWrite::Delete(p) = &m.derived_service {
            ensure!(
                call,
                deletable(o.derived_service.as_ref(), p),
                "{}: a Service deleted that is not ours or has no uid",
                m.cluster
            );
        }
        for p in &m.delete_slices {
            ensure!(
                call,
                o.imported_slices.iter().any(|h| {
                    h.slice.name == p.name
                        && !h.uid.is_empty()
                        && h.uid == p.uid
                        && h.slice.namespace == read.namespace
                        && label(&h.slice.labels, MANAGED_BY_LABEL) == Some(CLUSTERSET_MANAGER)
                        && label(&h.slice.labels, MC_SERVICE_NAME_LABEL) == Some(read.name.as_str())
                }),
                "{}: slice {} deleted that is not ours or has no uid",
                m.cluster,
                p.name
            );
        }
        for s in &m.apply_slices {
            ensure!(
                call,
                s.name.len() <= 63
                    && label(&s.labels, MANAGED_BY_LABEL) == Some(CLUSTERSET_MANAGER)
                    && label(&s.labels, MC_SERVICE_NAME_LABEL) == Some(read.name.as_str()),
                "{}: imported slice {} not ours or too long",
                m.cluster,
                s.name
            );
            ensure!(
                call,
                label(&s.labels, MC_SOURCE_CLUSTER_LABEL)
                    .is_some_and(|v| guest::names::label_value(v).is_empty()),
                "{}: imported slice {} has no valid source-cluster label",
                m.cluster,
                s.name
            );
        }
        let derived_foreign = o
            .derived_service
            .as_ref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .is_some_and(|v| {
                v.pointer(&format!(
                    "/metadata/labels/{}",
                    CREATED_BY_LABEL.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                    != Some(CREATED_BY)
            });
        ensure!(
            call,
            !derived_foreign || m.apply_slices.is_empty(),
            "{}: imported slices written beside a derived Service that is not ours",
            m.cluster
        );
    }
}
