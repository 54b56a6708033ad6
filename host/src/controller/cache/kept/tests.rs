use serde_json::json;

use super::*;

#[test]
fn copies_of_one_slice_share_what_they_have_in_common_and_keep_their_identity() {
    let copy = |name: &str, uid: &str, address: &str, ready: Option<bool>| {
        let mut conditions = json!({});
        if let Some(ready) = ready {
            conditions["ready"] = json!(ready);
        }
        slice(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "shop", "uid": uid,
                    "resourceVersion": "3",
                    "labels": {"kubernetes.io/service-name": "web", "source": "m1"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [address], "conditions": conditions}],
            }))
            .unwrap(),
        )
    };
    let in_m2 = copy("m1-web-1", "u2", "10.0.0.1", Some(true));
    let in_m3 = copy("m1-web-1", "u3", "10.0.0.1", Some(true));
    assert!(Arc::ptr_eq(&in_m2.shared, &in_m3.shared));
    assert_eq!((in_m2.uid(), in_m3.uid()), (Some("u2"), Some("u3")));
    let other_address = copy("m1-web-1", "u4", "10.0.0.2", Some(true));
    assert!(!Arc::ptr_eq(&in_m2.shared, &other_address.shared));
    assert_eq!(
        other_address.to_slice().endpoints.unwrap()[0].addresses,
        ["10.0.0.2"]
    );
    // Empty conditions and none have the same content digest, but a copy carries what
    // the slice has: they are not shared.
    let empty = copy("m1-web-1", "u5", "10.0.0.1", None);
    let mut none_json = serde_json::to_value(empty.to_slice()).unwrap();
    none_json["endpoints"][0]
        .as_object_mut()
        .unwrap()
        .remove("conditions");
    let none = slice(serde_json::from_value(none_json).unwrap());
    assert_eq!(empty.facts(), none.facts());
    assert!(!Arc::ptr_eq(&empty.shared, &none.shared));
}

#[test]
fn a_cached_slice_keeps_what_a_pass_reads_and_its_delete_preconditions() {
    let full = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "namespace": "shop", "uid": "u", "resourceVersion": "7",
            "generation": 3, "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"kubernetes.io/service-name": "web", "a": "1"},
            "annotations": {"a": "b"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "s"}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}]},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "zone": "a"}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http"}]
    });
    let decoded: EndpointSlice = serde_json::from_value(full.clone()).unwrap();
    let kept = slice(serde_json::from_value(full).unwrap());
    assert_eq!(kept.facts(), &convert::slice_facts(&decoded));
    assert_eq!(kept.label("kubernetes.io/service-name"), Some("web"));
    assert_eq!(kept.label("a"), Some("1"));
    assert_eq!(kept.label("b"), None);
    assert_eq!((kept.name(), kept.namespace()), ("web-1", "shop"));
    assert_eq!(
        (kept.uid(), kept.resource_version()),
        (Some("u"), Some("7"))
    );
    let back = kept.to_slice();
    assert_eq!(back.endpoints, decoded.endpoints);
    assert_eq!(back.ports, decoded.ports);
    assert_eq!(back.metadata.labels, decoded.metadata.labels);
    assert_eq!(back.metadata.annotations, decoded.metadata.annotations);
    assert_eq!(back.metadata.owner_references, None);
    assert_eq!(back.metadata.managed_fields, None);
    let copy = SliceCopy {
        source: 0,
        name: "m1-web-1".into(),
        labels: vec![("l".into(), "v".into())],
        annotations: Vec::new(),
        ports: vec![0],
    };
    assert_eq!(
        kept.copy_of(&copy).unwrap(),
        convert::copy_slice(&copy, &decoded).unwrap(),
        "a copy of the kept slice is the copy of the slice"
    );
}

#[test]
fn a_cached_service_loses_only_its_managed_fields() {
    let s: Service = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop", "finalizers": ["x"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "spec": {"ports": [{"port": 80}]}
    }))
    .unwrap();
    let mut expected = s.clone();
    expected.metadata.managed_fields = None;
    let kept = service(s);
    assert_eq!(kept.decode().unwrap(), expected);
    assert_eq!(kept.name(), "web");
    assert!(!kept.json().contains("managedFields"));
}
