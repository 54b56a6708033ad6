//! Comparing a recorded response body with kube-sim's, placeholder-aware.
//!
//! The transcripts replace volatile values with placeholders (`<uid:3>`, `<rv:2>`, `<time>`,
//! ...). A placeholder matches any value of its kind; a numbered one is bound to the first
//! value it meets and must meet the same value everywhere later in the file, and different
//! numbers of one kind must be different values. resourceVersions must also keep the order of
//! their numbers within their class (`rv`, `list-rv`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Any placeholder inside a recorded string.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<(uid|rv|list-rv|allocated-ip|allocated-port|generated-name|continue):(\d+)>|<time>|<apiserver-port>")
        .expect("placeholder pattern compiles")
});

/// What a value of each placeholder kind looks like.
fn pattern_of(kind: &str) -> &'static str {
    match kind {
        "uid" => "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "rv" | "list-rv" | "allocated-port" | "apiserver-port" => "[0-9]+",
        "time" => {
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})"
        }
        "allocated-ip" => r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}",
        "generated-name" => r"[a-z0-9][-a-z0-9.]*",
        "continue" => r"[A-Za-z0-9+/=_-]+",
        _ => ".+",
    }
}

/// What `<time>` becomes in a replayed request.
const REPLAYED_TIME: &str = "2026-01-01T00:00:00Z";

/// The values placeholders were bound to in one file.
#[derive(Debug, Default, Clone)]
pub struct Bindings {
    /// `("rv", 2)` → `"1234"`.
    values: BTreeMap<(String, u32), String>,
}

impl Bindings {
    /// `text` with every bound placeholder replaced by its value; unbound ones are named in
    /// the error.
    pub fn substitute(&self, text: &str) -> Result<String, String> {
        let mut missing = Vec::new();
        let replaced = PLACEHOLDER.replace_all(text, |caps: &regex::Captures<'_>| {
            if &caps[0] == "<time>" {
                // A time the client echoes back (an object sent as read): any time will do.
                return REPLAYED_TIME.to_owned();
            }
            let Some(key) = key_of(caps) else {
                missing.push(caps[0].to_owned());
                return caps[0].to_owned();
            };
            match self.values.get(&key) {
                Some(value) => value.clone(),
                None => {
                    missing.push(caps[0].to_owned());
                    caps[0].to_owned()
                }
            }
        });
        if missing.is_empty() {
            Ok(replaced.into_owned())
        } else {
            Err(format!("unbound placeholders in a request: {missing:?}"))
        }
    }

    /// A recorded JSON request body with its placeholders substituted. A string that is one
    /// placeholder standing for an integer (`"<allocated-port:2>"`, `"<apiserver-port>"`)
    /// becomes that JSON number, as the recorder sent it; every other string (and key) is
    /// substituted as text.
    pub fn substitute_json(&self, recorded: &Value) -> Result<Value, String> {
        Ok(match recorded {
            Value::String(text) if stands_for_integer(text) => {
                let digits = self.substitute(text)?;
                let number: u64 = digits
                    .parse()
                    .map_err(|e| format!("{text} is bound to {digits:?}, not an integer: {e}"))?;
                Value::from(number)
            }
            Value::String(text) => Value::String(self.substitute(text)?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.substitute_json(item))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((self.substitute(k)?, self.substitute_json(v)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }

    /// Binds `<kind:n>` to `value`: the same as before, and unlike any other `<kind:m>`.
    fn bind(&mut self, kind: &str, n: u32, value: &str) -> Result<(), String> {
        let key = (kind.to_owned(), n);
        if let Some(bound) = self.values.get(&key) {
            return if bound == value {
                Ok(())
            } else {
                Err(format!("<{kind}:{n}> was {bound:?} before, now {value:?}"))
            };
        }
        if let Some(((_, other), _)) = self
            .values
            .iter()
            .find(|((k, _), v)| k == kind && v.as_str() == value)
        {
            return Err(format!(
                "<{kind}:{n}> and <{kind}:{other}> are both {value:?}"
            ));
        }
        self.values.insert(key, value.to_owned());
        Ok(())
    }

    /// resourceVersions must grow with their numbers, within each class.
    pub fn check_order(&self) -> Result<(), String> {
        for class in ["rv", "list-rv"] {
            let bound: Vec<(u32, u128)> = self
                .values
                .iter()
                .filter(|((k, _), _)| k == class)
                .filter_map(|((_, n), v)| Some((*n, v.parse().ok()?)))
                .collect();
            for pair in bound.windows(2) {
                let ((n1, v1), (n2, v2)) = (pair[0], pair[1]);
                if v1 >= v2 {
                    return Err(format!(
                        "<{class}:{n1}> = {v1} is not older than <{class}:{n2}> = {v2}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Where and how an actual value differs from the recorded one.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// JSON path of the first difference (`.metadata.managedFields[0]`).
    pub path: String,
    pub what: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "."
        } else {
            &self.path
        };
        write!(f, "at {path}: {}", self.what)
    }
}

/// Compares `actual` with the recorded `expected`, binding placeholders on the way. Bindings
/// made before a difference are kept only when the whole value matches.
pub fn compare(
    expected: &Value,
    actual: &Value,
    bindings: &mut Bindings,
) -> Result<(), Difference> {
    let mut trial = bindings.clone();
    walk(expected, actual, &mut trial, &mut String::new())?;
    *bindings = trial;
    Ok(())
}

fn walk(
    expected: &Value,
    actual: &Value,
    bindings: &mut Bindings,
    path: &mut String,
) -> Result<(), Difference> {
    let differ = |path: &str, what: String| Difference {
        path: path.to_owned(),
        what,
    };
    match (expected, actual) {
        (Value::String(recorded), _) if PLACEHOLDER.is_match(recorded) => {
            match_text(recorded, actual, bindings).map_err(|what| differ(path, what))
        }
        (Value::Object(e), Value::Object(a)) => {
            for key in e.keys().chain(a.keys()) {
                if !(e.contains_key(key) && a.contains_key(key)) {
                    let side = if e.contains_key(key) {
                        "missing"
                    } else {
                        "unexpected"
                    };
                    let shown = e.get(key).or(a.get(key)).map(short).unwrap_or_default();
                    return Err(differ(path, format!("{side} key {key:?} ({shown})")));
                }
            }
            for (key, value) in e {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                walk(value, &a[key], bindings, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) if path.ends_with(".managedFields") => {
            walk_unordered(e, a, bindings, path)
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(differ(
                    path,
                    format!(
                        "{} items recorded, {} served: served {}",
                        e.len(),
                        a.len(),
                        short(actual)
                    ),
                ));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(ev, av, bindings, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(differ(
            path,
            format!("recorded {}, served {}", short(expected), short(actual)),
        )),
    }
}

/// The entries of a `managedFields` array, compared as a multiset: each recorded entry must
/// be matched by one served entry, in any order. The real server orders entries by operation,
/// then time to the second, then manager; where two writes of a replay fall on either side of
/// a second boundary differently from the recording, `Update` entries come in another order.
/// That is wall-clock timing, which the recording (its times are `<time>`) cannot pin.
fn walk_unordered(
    expected: &[Value],
    actual: &[Value],
    bindings: &mut Bindings,
    path: &str,
) -> Result<(), Difference> {
    if expected.len() != actual.len() {
        return Err(Difference {
            path: path.to_owned(),
            what: format!(
                "{} items recorded, {} served: served {}",
                expected.len(),
                actual.len(),
                short(&Value::Array(actual.to_vec()))
            ),
        });
    }
    let mut used = vec![false; actual.len()];
    if assign(expected, actual, &mut used, bindings) {
        return Ok(());
    }
    // No one-to-one match: report the first recorded entry no served entry matches, with its
    // difference from the served entry at the same place.
    for (i, entry) in expected.iter().enumerate() {
        let matched = actual
            .iter()
            .any(|served| walk(entry, served, &mut bindings.clone(), &mut String::new()).is_ok());
        if !matched {
            let mut at = format!("{path}[{i}]");
            let detail = walk(entry, &actual[i], &mut bindings.clone(), &mut at)
                .err()
                .map_or_else(String::new, |d| format!("; against [{i}]: {d}"));
            return Err(Difference {
                path: format!("{path}[{i}]"),
                what: format!("no served entry matches {}{detail}", short(entry)),
            });
        }
    }
    Err(Difference {
        path: path.to_owned(),
        what: "the entries match, but not one to one".to_owned(),
    })
}

/// Matches each of `expected` with a distinct unused entry of `actual` (backtracking over the
/// few entries a `managedFields` array has), keeping the bindings of the match found.
fn assign(
    expected: &[Value],
    actual: &[Value],
    used: &mut [bool],
    bindings: &mut Bindings,
) -> bool {
    let Some((first, rest)) = expected.split_first() else {
        return true;
    };
    for j in 0..actual.len() {
        if used[j] {
            continue;
        }
        let mut trial = bindings.clone();
        if walk(first, &actual[j], &mut trial, &mut String::new()).is_err() {
            continue;
        }
        used[j] = true;
        if assign(rest, actual, used, &mut trial) {
            *bindings = trial;
            return true;
        }
        used[j] = false;
    }
    false
}

/// The binding a placeholder match names: `<kind:n>`, or `<apiserver-port>` (one value per
/// file, kept as number 0); None for `<time>`, which binds nothing.
fn key_of(caps: &regex::Captures<'_>) -> Option<(String, u32)> {
    if &caps[0] == "<apiserver-port>" {
        return Some(("apiserver-port".to_owned(), 0));
    }
    let (kind, n) = (caps.get(1)?, caps.get(2)?);
    Some((kind.as_str().to_owned(), n.as_str().parse().ok()?))
}

/// Whether a recorded JSON string is one placeholder for an integer (a port), which stands
/// for a JSON number.
fn stands_for_integer(recorded: &str) -> bool {
    PLACEHOLDER.find(recorded).is_some_and(|m| {
        m.range() == (0..recorded.len())
            && (recorded.starts_with("<allocated-port:") || recorded == "<apiserver-port>")
    })
}

/// Matches a recorded string with placeholders against a served value (a string, or a
/// number where the placeholder stands for an integer).
fn match_text(recorded: &str, actual: &Value, bindings: &mut Bindings) -> Result<(), String> {
    let served = match actual {
        Value::String(s) => s.clone(),
        Value::Number(n) if stands_for_integer(recorded) => n.to_string(),
        other => return Err(format!("recorded {recorded:?}, served {}", short(other))),
    };
    let mut pattern = String::from("^");
    let mut slots = Vec::new();
    let mut last = 0;
    for caps in PLACEHOLDER.captures_iter(recorded) {
        let whole = caps.get(0).expect("group 0 is the match");
        pattern.push_str(&regex::escape(&recorded[last..whole.start()]));
        let kind = caps.get(1).map_or_else(
            || whole.as_str().trim_matches(['<', '>']).to_owned(),
            |k| k.as_str().to_owned(),
        );
        pattern.push('(');
        pattern.push_str(pattern_of(&kind));
        pattern.push(')');
        slots.push(key_of(&caps));
        last = whole.end();
    }
    pattern.push_str(&regex::escape(&recorded[last..]));
    pattern.push('$');
    let re = Regex::new(&pattern).map_err(|e| format!("bad pattern for {recorded:?}: {e}"))?;
    let caps = re
        .captures(&served)
        .ok_or_else(|| format!("recorded {recorded:?}, served {served:?}"))?;
    for (i, slot) in slots.iter().enumerate() {
        if let Some((kind, n)) = slot {
            bindings.bind(kind, *n, &caps[i + 1])?;
        }
    }
    Ok(())
}

/// A value shown in a message, cut to a readable length.
pub fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 160 {
        return text;
    }
    let cut: String = text.chars().take(160).collect();
    format!("{cut}...")
}

/// After a difference: binds what still can be bound where the two values have the same
/// shape, so later steps that quote those values can still be sent. Never fails.
pub fn salvage(expected: &Value, actual: &Value, bindings: &mut Bindings) {
    match (expected, actual) {
        (Value::String(recorded), _) if PLACEHOLDER.is_match(recorded) => {
            let mut trial = bindings.clone();
            if match_text(recorded, actual, &mut trial).is_ok() {
                *bindings = trial;
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                if let Some(served) = a.get(key) {
                    salvage(value, served, bindings);
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            for (ev, av) in e.iter().zip(a) {
                salvage(ev, av, bindings);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_bind_and_must_stay_consistent() {
        let mut b = Bindings::default();
        let recorded =
            json!({"uid": "<uid:1>", "rv": "<rv:1>", "t": "<time>", "m": "UID <uid:1> at <rv:1>"});
        let served = json!({"uid": "0b7c3f0e-1a2b-4c3d-8e9f-0123456789ab", "rv": "17", "t": "2026-01-01T00:00:00Z", "m": "UID 0b7c3f0e-1a2b-4c3d-8e9f-0123456789ab at 17"});
        compare(&recorded, &served, &mut b).unwrap();
        let other = json!({"uid": "0b7c3f0e-1a2b-4c3d-8e9f-0123456789ab", "rv": "18", "t": "2026-01-01T00:00:00Z", "m": "UID 0b7c3f0e-1a2b-4c3d-8e9f-0123456789ab at 18"});
        assert!(compare(&recorded, &other, &mut b).is_err());
        assert_eq!(
            b.substitute("/x?resourceVersion=<rv:1>").unwrap(),
            "/x?resourceVersion=17"
        );
        assert!(b.substitute("<rv:9>").is_err());
    }

    #[test]
    fn different_numbers_need_different_values_and_rvs_keep_their_order() {
        let mut b = Bindings::default();
        compare(&json!(["<rv:1>", "<rv:2>"]), &json!(["5", "9"]), &mut b).unwrap();
        b.check_order().unwrap();
        let mut same = Bindings::default();
        assert!(compare(&json!(["<rv:1>", "<rv:2>"]), &json!(["5", "5"]), &mut same).is_err());
        let mut backwards = Bindings::default();
        compare(
            &json!(["<rv:1>", "<rv:2>"]),
            &json!(["9", "10"]),
            &mut backwards,
        )
        .unwrap();
        backwards.check_order().unwrap();
        let mut wrong = Bindings::default();
        compare(
            &json!(["<rv:1>", "<rv:2>"]),
            &json!(["10", "9"]),
            &mut wrong,
        )
        .unwrap();
        assert!(wrong.check_order().is_err());
    }

    #[test]
    fn objects_compare_as_maps_and_ports_may_be_numbers() {
        let mut b = Bindings::default();
        compare(
            &json!({"a": 1, "b": "<allocated-port:1>"}),
            &json!({"b": 30001, "a": 1}),
            &mut b,
        )
        .unwrap();
        let missing = compare(&json!({"a": 1, "c": 2}), &json!({"a": 1}), &mut b).unwrap_err();
        assert_eq!(missing.path, "");
        assert!(missing.what.contains("missing key \"c\""), "{missing}");
        let nested = compare(
            &json!({"a": {"b": [1, 2]}}),
            &json!({"a": {"b": [1, 3]}}),
            &mut b,
        )
        .unwrap_err();
        assert_eq!(nested.path, ".a.b[1]");
    }

    #[test]
    fn managed_fields_entries_match_in_any_order_one_to_one() {
        let entry = |manager: &str, rv: &str| {
            json!({"manager": manager, "operation": "Update", "time": "<time>",
                "fieldsV1": {"f:metadata": {"f:annotations": {"f:rv": rv}}}})
        };
        let served = |manager: &str, rv: &str| {
            json!({"manager": manager, "operation": "Update", "time": "2026-01-01T00:00:01Z",
                "fieldsV1": {"f:metadata": {"f:annotations": {"f:rv": rv}}}})
        };
        let recorded =
            json!({"metadata": {"managedFields": [entry("a", "<rv:1>"), entry("b", "<rv:2>")]}});
        let swapped = json!({"metadata": {"managedFields": [served("b", "9"), served("a", "5")]}});
        let mut b = Bindings::default();
        compare(&recorded, &swapped, &mut b).unwrap();
        assert_eq!(b.substitute("<rv:1> <rv:2>").unwrap(), "5 9");
        let twice = json!({"metadata": {"managedFields": [served("a", "5"), served("a", "5")]}});
        let missing = compare(&recorded, &twice, &mut Bindings::default()).unwrap_err();
        assert_eq!(missing.path, ".metadata.managedFields[1]");
        assert!(
            missing.what.contains("no served entry matches"),
            "{missing}"
        );
        let fewer = json!({"metadata": {"managedFields": [served("a", "5")]}});
        let short = compare(&recorded, &fewer, &mut Bindings::default()).unwrap_err();
        assert_eq!(short.path, ".metadata.managedFields");
        let other_lists = compare(&json!({"items": [1, 2]}), &json!({"items": [2, 1]}), &mut b);
        assert_eq!(
            other_lists.unwrap_err().path,
            ".items[0]",
            "only managedFields is unordered"
        );
    }

    #[test]
    fn integer_placeholders_are_sent_as_json_numbers_in_json_bodies_only() {
        let mut b = Bindings::default();
        compare(
            &json!({"nodePort": "<allocated-port:2>", "port": "<apiserver-port>", "rv": "<rv:1>"}),
            &json!({"nodePort": 30007, "port": 6443, "rv": "12"}),
            &mut b,
        )
        .unwrap();
        let body = json!({"spec": {"ports": [{"port": 80, "nodePort": "<allocated-port:2>"}],
            "note": "port <allocated-port:2>"}, "metadata": {"resourceVersion": "<rv:1>"},
            "targetPort": "<apiserver-port>"});
        assert_eq!(
            b.substitute_json(&body).unwrap(),
            json!({"spec": {"ports": [{"port": 80, "nodePort": 30007}], "note": "port 30007"},
                "metadata": {"resourceVersion": "12"}, "targetPort": 6443})
        );
        assert_eq!(
            b.substitute("nodePort: <allocated-port:2>").unwrap(),
            "nodePort: 30007"
        );
        assert!(
            b.substitute_json(&json!({"nodePort": "<allocated-port:3>"}))
                .is_err()
        );
    }
}
