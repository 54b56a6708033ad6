//! The upstream Multi-Cluster Services API (KEP-1645) as the product ships it: the CRDs of
//! `policies/crds/` (`multicluster.x-k8s.io` ServiceExport and ServiceImport, `about.k8s.io`
//! ClusterProperty) applied to kube-sim, then their objects written and read the way the
//! mcs-api conformance suite (`conformance/*.go`, through the v1beta1 clientset) and a
//! controller do: create, get, list in one namespace and in all, watch, update, status
//! updates, server-side apply, delete, and the CRDs' validation with the real server's 422s.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};

use crate::support::{Reply, Sim, api_error};

const CRDS: [&str; 3] = [
    "multicluster.x-k8s.io_serviceexports.yaml",
    "multicluster.x-k8s.io_serviceimports.yaml",
    "about.k8s.io_clusterproperties.yaml",
];

/// A CRD of `policies/crds/`, as the repository ships it.
fn shipped_crd(file: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../policies/crds")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// A kube-sim with the three CRDs created, each answered 201 and then established.
async fn sim_with_crds() -> Sim {
    let sim = Sim::start().await;
    for file in CRDS {
        let reply = sim
            .request(
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                "application/json",
                &shipped_crd(file).to_string(),
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 201, "{file}: {}", reply.body);
        // The create answers the CRD as stored: v1beta1 the storage version.
        assert_eq!(
            reply.json()["status"]["storedVersions"],
            json!(["v1beta1"]),
            "{file}"
        );
    }
    let crds: Api<CustomResourceDefinition> = Api::all(sim.client().await);
    for name in [
        "serviceexports.multicluster.x-k8s.io",
        "serviceimports.multicluster.x-k8s.io",
        "clusterproperties.about.k8s.io",
    ] {
        let conditions = crds.get(name).await.unwrap().status.unwrap().conditions;
        let established = conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "{name} is established");
    }
    sim
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn service_exports(version: &str) -> ApiResource {
    resource(
        "multicluster.x-k8s.io",
        version,
        "ServiceExport",
        "serviceexports",
    )
}

fn service_imports(version: &str) -> ApiResource {
    resource(
        "multicluster.x-k8s.io",
        version,
        "ServiceImport",
        "serviceimports",
    )
}

/// A ServiceImport as an MCS controller writes it for a ClusterSetIP service.
fn cluster_set_ip_import(name: &str) -> Value {
    json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "type": "ClusterSetIP",
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80},
                {"name": "grpc", "protocol": "TCP", "appProtocol": "kubernetes.io/h2c", "port": 9090},
            ],
            "ips": ["10.42.0.10"],
            "ipFamilies": ["IPv4"],
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
        },
    })
}

fn condition(type_: &str, status: &str, reason: &str) -> Value {
    json!({
        "type": type_, "status": status, "reason": reason, "message": "",
        "lastTransitionTime": "2026-11-29T08:00:00Z", "observedGeneration": 1,
    })
}

async fn post(sim: &Sim, path: &str, body: &Value) -> Reply {
    sim.request("POST", path, "application/json", &body.to_string())
        .await
        .unwrap()
}

#[tokio::test]
async fn discovery_serves_both_versions_v1beta1_preferred_with_short_names_and_scope() {
    let sim = sim_with_crds().await;
    let group = sim.get("/apis/multicluster.x-k8s.io").await.json();
    assert_eq!(
        group["versions"],
        json!([
            {"groupVersion": "multicluster.x-k8s.io/v1beta1", "version": "v1beta1"},
            {"groupVersion": "multicluster.x-k8s.io/v1alpha1", "version": "v1alpha1"},
        ])
    );
    assert_eq!(group["preferredVersion"]["version"], "v1beta1");
    for version in ["v1alpha1", "v1beta1"] {
        let list = sim
            .get(&format!("/apis/multicluster.x-k8s.io/{version}"))
            .await
            .json();
        let names: BTreeMap<String, Value> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["name"].as_str().unwrap().to_owned(), r.clone()))
            .collect();
        assert_eq!(
            names.keys().collect::<Vec<_>>(),
            [
                "serviceexports",
                "serviceexports/status",
                "serviceimports",
                "serviceimports/status"
            ]
        );
        assert_eq!(
            names["serviceexports"]["shortNames"],
            json!(["svcex", "svcexport"])
        );
        assert_eq!(
            names["serviceimports"]["shortNames"],
            json!(["svcim", "svcimport"])
        );
        assert_eq!(names["serviceimports"]["namespaced"], true);
    }
    let discovery = Discovery::new(sim.client().await).run().await.unwrap();
    let gvk = GroupVersionKind::gvk("about.k8s.io", "v1beta1", "ClusterProperty");
    let (found, capabilities) = discovery.resolve_gvk(&gvk).expect("ClusterProperty");
    assert_eq!(found.plural, "clusterproperties");
    assert_eq!(capabilities.scope, Scope::Cluster);
    let about = sim.get("/apis/about.k8s.io/v1beta1").await.json();
    assert_eq!(about["resources"][0]["categories"], json!(["multicluster"]));
}

#[tokio::test]
async fn a_cluster_set_ip_service_import_is_created_read_listed_updated_and_deleted() {
    let sim = sim_with_crds().await;
    sim.create_namespace("shop").await;
    let client = sim.client().await;
    let imports: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "shop", &service_imports("v1beta1"));
    let collection = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
    let created = post(&sim, collection, &cluster_set_ip_import("web")).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = created.json();
    assert_eq!(created["spec"], cluster_set_ip_import("web")["spec"]);
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created.get("status"), None, "no status was written");

    let fetched = imports.get("web").await.unwrap();
    assert_eq!(fetched.data["spec"]["ips"], json!(["10.42.0.10"]));
    assert_eq!(
        fetched.data["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        10800
    );
    // The same object through the other served version (no conversion: the schemas are one).
    let alpha = sim
        .get("/apis/multicluster.x-k8s.io/v1alpha1/namespaces/shop/serviceimports/web")
        .await
        .json();
    assert_eq!(alpha["apiVersion"], "multicluster.x-k8s.io/v1alpha1");
    assert_eq!(alpha["spec"], created["spec"]);

    // Listed in its namespace and across all, as the conformance suite lists.
    let listed = imports.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let everywhere: Api<DynamicObject> = Api::all_with(client.clone(), &service_imports("v1beta1"));
    let all = everywhere.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items[0].metadata.namespace.as_deref(), Some("shop"));

    // A controller's update (PUT with the resourceVersion read) and its status update.
    let mut changed = fetched.clone();
    changed.data["spec"]["ips"] = json!(["10.42.0.10", "fd00::10"]);
    changed.data["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    let updated = imports
        .replace("web", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    let mut with_status = updated.clone();
    with_status.data["status"] = json!({
        "clusters": [{"cluster": "member1"}, {"cluster": "member2"}],
        "conditions": [condition("Ready", "True", "Ready")],
    });
    let status = imports
        .replace_status("web", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(
        status.metadata.generation,
        Some(2),
        "status keeps generation"
    );
    assert_eq!(status.data["status"]["clusters"][1]["cluster"], "member2");
    // A stale resourceVersion is a conflict.
    let stale = api_error(
        imports
            .replace("web", &PostParams::default(), &changed)
            .await,
    );
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        stale.message,
        "Operation cannot be fulfilled on serviceimports.multicluster.x-k8s.io \"web\": the object has been modified; please apply your changes to the latest version and try again"
    );

    imports
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let gone = api_error(imports.get("web").await);
    assert_eq!(gone.code, 404);
    assert_eq!(
        gone.message,
        "serviceimports.multicluster.x-k8s.io \"web\" not found"
    );
}

#[tokio::test]
async fn a_service_export_gets_its_conditions_through_the_status_subresource_only() {
    let sim = sim_with_crds().await;
    sim.create_namespace("shop").await;
    let exports: Api<DynamicObject> =
        Api::namespaced_with(sim.client().await, "shop", &service_exports("v1beta1"));
    // As the conformance suite makes one: a name, a label, an annotation, no spec.
    let mut export = DynamicObject::new("web", &service_exports("v1beta1"));
    export.metadata.labels = Some([("dummy-svcexport".to_owned(), "dummy".to_owned())].into());
    export.metadata.annotations = Some([("dummy-svcexport".to_owned(), "dummy".to_owned())].into());
    export.data = json!({"status": {"conditions": [condition("Valid", "True", "Valid")]}});
    let created = exports
        .create(&PostParams::default(), &export)
        .await
        .unwrap();
    assert_eq!(created.data.get("status"), None, "create drops the status");

    // The controller's conditions: a merge patch of /status, then an update of /status.
    let valid = json!({"status": {"conditions": [condition("Valid", "True", "Valid")]}});
    let patched = exports
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&valid))
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["conditions"][0]["type"], "Valid");
    assert_eq!(patched.metadata.generation, Some(1));
    let mut ready = patched.clone();
    ready.data["status"]["conditions"] = json!([
        condition("Valid", "True", "Valid"),
        condition("Ready", "True", "Exported"),
        condition("Conflict", "False", "NoConflicts"),
    ]);
    let replaced = exports
        .replace_status("web", &PostParams::default(), &ready)
        .await
        .unwrap();
    assert_eq!(
        replaced.data["status"]["conditions"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(replaced.metadata.generation, Some(1));

    // A write to the main resource keeps the status and moves the generation on spec changes.
    let spec = json!({"spec": {"exportedLabels": {"tier": "web"}}, "status": {"conditions": []}});
    let respecced = exports
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(respecced.metadata.generation, Some(2));
    assert_eq!(
        respecced.data["status"]["conditions"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Conditions are a map keyed by type and checked against metav1.Condition's schema.
    let path = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports/web/status";
    let twice = json!({"status": {"conditions": [
        condition("Valid", "True", "Valid"), condition("Valid", "False", "NoService"),
    ]}});
    let reply = sim
        .request(
            "PATCH",
            path,
            "application/merge-patch+json",
            &twice.to_string(),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.json()["message"],
        "ServiceExport.multicluster.x-k8s.io \"web\" is invalid: status.conditions[1]: Duplicate value: {\"type\":\"Valid\"}"
    );
}

#[tokio::test]
async fn service_exports_and_imports_are_watched_in_both_versions() {
    let sim = sim_with_crds().await;
    sim.create_namespace("shop").await;
    let start = sim
        .get("/apis/multicluster.x-k8s.io/v1beta1/serviceexports")
        .await
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let exports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceexports";
    let export = json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
        "metadata": {"name": "web"}});
    assert_eq!(post(&sim, exports, &export).await.status, 201);
    let valid = json!({"status": {"conditions": [condition("Valid", "True", "Valid")]}});
    let reply = sim
        .request(
            "PATCH",
            &format!("{exports}/web/status"),
            "application/merge-patch+json",
            &valid.to_string(),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let deleted = sim
        .request("DELETE", &format!("{exports}/web"), "application/json", "")
        .await
        .unwrap();
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let imports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
    assert_eq!(
        post(&sim, imports, &cluster_set_ip_import("web"))
            .await
            .status,
        201
    );

    // All namespaces, from before the writes, through v1alpha1: the events in order, each
    // object at the version watched.
    let watch = sim
        .get(&format!(
            "/apis/multicluster.x-k8s.io/v1alpha1/serviceexports?watch=1&resourceVersion={start}&timeoutSeconds=1"
        ))
        .await;
    let events = watch.events();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{}", watch.body);
    assert!(
        events
            .iter()
            .all(|e| e["object"]["apiVersion"] == "multicluster.x-k8s.io/v1alpha1")
    );
    assert_eq!(
        events[1]["object"]["status"]["conditions"][0]["reason"],
        "Valid"
    );
    // A streaming list of ServiceImports in the namespace: the one that exists.
    let watch = sim
        .get(&format!("{imports}?watch=1&timeoutSeconds=1"))
        .await;
    let events = watch.events();
    assert_eq!(events.len(), 1, "{}", watch.body);
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["spec"]["type"], "ClusterSetIP");
}

#[tokio::test]
async fn a_service_import_is_server_side_applied_with_field_ownership() {
    let sim = sim_with_crds().await;
    sim.create_namespace("shop").await;
    let imports: Api<DynamicObject> =
        Api::namespaced_with(sim.client().await, "shop", &service_imports("v1beta1"));
    let controller = PatchParams::apply("mcs-policy-sync");
    let applied = imports
        .patch(
            "web",
            &controller,
            &Patch::Apply(cluster_set_ip_import("web")),
        )
        .await
        .unwrap();
    assert_eq!(applied.metadata.generation, Some(1));
    let managed = applied.metadata.managed_fields.clone().unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0].manager.as_deref(), Some("mcs-policy-sync"));
    assert_eq!(managed[0].operation.as_deref(), Some("Apply"));
    assert_eq!(
        managed[0].api_version.as_deref(),
        Some("multicluster.x-k8s.io/v1beta1")
    );

    // The same apply again changes nothing; a changed port list replaces the atomic list.
    let again = imports
        .patch(
            "web",
            &controller,
            &Patch::Apply(cluster_set_ip_import("web")),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        applied.metadata.resource_version
    );
    let mut one_port = cluster_set_ip_import("web");
    one_port["spec"]["ports"] = json!([{"name": "http", "protocol": "TCP", "port": 8080}]);
    let reapplied = imports
        .patch("web", &controller, &Patch::Apply(&one_port))
        .await
        .unwrap();
    assert_eq!(
        reapplied.data["spec"]["ports"],
        json!([{"name": "http", "protocol": "TCP", "port": 8080}])
    );
    assert_eq!(reapplied.metadata.generation, Some(2));

    // Another manager applying the ports the controller owns is a conflict; forced, it wins.
    let other = PatchParams::apply("someone-else");
    let mut theirs = cluster_set_ip_import("web");
    theirs["spec"] = json!({"type": "ClusterSetIP", "ports": [{"port": 81}]});
    let conflict = api_error(imports.patch("web", &other, &Patch::Apply(&theirs)).await);
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        conflict.message,
        "Apply failed with 1 conflict: conflict with \"mcs-policy-sync\": .spec.ports"
    );
    let forced = imports
        .patch("web", &other.force(), &Patch::Apply(&theirs))
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["ports"], json!([{"port": 81}]));

    // Status applied through /status by its own field manager.
    let status = json!({
        "apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
        "metadata": {"name": "web", "namespace": "shop"},
        "status": {"clusters": [{"cluster": "member1"}]},
    });
    let with_status = imports
        .patch_status(
            "web",
            &PatchParams::apply("mcs-policy-sync-status"),
            &Patch::Apply(&status),
        )
        .await
        .unwrap();
    assert_eq!(
        with_status.data["status"]["clusters"],
        json!([{"cluster": "member1"}])
    );
    assert_eq!(with_status.metadata.generation, Some(3));
    let status_manager = with_status
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .find(|m| m.manager.as_deref() == Some("mcs-policy-sync-status"))
        .expect("the status manager's entry");
    assert_eq!(status_manager.subresource.as_deref(), Some("status"));
}

#[tokio::test]
async fn the_crds_refuse_what_the_schemas_refuse_with_the_real_servers_messages() {
    let sim = sim_with_crds().await;
    sim.create_namespace("shop").await;
    let imports = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports";
    let invalid = |name: &str, spec: Value| {
        json!({"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport",
            "metadata": {"name": name}, "spec": spec})
    };
    // Without `type`: the Status the real server answers, cause and all.
    let reply = post(
        &sim,
        imports,
        &invalid("notype", json!({"ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.json(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "ServiceImport.multicluster.x-k8s.io \"notype\" is invalid: spec.type: Required value",
            "reason": "Invalid",
            "details": {"name": "notype", "group": "multicluster.x-k8s.io", "kind": "ServiceImport",
                "causes": [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.type"}]},
            "code": 422,
        })
    );
    for (name, spec, message) in [
        (
            "lb",
            json!({"type": "LoadBalancer", "ports": [{"port": 80}]}),
            "spec.type: Unsupported value: \"LoadBalancer\": supported values: \"ClusterSetIP\", \"Headless\"",
        ),
        (
            "noports",
            json!({"type": "Headless"}),
            "spec.ports: Required value",
        ),
        (
            "threeips",
            json!({"type": "ClusterSetIP", "ports": [{"port": 80}], "ips": ["10.0.0.1", "10.0.0.2", "10.0.0.3"]}),
            "spec.ips: Too many: 3: must have at most 2 items",
        ),
        (
            "noport",
            json!({"type": "ClusterSetIP", "ports": [{"name": "http"}]}),
            "spec.ports[0].port: Required value",
        ),
    ] {
        let reply = post(&sim, imports, &invalid(name, spec)).await;
        assert_eq!(reply.status, 422, "{name}: {}", reply.body);
        assert_eq!(
            reply.json()["message"],
            format!("ServiceImport.multicluster.x-k8s.io \"{name}\" is invalid: {message}"),
            "{name}"
        );
    }
    // Unknown fields are pruned with a warning, as the real server's default does.
    let mut extra = cluster_set_ip_import("extra");
    extra["spec"]["clusterIP"] = json!("10.0.0.1");
    let reply = post(&sim, imports, &extra).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["spec"].get("clusterIP"), None);
    assert_eq!(
        reply.header("warning"),
        Some("299 - \"unknown field \\\"spec.clusterIP\\\"\"")
    );

    // ClusterProperty: cluster-scoped, spec.value required and not empty.
    let properties = "/apis/about.k8s.io/v1beta1/clusterproperties";
    let property = |name: &str, spec: Value| {
        json!({"apiVersion": "about.k8s.io/v1beta1", "kind": "ClusterProperty",
            "metadata": {"name": name}, "spec": spec})
    };
    let reply = post(
        &sim,
        properties,
        &property("cluster.clusterset.k8s.io", json!({"value": "member1"})),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["metadata"].get("namespace"), None);
    let reply = post(
        &sim,
        properties,
        &property("clusterset.k8s.io", json!({"value": ""})),
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.json()["message"],
        "ClusterProperty.about.k8s.io \"clusterset.k8s.io\" is invalid: spec.value: Invalid value: \"\": spec.value in body should be at least 1 chars long"
    );
    let reply = post(&sim, properties, &property("clusterset.k8s.io", json!({}))).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.json()["message"],
        "ClusterProperty.about.k8s.io \"clusterset.k8s.io\" is invalid: spec.value: Required value"
    );
    let namespaced = sim
        .get("/apis/about.k8s.io/v1beta1/namespaces/default/clusterproperties")
        .await;
    assert_eq!(namespaced.status, 404);
}

#[tokio::test]
async fn a_crd_whose_schema_the_apiserver_would_refuse_is_refused() {
    let sim = Sim::start().await;
    // The ServiceImport CRD with its v1beta1 conditions keyed by a `type` no longer required.
    let mut crd = shipped_crd("multicluster.x-k8s.io_serviceimports.yaml");
    let items = &mut crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["status"]
        ["properties"]["conditions"]["items"];
    items["required"] = json!(["lastTransitionTime", "message", "reason", "status"]);
    let reply = post(
        &sim,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    let field = "spec.versions[1].schema.openAPIV3Schema.properties[status].properties[conditions].items.properties[type].default";
    let detail = "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";
    assert_eq!(
        reply.json()["message"],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"serviceimports.multicluster.x-k8s.io\" is invalid: {field}: {detail}"
        )
    );
    assert_eq!(
        reply.json()["details"]["causes"],
        json!([{"reason": "FieldValueRequired", "message": detail, "field": field}])
    );
    // Not served: nothing was stored.
    let served = sim.get("/apis/multicluster.x-k8s.io/v1beta1").await;
    assert_eq!(served.status, 404);
}
