//! Every fixture in tests/fixtures through the embedded component, by the same code path as
//! `mcs-policy eval` and the webhook (review parsing → engine → response builder); the service,
//! load-balancer, decide, conclude and clusterset fixtures also through the guest compiled
//! natively.

use std::time::Duration;

use base64::Engine as _;
use differential::{Answer, Call};
use mcs_policy::engine::types::ServiceAction;
use mcs_policy::engine::{EngineOptions, PolicyEngine};
use mcs_policy::eval::{
    ConcludeArgs, conclude_answer, conclude_input, conclude_json, decide_answer, decide_input,
    decide_json, filter_json, load_balancer_answer, load_balancer_input, load_balancer_json,
    service_answer, service_json,
};
use mcs_policy::settings::{ContextFile, load_policy};
use mcs_policy::webhook::review::{mutation_response, parse_review, validation_response};
use serde_json::Value;
use tests::fixtures::{
    AdmissionCase, ConcludeCase, DecideCase, FilterCase, LoadBalancerCase, ServiceCase,
    check_response, check_service, is_lower_uuid, load,
};

const BUDGET: Duration = Duration::from_secs(5);
const ID_LABEL: &str = "multiclusterservice.karmada.io/permanent-id";

fn engine() -> PolicyEngine {
    PolicyEngine::embedded(EngineOptions::default()).expect("embedded component loads")
}

fn respond(engine: &PolicyEngine, case: &AdmissionCase, mutate: bool) -> Value {
    let policy =
        load_policy(case.policy.as_deref().unwrap_or("karmada-compatible")).expect("policy");
    let context: ContextFile = case
        .context
        .clone()
        .map(|c| serde_json::from_value(c).expect("fixture context"))
        .unwrap_or_default();
    let body = serde_json::to_vec(&case.review).expect("review serializes");
    let review = parse_review(&body).expect("fixture review parses");
    let out = if mutate {
        mutation_response(
            &review,
            engine
                .mutate(&review.request, &policy.settings, BUDGET)
                .expect("engine"),
        )
    } else {
        let ctx = context.for_object(&review.namespace, &review.name);
        validation_response(
            &review,
            engine
                .validate(&review.request, &policy.settings, &ctx, BUDGET)
                .expect("engine"),
        )
    };
    serde_json::to_value(out).expect("response serializes")
}

#[test]
fn every_validate_fixture_gets_the_expected_answer() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<AdmissionCase>("validate");
    for f in &cases {
        let response = respond(&engine, &f.case, false);
        assert_eq!(
            response["response"]["uid"], f.case.review["request"]["uid"],
            "{}: uid echoed",
            f.name
        );
        for p in check_response(&response, &f.case.expect) {
            failures.push(format!("{}: {p}", f.name));
        }
    }
    assert_all_passed("validate", cases.len(), &failures);
}

/// Applies the response's patch to `request.object` and returns the patched object.
fn patched_object(case: &AdmissionCase, response: &Value) -> Option<Value> {
    let patch = response["response"]["patch"].as_str()?;
    assert_eq!(response["response"]["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .expect("patch is base64");
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).expect("patch is RFC 6902 JSON");
    let mut object = case.review["request"]["object"].clone();
    json_patch::patch(&mut object, &patch).expect("patch applies cleanly to the object as sent");
    Some(object)
}

#[test]
fn every_mutate_fixture_gets_the_expected_patch() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<AdmissionCase>("mutate");
    for f in &cases {
        let expect = &f.case.expect;
        let response = respond(&engine, &f.case, true);
        let r = &response["response"];
        let mut fail = |p: String| failures.push(format!("{}: {p}", f.name));
        if r["allowed"] != expect["allowed"] {
            fail(format!(
                "allowed: got {}, want {}",
                r["allowed"], expect["allowed"]
            ));
        }
        if let Some(code) = expect
            .get("code")
            .filter(|code| &r["status"]["code"] != *code)
        {
            fail(format!(
                "status.code: got {}, want {code}",
                r["status"]["code"]
            ));
        }
        let patched = patched_object(&f.case, &response);
        if let Some(want) = expect
            .get("patched")
            .and_then(Value::as_bool)
            .filter(|want| patched.is_some() != *want)
        {
            fail(format!("patched: got {}, want {want}", patched.is_some()));
        }
        let Some(want_id) = expect.get("permanentId").and_then(Value::as_str) else {
            continue;
        };
        let object = patched.unwrap_or_else(|| f.case.review["request"]["object"].clone());
        let id = object["metadata"]["labels"][ID_LABEL]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if want_id == "uuid" {
            if !is_lower_uuid(&id) {
                fail(format!("permanent id {id:?} is not a lower-case UUID"));
            }
            let again = respond(&engine, &f.case, true);
            if again["response"]["patch"] != response["response"]["patch"] {
                fail("the same request gave a different patch".to_string());
            }
        } else if id != want_id {
            fail(format!("permanent id: got {id:?}, want {want_id:?}"));
        }
    }
    assert_all_passed("mutate", cases.len(), &failures);
}

#[test]
fn every_filter_fixture_gets_the_expected_copies() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<FilterCase>("filter");
    for f in &cases {
        let input = serde_json::to_string(&f.case.input).expect("input serializes");
        let got = filter_json(&engine, &input, &f.name, BUDGET).expect("filter runs");
        let want = Value::Array(f.case.expect.clone());
        if got != want {
            failures.push(format!("{}:\n  got  {got}\n  want {want}", f.name));
        }
    }
    assert_all_passed("filter", cases.len(), &failures);
}

/// The guest's `service`, compiled natively, with its answer as the host's WIT type.
fn native_service(template: &str, existing: Option<&str>) -> Result<ServiceAction, String> {
    guest::service::service(template, existing).map(|action| match action {
        guest::ServiceAction::Unchanged => ServiceAction::Unchanged,
        guest::ServiceAction::Create(json) => ServiceAction::Create(json),
        guest::ServiceAction::Replace(json) => ServiceAction::Replace(json),
        guest::ServiceAction::Recreate(json) => ServiceAction::Recreate(json),
        guest::ServiceAction::Conflict(why) => ServiceAction::Conflict(why),
    })
}

#[test]
fn every_service_fixture_gets_the_expected_action_in_the_component_and_natively() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<ServiceCase>("service");
    for f in &cases {
        let input = serde_json::to_string(&f.case.input).expect("input serializes");
        let component = service_json(&engine, &input, &f.name, BUDGET).expect("service runs");
        let (template, existing) = (f.case.template(), f.case.existing());
        let native = service_answer(native_service(&template, existing.as_deref()));
        for (host, got) in [("component", &component), ("native", &native)] {
            for p in check_service(got, &f.case.expect) {
                failures.push(format!("{} ({host}): {p}", f.name));
            }
        }
        if component != native {
            failures.push(format!(
                "{}: component and native guest differ:\n  {component}\n  {native}",
                f.name
            ));
        }
    }
    assert_all_passed("service", cases.len(), &failures);
}

#[test]
fn new_permanent_ids_differ_between_requests() {
    let engine = engine();
    let cases = load::<AdmissionCase>("mutate");
    let case = cases
        .iter()
        .find(|f| f.case.expect.get("permanentId").and_then(Value::as_str) == Some("uuid"))
        .expect("a fixture that gets a new id");
    let mut other = AdmissionCase {
        description: String::new(),
        policy: None,
        context: None,
        review: case.case.review.clone(),
        expect: Value::Null,
    };
    other.review["request"]["uid"] = Value::String("11111111-2222-3333-4444-555555555555".into());
    let a = respond(&engine, &case.case, true);
    let b = respond(&engine, &other, true);
    assert_ne!(
        a["response"]["patch"], b["response"]["patch"],
        "ids must come from the request uid"
    );
}

#[test]
fn every_load_balancer_fixture_gets_the_expected_status_in_the_component_and_natively() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<LoadBalancerCase>("load-balancer");
    for f in &cases {
        let input = serde_json::to_string(&f.case.input).expect("input serializes");
        let component =
            load_balancer_json(&engine, &input, &f.name, BUDGET).expect("load-balancer runs");
        let (providers, current) = load_balancer_input(&input, &f.name).expect("input parses");
        let Answer::LoadBalancerStatus(report) =
            differential::native(&Call::LoadBalancerStatus { providers, current })
        else {
            unreachable!("a load-balancer call answers with a report")
        };
        let native = load_balancer_answer(report);
        for (host, got) in [("component", &component), ("native", &native)] {
            if got != &f.case.expect {
                failures.push(format!(
                    "{} ({host}):\n  got  {got}\n  want {}",
                    f.name, f.case.expect
                ));
            }
        }
    }
    assert_all_passed("load-balancer", cases.len(), &failures);
}

/// `got` against `want` for the component and the native guest; the problems, named.
fn compare(name: &str, answers: [(&str, &Value); 2], want: &Value) -> Vec<String> {
    answers
        .into_iter()
        .filter(|(_, got)| *got != want)
        .map(|(host, got)| format!("{name} ({host}):\n  got  {got}\n  want {want}"))
        .collect()
}

#[test]
fn every_decide_fixture_gets_the_expected_decision_in_the_component_and_natively() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<DecideCase>("decide");
    for f in &cases {
        let input = serde_json::to_string(&f.case.input).expect("input serializes");
        let component = decide_json(&engine, &input, &f.name, BUDGET).expect("decide runs");
        let args = decide_input(&input, &f.name).expect("input parses");
        let Answer::Decide(decision) = differential::native(&Call::Decide {
            pass: args.pass,
            settings: args.settings,
            slices: Box::new(args.slices.clone()),
        }) else {
            unreachable!("a decide call answers with a decision")
        };
        let native = decide_answer(decision.map(|d| *d), &args.slices).expect("copies made");
        failures.extend(compare(
            &f.name,
            [("component", &component), ("native", &native)],
            &f.case.expect,
        ));
    }
    assert_all_passed("decide", cases.len(), &failures);
}

#[test]
fn every_conclude_fixture_gets_the_expected_status_update_in_the_component_and_natively() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<ConcludeCase>("conclude");
    for f in &cases {
        let input = serde_json::to_string(&f.case.input).expect("input serializes");
        let component = conclude_json(&engine, &input, &f.name, BUDGET).expect("conclude runs");
        let ConcludeArgs {
            basis,
            failures: written,
            current,
            reported,
        } = conclude_input(&input, &f.name).expect("input parses");
        let Answer::Conclude(update) = differential::native(&Call::Conclude {
            basis: Box::new(basis),
            failures: written,
            current,
            reported,
        }) else {
            unreachable!("a conclude call answers with a status update")
        };
        let native = conclude_answer(update);
        failures.extend(compare(
            &f.name,
            [("component", &component), ("native", &native)],
            &f.case.expect,
        ));
    }
    assert_all_passed("conclude", cases.len(), &failures);
}

/// The pass's two calls chain as the controller chains them: the `status` a decide fixture
/// prints is a conclude `basis` as it is, and conclude's `reported` is its next `reported`.
#[test]
fn a_decide_answers_status_is_a_conclude_basis_and_a_second_identical_pass_is_quiet() {
    let engine = engine();
    let case = load::<DecideCase>("decide")
        .into_iter()
        .find(|f| f.name == "a_consumer_gets_copies_of_another_providers_slices")
        .expect("the decide fixture");
    let input = serde_json::to_string(&case.case.input).unwrap();
    let decision = decide_json(&engine, &input, &case.name, BUDGET).unwrap();
    let conclude = |current: Value, reported: &Value| {
        let input = serde_json::json!({
            "basis": decision["ok"]["status"],
            "current": current,
            "reported": reported,
        });
        conclude_json(&engine, &input.to_string(), "chained", BUDGET).unwrap()
    };
    let now = |t: &str| serde_json::json!({"conditions": [], "generation": 1, "now": t});
    let first = conclude(now("2024-05-01T10:00:00Z"), &Value::Null);
    let want = load::<ConcludeCase>("conclude")
        .into_iter()
        .find(|f| f.name == "a_first_pass_sets_every_condition_and_reports_it_once")
        .expect("the conclude fixture")
        .case
        .expect;
    assert_eq!(
        first, want,
        "a successful CrossCluster pass concludes as the fixture says"
    );
    let mut again = now("2024-05-01T10:00:30Z");
    again["conditions"] = first["conditions"].clone();
    let second = conclude(again, &first["reported"]);
    assert_eq!(second["conditions"], Value::Null, "{second}");
    assert_eq!(second["events"], serde_json::json!([]), "{second}");
    assert_eq!(second["reported"], first["reported"]);
}

#[test]
fn every_clusterset_fixture_gets_the_expected_decision_in_the_component_and_natively() {
    let engine = engine();
    let mut failures = Vec::new();
    let cases = load::<DecideCase>("clusterset");
    for f in &cases {
        let read = tests::clusterset::read_input(&f.case.input);
        let component = tests::clusterset::summary(
            &engine
                .clusterset_decide(&read, BUDGET)
                .expect("clusterset-decide runs"),
        );
        let Answer::ClustersetDecide(decision) = differential::native(&Call::ClustersetDecide {
            read: Box::new(read),
        }) else {
            unreachable!("a clusterset-decide call answers with a decision")
        };
        let native = tests::clusterset::summary(&decision.map(|d| *d));
        failures.extend(compare(
            &f.name,
            [("component", &component), ("native", &native)],
            &f.case.expect,
        ));
    }
    assert_all_passed("clusterset", cases.len(), &failures);
}

/// Fails with every failure of the `total` fixtures of `kind`, if any.
fn assert_all_passed(kind: &str, total: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {total} {kind} fixtures failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
