//! What the DNS server answers from: the ServiceImports and imported EndpointSlices of the
//! caches, reduced to the records of KEP-1645's names. Built anew from the caches' content
//! after they change ([`Index::build`]); queries only read it.

use std::collections::HashMap;
use std::net::IpAddr;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde::Deserialize;

/// The label that names the ServiceImport an imported EndpointSlice belongs to.
pub const SERVICE_NAME_LABEL: &str = "multicluster.kubernetes.io/service-name";
/// The label that names the cluster an imported EndpointSlice comes from.
pub const SOURCE_CLUSTER_LABEL: &str = "multicluster.kubernetes.io/source-cluster";

/// A port that gets SRV records: named, with its protocol in lowercase (`tcp`, `udp`, `sctp`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Port {
    pub name: String,
    pub protocol: String,
    pub port: u16,
}

/// One `<host>.<clusterid>.<svc>.<ns>.svc.<zone>` name of a Headless import: a ready endpoint
/// with its hostname, or one address of a ready endpoint without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The endpoint's hostname, or the address with `-` for `.` and `:`.
    pub label: String,
    /// The slice's source cluster (lowercase).
    pub cluster: String,
    pub addresses: Vec<IpAddr>,
    /// The named ports of the slices it is in.
    pub ports: Vec<Port>,
}

/// One imported service, `<svc>.<ns>.svc.<zone>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Service {
    /// `spec.ips` and the named `spec.ports` of a ClusterSetIP import.
    ClusterSetIp { ips: Vec<IpAddr>, ports: Vec<Port> },
    /// The ready endpoints of a Headless import's slices, every source cluster.
    Headless { hosts: Vec<Host> },
}

/// Every imported service, by namespace and name.
#[derive(Debug, Default)]
pub struct Index {
    services: HashMap<(String, String), Service>,
}

/// The fields of a ServiceImport the answers need (`multicluster.x-k8s.io`, v1alpha1 and
/// v1beta1 alike).
#[derive(Debug, Default, Deserialize)]
pub struct ImportSpec {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub ips: Vec<String>,
    #[serde(default)]
    pub ports: Vec<ImportPort>,
}

/// One of `spec.ports`.
#[derive(Debug, Default, Deserialize)]
pub struct ImportPort {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub port: i32,
}

/// One ServiceImport as the index reads it.
#[derive(Debug)]
pub struct Import {
    pub namespace: String,
    pub name: String,
    pub spec: ImportSpec,
}

impl Index {
    /// The index of `imports` and `slices` (only those labelled [`SERVICE_NAME_LABEL`] count).
    pub fn build<'a>(
        imports: impl IntoIterator<Item = Import>,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
    ) -> Index {
        let mut by_service: HashMap<(String, String), Vec<&EndpointSlice>> = HashMap::new();
        for slice in slices {
            let labels = slice.metadata.labels.as_ref();
            let Some(name) = labels.and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
                continue;
            };
            let namespace = slice.metadata.namespace.clone().unwrap_or_default();
            by_service
                .entry((namespace, name.clone()))
                .or_default()
                .push(slice);
        }
        let mut services = HashMap::new();
        for import in imports {
            let key = (import.namespace, import.name);
            let service = if import.spec.kind.eq_ignore_ascii_case("Headless") {
                let slices = by_service.get(&key).map(Vec::as_slice).unwrap_or_default();
                Service::Headless {
                    hosts: hosts(slices),
                }
            } else {
                Service::ClusterSetIp {
                    ips: import
                        .spec
                        .ips
                        .iter()
                        .filter_map(|ip| ip.parse().ok())
                        .collect(),
                    ports: import_ports(&import.spec.ports),
                }
            };
            services.insert(key, service);
        }
        Index { services }
    }

    /// The service `name` in `namespace`.
    pub fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        self.services
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Whether any service is imported in `namespace`.
    pub fn has_namespace(&self, namespace: &str) -> bool {
        self.services.keys().any(|(ns, _)| ns == namespace)
    }

    /// How many services are imported.
    pub fn len(&self) -> usize {
        self.services.len()
    }

    /// Whether no service is imported.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }
}

fn port(name: Option<&str>, protocol: Option<&str>, port: i32) -> Option<Port> {
    let name = name.filter(|n| !n.is_empty())?;
    Some(Port {
        name: name.to_ascii_lowercase(),
        protocol: protocol.unwrap_or("TCP").to_ascii_lowercase(),
        port: u16::try_from(port).ok().filter(|p| *p != 0)?,
    })
}

fn import_ports(ports: &[ImportPort]) -> Vec<Port> {
    let mut out: Vec<Port> = ports
        .iter()
        .filter_map(|p| port(p.name.as_deref(), p.protocol.as_deref(), p.port))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The address-derived name of an endpoint without a hostname, as CoreDNS makes it.
pub fn address_label(address: &IpAddr) -> String {
    address.to_string().replace(['.', ':'], "-")
}

/// The hosts of a Headless import's slices: its ready endpoints (an unset `ready` counts as
/// ready), merged by source cluster and label (a dual-stack StatefulSet Pod is in an IPv4 and
/// an IPv6 slice under one hostname).
fn hosts(slices: &[&EndpointSlice]) -> Vec<Host> {
    let mut hosts: Vec<Host> = Vec::new();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    for slice in slices {
        let cluster = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SOURCE_CLUSTER_LABEL))
            .map(|c| c.to_ascii_lowercase())
            .unwrap_or_default();
        if cluster.is_empty() {
            continue;
        }
        let ports: Vec<Port> = slice
            .ports
            .iter()
            .flatten()
            .filter_map(|p| {
                port(
                    p.name.as_deref(),
                    p.protocol.as_deref(),
                    p.port.unwrap_or(0),
                )
            })
            .collect();
        for endpoint in slice.endpoints.iter().flatten() {
            let ready = endpoint.conditions.as_ref().and_then(|c| c.ready);
            if ready == Some(false) {
                continue;
            }
            let addresses: Vec<IpAddr> = endpoint
                .addresses
                .iter()
                .filter_map(|a| a.parse().ok())
                .collect();
            let named: Vec<(String, Vec<IpAddr>)> = match &endpoint.hostname {
                Some(h) if !h.is_empty() => vec![(h.to_ascii_lowercase(), addresses)],
                _ => addresses
                    .iter()
                    .map(|a| (address_label(a), vec![*a]))
                    .collect(),
            };
            for (label, addresses) in named {
                let i = *seen
                    .entry((cluster.clone(), label.clone()))
                    .or_insert_with(|| {
                        hosts.push(Host {
                            label,
                            cluster: cluster.clone(),
                            addresses: Vec::new(),
                            ports: Vec::new(),
                        });
                        hosts.len() - 1
                    });
                merge(&mut hosts[i], addresses, &ports);
            }
        }
    }
    hosts
}

fn merge(host: &mut Host, addresses: Vec<IpAddr>, ports: &[Port]) {
    for ip in addresses {
        if !host.addresses.contains(&ip) {
            host.addresses.push(ip);
        }
    }
    for p in ports {
        if !host.ports.contains(p) {
            host.ports.push(p.clone());
        }
    }
}
