//! What a ServiceExport and its Service say, read from their JSON: whether the export is valid
//! and, when it is, the properties it exports (the ones the ServiceImport takes from the winner
//! and on which exports can conflict).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::FieldError;
use crate::field::BadValue;
use crate::names;
use crate::time::Timestamp;

/// `spec.clusterIP` of a headless Service.
const HEADLESS: &str = "None";

/// One port as a ServiceImport lists it (`v1beta1.ServicePort`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Port {
    /// `name`, empty when absent.
    pub name: String,
    /// `protocol`, `TCP` when absent.
    pub protocol: String,
    /// `appProtocol`.
    pub app_protocol: Option<String>,
    /// `port`.
    pub port: i64,
}

/// The properties an export gives the ServiceImport.
#[derive(Clone, Debug, PartialEq)]
pub struct Properties {
    /// The Service has `clusterIP: None`.
    pub headless: bool,
    /// `spec.ports`, in order.
    pub ports: Vec<Port>,
    /// `spec.sessionAffinity`, `None` when absent.
    pub session_affinity: String,
    /// `spec.sessionAffinityConfig` (`null` when absent; ignored when the affinity is `None`).
    pub session_affinity_config: Value,
    /// `spec.internalTrafficPolicy`, `Cluster` when absent.
    pub internal_traffic_policy: String,
    /// `spec.trafficDistribution`.
    pub traffic_distribution: Option<String>,
    /// The IP families the exporter's endpoints are in: the Service's `spec.ipFamilies`
    /// (`IPv4`, `IPv6`), or, when it lists none (a headless Service read from an API server that
    /// leaves them out), the address types of its source slices; empty: unknown.
    pub ip_families: Vec<String>,
    /// The export's `spec.exportedLabels`.
    pub exported_labels: BTreeMap<String, String>,
    /// The export's `spec.exportedAnnotations`.
    pub exported_annotations: BTreeMap<String, String>,
}

/// Whether an export can contribute (its `Valid` condition).
#[derive(Clone, Debug, PartialEq)]
pub enum Validity {
    Valid(Box<Properties>),
    /// The member has no Service of the export's name.
    NoService,
    /// The Service is of a type that cannot be exported (`ExternalName`).
    InvalidServiceType(String),
    /// The member shares its cluster id with another member: the text names them.
    DuplicateClusterId(String),
}

/// A member's ServiceExport, as the rules read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    /// `metadata.creationTimestamp` (absent: newer than any export that has one).
    pub created: Option<Timestamp>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.deletionTimestamp` is set: it is going and contributes nothing.
    pub deleting: bool,
    /// `status.conditions` as read.
    pub conditions: Vec<Value>,
    pub validity: Validity,
    /// Why entries of `spec.exportedLabels` or `spec.exportedAnnotations` were left out (the
    /// Kubernetes rules for labels and annotations), one field error each.
    pub skipped: Vec<String>,
}

/// Parses JSON text as an object, naming `what` in the error.
pub fn object(text: &str, what: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(format!("{what} is not a JSON object")),
        Err(e) => Err(format!("{what} is not JSON: {e}")),
    }
}

/// The string at `pointer`, when it is one.
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The string map at `pointer` (labels, annotations); non-string values are left out.
pub fn map_at(value: &Value, pointer: &str) -> BTreeMap<String, String> {
    value
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads a ServiceExport and the member's Service of the same name.
pub fn read(export: &str, service: Option<&str>) -> Result<Export, String> {
    let export = object(export, "the ServiceExport")?;
    let created = match str_at(&export, "/metadata/creationTimestamp") {
        Some(t) => Some(
            Timestamp::parse_rfc3339(t)
                .map_err(|e| format!("the ServiceExport's creationTimestamp: {e}"))?,
        ),
        None => None,
    };
    let (labels, mut skipped) = exported_labels(map_at(&export, "/spec/exportedLabels"));
    let (annotations, more) = exported_annotations(map_at(&export, "/spec/exportedAnnotations"));
    skipped.extend(more);
    let validity = match service {
        None => Validity::NoService,
        Some(text) => {
            let service = object(text, "the Service")?;
            match str_at(&service, "/spec/type") {
                Some(t @ "ExternalName") => Validity::InvalidServiceType(t.to_string()),
                _ => Validity::Valid(Box::new(Properties {
                    exported_labels: labels,
                    exported_annotations: annotations,
                    ..properties(&service)
                })),
            }
        }
    };
    Ok(Export {
        created,
        generation: export
            .pointer("/metadata/generation")
            .and_then(Value::as_i64),
        deleting: export
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null()),
        conditions: export
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        validity,
        skipped,
    })
}

/// The exported labels that are valid labels (key a qualified name, value a label value), and
/// a field error for each one left out.
pub fn exported_labels(
    labels: BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    const PATH: &str = "spec.exportedLabels";
    let mut skipped = Vec::new();
    let kept = labels
        .into_iter()
        .filter(|(k, v)| {
            let errs: Vec<FieldError> = names::qualified_name(k)
                .into_iter()
                .map(|m| FieldError::invalid(PATH, BadValue::Str(k.clone()), m))
                .chain(
                    names::label_value(v)
                        .into_iter()
                        .map(|m| FieldError::invalid(PATH, BadValue::Str(v.clone()), m)),
                )
                .collect();
            skipped.extend(errs.iter().map(FieldError::render));
            errs.is_empty()
        })
        .collect();
    (kept, skipped)
}

/// The exported annotations whose keys are valid (a qualified name, case aside), all of them
/// left out when they exceed 256 KiB together, and a field error for each one left out.
pub fn exported_annotations(
    annotations: BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    const PATH: &str = "spec.exportedAnnotations";
    const TOTAL_MAX: usize = 256 * 1024;
    let mut skipped = Vec::new();
    let kept: BTreeMap<String, String> = annotations
        .into_iter()
        .filter(|(k, _)| {
            let errs: Vec<String> = names::qualified_name(&k.to_lowercase())
                .into_iter()
                .map(|m| FieldError::invalid(PATH, BadValue::Str(k.clone()), m).render())
                .collect();
            let ok = errs.is_empty();
            skipped.extend(errs);
            ok
        })
        .collect();
    let total: usize = kept.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > TOTAL_MAX {
        skipped.push(FieldError::too_long_bytes(PATH, TOTAL_MAX).render());
        return (BTreeMap::new(), skipped);
    }
    (kept, skipped)
}

/// The ports of a `spec` (a Service's or a ServiceImport's), normalised.
pub fn ports(spec: &Value) -> Vec<Port> {
    spec.get("ports")
        .and_then(Value::as_array)
        .map(|ports| {
            ports
                .iter()
                .map(|p| Port {
                    name: str_at(p, "/name").unwrap_or_default().to_string(),
                    protocol: str_at(p, "/protocol").unwrap_or("TCP").to_string(),
                    app_protocol: str_at(p, "/appProtocol").map(str::to_string),
                    port: p.get("port").and_then(Value::as_i64).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn properties(service: &Value) -> Properties {
    let spec = service.get("spec").cloned().unwrap_or(Value::Null);
    let session_affinity = str_at(&spec, "/sessionAffinity")
        .unwrap_or("None")
        .to_string();
    let session_affinity_config = if session_affinity == "None" {
        Value::Null
    } else {
        spec.get("sessionAffinityConfig")
            .cloned()
            .unwrap_or(Value::Null)
    };
    Properties {
        headless: str_at(&spec, "/clusterIP") == Some(HEADLESS),
        ports: ports(&spec),
        session_affinity,
        session_affinity_config,
        internal_traffic_policy: str_at(&spec, "/internalTrafficPolicy")
            .unwrap_or("Cluster")
            .to_string(),
        traffic_distribution: str_at(&spec, "/trafficDistribution").map(str::to_string),
        ip_families: ip_families(&spec),
        exported_labels: BTreeMap::new(),
        exported_annotations: BTreeMap::new(),
    }
}

/// The IP families a Service `spec` lists in `ipFamilies`, each once, in its order.
fn ip_families(spec: &Value) -> Vec<String> {
    let mut families: Vec<String> = Vec::new();
    for family in spec
        .get("ipFamilies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if matches!(family, IPV4 | IPV6) && !families.iter().any(|f| f == family) {
            families.push(family.to_string());
        }
    }
    families
}

/// The IP families of EndpointSlices, from their address types (`FQDN` has none), each once,
/// in the order met.
pub fn slice_families<'a>(address_types: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut families: Vec<String> = Vec::new();
    for family in address_types {
        if matches!(family, IPV4 | IPV6) && !families.iter().any(|f| f == family) {
            families.push(family.to_string());
        }
    }
    families
}

/// The IP families, as Services and EndpointSlices name them.
pub const IPV4: &str = "IPv4";
pub const IPV6: &str = "IPv6";
