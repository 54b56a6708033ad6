//! `ObjectMeta` validation as apimachinery's `ValidateObjectMetaAccessor` and
//! `ValidateObjectMetaAccessorUpdate` do it (`k8s.io/apimachinery/pkg/api/validation`), with
//! the extra finalizer rule of the core types (`pkg/apis/core/validation.ValidateObjectMeta`)
//! and the finalizer warnings custom resources get (`WarningsOnCreate` / `WarningsOnUpdate`).
//! Usable by any type: built-in ones pass their name rule, custom resources use
//! [`NameRule::Subdomain`] and [`finalizer_warnings`].

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::field::{ErrorList, FieldError};
use super::names;
use crate::object;

/// How a type's `metadata.name` is validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain` (most types, custom resources).
    Subdomain,
    /// `NameIsDNSLabel` (Namespaces; Services with `RelaxedServiceNameValidation`).
    Label,
    /// `NameIsDNS1035Label` (no type kube-sim serves uses it today).
    #[allow(dead_code)]
    Dns1035Label,
}

impl NameRule {
    /// The problems of `name` (`prefix`: a generateName, which may end with '-').
    fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let name = if prefix {
            names::mask_trailing_dash(name)
        } else {
            name.to_owned()
        };
        match self {
            Self::Subdomain => names::dns1123_subdomain(&name),
            Self::Label => names::dns1123_label(&name),
            Self::Dns1035Label => names::dns1035_label(&name),
        }
    }
}

/// The total size all annotations of an object may have (`TotalAnnotationSizeLimitB`).
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// Finalizers core types accept without a domain (`IsStandardFinalizerName`).
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// `ValidateObjectMeta` of a new object. `core`: the core types' finalizer rule (unqualified
/// names must be standard ones).
pub fn validate(obj: &Value, rule: NameRule, namespaced: bool, core: bool) -> ErrorList {
    let meta = &obj["metadata"];
    let mut errors = ErrorList::new();
    let generate_name = meta["generateName"].as_str().unwrap_or_default();
    if !generate_name.is_empty() {
        for problem in rule.check(generate_name, true) {
            errors.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                &problem,
            ));
        }
    }
    let name = object::name(obj);
    if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for problem in rule.check(name, false) {
            errors.push(FieldError::invalid("metadata.name", name, &problem));
        }
    }
    errors.extend(namespace_errors(object::namespace(obj), namespaced));
    errors.extend(common(meta, core));
    errors
}

/// The second, generic pass of a create (`path.ValidatePathSegmentName`): the name must be
/// usable in a URL.
pub fn validate_path_segment(obj: &Value) -> ErrorList {
    let name = object::name(obj);
    names::path_segment_name(name)
        .into_iter()
        .map(|problem| FieldError::invalid("metadata.name", name, &problem))
        .collect()
}

fn namespace_errors(namespace: &str, namespaced: bool) -> ErrorList {
    if !namespaced {
        return if namespace.is_empty() {
            ErrorList::new()
        } else {
            vec![FieldError::forbidden(
                "metadata.namespace",
                "not allowed on this type",
            )]
        };
    }
    if namespace.is_empty() {
        return vec![FieldError::required("metadata.namespace", "")];
    }
    names::dns1123_label(namespace)
        .into_iter()
        .map(|problem| FieldError::invalid("metadata.namespace", namespace, &problem))
        .collect()
}

/// Labels, annotations and finalizers: what create and update both check.
fn common(meta: &Value, core: bool) -> ErrorList {
    let mut errors = labels(meta["labels"].as_object());
    errors.extend(annotations(meta["annotations"].as_object()));
    errors.extend(finalizers(meta["finalizers"].as_array(), core));
    errors
}

/// `ValidateLabels`: qualified-name keys, label values.
pub fn labels(labels: Option<&Map<String, Value>>) -> ErrorList {
    let mut errors = ErrorList::new();
    for (key, value) in labels.into_iter().flatten() {
        for problem in names::qualified_name(key) {
            errors.push(FieldError::invalid(
                "metadata.labels",
                key.as_str(),
                &problem,
            ));
        }
        let value = value.as_str().unwrap_or_default();
        for problem in names::label_value(value) {
            errors.push(FieldError::invalid("metadata.labels", value, &problem));
        }
    }
    errors
}

/// `ValidateAnnotations`: qualified-name keys (lower-cased), 256 KiB in all.
fn annotations(annotations: Option<&Map<String, Value>>) -> ErrorList {
    let mut errors = ErrorList::new();
    let mut total = 0;
    for (key, value) in annotations.into_iter().flatten() {
        for problem in names::qualified_name(&key.to_lowercase()) {
            errors.push(FieldError::invalid(
                "metadata.annotations",
                key.as_str(),
                &problem,
            ));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > ANNOTATIONS_LIMIT {
        errors.push(FieldError::too_long(
            "metadata.annotations",
            ANNOTATIONS_LIMIT,
        ));
    }
    errors
}

/// `ValidateFinalizers` (qualified names, not both orphan and foregroundDeletion), plus for
/// core types `validateKubeFinalizerName`.
fn finalizers(finalizers: Option<&Vec<Value>>, core: bool) -> ErrorList {
    let list: Vec<&str> = finalizers
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut errors = ErrorList::new();
    for finalizer in &list {
        for problem in names::qualified_name(finalizer) {
            errors.push(FieldError::invalid(
                "metadata.finalizers",
                *finalizer,
                &problem,
            ));
        }
    }
    if list.contains(&"orphan") && list.contains(&"foregroundDeletion") {
        errors.push(FieldError::invalid(
            "metadata.finalizers",
            Value::from(list.clone()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if core {
        for (i, finalizer) in list.iter().enumerate() {
            if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(finalizer) {
                errors.push(FieldError::invalid(
                    &format!("metadata.finalizers[{i}]"),
                    *finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    errors
}

/// `ValidateObjectMetaUpdate`: no new finalizers while deleting, server-set fields immutable,
/// labels and annotations valid. (The resourceVersion a conditional update needs is checked
/// where the update is merged.)
pub fn validate_update(new: &Value, old: &Value, core: bool) -> ErrorList {
    let (new_meta, old_meta) = (&new["metadata"], &old["metadata"]);
    let mut errors = ErrorList::new();
    if object::is_deleting(old) {
        errors.extend(no_new_finalizers(new_meta, old_meta));
    }
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let (now, before) = (&new_meta[field], &old_meta[field]);
        if now != before {
            errors.push(FieldError::invalid(
                &format!("metadata.{field}"),
                now.clone(),
                "field is immutable",
            ));
        }
    }
    errors.extend(common(new_meta, core));
    errors
}

fn finalizer_set(meta: &Value) -> BTreeSet<&str> {
    meta["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// `ValidateNoNewFinalizers`.
fn no_new_finalizers(new_meta: &Value, old_meta: &Value) -> ErrorList {
    let old = finalizer_set(old_meta);
    let added: Vec<String> = finalizer_set(new_meta)
        .difference(&old)
        .map(|f| format!("{f:?}"))
        .collect();
    if added.is_empty() {
        return ErrorList::new();
    }
    let detail = format!(
        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
        added.join(", ")
    );
    vec![FieldError::forbidden("metadata.finalizers", &detail)]
}

/// The warnings a custom resource write gets for each finalizer it adds (all of them on
/// create, `old` None) that is neither domain-qualified nor standard.
pub fn finalizer_warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    let before = old
        .map(|o| finalizer_set(&o["metadata"]))
        .unwrap_or_default();
    finalizer_set(&new["metadata"])
        .into_iter()
        .filter(|f| !before.contains(f))
        .filter(|f| !f.contains('/') && !STANDARD_FINALIZERS.contains(f))
        .map(|f| {
            format!(
                "metadata.finalizers: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                super::field::go_quote(f)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errors: &ErrorList) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn names_follow_the_type_rule_and_generate_name_may_end_with_a_dash() {
        let obj = json!({"metadata": {"name": "Web_Bad", "namespace": "a"}});
        let errors = validate(&obj, NameRule::Label, true, true);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].message().starts_with(
                "metadata.name: Invalid value: \"Web_Bad\": a lowercase RFC 1123 label"
            )
        );
        let obj =
            json!({"metadata": {"name": "gen-abcde", "generateName": "gen-", "namespace": "a"}});
        assert!(validate(&obj, NameRule::Label, true, true).is_empty());
        let obj = json!({"metadata": {"namespace": "a"}});
        assert_eq!(
            messages(&validate(&obj, NameRule::Subdomain, true, true)),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        let obj = json!({"metadata": {"name": "a"}});
        assert_eq!(
            messages(&validate(&obj, NameRule::Subdomain, true, true)),
            vec!["metadata.namespace: Required value"]
        );
    }

    #[test]
    fn label_values_are_checked() {
        let long = "s".repeat(64);
        let obj = json!({"metadata": {"name": "a", "namespace": "n", "labels": {"k": long}}});
        assert_eq!(
            messages(&validate(&obj, NameRule::Subdomain, true, true)),
            vec![format!(
                "metadata.labels: Invalid value: \"{long}\": must be no more than 63 bytes"
            )]
        );
    }

    #[test]
    fn core_types_refuse_unqualified_finalizers_custom_resources_get_a_warning() {
        let obj = json!({"metadata": {"name": "a", "namespace": "n", "finalizers": ["kubernetes", "bad_finalizer", "x.io/y"]}});
        assert_eq!(
            messages(&validate(&obj, NameRule::Subdomain, true, true)),
            vec![
                "metadata.finalizers[1]: Invalid value: \"bad_finalizer\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
        assert!(validate(&obj, NameRule::Subdomain, true, false).is_empty());
        assert_eq!(
            finalizer_warnings(&obj, None),
            vec![
                "metadata.finalizers: \"bad_finalizer\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            ]
        );
        assert!(finalizer_warnings(&obj, Some(&obj)).is_empty());
    }

    #[test]
    fn updates_keep_server_fields_and_add_no_finalizer_while_deleting() {
        let old = json!({"metadata": {"name": "a", "uid": "1", "deletionTimestamp": "t", "finalizers": ["x.io/a"]}});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["x.io/a", "x.io/b"]);
        new["metadata"]["uid"] = json!("2");
        assert_eq!(
            messages(&validate_update(&new, &old, true)),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"x.io/b\"}",
                "metadata.uid: Invalid value: \"2\": field is immutable",
            ]
        );
    }
}
