//! What kube-sim refuses as a real kube-apiserver 1.36 does (transcripts 19, 22 and 23),
//! through kube-rs typed clients: CRDs of protected groups without the approval annotation,
//! `kubernetes.io/tls` Secrets without their keys, and Job status writes that break the Job
//! status rules; and what the accepted objects look like.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::{Sim, api_error};

/// A CRD of `group` (one version, a structural schema), with `annotations`.
fn crd(group: &str, annotations: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {"name": format!("widgets.{group}"), "annotations": annotations},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn protected_group_crds_need_an_approval_annotation() {
    let sim = Sim::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(sim.client().await);
    let status = api_error(
        crds.create(&PostParams::default(), &crd("rec.k8s.io", json!({})))
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.rec.k8s.io\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    let bypassed = json!({"api-approved.kubernetes.io": "unapproved, a test group"});
    crds.create(&PostParams::default(), &crd("rec.kubernetes.io", bypassed))
        .await
        .unwrap();
    // The controllers' status follows the create at once in kube-sim.
    let settled = crds.get("widgets.rec.kubernetes.io").await.unwrap();
    let conditions = settled.status.unwrap().conditions.unwrap();
    let approval = conditions
        .iter()
        .find(|c| c.type_ == "KubernetesAPIApprovalPolicyConformant")
        .expect("the approval condition");
    assert_eq!(
        (approval.status.as_str(), approval.reason.as_deref()),
        ("False", Some("UnapprovedAnnotation"))
    );
    // Not protected: `x-k8s.io` is not `k8s.io`.
    crds.create(&PostParams::default(), &crd("rec.x-k8s.io", json!({})))
        .await
        .unwrap();
    // The DELETE answers the CRD marked Terminating; then it is gone.
    let answer = crds
        .delete("widgets.rec.x-k8s.io", &DeleteParams::default())
        .await
        .unwrap();
    let marked = answer.left().expect("the CRD, not a Status");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(
        marked.metadata.finalizers,
        Some(vec![
            "customresourcecleanup.apiextensions.k8s.io".to_owned()
        ])
    );
    assert_eq!(api_error(crds.get("widgets.rec.x-k8s.io").await).code, 404);
}

fn tls_secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

#[tokio::test]
async fn tls_secrets_need_both_keys_and_keep_their_type() {
    let sim = Sim::start().await;
    let secrets: Api<Secret> = Api::namespaced(sim.client().await, "default");
    let status = api_error(
        secrets
            .create(
                &PostParams::default(),
                &tls_secret("no-key", &[("tls.crt", "x")]),
            )
            .await,
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            "Secret \"no-key\" is invalid: data[tls.key]: Required value"
        )
    );
    let created = secrets
        .create(
            &PostParams::default(),
            &tls_secret("pair", &[("tls.crt", "x"), ("tls.key", "y")]),
        )
        .await
        .unwrap();
    let mut changed = created.clone();
    changed.type_ = Some("Opaque".to_owned());
    let status = api_error(
        secrets
            .replace("pair", &PostParams::default(), &changed)
            .await,
    );
    assert_eq!(
        status.message,
        "Secret \"pair\" is invalid: type: Invalid value: \"Opaque\": field is immutable"
    );
    // stringData is merged into data; no type is Opaque.
    let plain: Secret =
        serde_json::from_value(json!({"metadata": {"name": "plain"}, "stringData": {"a": "1"}}))
            .unwrap();
    let plain = secrets
        .create(&PostParams::default(), &plain)
        .await
        .unwrap();
    assert_eq!(plain.type_.as_deref(), Some("Opaque"));
    assert_eq!(plain.data.unwrap()["a"], ByteString(b"1".to_vec()));
    assert!(plain.string_data.is_none());
}

#[tokio::test]
async fn job_status_follows_the_job_status_rules() {
    let sim = Sim::start().await;
    let jobs: Api<Job> = Api::namespaced(sim.client().await, "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}},
    }))
    .unwrap();
    let created = jobs.create(&PostParams::default(), &job).await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(
        spec.selector.unwrap().match_labels.unwrap()["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        created.metadata.labels.unwrap()["batch.kubernetes.io/job-name"],
        "once"
    );
    assert_eq!((spec.completions, spec.backoff_limit), (Some(1), Some(6)));

    let params = PatchParams::default();
    let finished = |conditions: Value| {
        json!({"status": {"startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:01:00Z", "succeeded": 1, "conditions": conditions}})
    };
    let complete = json!({"type": "Complete", "status": "True",
        "lastTransitionTime": "2026-01-01T00:01:00Z", "reason": "Complete", "message": ""});
    let met = json!({"type": "SuccessCriteriaMet", "status": "True",
        "lastTransitionTime": "2026-01-01T00:01:00Z", "reason": "SuccessCriteriaMet"});
    let status = api_error(
        jobs.patch_status("once", &params, &Patch::Merge(finished(json!([complete]))))
            .await,
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            "Job.batch \"once\" is invalid: status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
        )
    );
    let done = jobs
        .patch_status(
            "once",
            &params,
            &Patch::Merge(finished(json!([met, complete]))),
        )
        .await
        .unwrap();
    let conditions = done.status.unwrap().conditions.unwrap();
    assert_eq!(conditions.len(), 2);
    assert_eq!(conditions[1].message, None, "empty messages are not stored");
    let moved = json!({"status": {"completionTime": "2026-01-01T00:02:00Z"}});
    let status = api_error(
        jobs.patch_status("once", &params, &Patch::Merge(moved))
            .await,
    );
    assert_eq!(
        status.message,
        "Job.batch \"once\" is invalid: status.completionTime: Invalid value: \"2026-01-01T00:02:00Z\": field is immutable"
    );
}

#[tokio::test]
async fn jobs_take_strategic_merge_patches_of_their_containers() {
    let sim = Sim::start().await;
    let jobs: Api<Job> = Api::namespaced(sim.client().await, "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "suspended"},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "OnFailure",
            "containers": [{"name": "a", "image": "busybox:1.36"}, {"name": "b", "image": "busybox"}]}}},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    // Containers merge by name: only `b` gets the variable, `a` stays.
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "b", "env": [{"name": "X", "value": "1"}]}]}}}});
    let patched = jobs
        .patch(
            "suspended",
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
        .unwrap();
    let containers = patched.spec.unwrap().template.spec.unwrap().containers;
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(containers[1].env.as_ref().unwrap()[0].name, "X");
    assert_eq!(containers[1].image_pull_policy.as_deref(), Some("Always"));
}
