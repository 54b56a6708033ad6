//! Messages that always fit. Condition and Event messages join the failures of a pass, and a
//! pass can fail for every copy in every member: unbounded, the text outgrows what the API
//! server accepts. The MultiClusterService CRD caps a condition's `message` at 32768
//! characters (`maxLength`): a real API server refuses a status write with a longer one (422),
//! and the status then never updates. An Event is read by people (`kubectl describe`), and
//! events.k8s.io caps its `note` at 1 KiB. So failures are joined in their order up to a
//! limit, and the message ends by saying how many were left out.

/// Longest condition message, in bytes (so never more than the CRD's 32768 characters).
pub const CONDITION_LIMIT: usize = 32 * 1024;
/// Longest Event message, in bytes.
pub const EVENT_LIMIT: usize = 1024;

const SEPARATOR: &str = "; ";
/// Room kept for the tail `"; and N more failures"`.
const TAIL_ROOM: usize = 40;

/// The condition message of a step that failed with `failures` (`None`: it did not fail).
pub fn condition(failures: &[String]) -> Option<String> {
    (!failures.is_empty()).then(|| join_bounded(failures, CONDITION_LIMIT))
}

/// The Event message of a step that failed with `failures` (`None`: it did not fail).
pub fn event(failures: &[String]) -> Option<String> {
    (!failures.is_empty()).then(|| join_bounded(failures, EVENT_LIMIT))
}

/// `parts` joined with `"; "` in at most `limit` bytes: as many whole parts as fit (the first
/// one cut if even it does not), then `"; and N more failures"` for the rest.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn failures(n: usize, len: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("{i:04}{}", "x".repeat(len - 4)))
            .collect()
    }

    #[test]
    fn what_fits_is_joined_whole() {
        let parts = failures(3, 10);
        assert_eq!(join_bounded(&parts, 100), parts.join("; "));
        assert_eq!(condition(&[]), None);
        assert_eq!(event(&parts).unwrap(), parts.join("; "));
    }

    #[test]
    fn what_does_not_fit_is_counted() {
        let parts = failures(500, 100);
        let message = join_bounded(&parts, CONDITION_LIMIT);
        assert!(message.len() <= CONDITION_LIMIT, "{}", message.len());
        let kept = message
            .split(SEPARATOR)
            .filter(|part| part.starts_with(|c: char| c.is_ascii_digit()))
            .count();
        assert!(
            message.ends_with(&format!("; and {} more failures", 500 - kept)),
            "{message}"
        );
        assert!(message.starts_with("0000x"));
        let short = event(&parts).unwrap();
        assert!(short.len() <= EVENT_LIMIT);
        assert!(short.ends_with("more failures"), "{short}");
    }

    #[test]
    fn a_single_huge_failure_is_cut_on_a_character_boundary() {
        let huge = vec!["é".repeat(40_000)];
        let message = join_bounded(&huge, CONDITION_LIMIT);
        assert!(message.len() <= CONDITION_LIMIT);
        assert!(message.ends_with("..."));
        let two = vec!["é".repeat(40_000), "next".to_string()];
        let message = join_bounded(&two, 1000);
        assert!(message.len() <= 1000);
        assert!(message.ends_with("...; and 1 more failure"), "{message}");
    }
}
