//! Kubernetes conditions as the MultiClusterService's and the upstream API's objects carry them
//! (metav1.Condition's rules): one condition per type, `lastTransitionTime` moving only when
//! `status` does, `observedGeneration` the generation decided on. Shared by the
//! MultiClusterService's status ([`crate::sync::status`]) and the ServiceExports' conditions
//! ([`crate::clusterset`]); it imports neither.

use serde_json::{Value, json};

/// Between the parts of a bounded message.
pub const SEPARATOR: &str = "; ";
/// Room kept for the tail `"; and N more failures"`.
const TAIL_ROOM: usize = 40;

/// One condition to set (the time fields are filled in by [`merge`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

impl Condition {
    /// A condition of type `type_`.
    pub fn new(type_: &'static str, status: bool, reason: &str, message: &str) -> Self {
        Condition {
            type_,
            status,
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }
}

/// The conditions after setting `wanted` on `current`, or `None` when nothing would change.
/// Conditions of other types are kept as they are.
pub fn merge(
    current: &[Value],
    wanted: &[Condition],
    generation: Option<i64>,
    now: &str,
) -> Option<Vec<Value>> {
    let mut out = current.to_vec();
    let mut changed = false;
    for c in wanted {
        let status = if c.status { "True" } else { "False" };
        let existing = out.iter().position(|v| v["type"] == c.type_);
        let old = existing.map(|i| &out[i]);
        let same = old.is_some_and(|o| {
            o["status"] == status
                && o["reason"] == c.reason.as_str()
                && o["message"] == c.message.as_str()
                && o.get("observedGeneration").and_then(Value::as_i64) == generation
        });
        if same {
            continue;
        }
        let transition = match old {
            Some(o) if o["status"] == status => o["lastTransitionTime"].clone(),
            _ => json!(now),
        };
        let mut value = json!({
            "type": c.type_, "status": status, "reason": c.reason,
            "message": c.message, "lastTransitionTime": transition,
        });
        if let Some(g) = generation {
            value["observedGeneration"] = json!(g);
        }
        match existing {
            Some(i) => out[i] = value,
            None => out.push(value),
        }
        changed = true;
    }
    changed.then_some(out)
}

/// `parts` joined with `"; "` in at most `limit` bytes: as many whole parts as fit (the first
/// one cut if even it does not), then `"; and N more failures"` for the rest. A pass can fail
/// for every copy in every member: unbounded, the text would outgrow what the API server
/// accepts.
pub fn join_bounded(parts: &[String], limit: usize) -> String {
    let mut out = String::new();
    let mut kept = 0;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let room = if last { limit } else { limit - TAIL_ROOM };
        let separator = if kept == 0 { "" } else { SEPARATOR };
        if out.len() + separator.len() + part.len() <= room {
            out.push_str(separator);
            out.push_str(part);
            kept += 1;
            continue;
        }
        if kept == 0 {
            out.push_str(cut(part, limit - TAIL_ROOM - 3));
            out.push_str("...");
            kept = 1;
        }
        break;
    }
    let left = parts.len() - kept;
    if left > 0 {
        let noun = if left == 1 { "failure" } else { "failures" };
        out.push_str(&format!("{SEPARATOR}and {left} more {noun}"));
    }
    out
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
