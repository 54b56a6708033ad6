//! Admission of a ServiceExport (`multicluster.x-k8s.io`, `v1alpha1` and `v1beta1`): its name
//! names the Service it exports, so it must be a valid Service name (a DNS-1035 label), checked
//! with the ObjectMeta rules the MultiClusterService's metadata gets, rendered the same way.

use serde_json::Value;

use super::GROUP;
use super::export::{map_at, str_at};
use crate::decode::ObjectMeta;
use crate::field::aggregate;
use crate::{Denial, Rejection, meta};

pub const KIND: &str = "ServiceExport";
const VERSIONS: [&str; 2] = ["v1alpha1", "v1beta1"];

/// The object, when `text` is a ServiceExport of our group (any version).
pub fn service_export(text: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    let (group, _) = str_at(&value, "/apiVersion")?.split_once('/')?;
    (group == GROUP && str_at(&value, "/kind") == Some(KIND)).then_some(value)
}

/// Validates a ServiceExport being created or updated: `Ok` with no warnings, or why not.
pub fn validate(object: &Value) -> Result<Vec<String>, Denial> {
    let api_version = str_at(object, "/apiVersion").unwrap_or_default();
    let version = api_version.split_once('/').map_or("", |(_, v)| v);
    if !VERSIONS.contains(&version) {
        return Err(Denial::Malformed(format!(
            "no kind \"{KIND}\" is registered for version \"{api_version}\""
        )));
    }
    let errors = meta::validate_create(&object_meta(object));
    if errors.is_empty() {
        return Ok(Vec::new());
    }
    Err(Denial::Forbidden(Rejection {
        message: aggregate(&errors),
        errors,
        warnings: Vec::new(),
    }))
}

fn object_meta(object: &Value) -> ObjectMeta {
    let text = |p: &str| str_at(object, p).unwrap_or_default().to_string();
    ObjectMeta {
        name: text("/metadata/name"),
        generate_name: text("/metadata/generateName"),
        namespace: text("/metadata/namespace"),
        generation: object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
        labels: map_at(object, "/metadata/labels"),
        annotations: map_at(object, "/metadata/annotations"),
        ..ObjectMeta::default()
    }
}
