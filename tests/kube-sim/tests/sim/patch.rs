//! Patches (merge, JSON, server-side apply), the status subresource and generation, through
//! kube-rs typed clients.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::fixtures::{endpoint_slice, service};
use crate::support::{Sim, api_error};

#[tokio::test]
async fn merge_and_json_patches_change_the_object() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    services
        .create(
            &PostParams::default(),
            &service("web", json!({"app": "web", "old": "x"})),
        )
        .await
        .unwrap();
    let merge = json!({"metadata": {"labels": {"old": null, "new": "y"}}, "spec": {"ports": [{"port": 81}]}});
    let merged = services
        .patch("web", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .unwrap();
    let labels = merged.metadata.labels.clone().unwrap();
    assert_eq!(
        (labels.get("old"), labels.get("new").map(String::as_str)),
        (None, Some("y"))
    );
    assert_eq!(
        merged.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port,
        81
    );
    let operations: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/labels/new", "value": "y"},
        {"op": "replace", "path": "/metadata/labels/new", "value": "z"},
        {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
    ]))
    .unwrap();
    let patched = services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Json::<()>(operations),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["new"], "z");
    assert_eq!(patched.metadata.annotations.unwrap()["a"], "b");
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/metadata/name", "value": "other"}]))
            .unwrap();
    let status = api_error(
        services
            .patch("web", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await,
    );
    assert_eq!(status.code, 422);
}

#[tokio::test]
async fn merge_patch_with_stale_resource_version_is_conflict() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let stale = json!({"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}});
    let status = api_error(
        services
            .patch("web", &PatchParams::default(), &Patch::Merge(&stale))
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
}

#[tokio::test]
async fn server_side_apply_creates_then_merges_by_field_ownership() {
    let sim = Sim::start().await;
    let slices: Api<EndpointSlice> = Api::namespaced(sim.client().await, "default");
    let params = PatchParams::apply("mgr").force();
    let applied = slices
        .patch(
            "web-1",
            &params,
            &Patch::Apply(endpoint_slice("web-1", "web")),
        )
        .await
        .unwrap();
    assert_eq!(applied.metadata.generation, Some(1));
    let managed = applied.metadata.managed_fields.clone().unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(
        (
            managed[0].manager.as_deref(),
            managed[0].operation.as_deref()
        ),
        (Some("mgr"), Some("Apply"))
    );
    let other = json!({"metadata": {"labels": {"other": "kept"}}});
    slices
        .patch("web-1", &PatchParams::default(), &Patch::Merge(&other))
        .await
        .unwrap();
    let update = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "labels": {"extra": "yes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.2"]}],
    });
    let merged = slices
        .patch("web-1", &params, &Patch::Apply(&update))
        .await
        .unwrap();
    let labels = merged.metadata.labels.clone().unwrap();
    assert_eq!(
        labels.keys().map(String::as_str).collect::<Vec<_>>(),
        ["extra", "other"],
        "the label mgr stopped applying is gone, another manager's stays"
    );
    let endpoints = merged.endpoints.clone().unwrap_or_default();
    assert_eq!(endpoints.len(), 1, "atomic lists are replaced");
    assert_eq!(endpoints[0].addresses, vec!["10.0.0.2"]);
    assert_eq!(
        merged.ports, None,
        "ports mgr no longer applies are removed"
    );
    let again = slices
        .patch("web-1", &params, &Patch::Apply(&update))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version, merged.metadata.resource_version,
        "a no-op apply writes nothing"
    );
}

#[tokio::test]
async fn applying_a_field_another_manager_owns_conflicts_unless_forced() {
    let sim = Sim::start().await;
    let slices: Api<EndpointSlice> = Api::namespaced(sim.client().await, "default");
    let first = PatchParams::apply("first");
    slices
        .patch(
            "web-1",
            &first,
            &Patch::Apply(endpoint_slice("web-1", "web")),
        )
        .await
        .unwrap();
    let ports = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1"}, "addressType": "IPv4", "ports": [{"port": 9090}]});
    let status = api_error(
        slices
            .patch(
                "web-1",
                &PatchParams::apply("second"),
                &Patch::Apply(&ports),
            )
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"first\": .ports"
    );
    let forced = slices
        .patch(
            "web-1",
            &PatchParams::apply("second").force(),
            &Patch::Apply(&ports),
        )
        .await
        .unwrap();
    assert_eq!(forced.ports.unwrap()[0].port, Some(9090));
}

#[tokio::test]
async fn apply_without_field_manager_is_invalid() {
    let sim = Sim::start().await;
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).to_string();
    let path = "/api/v1/namespaces/default/configmaps/c";
    let reply = sim
        .request("PATCH", path, "application/apply-patch+yaml", &body)
        .await
        .unwrap();
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json()["details"]["kind"], "PatchOptions");
    let reply = sim
        .request(
            "PATCH",
            &format!("{path}?fieldManager=me"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n",
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 201, "YAML apply creates: {}", reply.body);
    assert_eq!(reply.json()["data"]["k"], "v");
}

#[tokio::test]
async fn services_have_no_generation_whatever_changes() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let relabel = json!({"metadata": {"labels": {"a": "b"}}});
    let relabelled = services
        .patch("web", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    assert_eq!(relabelled.metadata.generation, None);
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}});
    let with_status = services
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(with_status.metadata.generation, None);
    let spec = json!({"spec": {"ports": [{"port": 8080}]}});
    let respecced = services
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(respecced.metadata.generation, None);
}

#[tokio::test]
async fn status_subresource_writes_touch_only_status() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let mut with_status = service("web", json!({}));
    // A LoadBalancer: updates of other types clear `status.loadBalancer`, as Kubernetes does.
    if let Some(spec) = with_status.spec.as_mut() {
        spec.type_ = Some("LoadBalancer".to_owned());
    }
    with_status.status = Some(
        serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}]}})).unwrap(),
    );
    let created = services
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    let status = created.status.unwrap();
    assert!(
        status.load_balancer.unwrap().ingress.is_none(),
        "the client's status is replaced by an empty one on create"
    );
    let patch = json!({"spec": {"ports": [{"port": 1}]}, "status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}});
    let patched = services
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(
        patched.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port,
        80,
        "spec untouched"
    );
    let ip = |s: &Service| {
        s.status
            .clone()
            .unwrap()
            .load_balancer
            .unwrap()
            .ingress
            .unwrap()[0]
            .ip
            .clone()
            .unwrap()
    };
    assert_eq!(ip(&patched), "1.1.1.1");
    let mut replacement = patched.clone();
    replacement.status = Some(
        serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "2.2.2.2"}]}})).unwrap(),
    );
    let replaced = services
        .replace_status("web", &PostParams::default(), &replacement)
        .await
        .unwrap();
    assert_eq!(ip(&replaced), "2.2.2.2");
    let mut main_update = replaced.clone();
    main_update.status = Some(serde_json::from_value(json!({"loadBalancer": {}})).unwrap());
    let updated = services
        .replace("web", &PostParams::default(), &main_update)
        .await
        .unwrap();
    assert_eq!(
        ip(&updated),
        "2.2.2.2",
        "main-resource updates ignore status"
    );
    assert_eq!(ip(&services.get_status("web").await.unwrap()), "2.2.2.2");
}

#[tokio::test]
async fn unchanged_updates_keep_the_resource_version() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let created = services
        .create(&PostParams::default(), &service("web", json!({"a": "b"})))
        .await
        .unwrap();
    let same = json!({"metadata": {"labels": {"a": "b"}}});
    let patched = services
        .patch("web", &PatchParams::default(), &Patch::Merge(&same))
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.resource_version,
        created.metadata.resource_version
    );
}

#[tokio::test]
async fn merge_patches_giving_a_field_the_wrong_type_are_refused_as_go_decodes_them() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    let slices: Api<EndpointSlice> = Api::namespaced(client, "default");
    slices
        .create(&PostParams::default(), &endpoint_slice("web-1", "web"))
        .await
        .unwrap();
    let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/web-1";
    let patch = |body: serde_json::Value| {
        let sim = &sim;
        async move {
            let reply = sim
                .request(
                    "PATCH",
                    path,
                    "application/merge-patch+json",
                    &body.to_string(),
                )
                .await
                .unwrap();
            (reply.status, reply.json())
        }
    };
    let (status, body) = patch(json!({"ports": [{"port": "http"}]})).await;
    assert_eq!(status, 422, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{\\\"addressType\\\":"),
        "the merged object, keys sorted where the patch merged: {message}"
    );
    assert!(
        message.ends_with("\\\"ports\\\":[{\\\"port\\\":\\\"http\\\"}]}\": json: cannot unmarshal string into Go struct field EndpointPort.ports.port of type int32"),
        "{message}"
    );
    assert_eq!(body["details"]["causes"][0]["field"], "patch");
    assert!(body["details"].get("kind").is_none(), "{body}");
    let (status, body) = patch(json!({"metadata": {"creationTimestamp": "yesterday"}})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().ends_with(
            ": parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""
        ),
        "{body}"
    );
    // Nothing was written; a well-typed patch still applies.
    let (status, body) = patch(json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(status, 200, "{body}");
}
