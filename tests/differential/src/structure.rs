//! Structured inputs: calls built field by field from arbitrary bytes (`arbitrary`), so that
//! MultiClusterServices, Services and EndpointSlices get past decoding and reach the deep rules
//! (immutability on update, owner references, finalizers, port filtering, headlessness, ...).
//! Strings mostly come from dictionaries of values that matter to some rule (valid and invalid
//! names at the length limits, the labels the filter reads, timestamps, IPs), sometimes from the
//! bytes themselves; every field is sometimes absent, `null` or of the wrong JSON type.

use std::cell::Cell;

use arbitrary::{Result, Unstructured};
use guest::defaults::PERMANENT_ID_LABEL;
use guest::filter::{
    DISPATCH_MANAGER, IMPORT_MANAGER, MANAGED_BY_LABEL, PROVISION_CLUSTER_ANNOTATION,
    SERVICE_NAME_LABEL,
};
use guest::service::{CREATED_BY, CREATED_BY_LABEL};
use guest::sync::FINALIZER;
use mcs_policy::engine::types as h;
use mcs_policy::engine::{PassSlices, convert};
use serde_json::{Map, Value, json};

use crate::Call;

mod clusterset;
pub use clusterset::{clusterset, derived_name};

const NAMES: &[&str] = &[
    "web",
    "shop",
    "a",
    "",
    "Web",
    "foo.bar",
    "-a",
    "a-",
    "1abc",
    "web-",
    "a_b",
    "é",
    "日本",
    "x\u{0}y",
    "\"q\"",
    "<&>",
    "a\u{2028}b",
    "\u{200b}",
    "a b",
    "web--x",
    "0",
];
const CLUSTERS: &[&str] = &[
    "member1", "member2", "m-3", "", "Member1", "member.1", "-m", "m-", "m_1", "é",
];
const PORT_NAMES: &[&str] = &["http", "metrics", "grpc", "", "HTTP", "h.ttp", "123", "-x"];
const LABEL_KEYS: &[&str] = &[
    "app",
    "example.com/name",
    PERMANENT_ID_LABEL,
    "Bad_Prefix/x",
    "/a",
    "a/",
    "a/b/c",
    "_x",
    "é",
    "",
    "kubernetes.io/service-name",
];
const LABEL_VALUES: &[&str] = &[
    "v",
    "",
    "my_value-1.2",
    "-x",
    "x-",
    "a b",
    "é",
    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    "keep",
];
const TIMESTAMPS: &[&str] = &[
    "2024-05-01T10:00:00Z",
    "2024-05-01T11:00:00+01:00",
    "2024-05-01T10:00:00.5Z",
    "2024-02-29T23:59:59-23:59",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999999Z",
];
const BAD_TIMESTAMPS: &[&str] = &[
    "2023-02-29T00:00:00Z",
    "2024-13-01T00:00:00Z",
    "yesterday",
    "2024-05-01T10:00:00",
    "2024-05-01T10:00:00.1234567890Z",
    "2024-05-01T10:00:00+24:00",
    "",
];
const IPS: &[&str] = &[
    "1.2.3.4",
    "010.001.0.255",
    "::1",
    "::ffff:01.02.03.004",
    "fe80::1%eth0",
    "1.2.3",
    "1.2.3.256",
    "[::1]",
    "::ffff:1.2.3",
    ":.",
    "::.",
    "1::2::3",
    "example.com",
    "",
];
const PORT_NUMBERS: &[i64] = &[
    80,
    443,
    8080,
    9090,
    1,
    65535,
    0,
    65536,
    -1,
    2147483647,
    -2147483648,
];
const FINALIZERS: &[&str] = &[
    "orphan",
    "foregroundDeletion",
    "example.com/f",
    "kubernetes",
    "bad/",
    "",
    "a/b/c",
];
const API_VERSIONS: &[&str] = &[
    "v1",
    "apps/v1",
    "",
    "/",
    "g/",
    "a/b/c",
    "networking.karmada.io/v1alpha1",
];

thread_local! {
    /// Whether the call being built is tidy: nearly every field present and well-typed, nearly
    /// every string the first entry of its dictionary, short lists. Tidy calls get past
    /// validation (a valid CrossCluster MCS needs dozens of fields right at once); messy ones
    /// explore everything else. Chosen once per call.
    static TIDY: Cell<bool> = const { Cell::new(false) };
}

fn tidy() -> bool {
    TIDY.with(Cell::get)
}

/// In a tidy call, true with odds 1 in 32 (a rare departure); else with odds `n` in `d`.
fn odds(u: &mut Unstructured<'_>, n: u8, d: u8) -> Result<bool> {
    if tidy() {
        u.ratio(1, 32)
    } else {
        u.ratio(n, d)
    }
}

/// A string: often the first (valid, common) entry of `dict` (almost always in a tidy call),
/// else any entry, sometimes a long run at a length limit, sometimes arbitrary.
pub fn string(u: &mut Unstructured<'_>, dict: &[&str]) -> Result<String> {
    if tidy() && !u.ratio(1, 32)? {
        return Ok(dict.first().copied().unwrap_or_default().to_string());
    }
    Ok(match u.int_in_range(0..=19)? {
        0 => u.arbitrary()?,
        1 => {
            let len = *u.choose(&[47usize, 48, 49, 62, 63, 64, 236, 240, 252, 253, 254, 300])?;
            let unit = *u.choose(&["a", "b-", "c.", "é"])?;
            let mut s = unit.repeat(len.div_ceil(unit.len()));
            s.truncate(s.floor_char_boundary(len));
            s
        }
        2..=9 => dict.first().copied().unwrap_or_default().to_string(),
        _ => u.choose(dict)?.to_string(),
    })
}

/// A list of 0–4 items (0–1 in a tidy call).
fn list<T>(
    u: &mut Unstructured<'_>,
    mut item: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let n = u.int_in_range(0..=if tidy() { 1 } else { 4 })?;
    (0..n).map(|_| item(u)).collect()
}

/// A value of some JSON type, for a field that expects another.
fn wrong(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(u.choose(&[
        json!(1),
        json!(-1),
        json!(3_000_000_000u64),
        json!(1.5),
        json!(true),
        json!("s"),
        json!([]),
        json!({}),
        json!([null]),
        json!({"a": 1}),
    ])?
    .clone())
}

/// Sets `key` in `map`: usually to `good`, sometimes absent or `null`, rarely a wrong-typed
/// value (an object has dozens of fields, and one wrong type makes all of it undecodable).
fn field(
    u: &mut Unstructured<'_>,
    map: &mut Map<String, Value>,
    key: &str,
    good: impl FnOnce(&mut Unstructured<'_>) -> Result<Value>,
) -> Result<()> {
    let value = match u.int_in_range(0..=255u8)? {
        _ if tidy() && !u.ratio(1, 64)? => good(u)?,
        0..=19 => return Ok(()),
        20..=23 => Value::Null,
        24 => wrong(u)?,
        _ => good(u)?,
    };
    map.insert(key.to_string(), value);
    Ok(())
}

fn str_value(u: &mut Unstructured<'_>, dict: &[&str]) -> Result<Value> {
    Ok(Value::String(string(u, dict)?))
}

/// A timestamp, rarely one that does not parse (which makes the whole object undecodable).
fn timestamp(u: &mut Unstructured<'_>) -> Result<Value> {
    if !tidy() && u.ratio(1, 16)? {
        str_value(u, BAD_TIMESTAMPS)
    } else {
        Ok(Value::String(u.choose(TIMESTAMPS)?.to_string()))
    }
}

fn string_map(u: &mut Unstructured<'_>, keys: &[&str], values: &[&str]) -> Result<Value> {
    let mut map = Map::new();
    for _ in 0..u.int_in_range(0..=if tidy() { 1 } else { 4 })? {
        let key = string(u, keys)?;
        let value = if !tidy() && u.ratio(1, 32)? {
            wrong(u)?
        } else {
            str_value(u, values)?
        };
        map.insert(key, value);
    }
    Ok(Value::Object(map))
}

/// A number: usually from `dict`, sometimes any `i32`, rarely any `i64`.
fn int_value(u: &mut Unstructured<'_>, dict: &[i64]) -> Result<Value> {
    if tidy() && !u.ratio(1, 32)? {
        return Ok(json!(dict.first().copied().unwrap_or_default()));
    }
    Ok(match u.int_in_range(0..=31)? {
        0 => json!(u.arbitrary::<i64>()?),
        1 | 2 => json!(u.arbitrary::<i32>()?),
        _ => json!(*u.choose(dict)?),
    })
}

// ---- MultiClusterService ----

fn object_meta(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut m = Map::new();
    field(u, &mut m, "name", |u| str_value(u, NAMES))?;
    if u.ratio(1, 4)? {
        field(u, &mut m, "generateName", |u| str_value(u, NAMES))?;
    }
    field(u, &mut m, "namespace", |u| str_value(u, NAMES))?;
    field(u, &mut m, "uid", |u| str_value(u, LABEL_VALUES))?;
    field(u, &mut m, "resourceVersion", |u| {
        str_value(u, &["1", "2", ""])
    })?;
    field(u, &mut m, "generation", |u| int_value(u, &[0, 1, 2, -1]))?;
    field(u, &mut m, "creationTimestamp", timestamp)?;
    if u.ratio(1, 3)? {
        field(u, &mut m, "deletionTimestamp", timestamp)?;
        field(u, &mut m, "deletionGracePeriodSeconds", |u| {
            int_value(u, &[30, 0])
        })?;
    }
    field(u, &mut m, "labels", |u| {
        string_map(u, LABEL_KEYS, LABEL_VALUES)
    })?;
    field(u, &mut m, "annotations", |u| {
        let mut map = string_map(u, LABEL_KEYS, LABEL_VALUES)?;
        if u.ratio(1, 32)? {
            // Around the 256 KiB total size limit.
            let len = 262_144 - *u.choose(&[1usize, 4, 5, 6])?;
            if let Some(map) = map.as_object_mut() {
                map.insert("big".into(), Value::String("x".repeat(len)));
            }
        }
        Ok(map)
    })?;
    field(u, &mut m, "ownerReferences", |u| {
        Ok(Value::Array(list(u, |u| {
            let mut r = Map::new();
            field(u, &mut r, "apiVersion", |u| str_value(u, API_VERSIONS))?;
            field(u, &mut r, "kind", |u| {
                str_value(u, &["Deployment", "Event", "", "Service"])
            })?;
            field(u, &mut r, "name", |u| str_value(u, NAMES))?;
            field(u, &mut r, "uid", |u| str_value(u, LABEL_VALUES))?;
            field(u, &mut r, "controller", |u| Ok(Value::Bool(u.arbitrary()?)))?;
            field(u, &mut r, "blockOwnerDeletion", |u| {
                Ok(Value::Bool(u.arbitrary()?))
            })?;
            Ok(Value::Object(r))
        })?))
    })?;
    field(u, &mut m, "finalizers", |u| {
        Ok(Value::Array(list(u, |u| str_value(u, FINALIZERS))?))
    })?;
    field(u, &mut m, "managedFields", |u| {
        Ok(Value::Array(list(u, |u| {
            let mut f = Map::new();
            field(u, &mut f, "manager", |u| str_value(u, &["kubectl"]))?;
            field(u, &mut f, "operation", |u| {
                str_value(u, &["Apply", "Update", "Other", ""])
            })?;
            field(u, &mut f, "fieldsType", |u| {
                str_value(u, &["FieldsV1", "", "FieldsV2"])
            })?;
            field(u, &mut f, "time", timestamp)?;
            field(u, &mut f, "fieldsV1", wrong)?;
            Ok(Value::Object(f))
        })?))
    })?;
    Ok(Value::Object(m))
}

fn cluster_selectors(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(Value::Array(list(u, |u| {
        if u.ratio(1, 16)? {
            return Ok(Value::Null);
        }
        let mut c = Map::new();
        field(u, &mut c, "name", |u| str_value(u, CLUSTERS))?;
        Ok(Value::Object(c))
    })?))
}

fn mcs_spec(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut s = Map::new();
    field(u, &mut s, "types", |u| {
        Ok(Value::Array(list(u, |u| {
            str_value(u, &["CrossCluster", "LoadBalancer", "", "crosscluster"])
        })?))
    })?;
    field(u, &mut s, "ports", |u| {
        Ok(Value::Array(list(u, |u| {
            let mut p = Map::new();
            field(u, &mut p, "name", |u| str_value(u, PORT_NAMES))?;
            field(u, &mut p, "port", |u| int_value(u, PORT_NUMBERS))?;
            Ok(Value::Object(p))
        })?))
    })?;
    field(u, &mut s, "providerClusters", cluster_selectors)?;
    field(u, &mut s, "consumerClusters", cluster_selectors)?;
    if u.ratio(1, 8)? {
        field(u, &mut s, "range", |u| {
            Ok(json!({"clusterNames": Value::Array(list(u, |u| str_value(u, CLUSTERS))?)}))
        })?;
        field(u, &mut s, "serviceProvisionClusters", |u| {
            Ok(Value::Array(list(u, |u| str_value(u, CLUSTERS))?))
        })?;
    }
    Ok(Value::Object(s))
}

fn mcs_status(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut lb = Map::new();
    field(u, &mut lb, "ingress", |u| {
        Ok(Value::Array(list(u, |u| {
            let mut i = Map::new();
            field(u, &mut i, "ip", |u| str_value(u, IPS))?;
            field(u, &mut i, "hostname", |u| {
                str_value(u, &["example.com", "1.2.3.4", "::1", "a_b", ""])
            })?;
            field(u, &mut i, "ipMode", |u| str_value(u, &["VIP", "Proxy"]))?;
            Ok(Value::Object(i))
        })?))
    })?;
    let mut status = Map::new();
    status.insert("loadBalancer".into(), Value::Object(lb));
    Ok(Value::Object(status))
}

/// A MultiClusterService as JSON.
pub fn mcs(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut o = Map::new();
    field(u, &mut o, "apiVersion", |u| {
        Ok(Value::String(if odds(u, 1, 16)? {
            u.choose(&[
                "",
                "networking.karmada.io/",
                "networking.karmada.io/v1alpha2",
                "v1",
                "a/b/c",
                "other.io/",
            ])?
            .to_string()
        } else {
            "networking.karmada.io/v1alpha1".to_string()
        }))
    })?;
    field(u, &mut o, "kind", |u| {
        Ok(Value::String(if odds(u, 1, 16)? {
            u.choose(&["", "Service"])?.to_string()
        } else {
            "MultiClusterService".to_string()
        }))
    })?;
    field(u, &mut o, "metadata", object_meta)?;
    field(u, &mut o, "spec", mcs_spec)?;
    if u.ratio(1, 3)? {
        field(u, &mut o, "status", mcs_status)?;
    }
    Ok(Value::Object(o))
}

/// `new` with a few of the fields an update must not change (or may) changed.
fn changed(u: &mut Unstructured<'_>, new: &Value) -> Result<Value> {
    let mut old = new.clone();
    let Some(o) = old.as_object_mut() else {
        return Ok(old);
    };
    for _ in 0..u.int_in_range(0..=3)? {
        match u.int_in_range(0..=4)? {
            0 => field(u, o, "spec", mcs_spec)?,
            1 => field(u, o, "status", mcs_status)?,
            _ => {
                let meta = o
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(m) = meta.as_object_mut() {
                    let key = *u.choose(&[
                        "name",
                        "namespace",
                        "uid",
                        "resourceVersion",
                        "generation",
                        "creationTimestamp",
                        "deletionTimestamp",
                        "deletionGracePeriodSeconds",
                        "finalizers",
                        "labels",
                    ])?;
                    let fresh = object_meta(u)?;
                    match fresh.get(key) {
                        Some(v) => m.insert(key.to_string(), v.clone()),
                        None => m.remove(key),
                    };
                }
            }
        }
    }
    Ok(old)
}

/// JSON text of `value`: usually compact, sometimes pretty, sometimes cut short.
pub fn text(u: &mut Unstructured<'_>, value: &Value) -> Result<String> {
    let mut s = if u.ratio(1, 8)? {
        serde_json::to_string_pretty(value).unwrap_or_default()
    } else {
        value.to_string()
    };
    if odds(u, 1, 24)? {
        let cut = u.int_in_range(0..=s.len())?;
        s.truncate(s.floor_char_boundary(cut));
    }
    Ok(s)
}

fn settings(u: &mut Unstructured<'_>) -> Result<h::Settings> {
    Ok(h::Settings {
        reject_empty_types: u.arbitrary()?,
        reject_repeated_types: u.arbitrary()?,
        reject_duplicate_cluster_names: u.arbitrary()?,
        reject_unknown_port_names: u.arbitrary()?,
        warn_unregistered_clusters: u.arbitrary()?,
    })
}

fn service_ports(u: &mut Unstructured<'_>) -> Result<Vec<h::ServicePort>> {
    list(u, |u| {
        Ok(h::ServicePort {
            name: string(u, PORT_NAMES)?,
            port: small_int(u)?,
        })
    })
}

fn small_int(u: &mut Unstructured<'_>) -> Result<i32> {
    Ok(if u.ratio(1, 8)? {
        u.arbitrary()?
    } else {
        *u.choose(&[0, 80, 443, 8080, 9090, 65535])?
    })
}

/// Sometimes sets (or clears) the permanent-id label, which defaulting keeps, restores or adds.
fn permanent_id(u: &mut Unstructured<'_>, mcs: &mut Value) -> Result<()> {
    if !u.ratio(1, 3)? {
        return Ok(());
    }
    let id = string(
        u,
        &["keep", "", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "other"],
    )?;
    let Some(meta) = mcs.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        if u.ratio(1, 4)? {
            labels.remove(PERMANENT_ID_LABEL);
        } else {
            labels.insert(PERMANENT_ID_LABEL.into(), Value::String(id));
        }
    }
    Ok(())
}

fn admission_request(u: &mut Unstructured<'_>) -> Result<h::AdmissionRequest> {
    let operation = *u.choose(&[
        h::Operation::Create,
        h::Operation::Create,
        h::Operation::Update,
        h::Operation::Update,
        h::Operation::Delete,
        h::Operation::Connect,
    ])?;
    let mut new = mcs(u)?;
    permanent_id(u, &mut new)?;
    let old = match u.int_in_range(0..=7)? {
        0 => None,
        1 => Some(mcs(u)?),
        _ => {
            let mut old = changed(u, &new)?;
            permanent_id(u, &mut old)?;
            Some(old)
        }
    };
    Ok(h::AdmissionRequest {
        uid: string(u, &["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "u-1", ""])?,
        operation,
        object: text(u, &new)?,
        old_object: old.map(|o| text(u, &o)).transpose()?,
    })
}

// ---- EndpointSlices ----

const SLICE_NAMESPACES: &[&str] = &["shop", "other", ""];
const SERVICE_NAMES: &[&str] = &["web", "api", ""];
/// The managed-by values of a provider's own slices first, then the multi-cluster machinery's.
const SOURCE_MANAGERS: &[&str] = &[
    "endpointslice-controller.k8s.io",
    DISPATCH_MANAGER,
    IMPORT_MANAGER,
    "",
];
/// The managed-by values of copies first.
const COPY_MANAGERS: &[&str] = &[
    DISPATCH_MANAGER,
    "endpointslice-controller.k8s.io",
    IMPORT_MANAGER,
    "",
];

fn opt_string(u: &mut Unstructured<'_>, dict: &[&str]) -> Result<Option<String>> {
    Ok(if u.ratio(1, 3)? {
        None
    } else {
        Some(string(u, dict)?)
    })
}

fn endpoint(u: &mut Unstructured<'_>) -> Result<h::Endpoint> {
    Ok(h::Endpoint {
        addresses: list(u, |u| string(u, IPS))?,
        conditions: h::EndpointConditions {
            ready: u.arbitrary()?,
            serving: u.arbitrary()?,
            terminating: u.arbitrary()?,
        },
        hostname: opt_string(u, NAMES)?,
        node_name: opt_string(u, NAMES)?,
        zone: opt_string(u, &["z1", "z2", ""])?,
        target_ref: if u.arbitrary()? {
            Some(h::ObjectReference {
                kind: opt_string(u, &["Pod"])?,
                namespace: opt_string(u, SLICE_NAMESPACES)?,
                name: opt_string(u, NAMES)?,
                uid: opt_string(u, LABEL_VALUES)?,
                api_version: opt_string(u, API_VERSIONS)?,
                resource_version: opt_string(u, &["1"])?,
                field_path: opt_string(u, &["spec.containers{web}"])?,
            })
        } else {
            None
        },
        hints: if u.arbitrary()? {
            Some(h::EndpointHints {
                for_zones: list(u, |u| string(u, &["z1", "z2"]))?,
                for_nodes: list(u, |u| string(u, NAMES))?,
            })
        } else {
            None
        },
        deprecated_topology: list(u, |u| {
            Ok((string(u, LABEL_KEYS)?, string(u, LABEL_VALUES)?))
        })?,
    })
}

fn pairs(
    u: &mut Unstructured<'_>,
    keys: &[&str],
    values: &[&str],
) -> Result<Vec<(String, String)>> {
    list(u, |u| Ok((string(u, keys)?, string(u, values)?)))
}

/// An EndpointSlice, usually of `mcs`'s Service in its namespace: its markers drawn from the
/// labels and annotation the filter and prune read, the managed-by label usually the first of
/// `managers`.
pub fn slice(
    u: &mut Unstructured<'_>,
    mcs: &h::McsRef,
    managers: &[&str],
) -> Result<h::EndpointSlice> {
    let mut labels = Vec::new();
    if u.ratio(7, 8)? {
        let service = if u.ratio(3, 4)? {
            mcs.name.clone()
        } else {
            string(u, SERVICE_NAMES)?
        };
        labels.push((SERVICE_NAME_LABEL.to_string(), service));
    }
    if u.ratio(3, 4)? {
        labels.push((MANAGED_BY_LABEL.to_string(), string(u, managers)?));
    }
    labels.extend(pairs(
        u,
        &[SERVICE_NAME_LABEL, MANAGED_BY_LABEL, "app"],
        &["web", DISPATCH_MANAGER, ""],
    )?);
    let mut annotations = Vec::new();
    if u.ratio(3, 4)? {
        annotations.push((
            PROVISION_CLUSTER_ANNOTATION.to_string(),
            string(u, CLUSTERS)?,
        ));
    }
    annotations.extend(pairs(u, &[PROVISION_CLUSTER_ANNOTATION, "note"], CLUSTERS)?);
    Ok(h::EndpointSlice {
        name: string(u, &["web-abc", "web-1", "m-web", "", "a.b", "web-"])?,
        namespace: if u.ratio(3, 4)? {
            mcs.namespace.clone()
        } else {
            string(u, SLICE_NAMESPACES)?
        },
        labels,
        annotations,
        address_type: string(u, &["IPv4", "IPv6", "FQDN", ""])?,
        endpoints: list(u, endpoint)?,
        ports: list(u, |u| {
            Ok(h::EndpointPort {
                name: opt_string(u, PORT_NAMES)?,
                port: if u.arbitrary()? {
                    Some(small_int(u)?)
                } else {
                    None
                },
                protocol: opt_string(u, &["TCP", "UDP", "SCTP"])?,
                app_protocol: opt_string(u, &["http", "kubernetes.io/h2c"])?,
            })
        })?,
    })
}

fn mcs_ref(u: &mut Unstructured<'_>) -> Result<h::McsRef> {
    Ok(h::McsRef {
        name: string(u, SERVICE_NAMES)?,
        namespace: string(u, SLICE_NAMESPACES)?,
        ports: list(u, |u| {
            Ok(h::ExposurePort {
                name: string(u, PORT_NAMES)?,
                port: small_int(u)?,
            })
        })?,
    })
}

// ---- Services ----

fn service_port(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut p = Map::new();
    field(u, &mut p, "name", |u| str_value(u, PORT_NAMES))?;
    if !odds(u, 1, 16)? {
        field(u, &mut p, "port", |u| int_value(u, PORT_NUMBERS))?;
    }
    field(u, &mut p, "protocol", |u| str_value(u, &["TCP", "UDP"]))?;
    field(u, &mut p, "targetPort", |u| {
        if u.arbitrary()? {
            str_value(u, PORT_NAMES)
        } else {
            int_value(u, PORT_NUMBERS)
        }
    })?;
    field(u, &mut p, "nodePort", |u| int_value(u, &[30080, 31000, 0]))?;
    field(u, &mut p, "appProtocol", |u| str_value(u, &["http"]))?;
    Ok(Value::Object(p))
}

/// A `v1` Service as JSON.
pub fn service(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut o = Map::new();
    field(u, &mut o, "apiVersion", |u| {
        if odds(u, 1, 16)? {
            str_value(u, &["apps/v1", ""])
        } else {
            Ok("v1".into())
        }
    })?;
    field(u, &mut o, "kind", |u| {
        if odds(u, 1, 16)? {
            str_value(u, &["Pod", ""])
        } else {
            Ok("Service".into())
        }
    })?;
    field(u, &mut o, "metadata", |u| {
        let mut m = Map::new();
        field(u, &mut m, "name", |u| str_value(u, SERVICE_NAMES))?;
        field(u, &mut m, "namespace", |u| str_value(u, SLICE_NAMESPACES))?;
        field(u, &mut m, "resourceVersion", |u| str_value(u, &["3", "7"]))?;
        field(u, &mut m, "labels", |u| {
            let mut labels = string_map(u, LABEL_KEYS, LABEL_VALUES)?;
            if u.arbitrary()?
                && let Some(l) = labels.as_object_mut()
            {
                l.insert(
                    CREATED_BY_LABEL.into(),
                    str_value(u, &[CREATED_BY, "other"])?,
                );
            }
            Ok(labels)
        })?;
        field(u, &mut m, "annotations", |u| {
            string_map(u, LABEL_KEYS, LABEL_VALUES)
        })?;
        Ok(Value::Object(m))
    })?;
    field(u, &mut o, "spec", |u| {
        let mut s = Map::new();
        field(u, &mut s, "type", |u| {
            str_value(
                u,
                &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"],
            )
        })?;
        field(u, &mut s, "clusterIP", |u| {
            str_value(u, &["10.9.9.9", "None", "10.0.0.1", ""])
        })?;
        field(u, &mut s, "clusterIPs", |u| {
            Ok(Value::Array(list(u, |u| {
                str_value(u, &["None", "10.0.0.1", "fd00::1"])
            })?))
        })?;
        field(u, &mut s, "healthCheckNodePort", |u| {
            int_value(u, &[31999, 32000])
        })?;
        field(u, &mut s, "selector", |u| {
            string_map(u, &["app", "tier"], &["web", "api"])
        })?;
        field(u, &mut s, "ports", |u| {
            Ok(Value::Array(list(u, service_port)?))
        })?;
        field(u, &mut s, "externalTrafficPolicy", |u| {
            str_value(u, &["Local", "Cluster"])
        })?;
        Ok(Value::Object(s))
    })?;
    if u.ratio(1, 4)? {
        o.insert("status".into(), json!({"loadBalancer": {}}));
    }
    Ok(Value::Object(o))
}

/// The member's copy of `template`: as the controller would have written it, then changed a
/// little (or as an API server would have defaulted it).
fn member_service(u: &mut Unstructured<'_>, template: &Value) -> Result<Value> {
    let mut member = template.clone();
    let Some(o) = member.as_object_mut() else {
        return Ok(member);
    };
    for _ in 0..u.int_in_range(0..=3)? {
        let spec = o.entry("spec").or_insert_with(|| Value::Object(Map::new()));
        let Some(spec) = spec.as_object_mut() else {
            break;
        };
        match u.int_in_range(0..=5)? {
            0 => {
                spec.insert(
                    "clusterIP".into(),
                    str_value(u, &["None", "10.0.0.99", ""])?,
                );
            }
            1 => {
                let fresh = service(u)?;
                if let Some(m) = fresh.get("metadata") {
                    o.insert("metadata".into(), m.clone());
                }
            }
            2 => {
                if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                    for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                        port.entry("protocol").or_insert_with(|| "TCP".into());
                        if let Some(n) = port.get("port").cloned() {
                            port.entry("targetPort").or_insert(n);
                        }
                        port.insert("nodePort".into(), int_value(u, &[31000, 32001])?);
                    }
                }
            }
            3 => {
                spec.insert("type".into(), str_value(u, &["ClusterIP", "NodePort"])?);
            }
            4 => {
                spec.insert("selector".into(), string_map(u, &["app"], &["web", "api"])?);
            }
            _ => {
                let fresh = service(u)?;
                if let Some(s) = fresh.get("spec") {
                    o.insert("spec".into(), s.clone());
                }
            }
        }
    }
    Ok(member)
}

// ---- calls ----

/// One call of any exported function, built from `u`.
pub fn call(u: &mut Unstructured<'_>) -> Result<Call> {
    let tidy = u.arbitrary()?;
    TIDY.with(|t| t.set(tidy));
    Ok(match u.int_in_range(0..=9)? {
        0 | 1 => Call::Validate {
            request: admission_request(u)?,
            settings: settings(u)?,
            context: h::Context {
                registered_clusters: if u.arbitrary()? {
                    Some(list(u, |u| string(u, CLUSTERS))?)
                } else {
                    None
                },
                service_ports: if u.arbitrary()? {
                    Some(service_ports(u)?)
                } else {
                    None
                },
            },
        },
        2 => Call::Mutate {
            request: admission_request(u)?,
            settings: settings(u)?,
        },
        3 => {
            let mcs = mcs(u)?;
            Call::Plan {
                mcs: text(u, &mcs)?,
                registered_clusters: list(u, |u| string(u, CLUSTERS))?,
            }
        }
        4 => {
            let mcs = mcs_ref(u)?;
            Call::Filter {
                service_ports: if u.ratio(2, 3)? {
                    Some(service_ports(u)?)
                } else {
                    None
                },
                source_cluster: string(u, CLUSTERS)?,
                consumer_cluster: string(u, CLUSTERS)?,
                slices: list(u, |u| slice(u, &mcs, SOURCE_MANAGERS))?,
                mcs,
            }
        }
        5 => {
            let mcs = mcs_ref(u)?;
            let existing = list(u, |u| slice(u, &mcs, COPY_MANAGERS))?;
            let mut desired = Vec::new();
            for s in &existing {
                if u.arbitrary()? {
                    desired.push(s.name.clone());
                }
            }
            desired.extend(list(u, |u| string(u, NAMES))?);
            Call::Prune {
                mcs,
                existing,
                desired,
                kept_sources: list(u, |u| string(u, CLUSTERS))?,
            }
        }
        6 => {
            let template = service(u)?;
            let existing = match u.int_in_range(0..=3)? {
                0 => None,
                1 => Some(service(u)?),
                _ => Some(member_service(u, &template)?),
            };
            Call::Service {
                template: text(u, &template)?,
                existing: existing.map(|e| text(u, &e)).transpose()?,
            }
        }
        8 => decide(u)?,
        9 => conclude(u)?,
        _ if u.arbitrary()? => Call::LoadBalancerStatus {
            providers: list(u, |u| {
                Ok(h::ProviderLoadBalancer {
                    cluster: string(u, CLUSTERS)?,
                    ingress: match u.int_in_range(0..=3)? {
                        0 | 1 => h::ProviderIngress::Read(list(u, ingress)?),
                        2 => h::ProviderIngress::Kept(if u.arbitrary()? {
                            Some(list(u, ingress)?)
                        } else {
                            None
                        }),
                        _ => h::ProviderIngress::Withdrawn,
                    },
                })
            })?,
            current: list(u, ingress)?,
        },
        _ => Call::ClusterNameProblem {
            name: string(u, CLUSTERS)?,
        },
    })
}

/// A `status.loadBalancer.ingress[]` entry: IPs and names valid or not, sometimes empty.
fn ingress(u: &mut Unstructured<'_>) -> Result<h::LoadBalancerIngress> {
    let maybe = |u: &mut Unstructured<'_>, dict: &[&str]| -> Result<Option<String>> {
        Ok(if u.arbitrary()? {
            Some(string(u, dict)?)
        } else {
            None
        })
    };
    Ok(h::LoadBalancerIngress {
        ip: maybe(u, IPS)?,
        hostname: maybe(u, NAMES)?,
        ip_mode: maybe(u, &["VIP", "Proxy", ""])?,
        ports: list(u, |u| {
            Ok(h::PortStatus {
                port: *u.choose(PORT_NUMBERS)? as i32,
                protocol: string(u, &["TCP", "UDP", "SCTP", ""])?,
                error: maybe(u, &["CertificateError", "example.com/Quota", ""])?,
            })
        })?,
    })
}

// ---- a sync pass ----

/// Registered members: distinct valid names, in an order that is not always sorted.
const MEMBERS: &[&str] = &["member1", "member2", "m-3"];

/// A `read-failure`.
fn read_failure(u: &mut Unstructured<'_>) -> Result<h::ReadFailure> {
    Ok(h::ReadFailure {
        message: string(u, FAILURES)?,
        not_served: u.arbitrary()?,
    })
}

/// A `decide` call: an MCS (usually holding our finalizer; sometimes of type LoadBalancer, which
/// a messy spec rarely gets right), what each member holds of it (the providers' own slices, copies
/// from anywhere, the Service as the controller wrote it or otherwise), and the hub's Service.
fn decide(u: &mut Unstructured<'_>) -> Result<Call> {
    // A pass over an MCS that validates is the one worth exploring: tidy three times in four.
    if u.ratio(1, 2)? {
        TIDY.with(|t| t.set(true));
    }
    let mut mcs_value = mcs(u)?;
    if let Some(o) = mcs_value.as_object_mut() {
        if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
            if u.ratio(1, 4)? {
                spec.insert("types".into(), json!(["LoadBalancer"]));
                spec.remove("ports");
            }
            // Every member a provider and a consumer: copies between each pair.
            if u.ratio(1, 2)? {
                spec.remove("providerClusters");
                spec.remove("consumerClusters");
            }
            if u.ratio(1, 3)? {
                spec.remove("ports");
            }
        }
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            // Most passes are over an MCS that is not being deleted.
            if u.ratio(2, 3)? {
                meta.remove("deletionTimestamp");
            }
        }
        if u.ratio(2, 3)?
            && let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut)
        {
            let list = meta.entry("finalizers").or_insert_with(|| json!([]));
            if list.is_null() {
                *list = json!([]);
            }
            if let Some(list) = list.as_array_mut() {
                list.push(json!(FINALIZER));
            }
        }
    }
    let text_of = |v: &Value, key: &str| v["metadata"][key].as_str().map(str::to_string);
    let mcs_ref = h::McsRef {
        name: text_of(&mcs_value, "name").unwrap_or_else(|| "web".into()),
        namespace: text_of(&mcs_value, "namespace").unwrap_or_else(|| "shop".into()),
        ports: Vec::new(),
    };
    let template = service(u)?;
    // The members' slices go to the component as a host sends them (`PassSlices`).
    let mut read = PassSlices::new();
    let mut members = Vec::new();
    for member in MEMBERS.iter().take(u.int_in_range(0..=MEMBERS.len())?) {
        let cluster = if odds(u, 1, 16)? {
            string(u, CLUSTERS)?
        } else {
            member.to_string()
        };
        // Member states are drawn the same in tidy calls: tidiness is about objects that
        // validate, and a pass is worth most with some member unready or failing.
        let state = if u.ratio(1, 6)? {
            h::MemberState::NotReady(format!(
                "cluster {cluster} is not ready: its API does not answer"
            ))
        } else {
            let slices = if u.ratio(1, 8)? {
                Err(read_failure(u)?)
            } else {
                // Mostly the member's own slices (what a provider provides), some copies.
                let held = (0..u.int_in_range(0..=2)?)
                    .map(|_| {
                        let own = u.ratio(3, 4)?;
                        slice(
                            u,
                            &mcs_ref,
                            if own { SOURCE_MANAGERS } else { COPY_MANAGERS },
                        )
                    })
                    .collect::<Result<Vec<_>>>()?;
                let held = held.into_iter().map(convert::slice_from_wit).collect();
                Ok(read.read(&cluster, held))
            };
            let service = match u.int_in_range(0..=7)? {
                0 => Err(read_failure(u)?),
                1 | 2 => Ok(None),
                3 => {
                    let other = service(u)?;
                    Ok(Some(text(u, &other)?))
                }
                _ => {
                    // The member's copy, sometimes with a load balancer's status.
                    let mut member = member_service(u, &template)?;
                    if u.arbitrary()?
                        && let Some(o) = member.as_object_mut()
                    {
                        o.insert("status".into(), mcs_status(u)?);
                    }
                    Ok(Some(text(u, &member)?))
                }
            };
            h::MemberState::Ready(h::MemberObjects { slices, service })
        };
        members.push(h::MemberRead {
            cluster,
            state,
            unreadable_ms: *u.choose(&[0, 1, 60_000, 300_000, 300_001, u64::MAX])?,
            last_ingress: if u.arbitrary()? {
                Some(list(u, ingress)?)
            } else {
                None
            },
        });
    }
    Ok(Call::Decide {
        pass: h::PassRead {
            mcs: text(u, &mcs_value)?,
            members,
            template: match u.int_in_range(0..=7)? {
                0 => Ok(None),
                1 => Err(string(u, FAILURES)?),
                _ => Ok(Some(text(u, &template)?)),
            },
            slice_bodies: read.bodies().to_vec(),
            slice_maps: read.maps().to_vec(),
            slice_ports: read.ports().to_vec(),
            unsynced: list(u, unsynced)?,
        },
        settings: h::SyncSettings {
            stale_timeout_ms: if u.arbitrary()? {
                Some(*u.choose(&[300_000, 0, 1])?)
            } else {
                None
            },
        },
        slices: Box::new(read),
    })
}

/// A cluster that exists but is not synced, with why (a name from [`CLUSTERS`], as an MCS
/// may list it).
fn unsynced(u: &mut Unstructured<'_>) -> Result<h::UnsyncedCluster> {
    Ok(h::UnsyncedCluster {
        cluster: string(u, CLUSTERS)?,
        reason: if odds(u, 1, 8)? {
            failure(u)?
        } else {
            string(
                u,
                &[
                    "pull mode (Karmada's agent in the cluster syncs it; this controller \
                     reaches push-mode clusters only)",
                    "its secret karmada-cluster/member2 does not exist",
                    "",
                ],
            )?
        },
    })
}

/// Failure messages as the host renders them, and some at the message size limits.
const FAILURES: &[&str] = &[
    "cluster member1 is not ready: its API does not answer",
    "listing endpointslices of shop/web in cluster member2: Unauthorized (401 Unauthorized)",
    "service shop/web not found in the hub",
    "",
    "é",
];

/// A failure message, sometimes longer than an Event (1 KiB) or a condition (32 KiB) holds.
fn failure(u: &mut Unstructured<'_>) -> Result<String> {
    if odds(u, 1, 8)? {
        let len = *u.choose(&[1000usize, 1100, 33_000, 40_000])?;
        let unit = *u.choose(&["x", "é"])?;
        let mut s = unit.repeat(len.div_ceil(unit.len()));
        s.truncate(s.floor_char_boundary(len));
        return Ok(s);
    }
    string(u, FAILURES)
}

const CONDITION_TYPES: &[&str] = &[
    "Valid",
    "ServiceApplied",
    "EndpointSliceDispatched",
    "LoadBalancerStatusReported",
    "ClustersSynced",
    "Ready",
];

/// An MCS's `status.conditions` as JSON text: usually an array of conditions (some of the types
/// a pass sets, sometimes twice, with any status, reason and message), sometimes not an array.
fn conditions(u: &mut Unstructured<'_>) -> Result<String> {
    if odds(u, 1, 16)? {
        return string(u, &["null", "{}", "[", ""]);
    }
    let list = Value::Array(list(u, |u| {
        let mut c = Map::new();
        field(u, &mut c, "type", |u| str_value(u, CONDITION_TYPES))?;
        field(u, &mut c, "status", |u| {
            str_value(u, &["True", "False", "Unknown"])
        })?;
        field(u, &mut c, "reason", |u| {
            str_value(u, &["ServiceAppliedSucceed", "ValidationSucceed", ""])
        })?;
        field(u, &mut c, "message", |u| Ok(Value::String(failure(u)?)))?;
        field(u, &mut c, "lastTransitionTime", timestamp)?;
        field(u, &mut c, "observedGeneration", |u| int_value(u, &[1, 2]))?;
        Ok(Value::Object(c))
    })?);
    text(u, &list)
}

/// A `conclude` call: what a `decide` could have said the status reports, the writes' failures,
/// the MCS's conditions as read, and what was last reported.
fn conclude(u: &mut Unstructured<'_>) -> Result<Call> {
    let names = |u: &mut Unstructured<'_>| list(u, |u| string(u, CLUSTERS));
    let incompatible = &[
        "Consumer cluster member2 does not support EndpointSlice",
        "Provider cluster member1 does not support EndpointSlice",
    ];
    let basis = h::StatusBasis {
        report: !odds(u, 1, 8)?,
        invalid: if odds(u, 1, 8)? {
            Some(string(
                u,
                &["spec.ports[1].name: Duplicate value: \"http\"", ""],
            )?)
        } else {
            None
        },
        dispatches: u.arbitrary()?,
        service_failures: list(u, failure)?,
        template_missing: odds(u, 1, 8)?,
        dispatch_failures: list(u, failure)?,
        load_balancer_failures: list(u, failure)?,
        load_balancer: if u.arbitrary()? {
            Some(h::LoadBalancerReport {
                ingress: list(u, ingress)?,
                changed: u.arbitrary()?,
                complete: u.arbitrary()?,
                reason: string(
                    u,
                    &["LoadBalancerStatusIncomplete", "LoadBalancerStatusComplete"],
                )?,
                message: failure(u)?,
            })
        } else {
            None
        },
        unknown_providers: names(u)?,
        unknown_consumers: names(u)?,
        incompatible: list(u, |u| string(u, incompatible))?,
        unsynced: list(u, unsynced)?,
    };
    let optional = |u: &mut Unstructured<'_>| -> Result<Option<bool>> {
        Ok(if u.arbitrary()? {
            Some(u.arbitrary()?)
        } else {
            None
        })
    };
    Ok(Call::Conclude {
        basis: Box::new(basis),
        failures: h::WriteFailures {
            service: list(u, failure)?,
            dispatch: list(u, failure)?,
        },
        current: h::StatusNow {
            conditions: conditions(u)?,
            generation: if u.arbitrary()? {
                Some(*u.choose(&[1, 2, -1])?)
            } else {
                None
            },
            now: string(u, TIMESTAMPS)?,
        },
        reported: if u.arbitrary()? {
            Some(h::Reported {
                unknown: list(u, |u| {
                    string(u, &["provider member9", "consumer member8", "member9"])
                })?,
                incompatible: list(u, |u| string(u, incompatible))?,
                unsynced: list(u, |u| {
                    string(u, &["Cluster member2 is not synced: pull mode", "x"])
                })?,
                service_applied: optional(u)?,
                dispatched: optional(u)?,
                load_balancer: optional(u)?,
            })
        } else {
            None
        },
    })
}
