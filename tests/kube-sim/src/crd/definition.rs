//! The CustomResourceDefinition object itself, as apiextensions-apiserver stores it: the v1
//! defaults (`SetDefaults_CustomResourceDefinitionSpec`: singular, listKind, conversion), the
//! checks kube-sim makes before serving it, the status its strategy sets (`PrepareForCreate`:
//! empty names, no conditions, the storage version stored; `PrepareForUpdate`: status kept,
//! a new storage version added), the status its controllers converge to (names accepted,
//! established), and the resource types it serves.

use serde_json::{Value, json};

use crate::registry::{GenerationPolicy, ResourceType, Special};
use crate::status::ApiError;
use crate::types::field;

const KIND: &str = "CustomResourceDefinition";
const GROUP: &str = "apiextensions.k8s.io";

/// Defaults, checks and the strategy's status for a CRD being written; `previous` is the live
/// CRD (null on create).
pub fn prepare(crd: &mut Value, previous: &Value) -> Result<(), ApiError> {
    apply_defaults(crd);
    resource_types(crd)?;
    check_api_approval(crd, previous)?;
    let previous_status = &previous["status"];
    let mut status = if previous_status.is_object() {
        previous_status.clone()
    } else {
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []})
    };
    status["storedVersions"] = json!(stored_versions(crd, previous_status));
    crd["status"] = status;
    Ok(())
}

/// The annotation a CRD in a protected group must carry (KEP 1111).
const API_APPROVED: &str = "api-approved.kubernetes.io";

/// Whether `group` is a protected community group (`apihelpers.IsProtectedCommunityGroup`):
/// `k8s.io`, `kubernetes.io` and their subdomains.
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// `apihelpers.APIApprovalState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approval {
    Approved,
    Bypassed,
    Missing,
    Invalid,
}

/// `apihelpers.GetAPIApprovalState`: the state of a CRD's approval annotation and its reason.
fn approval_state(crd: &Value) -> (Approval, String) {
    let annotation = crd["metadata"]["annotations"][API_APPROVED]
        .as_str()
        .unwrap_or_default();
    if annotation.is_empty() {
        let reason = format!(
            "protected groups must have approval annotation \"{API_APPROVED}\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        return (Approval::Missing, reason);
    }
    if annotation.starts_with("unapproved") {
        return (
            Approval::Bypassed,
            format!("not approved: {}", field::go_quote(annotation)),
        );
    }
    if is_request_uri(annotation) {
        return (Approval::Approved, format!("approved in {annotation}"));
    }
    let reason = format!(
        "protected groups must have approval annotation \"{API_APPROVED}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    (Approval::Invalid, reason)
}

/// Whether Go's `url.ParseRequestURI` accepts `text`: an absolute URL (a scheme, then `:`) or
/// an absolute path, without spaces or control characters.
fn is_request_uri(text: &str) -> bool {
    if text.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if text.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
}

/// `validateAPIApproval`: a CRD of a protected group needs the approval annotation, a URL or a
/// reason starting with `unapproved`, unless an update leaves its approval state as it was.
fn check_api_approval(crd: &Value, previous: &Value) -> Result<(), ApiError> {
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    if !is_protected_group(group) {
        return Ok(());
    }
    let (state, reason) = approval_state(crd);
    if previous.is_object() && approval_state(previous).0 == state {
        return Ok(());
    }
    let path = format!("metadata.annotations[{API_APPROVED}]");
    let error = match state {
        Approval::Approved | Approval::Bypassed => return Ok(()),
        Approval::Missing => field::FieldError::required(&path, reason),
        Approval::Invalid => {
            let value = crd["metadata"]["annotations"][API_APPROVED].clone();
            field::FieldError::invalid(&path, value, reason)
        }
    };
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    Err(field::invalid(GROUP, KIND, name, &[error]).expect("one error"))
}

/// The `KubernetesAPIApprovalPolicyConformant` condition the API approval controller gives a
/// CRD of a protected group (`calculateCondition`), None for other groups.
fn approval_condition(crd: &Value, since: &str) -> Option<Value> {
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    if !is_protected_group(group) {
        return None;
    }
    let (state, message) = approval_state(crd);
    let (status, reason) = match state {
        Approval::Approved => ("True", "ApprovedAnnotation"),
        Approval::Bypassed => ("False", "UnapprovedAnnotation"),
        Approval::Missing => ("False", "MissingAnnotation"),
        Approval::Invalid => ("False", "InvalidAnnotation"),
    };
    Some(json!({
        "type": "KubernetesAPIApprovalPolicyConformant", "status": status,
        "lastTransitionTime": since, "reason": reason, "message": message,
    }))
}

/// What the CRD registry's DELETE stores (`REST.Delete`): `deletionTimestamp`, the
/// `customresourcecleanup.apiextensions.k8s.io` finalizer and a `Terminating` condition; the
/// generation stays.
pub fn terminate(crd: &Value, now: &str) -> Value {
    let mut marked = crd.clone();
    let meta = crate::object::metadata_mut(&mut marked);
    meta.insert("deletionTimestamp".into(), json!(now));
    let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == CLEANUP_FINALIZER)
    {
        list.push(json!(CLEANUP_FINALIZER));
    }
    let terminating = json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": now,
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    });
    let conditions = &mut marked["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        match list.iter_mut().find(|c| c["type"] == "Terminating") {
            Some(existing) if existing["status"] == "True" => {}
            Some(existing) => *existing = terminating,
            None => list.push(terminating),
        }
    }
    marked
}

/// The finalizer the CRD registry adds on DELETE; the finalizing controller removes it once the
/// custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// `SetDefaults_CustomResourceDefinitionSpec`.
fn apply_defaults(crd: &mut Value) {
    let spec = &mut crd["spec"];
    if !spec.is_object() {
        return;
    }
    let kind = spec["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if spec["names"].is_object() {
        if spec["names"]["singular"].as_str().is_none_or(str::is_empty) {
            spec["names"]["singular"] = json!(kind.to_lowercase());
        }
        if spec["names"]["listKind"].as_str().is_none_or(str::is_empty) && !kind.is_empty() {
            spec["names"]["listKind"] = json!(format!("{kind}List"));
        }
    }
    if spec["conversion"].is_null() {
        spec["conversion"] = json!({"strategy": "None"});
    }
}

/// The resource types a CRD object serves (one per served version), or why it is invalid.
pub fn resource_types(crd: &Value) -> Result<Vec<ResourceType>, ApiError> {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let spec = &crd["spec"];
    let group = required_str(name, spec, "group")?;
    let plural =
        required_str(name, &spec["names"], "plural").map_err(|e| in_names(e, name, "plural"))?;
    let kind = required_str(name, &spec["names"], "kind").map_err(|e| in_names(e, name, "kind"))?;
    if name != format!("{plural}.{group}") {
        let detail =
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group");
        return Err(ApiError::invalid(
            KIND,
            name,
            "metadata.name",
            "FieldValueInvalid",
            &detail,
        ));
    }
    let namespaced = match spec["scope"].as_str() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        _ => {
            return Err(invalid(
                name,
                "spec.scope",
                "Unsupported value: must be Namespaced or Cluster",
            ));
        }
    };
    let versions = spec["versions"].as_array().filter(|v| !v.is_empty());
    let versions = versions.ok_or_else(|| {
        invalid(
            name,
            "spec.versions",
            "Required value: must have at least one version",
        )
    })?;
    let mut schema_errors = Vec::new();
    // The internal version the apiserver validates lifts a schema every version shares to
    // `spec.validation`, and names it so in errors.
    let shared = versions
        .iter()
        .all(|v| v["schema"] == versions[0]["schema"]);
    for (i, version) in versions.iter().enumerate() {
        let schema = &version["schema"]["openAPIV3Schema"];
        if schema.is_object() {
            let path = if shared {
                "spec.validation.openAPIV3Schema".to_owned()
            } else {
                format!("spec.versions[{i}].schema.openAPIV3Schema")
            };
            schema_errors.extend(super::structural::errors(schema, &path));
            if shared {
                break;
            }
        }
    }
    if let Some(error) = field::invalid(GROUP, KIND, name, &schema_errors) {
        return Err(error);
    }
    let names = &spec["names"];
    let singular = names["singular"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map_or_else(|| kind.to_lowercase(), str::to_owned);
    let storage_version = versions
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default();
    let served = versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(false));
    Ok(served
        .filter_map(|v| {
            Some(ResourceType {
                group: group.to_owned(),
                version: v["name"].as_str()?.to_owned(),
                storage_version: storage_version.to_owned(),
                plural: plural.to_owned(),
                singular: singular.clone(),
                kind: kind.to_owned(),
                namespaced,
                status_subresource: v["subresources"]["status"].is_object(),
                short_names: string_list(&names["shortNames"]),
                categories: string_list(&names["categories"]),
                generation: GenerationPolicy::Spec,
                special: Special::None,
                defined_by: Some(name.to_owned()),
            })
        })
        .collect())
}

/// The status the apiserver's CRD controllers converge to: names accepted, established.
/// Condition timestamps are kept from `previous` so an unchanged CRD stays unchanged.
pub fn established_status(crd: &Value, previous: &Value, now: &str) -> Value {
    let names = &crd["spec"]["names"];
    let kind = names["kind"].as_str().unwrap_or_default();
    let mut accepted = names.clone();
    if accepted["singular"].as_str().is_none_or(str::is_empty) {
        accepted["singular"] = json!(kind.to_lowercase());
    }
    if accepted["listKind"].as_str().is_none_or(str::is_empty) {
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    let since = |condition: &str| {
        previous["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == condition))
            .and_then(|c| c["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_owned()
    };
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")}),
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since("Established")}),
    ];
    // The approval controller's condition; it races the naming controller's two, and the
    // recordings (`19-crd-protected-groups`) show it last.
    let approval_type = "KubernetesAPIApprovalPolicyConformant";
    if let Some(mut approval) = approval_condition(crd, &since(approval_type)) {
        let unchanged = previous["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == approval_type))
            .is_some_and(|c| c["status"] == approval["status"]);
        if !unchanged {
            approval["lastTransitionTime"] = json!(now);
        }
        conditions.push(approval);
    }
    json!({
        "conditions": conditions,
        "acceptedNames": accepted,
        "storedVersions": stored_versions(crd, previous),
    })
}

fn stored_versions(crd: &Value, previous: &Value) -> Vec<String> {
    let mut stored = string_list(&previous["storedVersions"]);
    let storage = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true);
    for version in storage.filter_map(|v| v["name"].as_str()) {
        if !stored.iter().any(|s| s == version) {
            stored.push(version.to_owned());
        }
    }
    stored
}

fn required_str<'a>(name: &str, parent: &'a Value, field: &str) -> Result<&'a str, ApiError> {
    parent[field]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid(name, &format!("spec.{field}"), "Required value"))
}

fn in_names(_: ApiError, name: &str, field: &str) -> ApiError {
    invalid(name, &format!("spec.names.{field}"), "Required value")
}

fn invalid(name: &str, field: &str, detail: &str) -> ApiError {
    ApiError::invalid(KIND, name, field, "FieldValueInvalid", detail)
}

fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": {"name": "multiclusterservices.networking.karmada.io"},
            "spec": {
                "group": "networking.karmada.io",
                "names": {"plural": "multiclusterservices", "kind": "MultiClusterService", "shortNames": ["mcs"]},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": true, "subresources": {"status": {}}},
                    {"name": "v1alpha0", "served": false, "storage": false},
                ],
            },
        })
    }

    #[test]
    fn served_versions_become_resource_types() {
        let types = resource_types(&crd()).unwrap();
        assert_eq!(types.len(), 1);
        let t = &types[0];
        assert_eq!(
            (t.group.as_str(), t.version.as_str(), t.plural.as_str()),
            ("networking.karmada.io", "v1alpha1", "multiclusterservices")
        );
        assert_eq!(t.singular, "multiclusterservice");
        assert_eq!(t.storage_version, "v1alpha1");
        assert!(t.namespaced && t.status_subresource);
        assert_eq!(t.short_names, vec!["mcs"]);
    }

    #[test]
    fn name_must_be_plural_dot_group() {
        let mut bad = crd();
        bad["metadata"]["name"] = json!("wrong.example.com");
        let error = resource_types(&bad).unwrap_err();
        assert_eq!(error.code, 422);
        assert!(
            error.message.contains("must be spec.names.plural"),
            "{}",
            error.message
        );
    }

    #[test]
    fn created_crds_get_defaults_and_a_status_with_nothing_accepted_yet() {
        let mut created = crd();
        prepare(&mut created, &Value::Null).unwrap();
        assert_eq!(created["spec"]["names"]["singular"], "multiclusterservice");
        assert_eq!(
            created["spec"]["names"]["listKind"],
            "MultiClusterServiceList"
        );
        assert_eq!(created["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(
            created["status"],
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1alpha1"]})
        );
    }

    #[test]
    fn updates_keep_the_status_and_add_a_new_storage_version() {
        let established = established_status(&crd(), &Value::Null, "2024-01-01T00:00:00Z");
        let mut updated = crd();
        updated["spec"]["versions"][0]["storage"] = json!(false);
        updated["spec"]["versions"][1]["storage"] = json!(true);
        let mut live = crd();
        live["status"] = established.clone();
        prepare(&mut updated, &live).unwrap();
        assert_eq!(updated["status"]["conditions"], established["conditions"]);
        assert_eq!(
            updated["status"]["storedVersions"],
            json!(["v1alpha1", "v1alpha0"])
        );
    }

    fn cluster_property_crd(annotation: Option<&str>) -> Value {
        let mut crd = json!({
            "metadata": {"name": "clusterproperties.about.k8s.io"},
            "spec": {
                "group": "about.k8s.io",
                "names": {"plural": "clusterproperties", "kind": "ClusterProperty"},
                "scope": "Cluster",
                "versions": [{"name": "v1beta1", "served": true, "storage": true}],
            },
        });
        if let Some(value) = annotation {
            crd["metadata"]["annotations"] = json!({API_APPROVED: value});
        }
        crd
    }

    #[test]
    fn protected_groups_need_the_approval_annotation() {
        assert!(is_protected_group("about.k8s.io") && is_protected_group("kubernetes.io"));
        assert!(!is_protected_group("multicluster.x-k8s.io"));
        let error = prepare(&mut cluster_property_crd(None), &Value::Null).unwrap_err();
        assert_eq!(
            error.message,
            "CustomResourceDefinition.apiextensions.k8s.io \"clusterproperties.about.k8s.io\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        let error = prepare(&mut cluster_property_crd(Some("yes")), &Value::Null).unwrap_err();
        assert!(
            error.message.contains("Invalid value: \"yes\""),
            "{}",
            error.message
        );
        for fine in [
            "https://github.com/kubernetes/enhancements/pull/3084",
            "unapproved, testing",
        ] {
            prepare(&mut cluster_property_crd(Some(fine)), &Value::Null).unwrap();
        }
        // An update that leaves the (missing) approval as it was is not refused.
        let live = cluster_property_crd(None);
        prepare(&mut cluster_property_crd(None), &live).unwrap();
    }

    #[test]
    fn protected_crds_get_the_approval_condition() {
        let url = "https://github.com/kubernetes/enhancements/pull/3084";
        let status = established_status(&cluster_property_crd(Some(url)), &Value::Null, "t");
        assert_eq!(
            status["conditions"][2],
            json!({"type": "KubernetesAPIApprovalPolicyConformant", "status": "True",
                "lastTransitionTime": "t", "reason": "ApprovedAnnotation",
                "message": format!("approved in {url}")})
        );
        let status = established_status(&crd(), &Value::Null, "t");
        assert_eq!(status["conditions"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn deleting_marks_the_crd_terminating_with_the_cleanup_finalizer() {
        let marked = terminate(&crd(), "t");
        assert_eq!(marked["metadata"]["deletionTimestamp"], "t");
        assert_eq!(marked["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
        assert_eq!(marked["status"]["conditions"][0]["type"], "Terminating");
    }

    #[test]
    fn status_is_established_and_keeps_transition_times() {
        let first = established_status(&crd(), &Value::Null, "2024-01-01T00:00:00Z");
        assert_eq!(first["conditions"][1]["type"], "Established");
        assert_eq!(
            first["acceptedNames"]["listKind"],
            "MultiClusterServiceList"
        );
        assert_eq!(first["storedVersions"], json!(["v1alpha1"]));
        let again = established_status(&crd(), &first, "2025-01-01T00:00:00Z");
        assert_eq!(first, again);
    }
}
