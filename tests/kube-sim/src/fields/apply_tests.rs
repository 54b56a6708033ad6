use super::*;
use crate::fields::builtin_context;
use serde_json::json;

fn slices() -> TypeContext {
    builtin_context("discovery.k8s.io", "EndpointSlice", "discovery.k8s.io/v1")
}

fn slice(labels: Value, ports: Value) -> Value {
    let mut slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "s"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": ports});
    if labels.as_object().is_some_and(|l| !l.is_empty()) {
        slice["metadata"]["labels"] = labels;
    }
    slice
}

fn run(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApiError> {
    let request = Apply {
        part: Part::Main,
        live,
        config,
        manager,
        force,
        now,
    };
    apply(&slices(), &request)
}

fn entry<'v>(obj: &'v Value, manager: &str) -> &'v Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["manager"] == manager))
        .unwrap_or(&Value::Null)
}

#[test]
fn the_applied_fields_become_the_appliers_and_atomic_lists_are_single_fields() {
    let config = slice(json!({"a": "1"}), json!([{"port": 80}]));
    let created = run(None, &config, "mgr", false, "T1").unwrap();
    assert_eq!(
        entry(&created, "mgr"),
        &json!({"manager": "mgr", "operation": "Apply", "apiVersion": "discovery.k8s.io/v1", "time": "T1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:addressType": {}, "f:endpoints": {}, "f:ports": {},
            "f:metadata": {"f:labels": {"f:a": {}}}}})
    );
    assert_eq!(created["ports"], json!([{"port": 80}]));
}

#[test]
fn a_changed_field_of_another_applier_conflicts_unless_forced() {
    let live = run(
        None,
        &slice(json!({}), json!([{"port": 80}])),
        "first",
        false,
        "T1",
    )
    .unwrap();
    let other = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "s"}, "addressType": "IPv4", "ports": [{"port": 90}]});
    let error = run(Some(&live), &other, "second", false, "T2").unwrap_err();
    assert_eq!(error.code, 409);
    assert_eq!(
        error.message,
        "Apply failed with 1 conflict: conflict with \"first\": .ports"
    );
    let forced = run(Some(&live), &other, "second", true, "T2").unwrap();
    assert_eq!(
        entry(&forced, "second")["fieldsV1"],
        json!({"f:addressType": {}, "f:ports": {}})
    );
    assert_eq!(
        entry(&forced, "first")["fieldsV1"],
        json!({"f:addressType": {}, "f:endpoints": {}})
    );
    assert_eq!(forced["ports"], json!([{"port": 90}]));
}

#[test]
fn fields_no_longer_applied_go_unless_another_manager_owns_them() {
    let live = run(
        None,
        &slice(json!({"a": "1", "b": "2"}), json!([])),
        "mgr",
        false,
        "T1",
    )
    .unwrap();
    let mut with_other = live.clone();
    with_other["metadata"]["labels"]["b"] = json!("2");
    let fewer = slice(json!({}), json!([]));
    let applied = run(Some(&live), &fewer, "mgr", false, "T2").unwrap();
    assert!(applied["metadata"].get("labels").is_none(), "{applied}");
    let shared = run(
        Some(&live),
        &slice(json!({"b": "2"}), json!([])),
        "other",
        false,
        "T2",
    )
    .unwrap();
    let dropped = run(Some(&shared), &fewer, "mgr", false, "T3").unwrap();
    assert_eq!(
        dropped["metadata"]["labels"],
        json!({"b": "2"}),
        "b is still other's"
    );
}

#[test]
fn reapplying_the_same_configuration_changes_nothing() {
    let config = slice(json!({"a": "1"}), json!([]));
    let live = run(None, &config, "mgr", false, "T1").unwrap();
    let again = run(Some(&live), &config, "mgr", false, "T2").unwrap();
    assert_eq!(again, live);
}

#[test]
fn the_configuration_must_be_of_the_type_and_carry_no_managed_fields() {
    let mut config = slice(json!({}), json!([]));
    config["kind"] = json!("Service");
    config["apiVersion"] = json!("v1");
    let error = run(None, &config, "mgr", false, "T1").unwrap_err();
    assert_eq!(error.message, "invalid object type: /v1, Kind=Service");
    let untyped = json!({"metadata": {"name": "s"}});
    assert_eq!(
        run(None, &untyped, "mgr", false, "T1").unwrap_err().message,
        "invalid object type: /, Kind="
    );
    let mut managed = slice(json!({}), json!([]));
    managed["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        run(None, &managed, "mgr", false, "T1").unwrap_err().code,
        400
    );
}
