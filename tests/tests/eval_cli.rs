//! `mcs-policy eval` and `mcs-policy component` as a user runs them (docs/architecture.md#public-contracts): exit 0
//! whenever a response was produced, non-zero with a message on stderr for unreadable input.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tests::binary;
use tests::fixtures::{AdmissionCase, load};

fn mcs_policy(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(binary("mcs-policy"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcs-policy runs");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn temp(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcs-policy-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn fixture(name: &str) -> AdmissionCase {
    load::<AdmissionCase>("validate")
        .into_iter()
        .chain(load::<AdmissionCase>("mutate"))
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("fixture {name}"))
        .case
}

fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

#[test]
fn eval_validate_answers_a_denied_request_with_exit_zero() {
    let case = fixture("rejects_duplicate_port_names");
    let file = temp("dup.json", &serde_json::to_vec(&case.review).unwrap());
    let out = stdout_json(&mcs_policy(
        &["eval", "validate", file.to_str().unwrap()],
        None,
    ));
    assert_eq!(out["kind"], "AdmissionReview");
    assert_eq!(out["response"]["uid"], case.review["request"]["uid"]);
    assert_eq!(out["response"]["allowed"], false);
    assert_eq!(out["response"]["status"]["code"], 403);
    assert_eq!(out["response"]["status"]["message"], case.expect["message"]);
}

#[test]
fn eval_reads_yaml_from_stdin() {
    let case = fixture("rejects_duplicate_port_names");
    let yaml = serde_yaml::to_string(&case.review).unwrap();
    let out = stdout_json(&mcs_policy(
        &["eval", "validate", "-"],
        Some(yaml.as_bytes()),
    ));
    assert_eq!(out["response"]["status"]["message"], case.expect["message"]);
}

#[test]
fn eval_mutate_prints_a_base64_json_patch() {
    let case = load::<AdmissionCase>("mutate")
        .into_iter()
        .find(|f| f.case.expect["patched"] == Value::Bool(true))
        .expect("a fixture that patches")
        .case;
    let file = temp("mutate.json", &serde_json::to_vec(&case.review).unwrap());
    let out = stdout_json(&mcs_policy(
        &["eval", "mutate", file.to_str().unwrap()],
        None,
    ));
    assert_eq!(out["response"]["allowed"], true);
    assert_eq!(out["response"]["patchType"], "JSONPatch");
    assert!(
        out["response"]["patch"]
            .as_str()
            .is_some_and(|p| !p.is_empty())
    );
}

#[test]
fn eval_applies_the_strict_policy_when_asked() {
    let case = fixture("allows_empty_types_in_compatible_policy");
    let file = temp(
        "empty-types.json",
        &serde_json::to_vec(&case.review).unwrap(),
    );
    let f = file.to_str().unwrap();
    let compatible = stdout_json(&mcs_policy(&["eval", "validate", f], None));
    assert_eq!(compatible["response"]["allowed"], true);
    let strict = stdout_json(&mcs_policy(
        &["eval", "validate", "--policy", "strict", f],
        None,
    ));
    assert_eq!(strict["response"]["allowed"], false);
    assert_eq!(strict["response"]["status"]["code"], 403);
}

#[test]
fn eval_fails_clearly_on_unreadable_input() {
    for (args, stdin, needle) in [
        (
            vec!["eval", "validate", "/nonexistent/request.json"],
            None,
            "/nonexistent/request.json",
        ),
        (
            vec!["eval", "validate", "-"],
            Some(&b"{not json: [unclosed"[..]),
            "neither JSON nor YAML",
        ),
        (
            vec!["eval", "validate", "-"],
            Some(&br#"{"apiVersion":"v1","kind":"Pod"}"#[..]),
            "not a usable AdmissionReview",
        ),
        (
            vec!["eval", "mutate", "-"],
            Some(&b""[..]),
            "AdmissionReview",
        ),
        (
            vec![
                "eval",
                "validate",
                "--policy",
                "/nonexistent/policy.yaml",
                "-",
            ],
            Some(&b"{}"[..]),
            "policy",
        ),
    ] {
        let out = mcs_policy(&args, stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
        assert!(
            stderr.contains(needle),
            "{args:?}: stderr {stderr:?} lacks {needle:?}"
        );
    }
}

#[test]
fn eval_filter_prints_the_copies() {
    let input = load::<tests::fixtures::FilterCase>("filter")
        .into_iter()
        .find(|f| !f.case.expect.is_empty())
        .expect("a filter fixture with copies")
        .case;
    let file = temp("filter.json", &serde_json::to_vec(&input.input).unwrap());
    let out = stdout_json(&mcs_policy(
        &["eval", "filter", file.to_str().unwrap()],
        None,
    ));
    assert_eq!(out, Value::Array(input.expect));
}

#[test]
fn eval_service_prints_the_action() {
    let case = load::<tests::fixtures::ServiceCase>("service")
        .into_iter()
        .find(|f| f.case.expect["action"] == "replace")
        .expect("a service fixture with a replacement")
        .case;
    let file = temp("service.json", &serde_json::to_vec(&case.input).unwrap());
    let out = stdout_json(&mcs_policy(
        &["eval", "service", file.to_str().unwrap()],
        None,
    ));
    assert_eq!(out, case.expect);
}

#[test]
fn eval_load_balancer_prints_the_report_and_refuses_a_malformed_input() {
    for f in load::<tests::fixtures::LoadBalancerCase>("load-balancer") {
        let file = temp(
            &format!("{}.json", f.name),
            &serde_json::to_vec(&f.case.input).unwrap(),
        );
        let out = stdout_json(&mcs_policy(
            &["eval", "load-balancer", file.to_str().unwrap()],
            None,
        ));
        assert_eq!(out, f.case.expect, "{}", f.name);
    }
    let bad = temp(
        "lb-bad.json",
        br#"{"providers": [{"cluster": "m1", "ingress": "lost"}]}"#,
    );
    let out = mcs_policy(&["eval", "load-balancer", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a load-balancer input"), "{stderr}");
}

#[test]
fn eval_decide_and_conclude_print_the_answers_and_refuse_malformed_inputs() {
    for kind in ["decide", "conclude"] {
        for f in load::<Value>(kind) {
            let file = temp(
                &format!("{kind}-{}.json", f.name),
                &serde_json::to_vec(&f.case["input"]).unwrap(),
            );
            let out = stdout_json(&mcs_policy(&["eval", kind, file.to_str().unwrap()], None));
            assert_eq!(out, f.case["expect"], "{kind}/{}", f.name);
        }
        let bad = temp(&format!("{kind}-bad.json"), br#"{"pass": {}, "basis": {}}"#);
        let out = mcs_policy(&["eval", kind, bad.to_str().unwrap()], None);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("is not a {kind} input")),
            "{stderr}"
        );
    }
    // An object that is not a MultiClusterService is an answer (the decode error), not a
    // failure of eval.
    let not_an_mcs = temp(
        "decide-not-an-mcs.json",
        br#"{"pass": {"mcs": "[1, 2]", "template": {"ok": null}}}"#,
    );
    let out = stdout_json(&mcs_policy(
        &["eval", "decide", not_an_mcs.to_str().unwrap()],
        None,
    ));
    assert!(out["err"].as_str().is_some_and(|m| !m.is_empty()), "{out}");
}

/// An `eval clusterset-decide` answer in the shape of a clusterset fixture's `expect`
/// (tests/fixtures/README.md): conditions as `"<status> <reason>"` per type, the ServiceImport
/// status as its cluster ids, applied slices as name, labels and addresses, notes left out.
fn clusterset_summary(answer: &Value) -> Value {
    let Some(d) = answer.get("ok") else {
        return answer.clone();
    };
    let members: Vec<Value> = d["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            let conditions = m["exportConditions"].as_array().map(|list| {
                let by_type: serde_json::Map<String, Value> = list
                    .iter()
                    .map(|c| {
                        let (t, s, r) = (&c["type"], &c["status"], &c["reason"]);
                        let (t, s, r) = (t.as_str(), s.as_str(), r.as_str());
                        (
                            t.unwrap_or_default().to_string(),
                            json!(format!(
                                "{} {}",
                                s.unwrap_or_default(),
                                r.unwrap_or_default()
                            )),
                        )
                    })
                    .collect();
                Value::Object(by_type)
            });
            let status = m["serviceImportStatus"].as_object().map(|s| {
                let ids: Vec<Value> = s["status"]["clusters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["cluster"].clone())
                    .collect();
                Value::Array(ids)
            });
            let slices: Vec<Value> = m["applySlices"]
                .as_array()
                .expect("applySlices")
                .iter()
                .map(|s| {
                    let addresses: Vec<&Value> = s["endpoints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
                        .collect();
                    let labels = s["metadata"].get("labels").cloned().unwrap_or(json!({}));
                    json!({"name": s["metadata"]["name"], "labels": labels, "addresses": addresses})
                })
                .collect();
            json!({
                "cluster": m["cluster"],
                "clusterId": m["clusterId"],
                "conditions": conditions,
                "serviceImport": m["serviceImport"],
                "serviceImportStatus": status,
                "derivedService": m["derivedService"],
                "applySlices": slices,
                "deleteSlices": m["deleteSlices"],
            })
        })
        .collect();
    json!({"ok": {
        "exporters": d["exporters"],
        "winner": d["winner"],
        "conflicts": d["conflicts"],
        "members": members,
    }})
}

#[test]
fn eval_clusterset_decide_answers_every_clusterset_fixture_and_refuses_a_malformed_input() {
    let cases = load::<Value>("clusterset");
    assert!(!cases.is_empty(), "no clusterset fixtures");
    for f in cases {
        let file = temp(
            &format!("clusterset-{}.json", f.name),
            &serde_json::to_vec(&f.case["input"]).unwrap(),
        );
        let out = stdout_json(&mcs_policy(
            &["eval", "clusterset-decide", file.to_str().unwrap()],
            None,
        ));
        if let Some(members) = out["ok"]["members"].as_array() {
            for m in members {
                assert!(m["notes"].is_array(), "{}: notes are printed: {m}", f.name);
            }
        }
        assert_eq!(
            clusterset_summary(&out),
            f.case["expect"],
            "clusterset/{}",
            f.name
        );
    }
    let bad = temp("clusterset-bad.json", br#"{"namespace": "shop"}"#);
    let out = mcs_policy(&["eval", "clusterset-decide", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not a clusterset-decide input"),
        "{stderr}"
    );
    // A ServiceExport that is not JSON of its kind is an answer (the decode error), not a
    // failure of eval.
    let not_an_export = temp(
        "clusterset-not-an-export.json",
        br#"{"namespace": "shop", "name": "web", "now": "2026-11-29T10:00:00Z",
            "members": [{"cluster": "member1", "serviceExport": "[1, 2]"}]}"#,
    );
    let out = stdout_json(&mcs_policy(
        &["eval", "clusterset-decide", not_an_export.to_str().unwrap()],
        None,
    ));
    assert!(out["err"].as_str().is_some_and(|m| !m.is_empty()), "{out}");
}

#[test]
fn component_command_writes_the_embedded_component() {
    let path =
        std::env::temp_dir().join(format!("mcs-policy-component-{}.wasm", std::process::id()));
    let out = mcs_policy(&["component", "--out", path.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, mcs_policy::engine::EMBEDDED_COMPONENT);
    let to_stdout = mcs_policy(&["component", "--out", "-"], None);
    assert_eq!(to_stdout.stdout, bytes);
    std::fs::remove_file(path).ok();
}

#[test]
fn logs_carry_no_colour_codes_when_stderr_is_a_file() {
    let case = fixture("rejects_duplicate_port_names");
    let request = temp("colour.json", &serde_json::to_vec(&case.review).unwrap());
    // A regular file as the cache directory: storing the compiled component fails, which the
    // engine logs as a warning, so there is a log line to look at.
    let not_a_dir = temp("not-a-directory", b"");
    let log = temp("colour.log", b"");
    let status = Command::new(binary("mcs-policy"))
        .args(["eval", "validate", "--cache-dir"])
        .args([&not_a_dir, &request])
        .env_remove("NO_COLOR")
        .env_remove("MCS_POLICY_LOG_FORMAT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .status()
        .expect("mcs-policy runs");
    assert!(status.success(), "exit {status}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("WARN"), "no log line to check: {text:?}");
    assert!(
        !text.contains('\u{1b}'),
        "ANSI escape codes in a log file: {text:?}"
    );
}

#[test]
fn help_explains_every_command() {
    let out = mcs_policy(&["--help"], None);
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["serve", "eval", "manifests", "component"] {
        assert!(help.contains(command), "--help lacks {command}: {help}");
    }
    let out = mcs_policy(&["eval", "--help"], None);
    let help = String::from_utf8_lossy(&out.stdout);
    for command in [
        "validate",
        "mutate",
        "filter",
        "service",
        "load-balancer",
        "decide",
        "conclude",
        "clusterset-decide",
    ] {
        assert!(
            help.contains(command),
            "eval --help lacks {command}: {help}"
        );
    }
}

#[test]
fn serve_refuses_to_start_with_invalid_settings_and_names_the_field() {
    let settings = temp(
        "bad-policy.yaml",
        b"name: mine\nrejectEmptyTypes: true\nrejectRepeatedType: true\n",
    );
    let out = mcs_policy(
        &[
            "serve",
            "--self-signed",
            "--listen",
            "127.0.0.1:0",
            "--policy",
            settings.to_str().unwrap(),
        ],
        None,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rejectRepeatedType") && stderr.contains("bad-policy.yaml"),
        "{stderr}"
    );

    let wrong_type = temp(
        "typed-policy.yaml",
        b"name: mine\nwarnUnregisteredClusters: sometimes\n",
    );
    let out = mcs_policy(
        &[
            "eval",
            "validate",
            "--policy",
            wrong_type.to_str().unwrap(),
            "-",
        ],
        Some(b"{}"),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("warnUnregisteredClusters"));
}

/// Under `--log-format json` the error `serve` and `sync` stop on is a JSON log event like
/// every other line (in the text format: `error: ...`).
#[test]
fn start_up_errors_are_json_under_json_logs() {
    let settings = temp(
        "json-bad-policy.yaml",
        b"name: mine\nrejectEmptyTypes: true\nrejectRepeatedType: true\n",
    );
    let serve = mcs_policy(
        &[
            "serve",
            "--log-format",
            "json",
            "--self-signed",
            "--listen",
            "127.0.0.1:0",
            "--policy",
            settings.to_str().unwrap(),
        ],
        None,
    );
    let sync = mcs_policy(
        &[
            "sync",
            "--log-format",
            "json",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ],
        None,
    );
    for (command, out, names) in [
        (
            "serve",
            &serve,
            settings.file_name().unwrap().to_str().unwrap(),
        ),
        ("sync", &sync, "/nonexistent/kubeconfig"),
    ] {
        assert!(!out.status.success(), "{command} refused to start");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let events: Vec<Value> = stderr
            .lines()
            .chain(stdout.lines())
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{command}: not JSON ({e}): {line}"))
            })
            .collect();
        let error = events
            .iter()
            .find(|e| e["level"] == "ERROR")
            .unwrap_or_else(|| panic!("{command}: no error event in {stderr}"));
        assert!(
            error["fields"]["error"]
                .as_str()
                .is_some_and(|e| e.contains(names)),
            "{command}: {error}"
        );
    }

    // The text format keeps its one line.
    let out = mcs_policy(&["sync", "--kubeconfig", "/nonexistent/kubeconfig"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("error: ") && l.contains("/nonexistent/kubeconfig")),
        "{stderr}"
    );
}
