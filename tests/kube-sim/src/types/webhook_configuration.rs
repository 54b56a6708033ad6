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
//!   unique names, `validateRuleWithOperations`): names required, DNS-1123 subdomains with at
//!   least three segments, unique; each rule's operations (required, supported, `*` alone),
//!   API groups and versions (required, `*` alone, no empty version), resources (required, no
//!   empty one, the wildcard and subresource combinations) and scope; the values of
//!   `failurePolicy`, `matchPolicy` and `reinvocationPolicy`; `sideEffects` required, `None`
//!   or `NoneOnDryRun`; `admissionReviewVersions` non-empty; `clientConfig` exactly one of
//!   `url` and `service`; `timeoutSeconds` 1 to 30. Not validated: selectors, the URL and
//!   service reference, recognized admission review versions, match conditions. Whether a
//!   rule's groups, versions and resources are served is not checked, as the apiserver does
//!   not check it: a configuration may name a resource no CRD defines yet.

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
        for (r, rule) in hook["rules"].as_array().into_iter().flatten().enumerate() {
            errors.extend(rule_with_operations(rule, &field::index(&at("rules"), r)));
        }
        for (key, supported) in [
            ("failurePolicy", &FAILURE_POLICIES[..]),
            ("matchPolicy", &MATCH_POLICIES[..]),
        ] {
            errors.extend(not_supported(hook, key, &at(key), supported));
        }
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
        // Checked after the timeout, as `validateMutatingWebhook` does.
        errors.extend(not_supported(
            hook,
            "reinvocationPolicy",
            &at("reinvocationPolicy"),
            &REINVOCATION_POLICIES,
        ));
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

/// `field.NotSupported` for `hook[key]` when it is set to a value outside `supported`.
fn not_supported(hook: &Value, key: &str, path: &str, supported: &[&str]) -> Option<FieldError> {
    let value = hook.get(key).filter(|v| !v.is_null())?;
    (!value.as_str().is_some_and(|s| supported.contains(&s)))
        .then(|| FieldError::not_supported(path, value.clone(), supported))
}

/// The supported values, sorted as `sets.List` gives them to `field.NotSupported`.
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

/// `validateRuleWithOperations`, then `validateRule` with subresources allowed.
fn rule_with_operations(rule: &Value, path: &str) -> ErrorList {
    let mut errors = ErrorList::new();
    let at = |child: &str| field::child(path, child);
    let operations = strings(&rule["operations"]);
    if operations.is_empty() {
        errors.push(FieldError::required(&at("operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errors.push(FieldError::invalid(
            &at("operations"),
            rule["operations"].clone(),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, operation) in operations.iter().enumerate() {
        if !OPERATIONS.contains(operation) {
            errors.push(FieldError::not_supported(
                &field::index(&at("operations"), i),
                *operation,
                &OPERATIONS,
            ));
        }
    }
    let groups = strings(&rule["apiGroups"]);
    if groups.is_empty() {
        errors.push(FieldError::required(&at("apiGroups"), ""));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        errors.push(FieldError::invalid(
            &at("apiGroups"),
            rule["apiGroups"].clone(),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(&rule["apiVersions"]);
    if versions.is_empty() {
        errors.push(FieldError::required(&at("apiVersions"), ""));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        errors.push(FieldError::invalid(
            &at("apiVersions"),
            rule["apiVersions"].clone(),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version.is_empty() {
            errors.push(FieldError::required(
                &field::index(&at("apiVersions"), i),
                "",
            ));
        }
    }
    errors.extend(resources(&rule["resources"], &at("resources")));
    if let Some(scope) = rule.get("scope").filter(|v| !v.is_null())
        && !scope.as_str().is_some_and(|s| SCOPES.contains(&s))
    {
        errors.push(FieldError::not_supported(
            &at("scope"),
            scope.clone(),
            &SCOPES,
        ));
    }
    errors
}

/// `validateResources`: `resource`, `resource/subresource`, and the wildcards `*`, `x/*`,
/// `*/x`, `*/*` in the combinations the apiserver allows.
fn resources(value: &Value, path: &str) -> ErrorList {
    let mut errors = ErrorList::new();
    let resources = strings(value);
    if resources.is_empty() {
        errors.push(FieldError::required(path, ""));
    }
    let mut with_wildcard_subresources = BTreeSet::new();
    let mut subresources_of_any = BTreeSet::new();
    let (mut double_wildcard, mut single_wildcard, mut without_subresource) = (false, false, false);
    for (i, entry) in resources.iter().enumerate() {
        let at = field::index(path, i);
        if entry.is_empty() {
            errors.push(FieldError::required(&at, ""));
            continue;
        }
        double_wildcard |= *entry == "*/*";
        single_wildcard |= *entry == "*";
        let Some((resource, subresource)) = entry.split_once('/') else {
            // As the apiserver's loop does: the last entry without a subresource decides.
            without_subresource = *entry != "*";
            continue;
        };
        if with_wildcard_subresources.contains(resource) {
            errors.push(FieldError::invalid(
                &at,
                *entry,
                format!("if '{resource}/*' is present, must not specify {entry}"),
            ));
        }
        if subresources_of_any.contains(subresource) {
            errors.push(FieldError::invalid(
                &at,
                *entry,
                format!("if '*/{subresource}' is present, must not specify {entry}"),
            ));
        }
        if subresource == "*" {
            with_wildcard_subresources.insert(resource);
        }
        if resource == "*" {
            subresources_of_any.insert(subresource);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errors.push(FieldError::invalid(
            path,
            value.clone(),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && without_subresource {
        errors.push(FieldError::invalid(
            path,
            value.clone(),
            "if '*' is present, must not specify other resources without subresources",
        ));
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

    fn hook(rules: Value, extra: Value) -> Value {
        let mut hook = json!({"name": "a.b.c", "clientConfig": {"url": "https://x"},
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "rules": rules});
        for (key, value) in extra.as_object().unwrap() {
            hook[key] = value.clone();
        }
        json!({"webhooks": [hook]})
    }

    #[test]
    fn rules_and_policies_are_validated_with_the_apiservers_wording() {
        let rules = json!([
            {"operations": [], "apiGroups": [], "apiVersions": [], "resources": []},
            {"operations": ["*", "CREATE", "PATCH"], "apiGroups": ["*", "apps"],
             "apiVersions": ["*", ""], "resources": ["pods", ""], "scope": "Everywhere"},
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
             "resources": ["pods/*", "pods/status", "*/scale", "deployments/scale"]},
            {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
             "resources": ["*/*", "pods"]},
            {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
             "resources": ["*", "pods"]},
        ]);
        let mut obj = hook(
            rules,
            json!({"failurePolicy": "Sometimes", "matchPolicy": "Loose"}),
        );
        decode_defaults(&mut obj, false);
        assert_eq!(
            messages(&validate(&obj)),
            [
                "webhooks[0].rules[0].operations: Required value",
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].apiVersions: Required value",
                "webhooks[0].rules[0].resources: Required value",
                "webhooks[0].rules[1].operations: Invalid value: [\"*\",\"CREATE\",\"PATCH\"]: if '*' is present, must not specify other operations",
                "webhooks[0].rules[1].operations[2]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                "webhooks[0].rules[1].apiGroups: Invalid value: [\"*\",\"apps\"]: if '*' is present, must not specify other API groups",
                "webhooks[0].rules[1].apiVersions: Invalid value: [\"*\",\"\"]: if '*' is present, must not specify other API versions",
                "webhooks[0].rules[1].apiVersions[1]: Required value",
                "webhooks[0].rules[1].resources[1]: Required value",
                "webhooks[0].rules[1].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
                "webhooks[0].rules[2].resources[1]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status",
                "webhooks[0].rules[2].resources[3]: Invalid value: \"deployments/scale\": if '*/scale' is present, must not specify deployments/scale",
                "webhooks[0].rules[3].resources: Invalid value: [\"*/*\",\"pods\"]: if '*/*' is present, must not specify other resources",
                "webhooks[0].rules[4].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources without subresources",
                "webhooks[0].failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
                "webhooks[0].matchPolicy: Unsupported value: \"Loose\": supported values: \"Equivalent\", \"Exact\"",
            ]
        );
        let mut mutating = hook(
            json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]),
            json!({"reinvocationPolicy": "Always"}),
        );
        decode_defaults(&mut mutating, true);
        assert_eq!(
            messages(&validate(&mutating)),
            [
                "webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\""
            ]
        );
    }

    #[test]
    fn a_rule_for_a_resource_nothing_serves_is_valid() {
        // admissionregistration does not look the resources up: a configuration may come
        // before the CRD whose objects it admits.
        let mut obj = hook(
            json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": ["multicluster.x-k8s.io"],
                "apiVersions": ["v1alpha1", "v1beta1"], "resources": ["serviceexports"],
                "scope": "Namespaced"}]),
            json!({}),
        );
        decode_defaults(&mut obj, false);
        assert_eq!(messages(&validate(&obj)), Vec::<String>::new());
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
