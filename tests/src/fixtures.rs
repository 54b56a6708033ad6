//! Loading the fixtures in `tests/fixtures/` (format: tests/fixtures/README.md).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One fixture file, with its name for messages.
#[derive(Debug)]
pub struct Fixture<T> {
    pub name: String,
    pub path: PathBuf,
    pub case: T,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCase {
    pub description: String,
    #[serde(default)]
    pub policy: Option<String>,
    #[serde(default)]
    pub context: Option<Value>,
    pub review: Value,
    pub expect: Value,
}

#[derive(Debug, Deserialize)]
pub struct FilterCase {
    pub description: String,
    pub input: Value,
    pub expect: Vec<Value>,
}

#[derive(Debug, Deserialize)]
pub struct ServiceCase {
    pub description: String,
    pub input: Value,
    pub expect: Value,
}

/// A `load-balancer` case: `input` is what `mcs-policy eval load-balancer` reads, `expect` what
/// it prints.
#[derive(Debug, Deserialize)]
pub struct LoadBalancerCase {
    pub description: String,
    pub input: Value,
    pub expect: Value,
}

/// A `decide` case: `input` is what `mcs-policy eval decide` reads (`pass`, `settings`), `expect`
/// what it prints (`{"ok": decision}` or `{"err": message}`).
#[derive(Debug, Deserialize)]
pub struct DecideCase {
    pub description: String,
    pub input: Value,
    pub expect: Value,
}

/// A `conclude` case: `input` is what `mcs-policy eval conclude` reads (`basis`, `failures`,
/// `current`, `reported`), `expect` what it prints.
#[derive(Debug, Deserialize)]
pub struct ConcludeCase {
    pub description: String,
    pub input: Value,
    pub expect: Value,
}

impl ServiceCase {
    /// `input.template` as the text to pass: a string is the text itself, anything else its JSON.
    pub fn template(&self) -> String {
        text(&self.input["template"]).unwrap_or_else(|| "null".to_string())
    }

    /// `input.existing` as the text to pass; absent or `null` = none.
    pub fn existing(&self) -> Option<String> {
        self.input.get("existing").and_then(text)
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Checks a `service` answer (as `mcs-policy eval service` prints it) against a service
/// fixture's `expect`; returns the problems found (empty = pass).
pub fn check_service(got: &Value, expect: &Value) -> Vec<String> {
    let action = expect["action"].as_str().unwrap_or_default();
    if action != "error" && action != "conflict" {
        return if got == expect {
            Vec::new()
        } else {
            vec![format!("got {got}, want {expect}")]
        };
    }
    let part = expect["messageContains"].as_str().unwrap_or_default();
    match (got["action"].as_str(), got["message"].as_str()) {
        (Some(got_action), Some(message)) if got_action == action && message.contains(part) => {
            Vec::new()
        }
        _ => vec![format!(
            "got {got}, want {action} with a message containing {part:?}"
        )],
    }
}

/// All fixtures of one kind (`validate`, `mutate`, `filter`, `service`, `load-balancer`,
/// `decide`, `conclude`), sorted by name.
pub fn load<T: for<'de> Deserialize<'de>>(kind: &str) -> Vec<Fixture<T>> {
    let dir = crate::workspace_root().join("tests/fixtures").join(kind);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures in {}", dir.display());
    paths.into_iter().map(|path| read(&path)).collect()
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Fixture<T> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let case = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Fixture {
        name: path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        path: path.to_path_buf(),
        case,
    }
}

/// Checks a response AdmissionReview (as JSON) against a validate/mutate `expect`; returns the
/// problems found (empty = pass).
pub fn check_response(response: &Value, expect: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let r = &response["response"];
    let same = |problems: &mut Vec<String>, what: &str, got: &Value, want: &Value| {
        if got != want {
            problems.push(format!("{what}: got {got}, want {want}"));
        }
    };
    same(&mut problems, "allowed", &r["allowed"], &expect["allowed"]);
    if let Some(code) = expect.get("code") {
        same(&mut problems, "status.code", &r["status"]["code"], code);
    }
    if let Some(reason) = expect.get("reason") {
        same(
            &mut problems,
            "status.reason",
            &r["status"]["reason"],
            reason,
        );
    }
    if let Some(message) = expect.get("message") {
        same(
            &mut problems,
            "status.message",
            &r["status"]["message"],
            message,
        );
    }
    if let Some(part) = expect.get("messageContains").and_then(Value::as_str) {
        let msg = r["status"]["message"].as_str().unwrap_or_default();
        if !msg.contains(part) {
            problems.push(format!("status.message {msg:?} does not contain {part:?}"));
        }
    }
    if expect["allowed"] == Value::Bool(true) && r["status"].get("message").is_some() {
        problems.push(format!(
            "allowed response carries a message: {}",
            r["status"]["message"]
        ));
    }
    let warnings = r.get("warnings").cloned().unwrap_or(Value::Array(vec![]));
    let want_warnings = expect
        .get("warnings")
        .cloned()
        .unwrap_or(Value::Array(vec![]));
    same(&mut problems, "warnings", &warnings, &want_warnings);
    problems
}

/// True for a lower-case 8-4-4-4-12 UUID.
pub fn is_lower_uuid(s: &str) -> bool {
    let lens: Vec<usize> = s.split('-').map(str::len).collect();
    lens == [8, 4, 4, 4, 12]
        && s.chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
}
