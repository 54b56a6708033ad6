//! The 409 an apply answers when it would change fields other managers own
//! (apimachinery's `NewConflictError`, `getConflictMessage` and `printManager`).

use serde_json::{Value, json};

use super::managed::{ManagerId, Operation};
use super::path;
use super::set::Element;
use crate::status::ApiError;

/// One conflicting field and its owner.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub owner: ManagerId,
    pub path: Vec<Element>,
}

/// A manager as conflict messages name it: `"mgr"`, `"mgr" using v1` for an updater,
/// `"mgr" with subresource "status"`.
pub fn print_manager(id: &ManagerId) -> String {
    let mut out = quoted(&id.manager);
    if !id.subresource.is_empty() {
        out = format!("{out} with subresource {}", quoted(&id.subresource));
    }
    if id.operation == Operation::Update {
        out = format!("{out} using {}", id.api_version);
    }
    out
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The `Status` of a failed apply: one cause per conflicting field.
pub fn error(conflicts: &[Conflict]) -> ApiError {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|c| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {}", print_manager(&c.owner)),
                "field": path::display(&c.path),
            })
        })
        .collect();
    ApiError {
        code: 409,
        reason: "Conflict",
        message: message(conflicts),
        details: Some(json!({"causes": causes})),
        retry_after_seconds: None,
    }
}

fn message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&only.owner),
            path::display(&only.path)
        );
    }
    let mut owners: Vec<&ManagerId> = conflicts.iter().map(|c| &c.owner).collect();
    owners.sort_by_key(|id| id.spelling());
    owners.dedup();
    let mut lines = Vec::new();
    for owner in owners {
        lines.push(format!("conflicts with {}:", print_manager(owner)));
        for c in conflicts.iter().filter(|c| &c.owner == owner) {
            lines.push(format!("- {}", path::display(&c.path)));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(manager: &str, operation: Operation, field: &str) -> Conflict {
        Conflict {
            owner: ManagerId::new(manager, operation, "discovery.k8s.io/v1", ""),
            path: vec![path::field(field)],
        }
    }

    #[test]
    fn one_conflict_names_the_applier_and_the_field() {
        let status = error(&[conflict("mcs-policy", Operation::Apply, "ports")]).to_status();
        assert_eq!(
            status["message"],
            "Apply failed with 1 conflict: conflict with \"mcs-policy\": .ports"
        );
        assert_eq!(
            status["details"],
            json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"mcs-policy\"", "field": ".ports"}]})
        );
        assert_eq!(status["code"], 409);
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager_with_updaters_using_their_version() {
        let conflicts = [
            conflict("unknown", Operation::Update, "addressType"),
            conflict("a", Operation::Apply, "ports"),
            conflict("a", Operation::Apply, "endpoints"),
        ];
        let error = error(&conflicts);
        assert_eq!(
            error.message,
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .ports\n- .endpoints\nconflicts with \"unknown\" using discovery.k8s.io/v1:\n- .addressType"
        );
        let status_owner = ManagerId::new("ctl", Operation::Update, "v1", "status");
        assert_eq!(
            print_manager(&status_owner),
            "\"ctl\" with subresource \"status\" using v1"
        );
    }
}
