//! The finalizer rules of object metadata, each once, for every type that needs it:
//!
//! - [`validate`]: apimachinery's `ValidateFinalizers` (qualified names, not both `orphan` and
//!   `foregroundDeletion`) and, for the core types, `validateKubeFinalizerName` as an error
//!   (`pkg/apis/core/validation`: an unqualified name must be a standard one);
//! - [`no_new_while_deleting`]: `ValidateNoNewFinalizers`, part of `ValidateObjectMetaUpdate`;
//! - [`warnings`]: the warnings apiextensions' custom resource strategy gives for every
//!   finalizer a write adds (`WarningsOnCreate` / `WarningsOnUpdate`, its own
//!   `validateKubeFinalizerName`): problems of the qualified name, and a name without a domain
//!   that is not a standard one.

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{ErrorList, FieldError, go_quote};
use super::names;
use crate::object;

const FIELD: &str = "metadata.finalizers";

/// Finalizers the apiserver itself knows, which need no domain (`IsStandardFinalizerName`).
const STANDARD: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// Whether `name` has no domain and is not a standard finalizer.
fn lacks_domain(name: &str) -> bool {
    !name.contains('/') && !STANDARD.contains(&name)
}

/// The finalizer names of `obj`, as a set.
fn set(obj: &Value) -> BTreeSet<&str> {
    list(obj).into_iter().collect()
}

fn list(obj: &Value) -> Vec<&str> {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// `ValidateFinalizers` of `obj`; `core`: also the core types' refusal of unqualified
/// non-standard names.
pub fn validate(obj: &Value, core: bool) -> ErrorList {
    let list = list(obj);
    let mut errors = ErrorList::new();
    for finalizer in &list {
        for problem in names::qualified_name(finalizer) {
            errors.push(FieldError::invalid(FIELD, *finalizer, problem));
        }
    }
    if list.contains(&"orphan") && list.contains(&"foregroundDeletion") {
        errors.push(FieldError::invalid(
            FIELD,
            Value::from(list.clone()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if core {
        for (i, finalizer) in list.iter().enumerate() {
            if lacks_domain(finalizer) {
                errors.push(FieldError::invalid(
                    &format!("{FIELD}[{i}]"),
                    *finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    errors
}

/// `ValidateNoNewFinalizers`: when `old` is being deleted, `new` may not add finalizers.
pub fn no_new_while_deleting(new: &Value, old: &Value) -> ErrorList {
    if !object::is_deleting(old) {
        return ErrorList::new();
    }
    let before = set(old);
    let added: Vec<String> = set(new).difference(&before).map(|f| go_quote(f)).collect();
    if added.is_empty() {
        return ErrorList::new();
    }
    let detail = format!(
        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
        added.join(", ")
    );
    vec![FieldError::forbidden(FIELD, detail)]
}

/// The warnings for the finalizers `new` adds to `old` (all of them on create, `old` None),
/// in name order.
pub fn warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    let before = old.map(set).unwrap_or_default();
    let mut warnings = Vec::new();
    for name in set(new).difference(&before) {
        let quoted = go_quote(name);
        for problem in names::qualified_name(name) {
            warnings.push(format!("{FIELD}: {quoted}: {problem}"));
        }
        if lacks_domain(name) {
            warnings.push(format!(
                "{FIELD}: {quoted}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_finalizers(finalizers: &[&str]) -> Value {
        json!({"metadata": {"finalizers": finalizers}})
    }

    fn messages(errors: &ErrorList) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn core_types_refuse_unqualified_names_others_only_bad_qualified_names() {
        let obj = with_finalizers(&["kubernetes", "bad_finalizer", "x.io/y"]);
        assert_eq!(
            messages(&validate(&obj, true)),
            vec![
                "metadata.finalizers[1]: Invalid value: \"bad_finalizer\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
        assert!(validate(&obj, false).is_empty());
        let bad = with_finalizers(&["-x", "orphan", "foregroundDeletion"]);
        let errors = validate(&bad, false);
        assert_eq!(errors.len(), 2);
        assert!(
            errors[0].message().starts_with(
                "metadata.finalizers: Invalid value: \"-x\": name part must consist of"
            )
        );
        assert!(errors[1].message().ends_with("cannot be both set"));
    }

    #[test]
    fn only_newly_added_undomained_or_malformed_finalizers_warn() {
        let old = with_finalizers(&["legacy"]);
        let new = with_finalizers(&["legacy", "bad_finalizer", "kubernetes", "a.io/x", "-y"]);
        let warnings = warnings(&new, Some(&old));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].starts_with("metadata.finalizers: \"-y\": name part must consist of"));
        assert_eq!(
            warnings[1],
            "metadata.finalizers: \"-y\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        );
        assert_eq!(
            warnings[2],
            "metadata.finalizers: \"bad_finalizer\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        );
        assert!(super::warnings(&new, Some(&new)).is_empty());
    }

    #[test]
    fn finalizers_cannot_be_added_while_deleting() {
        let mut old = with_finalizers(&["a.io/x"]);
        let new = with_finalizers(&["a.io/x", "example.com/other", "b.io/y"]);
        assert!(no_new_while_deleting(&new, &old).is_empty());
        old["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(
            messages(&no_new_while_deleting(&new, &old)),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b.io/y\", \"example.com/other\"}"
            ]
        );
        assert!(no_new_while_deleting(&with_finalizers(&[]), &old).is_empty());
    }
}
