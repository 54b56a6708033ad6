use super::*;
use crate::fields::builtin_context;
use crate::fields::fieldsv1::encode;
use serde_json::json;

const T1: &str = "2026-01-01T00:00:01Z";
const T2: &str = "2026-01-01T00:00:02Z";

fn config_maps() -> TypeContext {
    builtin_context("", "ConfigMap", "v1")
}

/// `obj` written by `manager` over `live`, its managedFields recorded.
fn write(ctx: &TypeContext, live: Option<&Value>, obj: Value, manager: &str, now: &str) -> Value {
    let mut obj = obj;
    let managed = track(ctx, Part::Main, live, &mut obj, manager, now);
    record(live, &mut obj, managed);
    obj
}

fn fields_of(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["manager"] == manager))
        .map_or(Value::Null, |e| e["fieldsV1"].clone())
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data})
}

#[test]
fn a_create_owns_what_it_sets_but_not_server_metadata() {
    let created = write(&config_maps(), None, cm(json!({"a": "1"})), "ctl", T1);
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0],
        json!({"manager": "ctl", "operation": "Update", "apiVersion": "v1", "time": T1,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}})
    );
}

#[test]
fn changed_fields_move_to_the_writer_and_others_keep_the_rest() {
    let ctx = config_maps();
    let v1 = write(&ctx, None, cm(json!({"a": "1", "b": "2"})), "first", T1);
    let mut next = v1.clone();
    next["data"]["b"] = json!("changed");
    next["data"]["c"] = json!("3");
    let v2 = write(&ctx, Some(&v1), next, "second", T2);
    assert_eq!(
        fields_of(&v2, "first"),
        json!({"f:data": {".": {}, "f:a": {}}})
    );
    assert_eq!(
        fields_of(&v2, "second"),
        json!({"f:data": {"f:b": {}, "f:c": {}}})
    );
}

#[test]
fn removing_a_list_map_item_its_only_owner_had_drops_the_ownership() {
    let ctx = builtin_context("", "Service", "v1");
    let service = |ports: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": ports}});
    let two = json!([{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]);
    let v1 = write(&ctx, None, service(two), "owner", T1);
    let v2 = write(
        &ctx,
        Some(&v1),
        service(json!([{"port": 80, "protocol": "TCP"}])),
        "remover",
        T2,
    );
    let owned = fields_of(&v2, "owner");
    assert!(owned["f:spec"]["f:ports"]["k:{\"port\":80,\"protocol\":\"TCP\"}"].is_object());
    assert!(owned["f:spec"]["f:ports"]["k:{\"port\":81,\"protocol\":\"TCP\"}"].is_null());
    assert_eq!(
        fields_of(&v2, "remover"),
        Value::Null,
        "a write that only removes owns nothing"
    );
}

#[test]
fn a_manager_losing_every_field_is_dropped() {
    let ctx = config_maps();
    let v1 = write(&ctx, None, cm(json!({"a": "1"})), "first", T1);
    let mut emptied = cm(Value::Null);
    emptied["data"] = json!({});
    let v2 = write(&ctx, Some(&v1), emptied, "second", T2);
    assert!(v2["metadata"].get("managedFields").is_none(), "{v2}");
}

#[test]
fn a_write_that_only_removes_keeps_the_writer_time() {
    let ctx = config_maps();
    let v1 = write(&ctx, None, cm(json!({"a": "1", "b": "2"})), "ctl", T1);
    let v2 = write(&ctx, Some(&v1), cm(json!({"a": "1"})), "ctl", T2);
    let entry = &v2["metadata"]["managedFields"][0];
    assert_eq!(entry["time"], T1);
    assert_eq!(entry["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
}

#[test]
fn a_write_that_changes_nothing_keeps_the_entries_as_they_were() {
    let ctx = config_maps();
    let v1 = write(&ctx, None, cm(json!({"a": "1"})), "ctl", T1);
    let mut same = v1.clone();
    same["metadata"]["managedFields"][0]["time"] = json!("2020-01-01T00:00:00Z");
    let v2 = write(&ctx, Some(&v1), same, "ctl", T2);
    assert_eq!(v2, v1, "the client's times do not count, nothing is new");
}

#[test]
fn client_sent_managed_fields_are_taken_and_an_empty_list_strips_them() {
    let ctx = config_maps();
    let v1 = write(&ctx, None, cm(json!({"a": "1"})), "ctl", T1);
    let mut edited = v1.clone();
    edited["metadata"]["managedFields"][0]["manager"] = json!("renamed");
    edited["data"]["b"] = json!("2");
    let v2 = write(&ctx, Some(&v1), edited, "ctl", T2);
    assert_eq!(
        fields_of(&v2, "renamed"),
        json!({"f:data": {".": {}, "f:a": {}}})
    );
    let mut reset = v2.clone();
    reset["metadata"]["managedFields"] = json!([]);
    reset["data"]["c"] = json!("3");
    let v3 = write(&ctx, Some(&v2), reset, "ctl", T2);
    assert!(
        v3["metadata"].get("managedFields").is_none(),
        "stripped: {v3}"
    );
    let mut untracked = v3.clone();
    untracked["data"]["d"] = json!("4");
    let v4 = write(&ctx, Some(&v3), untracked, "ctl", T2);
    assert!(
        v4["metadata"].get("managedFields").is_none(),
        "updates of an unmanaged object are not tracked"
    );
}

#[test]
fn status_writes_are_recorded_with_their_subresource_and_main_writes_ignore_status() {
    let ctx = builtin_context("", "Service", "v1");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"}});
    let v1 = write(&ctx, None, svc, "ctl", T1);
    let mut with_status = v1.clone();
    with_status["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    let main = write(&ctx, Some(&v1), with_status.clone(), "ctl", T2);
    assert_eq!(
        main["metadata"]["managedFields"],
        v1["metadata"]["managedFields"]
    );
    let mut status = with_status;
    let managed = track(&ctx, Part::Status, Some(&v1), &mut status, "ctl", T2);
    record(Some(&v1), &mut status, managed);
    let entries = status["metadata"]["managedFields"].as_array().unwrap();
    let entry = entries
        .iter()
        .find(|e| e["subresource"] == "status")
        .unwrap();
    assert_eq!(
        entry["fieldsV1"]["f:status"]["f:conditions"]["."],
        json!({})
    );
}

#[test]
fn stripped_fields_are_never_owned() {
    let mut set = FieldSet::new();
    set.insert(&[
        super::super::path::field("metadata"),
        super::super::path::field("uid"),
    ]);
    set.insert(&[super::super::path::field("kind")]);
    assert!(strip_meta(&set).is_empty());
    assert_eq!(encode(&strip_meta(&set)), json!({}));
}
