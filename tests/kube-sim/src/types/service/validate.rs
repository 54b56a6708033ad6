//! `ValidateService` and `ValidateServiceUpdate` of `pkg/apis/core/validation`, with the
//! clusterIP-related part (`ValidateServiceClusterIPsRelatedFields`) the registry also runs
//! before allocating.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde_json::{Value, json};

use super::defaults::{cluster_ips, externally_accessible, port_name, ports, spec_str};
use crate::types::field::{ErrorList, FieldError};
use crate::types::ip;
use crate::types::meta::{self, NameRule};
use crate::types::names;

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const AFFINITIES: [&str; 2] = ["ClientIP", "None"];
const TRAFFIC_POLICIES: [&str; 2] = ["Cluster", "Local"];
const FAMILIES: [&str; 2] = ["IPv4", "IPv6"];
const FAMILY_POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];

/// A Service whose only cluster IP is None (`isHeadlessService`).
pub fn is_headless(svc: &Value) -> bool {
    cluster_ips(svc) == ["None"]
}

/// `ValidateService`.
pub fn validate(svc: &Value) -> ErrorList {
    // Services names are DNS-1123 labels (`RelaxedServiceNameValidation`, on by default).
    let mut errors = meta::validate(svc, NameRule::Label, true, true);
    let ty = spec_str(svc, "type");
    let headless = is_headless(svc);
    let svc_ports = ports(svc);
    if svc_ports.is_empty() && !headless && ty != "ExternalName" {
        errors.push(FieldError::required("spec.ports", ""));
    }
    errors.extend(type_rules(svc, ty, headless));
    let mut names = BTreeSet::new();
    for (i, port) in svc_ports.iter().enumerate() {
        errors.extend(service_port(port, i, svc_ports.len() > 1, &mut names));
    }
    if let Some(selector) = svc["spec"]["selector"].as_object() {
        errors.extend(
            meta::labels(Some(selector))
                .into_iter()
                .map(|e| FieldError {
                    field: "spec.selector".to_owned(),
                    ..e
                }),
        );
    }
    errors.extend(session_affinity(svc));
    errors.extend(cluster_ip_fields(svc));
    for (i, external) in svc["spec"]["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("spec.externalIPs[{i}]");
        let value = external.as_str().unwrap_or_default();
        match ip::parse(value) {
            Ok(parsed) => errors.extend(ip::validate_endpoint(&path, parsed, value)),
            Err(problem) => errors.push(FieldError::invalid(&path, value, problem)),
        }
    }
    if ty.is_empty() {
        errors.push(FieldError::required("spec.type", ""));
    } else if !TYPES.contains(&ty) {
        errors.push(FieldError::not_supported("spec.type", ty, &TYPES));
    }
    errors.extend(node_port_rules(svc, ty, &svc_ports));
    errors.extend(traffic_policies(svc));
    errors
}

fn type_rules(svc: &Value, ty: &str, headless: bool) -> ErrorList {
    let mut errors = ErrorList::new();
    match ty {
        "LoadBalancer" | "NodePort" if headless => errors.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            "None",
            format!("may not be set to 'None' for {ty} services"),
        )),
        "ExternalName" => {
            for field in ["clusterIPs", "ipFamilies"] {
                if svc["spec"][field].as_array().is_some_and(|l| !l.is_empty()) {
                    errors.push(FieldError::forbidden(
                        &format!("spec.{field}"),
                        "may not be set for ExternalName services",
                    ));
                }
            }
            if !svc["spec"]["ipFamilyPolicy"].is_null() {
                errors.push(FieldError::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            let name = spec_str(svc, "externalName");
            let cname = name.strip_suffix('.').unwrap_or(name);
            if cname.is_empty() {
                errors.push(FieldError::required("spec.externalName", ""));
            }
            for problem in names::dns1123_subdomain(cname)
                .into_iter()
                .filter(|_| !cname.is_empty())
            {
                errors.push(FieldError::invalid("spec.externalName", cname, &problem));
            }
        }
        _ => {}
    }
    errors
}

/// `validateServicePort`.
fn service_port(
    port: &Value,
    i: usize,
    require_name: bool,
    names: &mut BTreeSet<String>,
) -> ErrorList {
    let path = format!("spec.ports[{i}]");
    let mut errors = ErrorList::new();
    let name = port_name(port);
    if require_name && name.is_empty() {
        errors.push(FieldError::required(&format!("{path}.name"), ""));
    } else if !name.is_empty() {
        for problem in names::dns1123_label(&name) {
            errors.push(FieldError::invalid(
                &format!("{path}.name"),
                name.as_str(),
                &problem,
            ));
        }
        if !names.insert(name.clone()) {
            errors.push(FieldError::duplicate(
                &format!("{path}.name"),
                name.as_str(),
            ));
        }
    }
    let number = port["port"].as_i64().unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errors.push(FieldError::invalid(
            &format!("{path}.port"),
            number,
            "must be between 1 and 65535, inclusive",
        ));
    }
    match port["protocol"].as_str().unwrap_or_default() {
        "" => errors.push(FieldError::required(&format!("{path}.protocol"), "")),
        p if !PROTOCOLS.contains(&p) => {
            errors.push(FieldError::not_supported(
                &format!("{path}.protocol"),
                p,
                &PROTOCOLS,
            ));
        }
        _ => {}
    }
    errors.extend(target_port(
        &port["targetPort"],
        &format!("{path}.targetPort"),
    ));
    if let Some(app_protocol) = port["appProtocol"].as_str() {
        for problem in names::qualified_name(app_protocol) {
            errors.push(FieldError::invalid(
                &format!("{path}.appProtocol"),
                app_protocol,
                &problem,
            ));
        }
    }
    errors
}

/// `ValidatePortNumOrName`.
fn target_port(target: &Value, path: &str) -> ErrorList {
    if let Some(number) = target.as_i64() {
        if (1..=65535).contains(&number) {
            return ErrorList::new();
        }
        return vec![FieldError::invalid(
            path,
            number,
            "must be between 1 and 65535, inclusive",
        )];
    }
    let name = target.as_str().unwrap_or_default();
    let mut problems = Vec::new();
    if name.len() > 15 {
        problems.push("must be no more than 15 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || name.is_empty()
    {
        problems.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        problems.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("must not begin or end with a hyphen");
    }
    problems
        .into_iter()
        .map(|p| FieldError::invalid(path, name, p))
        .collect()
}

fn session_affinity(svc: &Value) -> ErrorList {
    let affinity = spec_str(svc, "sessionAffinity");
    let mut errors = ErrorList::new();
    if affinity.is_empty() {
        errors.push(FieldError::required("spec.sessionAffinity", ""));
    } else if !AFFINITIES.contains(&affinity) {
        errors.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity,
            &AFFINITIES,
        ));
    }
    let config = &svc["spec"]["sessionAffinityConfig"];
    if affinity == "None" && !config.is_null() {
        errors.push(FieldError::forbidden(
            "spec.sessionAffinityConfig",
            "must not be set when session affinity is None",
        ));
    }
    if affinity == "ClientIP" {
        let timeout = config["clientIP"]["timeoutSeconds"].as_i64().unwrap_or(0);
        if !(1..=86400).contains(&timeout) {
            errors.push(FieldError::invalid(
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                timeout,
                "must be greater than 0 and less than 86400",
            ));
        }
    }
    errors
}

/// `validateServiceClusterIPsRelatedFields`: clusterIP and clusterIPs in step, valid
/// addresses, supported families and policy, addresses of the stated families.
pub fn cluster_ip_fields(svc: &Value) -> ErrorList {
    if spec_str(svc, "type") == "ExternalName" {
        return ErrorList::new();
    }
    let ips = cluster_ips(svc);
    let cluster_ip = spec_str(svc, "clusterIP");
    let mut errors = ErrorList::new();
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errors.push(FieldError::required("spec.clusterIPs", ""));
        } else if ips[0] != cluster_ip {
            errors.push(FieldError::invalid(
                "spec.clusterIPs",
                json!(ips),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errors.push(FieldError::invalid(
            "spec.clusterIPs",
            json!(ips),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let families: Vec<&str> = svc["spec"]["ipFamilies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f.as_str().unwrap_or_default())
        .collect();
    let mut seen = BTreeSet::new();
    for (i, family) in families.iter().enumerate() {
        let path = format!("spec.ipFamilies[{i}]");
        if !FAMILIES.contains(family) {
            errors.push(FieldError::not_supported(&path, *family, &FAMILIES));
        }
        if !seen.insert(*family) {
            errors.push(FieldError::duplicate(&path, *family));
        }
    }
    if let Some(policy) = svc["spec"]["ipFamilyPolicy"]
        .as_str()
        .filter(|p| !FAMILY_POLICIES.contains(p))
    {
        errors.push(FieldError::not_supported(
            "spec.ipFamilyPolicy",
            policy,
            &FAMILY_POLICIES,
        ));
    }
    let mut invalid_ips = false;
    for (i, address) in ips.iter().enumerate() {
        if i == 0 && address == "None" {
            if ips.len() > 1 {
                invalid_ips = true;
                errors.push(FieldError::invalid(
                    "spec.clusterIPs",
                    json!(ips),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let found = ip::validate(&format!("spec.clusterIPs[{i}]"), address);
        invalid_ips |= !found.is_empty();
        errors.extend(found);
    }
    if ips.len() > 2 {
        invalid_ips = true;
        errors.push(FieldError::invalid(
            "spec.clusterIPs",
            json!(ips),
            "may only hold up to 2 values",
        ));
    }
    if invalid_ips {
        return errors;
    }
    let parsed: Vec<IpAddr> = ips.iter().filter_map(|a| a.parse().ok()).collect();
    if parsed.len() == 2 && parsed[0].is_ipv4() == parsed[1].is_ipv4() {
        errors.push(FieldError::invalid(
            "spec.clusterIPs",
            json!(ips),
            "may specify no more than one IP for each IP family",
        ));
    }
    if !is_headless(svc) {
        for (i, (address, family)) in ips.iter().zip(&families).enumerate() {
            let v6 = address.parse::<IpAddr>().is_ok_and(|a| a.is_ipv6());
            let expected = match *family {
                "IPv4" if v6 => "IPv4",
                "IPv6" if !v6 => "IPv6",
                _ => continue,
            };
            errors.push(FieldError::invalid(
                &format!("spec.clusterIPs[{i}]"),
                address.as_str(),
                format!("expected an {expected} value as indicated by `ipFamilies[{i}]`"),
            ));
        }
    }
    errors
}

fn node_port_rules(svc: &Value, ty: &str, svc_ports: &[Value]) -> ErrorList {
    let mut errors = ErrorList::new();
    let mut node_ports = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for (i, port) in svc_ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let protocol = port["protocol"].as_str().unwrap_or_default();
        if let Some(node_port) = port["nodePort"].as_i64().filter(|p| *p != 0) {
            if ty == "ClusterIP" {
                errors.push(FieldError::forbidden(
                    &format!("{path}.nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
            if !node_ports.insert((protocol, node_port)) {
                errors.push(FieldError::duplicate(
                    &format!("{path}.nodePort"),
                    node_port,
                ));
            }
        }
        let number = port["port"].as_i64().unwrap_or(0);
        if !keys.insert((protocol, number)) {
            errors.push(FieldError::duplicate(
                &path,
                json!({"protocol": protocol, "port": number}),
            ));
        }
    }
    let _ = svc;
    errors
}

fn traffic_policies(svc: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let external = spec_str(svc, "externalTrafficPolicy");
    if !externally_accessible(svc) {
        if !external.is_empty() {
            errors.push(FieldError::invalid(
                "spec.externalTrafficPolicy",
                external,
                "may only be set for externally-accessible services",
            ));
        }
    } else if external.is_empty() {
        errors.push(FieldError::required("spec.externalTrafficPolicy", ""));
    } else if !TRAFFIC_POLICIES.contains(&external) {
        errors.push(FieldError::not_supported(
            "spec.externalTrafficPolicy",
            external,
            &TRAFFIC_POLICIES,
        ));
    }
    let needs_hc = spec_str(svc, "type") == "LoadBalancer" && external == "Local";
    if let Some(hc) = svc["spec"]["healthCheckNodePort"]
        .as_i64()
        .filter(|p| *p != 0 && !needs_hc)
    {
        errors.push(FieldError::invalid(
            "spec.healthCheckNodePort",
            hc,
            "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        ));
    }
    let internal = &svc["spec"]["internalTrafficPolicy"];
    match internal.as_str() {
        None if matches!(
            spec_str(svc, "type"),
            "ClusterIP" | "NodePort" | "LoadBalancer"
        ) =>
        {
            errors.push(FieldError::required("spec.internalTrafficPolicy", ""));
        }
        Some(p) if !TRAFFIC_POLICIES.contains(&p) => {
            errors.push(FieldError::not_supported(
                "spec.internalTrafficPolicy",
                p,
                &TRAFFIC_POLICIES,
            ));
        }
        _ => {}
    }
    errors
}

/// `ValidateServiceUpdate`: metadata update rules, cluster IPs and families that may not change
/// (except to, from or on ExternalName), and the new Service valid.
pub fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let mut errors = meta::validate_update(new, old, true);
    errors.extend(unchanged_cluster_ips(new, old));
    errors.extend(unchanged_families(new, old));
    errors.extend(validate(new));
    errors
}

/// `validateUpgradeDowngradeClusterIPs` (single-stack: the primary address never changes).
fn unchanged_cluster_ips(new: &Value, old: &Value) -> ErrorList {
    if spec_str(new, "type") == "ExternalName" || spec_str(old, "type") == "ExternalName" {
        return ErrorList::new();
    }
    if is_headless(new) && is_headless(old) {
        return ErrorList::new();
    }
    let (now, before) = (cluster_ips(new), cluster_ips(old));
    let mut errors = ErrorList::new();
    if now.is_empty() && !before.is_empty() {
        errors.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            json!(now),
            "primary clusterIP can not be unset",
        ));
    }
    let changed = before
        .iter()
        .zip(&now)
        .enumerate()
        .filter(|(i, (b, n))| b != n && (now.len() == before.len() || *i == 0));
    for (i, _) in changed {
        errors.push(FieldError::invalid(
            &format!("spec.clusterIPs[{i}]"),
            json!(now),
            "may not change once set",
        ));
    }
    errors
}

/// `validateUpgradeDowngradeIPFamilies` (the primary family never changes, headless aside).
fn unchanged_families(new: &Value, old: &Value) -> ErrorList {
    if spec_str(new, "type") == "ExternalName" || spec_str(old, "type") == "ExternalName" {
        return ErrorList::new();
    }
    if is_headless(new) || is_headless(old) {
        return ErrorList::new();
    }
    let (now, before) = (&new["spec"]["ipFamilies"], &old["spec"]["ipFamilies"]);
    match (now.get(0), before.get(0)) {
        (Some(n), Some(b)) if n != b => vec![FieldError::invalid(
            "spec.ipFamilies[0]",
            now.clone(),
            "may not change once set",
        )],
        _ => ErrorList::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "n"}, "spec": spec})
    }

    fn messages(errors: &ErrorList) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    fn complete(extra: Value) -> Value {
        let mut spec = json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        svc(spec)
    }

    #[test]
    fn a_complete_service_is_valid() {
        assert!(validate(&complete(json!({}))).is_empty());
    }

    #[test]
    fn several_ports_need_names_and_cluster_ip_needs_ports() {
        let two = complete(
            json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}, {"port": 443, "protocol": "TCP", "targetPort": 443}]}),
        );
        assert_eq!(
            messages(&validate(&two)),
            vec![
                "spec.ports[0].name: Required value",
                "spec.ports[1].name: Required value"
            ]
        );
        let none = complete(json!({"ports": []}));
        assert_eq!(
            messages(&validate(&none)),
            vec!["spec.ports: Required value"]
        );
    }

    #[test]
    fn headless_node_ports_and_lone_cluster_ips_are_refused() {
        let headless_np = complete(
            json!({"type": "NodePort", "externalTrafficPolicy": "Cluster", "clusterIP": "None", "clusterIPs": ["None"]}),
        );
        assert_eq!(
            messages(&validate(&headless_np)),
            vec![
                "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"
            ]
        );
        let ips_only = svc(json!({"clusterIPs": ["None"]}));
        assert_eq!(
            messages(&cluster_ip_fields(&ips_only)),
            vec![
                "spec.clusterIPs: Invalid value: [\"None\"]: must be empty when `clusterIP` is not specified"
            ]
        );
    }

    #[test]
    fn cluster_ips_may_not_change() {
        let old = complete(json!({}));
        let new = complete(json!({"clusterIP": "10.0.0.250", "clusterIPs": ["10.0.0.250"]}));
        assert_eq!(
            messages(&validate_update(&new, &old)),
            vec!["spec.clusterIPs[0]: Invalid value: [\"10.0.0.250\"]: may not change once set"]
        );
        let cluster_ip_type_with_node_port = complete(
            json!({"ports": [{"name": "web", "port": 84, "protocol": "TCP", "targetPort": 8080, "nodePort": 30999}]}),
        );
        assert_eq!(
            messages(&validate(&cluster_ip_type_with_node_port)),
            vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
        );
    }
}
