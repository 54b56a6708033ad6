//! Decoding `request.object` as a MultiClusterService, with the errors Karmada's decoder gives
//! (apiVersion/kind checks, then Go `encoding/json` type errors). A failure here is answered with
//! HTTP 400 (docs/validation.md#outcome). Unknown fields are ignored and `null` means "zero value", as in Go.

use std::collections::BTreeMap;

use crate::json::{self, Json, Object};
use crate::schema::{MCS_SCHEMA, check};
use crate::time::Timestamp;

pub const GROUP: &str = "networking.karmada.io";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "MultiClusterService";

/// How much of the raw object a "missing kind" message quotes before eliding the rest.
const QUOTE_LIMIT: usize = 4096;

/// The parts of a MultiClusterService the policy reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mcs {
    pub meta: ObjectMeta,
    pub spec: Spec,
    pub ingress: Vec<Ingress>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectMeta {
    pub name: String,
    pub generate_name: String,
    pub namespace: String,
    pub uid: String,
    pub resource_version: String,
    pub generation: i64,
    pub creation_timestamp: Option<Timestamp>,
    pub deletion_timestamp: Option<Timestamp>,
    pub deletion_grace_period_seconds: Option<i64>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner_references: Vec<OwnerReference>,
    pub finalizers: Vec<String>,
    pub managed_fields: Vec<ManagedFields>,
    /// `metadata` was absent or null in the JSON (defaulting must then create it).
    pub absent: bool,
    /// `metadata.labels` was absent or null in the JSON.
    pub labels_absent: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub controller: Option<bool>,
    pub block_owner_deletion: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFields {
    pub operation: String,
    pub fields_type: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// `None` when absent or null: Go keeps a nil slice, which differs from `[]` on update.
    pub types: Option<Vec<String>>,
    pub ports: Vec<Port>,
    pub provider_clusters: Vec<String>,
    pub consumer_clusters: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Port {
    pub name: String,
    pub port: i32,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ingress {
    pub ip: String,
    pub hostname: String,
}

/// Decodes JSON text as a MultiClusterService, or returns the decode error message.
pub fn decode_mcs(raw: &str) -> Result<Mcs, String> {
    if raw.trim().is_empty() {
        return Err("there is no content to decode".to_string());
    }
    let value = json::parse(raw).map_err(|e| e.to_string())?;
    let decoded = type_meta(&value, raw).and_then(|obj| {
        check(&value, &MCS_SCHEMA)?;
        Ok(extract(obj))
    });
    discard(value);
    decoded
}

/// Lets go of a parsed document. In the component nothing is ever freed (`bump.rs`) and the
/// instance ends with the call, so dropping the tree would only walk it (about a tenth of a
/// validate call); natively it is dropped as usual.
fn discard(value: Json<'_>) {
    #[cfg(target_arch = "wasm32")]
    std::mem::forget(value);
    #[cfg(not(target_arch = "wasm32"))]
    drop(value);
}

/// The apiVersion/kind check the Kubernetes deserializer makes before decoding.
fn type_meta<'v, 'a>(value: &'v Json<'a>, raw: &str) -> Result<&'v Object<'a>, String> {
    let Some(obj) = value.as_object() else {
        return Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            value.kind()
        ));
    };
    let api_version = type_meta_field(obj, "apiVersion")?;
    let kind = type_meta_field(obj, "kind")?;
    // The deserializer fills what is missing from the target type (`gvkWithDefaults`), so an
    // object without kind and apiVersion decodes as a MultiClusterService.
    let (group, version) = split_api_version(api_version)?;
    let kind = if kind.is_empty() { KIND } else { kind };
    let (group, version) = match (group, version) {
        ("", "") => (GROUP, VERSION),
        (g, "") if g == GROUP => (GROUP, VERSION),
        gv => gv,
    };
    if version.is_empty() {
        return Err(format!(
            "Object 'apiVersion' is missing in '{}'",
            quote_raw(raw)
        ));
    }
    if (group, version, kind) != (GROUP, VERSION, KIND) {
        return Err(format!(
            "unable to decode {group}/{version}, Kind={kind} into *v1alpha1.MultiClusterService"
        ));
    }
    Ok(obj)
}

fn type_meta_field<'v>(obj: &'v Object<'_>, key: &str) -> Result<&'v str, String> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(""),
        Some(Json::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{key} of type string",
            other.kind()
        )),
    }
}

/// `schema.ParseGroupVersion`: `v1` is the core group, `g/v` a named one.
fn split_api_version(api_version: &str) -> Result<(&str, &str), String> {
    match api_version.split_once('/') {
        _ if api_version.matches('/').count() > 1 => {
            Err(format!("unexpected GroupVersion string: {api_version}"))
        }
        Some((group, version)) => Ok((group, version)),
        None => Ok(("", api_version)),
    }
}

fn quote_raw(raw: &str) -> String {
    if raw.len() <= QUOTE_LIMIT {
        return raw.to_string();
    }
    let mut end = QUOTE_LIMIT;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &raw[..end], raw.len())
}

// ---- extraction: the schema check has passed, so every field has the right JSON type ----

fn extract(obj: &Object<'_>) -> Mcs {
    let meta = obj.get("metadata").and_then(Json::as_object);
    let spec = obj.get("spec").and_then(Json::as_object);
    let status = obj.get("status").and_then(Json::as_object);
    Mcs {
        meta: meta.map(extract_meta).unwrap_or(ObjectMeta {
            absent: true,
            labels_absent: true,
            ..ObjectMeta::default()
        }),
        spec: spec.map(extract_spec).unwrap_or_default(),
        ingress: status
            .and_then(|s| s.get("loadBalancer"))
            .and_then(Json::as_object)
            .map(|lb| {
                objects(lb, "ingress")
                    .map(|i| Ingress {
                        ip: string(i, "ip"),
                        hostname: string(i, "hostname"),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn extract_meta(m: &Object<'_>) -> ObjectMeta {
    ObjectMeta {
        name: string(m, "name"),
        generate_name: string(m, "generateName"),
        namespace: string(m, "namespace"),
        uid: string(m, "uid"),
        resource_version: string(m, "resourceVersion"),
        generation: m.get("generation").and_then(Json::as_i64).unwrap_or(0),
        creation_timestamp: timestamp(m, "creationTimestamp"),
        deletion_timestamp: timestamp(m, "deletionTimestamp"),
        deletion_grace_period_seconds: m.get("deletionGracePeriodSeconds").and_then(Json::as_i64),
        labels: string_map(m, "labels"),
        annotations: string_map(m, "annotations"),
        owner_references: objects(m, "ownerReferences")
            .map(|r| OwnerReference {
                api_version: string(r, "apiVersion"),
                kind: string(r, "kind"),
                name: string(r, "name"),
                uid: string(r, "uid"),
                controller: r.get("controller").and_then(Json::as_bool),
                block_owner_deletion: r.get("blockOwnerDeletion").and_then(Json::as_bool),
            })
            .collect(),
        finalizers: strings(m, "finalizers"),
        managed_fields: objects(m, "managedFields")
            .map(|f| ManagedFields {
                operation: string(f, "operation"),
                fields_type: string(f, "fieldsType"),
            })
            .collect(),
        absent: false,
        labels_absent: m.get("labels").is_none_or(Json::is_null),
    }
}

fn extract_spec(s: &Object<'_>) -> Spec {
    let cluster_names =
        |key: &str| -> Vec<String> { objects(s, key).map(|c| string(c, "name")).collect() };
    Spec {
        types: s
            .get("types")
            .filter(|v| !v.is_null())
            .map(|_| strings(s, "types")),
        ports: objects(s, "ports")
            .map(|p| Port {
                name: string(p, "name"),
                port: p
                    .get("port")
                    .and_then(Json::as_i64)
                    .and_then(|n| i32::try_from(n).ok())
                    .unwrap_or(0),
            })
            .collect(),
        provider_clusters: cluster_names("providerClusters"),
        consumer_clusters: cluster_names("consumerClusters"),
    }
}

fn string(m: &Object<'_>, key: &str) -> String {
    m.get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(m: &Object<'_>, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn string_map(m: &Object<'_>, key: &str) -> BTreeMap<String, String> {
    m.get(key)
        .and_then(Json::as_object)
        .map(|o| {
            // Collected in document order: a repeated key's last value wins.
            o.entries()
                .map(|(k, v)| (k.to_string(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn timestamp(m: &Object<'_>, key: &str) -> Option<Timestamp> {
    m.get(key)
        .and_then(Json::as_str)
        .and_then(|s| Timestamp::parse_rfc3339(s).ok())
}

/// The objects of a list field; `null` items decode to zero-valued structs in Go.
fn objects<'v, 'a>(m: &'v Object<'a>, key: &str) -> impl Iterator<Item = &'v Object<'a>> {
    m.get(key)
        .and_then(Json::as_array)
        .unwrap_or_default()
        .iter()
        .map(|v| v.as_object().unwrap_or(&json::EMPTY_OBJECT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcs(body: &str) -> String {
        format!(
            r#"{{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService",{body}}}"#
        )
    }

    #[test]
    fn decodes_a_full_object() {
        let raw = mcs(
            r#""metadata":{"name":"foo","namespace":"default","labels":{"a":"b"},"generation":2},
               "spec":{"types":["CrossCluster"],"ports":[{"name":"http","port":80}],
                       "providerClusters":[{"name":"m1"}],"consumerClusters":[{"name":"m2"},null]},
               "status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}"#,
        );
        let m = decode_mcs(&raw).unwrap();
        assert_eq!(m.meta.name, "foo");
        assert_eq!(m.meta.generation, 2);
        assert_eq!(m.meta.labels.get("a").map(String::as_str), Some("b"));
        assert_eq!(m.spec.types, Some(vec!["CrossCluster".to_string()]));
        assert_eq!(
            m.spec.ports,
            vec![Port {
                name: "http".into(),
                port: 80
            }]
        );
        assert_eq!(m.spec.consumer_clusters, vec!["m2", ""]);
        assert_eq!(m.ingress[0].ip, "1.2.3.4");
    }

    #[test]
    fn nulls_and_missing_fields_are_zero_values() {
        let m = decode_mcs(&mcs(r#""metadata":null,"spec":{"ports":[{"port":null}]}"#)).unwrap();
        assert!(m.meta.absent);
        assert_eq!(m.spec.ports[0].port, 0);
    }

    #[test]
    fn fills_missing_kind_and_api_version_from_the_target_type() {
        assert!(decode_mcs(r#"{"metadata":{"name":"a"}}"#).is_ok());
        assert!(decode_mcs(r#"{"kind":"MultiClusterService"}"#).is_ok());
        assert!(decode_mcs(r#"{"apiVersion":"networking.karmada.io/v1alpha1"}"#).is_ok());
        assert!(
            decode_mcs(r#"{"apiVersion":"networking.karmada.io/","kind":"MultiClusterService"}"#)
                .is_ok()
        );
        assert_eq!(
            decode_mcs(r#"{"apiVersion":"v1"}"#).unwrap_err(),
            "unable to decode /v1, Kind=MultiClusterService into *v1alpha1.MultiClusterService"
        );
        assert_eq!(
            decode_mcs(r#"{"apiVersion":"other.io/","kind":"MultiClusterService"}"#).unwrap_err(),
            r#"Object 'apiVersion' is missing in '{"apiVersion":"other.io/","kind":"MultiClusterService"}'"#
        );
    }

    #[test]
    fn rejects_other_kinds() {
        assert_eq!(
            decode_mcs(r#"{"apiVersion":"v1","kind":"Service"}"#).unwrap_err(),
            "unable to decode /v1, Kind=Service into *v1alpha1.MultiClusterService"
        );
        assert_eq!(
            decode_mcs(
                r#"{"apiVersion":"networking.karmada.io/v1alpha2","kind":"MultiClusterService"}"#
            )
            .unwrap_err(),
            "unable to decode networking.karmada.io/v1alpha2, Kind=MultiClusterService into *v1alpha1.MultiClusterService"
        );
    }

    #[test]
    fn rejects_non_objects_and_bad_json() {
        assert!(
            decode_mcs("42")
                .unwrap_err()
                .contains("cannot unmarshal number")
        );
        assert!(decode_mcs("{").is_err());
        assert_eq!(decode_mcs("").unwrap_err(), "there is no content to decode");
    }

    #[test]
    fn reports_type_errors_with_the_go_field_path() {
        assert_eq!(
            decode_mcs(&mcs(r#""spec":{"ports":[{"port":"80"}]}"#)).unwrap_err(),
            "json: cannot unmarshal string into Go struct field ExposurePort.spec.ports.port of type int32"
        );
        assert_eq!(
            decode_mcs(&mcs(r#""spec":{"ports":[{"port":3000000000}]}"#)).unwrap_err(),
            "json: cannot unmarshal number 3000000000 into Go struct field ExposurePort.spec.ports.port of type int32"
        );
        assert_eq!(
            decode_mcs(&mcs(r#""spec":{"types":"CrossCluster"}"#)).unwrap_err(),
            "json: cannot unmarshal string into Go struct field MultiClusterServiceSpec.spec.types of type []v1alpha1.ExposureType"
        );
        assert_eq!(
            decode_mcs(&mcs(r#""metadata":{"labels":{"a":1}}"#)).unwrap_err(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
    }

    #[test]
    fn a_repeated_key_counts_with_its_last_value_as_in_serde_json() {
        assert!(decode_mcs(&mcs(r#""spec":{"ports":"x"},"spec":{}"#)).is_ok());
        assert!(decode_mcs(&mcs(r#""metadata":{"labels":{"a":1,"a":"x"}}"#)).is_ok());
        let m = decode_mcs(&mcs(
            r#""metadata":{"name":"a","labels":{"k":"1","k":"2"},"name":"b"}"#,
        ))
        .unwrap();
        assert_eq!(m.meta.name, "b");
        assert_eq!(m.meta.labels.get("k").map(String::as_str), Some("2"));
    }

    #[test]
    fn reports_the_first_bad_map_value_in_key_order() {
        assert_eq!(
            decode_mcs(&mcs(r#""metadata":{"labels":{"b":1,"a":true}}"#)).unwrap_err(),
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"
        );
    }

    #[test]
    fn rejects_bad_timestamps() {
        let err = decode_mcs(&mcs(r#""metadata":{"creationTimestamp":"yesterday"}"#)).unwrap_err();
        assert!(err.starts_with("parsing time \"yesterday\""), "{err}");
    }

    #[test]
    fn elides_huge_objects_in_missing_kind_messages() {
        let raw = format!(r#"{{"apiVersion":"x.io/","x":"{}"}}"#, "a".repeat(10_000));
        let err = decode_mcs(&raw).unwrap_err();
        assert!(err.len() < 4200, "{}", err.len());
        assert!(err.ends_with("bytes)'"));
    }
}
