//! The finalizer rules custom resources get: the warning apiextensions' strategy gives for a
//! newly added finalizer that is not a qualified name or not domain-qualified
//! (`validateKubeFinalizerName`), and apimachinery's `ValidateNoNewFinalizers` (no finalizer
//! may be added once the object is being deleted).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::kinds::field::FieldError;
use crate::kinds::names::is_qualified_name;
use crate::object;
use crate::warning;

const FIELD: &str = "metadata.finalizers";

/// Finalizers the apiserver knows, which need no domain.
const STANDARD: [&str; 3] = ["orphan", "foregroundDeletion", "kubernetes"];

/// Warns about the finalizers of `obj` not in `old` (all of them on create).
pub fn warn_about_new(obj: &Value, old: Option<&Value>) {
    let before: BTreeSet<&str> = old.map(finalizers).unwrap_or_default();
    let added: BTreeSet<&str> = finalizers(obj)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    for name in added {
        for problem in is_qualified_name(name) {
            warning::add(format!("{FIELD}: {name:?}: {problem}"));
        }
        if !name.contains('/') && !STANDARD.contains(&name) {
            warning::add(format!(
                "{FIELD}: {name:?}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
}

/// `ValidateNoNewFinalizers`, when `old` is being deleted.
pub fn no_new_while_deleting(new: &Value, old: &Value) -> Vec<FieldError> {
    if !object::is_deleting(old) {
        return Vec::new();
    }
    let before = finalizers(old);
    let extra: BTreeSet<&str> = finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if extra.is_empty() {
        return Vec::new();
    }
    let quoted: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
    let detail = format!(
        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
        quoted.join(", ")
    );
    vec![FieldError::forbidden(FIELD, detail)]
}

fn finalizers(obj: &Value) -> BTreeSet<&str> {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_finalizers(finalizers: &[&str]) -> Value {
        json!({"metadata": {"finalizers": finalizers}})
    }

    #[test]
    fn only_newly_added_undomained_finalizers_warn() {
        let response = warning::collect(|| {
            let old = with_finalizers(&["legacy"]);
            warn_about_new(
                &with_finalizers(&["legacy", "bad_finalizer", "kubernetes", "a.io/x"]),
                Some(&old),
            );
            axum::response::IntoResponse::into_response("ok")
        });
        let warnings: Vec<&str> = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(
            warnings,
            vec![
                "299 - \"metadata.finalizers: \\\"bad_finalizer\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\""
            ]
        );
    }

    #[test]
    fn finalizers_cannot_be_added_while_deleting() {
        let mut old = with_finalizers(&["a.io/x"]);
        let new = with_finalizers(&["a.io/x", "example.com/other"]);
        assert!(no_new_while_deleting(&new, &old).is_empty());
        old["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let errors = no_new_while_deleting(&new, &old);
        assert_eq!(
            errors[0].message(),
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/other\"}"
        );
        assert!(no_new_while_deleting(&with_finalizers(&[]), &old).is_empty());
    }
}
