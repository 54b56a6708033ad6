//! The Service registry's allocations (`pkg/registry/core/service/storage/alloc.go`): IP
//! families and policy (`initIPFamilyFields`, single-stack IPv4 cluster), cluster IPs from the
//! service CIDR (`--service-cluster-ip-range`) and node ports from 30000-32767. Requested values
//! are checked (in range, not already allocated); missing ones are picked at random as the
//! apiserver's allocators pick them ([`super::bands`]). What is in use is what the stored
//! Services hold, looked up in the store's index of their values
//! ([`allocated_values`], [`crate::value_index`]).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};

use super::ServiceCidr;
use super::bands;
use super::defaults::{cluster_ips, needs_cluster_ip, needs_node_port, node_port, ports, spec_str};
use crate::object;
use crate::registry::GroupResource;
use crate::status::ApiError;
use crate::store::Store;
use crate::stored::ObjectKey;
use crate::types::field::{self, ErrorList, FieldError};

/// The node port range (`--service-node-port-range` default).
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// The values a stored Service holds that no other Service may hold: `ip:ADDRESS` for each
/// cluster IP, `nodePort:PORT` for each node port.
pub fn allocated_values(svc: &Value) -> Vec<String> {
    let ips = cluster_ips(svc).into_iter().filter(|ip| ip != "None");
    let ips = ips.map(|ip| format!("ip:{ip}"));
    let node_ports = ports(svc).iter().filter_map(node_port).collect::<Vec<_>>();
    ips.chain(node_ports.into_iter().map(|p| format!("nodePort:{p}")))
        .collect()
}

/// What the stored Services hold, except the one being written.
struct InUse<'a> {
    store: &'a Store,
    except: ObjectKey,
}

impl InUse<'_> {
    fn held(&self, value: &str) -> bool {
        let services = GroupResource::new("", "services");
        self.store.value_held(&services, value, &self.except)
    }

    fn ip(&self, ip: Ipv4Addr) -> bool {
        self.held(&format!("ip:{ip}"))
    }

    fn node_port(&self, port: i64) -> bool {
        self.held(&format!("nodePort:{port}"))
    }
}

fn in_use<'a>(store: &'a Store, (namespace, name): (&str, &str)) -> InUse<'a> {
    InUse {
        store,
        except: ObjectKey::new(namespace, name),
    }
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
        allocate_cluster_ip(svc, &store.service_cidr, &used)?;
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
        allocate_cluster_ip(new, &store.service_cidr, &used)?;
    }
    if needs_node_port(new) {
        let held: Vec<i64> = ports(old).iter().filter_map(node_port).collect();
        allocate_node_ports(new, &used, &held)?;
    }
    Ok(())
}

fn allocate_cluster_ip(
    svc: &mut Value,
    cidr: &ServiceCidr,
    used: &InUse<'_>,
) -> Result<(), ApiError> {
    let ips = cluster_ips(svc);
    match ips.first().map(String::as_str) {
        Some("None") => Ok(()),
        Some(requested) => {
            let problem = match requested.parse::<Ipv4Addr>() {
                Ok(ip) if cidr.offset_of(ip).is_none() => format!(
                    "the provided IP ({requested}) is not in the valid range. The range of valid IPs is {cidr}"
                ),
                Ok(ip) if used.ip(ip) => "provided IP is already allocated".to_owned(),
                _ => return Ok(()),
            };
            let detail = format!("failed to allocate IP {requested}: {problem}");
            let error = FieldError::invalid("spec.clusterIPs", json!(ips), &detail);
            Err(invalid(svc, vec![error]))
        }
        None => {
            let reserved = bands::ip_lower_band(cidr.size());
            let free = bands::pick(cidr.usable(), reserved, |offset| {
                !used.ip(cidr.address(offset))
            });
            let Some(offset) = free else {
                return Err(ApiError::internal_error(
                    "failed to allocate a serviceIP: range is full",
                ));
            };
            let ip = cidr.address(offset).to_string();
            svc["spec"]["clusterIP"] = json!(ip);
            svc["spec"]["clusterIPs"] = json!([ip]);
            Ok(())
        }
    }
}

/// Node ports for every port: requested ones checked (`held` ones are the Service's own),
/// missing ones picked.
fn allocate_node_ports(svc: &mut Value, used: &InUse<'_>, held: &[i64]) -> Result<(), ApiError> {
    // Ports this Service asks for or gets in this write.
    let mut taken = BTreeSet::new();
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
        } else if (used.node_port(requested) || taken.contains(&requested))
            && !held.contains(&requested)
        {
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
        let Some(free) = pick_node_port(|p| !taken.contains(&p) && !used.node_port(p)) else {
            return Err(ApiError::internal_error(
                "failed to allocate a nodePort: range is full",
            ));
        };
        taken.insert(free);
        svc["spec"]["ports"][i]["nodePort"] = json!(free);
    }
    Ok(())
}

/// A free node port, picked as the port allocator picks one.
fn pick_node_port(mut is_free: impl FnMut(i64) -> bool) -> Option<i64> {
    let first = *NODE_PORTS.start();
    let size = NODE_PORTS.end() - first + 1;
    let size = u64::try_from(size).unwrap_or_default();
    let port = |offset: u64| first + i64::try_from(offset).unwrap_or_default();
    let offset = bands::pick(size, bands::port_lower_band(size), |o| is_free(port(o)))?;
    Some(port(offset))
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

    fn store_with(cidr: &str, services: &[Value]) -> Store {
        let registry = crate::registry::Registry::with_types(crate::builtin::builtin_types());
        let mut store = Store::new(registry, 10);
        store.service_cidr = cidr.parse().unwrap();
        for (i, spec) in services.iter().enumerate() {
            let svc =
                json!({"metadata": {"namespace": "ns", "name": format!("s{i}")}, "spec": spec});
            store.put(&GroupResource::new("", "services"), svc);
        }
        store
    }

    fn with_ip(ip: &str) -> Value {
        json!({"clusterIP": ip, "clusterIPs": [ip]})
    }

    #[test]
    fn addresses_are_picked_among_the_free_ones_until_the_range_is_full() {
        // A /28 has 14 addresses and no lower band; all but 10.0.0.9 taken.
        let held: Vec<Value> = (1..=14)
            .filter(|i| *i != 9)
            .map(|i| with_ip(&format!("10.0.0.{i}")))
            .collect();
        let store = store_with("10.0.0.0/28", &held);
        let used = in_use(&store, ("ns", "new"));
        let mut svc = json!({"metadata": {"name": "new"}, "spec": {}});
        allocate_cluster_ip(&mut svc, &store.service_cidr, &used).unwrap();
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.0.0.9"]));
        let full = store_with("10.0.0.0/28", &[held, vec![with_ip("10.0.0.9")]].concat());
        let mut svc = json!({"metadata": {"name": "new"}, "spec": {}});
        let error =
            allocate_cluster_ip(&mut svc, &full.service_cidr, &in_use(&full, ("ns", "new")));
        let error = error.unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                500,
                "Internal error occurred: failed to allocate a serviceIP: range is full"
            )
        );
    }

    #[test]
    fn requested_addresses_must_be_in_range_and_free_but_for_the_services_own() {
        let store = store_with("10.0.0.0/24", &[with_ip("10.0.0.5")]);
        let cidr = store.service_cidr;
        let mut taken = json!({"metadata": {"name": "t"}, "spec": with_ip("10.0.0.5")});
        let error = allocate_cluster_ip(&mut taken, &cidr, &in_use(&store, ("ns", "t")));
        assert!(
            error
                .unwrap_err()
                .message
                .ends_with("failed to allocate IP 10.0.0.5: provided IP is already allocated")
        );
        assert!(allocate_cluster_ip(&mut taken, &cidr, &in_use(&store, ("ns", "s0"))).is_ok());
        let mut outside = json!({"metadata": {"name": "o"}, "spec": with_ip("10.1.0.1")});
        let error =
            allocate_cluster_ip(&mut outside, &cidr, &in_use(&store, ("ns", "o"))).unwrap_err();
        assert!(
            error
                .message
                .ends_with("The range of valid IPs is 10.0.0.0/24"),
            "{}",
            error.message
        );
        // Dynamic picks come from the upper band (10.0.0.17 and up) while it has room.
        for _ in 0..20 {
            let mut svc = json!({"metadata": {"name": "d"}, "spec": {}});
            allocate_cluster_ip(&mut svc, &cidr, &in_use(&store, ("ns", "d"))).unwrap();
            let ip: Ipv4Addr = svc["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
            assert!(ip.octets()[3] >= 17 && ip.octets()[3] <= 254, "{ip}");
        }
    }

    #[test]
    fn node_ports_avoid_those_in_use_and_keep_the_services_own() {
        let store = store_with(
            "10.0.0.0/24",
            &[json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]})],
        );
        let used = in_use(&store, ("ns", "new"));
        let mut svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}]}});
        allocate_node_ports(&mut svc, &used, &[]).unwrap();
        let picked = svc["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
        assert!(
            (30086..=32767).contains(&picked),
            "{picked}: the upper band"
        );
        let mut taken = json!({"metadata": {"name": "t"}, "spec": {"ports": [{"port": 80, "nodePort": 30000}]}});
        let error = allocate_node_ports(&mut taken, &used, &[]).unwrap_err();
        assert!(error.message.ends_with(
            "spec.ports[0].nodePort: Invalid value: 30000: provided port is already allocated"
        ));
        assert!(allocate_node_ports(&mut taken, &used, &[30000]).is_ok());
        let mut twice = json!({"metadata": {"name": "t"}, "spec": {"ports": [{"port": 80, "nodePort": 30005}, {"port": 81, "nodePort": 30005}]}});
        assert!(
            allocate_node_ports(&mut twice, &used, &[])
                .unwrap_err()
                .message
                .contains("spec.ports[1].nodePort")
        );
        assert!(pick_node_port(|p| p == 30007) == Some(30007));
        assert_eq!(pick_node_port(|_| false), None);
    }
}
