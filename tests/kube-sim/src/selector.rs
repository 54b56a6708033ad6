//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`, `>`, `<`) and field selectors
//! (`path=value`, `path!=value` on any dotted field path), parsed from query strings.
//!
//! Label selectors are evaluated against an object's [`Labels`], which the store extracts once
//! per write; field selectors walk the object's JSON.

use std::borrow::Cow;

use serde_json::Value;

use crate::object::Labels;
use crate::status::ApiError;
use crate::store::Stored;

#[derive(Debug, Clone, PartialEq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelRequirement>);

impl LabelSelector {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let parts = split_top_level(text);
        let requirements = parts
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .map(parse_requirement);
        requirements.collect::<Result<_, _>>().map(Self)
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.0.iter().all(|r| requirement_matches(r, labels))
    }

    /// The requirements that only objects carrying `key` with one of the listed values can
    /// meet (`key=value`, `key in (values)`), as `(key, values)`: what a label index can answer.
    pub fn equality_terms(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().filter_map(|r| match r {
            LabelRequirement::Equals(k, v) => Some((k.as_str(), std::slice::from_ref(v))),
            LabelRequirement::In(k, vs) => Some((k.as_str(), vs.as_slice())),
            _ => None,
        })
    }
}

/// Splits on commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(text: &str) -> Result<LabelRequirement, ApiError> {
    let invalid = || {
        ApiError::bad_request(format!(
            "unable to parse requirement: invalid label selector: {text:?}"
        ))
    };
    if let Some(key) = text.strip_prefix('!') {
        return valid_key(key.trim())
            .map(LabelRequirement::NotExists)
            .ok_or_else(invalid);
    }
    let key_end = text
        .find(|c: char| c.is_whitespace() || "=!<>(".contains(c))
        .unwrap_or(text.len());
    let key = valid_key(&text[..key_end]).ok_or_else(invalid)?;
    let rest = text[key_end..].trim_start();
    let requirement = if rest.is_empty() {
        LabelRequirement::Exists(key)
    } else if let Some(values) = rest.strip_prefix("notin") {
        LabelRequirement::NotIn(key, value_set(values).ok_or_else(invalid)?)
    } else if let Some(values) = rest.strip_prefix("in") {
        LabelRequirement::In(key, value_set(values).ok_or_else(invalid)?)
    } else if let Some(value) = rest.strip_prefix("!=") {
        LabelRequirement::NotEquals(key, valid_value(value).ok_or_else(invalid)?)
    } else if let Some(value) = rest.strip_prefix("==").or_else(|| rest.strip_prefix('=')) {
        LabelRequirement::Equals(key, valid_value(value).ok_or_else(invalid)?)
    } else if let Some(number) = rest.strip_prefix('>') {
        LabelRequirement::GreaterThan(key, number.trim().parse().map_err(|_| invalid())?)
    } else if let Some(number) = rest.strip_prefix('<') {
        LabelRequirement::LessThan(key, number.trim().parse().map_err(|_| invalid())?)
    } else {
        return Err(invalid());
    };
    Ok(requirement)
}

fn valid_key(key: &str) -> Option<String> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    ok.then(|| key.to_owned())
}

fn valid_value(value: &str) -> Option<String> {
    let value = value.trim();
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        .then(|| value.to_owned())
}

/// `(a, b, c)` → the values.
fn value_set(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    inner.split(',').map(valid_value).collect()
}

fn requirement_matches(requirement: &LabelRequirement, labels: &Labels) -> bool {
    let label = |key: &str| labels.get(key).map(String::as_str);
    match requirement {
        LabelRequirement::Equals(k, v) => label(k) == Some(v.as_str()),
        LabelRequirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
        LabelRequirement::In(k, vs) => label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
        LabelRequirement::NotIn(k, vs) => label(k).is_none_or(|l| vs.iter().all(|v| v != l)),
        LabelRequirement::Exists(k) => label(k).is_some(),
        LabelRequirement::NotExists(k) => label(k).is_none(),
        LabelRequirement::GreaterThan(k, n) => label(k)
            .and_then(|l| l.parse::<i64>().ok())
            .is_some_and(|l| l > *n),
        LabelRequirement::LessThan(k, n) => label(k)
            .and_then(|l| l.parse::<i64>().ok())
            .is_some_and(|l| l < *n),
    }
}

/// A parsed `fieldSelector`: `path=value`, `path==value` or `path!=value`, comma-joined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let parse_one = |part: &str| {
            let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: {part:?}"
                )));
            };
            Ok((path.trim().to_owned(), equal, value.trim().to_owned()))
        };
        text.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(parse_one)
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether `obj` meets every requirement (the reference [`matches_stored`](Self::matches_stored)
    /// is tested against).
    #[cfg(test)]
    pub fn matches(&self, obj: &Value) -> bool {
        self.0
            .iter()
            .all(|(path, equal, value)| (field_text(obj, path) == value.as_str()) == *equal)
    }

    /// [`matches`](Self::matches) for a stored object, reading `metadata.name` and
    /// `metadata.namespace` from the texts kept beside it.
    pub fn matches_stored(&self, obj: &Stored) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let text = match path.as_str() {
                "metadata.name" => Cow::Borrowed(&*obj.name),
                "metadata.namespace" => Cow::Borrowed(&*obj.namespace),
                _ => field_text(&obj.value, path),
            };
            (text == value.as_str()) == *equal
        })
    }
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
mod tests {
    use super::*;
    use crate::object;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "prod", "labels": labels}, "spec": {"port": 80}})
    }

    fn selects(selector: &str, labels: Value) -> bool {
        LabelSelector::parse(selector)
            .unwrap()
            .matches(&object::labels(&obj(labels)))
    }

    #[test]
    fn equality_and_inequality_requirements_match_label_values() {
        assert!(selects("app=web", json!({"app": "web"})));
        assert!(selects("app==web", json!({"app": "web"})));
        assert!(!selects("app=web", json!({"app": "db"})));
        assert!(selects("app!=web", json!({"app": "db"})));
        assert!(selects("app!=web", json!({})));
    }

    #[test]
    fn set_requirements_match_membership() {
        assert!(selects("tier in (front, back)", json!({"tier": "back"})));
        assert!(!selects("tier in (front,back)", json!({})));
        assert!(selects("tier notin (front,back)", json!({})));
        assert!(!selects(
            "tier notin (front,back)",
            json!({"tier": "front"})
        ));
    }

    #[test]
    fn existence_requirements_and_conjunctions_combine() {
        assert!(selects("app,!legacy", json!({"app": "x"})));
        assert!(!selects(
            "app,!legacy",
            json!({"app": "x", "legacy": "true"})
        ));
        assert!(selects(
            "app=x,tier in (a,b),!legacy",
            json!({"app": "x", "tier": "b"})
        ));
        assert!(selects("", json!({})));
    }

    #[test]
    fn non_string_label_values_count_as_absent() {
        assert!(!selects("n", json!({"n": 3})));
        assert!(selects("!n", json!({"n": 3})));
        assert!(selects("n!=3", json!({"n": 3})));
    }

    #[test]
    fn equality_terms_are_the_equals_and_in_requirements() {
        let selector = LabelSelector::parse("a=1,b!=2,c in (3,4),d,!e,f notin (5)").unwrap();
        let terms: Vec<(&str, &[String])> = selector.equality_terms().collect();
        let (one, three_four) = (["1".to_owned()], ["3".to_owned(), "4".to_owned()]);
        assert_eq!(terms, vec![("a", &one[..]), ("c", &three_four[..])]);
        assert_eq!(
            LabelSelector::parse("").unwrap().equality_terms().count(),
            0
        );
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        assert_eq!(LabelSelector::parse("app in front").unwrap_err().code, 400);
        assert_eq!(LabelSelector::parse("=x").unwrap_err().code, 400);
    }

    #[test]
    fn field_selectors_compare_dotted_paths_as_text() {
        let selector =
            FieldSelector::parse("metadata.name=web,metadata.namespace!=dev,spec.port=80").unwrap();
        assert!(selector.matches(&obj(json!({}))));
        assert!(
            !FieldSelector::parse("metadata.name=db")
                .unwrap()
                .matches(&obj(json!({})))
        );
        let missing = FieldSelector::parse("spec.missing=,metadata.labels!=x").unwrap();
        assert!(missing.matches(&obj(json!({}))));
        assert!(selector.matches_stored(&Stored::new(obj(json!({})))));
        let odd = Stored::new(json!({"metadata": {"name": 7}, "spec": {"port": 80}}));
        let cases = [
            ("metadata.name=7,metadata.namespace=,spec.port=80", true),
            ("metadata.name!=7", false),
            ("metadata.namespace=prod", false),
        ];
        for (text, expected) in cases {
            let selector = FieldSelector::parse(text).unwrap();
            assert_eq!(selector.matches(&odd.value), expected, "{text}");
            assert_eq!(selector.matches_stored(&odd), expected, "{text}");
        }
        assert!(FieldSelector::parse("").unwrap().matches(&json!({})));
    }
}
