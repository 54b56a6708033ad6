//! The Service registry's allocations (`pkg/registry/core/service/storage/alloc.go`): IP
//! families and policy (`initIPFamilyFields`, single-stack IPv4 cluster), cluster IPs from the
//! service CIDR and node ports from 30000-32767. What is in use is read from the stored
//! Services, so nothing needs releasing when a write fails or a Service goes. Dynamic picks
//! are the lowest free values (a real server picks at random).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};

use super::defaults::{cluster_ips, needs_cluster_ip, needs_node_port, node_port, ports, spec_str};
use crate::object;
use crate::registry::GroupResource;
use crate::selector::LabelSelector;
use crate::status::ApiError;
use crate::store::Store;
use crate::types::field::{self, ErrorList, FieldError};

/// The service CIDR (`--service-cluster-ip-range` of the recorded server): 10.0.0.0/24.
const CIDR_BASE: u32 = u32::from_be_bytes([10, 0, 0, 0]);
const CIDR_PREFIX: u32 = 24;
const CIDR_TEXT: &str = "10.0.0.0/24";
/// The node port range (`--service-node-port-range` default).
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// The first usable address of the range: the `default/kubernetes` Service's.
pub fn first_address() -> Ipv4Addr {
    Ipv4Addr::from(CIDR_BASE + 1)
}

/// Usable addresses: the range without its network and broadcast addresses.
fn usable(ip: Ipv4Addr) -> bool {
    let size = 1u32 << (32 - CIDR_PREFIX);
    let offset = u32::from(ip).wrapping_sub(CIDR_BASE);
    offset > 0 && offset < size - 1
}

/// What the stored Services hold, except the one being written.
struct InUse {
    ips: BTreeSet<Ipv4Addr>,
    node_ports: BTreeSet<i64>,
}

fn in_use(store: &Store, except: (&str, &str)) -> InUse {
    let everything = LabelSelector::parse("").unwrap_or_else(|_| unreachable!());
    let services = store.select(&GroupResource::new("", "services"), None, &everything);
    let mut used = InUse {
        ips: BTreeSet::new(),
        node_ports: BTreeSet::new(),
    };
    for svc in services.iter().map(|s| &s.value) {
        if (object::namespace(svc), object::name(svc)) == except {
            continue;
        }
        used.ips.extend(
            cluster_ips(svc)
                .iter()
                .filter_map(|ip| ip.parse::<Ipv4Addr>().ok()),
        );
        used.node_ports
            .extend(ports(svc).iter().filter_map(node_port));
    }
    used
}

fn invalid(svc: &Value, errors: ErrorList) -> ApiError {
    field::invalid("", "Service", object::name(svc), &errors)
        .unwrap_or_else(|| ApiError::internal("no error"))
}

/// `initIPFamilyFields` on a single-stack IPv4 cluster: families inferred or checked, the
/// policy defaulted; headless Services without a selector get both families.
pub fn init_ip_families(svc: &mut Value) -> Result<(), ApiError> {
    if !needs_cluster_ip(svc) {
        return Ok(());
    }
    let mut families: Vec<String> = svc["spec"]["ipFamilies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f.as_str().unwrap_or_default().to_owned())
        .collect();
    let ips = cluster_ips(svc);
    let mut policy = svc["spec"]["ipFamilyPolicy"].as_str().map(str::to_owned);
    if policy.is_none() && (ips.len() == 2 || families.len() == 2) {
        policy = Some("RequireDualStack".to_owned());
    }
    let selectorless = svc["spec"]["selector"]
        .as_object()
        .is_none_or(|s| s.is_empty());
    if spec_str(svc, "clusterIP") == "None" && selectorless {
        if families.is_empty() {
            families.push("IPv4".to_owned());
        }
        if policy.as_deref() != Some("SingleStack") && families.len() == 1 {
            let other = if families[0] == "IPv4" {
                "IPv6"
            } else {
                "IPv4"
            };
            families.push(other.to_owned());
        }
        let policy = policy.unwrap_or_else(|| {
            let p = if families.len() == 2 {
                "RequireDualStack"
            } else {
                "SingleStack"
            };
            p.to_owned()
        });
        svc["spec"]["ipFamilies"] = json!(families);
        svc["spec"]["ipFamilyPolicy"] = json!(policy);
        return Ok(());
    }
    if policy.as_deref() == Some("RequireDualStack") {
        let error = FieldError::invalid(
            "spec.ipFamilyPolicy",
            "RequireDualStack",
            "this cluster is not configured for dual-stack services",
        );
        return Err(invalid(svc, vec![error]));
    }
    let mut errors: ErrorList = families
        .iter()
        .enumerate()
        .filter(|(_, f)| f.as_str() != "IPv4")
        .map(|(i, f)| {
            FieldError::invalid(
                &format!("spec.ipFamilies[{i}]"),
                f.as_str(),
                "not configured on this cluster",
            )
        })
        .collect();
    if !errors.is_empty() {
        return Err(invalid(svc, errors));
    }
    for (i, ip) in ips.iter().enumerate().take_while(|(_, ip)| *ip != "None") {
        if i < families.len() {
            continue;
        }
        match ip.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => errors.push(FieldError::invalid(
                &format!("spec.clusterIPs[{i}]"),
                json!(ips),
                "IPv6 is not configured on this cluster",
            )),
            _ => families.push("IPv4".to_owned()),
        }
    }
    if !errors.is_empty() {
        return Err(invalid(svc, errors));
    }
    if families.is_empty() {
        families.push("IPv4".to_owned());
    }
    svc["spec"]["ipFamilies"] = json!(families);
    svc["spec"]["ipFamilyPolicy"] = json!(policy.unwrap_or_else(|| "SingleStack".to_owned()));
    Ok(())
}

/// Allocates what a new Service needs: a cluster IP unless headless, node ports.
pub fn allocate_create(store: &Store, svc: &mut Value, key: (&str, &str)) -> Result<(), ApiError> {
    let used = in_use(store, key);
    if needs_cluster_ip(svc) {
        allocate_cluster_ip(svc, &used)?;
    }
    if needs_node_port(svc) {
        allocate_node_ports(svc, &used, &[])?;
    }
    Ok(())
}

/// Allocates what an update needs: a cluster IP when the Service stops being ExternalName,
/// node ports not held before.
pub fn allocate_update(
    store: &Store,
    new: &mut Value,
    old: &Value,
    key: (&str, &str),
) -> Result<(), ApiError> {
    let used = in_use(store, key);
    if !needs_cluster_ip(old) && needs_cluster_ip(new) {
        allocate_cluster_ip(new, &used)?;
    }
    if needs_node_port(new) {
        let held: Vec<i64> = ports(old).iter().filter_map(node_port).collect();
        allocate_node_ports(new, &used, &held)?;
    }
    Ok(())
}

fn allocate_cluster_ip(svc: &mut Value, used: &InUse) -> Result<(), ApiError> {
    let ips = cluster_ips(svc);
    match ips.first().map(String::as_str) {
        Some("None") => Ok(()),
        Some(requested) => {
            let problem = match requested.parse::<Ipv4Addr>() {
                Ok(ip) if !usable(ip) => format!(
                    "the provided IP ({requested}) is not in the valid range. The range of valid IPs is {CIDR_TEXT}"
                ),
                Ok(ip) if used.ips.contains(&ip) => "provided IP is already allocated".to_owned(),
                _ => return Ok(()),
            };
            let detail = format!("failed to allocate IP {requested}: {problem}");
            let error = FieldError::invalid("spec.clusterIPs", json!(ips), &detail);
            Err(invalid(svc, vec![error]))
        }
        None => {
            let size = 1u32 << (32 - CIDR_PREFIX);
            let free = (1..size - 1)
                .map(|offset| Ipv4Addr::from(CIDR_BASE + offset))
                .find(|ip| !used.ips.contains(ip));
            let Some(ip) = free else {
                return Err(ApiError::internal_error(
                    "failed to allocate a serviceIP: range is full",
                ));
            };
            svc["spec"]["clusterIP"] = json!(ip.to_string());
            svc["spec"]["clusterIPs"] = json!([ip.to_string()]);
            Ok(())
        }
    }
}

/// Node ports for every port: requested ones checked (`held` ones are the Service's own),
/// missing ones picked.
fn allocate_node_ports(svc: &mut Value, used: &InUse, held: &[i64]) -> Result<(), ApiError> {
    let mut taken = used.node_ports.clone();
    let mut errors = ErrorList::new();
    let count = ports(svc).len();
    for i in 0..count {
        let port = &svc["spec"]["ports"][i];
        let Some(requested) = node_port(port) else {
            continue;
        };
        let problem = if !NODE_PORTS.contains(&requested) {
            Some(format!(
                "provided port is not in the valid range. The range of valid ports is {}-{}",
                NODE_PORTS.start(),
                NODE_PORTS.end()
            ))
        } else if taken.contains(&requested) && !held.contains(&requested) {
            Some("provided port is already allocated".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            errors.push(FieldError::invalid(
                &format!("spec.ports[{i}].nodePort"),
                requested,
                &problem,
            ));
        }
        taken.insert(requested);
    }
    if !errors.is_empty() {
        return Err(invalid(svc, errors));
    }
    // What the Service held stays allocated until the update is stored.
    taken.extend(held);
    for i in 0..count {
        if node_port(&svc["spec"]["ports"][i]).is_some() {
            continue;
        }
        let Some(free) = NODE_PORTS.clone().find(|p| !taken.contains(p)) else {
            return Err(ApiError::internal_error(
                "failed to allocate a nodePort: range is full",
            ));
        };
        taken.insert(free);
        svc["spec"]["ports"][i]["nodePort"] = json!(free);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_default_to_single_stack_ipv4_and_headless_selectorless_to_both() {
        let mut svc = json!({"spec": {"type": "ClusterIP", "selector": {"a": "b"}}});
        init_ip_families(&mut svc).unwrap();
        assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
        let mut bare =
            json!({"spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}});
        init_ip_families(&mut bare).unwrap();
        assert_eq!(bare["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        assert_eq!(bare["spec"]["ipFamilyPolicy"], "RequireDualStack");
        let mut v6 = json!({"metadata": {"name": "x"}, "spec": {"type": "ClusterIP", "ipFamilies": ["IPv6"]}});
        let error = init_ip_families(&mut v6).unwrap_err();
        assert_eq!(
            error.message,
            "Service \"x\" is invalid: spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"
        );
    }

    #[test]
    fn addresses_and_node_ports_avoid_what_is_used() {
        let used = InUse {
            ips: BTreeSet::from([first_address()]),
            node_ports: BTreeSet::from([30000]),
        };
        let mut svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}]}});
        allocate_cluster_ip(&mut svc, &used).unwrap();
        allocate_node_ports(&mut svc, &used, &[]).unwrap();
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.0.0.2"]));
        assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30002);
        let mut taken = json!({"metadata": {"name": "t"}, "spec": {"ports": [{"port": 80, "nodePort": 30000}]}});
        let error = allocate_node_ports(&mut taken, &used, &[]).unwrap_err();
        assert!(error.message.ends_with(
            "spec.ports[0].nodePort: Invalid value: 30000: provided port is already allocated"
        ));
        assert!(allocate_node_ports(&mut taken, &used, &[30000]).is_ok());
        let mut outside = json!({"metadata": {"name": "o"}, "spec": {"clusterIP": "10.1.0.1", "clusterIPs": ["10.1.0.1"]}});
        assert_eq!(
            allocate_cluster_ip(&mut outside, &used).unwrap_err().code,
            422
        );
    }
}
