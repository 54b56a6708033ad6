//! `admissionregistration.k8s.io/v1` ValidatingWebhookConfigurations and
//! MutatingWebhookConfigurations (cluster-scoped; no status; `metadata.generation` 1 on create
//! and bumped when `webhooks` changes, as `pkg/registry/admissionregistration/*/strategy.go`
//! do, through the `Spec` generation policy: `webhooks` is all they have besides `metadata`).
//!
//! - [`decode_defaults`]: each webhook as Go decodes and encodes it (`k8s.io/api`
//!   `admissionregistration/v1` types: nulls and empty `omitempty` fields gone, `name`,
//!   `clientConfig`, `sideEffects` and `admissionReviewVersions` always there, unknown fields
//!   dropped with an `unknown field "webhooks[0].x"` warning), then the v1 defaults
//!   (`pkg/apis/admissionregistration/v1/defaults.go`): `failurePolicy: Fail`,
//!   `matchPolicy: Equivalent`, `namespaceSelector: {}`, `objectSelector: {}`,
//!   `timeoutSeconds: 10`, each rule's `scope: "*"`, `clientConfig.service.port: 443`, and for
//!   mutating webhooks `reinvocationPolicy: Never`.
//! - [`decode_error`]: a body that does not decode into the Go type (a `caBundle` that is not
//!   base64, a string where a number goes): 400, as the create and update handlers answer.
//! - [`validate`]: part of `pkg/apis/admissionregistration/validation`
//!   (`validateValidatingWebhook`, `validateMutatingWebhook`, `validateAdmissionReviewVersions`,
//!   unique names): names required, DNS-1123 subdomains with at least three segments, unique;
//!   `sideEffects` required, `None` or `NoneOnDryRun`; `admissionReviewVersions` non-empty;
//!   `clientConfig` exactly one of `url` and `service`; `timeoutSeconds` 1 to 30. Not
//!   validated: rules, `failurePolicy`/`matchPolicy`/`reinvocationPolicy` values, selectors,
//!   the URL and service reference, recognized admission review versions, match conditions.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::field::{self, ErrorList, FieldError};
use super::names;
use crate::gotypes::catalog;
use crate::status::ApiError;
use crate::warning;

pub const GROUP: &str = "admissionregistration.k8s.io";

/// How Go encodes a struct field, hence whether it is there when empty.
#[derive(Clone, Copy)]
enum Presence {
    /// `omitempty` (value types, lists, maps): absent when null or empty.
    OmitEmpty,
    /// A pointer with `omitempty`: absent when null.
    Pointer,
    /// A string without `omitempty`: `""` when unset.
    AlwaysStr,
    /// A pointer or list without `omitempty`: `null` when unset.
    AlwaysNull,
    /// A struct value: `{}` when unset.
    AlwaysObject,
}

/// What a field holds.
#[derive(Clone, Copy)]
enum Inner {
    Leaf,
    Struct(&'static [Field]),
    List(&'static [Field]),
}

#[derive(Clone, Copy)]
struct Field {
    name: &'static str,
    presence: Presence,
    inner: Inner,
}

const fn f(name: &'static str, presence: Presence, inner: Inner) -> Field {
    Field {
        name,
        presence,
        inner,
    }
}

use Inner::{Leaf, List, Struct};
use Presence::{AlwaysNull, AlwaysObject, AlwaysStr, OmitEmpty, Pointer};

/// `metav1.LabelSelectorRequirement`.
const REQUIREMENT: &[Field] = &[
    f("key", AlwaysStr, Leaf),
    f("operator", AlwaysStr, Leaf),
    f("values", OmitEmpty, Leaf),
];

/// `metav1.LabelSelector`.
const SELECTOR: &[Field] = &[
    f("matchLabels", OmitEmpty, Leaf),
    f("matchExpressions", OmitEmpty, List(REQUIREMENT)),
];

const SERVICE: &[Field] = &[
    f("namespace", AlwaysStr, Leaf),
    f("name", AlwaysStr, Leaf),
    f("path", Pointer, Leaf),
    f("port", Pointer, Leaf),
];

const CLIENT_CONFIG: &[Field] = &[
    f("url", Pointer, Leaf),
    f("service", Pointer, Struct(SERVICE)),
    f("caBundle", OmitEmpty, Leaf),
];

/// `RuleWithOperations` (with `Rule` inlined).
const RULE: &[Field] = &[
    f("operations", OmitEmpty, Leaf),
    f("apiGroups", OmitEmpty, Leaf),
    f("apiVersions", OmitEmpty, Leaf),
    f("resources", OmitEmpty, Leaf),
    f("scope", Pointer, Leaf),
];

const MATCH_CONDITION: &[Field] = &[f("name", AlwaysStr, Leaf), f("expression", AlwaysStr, Leaf)];

const VALIDATING_WEBHOOK: &[Field] = &[
    f("name", AlwaysStr, Leaf),
    f("clientConfig", AlwaysObject, Struct(CLIENT_CONFIG)),
    f("rules", OmitEmpty, List(RULE)),
    f("failurePolicy", Pointer, Leaf),
    f("matchPolicy", Pointer, Leaf),
    f("namespaceSelector", Pointer, Struct(SELECTOR)),
    f("objectSelector", Pointer, Struct(SELECTOR)),
    f("sideEffects", AlwaysNull, Leaf),
    f("timeoutSeconds", Pointer, Leaf),
    f("admissionReviewVersions", AlwaysNull, Leaf),
    f("matchConditions", OmitEmpty, List(MATCH_CONDITION)),
];

const MUTATING_WEBHOOK: &[Field] = &[
    f("name", AlwaysStr, Leaf),
    f("clientConfig", AlwaysObject, Struct(CLIENT_CONFIG)),
    f("rules", OmitEmpty, List(RULE)),
    f("failurePolicy", Pointer, Leaf),
    f("matchPolicy", Pointer, Leaf),
    f("namespaceSelector", Pointer, Struct(SELECTOR)),
    f("objectSelector", Pointer, Struct(SELECTOR)),
    f("sideEffects", AlwaysNull, Leaf),
    f("timeoutSeconds", Pointer, Leaf),
    f("admissionReviewVersions", AlwaysNull, Leaf),
    f("reinvocationPolicy", Pointer, Leaf),
    f("matchConditions", OmitEmpty, List(MATCH_CONDITION)),
];

/// The side effect classes v1 accepts (`noSideEffectClasses`, sorted as `sets.List` sorts).
const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];

/// The body as Go decodes it, then the v1 defaults (see the module doc).
pub fn decode_defaults(obj: &mut Value, mutating: bool) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let fields = if mutating {
        MUTATING_WEBHOOK
    } else {
        VALIDATING_WEBHOOK
    };
    let webhooks = match map.remove("webhooks") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        // `omitempty`: null and [] are no field at all.
        Some(Value::Array(_) | Value::Null) | None => return,
        // Not a list: left for `decode_error` to refuse.
        Some(other) => {
            map.insert("webhooks".into(), other);
            return;
        }
    };
    let webhooks = webhooks
        .into_iter()
        .enumerate()
        .map(|(i, hook)| {
            let mut hook = canonical(hook, fields, &field::index("webhooks", i));
            default_webhook(&mut hook, mutating);
            hook
        })
        .collect();
    map.insert("webhooks".into(), Value::Array(webhooks));
}

/// `value` as Go encodes the struct `fields` (other JSON types are left as they are).
fn canonical(value: Value, fields: &[Field], path: &str) -> Value {
    let Value::Object(mut given) = value else {
        return value;
    };
    let mut out = Map::new();
    for def in fields {
        let value = given.remove(def.name).filter(|v| !v.is_null());
        let value = value.map(|v| match def.inner {
            Leaf => v,
            Struct(inner) => canonical(v, inner, &field::child(path, def.name)),
            List(inner) => match v {
                Value::Array(items) => Value::Array(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| {
                            let at = field::index(&field::child(path, def.name), i);
                            canonical(item, inner, &at)
                        })
                        .collect(),
                ),
                other => other,
            },
        });
        let value = match (def.presence, value) {
            (OmitEmpty, Some(v)) if is_empty(&v) => None,
            (OmitEmpty | Pointer, v) => v,
            (AlwaysStr, v) => Some(v.unwrap_or_else(|| json!(""))),
            (AlwaysNull, v) => Some(v.unwrap_or(Value::Null)),
            (AlwaysObject, v) => Some(v.unwrap_or_else(|| json!({}))),
        };
        if let Some(value) = value {
            out.insert(def.name.to_owned(), value);
        }
    }
    for key in given.keys() {
        warning::add(format!(
            "unknown field \"{}\"",
            field::child(path, key.as_str())
        ));
    }
    Value::Object(out)
}

/// Go's `omitempty` emptiness of a list, map or string.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`,
/// `SetDefaults_ServiceReference`.
fn default_webhook(hook: &mut Value, mutating: bool) {
    let Some(map) = hook.as_object_mut() else {
        return;
    };
    let mut defaults = vec![
        ("failurePolicy", json!("Fail")),
        ("matchPolicy", json!("Equivalent")),
        ("namespaceSelector", json!({})),
        ("objectSelector", json!({})),
        ("timeoutSeconds", json!(10)),
    ];
    if mutating {
        defaults.push(("reinvocationPolicy", json!("Never")));
    }
    for (key, value) in defaults {
        map.entry(key).or_insert(value);
    }
    if let Some(rules) = map.get_mut("rules").and_then(Value::as_array_mut) {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            rule.entry("scope").or_insert(json!("*"));
        }
    }
    let service = map
        .get_mut("clientConfig")
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut);
    if let Some(service) = service {
        service.entry("port").or_insert(json!(443));
    }
}

/// The 400 the create and update handlers answer when the body does not decode into the
/// kind's Go type (`transformDecodeError`): `caBundle` must be base64, numbers numbers, ...
pub fn decode_error(kind: &str, obj: &Value) -> Result<(), ApiError> {
    let Some(ty) = catalog::lookup(GROUP, kind) else {
        return Ok(());
    };
    match crate::gotypes::decode::error(ty, obj) {
        None => Ok(()),
        Some(error) => Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: {error}"
        ))),
    }
}

/// The webhook part of `ValidateValidatingWebhookConfiguration` /
/// `ValidateMutatingWebhookConfiguration` (see the module doc for what is left out).
pub fn validate(obj: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let Some(webhooks) = obj.get("webhooks").and_then(Value::as_array) else {
        return errors;
    };
    let mut names = BTreeSet::new();
    for (i, hook) in webhooks.iter().enumerate() {
        let path = field::index("webhooks", i);
        let at = |child: &str| field::child(&path, child);
        let name = hook["name"].as_str().unwrap_or_default();
        errors.extend(fully_qualified_name(&at("name"), name));
        match &hook["sideEffects"] {
            Value::Null => errors.push(FieldError::required(
                &at("sideEffects"),
                format!("must specify one of {}", NO_SIDE_EFFECTS.join(", ")),
            )),
            value if !value.as_str().is_some_and(|s| NO_SIDE_EFFECTS.contains(&s)) => errors.push(
                FieldError::not_supported(&at("sideEffects"), value.clone(), &NO_SIDE_EFFECTS),
            ),
            _ => {}
        }
        if let Some(timeout) = hook["timeoutSeconds"]
            .as_i64()
            .filter(|t| !(1..=30).contains(t))
        {
            errors.push(FieldError::invalid(
                &at("timeoutSeconds"),
                json!(timeout),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        let config = &hook["clientConfig"];
        if config["url"].is_null() == config["service"].is_null() {
            errors.push(FieldError::required(
                &at("clientConfig"),
                "exactly one of url or service is required",
            ));
        }
        let versions = hook["admissionReviewVersions"]
            .as_array()
            .map_or(0, Vec::len);
        if versions == 0 {
            errors.push(FieldError::required(
                &at("admissionReviewVersions"),
                "must specify one of v1, v1beta1",
            ));
        }
        if !name.is_empty() && !names.insert(name) {
            errors.push(FieldError::duplicate(&at("name"), name));
        }
    }
    errors
}

/// `utilvalidation.IsFullyQualifiedName`.
fn fully_qualified_name(path: &str, name: &str) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let problems = names::dns1123_subdomain(name);
    if !problems.is_empty() {
        return vec![FieldError::invalid(path, name, problems.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &ErrorList) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    #[test]
    fn webhooks_get_the_v1_defaults_and_lose_nulls() {
        let mut obj = json!({"metadata": {"name": "c"}, "webhooks": [{
            "name": "a.b.c",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": null}, "url": null},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "matchConditions": [],
        }]});
        decode_defaults(&mut obj, true);
        assert_eq!(
            obj["webhooks"][0],
            json!({
                "name": "a.b.c",
                "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "sideEffects": "None",
                "timeoutSeconds": 10,
                "admissionReviewVersions": ["v1"],
                "reinvocationPolicy": "Never",
            })
        );
        let mut empty = json!({"metadata": {"name": "c"}, "webhooks": []});
        decode_defaults(&mut empty, false);
        assert_eq!(empty, json!({"metadata": {"name": "c"}}));
    }

    #[test]
    fn validation_follows_the_apiservers_order_and_wording() {
        let mut obj = json!({"webhooks": [
            {"name": "short", "clientConfig": {}, "timeoutSeconds": 31},
            {"name": "a.b.c", "clientConfig": {"url": "https://x"}, "sideEffects": "Some", "admissionReviewVersions": ["v1"]},
            {"name": "a.b.c", "clientConfig": {"url": "https://x"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]},
            {"name": "", "clientConfig": {"url": "https://x"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]},
        ]});
        decode_defaults(&mut obj, false);
        assert_eq!(
            messages(&validate(&obj)),
            [
                "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[1].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[2].name: Duplicate value: \"a.b.c\"",
                "webhooks[3].name: Required value",
            ]
        );
    }

    #[test]
    fn ca_bundles_must_be_base64() {
        let obj = json!({"webhooks": [{"name": "a.b.c", "clientConfig": {"caBundle": "a!"}}]});
        assert_eq!(
            decode_error("ValidatingWebhookConfiguration", &obj)
                .unwrap_err()
                .message,
            "ValidatingWebhookConfiguration in version \"v1\" cannot be handled as a ValidatingWebhookConfiguration: illegal base64 data at input byte 1"
        );
    }
}
