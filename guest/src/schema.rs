//! The Go types of a MultiClusterService as a schema, so that a JSON value of the wrong type
//! produces the same error Go's `encoding/json` produces:
//! `json: cannot unmarshal <json type> into Go struct field <Struct>.<path> of type <go type>`.

use crate::json::Json;

use crate::time::Timestamp;

/// A Go type as `encoding/json` sees it.
pub enum Ty {
    /// `string` or a named string type (the name is what Go prints).
    Str(&'static str),
    /// A signed integer type with its bit width.
    Int(&'static str, u32),
    Bool,
    /// `metav1.Time`: a string holding an RFC 3339 timestamp.
    Time,
    /// `[]T`, with the Go name of the slice type.
    List(&'static str, &'static Ty),
    /// `map[string]T`, with the Go name of the map type.
    Map(&'static str, &'static Ty),
    /// A struct: its Go name (as printed in errors) and the JSON keys it knows.
    Struct(&'static str, &'static [(&'static str, Ty)]),
    /// A value the policy does not read (any JSON accepted).
    Any,
}

const STRING: Ty = Ty::Str("string");
const INT32: Ty = Ty::Int("int32", 32);
const INT64: Ty = Ty::Int("int64", 64);
const STRINGS: Ty = Ty::List("[]string", &STRING);
const STRING_MAP: Ty = Ty::Map("map[string]string", &STRING);

const OWNER_REFERENCE: Ty = Ty::Struct(
    "v1.OwnerReference",
    &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("name", STRING),
        ("uid", Ty::Str("types.UID")),
        ("controller", Ty::Bool),
        ("blockOwnerDeletion", Ty::Bool),
    ],
);

const MANAGED_FIELDS_ENTRY: Ty = Ty::Struct(
    "v1.ManagedFieldsEntry",
    &[
        ("manager", STRING),
        ("operation", Ty::Str("v1.ManagedFieldsOperationType")),
        ("apiVersion", STRING),
        ("time", Ty::Time),
        ("fieldsType", STRING),
        ("fieldsV1", Ty::Any),
        ("subresource", STRING),
    ],
);

const OBJECT_META: Ty = Ty::Struct(
    "v1.ObjectMeta",
    &[
        ("name", STRING),
        ("generateName", STRING),
        ("namespace", STRING),
        ("selfLink", STRING),
        ("uid", Ty::Str("types.UID")),
        ("resourceVersion", STRING),
        ("generation", INT64),
        ("creationTimestamp", Ty::Time),
        ("deletionTimestamp", Ty::Time),
        ("deletionGracePeriodSeconds", INT64),
        ("labels", STRING_MAP),
        ("annotations", STRING_MAP),
        (
            "ownerReferences",
            Ty::List("[]v1.OwnerReference", &OWNER_REFERENCE),
        ),
        ("finalizers", STRINGS),
        (
            "managedFields",
            Ty::List("[]v1.ManagedFieldsEntry", &MANAGED_FIELDS_ENTRY),
        ),
    ],
);

const EXPOSURE_PORT: Ty = Ty::Struct(
    "v1alpha1.ExposurePort",
    &[("name", STRING), ("port", INT32)],
);
const CLUSTER: Ty = Ty::Struct("v1alpha1.ClusterSelector", &[("name", STRING)]);

const SPEC: Ty = Ty::Struct(
    "v1alpha1.MultiClusterServiceSpec",
    &[
        (
            "types",
            Ty::List("[]v1alpha1.ExposureType", &Ty::Str("v1alpha1.ExposureType")),
        ),
        ("ports", Ty::List("[]v1alpha1.ExposurePort", &EXPOSURE_PORT)),
        (
            "range",
            Ty::Struct("v1alpha1.ExposureRange", &[("clusterNames", STRINGS)]),
        ),
        ("serviceProvisionClusters", STRINGS),
        ("serviceConsumptionClusters", STRINGS),
        (
            "providerClusters",
            Ty::List("[]v1alpha1.ClusterSelector", &CLUSTER),
        ),
        (
            "consumerClusters",
            Ty::List("[]v1alpha1.ClusterSelector", &CLUSTER),
        ),
    ],
);

const PORT_STATUS: Ty = Ty::Struct(
    "v1.PortStatus",
    &[
        ("port", INT32),
        ("protocol", Ty::Str("v1.Protocol")),
        ("error", STRING),
    ],
);

const INGRESS: Ty = Ty::Struct(
    "v1.LoadBalancerIngress",
    &[
        ("ip", STRING),
        ("hostname", STRING),
        ("ipMode", Ty::Str("v1.LoadBalancerIPMode")),
        ("ports", Ty::List("[]v1.PortStatus", &PORT_STATUS)),
    ],
);

const CONDITION: Ty = Ty::Struct(
    "v1.Condition",
    &[
        ("type", STRING),
        ("status", Ty::Str("v1.ConditionStatus")),
        ("observedGeneration", INT64),
        ("lastTransitionTime", Ty::Time),
        ("reason", STRING),
        ("message", STRING),
    ],
);

const STATUS: Ty = Ty::Struct(
    "v1.ServiceStatus",
    &[
        (
            "loadBalancer",
            Ty::Struct(
                "v1.LoadBalancerStatus",
                &[("ingress", Ty::List("[]v1.LoadBalancerIngress", &INGRESS))],
            ),
        ),
        ("conditions", Ty::List("[]v1.Condition", &CONDITION)),
    ],
);

pub const MCS_SCHEMA: Ty = Ty::Struct(
    "v1alpha1.MultiClusterService",
    &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("metadata", OBJECT_META),
        ("spec", SPEC),
        ("status", STATUS),
    ],
);

/// Checks `value` against `ty`; the error is Go's message for the first mismatch.
pub fn check(value: &Json<'_>, ty: &Ty) -> Result<(), String> {
    check_at(value, ty, &Where::Root)
}

/// Where a value sits: the innermost Go struct and the chain of JSON keys from the root. A
/// chain of borrowed links, rendered only when there is an error to report: building the path
/// of every field checked was most of the cost of a successful check.
enum Where<'a> {
    Root,
    Field {
        parent: &'a Where<'a>,
        go_struct: &'static str,
        key: &'a str,
    },
}

impl Where<'_> {
    fn field<'a>(&'a self, go_struct: &'static str, key: &'a str) -> Where<'a> {
        Where::Field {
            parent: self,
            go_struct,
            key,
        }
    }

    /// The dotted JSON path, e.g. `spec.ports.port`.
    fn push_path(&self, out: &mut String) {
        if let Where::Field { parent, key, .. } = self {
            parent.push_path(out);
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        }
    }

    fn mismatch(&self, what: &str, go_type: &str) -> String {
        let Where::Field { go_struct, .. } = self else {
            return format!("json: cannot unmarshal {what} into Go value of type {go_type}");
        };
        let mut path = String::new();
        self.push_path(&mut path);
        let short = go_struct.rsplit('.').next().unwrap_or(go_struct);
        format!(
            "json: cannot unmarshal {what} into Go struct field {short}.{path} of type {go_type}"
        )
    }
}

fn check_at(value: &Json<'_>, ty: &Ty, at: &Where<'_>) -> Result<(), String> {
    if value.is_null() {
        return Ok(());
    }
    match ty {
        Ty::Any => Ok(()),
        Ty::Str(name) => match value {
            Json::String(_) => Ok(()),
            other => Err(at.mismatch(other.kind(), name)),
        },
        Ty::Bool => match value {
            Json::Bool(_) => Ok(()),
            other => Err(at.mismatch(other.kind(), "bool")),
        },
        Ty::Int(name, bits) => check_int(value, name, *bits, at),
        Ty::Time => check_time(value),
        Ty::List(name, item) => match value {
            Json::Array(items) => items.iter().try_for_each(|v| check_at(v, item, at)),
            other => Err(at.mismatch(other.kind(), name)),
        },
        Ty::Map(name, item) => match value {
            // In key order, each key's last value; but only sorted when something is wrong.
            Json::Object(entries) => entries
                .entries()
                .try_for_each(|(_, v)| check_at(v, item, at))
                .or_else(|_| {
                    entries
                        .sorted()
                        .values()
                        .try_for_each(|v| check_at(v, item, at))
                }),
            other => Err(at.mismatch(other.kind(), name)),
        },
        Ty::Struct(name, fields) => match value {
            Json::Object(entries) => fields.iter().try_for_each(|(key, fty)| {
                entries
                    .get(key)
                    .map_or(Ok(()), |v| check_at(v, fty, &at.field(name, key)))
            }),
            other => Err(at.mismatch(other.kind(), name)),
        },
    }
}

fn check_int(value: &Json<'_>, name: &str, bits: u32, at: &Where<'_>) -> Result<(), String> {
    let Json::Number(n) = value else {
        return Err(at.mismatch(value.kind(), name));
    };
    let fits = n.as_i64().is_some_and(|i| {
        let max = (1i128 << (bits - 1)) - 1;
        let min = -(1i128 << (bits - 1));
        (min..=max).contains(&(i as i128))
    });
    if fits {
        Ok(())
    } else {
        Err(at.mismatch(&format!("number {n}"), name))
    }
}

fn check_time(value: &Json<'_>) -> Result<(), String> {
    match value {
        Json::String(s) => Timestamp::parse_rfc3339(s).map(|_| ()),
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            other.kind()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_checked_by_its_last_value() {
        let ok = crate::json::parse(r#"{"metadata":{"name":1,"name":"web"}}"#).unwrap();
        assert_eq!(check(&ok, &MCS_SCHEMA), Ok(()));
        let bad = crate::json::parse(r#"{"metadata":{"name":"web","name":1}}"#).unwrap();
        assert_eq!(
            check(&bad, &MCS_SCHEMA),
            Err("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string".to_string())
        );
    }

    #[test]
    fn fields_are_checked_in_the_structs_order() {
        // Both wrong: the error names the field the Go struct declares first.
        let both = crate::json::parse(r#"{"spec":{"ports":1,"types":2}}"#).unwrap();
        assert_eq!(
            check(&both, &MCS_SCHEMA),
            Err("json: cannot unmarshal number into Go struct field MultiClusterServiceSpec.spec.types of type []v1alpha1.ExposureType".to_string())
        );
    }
}
