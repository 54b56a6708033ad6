//! The string checks of CRD schemas: `pattern` (a Go RE2 regular expression, matched anywhere
//! in the value like Go's `regexp.MatchString`; compiled once per pattern) and the `format`s
//! apiextensions keeps (`StripUnsupportedFormatsPostProcess`) that kube-sim checks: `date-time`,
//! `date`, `uuid`, `byte`. Other formats are accepted as any string.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

/// Whether `value` matches `pattern` (an invalid pattern matches nothing).
pub fn matches(pattern: &str, value: &str) -> bool {
    compiled(pattern).is_some_and(|re| re.is_match(value))
}

/// Whether `value` is valid for `format` (unchecked formats accept anything).
pub fn valid(format: &str, value: &str) -> bool {
    let pattern = match format {
        "date-time" | "datetime" => {
            r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
        }
        "date" => r"^\d{4}-\d{2}-\d{2}$",
        "uuid" => r"^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        "byte" => r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
        _ => return true,
    };
    matches(pattern, value)
}

fn compiled(pattern: &str) -> Option<Regex> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let mut cache = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok())
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_anywhere_like_go() {
        let reason = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
        assert!(matches(reason, "EndpointSliceAppliedSucceed"));
        assert!(!matches(reason, "bad reason!"));
        assert!(matches("b", "abc"));
        assert!(!matches("(unclosed", "(unclosed"));
    }

    #[test]
    fn date_times_are_rfc3339() {
        assert!(valid("date-time", "2026-01-01T00:00:00Z"));
        assert!(valid("date-time", "2026-01-01T00:00:00.123456+02:00"));
        assert!(!valid("date-time", "yesterday"));
        assert!(valid("int32", "anything"));
    }
}
