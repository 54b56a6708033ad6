//! The byte formats of the JSON-ish fuzz targets: how raw fuzzer input becomes the arguments of
//! one call, and back (for seeding the corpora from tests/fixtures). Text parts are separated by
//! NUL bytes, which never occur unescaped in JSON text; input that is not UTF-8, or not the JSON
//! a typed argument needs, does not decode and is skipped.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use mcs_policy::engine::convert;
use mcs_policy::engine::types as h;
use serde::{Deserialize, Serialize};

/// Separates the text parts of an input.
pub const SEPARATOR: char = '\0';

/// The `uid` of an admission request whose input gives none.
pub const DEFAULT_UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

/// The arguments of `validate` and `mutate`.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    pub request: h::AdmissionRequest,
    pub settings: h::Settings,
    pub context: h::Context,
}

/// `validate`/`mutate` input: one flag byte, then `object`, and optionally, NUL-separated,
/// `oldObject`, `uid`, the registered cluster names (one a line) and the hub Service's ports
/// (`name:port`, one a line); an absent part is unknown (`none`).
///
/// Flag byte: bits 0–4 the five settings in WIT order, bits 5–6 the operation (create, update,
/// delete, connect), bit 7 whether there is an `oldObject` (else its part is ignored).
pub fn admission(data: &[u8]) -> Option<Admission> {
    let (&flags, rest) = data.split_first()?;
    let text = std::str::from_utf8(rest).ok()?;
    let mut parts = text.split(SEPARATOR);
    let object = parts.next().unwrap_or_default().to_string();
    let old_object = parts
        .next()
        .filter(|_| flags & 0x80 != 0)
        .map(str::to_string);
    let uid = parts.next().unwrap_or(DEFAULT_UID).to_string();
    let registered_clusters = parts.next().map(lines);
    let service_ports = parts.next().map(|p| {
        lines(p)
            .into_iter()
            .map(|line| {
                let (name, port) = line.rsplit_once(':').unwrap_or(("", &line));
                h::ServicePort {
                    name: name.to_string(),
                    port: port.trim().parse().unwrap_or(0),
                }
            })
            .collect()
    });
    let bit = |i: u8| flags & (1 << i) != 0;
    Some(Admission {
        request: h::AdmissionRequest {
            uid,
            operation: match (flags >> 5) & 3 {
                0 => h::Operation::Create,
                1 => h::Operation::Update,
                2 => h::Operation::Delete,
                _ => h::Operation::Connect,
            },
            object,
            old_object,
        },
        settings: h::Settings {
            reject_empty_types: bit(0),
            reject_repeated_types: bit(1),
            reject_duplicate_cluster_names: bit(2),
            reject_unknown_port_names: bit(3),
            warn_unregistered_clusters: bit(4),
        },
        context: h::Context {
            registered_clusters,
            service_ports,
        },
    })
}

/// The input [`admission`] decodes into `a`.
pub fn admission_bytes(a: &Admission) -> Vec<u8> {
    let s = &a.settings;
    let settings = [
        s.reject_empty_types,
        s.reject_repeated_types,
        s.reject_duplicate_cluster_names,
        s.reject_unknown_port_names,
        s.warn_unregistered_clusters,
    ];
    let mut flags = settings
        .iter()
        .enumerate()
        .fold(0u8, |f, (i, on)| f | (u8::from(*on) << i));
    flags |= match a.request.operation {
        h::Operation::Create => 0,
        h::Operation::Update => 1,
        h::Operation::Delete => 2,
        h::Operation::Connect => 3,
    } << 5;
    if a.request.old_object.is_some() {
        flags |= 0x80;
    }
    let mut parts = vec![a.request.object.clone()];
    let optional = [
        a.request.old_object.clone(),
        Some(a.request.uid.clone()),
        a.context.registered_clusters.as_ref().map(|c| c.join("\n")),
        a.context.service_ports.as_ref().map(|ports| {
            ports
                .iter()
                .map(|p| format!("{}:{}", p.name, p.port))
                .collect::<Vec<_>>()
                .join("\n")
        }),
    ];
    // Trailing unknown parts are left out; an unknown part before a known one becomes empty (the
    // old object's flag says whether it is there; for the context lists, the seeds never need
    // it).
    let last = optional
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |i| i + 1);
    parts.extend(
        optional[..last]
            .iter()
            .map(|p| p.clone().unwrap_or_default()),
    );
    let mut out = vec![flags];
    out.extend_from_slice(parts.join(&SEPARATOR.to_string()).as_bytes());
    out
}

fn lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\n').map(str::to_string).collect()
}

/// `plan` input: the MCS JSON text, then NUL and the registered cluster names, one a line.
pub fn plan(data: &[u8]) -> Option<(String, Vec<String>)> {
    let text = std::str::from_utf8(data).ok()?;
    let (mcs, registered) = text.split_once(SEPARATOR).unwrap_or((text, ""));
    Some((mcs.to_string(), lines(registered)))
}

pub fn plan_bytes(mcs: &str, registered: &[String]) -> Vec<u8> {
    format!("{mcs}{SEPARATOR}{}", registered.join("\n")).into_bytes()
}

/// `service` input: the template's text, then NUL and the existing Service's text (no NUL: the
/// member has none).
pub fn service(data: &[u8]) -> Option<(String, Option<String>)> {
    let text = std::str::from_utf8(data).ok()?;
    Some(match text.split_once(SEPARATOR) {
        Some((template, existing)) => (template.to_string(), Some(existing.to_string())),
        None => (text.to_string(), None),
    })
}

pub fn service_bytes(template: &str, existing: Option<&str>) -> Vec<u8> {
    match existing {
        Some(existing) => format!("{template}{SEPARATOR}{existing}").into_bytes(),
        None => template.as_bytes().to_vec(),
    }
}

/// `spec.ports[]` and `servicePorts[]` entries.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Port {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub port: i32,
}

/// The MCS as the filter and prune take it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Mcs {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub ports: Vec<Port>,
}

impl Mcs {
    fn wit(self) -> h::McsRef {
        h::McsRef {
            name: self.name,
            namespace: self.namespace,
            ports: self
                .ports
                .into_iter()
                .map(|p| h::ExposurePort {
                    name: p.name,
                    port: p.port,
                })
                .collect(),
        }
    }
}

/// `filter` input: JSON as the `input` of a tests/fixtures/filter case (`mcs`, `servicePorts`,
/// `sourceCluster`, `consumerCluster`, `slices` as Kubernetes EndpointSlices, converted as the
/// controller converts what it reads).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterInput {
    #[serde(default)]
    pub mcs: Mcs,
    #[serde(default)]
    pub service_ports: Option<Vec<Port>>,
    #[serde(default)]
    pub source_cluster: String,
    #[serde(default)]
    pub consumer_cluster: String,
    #[serde(default)]
    pub slices: Vec<EndpointSlice>,
}

/// The arguments of `filter`.
pub struct Filter {
    pub mcs: h::McsRef,
    pub service_ports: Option<Vec<h::ServicePort>>,
    pub source_cluster: String,
    pub consumer_cluster: String,
    pub slices: Vec<h::EndpointSlice>,
}

pub fn filter(data: &[u8]) -> Option<Filter> {
    let input: FilterInput = serde_json::from_slice(data).ok()?;
    Some(Filter {
        mcs: input.mcs.wit(),
        service_ports: input.service_ports.map(|ports| {
            ports
                .into_iter()
                .map(|p| h::ServicePort {
                    name: p.name,
                    port: p.port,
                })
                .collect()
        }),
        source_cluster: input.source_cluster,
        consumer_cluster: input.consumer_cluster,
        slices: input.slices.iter().map(convert::slice_to_wit).collect(),
    })
}

/// `prune` input: JSON `{"mcs": ..., "existing": [EndpointSlice, ...], "desired": [name, ...],
/// "keptSources": [cluster, ...]}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneInput {
    #[serde(default)]
    pub mcs: Mcs,
    #[serde(default)]
    pub existing: Vec<EndpointSlice>,
    #[serde(default)]
    pub desired: Vec<String>,
    #[serde(default)]
    pub kept_sources: Vec<String>,
}

/// The arguments of `prune`.
pub struct Prune {
    pub mcs: h::McsRef,
    pub existing: Vec<h::EndpointSlice>,
    pub desired: Vec<String>,
    pub kept_sources: Vec<String>,
}

pub fn prune(data: &[u8]) -> Option<Prune> {
    let input: PruneInput = serde_json::from_slice(data).ok()?;
    Some(Prune {
        mcs: input.mcs.wit(),
        existing: input.existing.iter().map(convert::slice_to_wit).collect(),
        desired: input.desired,
        kept_sources: input.kept_sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_inputs_round_trip() {
        let a = Admission {
            request: h::AdmissionRequest {
                uid: "u".into(),
                operation: h::Operation::Update,
                object: "{}".into(),
                old_object: Some("{\"a\":1}".into()),
            },
            settings: h::Settings {
                reject_repeated_types: true,
                warn_unregistered_clusters: true,
                ..h::Settings::default()
            },
            context: h::Context {
                registered_clusters: Some(vec!["m1".into(), "m2".into()]),
                service_ports: Some(vec![h::ServicePort {
                    name: "http".into(),
                    port: 80,
                }]),
            },
        };
        assert_eq!(admission(&admission_bytes(&a)), Some(a.clone()));
        let bare = Admission {
            request: h::AdmissionRequest {
                uid: DEFAULT_UID.into(),
                operation: h::Operation::Create,
                object: "{}".into(),
                old_object: None,
            },
            settings: h::Settings::default(),
            context: h::Context::default(),
        };
        assert_eq!(admission(&[0, b'{', b'}']), Some(bare));
    }

    #[test]
    fn text_inputs_split_on_nul() {
        assert_eq!(
            service(b"{}\0{\"x\":1}"),
            Some(("{}".into(), Some("{\"x\":1}".into())))
        );
        assert_eq!(service(b"{}"), Some(("{}".into(), None)));
        assert_eq!(
            plan(&plan_bytes("{}", &["a".into(), "b".into()])),
            Some(("{}".into(), vec!["a".into(), "b".into()]))
        );
        assert_eq!(plan(b"{}"), Some(("{}".into(), vec![])));
        assert_eq!(service(&[0xff]), None);
    }
}
