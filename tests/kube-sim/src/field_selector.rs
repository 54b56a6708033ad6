//! Field selectors as the apiserver takes them: parsed by apimachinery's `fields.ParseSelector`
//! (`label=value`, `label==value`, `label!=value`, comma-joined, `\`-escapes in values), then
//! each label converted by the requested kind's field label conversion function, which only
//! knows the kind's selectable fields:
//!
//! - `metadata.name` and `metadata.namespace` for every kind without its own function
//!   (`runtime.DefaultMetaV1FieldSelectorConversion`: ConfigMap, EndpointSlice, Lease,
//!   CustomResourceDefinition, Validating- and MutatingWebhookConfiguration);
//! - for custom resources (apiextensions' `crConverter`) `metadata.name`, `metadata.namespace`
//!   unless cluster-scoped, and the CRD version's `selectableFields`;
//! - Service `spec.clusterIP`, `spec.type`; Secret `type`; Namespace `status.phase` (and no
//!   `metadata.namespace`); core Event `involvedObject.*`, `reason`, `reportingComponent`,
//!   `source`, `type`; events.k8s.io Event `regarding.*`, `reportingController`, `reason`,
//!   `source`, `type` (`pkg/apis/core/v1/conversion.go`, `pkg/apis/events/v1/conversion.go`).
//!
//! Each selectable field is read from the stored object at the JSON path it comes from (Event
//! `source` is `source.component`; events.k8s.io labels read the core Event kube-sim stores,
//! `regarding.name` its `involvedObject.name`); a missing field reads as "".

use std::borrow::Cow;

use serde_json::Value;

use crate::label_syntax::go_quote;
use crate::registry::ResourceType;
use crate::status::ApiError;
use crate::stored::Stored;

/// One term: the field's path in the object, `=` or `!=`, and the value.
#[derive(Debug, Clone, PartialEq)]
struct Term {
    path: String,
    equal: bool,
    value: String,
}

/// A parsed `fieldSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<Term>);

/// How a kind converts field labels: which it accepts, where each is read, how it refuses.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectableFields {
    /// `(label, JSON path)` of every selectable field.
    fields: Vec<(String, String)>,
    /// Whether refusals use the default conversion's wording (else `field label not supported`).
    default_wording: bool,
}

const METADATA: [(&str, &str); 2] = [
    ("metadata.name", "metadata.name"),
    ("metadata.namespace", "metadata.namespace"),
];

fn owned(fields: &[(&str, &str)]) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|(l, p)| ((*l).to_owned(), (*p).to_owned()))
        .collect()
}

impl SelectableFields {
    /// The selectable fields of `rt`; for a custom resource, `crd` is its definition.
    pub fn of(rt: &ResourceType, crd: Option<&Value>) -> Self {
        if rt.defined_by.is_some() {
            return Self::of_custom_resource(rt, crd);
        }
        let specific: Option<&[(&str, &str)]> = match (rt.group.as_str(), rt.kind.as_str()) {
            ("", "Service") => Some(&[
                ("metadata.namespace", "metadata.namespace"),
                ("metadata.name", "metadata.name"),
                ("spec.clusterIP", "spec.clusterIP"),
                ("spec.type", "spec.type"),
            ]),
            ("", "Secret") => Some(&[
                ("type", "type"),
                ("metadata.namespace", "metadata.namespace"),
                ("metadata.name", "metadata.name"),
            ]),
            ("", "Namespace") => Some(&[
                ("status.phase", "status.phase"),
                ("metadata.name", "metadata.name"),
            ]),
            ("", "Event") => Some(CORE_EVENT),
            ("events.k8s.io", "Event") => Some(EVENTS_EVENT),
            _ => None,
        };
        match specific {
            Some(fields) => Self {
                fields: owned(fields),
                default_wording: false,
            },
            None => Self {
                fields: owned(&METADATA),
                default_wording: true,
            },
        }
    }

    /// apiextensions' `crConverter`: `metadata.name`, `metadata.namespace` unless
    /// cluster-scoped, and the version's `selectableFields`.
    fn of_custom_resource(rt: &ResourceType, crd: Option<&Value>) -> Self {
        let metadata = if rt.namespaced {
            &METADATA[..]
        } else {
            &METADATA[..1]
        };
        let mut fields = owned(metadata);
        fields.extend(crd_selectable_fields(crd, &rt.version));
        Self {
            fields,
            default_wording: false,
        }
    }

    /// The JSON path of `label`, or the conversion's refusal.
    fn path_of(&self, label: &str) -> Result<&str, String> {
        if let Some((_, path)) = self.fields.iter().find(|(l, _)| l == label) {
            return Ok(path);
        }
        Err(if self.default_wording {
            format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                go_quote(label)
            )
        } else {
            format!("field label not supported: {label}")
        })
    }
}

const CORE_EVENT: &[(&str, &str)] = &[
    ("involvedObject.kind", "involvedObject.kind"),
    ("involvedObject.namespace", "involvedObject.namespace"),
    ("involvedObject.name", "involvedObject.name"),
    ("involvedObject.uid", "involvedObject.uid"),
    ("involvedObject.apiVersion", "involvedObject.apiVersion"),
    (
        "involvedObject.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("involvedObject.fieldPath", "involvedObject.fieldPath"),
    ("reason", "reason"),
    ("reportingComponent", "reportingComponent"),
    ("source", "source.component"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// events.k8s.io Events are stored as core Events: each label reads the core field it maps to
/// (`pkg/apis/events/v1/conversion.go`).
const EVENTS_EVENT: &[(&str, &str)] = &[
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("source", "source.component"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// `spec.versions[version].selectableFields[].jsonPath` of a CRD, as labels (`.spec.x` → `spec.x`).
fn crd_selectable_fields(crd: Option<&Value>, version: &str) -> Vec<(String, String)> {
    let versions = crd.and_then(|c| c["spec"]["versions"].as_array());
    let served = versions.and_then(|vs| vs.iter().find(|v| v["name"] == version));
    let fields = served.and_then(|v| v["selectableFields"].as_array());
    fields
        .into_iter()
        .flatten()
        .filter_map(|f| f["jsonPath"].as_str())
        .map(|p| {
            let label = p.trim_start_matches('.').to_owned();
            (label.clone(), label)
        })
        .collect()
}

impl FieldSelector {
    /// Parses a selector and converts its labels with `fields`; errors are 400 Bad Requests.
    pub fn parse(text: &str, fields: &SelectableFields) -> Result<Self, ApiError> {
        let terms = parse_terms(text).map_err(ApiError::bad_request)?;
        let converted = terms.into_iter().map(|(label, equal, value)| {
            let path = fields.path_of(&label).map_err(ApiError::bad_request)?;
            Ok(Term {
                path: path.to_owned(),
                equal,
                value,
            })
        });
        converted.collect::<Result<_, _>>().map(Self)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a stored object meets every term (name and namespace read from its key).
    pub fn matches_stored(&self, obj: &Stored) -> bool {
        self.0.iter().all(|term| {
            let text = match term.path.as_str() {
                "metadata.name" => Cow::Borrowed(obj.key.name.as_str()),
                "metadata.namespace" => Cow::Borrowed(obj.key.namespace.as_str()),
                path => field_text(&obj.value, path),
            };
            (text == term.value.as_str()) == term.equal
        })
    }
}

/// `fields.ParseSelector`'s terms: `(label, equal, unescaped value)`, sorted by their text.
/// The value a selector requires `label` to equal (`fields.Selector.RequiresExactMatch`): that
/// of its first `label=` or `label==` term, the terms sorted as parsed; None when it requires
/// none or does not parse.
pub fn exact_match(text: &str, label: &str) -> Option<String> {
    let terms = parse_terms(text).ok()?;
    let mut required = terms
        .into_iter()
        .filter(|(l, equal, _)| *equal && l == label);
    required.next().map(|(_, _, value)| value)
}

fn parse_terms(selector: &str) -> Result<Vec<(String, bool, String)>, String> {
    let mut parts = split_terms(selector);
    parts.sort_unstable();
    let mut terms = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let cannot = || format!("invalid selector: '{selector}'; can't understand '{part}'");
        let (label, operator, value) = split_term(part).ok_or_else(cannot)?;
        terms.push((label.to_owned(), operator != "!=", unescape(value)?));
    }
    Ok(terms)
}

/// Splits on commas not escaped by a backslash.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let (mut terms, mut start, mut escaped) = (Vec::new(), 0, false);
    for (i, c) in selector.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// The first `!=`, `==` or `=` in a term splits it.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        for operator in ["!=", "==", "="] {
            if term[i..].starts_with(operator) {
                return Some((&term[..i], operator, &term[i + operator.len()..]));
            }
        }
    }
    None
}

/// `fields.UnescapeValue`: `\\`, `\,` and `\=` stand for the character; any other escape, and
/// an unescaped `,` or `=`, is an error.
fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_owned());
    }
    Ok(out)
}

/// The field at a dotted path, as text: strings as they are, missing fields and nulls "",
/// anything else its JSON text.
pub fn field_text<'a>(obj: &'a Value, path: &str) -> Cow<'a, str> {
    let field = path.split('.').try_fold(obj, |v, key| v.get(key));
    match field {
        Some(Value::String(s)) => Cow::Borrowed(s),
        Some(Value::Null) | None => Cow::Borrowed(""),
        Some(other) => Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
#[path = "field_selector_tests.rs"]
mod tests;
