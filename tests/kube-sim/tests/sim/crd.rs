//! CustomResourceDefinitions: creating one serves its resource, discovery finds it, and
//! objects behave like built-in ones (status subresource, scope).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

use crate::support::{Sim, api_error};

fn crd(group: &str, plural: &str, kind: &str, scope: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "scope": scope,
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}},
            }],
        },
    }))
    .expect("valid CRD")
}

fn mcs_crd() -> CustomResourceDefinition {
    crd(
        "networking.karmada.io",
        "multiclusterservices",
        "MultiClusterService",
        "Namespaced",
    )
}

fn mcs_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("networking.karmada.io", "v1alpha1", "MultiClusterService");
    ApiResource::from_gvk_with_plural(&gvk, "multiclusterservices")
}

fn mcs(name: &str) -> DynamicObject {
    let mut obj = DynamicObject::new(name, &mcs_resource());
    obj.data = json!({"spec": {"types": ["CrossCluster"], "ports": [{"port": 80}]}});
    obj
}

async fn create_crd(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
) -> CustomResourceDefinition {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), crd)
        .await
        .expect("CRD created")
}

#[tokio::test]
async fn created_crds_are_established_and_serve_their_resource() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    let created = create_crd(&client, &mcs_crd()).await;
    // The create answers the CRD as stored, before its controllers accept the names.
    let status = created.status.unwrap();
    assert_eq!(status.conditions, None);
    assert_eq!(status.stored_versions, Some(vec!["v1alpha1".to_owned()]));
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let established = crds
        .get("multiclusterservices.networking.karmada.io")
        .await
        .unwrap();
    let conditions = established.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True"),
        "{conditions:?}"
    );
    let objects: Api<DynamicObject> = Api::namespaced_with(client, "default", &mcs_resource());
    let stored = objects
        .create(&PostParams::default(), &mcs("web"))
        .await
        .unwrap();
    assert_eq!(stored.metadata.generation, Some(1));
    assert_eq!(
        stored.types.as_ref().unwrap().api_version,
        "networking.karmada.io/v1alpha1"
    );
    let fetched = objects.get("web").await.unwrap();
    assert_eq!(fetched.data["spec"]["types"], json!(["CrossCluster"]));
    let listed = objects.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let with_status = objects
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["conditions"][0]["type"], "Ready");
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status writes keep the generation"
    );
    let spec = json!({"spec": {"types": ["LoadBalancer"]}, "status": {"ignored": true}});
    let respecced = objects
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(respecced.metadata.generation, Some(2));
    assert_eq!(
        respecced.data["status"]["conditions"][0]["type"], "Ready",
        "main writes keep the status"
    );
}

#[tokio::test]
async fn discovery_finds_custom_resources() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    create_crd(&client, &mcs_crd()).await;
    let discovery = Discovery::new(client).run().await.expect("discovery runs");
    assert!(discovery.has_group("discovery.k8s.io"));
    let gvk = GroupVersionKind::gvk("networking.karmada.io", "v1alpha1", "MultiClusterService");
    let (resource, capabilities) = discovery
        .resolve_gvk(&gvk)
        .expect("the CRD's kind is discovered");
    assert_eq!(resource.plural, "multiclusterservices");
    assert_eq!(capabilities.scope, Scope::Namespaced);
    assert!(
        capabilities
            .subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status"),
        "{:?}",
        capabilities.subresources
    );
    let slices = GroupVersionKind::gvk("discovery.k8s.io", "v1", "EndpointSlice");
    assert!(discovery.resolve_gvk(&slices).is_some());
}

#[tokio::test]
async fn cluster_scoped_custom_resources_have_no_namespace() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    create_crd(
        &client,
        &crd("cluster.karmada.io", "clusters", "Cluster", "Cluster"),
    )
    .await;
    let gvk = GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clusters");
    let clusters: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut member = DynamicObject::new("member1", &resource);
    member.data = json!({"spec": {"apiEndpoint": "https://member1"}});
    let created = clusters
        .create(&PostParams::default(), &member)
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace, None);
    let namespaced = sim
        .get("/apis/cluster.karmada.io/v1alpha1/namespaces/default/clusters")
        .await;
    assert_eq!(namespaced.status, 404);
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    clusters
        .patch_status("member1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_crd_stops_serving_its_resource() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    create_crd(&client, &mcs_crd()).await;
    let objects: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &mcs_resource());
    objects
        .create(&PostParams::default(), &mcs("web"))
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    crds.delete(
        "multiclusterservices.networking.karmada.io",
        &DeleteParams::default(),
    )
    .await
    .unwrap();
    let status = api_error(objects.list(&ListParams::default()).await);
    assert_eq!(status.code, 404);
    let groups: Value = sim.get("/apis").await.json();
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["name"] != "networking.karmada.io")
    );
}

#[tokio::test]
async fn invalid_crds_are_rejected() {
    let sim = Sim::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(sim.client().await);
    let mut wrong = mcs_crd();
    wrong.metadata.name = Some("wrong.example.com".to_owned());
    let status = api_error(crds.create(&PostParams::default(), &wrong).await);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
}

/// The product's MultiClusterService CRD, as `policies/crds` ships it.
fn product_mcs_crd() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../policies/crds/networking.karmada.io_multiclusterservices.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn custom_resources_are_pruned_validated_and_refuse_strategic_merge_patches() {
    let sim = Sim::start().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let created = sim
        .request(
            "POST",
            crds,
            "application/json",
            &product_mcs_crd().to_string(),
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    let collection = "/apis/networking.karmada.io/v1alpha1/namespaces/default/multiclusterservices";
    let bogus = json!({"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
        "metadata": {"name": "web"}, "spec": {"types": ["CrossCluster"], "bogus": 1}});
    let reply = sim
        .request("POST", collection, "application/json", &bogus.to_string())
        .await
        .unwrap();
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["spec"], json!({"types": ["CrossCluster"]}));
    assert_eq!(
        reply.header("warning"),
        Some("299 - \"unknown field \\\"spec.bogus\\\"\"")
    );
    let wrong = json!({"metadata": {"name": "bad"}, "spec": {"types": "CrossCluster"}});
    let reply = sim
        .request("POST", collection, "application/json", &wrong.to_string())
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.body);
    let smp = sim
        .request(
            "PATCH",
            &format!("{collection}/web"),
            "application/strategic-merge-patch+json",
            "{}",
        )
        .await
        .unwrap();
    assert_eq!(smp.status, 415, "{}", smp.body);
}

#[tokio::test]
async fn events_written_through_one_api_are_read_through_the_other() {
    let sim = Sim::start().await;
    let event = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.1"},
        "eventTime": "2026-01-01T00:00:00Z", "action": "Reconcile", "reason": "Synced", "note": "n",
        "type": "Normal", "reportingController": "mcs-policy", "reportingInstance": "mcs-policy-0",
        "regarding": {"kind": "MultiClusterService", "namespace": "default", "name": "web"},
    });
    let created = sim
        .request(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/default/events",
            "application/json",
            &event.to_string(),
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.json()["eventTime"], "2026-01-01T00:00:00.000000Z");
    let core = sim
        .get("/api/v1/namespaces/default/events/web.1")
        .await
        .json();
    assert_eq!(core["message"], "n");
    assert_eq!(core["involvedObject"]["name"], "web");
    assert_eq!(core["reportingComponent"], "mcs-policy");
    assert_eq!(core["firstTimestamp"], Value::Null);
    // Selected by the fields of each API, listed and watched in each API's form.
    let collection = "/apis/events.k8s.io/v1/namespaces/default/events";
    for (selector, count) in [
        ("regarding.name=web,reportingController=mcs-policy", 1),
        ("regarding.name=other", 0),
    ] {
        let list = sim
            .get(&format!("{collection}?fieldSelector={selector}"))
            .await;
        assert_eq!(list.status, 200, "{}", list.body);
        let items = list.json()["items"].as_array().unwrap().clone();
        assert_eq!(items.len(), count, "{selector}: {}", list.body);
        if let Some(item) = items.first() {
            assert_eq!(item["regarding"]["name"], "web");
            assert_eq!(item["note"], "n");
        }
    }
    let core_list = sim
        .get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=web")
        .await
        .json();
    assert_eq!(core_list["items"][0]["message"], "n");
    let watch = sim
        .get(&format!(
            "{collection}?watch=1&fieldSelector=regarding.name=web&timeoutSeconds=1"
        ))
        .await;
    let events = watch.events();
    assert_eq!(events[0]["type"], "ADDED", "{}", watch.body);
    assert_eq!(events[0]["object"]["apiVersion"], "events.k8s.io/v1");
    assert_eq!(events[0]["object"]["regarding"]["name"], "web");
}
