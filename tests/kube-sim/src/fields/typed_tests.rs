use super::*;
use crate::fields::builtin;
use crate::fields::fieldsv1::encode;
use serde_json::json;

fn service_shape() -> &'static Shape {
    &builtin::lookup("", "Service").unwrap().shape
}

#[test]
fn built_in_objects_are_seen_as_go_encodes_them() {
    let slice = builtin::lookup("discovery.k8s.io", "EndpointSlice").unwrap();
    let typed = normalize(
        &json!({"metadata": {"name": "s", "labels": {}}, "addressType": "IPv4", "bogus": 1}),
        &slice.shape,
    );
    assert_eq!(
        typed,
        json!({"metadata": {"name": "s", "creationTimestamp": null}, "addressType": "IPv4", "endpoints": null, "ports": null}),
        "empty omitempty maps and undeclared fields go; nil lists stay as null"
    );
    let service = normalize(
        &json!({"spec": {"clusterIP": "", "ipFamilyPolicy": ""}}),
        service_shape(),
    );
    assert_eq!(
        service["spec"],
        json!({"ipFamilyPolicy": ""}),
        "pointers keep their zero value"
    );
    assert_eq!(
        service["status"],
        json!({"loadBalancer": {}}),
        "struct fields always exist"
    );
}

#[test]
fn an_applied_configuration_owns_its_leaves_items_and_map_keys() {
    let config = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"selector": {"app": "x"},
        "ports": [{"port": 80, "protocol": "TCP"}]}});
    let set = to_field_set(&config, service_shape()).unwrap();
    assert_eq!(
        encode(&set),
        json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:selector": {},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}}}})
    );
}

#[test]
fn comparing_marks_containers_that_appear_but_not_those_always_there() {
    let before = normalize(&json!({}), service_shape());
    let after = normalize(
        &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}}),
        service_shape(),
    );
    let c = compare(&before, &after, service_shape()).unwrap();
    assert_eq!(
        encode(&c.changed()),
        json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {"f:type": {},
            "f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {},
                "f:targetPort": {}}}}}),
        "targetPort (an IntOrString) is always encoded"
    );
    assert!(c.removed.is_empty());
}

#[test]
fn a_changed_key_removes_one_item_and_adds_another() {
    let shape = service_shape();
    let before = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "http"}]}});
    let after = json!({"spec": {"ports": [{"port": 81, "protocol": "TCP", "name": "http"}]}});
    let c = compare(&normalize(&before, shape), &normalize(&after, shape), shape).unwrap();
    let item = |port: u16| json!(format!("k:{{\"port\":{port},\"protocol\":\"TCP\"}}"));
    let removed = encode(&c.removed);
    assert!(removed["f:spec"]["f:ports"][item(80).as_str().unwrap()]["f:name"].is_object());
    assert!(encode(&c.added)["f:spec"]["f:ports"][item(81).as_str().unwrap()]["."].is_object());
    assert!(c.modified.is_empty());
}

#[test]
fn a_list_map_item_without_its_key_uses_the_key_default_or_fails() {
    let ports = service_shape()
        .child("f:spec")
        .unwrap()
        .child("f:ports")
        .unwrap();
    let Shape::List(_, kind) = ports else {
        panic!("a list")
    };
    assert_eq!(
        item_element(&json!({"port": 53}), kind).unwrap(),
        r#"k:{"port":53,"protocol":"TCP"}"#
    );
    assert!(item_element(&json!({"name": "x"}), kind).is_err());
}
