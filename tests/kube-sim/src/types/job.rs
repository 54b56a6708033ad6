//! batch/v1 Jobs, as kube-apiserver stores them with no Job controller running (recorded in
//! `22-job-status`): `pkg/apis/batch/v1/defaults.go`, the pod template defaults of
//! `pkg/apis/core/v1/defaults.go`, `pkg/registry/batch/job/strategy.go` and
//! `pkg/apis/batch/validation/validation.go`.
//!
//! - decoding: `SetDefaults_Job` (`parallelism`/`completions` 1, `backoffLimit` 6,
//!   `completionMode: NonIndexed`, `suspend: false`, `podReplacementPolicy`,
//!   `manualSelector: false`), the pod template's `SetDefaults_PodSpec` (`restartPolicy`,
//!   `dnsPolicy`, `securityContext: {}`, `terminationGracePeriodSeconds: 30`, `schedulerName`)
//!   and `SetDefaults_Container` (`imagePullPolicy` from the image's tag,
//!   `terminationMessagePath`/`Policy`, `resources: {}`, ports' `protocol`), and the status as Go
//!   encodes it (empty condition reasons and messages, zero counters omitted);
//! - create (`PrepareForCreate`): an empty status, and unless `manualSelector` the generated
//!   selector (`batch.kubernetes.io/controller-uid`) and the template labels `job-name`,
//!   `batch.kubernetes.io/job-name`, `controller-uid`, `batch.kubernetes.io/controller-uid`; a
//!   Job without labels takes the template's (the defaulting of the stored object, read back);
//! - validation (a subset of `ValidateJob`): non-negative counts, a selector matching the
//!   template labels, `restartPolicy` `OnFailure` or `Never`, containers with names and images,
//!   `completionMode`; updates keep the selector, the completion mode and (unless suspended)
//!   the template;
//! - status writes (`ValidateJobUpdateStatus`, the options a 1.36 server enables): counts
//!   non-negative, `ready` at most `active`, `completionTime` only with `Complete=True`, not
//!   before `startTime` and immutable once set, `Complete=True` needs `SuccessCriteriaMet=True`
//!   and `completionTime`, finished Jobs need `startTime` and no active pods, a terminal
//!   condition (`Complete`, `Failed`, `FailureTarget`) cannot be turned off, `Complete` and
//!   `Failed` not both.
//!
//! Not modelled: the rest of the pod template's validation (volumes, probes, resources,
//! security contexts, ...), pod failure and success policies, indexed Jobs' indexes.

use serde_json::{Map, Value, json};

use super::field::{self, ErrorList, FieldError};
use crate::object;

const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];
const SELECTOR_LABEL: &str = "batch.kubernetes.io/controller-uid";

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    let absent = match map.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    if absent {
        map.insert(key.to_owned(), value);
    }
}

/// `SetDefaults_Job` and the pod template's defaults, then the status as Go encodes it.
pub fn decode_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        job_spec_defaults(spec);
    }
    let template_labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    copy_template_labels(obj, &template_labels);
    encode_status(obj);
}

fn job_spec_defaults(spec: &mut Map<String, Value>) {
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        json!(6)
    } else {
        json!(i32::MAX)
    };
    set_default(spec, "backoffLimit", backoff);
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    set_default(spec, "podReplacementPolicy", json!(replacement));
    set_default(spec, "manualSelector", json!(false));
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(template) = template.as_object_mut() {
        let pod = template.entry("spec").or_insert_with(|| json!({}));
        if let Some(pod) = pod.as_object_mut() {
            pod_spec_defaults(pod);
        }
    }
}

/// `SetDefaults_PodSpec` and `SetDefaults_Container` for each container.
fn pod_spec_defaults(pod: &mut Map<String, Value>) {
    set_default(pod, "dnsPolicy", json!("ClusterFirst"));
    set_default(pod, "restartPolicy", json!("Always"));
    set_default(pod, "securityContext", json!({}));
    set_default(pod, "terminationGracePeriodSeconds", json!(30));
    set_default(pod, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        let containers = pod.get_mut(list).and_then(Value::as_array_mut);
        for container in containers.into_iter().flatten() {
            if let Some(container) = container.as_object_mut() {
                container_defaults(container);
            }
        }
    }
}

fn container_defaults(container: &mut Map<String, Value>) {
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let policy = if image_tag(image) == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    };
    set_default(container, "imagePullPolicy", json!(policy));
    set_default(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    set_default(container, "terminationMessagePolicy", json!("File"));
    set_default(container, "resources", json!({}));
    let ports = container.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten() {
        if let Some(port) = port.as_object_mut() {
            set_default(port, "protocol", json!("TCP"));
        }
    }
}

/// The tag `parsers.ParseImageName` finds: after the last `:` of the last path segment,
/// `latest` when there is neither a tag nor a digest, none with only a digest.
fn image_tag(image: &str) -> &str {
    let (name, digest) = image.split_once('@').unwrap_or((image, ""));
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag,
        None if digest.is_empty() => "latest",
        None => "",
    }
}

/// `SetDefaults_Job`'s labels: a Job without labels takes its template's.
fn copy_template_labels(obj: &mut Value, template_labels: &Value) {
    let has_labels = obj["metadata"]["labels"]
        .as_object()
        .is_some_and(|l| !l.is_empty());
    if !has_labels && template_labels.is_object() && obj["metadata"].is_object() {
        obj["metadata"]["labels"] = template_labels.clone();
    }
}

/// The status as the Go struct encodes it: `omitempty` counters and condition strings dropped.
fn encode_status(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    status.retain(|key, value| {
        !(value.is_null()
            || (matches!(key.as_str(), "active" | "succeeded" | "failed") && *value == json!(0))
            || (key == "completedIndexes" && *value == json!(""))
            || (key == "conditions" && value.as_array().is_some_and(Vec::is_empty)))
    });
    let conditions = status.get_mut("conditions").and_then(Value::as_array_mut);
    for condition in conditions.into_iter().flatten() {
        if let Some(condition) = condition.as_object_mut() {
            condition.retain(|key, value| {
                !(value.is_null()
                    || (matches!(key.as_str(), "reason" | "message") && *value == json!("")))
            });
        }
    }
}

/// `PrepareForCreate`: an empty status, the generated selector and template labels; then the
/// labels the stored Job is read back with.
pub fn prepare_create(obj: &mut Value) {
    obj["status"] = json!({});
    if obj["spec"]["manualSelector"] != true {
        generate_selector(obj);
    }
    let template_labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    copy_template_labels(obj, &template_labels);
}

/// `generateSelector`.
fn generate_selector(obj: &mut Value) {
    let name = object::name(obj).to_owned();
    let uid = object::uid(obj).to_owned();
    let spec = &mut obj["spec"];
    if !spec["template"].is_object() {
        spec["template"] = json!({});
    }
    if !spec["template"]["metadata"].is_object() {
        spec["template"]["metadata"] = json!({});
    }
    let labels = &mut spec["template"]["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(labels) = labels.as_object_mut() {
        for key in JOB_NAME_LABELS {
            labels.entry(key).or_insert_with(|| json!(name));
        }
        for key in CONTROLLER_UID_LABELS {
            labels.entry(key).or_insert_with(|| json!(uid));
        }
    }
    let selector = &mut spec["selector"];
    if !selector.is_object() {
        *selector = json!({});
    }
    let match_labels = &mut selector["matchLabels"];
    if !match_labels.is_object() {
        *match_labels = json!({});
    }
    if let Some(match_labels) = match_labels.as_object_mut() {
        match_labels
            .entry(SELECTOR_LABEL)
            .or_insert_with(|| json!(uid));
    }
}

/// The part of `ValidateJob` kube-sim models (see the module doc).
pub fn validate(obj: &Value) -> ErrorList {
    let spec = &obj["spec"];
    let mut errors = ErrorList::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        if let Some(n) = spec[key].as_i64().filter(|n| *n < 0) {
            errors.push(FieldError::invalid(
                &format!("spec.{key}"),
                json!(n),
                "must be greater than or equal to 0",
            ));
        }
    }
    if spec["selector"].is_null() {
        errors.push(FieldError::required("spec.selector", ""));
    } else if !selector_matches(&spec["selector"], &spec["template"]["metadata"]["labels"]) {
        errors.push(FieldError::invalid(
            "spec.template.metadata.labels",
            spec["template"]["metadata"]["labels"].clone(),
            "`selector` does not match template `labels`",
        ));
    }
    if let Some(mode) = spec["completionMode"].as_str()
        && !matches!(mode, "NonIndexed" | "Indexed")
    {
        errors.push(FieldError::not_supported(
            "spec.completionMode",
            mode,
            &["NonIndexed", "Indexed"],
        ));
    }
    errors.extend(validate_pod_template(&spec["template"]["spec"]));
    errors
}

/// Whether `selector`'s `matchLabels` (and `In`/`Exists` expressions) hold for `labels`.
fn selector_matches(selector: &Value, labels: &Value) -> bool {
    let label = |key: &str| labels[key].as_str();
    let match_labels = selector["matchLabels"].as_object();
    let labels_ok = match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions = selector["matchExpressions"].as_array();
    let expressions_ok = expressions.into_iter().flatten().all(|e| {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e["operator"].as_str() {
            Some("In") => label(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => !label(key).is_some_and(|v| values.contains(&v)),
            Some("Exists") => label(key).is_some(),
            Some("DoesNotExist") => label(key).is_none(),
            _ => false,
        }
    });
    labels_ok && expressions_ok
}

/// The pod template rules kube-sim checks: the restart policy a Job allows, containers with
/// unique DNS-1123 label names and an image.
fn validate_pod_template(pod: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let restart = pod["restartPolicy"].as_str().unwrap_or_default();
    if !matches!(restart, "OnFailure" | "Never") {
        errors.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            restart,
            &["OnFailure", "Never"],
        ));
    }
    let containers = pod["containers"].as_array().filter(|c| !c.is_empty());
    let Some(containers) = containers else {
        errors.push(FieldError::required("spec.template.spec.containers", ""));
        return errors;
    };
    let mut names = std::collections::BTreeSet::new();
    for (i, container) in containers.iter().enumerate() {
        let path = field::index("spec.template.spec.containers", i);
        let name = container["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            errors.push(FieldError::required(&field::child(&path, "name"), ""));
        } else {
            for problem in super::names::dns1123_label(name) {
                errors.push(FieldError::invalid(
                    &field::child(&path, "name"),
                    name,
                    problem,
                ));
            }
            if !names.insert(name) {
                errors.push(FieldError::duplicate(&field::child(&path, "name"), name));
            }
        }
        if container["image"].as_str().unwrap_or_default().is_empty() {
            errors.push(FieldError::required(&field::child(&path, "image"), ""));
        }
    }
    errors
}

/// `ValidateJobUpdate`'s immutable fields, then [`validate`].
pub fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let (spec, old_spec) = (&new["spec"], &old["spec"]);
    for key in ["selector", "completionMode"] {
        if spec[key] != old_spec[key] {
            errors.push(FieldError::invalid(
                &format!("spec.{key}"),
                spec[key].clone(),
                "field is immutable",
            ));
        }
    }
    // A suspended Job that never started may change its template (KEP-2232); kube-sim lets
    // any suspended Job do so.
    if spec["template"] != old_spec["template"] && old_spec["suspend"] != true {
        errors.push(FieldError::invalid(
            "spec.template",
            spec["template"].clone(),
            "field is immutable",
        ));
    }
    errors.extend(validate(new));
    errors
}

fn condition_true(job: &Value, kind: &str) -> bool {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn timestamp(value: &Value) -> Option<jiff::Timestamp> {
    value.as_str()?.parse().ok()
}

fn omit_value(path: &str, detail: &str) -> FieldError {
    FieldError::invalid_without_value(path, detail)
}

/// `ValidateJobUpdateStatus` after the metadata: `validateJobStatus`, then the transitions.
pub fn validate_status_update(new: &Value, old: &Value) -> ErrorList {
    let mut errors = validate_status(new);
    let status = &new["status"];
    for kind in ["Failed", "Complete", "FailureTarget"] {
        if condition_true(old, kind) && !condition_true(new, kind) {
            errors.push(omit_value(
                "status.conditions",
                &format!("cannot disable the terminal {kind}=True condition"),
            ));
        }
    }
    let (completion, old_completion) =
        (&status["completionTime"], &old["status"]["completionTime"]);
    if !completion.is_null() && !old_completion.is_null() && completion != old_completion {
        errors.push(FieldError::invalid(
            "status.completionTime",
            completion.clone(),
            "field is immutable",
        ));
    }
    let start = &status["startTime"];
    let old_start = &old["status"]["startTime"];
    if !old_start.is_null() && start != old_start && new["spec"]["suspend"] != true {
        errors.push(FieldError::required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    errors
}

/// `validateJobStatus` with the options a 1.36 server enables.
fn validate_status(job: &Value) -> ErrorList {
    let status = &job["status"];
    let mut errors = ErrorList::new();
    let count = |key: &str| status[key].as_i64();
    for key in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(n) = count(key).filter(|n| *n < 0) {
            errors.push(FieldError::invalid(
                &format!("status.{key}"),
                json!(n),
                "must be greater than or equal to 0",
            ));
        }
    }
    let complete = condition_true(job, "Complete");
    let failed = condition_true(job, "Failed");
    let finished = complete || failed;
    if complete && failed {
        errors.push(omit_value(
            "status.conditions",
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if complete && condition_true(job, "FailureTarget") {
        errors.push(omit_value(
            "status.conditions",
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion = &status["completionTime"];
    if !completion.is_null() && !complete {
        errors.push(FieldError::invalid(
            "status.completionTime",
            completion.clone(),
            "cannot set completionTime when there is no Complete=True condition",
        ));
    }
    if completion.is_null() && complete {
        errors.push(FieldError::required(
            "status.completionTime",
            "completionTime is required for Complete jobs",
        ));
    }
    if let (Some(start), Some(end)) = (timestamp(&status["startTime"]), timestamp(completion))
        && end < start
    {
        errors.push(FieldError::invalid(
            "status.completionTime",
            completion.clone(),
            "must be equal to or after `startTime`",
        ));
    }
    if failed && !condition_true(job, "FailureTarget") {
        errors.push(omit_value(
            "status.conditions",
            "cannot set Failed=True condition without the FailureTarget=true condition",
        ));
    }
    if complete && !condition_true(job, "SuccessCriteriaMet") {
        errors.push(omit_value(
            "status.conditions",
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ));
    }
    if finished && count("active").is_some_and(|n| n > 0) {
        errors.push(FieldError::invalid(
            "status.active",
            status["active"].clone(),
            "active>0 is invalid for finished job",
        ));
    }
    if finished && count("terminating").is_some_and(|n| n > 0) {
        errors.push(FieldError::invalid(
            "status.terminating",
            status["terminating"].clone(),
            "terminating>0 is invalid for finished job",
        ));
    }
    if finished && status["startTime"].is_null() {
        errors.push(FieldError::required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    if let Some(ready) = count("ready")
        && ready > count("active").unwrap_or(0)
    {
        errors.push(FieldError::invalid(
            "status.ready",
            json!(ready),
            "cannot set more ready pods than active",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errors: &ErrorList) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    fn job() -> Value {
        json!({"metadata": {"name": "done", "namespace": "n", "uid": "u1"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    }

    #[test]
    fn a_created_job_gets_defaults_a_selector_and_labels() {
        let mut obj = job();
        decode_defaults(&mut obj);
        prepare_create(&mut obj);
        assert_eq!(obj["spec"]["completions"], 1);
        assert_eq!(obj["spec"]["backoffLimit"], 6);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(
            obj["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        assert_eq!(obj["metadata"]["labels"]["job-name"], "done");
        assert_eq!(obj["status"], json!({}));
        assert!(validate(&obj).is_empty(), "{:?}", messages(&validate(&obj)));
    }

    #[test]
    fn images_without_a_tag_are_always_pulled() {
        assert_eq!(image_tag("busybox"), "latest");
        assert_eq!(image_tag("registry:5000/busybox"), "latest");
        assert_eq!(image_tag("registry:5000/busybox:1.36"), "1.36");
        assert_eq!(image_tag("busybox@sha256:abc"), "");
    }

    #[test]
    fn complete_needs_success_criteria_met_start_and_completion_times() {
        let mut obj = job();
        obj["status"] = json!({"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
            "conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(
            messages(&validate_status(&obj)),
            vec![
                "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
            ]
        );
        obj["status"]["conditions"] = json!([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]);
        assert!(validate_status(&obj).is_empty());
        let mut flipped = obj.clone();
        flipped["status"]["conditions"][1]["status"] = json!("False");
        assert_eq!(
            messages(&validate_status_update(&flipped, &obj)),
            vec![
                "status.completionTime: Invalid value: \"2026-01-01T00:01:00Z\": cannot set completionTime when there is no Complete=True condition",
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
            ]
        );
    }

    #[test]
    fn ready_pods_cannot_outnumber_active_ones() {
        let mut obj = job();
        obj["status"] = json!({"active": 1, "ready": 2});
        assert_eq!(
            messages(&validate_status(&obj)),
            vec!["status.ready: Invalid value: 2: cannot set more ready pods than active"]
        );
    }
}
