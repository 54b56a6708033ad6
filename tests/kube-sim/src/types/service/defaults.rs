//! Service defaults: the decode-time ones (`SetDefaults_Service` in `pkg/apis/core/v1`) and
//! what the strategy and the registry fill in or wipe (`PrepareForCreate`,
//! `dropTypeDependentFields`, `patchAllocatedValues`, `normalizeClusterIPs`).

use serde_json::{Value, json};

/// The default session affinity timeout (`DefaultClientIPServiceAffinitySeconds`).
const CLIENT_IP_TIMEOUT: i64 = 10800;

pub fn spec_str<'a>(svc: &'a Value, field: &str) -> &'a str {
    svc["spec"][field].as_str().unwrap_or_default()
}

/// `ExternallyAccessible`: NodePort, LoadBalancer, or ClusterIP with external IPs.
pub fn externally_accessible(svc: &Value) -> bool {
    match spec_str(svc, "type") {
        "NodePort" | "LoadBalancer" => true,
        "ClusterIP" => svc["spec"]["externalIPs"]
            .as_array()
            .is_some_and(|ips| !ips.is_empty()),
        _ => false,
    }
}

/// Every type but ExternalName has cluster IPs (`needsClusterIP`).
pub fn needs_cluster_ip(svc: &Value) -> bool {
    spec_str(svc, "type") != "ExternalName"
}

/// NodePort, and LoadBalancer unless it opts out (`needsNodePort`).
pub fn needs_node_port(svc: &Value) -> bool {
    match spec_str(svc, "type") {
        "NodePort" => true,
        "LoadBalancer" => svc["spec"]["allocateLoadBalancerNodePorts"] != false,
        _ => false,
    }
}

/// `SetDefaults_Service`.
pub fn decode_defaults(svc: &mut Value) {
    if !svc["spec"].is_object() {
        svc["spec"] = json!({});
    }
    let spec = &mut svc["spec"];
    if spec["sessionAffinity"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        spec["sessionAffinity"] = json!("None");
    }
    match spec["sessionAffinity"].as_str() {
        Some("None") => remove(spec, "sessionAffinityConfig"),
        Some("ClientIP")
            if spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].is_null() =>
        {
            spec["sessionAffinityConfig"] =
                json!({"clientIP": {"timeoutSeconds": CLIENT_IP_TIMEOUT}});
        }
        _ => {}
    }
    if spec["type"].as_str().unwrap_or_default().is_empty() {
        spec["type"] = json!("ClusterIP");
    }
    if let Some(ports) = ports_mut(svc) {
        ports.iter_mut().for_each(default_port);
    }
    if externally_accessible(svc) && spec_str(svc, "externalTrafficPolicy").is_empty() {
        svc["spec"]["externalTrafficPolicy"] = json!("Cluster");
    }
    let spec = &mut svc["spec"];
    let ty = spec["type"].as_str().unwrap_or_default().to_owned();
    if spec["internalTrafficPolicy"].is_null()
        && matches!(ty.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer")
    {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if ty == "LoadBalancer" && spec["allocateLoadBalancerNodePorts"].is_null() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
    // `LoadBalancerIPMode` (GA, always on): an ingress point with an `ip` and no `ipMode` is
    // `VIP`, whoever writes the status (a cloud controller usually leaves it out).
    let ingress = svc["status"]["loadBalancer"]["ingress"].as_array_mut();
    for point in ingress.into_iter().flatten() {
        let has_ip = !point["ip"].as_str().unwrap_or_default().is_empty();
        if has_ip && point["ipMode"].is_null() && point.is_object() {
            point["ipMode"] = json!("VIP");
        }
    }
}

/// A port's protocol (TCP) and targetPort (the port, when 0 or "").
fn default_port(port: &mut Value) {
    if !port.is_object() {
        return;
    }
    if port["protocol"].as_str().unwrap_or_default().is_empty() {
        port["protocol"] = json!("TCP");
    }
    let target = &port["targetPort"];
    if target.is_null() || target == 0 || target == "" {
        port["targetPort"] = port["port"].clone();
    }
}

fn remove(map: &mut Value, key: &str) {
    if let Some(map) = map.as_object_mut() {
        map.remove(key);
    }
}

/// The cluster IPs of a Service as a list of strings.
pub fn cluster_ips(svc: &Value) -> Vec<String> {
    svc["spec"]["clusterIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|ip| ip.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `normalizeClusterIPs`: keep `clusterIPs` in step with `clusterIP` when the client set only
/// the latter (`old` None on create).
pub fn normalize_cluster_ips(new: &mut Value, old: Option<&Value>) {
    let cluster_ip = spec_str(new, "clusterIP").to_owned();
    let ips = cluster_ips(new);
    let Some(old) = old else {
        if !cluster_ip.is_empty() && ips.is_empty() {
            new["spec"]["clusterIPs"] = json!([cluster_ip]);
        }
        return;
    };
    if cluster_ip == spec_str(old, "clusterIP") || ips != cluster_ips(old) {
        return;
    }
    if cluster_ip.is_empty() {
        remove(&mut new["spec"], "clusterIPs");
    } else if ips.is_empty() {
        new["spec"]["clusterIPs"] = json!([cluster_ip]);
    } else {
        new["spec"]["clusterIPs"][0] = json!(cluster_ip);
    }
}

/// `patchAllocatedValues`: what the server allocated stays when an update leaves it out
/// (clusterIP(s); nodePorts matched by port name, unless used by another port).
pub fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if spec_str(new, "clusterIP").is_empty() && !old["spec"]["clusterIP"].is_null() {
            new["spec"]["clusterIP"] = old["spec"]["clusterIP"].clone();
        }
        if cluster_ips(new).is_empty() && !cluster_ips(old).is_empty() {
            new["spec"]["clusterIPs"] = old["spec"]["clusterIPs"].clone();
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let used_by =
            |svc: &Value| -> Vec<i64> { ports(svc).iter().filter_map(node_port).collect() };
        let new_used = used_by(new);
        let kept: Vec<i64> = used_by(old)
            .into_iter()
            .filter(|p| new_used.contains(p))
            .collect();
        let by_name: Vec<(String, Option<i64>)> = ports(old)
            .iter()
            .map(|p| (port_name(p), node_port(p)))
            .collect();
        if let Some(new_ports) = ports_mut(new) {
            for port in new_ports.iter_mut().filter(|p| node_port(p).is_none()) {
                let name = port_name(port);
                let old_value = by_name
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, v)| *v);
                if let Some(value) = old_value.filter(|v| !kept.contains(v)) {
                    port["nodePort"] = json!(value);
                }
            }
        }
    }
    let needs_hc = |svc: &Value| {
        spec_str(svc, "type") == "LoadBalancer" && spec_str(svc, "externalTrafficPolicy") == "Local"
    };
    if needs_hc(old) && needs_hc(new) && new["spec"]["healthCheckNodePort"].is_null() {
        new["spec"]["healthCheckNodePort"] = old["spec"]["healthCheckNodePort"].clone();
    }
}

pub fn ports(svc: &Value) -> Vec<Value> {
    svc["spec"]["ports"].as_array().cloned().unwrap_or_default()
}

/// `spec.ports` to change in place, if present (indexing would insert a null).
pub fn ports_mut(svc: &mut Value) -> Option<&mut Vec<Value>> {
    svc.get_mut("spec")?.get_mut("ports")?.as_array_mut()
}

pub fn port_name(port: &Value) -> String {
    port["name"].as_str().unwrap_or_default().to_owned()
}

/// A port's nodePort, None when unset or 0.
pub fn node_port(port: &Value) -> Option<i64> {
    port["nodePort"].as_i64().filter(|p| *p != 0)
}

/// `dropTypeDependentFields`: fields the old type needed and the new one does not are wiped,
/// when the client left them as they were.
pub fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let same = |field: &str, new: &Value| new["spec"][field] == old["spec"][field];
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if same(field, new) {
                remove(&mut new["spec"], field);
            }
        }
    }
    let node_ports =
        |svc: &Value| -> Vec<Option<i64>> { ports(svc).iter().map(node_port).collect() };
    if needs_node_port(old)
        && !needs_node_port(new)
        && node_ports(new) == node_ports(old)
        && let Some(ports) = ports_mut(new)
    {
        ports.iter_mut().for_each(|p| remove(p, "nodePort"));
    }
    if spec_str(old, "type") == "LoadBalancer" && spec_str(new, "type") != "LoadBalancer" {
        for field in [
            "healthCheckNodePort",
            "allocateLoadBalancerNodePorts",
            "loadBalancerClass",
        ] {
            if same(field, new) {
                remove(&mut new["spec"], field);
            }
        }
    }
    if externally_accessible(old)
        && !externally_accessible(new)
        && same("externalTrafficPolicy", new)
    {
        remove(&mut new["spec"], "externalTrafficPolicy");
    }
    if spec_str(new, "type") != "LoadBalancer" {
        new["status"]["loadBalancer"] = json!({});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_defaults_fill_what_the_apiserver_fills() {
        let mut svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}});
        decode_defaults(&mut svc);
        assert_eq!(svc["spec"]["sessionAffinity"], "None");
        assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(svc["spec"]["ports"][1]["targetPort"], "dns");
        let mut ext = json!({"spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        decode_defaults(&mut ext);
        assert!(ext["spec"]["internalTrafficPolicy"].is_null());
        assert!(ext["spec"]["externalTrafficPolicy"].is_null());
    }

    #[test]
    fn omitted_allocations_are_kept_and_node_ports_follow_port_names() {
        let old = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ports": [{"name": "http", "port": 83, "nodePort": 30001}]}});
        let mut renumbered = json!({"spec": {"type": "NodePort", "clusterIP": "", "clusterIPs": [], "ports": [{"name": "http", "port": 84}]}});
        patch_allocated_values(&mut renumbered, &old);
        assert_eq!(renumbered["spec"]["clusterIPs"], json!(["10.0.0.5"]));
        assert_eq!(renumbered["spec"]["ports"][0]["nodePort"], 30001);
        let mut renamed =
            json!({"spec": {"type": "NodePort", "ports": [{"name": "web", "port": 84}]}});
        patch_allocated_values(&mut renamed, &old);
        assert!(renamed["spec"]["ports"][0]["nodePort"].is_null());
    }

    #[test]
    fn changing_clusterip_alone_moves_the_first_clusterips_entry() {
        let old = json!({"spec": {"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"]}});
        let mut new = json!({"spec": {"clusterIP": "10.0.0.250", "clusterIPs": ["10.0.0.5"]}});
        normalize_cluster_ips(&mut new, Some(&old));
        assert_eq!(new["spec"]["clusterIPs"], json!(["10.0.0.250"]));
        let mut created = json!({"spec": {"clusterIP": "None"}});
        normalize_cluster_ips(&mut created, None);
        assert_eq!(created["spec"]["clusterIPs"], json!(["None"]));
    }

    #[test]
    fn leaving_node_port_type_wipes_unchanged_node_ports_and_traffic_policy() {
        let old = json!({"spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster", "ports": [{"port": 84, "nodePort": 30001}]}});
        let mut new = old.clone();
        new["spec"]["type"] = json!("ClusterIP");
        drop_type_dependent_fields(&mut new, &old);
        assert!(new["spec"]["ports"][0].get("nodePort").is_none());
        assert!(new["spec"].get("externalTrafficPolicy").is_none());
        assert_eq!(new["status"], json!({"loadBalancer": {}}));
    }
}
