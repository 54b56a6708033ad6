//! Admission webhook configurations (`admissionregistration.k8s.io/v1`): the v1 defaults,
//! generation, validation, optimistic concurrency, delete preconditions and watches, through
//! kube-rs typed clients and raw HTTP.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use crate::support::{Sim, api_error};

const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// One webhook calling the Service `mcs-system/mcs-policy`, as `mcs-policy serve` registers it.
fn webhook(name: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {
            "service": {"namespace": "mcs-system", "name": "mcs-policy", "path": "/validate"},
            "caBundle": "Y2E=",
        },
        "rules": [{
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["networking.karmada.io"],
            "apiVersions": ["v1alpha1"],
            "resources": ["multiclusterservices"],
        }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn validating(name: &str, webhooks: Value) -> ValidatingWebhookConfiguration {
    serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": webhooks})).unwrap()
}

#[tokio::test]
async fn created_configurations_get_the_v1_defaults_and_generation_1() {
    let sim = Sim::start().await;
    let client = sim.client().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let created = configs
        .create(
            &PostParams::default(),
            &validating("mcs-policy", json!([webhook("validate.mcs.karmada.io")])),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.metadata.namespace, None);
    let hook = serde_json::to_value(&created.webhooks.as_ref().unwrap()[0]).unwrap();
    assert_eq!(
        hook,
        json!({
            "name": "validate.mcs.karmada.io",
            "clientConfig": {
                "service": {"namespace": "mcs-system", "name": "mcs-policy", "path": "/validate", "port": 443},
                "caBundle": "Y2E=",
            },
            "rules": [{
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["networking.karmada.io"],
                "apiVersions": ["v1alpha1"],
                "resources": ["multiclusterservices"],
                "scope": "*",
            }],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": ["v1"],
        })
    );
    assert_eq!(configs.get("mcs-policy").await.unwrap(), created);
    let listed = configs.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items, vec![created]);

    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client);
    let body =
        json!({"metadata": {"name": "mcs-policy"}, "webhooks": [webhook("mutate.mcs.karmada.io")]});
    let created = mutating
        .create(
            &PostParams::default(),
            &serde_json::from_value(body).unwrap(),
        )
        .await
        .unwrap();
    let hook = &created.webhooks.unwrap()[0];
    assert_eq!(hook.reinvocation_policy.as_deref(), Some("Never"));
    assert_eq!(hook.timeout_seconds, Some(10));
}

#[tokio::test]
async fn replace_needs_the_live_resource_version() {
    let sim = Sim::start().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(sim.client().await);
    let created = configs
        .create(
            &PostParams::default(),
            &validating("mcs-policy", json!([webhook("validate.mcs.karmada.io")])),
        )
        .await
        .unwrap();
    let mut fresh = created.clone();
    fresh.webhooks.as_mut().unwrap()[0].timeout_seconds = Some(5);
    let replaced = configs
        .replace("mcs-policy", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(replaced.metadata.generation, Some(2));

    let status = api_error(
        configs
            .replace("mcs-policy", &PostParams::default(), &created)
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on validatingwebhookconfigurations.admissionregistration.k8s.io \"mcs-policy\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let mut unconditional = replaced.clone();
    unconditional.metadata.resource_version = None;
    let status = api_error(
        configs
            .replace("mcs-policy", &PostParams::default(), &unconditional)
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "validatingwebhookconfigurations.admissionregistration.k8s.io \"mcs-policy\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
}

#[tokio::test]
async fn generation_moves_only_when_webhooks_change() {
    let sim = Sim::start().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(sim.client().await);
    configs
        .create(
            &PostParams::default(),
            &validating(
                "mcs-policy",
                json!([webhook("a.mcs.karmada.io"), webhook("b.mcs.karmada.io")]),
            ),
        )
        .await
        .unwrap();
    let generation = |c: &ValidatingWebhookConfiguration| c.metadata.generation.unwrap();
    let params = PatchParams::default();

    let labels = json!({"metadata": {"labels": {"app": "mcs-policy"}}});
    let labelled = configs
        .patch("mcs-policy", &params, &Patch::Merge(&labels))
        .await
        .unwrap();
    assert_eq!(generation(&labelled), 1, "metadata changes keep it");

    // Writing the defaults out changes nothing.
    let defaults = json!([{"op": "add", "path": "/webhooks/0/timeoutSeconds", "value": 10}]);
    let same = configs
        .patch(
            "mcs-policy",
            &params,
            &Patch::Json::<()>(serde_json::from_value(defaults).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(generation(&same), 1);
    assert_eq!(
        same.metadata.resource_version,
        labelled.metadata.resource_version
    );

    let timeout = json!([{"op": "replace", "path": "/webhooks/1/timeoutSeconds", "value": 3}]);
    let changed = configs
        .patch(
            "mcs-policy",
            &params,
            &Patch::Json::<()>(serde_json::from_value(timeout).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(generation(&changed), 2);

    // Strategic merge patches merge webhooks by name.
    let strategic = json!({"webhooks": [{"name": "a.mcs.karmada.io", "failurePolicy": "Ignore"}]});
    let merged = configs
        .patch("mcs-policy", &params, &Patch::Strategic(&strategic))
        .await
        .unwrap();
    assert_eq!(generation(&merged), 3);
    let hooks = merged.webhooks.unwrap();
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].failure_policy.as_deref(), Some("Ignore"));
    assert_eq!(hooks[1].timeout_seconds, Some(3));
}

#[tokio::test]
async fn invalid_webhooks_are_refused_with_the_apiservers_messages() {
    let sim = Sim::start().await;
    let mut bad_timeout = webhook("b.mcs.karmada.io");
    bad_timeout["timeoutSeconds"] = json!(31);
    bad_timeout["clientConfig"]["url"] = json!("https://mcs-policy.example:8443/validate");
    let mut no_side_effects = webhook("c.mcs.karmada.io");
    no_side_effects
        .as_object_mut()
        .unwrap()
        .remove("sideEffects");
    no_side_effects["admissionReviewVersions"] = json!([]);
    let mut some = webhook("a.mcs.karmada.io");
    some["sideEffects"] = json!("Some");
    let body = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "mcs-policy"},
        "webhooks": [webhook("mcs-policy"), bad_timeout, no_side_effects, some, webhook("")],
    });
    let reply = sim
        .request("POST", VALIDATING, "application/json", &body.to_string())
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.body);
    let status = reply.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"mcs-policy\" is invalid: [\
         webhooks[0].name: Invalid value: \"mcs-policy\": should be a domain with at least three segments separated by dots, \
         webhooks[1].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds, \
         webhooks[1].clientConfig: Required value: exactly one of url or service is required, \
         webhooks[2].sideEffects: Required value: must specify one of None, NoneOnDryRun, \
         webhooks[2].admissionReviewVersions: Required value: must specify one of v1, v1beta1, \
         webhooks[3].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\", \
         webhooks[4].name: Required value]"
    );
    assert_eq!(
        status["details"],
        json!({
            "name": "mcs-policy",
            "group": "admissionregistration.k8s.io",
            "kind": "ValidatingWebhookConfiguration",
            "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: \"mcs-policy\": should be a domain with at least three segments separated by dots", "field": "webhooks[0].name"},
                {"reason": "FieldValueInvalid", "message": "Invalid value: 31: the timeout value must be between 1 and 30 seconds", "field": "webhooks[1].timeoutSeconds"},
                {"reason": "FieldValueRequired", "message": "Required value: exactly one of url or service is required", "field": "webhooks[1].clientConfig"},
                {"reason": "FieldValueRequired", "message": "Required value: must specify one of None, NoneOnDryRun", "field": "webhooks[2].sideEffects"},
                {"reason": "FieldValueRequired", "message": "Required value: must specify one of v1, v1beta1", "field": "webhooks[2].admissionReviewVersions"},
                {"reason": "FieldValueNotSupported", "message": "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"", "field": "webhooks[3].sideEffects"},
                {"reason": "FieldValueRequired", "message": "Required value", "field": "webhooks[4].name"},
            ],
        })
    );

    let twice = json!({"metadata": {"name": "mcs-policy"}, "webhooks": [webhook("a.mcs.karmada.io"), webhook("a.mcs.karmada.io")]});
    let reply = sim
        .request("POST", VALIDATING, "application/json", &twice.to_string())
        .await
        .unwrap();
    assert_eq!(
        reply.json()["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"mcs-policy\" is invalid: webhooks[1].name: Duplicate value: \"a.mcs.karmada.io\""
    );

    let mut not_base64 = webhook("a.mcs.karmada.io");
    not_base64["clientConfig"]["caBundle"] = json!("not base64!");
    let body = json!({"metadata": {"name": "mcs-policy"}, "webhooks": [not_base64]});
    let reply = sim
        .request("POST", VALIDATING, "application/json", &body.to_string())
        .await
        .unwrap();
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(
        reply.json()["message"],
        "ValidatingWebhookConfiguration in version \"v1\" cannot be handled as a ValidatingWebhookConfiguration: illegal base64 data at input byte 3"
    );
    assert_eq!(sim.get(VALIDATING).await.json()["items"], json!([]));
}

#[tokio::test]
async fn delete_checks_the_uid_precondition() {
    let sim = Sim::start().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(sim.client().await);
    let created = configs
        .create(
            &PostParams::default(),
            &validating("mcs-policy", json!([webhook("validate.mcs.karmada.io")])),
        )
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("00000000-0000-0000-0000-000000000000".to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let status = api_error(configs.delete("mcs-policy", &stale).await);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        format!(
            "Operation cannot be fulfilled on ValidatingWebhookConfiguration.admissionregistration.k8s.io \"mcs-policy\": the UID in the precondition (00000000-0000-0000-0000-000000000000) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    let current = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: created.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    let deleted = configs.delete("mcs-policy", &current).await.unwrap();
    assert!(
        deleted.is_right(),
        "a Status, as the default registry answers"
    );
    assert!(configs.get_opt("mcs-policy").await.unwrap().is_none());
}

#[tokio::test]
async fn watches_see_configurations_added_modified_and_deleted() {
    let sim = Sim::start().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(sim.client().await);
    let list = configs.list(&Default::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let created = configs
        .create(
            &PostParams::default(),
            &validating("mcs-policy", json!([webhook("validate.mcs.karmada.io")])),
        )
        .await
        .unwrap();
    let mut changed = created;
    changed.webhooks.as_mut().unwrap()[0].failure_policy = Some("Ignore".to_owned());
    configs
        .replace("mcs-policy", &PostParams::default(), &changed)
        .await
        .unwrap();
    configs
        .delete("mcs-policy", &DeleteParams::default())
        .await
        .unwrap();
    let events = sim
        .get(&format!(
            "{VALIDATING}?watch=true&resourceVersion={rv}&timeoutSeconds=1"
        ))
        .await
        .events();
    let seen: Vec<(&str, &str, &str, i64)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["object"]["kind"].as_str().unwrap(),
                e["object"]["webhooks"][0]["failurePolicy"]
                    .as_str()
                    .unwrap(),
                e["object"]["metadata"]["generation"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED", "ValidatingWebhookConfiguration", "Fail", 1),
            ("MODIFIED", "ValidatingWebhookConfiguration", "Ignore", 2),
            ("DELETED", "ValidatingWebhookConfiguration", "Ignore", 2),
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e["object"]["apiVersion"] == "admissionregistration.k8s.io/v1")
    );
}

#[tokio::test]
async fn server_side_apply_owns_webhooks_by_name() {
    let sim = Sim::start().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(sim.client().await);
    let applied = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "mcs-policy"},
        "webhooks": [webhook("validate.mcs.karmada.io")],
    });
    let created = configs
        .patch(
            "mcs-policy",
            &PatchParams::apply("mcs-policy"),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let managed = &created.metadata.managed_fields.unwrap()[0];
    assert_eq!(managed.manager.as_deref(), Some("mcs-policy"));
    let fields = serde_json::to_value(managed.fields_v1.as_ref().unwrap()).unwrap();
    let hook = &fields["f:webhooks"]["k:{\"name\":\"validate.mcs.karmada.io\"}"];
    assert!(hook["f:sideEffects"].is_object(), "{fields}");
    assert!(
        hook["f:timeoutSeconds"].is_null(),
        "defaults are not owned: {fields}"
    );

    // Another manager changing an owned field conflicts.
    let other = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "mcs-policy"},
        "webhooks": [{"name": "validate.mcs.karmada.io", "sideEffects": "NoneOnDryRun"}],
    });
    let status = api_error(
        configs
            .patch(
                "mcs-policy",
                &PatchParams::apply("someone-else"),
                &Patch::Apply(&other),
            )
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
}

#[tokio::test]
async fn discovery_lists_both_kinds_cluster_scoped() {
    let sim = Sim::start().await;
    let groups = sim.get("/apis").await.json();
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "admissionregistration.k8s.io"
                && g["preferredVersion"]["version"] == "v1")
    );
    let list = sim
        .get("/apis/admissionregistration.k8s.io/v1")
        .await
        .json();
    assert_eq!(
        list["resources"],
        json!([
            {"name": "mutatingwebhookconfigurations", "singularName": "mutatingwebhookconfiguration", "namespaced": false, "kind": "MutatingWebhookConfiguration", "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"], "categories": ["api-extensions"], "storageVersionHash": "Sqi0GUgDaX0="},
            {"name": "validatingwebhookconfigurations", "singularName": "validatingwebhookconfiguration", "namespaced": false, "kind": "ValidatingWebhookConfiguration", "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"], "categories": ["api-extensions"], "storageVersionHash": "B0wHjQmsGNk="},
        ])
    );
}
