//! Create, read, update, patch, apply, status and delete through kube-rs typed clients.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{Sim, api_error};

fn service(name: &str, labels: serde_json::Value) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"ports": [{"port": 80}], "selector": {"app": name}},
    }))
    .expect("valid service")
}

fn endpoint_slice(name: &str, service: &str) -> EndpointSlice {
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }))
    .expect("valid endpoint slice")
}

#[tokio::test]
async fn created_objects_get_server_metadata_and_can_be_read_back() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let created = services
        .create(
            &PostParams::default(),
            &service("web", json!({"app": "web"})),
        )
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!(meta.uid.as_ref().map(String::len), Some(36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.generation, Some(1));
    let rv: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();
    let fetched = services.get("web").await.unwrap();
    assert_eq!(fetched.metadata.resource_version, Some(rv.to_string()));
    assert_eq!(fetched.spec, created.spec);
}

#[tokio::test]
async fn create_with_existing_name_is_already_exists() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let status = api_error(
        services
            .create(&PostParams::default(), &service("web", json!({})))
            .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(status.message, "services \"web\" already exists");
}

#[tokio::test]
async fn get_of_a_missing_object_is_not_found() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let status = api_error(services.get("nope").await);
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, "services \"nope\" not found");
    assert!(services.get_opt("nope").await.unwrap().is_none());
}

#[tokio::test]
async fn generate_name_creates_distinct_names_with_the_prefix() {
    let sim = Sim::start().await;
    let slices: Api<EndpointSlice> = Api::namespaced(sim.client().await, "default");
    let mut slice = endpoint_slice("", "web");
    slice.metadata.name = None;
    slice.metadata.generate_name = Some("web-".to_owned());
    let a = slices.create(&PostParams::default(), &slice).await.unwrap();
    let b = slices.create(&PostParams::default(), &slice).await.unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(a.starts_with("web-") && b.starts_with("web-"), "{a} {b}");
    assert_ne!(a, b);
}

#[tokio::test]
async fn list_filters_by_label_and_field_selectors() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    for (name, labels) in [
        ("web", json!({"app": "web", "tier": "front"})),
        ("api", json!({"app": "api", "tier": "back"})),
        ("db", json!({"app": "db"})),
    ] {
        services
            .create(&PostParams::default(), &service(name, labels))
            .await
            .unwrap();
    }
    let names = |list: kube::core::ObjectList<Service>| -> Vec<String> {
        list.items
            .into_iter()
            .map(|s| s.metadata.name.unwrap())
            .collect()
    };
    let cases = [
        ("app=web", vec!["web"]),
        ("app==api", vec!["api"]),
        ("app!=web", vec!["api", "db"]),
        ("tier in (front,back)", vec!["api", "web"]),
        ("tier notin (front)", vec!["api", "db"]),
        ("tier", vec!["api", "web"]),
        ("!tier", vec!["db"]),
        ("app,tier=back", vec!["api"]),
    ];
    for (selector, expected) in cases {
        let listed = services
            .list(&ListParams::default().labels(selector))
            .await
            .unwrap();
        assert_eq!(names(listed), expected, "selector {selector}");
    }
    let by_name = services
        .list(&ListParams::default().fields("metadata.name=db"))
        .await
        .unwrap();
    assert_eq!(names(by_name), vec!["db"]);
    let paged = services
        .list(&ListParams::default().limit(1))
        .await
        .unwrap();
    assert_eq!(
        paged.items.len(),
        3,
        "limit is ignored: one page holds everything"
    );
    assert!(paged.metadata.resource_version.is_some());
}

#[tokio::test]
async fn list_across_all_namespaces_returns_every_namespace() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    for ns in ["east", "west"] {
        let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), ns);
        slices
            .create(&PostParams::default(), &endpoint_slice("web-1", "web"))
            .await
            .unwrap();
    }
    let all: Api<EndpointSlice> = Api::all(client);
    let listed = all
        .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
        .await
        .unwrap();
    let namespaces: Vec<String> = listed
        .items
        .iter()
        .map(|s| s.metadata.namespace.clone().unwrap())
        .collect();
    assert_eq!(namespaces, vec!["east", "west"]);
}

#[tokio::test]
async fn update_with_stale_resource_version_is_conflict() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let created = services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let mut fresh = created.clone();
    fresh.metadata.labels = Some([("v".to_owned(), "2".to_owned())].into());
    let replaced = services
        .replace("web", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    let status = api_error(
        services
            .replace("web", &PostParams::default(), &created)
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on services \"web\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

#[tokio::test]
async fn update_without_resource_version_is_unconditional_and_missing_objects_are_not_found() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let replaced = services
        .replace(
            "web",
            &PostParams::default(),
            &service("web", json!({"v": "2"})),
        )
        .await
        .unwrap();
    assert_eq!(replaced.metadata.labels.unwrap()["v"], "2");
    let status = api_error(
        services
            .replace("gone", &PostParams::default(), &service("gone", json!({})))
            .await,
    );
    assert_eq!(status.code, 404);
}

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
async fn server_side_apply_creates_then_merges_into_the_live_object() {
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
        labels["kubernetes.io/service-name"], "web",
        "maps are merged"
    );
    assert_eq!(labels["extra"], "yes");
    let endpoints = merged.endpoints.clone().unwrap_or_default();
    assert_eq!(endpoints.len(), 1, "lists are replaced");
    assert_eq!(endpoints[0].addresses, vec!["10.0.0.2"]);
    assert_eq!(
        merged.ports.as_ref().map(Vec::len),
        Some(1),
        "fields not applied are kept"
    );
    assert_eq!(merged.metadata.generation, Some(2));
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
async fn apply_without_field_manager_is_a_bad_request() {
    let sim = Sim::start().await;
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).to_string();
    let path = "/api/v1/namespaces/default/configmaps/c";
    let reply = sim
        .request("PATCH", path, "application/apply-patch+yaml", &body)
        .await
        .unwrap();
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["reason"], "BadRequest");
    let reply = sim
        .request(
            "PATCH",
            &format!("{path}?fieldManager=me"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n",
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 201, "YAML apply creates: {}", reply.body);
    assert_eq!(reply.json()["data"]["k"], "v");
}

#[tokio::test]
async fn generation_bumps_only_when_the_spec_changes() {
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
    assert_eq!(relabelled.metadata.generation, Some(1));
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}});
    let with_status = services
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(with_status.metadata.generation, Some(1));
    let spec = json!({"spec": {"ports": [{"port": 8080}]}});
    let respecced = services
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(respecced.metadata.generation, Some(2));
}

#[tokio::test]
async fn status_subresource_writes_touch_only_status() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let mut with_status = service("web", json!({}));
    with_status.status = Some(
        serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}]}})).unwrap(),
    );
    let created = services
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert!(created.status.is_none(), "status is dropped on create");
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
async fn delete_with_finalizers_waits_until_they_are_removed() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    let mut guarded = service("web", json!({}));
    guarded.metadata.finalizers = Some(vec!["example.com/cleanup".to_owned()]);
    services
        .create(&PostParams::default(), &guarded)
        .await
        .unwrap();
    let pending = services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let marked = pending
        .left()
        .expect("deletion is pending while finalizers remain");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(
        services
            .get("web")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let release = json!({"metadata": {"finalizers": null}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert!(
        services.get_opt("web").await.unwrap().is_none(),
        "removed once finalizers are gone"
    );
}

#[tokio::test]
async fn delete_without_finalizers_removes_at_once_and_missing_objects_are_not_found() {
    let sim = Sim::start().await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "default");
    services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let deleted = services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let status = deleted
        .right()
        .expect("immediate deletion answers with a Status");
    assert_eq!(status.details.unwrap().name, "web");
    assert!(services.get_opt("web").await.unwrap().is_none());
    let status = api_error(services.delete("web", &DeleteParams::default()).await);
    assert_eq!(status.code, 404);
}

#[tokio::test]
async fn leases_and_namespaces_round_trip() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let listed: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    assert!(
        listed.contains(&"default".to_owned()) && listed.contains(&"kube-system".to_owned()),
        "{listed:?}"
    );
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "prod"}})).unwrap();
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    let leases: Api<Lease> = Api::namespaced(client, "prod");
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})).unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();
    let mut taken = leases.get("leader").await.unwrap();
    taken.spec.as_mut().unwrap().holder_identity = Some("b".to_owned());
    let replaced = leases
        .replace("leader", &PostParams::default(), &taken)
        .await
        .unwrap();
    assert_eq!(replaced.spec.unwrap().holder_identity.as_deref(), Some("b"));
    assert_eq!(replaced.metadata.generation, Some(2));
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
async fn delete_collection_removes_only_selected_objects() {
    let sim = Sim::start().await;
    let slices: Api<EndpointSlice> = Api::namespaced(sim.client().await, "default");
    for (name, service) in [("a-1", "a"), ("a-2", "a"), ("b-1", "b")] {
        slices
            .create(&PostParams::default(), &endpoint_slice(name, service))
            .await
            .unwrap();
    }
    let selected = ListParams::default().labels("kubernetes.io/service-name=a");
    let deleted = slices
        .delete_collection(&DeleteParams::default(), &selected)
        .await
        .unwrap();
    assert_eq!(deleted.left().expect("the deleted objects").items.len(), 2);
    let left: Vec<String> = slices
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.metadata.name.unwrap())
        .collect();
    assert_eq!(left, vec!["b-1"]);
}

#[tokio::test]
async fn every_builtin_resource_accepts_create_get_and_delete() {
    let sim = Sim::start().await;
    let resources = [
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {}}),
        ),
        (
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event", "reason": "Tested"}),
        ),
        (
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "dg=="}}),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}),
        ),
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace"}),
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4", "endpoints": []}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {}}),
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/default/events",
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "reason": "Tested"}),
        ),
    ];
    for (collection, mut body) in resources {
        body["metadata"] = json!({"name": "probe"});
        let created = sim
            .request("POST", collection, "application/json", &body.to_string())
            .await
            .unwrap();
        assert_eq!(created.status, 201, "{collection}: {}", created.body);
        let fetched = sim.get(&format!("{collection}/probe")).await;
        assert_eq!(fetched.status, 200, "{collection}");
        assert_eq!(fetched.json()["kind"], body["kind"]);
        let deleted = sim
            .request(
                "DELETE",
                &format!("{collection}/probe"),
                "application/json",
                "",
            )
            .await
            .unwrap();
        assert_eq!(deleted.status, 200, "{collection}");
        assert_eq!(
            sim.get(&format!("{collection}/probe")).await.status,
            404,
            "{collection}"
        );
    }
}
