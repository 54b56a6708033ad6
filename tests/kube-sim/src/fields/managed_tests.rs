use super::*;
use crate::fields::set::path as p;
use serde_json::json;

fn entry(manager: &str, operation: &str, time: &str) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": "v1", "time": time,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}})
}

#[test]
fn entries_round_trip_sorted_by_operation_then_time_then_manager() {
    let given = json!([
        entry("b", "Update", "2026-01-01T00:00:02Z"),
        entry("z", "Update", "2026-01-01T00:00:01Z"),
        entry("a", "Update", "2026-01-01T00:00:02Z"),
        entry("x", "Apply", "2026-01-01T00:00:09Z"),
    ]);
    let managed = decode(Some(&given)).unwrap();
    let encoded = encode(&managed).unwrap();
    let order: Vec<&str> = encoded
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["x", "z", "a", "b"]);
    assert_eq!(encoded[0], given[3]);
}

#[test]
fn invalid_entries_are_refused() {
    let mut bad = entry("a", "Patch", "2026-01-01T00:00:00Z");
    assert!(decode(Some(&json!([bad.clone()]))).is_err());
    bad["operation"] = json!("Update");
    bad["fieldsType"] = json!("FieldsV2");
    assert!(decode(Some(&json!([bad]))).is_err());
    assert!(decode(None).unwrap().is_empty());
}

#[test]
fn an_empty_list_or_one_empty_entry_resets() {
    assert!(is_reset(Some(&json!([]))));
    assert!(is_reset(Some(&json!([{}]))));
    assert!(!is_reset(Some(&json!([entry("a", "Update", "x")]))));
    assert!(!is_reset(None));
}

#[test]
fn appliers_are_one_manager_whatever_their_version() {
    let a = ManagerId::new("m", Operation::Apply, "v1", "");
    assert_eq!(a, ManagerId::new("m", Operation::Apply, "v2", ""));
    assert_ne!(
        ManagerId::new("m", Operation::Update, "v1", ""),
        ManagerId::new("m", Operation::Update, "v2", "")
    );
    assert_eq!(a.spelling(), r#"{"manager":"m","operation":"Apply"}"#);
}

#[test]
fn more_than_ten_updaters_merge_the_oldest_into_ancient_changes() {
    let mut managed = Managed::new();
    for i in 0..12 {
        let mut fields = FieldSet::new();
        fields.insert(&p(&["f:data", &format!("f:k{i}")]));
        let time = format!("2026-01-01T00:00:{i:02}Z");
        let id = ManagerId::new(&format!("m{i:02}"), Operation::Update, "v1", "");
        managed.insert(
            id,
            Entry {
                fields,
                api_version: "v1".into(),
                time: Some(time),
            },
        );
    }
    cap_updaters(&mut managed);
    assert_eq!(managed.len(), 10);
    let bucket = &managed[&ManagerId::new("ancient-changes", Operation::Update, "v1", "")];
    assert_eq!(bucket.fields.paths().len(), 3, "m00, m01 and m02 merged");
    assert_eq!(bucket.time.as_deref(), Some("2026-01-01T00:00:02Z"));
}
