//! KEP-1645's names under the zone and their records: which name a query asks for, and what
//! the [`Index`] says about it. Pure: no I/O, no clock.

use std::net::IpAddr;

use hickory_server::proto::rr::rdata::{A, AAAA, SOA, SRV, TXT};
use hickory_server::proto::rr::{Name, RData, Record, RecordType};

use super::index::{Host, Index, Port, Service};

/// The version of KEP-1645's DNS specification these names follow, answered at
/// `dns-version.<zone>` TXT.
pub const SCHEMA_VERSION: &str = "1.0.0";

/// The zone served and the TTL of its records.
#[derive(Clone, Debug)]
pub struct Zone {
    /// Lowercase, fully qualified.
    name: Name,
    ttl: u32,
}

/// What a query gets.
#[derive(Debug, PartialEq)]
pub enum Answer {
    /// The name is outside the zone.
    Refused,
    /// The name does not exist (the SOA goes in the authority section).
    NxDomain,
    /// The name exists: its records of the asked type (none: NODATA, with the SOA) and the
    /// addresses of SRV targets for the additional section.
    Found {
        answers: Vec<Record>,
        additionals: Vec<Record>,
    },
}

impl Answer {
    fn records(answers: Vec<Record>) -> Answer {
        Answer::Found {
            answers,
            additionals: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{zone:?} is not a DNS zone name: {reason}")]
pub struct ZoneError {
    zone: String,
    reason: String,
}

impl Zone {
    /// The zone `name` (`clusterset.local`, with or without the final dot), records of `ttl`
    /// seconds.
    pub fn new(name: &str, ttl: u32) -> Result<Zone, ZoneError> {
        let error = |reason: String| ZoneError {
            zone: name.to_string(),
            reason,
        };
        let mut parsed = Name::from_ascii(name).map_err(|e| error(e.to_string()))?;
        if parsed.is_root() {
            return Err(error("the root zone is not served".into()));
        }
        parsed.set_fqdn(true);
        Ok(Zone {
            name: parsed.to_lowercase(),
            ttl,
        })
    }

    /// The zone's name.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The zone's SOA record, with `serial`; its minimum (the TTL of negative answers) is the
    /// TTL.
    pub fn soa(&self, serial: u32) -> Record {
        let under = |label: &str| {
            Name::from_ascii(label)
                .and_then(|n| n.append_domain(&self.name))
                .unwrap_or_else(|_| self.name.clone())
        };
        let soa = SOA::new(
            under("ns.dns"),
            under("hostmaster"),
            serial,
            7200,
            1800,
            86400,
            self.ttl,
        );
        Record::from_rdata(self.name.clone(), self.ttl, RData::SOA(soa))
    }

    /// The answer to `qtype` at `qname` from `index`. Owner names are `qname` as asked.
    pub fn answer(&self, index: &Index, serial: u32, qname: &Name, qtype: RecordType) -> Answer {
        if !self.name.zone_of(qname) {
            return Answer::Refused;
        }
        let inner = usize::from(qname.num_labels() - self.name.num_labels());
        let labels: Vec<String> = qname
            .iter()
            .take(inner)
            .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
            .collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let ask = Ask {
            zone: self,
            qname,
            qtype,
        };
        match labels.as_slice() {
            [] => match qtype {
                RecordType::SOA | RecordType::ANY => Answer::records(vec![self.soa(serial)]),
                _ => Answer::records(Vec::new()),
            },
            // The schema version of KEP-1645's DNS specification (its section 2.2).
            ["dns-version"] => match qtype {
                RecordType::TXT | RecordType::ANY => {
                    let version = TXT::new(vec![SCHEMA_VERSION.to_string()]);
                    Answer::records(vec![Record::from_rdata(
                        qname.clone(),
                        self.ttl,
                        RData::TXT(version),
                    )])
                }
                _ => Answer::records(Vec::new()),
            },
            ["svc"] => Answer::records(Vec::new()),
            [ns, "svc"] if index.has_namespace(ns) => Answer::records(Vec::new()),
            [svc, ns, "svc"] => match index.service(ns, svc) {
                Some(service) => ask.service(service),
                None => Answer::NxDomain,
            },
            [below, svc, ns, "svc"] => match index.service(ns, svc) {
                Some(service) if between(service, below) => Answer::records(Vec::new()),
                _ => Answer::NxDomain,
            },
            [port, proto, svc, ns, "svc"] if port.starts_with('_') && proto.starts_with('_') => {
                match index.service(ns, svc) {
                    Some(service) => ask.srv(service, (svc, ns), &port[1..], &proto[1..]),
                    None => Answer::NxDomain,
                }
            }
            [host, cluster, svc, ns, "svc"] => match index.service(ns, svc) {
                Some(Service::Headless { hosts }) => hosts
                    .iter()
                    .find(|h| h.label == *host && h.cluster == *cluster)
                    .map_or(Answer::NxDomain, |h| {
                        Answer::records(ask.addresses(&h.addresses))
                    }),
                _ => Answer::NxDomain,
            },
            _ => Answer::NxDomain,
        }
    }
}

/// Whether `<below>.<svc>.<ns>.svc.<zone>` is an empty non-terminal: a source cluster of a
/// Headless import's hosts, or `_<proto>` of a port with SRV records.
fn between(service: &Service, below: &str) -> bool {
    match below.strip_prefix('_') {
        Some(proto) => match service {
            Service::ClusterSetIp { ports, .. } => ports.iter().any(|p| p.protocol == proto),
            Service::Headless { hosts } => hosts
                .iter()
                .any(|h| h.ports.iter().any(|p| p.protocol == proto)),
        },
        None => match service {
            Service::ClusterSetIp { .. } => false,
            Service::Headless { hosts } => hosts.iter().any(|h| h.cluster == below),
        },
    }
}

struct Ask<'a> {
    zone: &'a Zone,
    qname: &'a Name,
    qtype: RecordType,
}

impl Ask<'_> {
    /// The A and AAAA records (as asked) of `addresses` at the query's name.
    fn addresses(&self, addresses: &[IpAddr]) -> Vec<Record> {
        address_records(self.qname, addresses, self.qtype, self.zone.ttl)
    }

    fn service(&self, service: &Service) -> Answer {
        let addresses: Vec<IpAddr> = match service {
            Service::ClusterSetIp { ips, .. } => ips.clone(),
            // A Headless import without a ready endpoint has no name (the specification's
            // 2.4.1: NXDOMAIN).
            Service::Headless { hosts } if hosts.is_empty() => return Answer::NxDomain,
            Service::Headless { hosts } => {
                let mut all = Vec::new();
                for ip in hosts.iter().flat_map(|h| &h.addresses) {
                    if !all.contains(ip) {
                        all.push(*ip);
                    }
                }
                all
            }
        };
        Answer::records(self.addresses(&addresses))
    }

    /// `_<port>._<proto>.<svc>.<ns>.svc.<zone>`: a ClusterSetIP import's SRV points at the
    /// service's name, a Headless import's at each host's; their addresses are additionals.
    fn srv(&self, service: &Service, (svc, ns): (&str, &str), port: &str, proto: &str) -> Answer {
        let matches = |p: &&Port| p.name == port && p.protocol == proto;
        let zone = &self.zone.name;
        let named = |labels: String| Name::from_ascii(labels).and_then(|n| n.append_domain(zone));
        let mut targets: Vec<(u16, Name, Vec<IpAddr>)> = Vec::new();
        match service {
            Service::ClusterSetIp { ips, ports } => {
                if let (Some(p), Ok(target)) =
                    (ports.iter().find(matches), named(format!("{svc}.{ns}.svc")))
                {
                    targets.push((p.port, target, ips.clone()));
                }
            }
            Service::Headless { hosts } => {
                for Host {
                    label,
                    cluster,
                    addresses,
                    ports,
                } in hosts
                {
                    let target = named(format!("{label}.{cluster}.{svc}.{ns}.svc"));
                    if let (Some(p), Ok(target)) = (ports.iter().find(matches), target) {
                        targets.push((p.port, target, addresses.clone()));
                    }
                }
            }
        }
        if targets.is_empty() {
            return Answer::NxDomain;
        }
        if !matches!(self.qtype, RecordType::SRV | RecordType::ANY) {
            return Answer::records(Vec::new());
        }
        let weight = u16::try_from(100 / targets.len()).unwrap_or(1).max(1);
        let ttl = self.zone.ttl;
        let mut answers = Vec::new();
        let mut additionals = Vec::new();
        for (port, target, addresses) in targets {
            let srv = SRV::new(0, weight, port, target.clone());
            answers.push(Record::from_rdata(self.qname.clone(), ttl, RData::SRV(srv)));
            additionals.extend(address_records(&target, &addresses, RecordType::ANY, ttl));
        }
        Answer::Found {
            answers,
            additionals,
        }
    }
}

/// A records (for A or ANY) and AAAA records (for AAAA or ANY) of `addresses` at `name`.
fn address_records(name: &Name, addresses: &[IpAddr], qtype: RecordType, ttl: u32) -> Vec<Record> {
    addresses
        .iter()
        .filter_map(|ip| match (ip, qtype) {
            (IpAddr::V4(v4), RecordType::A | RecordType::ANY) => Some(RData::A(A(*v4))),
            (IpAddr::V6(v6), RecordType::AAAA | RecordType::ANY) => Some(RData::AAAA(AAAA(*v6))),
            _ => None,
        })
        .map(|rdata| Record::from_rdata(name.clone(), ttl, rdata))
        .collect()
}
