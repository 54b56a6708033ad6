//! A ServiceExport's conditions (`v1beta1`): `Valid`, `Ready` and `Conflict`, set with the
//! metav1 rules of the MultiClusterService's (one per type, `lastTransitionTime` moves only when
//! `status` does, conditions of other types kept).

use serde_json::{Value, json};

use crate::condition::{Condition, merge};

use super::export::{Export, Validity};
use super::resolve::describe;

pub const VALID: &str = "Valid";
pub const READY: &str = "Ready";
pub const CONFLICT: &str = "Conflict";
/// `Valid=True`: entries of the exported labels or annotations are not valid and left out.
pub const INVALID_EXPORTED_METADATA: &str = "InvalidExportedMetadata";
/// At most this much of a message lists what was left out.
const MESSAGE_MAX: usize = 4096;
/// `Valid=False`: the member shares its cluster id with another.
pub const DUPLICATE_CLUSTER_ID: &str = "DuplicateClusterID";

/// What the pass concluded about the exports of one name.
#[derive(Clone, Copy, Debug)]
pub struct Outcome<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// The winning export's cluster id, when some export is valid.
    pub winner: Option<&'a str>,
    /// The conflict reasons.
    pub conflicts: &'a [&'static str],
}

/// The export's new `status.conditions` as JSON text, `None` when they would not change.
/// `imported`: a valid export's endpoints are in the import (it contributes a port, or has none).
pub fn export_conditions(
    export: &Export,
    outcome: &Outcome<'_>,
    imported: bool,
    now: &str,
) -> Option<String> {
    let wanted = wanted(export, outcome, imported);
    let mut changed = false;
    let mut conditions = match merge(&export.conditions, &wanted, export.generation, now) {
        Some(merged) => {
            changed = true;
            merged
        }
        None => export.conditions.clone(),
    };
    if !matches!(export.validity, Validity::Valid(_)) {
        // An invalid export takes no part: a conflict it once had is no longer true.
        let before = conditions.len();
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(CONFLICT));
        changed |= conditions.len() != before;
    }
    changed.then(|| json!(conditions).to_string())
}

fn wanted(export: &Export, outcome: &Outcome<'_>, imported: bool) -> Vec<Condition> {
    let service = format!("Service {}/{}", outcome.namespace, outcome.name);
    let condition = |type_: &'static str, status: bool, reason: &str, message: String| Condition {
        type_,
        status,
        reason: reason.to_string(),
        message,
    };
    match &export.validity {
        Validity::NoService => {
            let message = format!("{service} does not exist");
            vec![
                condition(VALID, false, "NoService", message.clone()),
                condition(READY, false, "Failed", message),
            ]
        }
        Validity::InvalidServiceType(t) => {
            let message = format!("{service} is of type {t}, which cannot be exported");
            vec![
                condition(VALID, false, "InvalidServiceType", message.clone()),
                condition(READY, false, "Failed", message),
            ]
        }
        Validity::DuplicateClusterId(why) => {
            let message = format!(
                "{why}, so this export is not imported (what it exported before stays) until the ids differ"
            );
            vec![
                condition(VALID, false, DUPLICATE_CLUSTER_ID, message.clone()),
                condition(READY, false, "Failed", message),
            ]
        }
        Validity::Valid(_) => {
            let conflict = match outcome.conflicts.first() {
                None => condition(
                    CONFLICT,
                    false,
                    "NoConflicts",
                    format!("the exports of {service} agree"),
                ),
                Some(first) => {
                    // Every reason, each with what differs: the condition has one reason.
                    let what: Vec<String> = outcome
                        .conflicts
                        .iter()
                        .map(|r| format!("{r} ({})", describe(r)))
                        .collect();
                    condition(
                        CONFLICT,
                        true,
                        first,
                        format!(
                            "the exports of {service} conflict: {}; the oldest export, from cluster {}, applies",
                            what.join(", "),
                            outcome.winner.unwrap_or_default()
                        ),
                    )
                }
            };
            let ready = if imported && outcome.conflicts.is_empty() {
                condition(
                    READY,
                    true,
                    "Exported",
                    format!("{service} is exported to the clusterset"),
                )
            } else if imported {
                condition(
                    READY,
                    true,
                    "Exported",
                    format!(
                        "{service} is exported to the clusterset, as the oldest export defines it (see Conflict)"
                    ),
                )
            } else {
                condition(
                    READY,
                    false,
                    "Failed",
                    format!(
                        "none of the ports of {service} is the clusterset's, as the oldest export defines them: its endpoints are not imported (see Conflict)"
                    ),
                )
            };
            let valid = if export.skipped.is_empty() {
                condition(VALID, true, "Valid", format!("{service} can be exported"))
            } else {
                // Exported all the same; what was left out says why.
                condition(
                    VALID,
                    true,
                    INVALID_EXPORTED_METADATA,
                    format!(
                        "{service} can be exported; exported labels or annotations left out: {}",
                        crate::condition::join_bounded(&export.skipped, MESSAGE_MAX)
                    ),
                )
            };
            vec![valid, ready, conflict]
        }
    }
}
