//! Create, read, update and delete through kube-rs typed clients.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::fixtures::{endpoint_slice, service};
use crate::support::{Sim, api_error};

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
    assert_eq!(meta.generation, None, "Services have no generation");
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
    // Not `default`, which holds the `kubernetes` Service.
    sim.create_namespace("shop").await;
    let services: Api<Service> = Api::namespaced(sim.client().await, "shop");
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
    assert_eq!(names(paged.clone()), vec!["api"]);
    assert_eq!(paged.metadata.remaining_item_count, Some(2));
    let mut pages = vec![names(paged.clone())];
    let mut token = paged.metadata.continue_;
    while let Some(next) = token.filter(|t| !t.is_empty()) {
        let page = services
            .list(&ListParams::default().limit(1).continue_token(&next))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version, paged.metadata.resource_version,
            "every page shows the first page's state"
        );
        token = page.metadata.continue_.clone();
        pages.push(names(page));
    }
    assert_eq!(pages, vec![vec!["api"], vec!["db"], vec!["web"]]);
}

#[tokio::test]
async fn list_across_all_namespaces_returns_every_namespace() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    for ns in ["east", "west"] {
        sim.create_namespace(ns).await;
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
    let client = sim.client().await;
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    slices
        .create(&PostParams::default(), &endpoint_slice("web-1", "web"))
        .await
        .unwrap();
    let deleted = slices
        .delete("web-1", &DeleteParams::default())
        .await
        .unwrap();
    let status = deleted
        .right()
        .expect("an EndpointSlice deletion answers with a Status");
    assert_eq!(status.details.unwrap().name, "web-1");
    assert!(slices.get_opt("web-1").await.unwrap().is_none());
    let status = api_error(slices.delete("web-1", &DeleteParams::default()).await);
    assert_eq!(status.code, 404);

    // The Service registry returns the deleted object instead (ReturnDeletedObject).
    let services: Api<Service> = Api::namespaced(client, "default");
    services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .unwrap();
    let deleted = services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let last = deleted
        .left()
        .expect("a Service deletion answers with the object");
    assert!(
        last.metadata.deletion_timestamp.is_none(),
        "removed, not pending"
    );
    assert!(services.get_opt("web").await.unwrap().is_none());
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
    // Leases have no generation.
    assert_eq!(replaced.metadata.generation, None);
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
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}}),
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
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "reason": "Tested",
                "type": "Normal", "action": "Test", "eventTime": "2024-01-01T00:00:00.000000Z",
                "reportingController": "kube-sim/tests", "reportingInstance": "tests-0",
            }),
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
        let after = sim.get(&format!("{collection}/probe")).await;
        if collection == "/api/v1/namespaces" {
            // No namespace controller: a deleted namespace stays Terminating.
            assert_eq!(after.json()["status"]["phase"], "Terminating");
        } else {
            assert_eq!(after.status, 404, "{collection}");
        }
    }
}

#[tokio::test]
async fn a_put_creates_a_missing_lease_but_updates_need_a_resource_version() {
    let sim = Sim::start().await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/leader";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-01T00:00:00Z"}});
    let created = sim
        .request("PUT", path, "application/json", &lease.to_string())
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    let created = created.json();
    assert_eq!(created["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z");
    assert!(created["metadata"].get("generation").is_none());
    let again = sim
        .request("PUT", path, "application/json", &lease.to_string())
        .await
        .unwrap();
    assert_eq!(again.status, 422, "{}", again.body);
    assert_eq!(
        again.json()["message"],
        "leases.coordination.k8s.io \"leader\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
}
