//! `ObjectMeta` validation as apimachinery's `ValidateObjectMetaAccessor` and
//! `ValidateObjectMetaAccessorUpdate` do it (`k8s.io/apimachinery/pkg/api/validation`), with
//! the extra finalizer rule of the core types (`pkg/apis/core/validation.ValidateObjectMeta`);
//! the finalizer rules themselves are in `types::finalizers`. Usable by any type: built-in
//! ones pass their name rule, custom resources use [`NameRule::Subdomain`], and the generic
//! pass of every update (`rest.BeforeUpdate`) [`NameRule::PathSegment`].

use serde_json::{Map, Value};

use super::field::{ErrorList, FieldError};
use super::{finalizers, names};
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
    /// `path.ValidatePathSegmentName`: the generic checks of `rest.BeforeCreate` and
    /// `rest.BeforeUpdate`, whatever the type.
    PathSegment,
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
            Self::PathSegment => names::path_segment_name(&name),
        }
    }
}

/// The total size all annotations of an object may have (`TotalAnnotationSizeLimitB`).
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

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
    errors.extend(common(obj, core));
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

/// Labels, annotations and finalizers of `obj`: what create and update both check.
fn common(obj: &Value, core: bool) -> ErrorList {
    let meta = &obj["metadata"];
    let mut errors = labels(meta["labels"].as_object());
    errors.extend(annotations(meta["annotations"].as_object()));
    errors.extend(finalizers::validate(obj, core));
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

/// `ValidateObjectMetaUpdate`: no new finalizers while deleting, server-set fields immutable,
/// labels and annotations valid. (The resourceVersion a conditional update needs is checked
/// where the update is merged.)
pub fn validate_update(new: &Value, old: &Value, core: bool) -> ErrorList {
    let (new_meta, old_meta) = (&new["metadata"], &old["metadata"]);
    let mut errors = ErrorList::new();
    errors.extend(finalizers::no_new_while_deleting(new, old));
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
    errors.extend(common(new, core));
    errors
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
