use super::*;
use crate::fields::builtin;
use crate::fields::set::path as p;
use serde_json::json;

fn service() -> &'static Shape {
    &builtin::lookup("", "Service").unwrap().shape
}

#[test]
fn list_map_items_merge_by_key_and_atomic_values_are_replaced() {
    let live = json!({"spec": {"selector": {"a": "1", "b": "2"}, "ports": [
        {"port": 80, "protocol": "TCP", "name": "http"}, {"port": 443, "protocol": "TCP"}]}});
    let applied = json!({"spec": {"selector": {"c": "3"}, "ports": [
        {"port": 443, "protocol": "TCP", "name": "https"}, {"port": 8080, "protocol": "TCP"}]}});
    let merged = merge(Some(&live), Some(&applied), service())
        .unwrap()
        .unwrap();
    assert_eq!(
        merged["spec"]["selector"],
        json!({"c": "3"}),
        "the selector is atomic"
    );
    assert_eq!(
        merged["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP", "name": "http"},
            {"port": 443, "protocol": "TCP", "name": "https"}, {"port": 8080, "protocol": "TCP"}])
    );
}

#[test]
fn shared_items_follow_the_applied_order() {
    let live = json!({"spec": {"ports": [{"port": 1, "protocol": "TCP"}, {"port": 2, "protocol": "TCP"}]}});
    let applied = json!({"spec": {"ports": [{"port": 2, "protocol": "TCP"}, {"port": 1, "protocol": "TCP"}]}});
    let merged = merge(Some(&live), Some(&applied), service())
        .unwrap()
        .unwrap();
    assert_eq!(merged["spec"]["ports"], applied["spec"]["ports"]);
}

#[test]
fn removing_items_drops_members_and_emptied_containers() {
    let value = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"ports": [
        {"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]}});
    let mut set = FieldSet::new();
    set.insert(&p(&["f:metadata", "f:labels", "f:a"]));
    set.insert(&p(&[
        "f:spec",
        "f:ports",
        r#"k:{"port":80,"protocol":"TCP"}"#,
    ]));
    let kept = remove_items(&value, &set, service()).unwrap();
    assert_eq!(
        kept,
        json!({"spec": {"ports": [{"port": 81, "protocol": "TCP"}]}})
    );
}

#[test]
fn pruning_removes_what_the_applier_gave_up_unless_someone_owns_it() {
    let merged =
        json!({"metadata": {"name": "s", "labels": {"mine": "1", "theirs": "2", "dropped": "3"}}});
    let mut last = FieldSet::new();
    for label in ["mine", "theirs", "dropped"] {
        last.insert(&p(&["f:metadata", "f:labels", &format!("f:{label}")]));
    }
    let mut owned = FieldSet::new();
    owned.insert(&p(&["f:metadata", "f:name"]));
    owned.insert(&p(&["f:metadata", "f:labels", "f:mine"]));
    owned.insert(&p(&["f:metadata", "f:labels", "f:theirs"]));
    let pruned = prune(Some(merged), &last, &owned, service())
        .unwrap()
        .unwrap();
    assert_eq!(
        pruned["metadata"]["labels"],
        json!({"mine": "1", "theirs": "2"})
    );
    assert_eq!(pruned["metadata"]["name"], "s");
}

#[test]
fn named_fields_with_members_below_become_members() {
    let mut set = FieldSet::new();
    set.insert(&p(&["f:metadata", "f:labels", "f:a"]));
    let ensured = ensure_named(&set, service());
    assert!(ensured.has(&p(&["f:metadata"])));
    assert!(ensured.has(&p(&["f:metadata", "f:labels"])));
    assert!(!ensured.has(&p(&["f:metadata", "f:labels", "f:b"])));
}
