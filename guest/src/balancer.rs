//! The load balancer status of a MultiClusterService whose types contain `LoadBalancer`: the
//! union of its providers' Service `status.loadBalancer.ingress`, and whether it is complete
//! (docs/sync.md, "Load balancer status"). Pure: the host reads the members and the MCS, and
//! writes what this returns.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::validate::ingress_errors;
use crate::{
    LoadBalancerIngress, LoadBalancerReport, PortStatus, ProviderIngress, ProviderLoadBalancer,
};

/// Condition type.
pub const CONDITION: &str = "LoadBalancerStatusReported";
/// Reason of the condition when every provider was read and has an ingress.
pub const COMPLETE: &str = "LoadBalancerStatusComplete";
/// Reason of the condition otherwise.
pub const INCOMPLETE: &str = "LoadBalancerStatusIncomplete";

/// See WIT `load-balancer-status`.
pub fn status(
    providers: &[ProviderLoadBalancer],
    current: &[LoadBalancerIngress],
) -> LoadBalancerReport {
    let mut entries: Vec<LoadBalancerIngress> = Vec::new();
    let mut problems = Vec::new();
    let mut unattributed_kept = false;
    let mut serving = Vec::new();
    for provider in providers {
        let cluster = provider.cluster.as_str();
        match &provider.ingress {
            ProviderIngress::Read(ingress) => {
                let usable: Vec<_> = ingress.iter().filter_map(usable).collect();
                if usable.is_empty() {
                    problems.push(format!("cluster {cluster} has no load balancer ingress yet"));
                } else {
                    serving.push(cluster);
                }
                entries.extend(usable);
            }
            ProviderIngress::Kept(last) => {
                problems.push(format!(
                    "cluster {cluster} could not be read; its last known ingress is kept"
                ));
                match last {
                    Some(ingress) => entries.extend(ingress.iter().filter_map(usable)),
                    None => unattributed_kept = true,
                }
            }
            ProviderIngress::Withdrawn => problems.push(format!(
                "cluster {cluster} could not be read for longer than the stale timeout; its ingress is withdrawn"
            )),
        }
    }
    if unattributed_kept {
        // The host does not know what the unreadable provider reported: whatever the status
        // holds that no other provider accounts for may be its, and stays.
        let reported: BTreeSet<Key<'_>> = entries.iter().map(key).collect();
        let kept: Vec<_> = current
            .iter()
            .filter_map(usable)
            .filter(|e| !reported.contains(&key(e)))
            .collect();
        entries.extend(kept);
    }
    entries.sort_by(compare);
    entries.dedup();
    let complete = !providers.is_empty() && problems.is_empty();
    let message = if providers.is_empty() {
        "no provider cluster is a member".to_string()
    } else if complete {
        format!(
            "every provider cluster has a load balancer ingress: {}",
            serving.join(", ")
        )
    } else {
        problems.join("; ")
    };
    LoadBalancerReport {
        changed: entries.as_slice() != current,
        ingress: entries,
        complete,
        reason: if complete { COMPLETE } else { INCOMPLETE }.to_string(),
        message,
    }
}

/// The entry as the MCS can hold it, or `None` when it names no entry point or is one the
/// validating webhook rejects in an MCS status (an invalid `ip` or `hostname`). Port statuses
/// without `error` are dropped (the MCS CRD requires `error`, so a status carrying one would
/// be refused); empty strings count as absent.
fn usable(entry: &LoadBalancerIngress) -> Option<LoadBalancerIngress> {
    let present = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    let (ip, hostname) = (present(&entry.ip), present(&entry.hostname));
    if ip.is_none() && hostname.is_none() {
        return None;
    }
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    if !ingress_errors("", &text(&ip), &text(&hostname)).is_empty() {
        return None;
    }
    Some(LoadBalancerIngress {
        ip,
        hostname,
        ip_mode: present(&entry.ip_mode),
        ports: entry
            .ports
            .iter()
            .filter(|p| p.error.as_deref().is_some_and(|e| !e.is_empty()))
            .cloned()
            .collect(),
    })
}

type Key<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Vec<(i32, &'a str, Option<&'a str>)>,
);

fn key(e: &LoadBalancerIngress) -> Key<'_> {
    (
        e.ip.as_deref(),
        e.hostname.as_deref(),
        e.ip_mode.as_deref(),
        e.ports.iter().map(port_key).collect(),
    )
}

fn port_key(p: &PortStatus) -> (i32, &str, Option<&str>) {
    (p.port, p.protocol.as_str(), p.error.as_deref())
}

fn compare(a: &LoadBalancerIngress, b: &LoadBalancerIngress) -> Ordering {
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(address: &str) -> LoadBalancerIngress {
        LoadBalancerIngress {
            ip: Some(address.into()),
            hostname: None,
            ip_mode: None,
            ports: vec![],
        }
    }

    fn host(name: &str) -> LoadBalancerIngress {
        LoadBalancerIngress {
            ip: None,
            hostname: Some(name.into()),
            ip_mode: None,
            ports: vec![],
        }
    }

    fn read(cluster: &str, ingress: Vec<LoadBalancerIngress>) -> ProviderLoadBalancer {
        ProviderLoadBalancer {
            cluster: cluster.into(),
            ingress: ProviderIngress::Read(ingress),
        }
    }

    fn other(cluster: &str, ingress: ProviderIngress) -> ProviderLoadBalancer {
        ProviderLoadBalancer {
            cluster: cluster.into(),
            ingress,
        }
    }

    #[test]
    fn unions_every_provider_sorted_and_each_entry_once() {
        let providers = [
            read("m2", vec![ip("10.0.0.9"), host("lb.example.com")]),
            read("m1", vec![ip("10.0.0.1"), ip("10.0.0.9")]),
        ];
        let r = status(&providers, &[]);
        // Hostnames (no ip) first, then by ip as text.
        assert_eq!(
            r.ingress,
            vec![host("lb.example.com"), ip("10.0.0.1"), ip("10.0.0.9")]
        );
        assert!(r.changed && r.complete);
        assert_eq!(r.reason, COMPLETE);
        assert_eq!(
            r.message,
            "every provider cluster has a load balancer ingress: m2, m1"
        );
        // The same providers in another order give the same status, unchanged.
        let again = status(&[providers[1].clone(), providers[0].clone()], &r.ingress);
        assert_eq!(again.ingress, r.ingress);
        assert!(!again.changed);
    }

    #[test]
    fn keeps_ip_mode_and_ports_with_an_error_and_drops_the_rest() {
        let port = |error: Option<&str>| PortStatus {
            port: 80,
            protocol: "TCP".into(),
            error: error.map(str::to_string),
        };
        let entry = LoadBalancerIngress {
            ip: Some("192.0.2.7".into()),
            hostname: Some(String::new()),
            ip_mode: Some("Proxy".into()),
            ports: vec![port(None), port(Some("")), port(Some("CertificateError"))],
        };
        let nothing = LoadBalancerIngress {
            ip: Some(String::new()),
            ..ip("x")
        };
        // What the webhook would reject in an MCS status never gets there.
        let (bad_ip, ip_as_host) = (ip("not-an-ip"), host("192.0.2.8"));
        let r = status(&[read("m1", vec![entry, nothing, bad_ip, ip_as_host])], &[]);
        assert_eq!(
            r.ingress,
            vec![LoadBalancerIngress {
                ip: Some("192.0.2.7".into()),
                hostname: None,
                ip_mode: Some("Proxy".into()),
                ports: vec![port(Some("CertificateError"))],
            }]
        );
    }

    #[test]
    fn a_provider_without_ingress_makes_it_incomplete() {
        let r = status(&[read("m1", vec![ip("10.0.0.1")]), read("m2", vec![])], &[]);
        assert_eq!(r.ingress, vec![ip("10.0.0.1")]);
        assert!(!r.complete);
        assert_eq!(r.reason, INCOMPLETE);
        assert_eq!(r.message, "cluster m2 has no load balancer ingress yet");
        let none = status(&[], &[ip("10.0.0.1")]);
        assert!(none.ingress.is_empty() && none.changed && !none.complete);
        assert_eq!(none.message, "no provider cluster is a member");
    }

    #[test]
    fn an_unreadable_provider_keeps_its_last_entries_until_withdrawn() {
        let current = vec![ip("10.0.0.1"), ip("10.0.0.2")];
        let kept = status(
            &[
                read("m1", vec![ip("10.0.0.1")]),
                other("m2", ProviderIngress::Kept(Some(vec![ip("10.0.0.2")]))),
            ],
            &current,
        );
        assert_eq!(kept.ingress, current);
        assert!(!kept.changed && !kept.complete);
        assert_eq!(
            kept.message,
            "cluster m2 could not be read; its last known ingress is kept"
        );
        let withdrawn = status(
            &[
                read("m1", vec![ip("10.0.0.1")]),
                other("m2", ProviderIngress::Withdrawn),
            ],
            &current,
        );
        assert_eq!(withdrawn.ingress, vec![ip("10.0.0.1")]);
        assert!(withdrawn.changed);
        assert_eq!(
            withdrawn.message,
            "cluster m2 could not be read for longer than the stale timeout; its ingress is withdrawn"
        );
    }

    #[test]
    fn without_a_memory_of_it_an_unreadable_provider_keeps_what_no_other_reports() {
        // m1's address moved from .1 to .3 while m2 (unknown entries) is away: .2 may be m2's
        // and stays; .1 is m1's old address... which cannot be told from m2's, so it stays too.
        let current = vec![ip("10.0.0.1"), ip("10.0.0.2")];
        let r = status(
            &[
                read("m1", vec![ip("10.0.0.3")]),
                other("m2", ProviderIngress::Kept(None)),
            ],
            &current,
        );
        assert_eq!(
            r.ingress,
            vec![ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3")]
        );
        // With m2's last entries known, m1's old address goes.
        let r = status(
            &[
                read("m1", vec![ip("10.0.0.3")]),
                other("m2", ProviderIngress::Kept(Some(vec![ip("10.0.0.2")]))),
            ],
            &current,
        );
        assert_eq!(r.ingress, vec![ip("10.0.0.2"), ip("10.0.0.3")]);
    }

    #[test]
    fn a_current_status_in_another_order_is_rewritten() {
        let r = status(
            &[read("m1", vec![ip("10.0.0.2"), ip("10.0.0.1")])],
            &[ip("10.0.0.2"), ip("10.0.0.1")],
        );
        assert_eq!(r.ingress, vec![ip("10.0.0.1"), ip("10.0.0.2")]);
        assert!(r.changed);
    }
}
