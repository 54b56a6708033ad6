//! Unit tests of label selectors: matching, and the parser's wording of every error.

use super::*;
use crate::object;
use serde_json::{Value, json};

fn selects(selector: &str, labels: Value) -> bool {
    let obj = json!({"metadata": {"name": "web", "labels": labels}});
    LabelSelector::parse(selector)
        .unwrap()
        .matches(&object::labels(&obj))
}

fn error(selector: &str) -> String {
    let error = LabelSelector::parse(selector).unwrap_err();
    assert_eq!(error.code, 400, "{selector}");
    error.message
}

#[test]
fn equality_and_inequality_requirements_match_label_values() {
    assert!(selects("app=web", json!({"app": "web"})));
    assert!(selects("app==web", json!({"app": "web"})));
    assert!(!selects("app=web", json!({"app": "db"})));
    assert!(selects("app!=web", json!({"app": "db"})));
    assert!(selects("app!=web", json!({})));
    assert!(selects("app=", json!({"app": ""})));
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
    assert!(selects("tier in (,x)", json!({"tier": ""})));
    assert!(selects("tier in ()", json!({"tier": ""})));
    assert!(selects("in in (in, notin)", json!({"in": "notin"})));
}

#[test]
fn existence_numeric_and_conjunctions_combine() {
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
    assert!(selects("  ", json!({})));
    assert!(selects("n>2,n<4", json!({"n": "3"})));
    assert!(!selects("n>2", json!({"n": "x"})));
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
    assert!(LabelSelector::parse("").unwrap().is_empty());
}

#[test]
fn parse_errors_are_worded_as_apimachinery_words_them() {
    let cases = [
        (
            "a in (b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a in b",
            "unable to parse requirement: found 'b' expected: '('",
        ),
        (
            "a in (b c)",
            "unable to parse requirement: found 'c', expected: ',' or ')'",
        ),
        (
            "a in (=)",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        (
            "=a",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        (
            "!=a",
            "found '!=', expected: !, identifier, or 'end of string'",
        ),
        (
            "!,a",
            "unable to parse requirement: found ',', expected: identifier",
        ),
        (
            "a==(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ];
    for (selector, message) in cases {
        assert_eq!(error(selector), message, "{selector}");
    }
}

#[test]
fn invalid_keys_and_values_are_reported_with_their_field_paths() {
    let key = error("-a=b");
    assert!(
        key.starts_with(
            "unable to parse requirement: : Invalid value: \"-a\": name part must consist"
        ),
        "{key}"
    );
    let value = error("a=b c,d");
    assert_eq!(value, "found 'c', expected: ',' or 'end of string'");
    let value = error("a=-b");
    assert!(
        value.starts_with("unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be"),
        "{value}"
    );
    let number = error("a>b");
    assert!(
        number.starts_with("unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"),
        "{number}"
    );
    let two = error("a in (-x,-y)");
    assert!(
        two.starts_with("unable to parse requirement: [values[0][a]: Invalid value: \"-x\""),
        "{two}"
    );
}
