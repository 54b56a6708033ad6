//! EndpointSlices (`discovery.k8s.io/v1`): the decode defaults (`SetDefaults_EndpointPort`,
//! the zero `conditions` struct), the storage form of Go's nil slices (`endpoints` and `ports`
//! have no `omitempty`: absent or empty ones read back as `null`), and
//! `ValidateEndpointSliceCreate` / `ValidateEndpointSliceUpdate` of
//! `pkg/apis/discovery/validation`.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde_json::{Value, json};

use super::field::{ErrorList, FieldError};
use super::meta::{self, NameRule};
use super::{ip, names};

const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// Decode defaults: every port gets a name ("") and a protocol (TCP), every endpoint its
/// `conditions` (a struct, so `{}` when absent).
pub fn decode_defaults(obj: &mut Value) {
    if let Some(ports) = obj.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| p.is_object()) {
            if port["name"].is_null() {
                port["name"] = json!("");
            }
            if port["protocol"].is_null() {
                port["protocol"] = json!("TCP");
            }
        }
    }
    if let Some(endpoints) = obj.get_mut("endpoints").and_then(Value::as_array_mut) {
        for endpoint in endpoints.iter_mut().filter(|e| e.is_object()) {
            if endpoint["conditions"].is_null() {
                endpoint["conditions"] = json!({});
            }
        }
    }
}

/// The object as storage gives it back: empty or absent `endpoints` and `ports` are `null`.
pub fn storage_form(obj: &mut Value) {
    for list in ["endpoints", "ports"] {
        let empty = obj[list].as_array().is_none_or(Vec::is_empty);
        if empty {
            obj[list] = Value::Null;
        }
    }
}

/// `ValidateEndpointSliceCreate`.
pub fn validate_create(obj: &Value) -> ErrorList {
    validate(obj)
}

/// `ValidateEndpointSliceUpdate`: the slice is valid and its addressType unchanged.
pub fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let mut errors = meta::validate_update(new, old, true);
    errors.extend(validate(new));
    if new["addressType"] != old["addressType"] {
        errors.push(FieldError::invalid(
            "addressType",
            new["addressType"].clone(),
            "field is immutable",
        ));
    }
    errors
}

/// `ValidateEndpointSlice`: metadata, addressType, endpoints, ports.
fn validate(obj: &Value) -> ErrorList {
    let mut errors = meta::validate(obj, NameRule::Subdomain, true, true);
    let address_type = obj["addressType"].as_str().unwrap_or_default();
    if address_type.is_empty() {
        errors.push(FieldError::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errors.push(FieldError::not_supported(
            "addressType",
            address_type,
            &ADDRESS_TYPES,
        ));
    }
    errors.extend(endpoints(obj["endpoints"].as_array(), address_type));
    errors.extend(ports(obj["ports"].as_array()));
    errors
}

fn endpoints(endpoints: Option<&Vec<Value>>, address_type: &str) -> ErrorList {
    let endpoints = endpoints.map(Vec::as_slice).unwrap_or_default();
    if endpoints.len() > MAX_ENDPOINTS {
        // The only check made once there are too many.
        return vec![FieldError::too_many(
            "endpoints",
            endpoints.len(),
            MAX_ENDPOINTS,
        )];
    }
    let mut errors = ErrorList::new();
    for (i, endpoint) in endpoints.iter().enumerate() {
        let path = format!("endpoints[{i}]");
        errors.extend(addresses(&path, &endpoint["addresses"], address_type));
        if let Some(node) = endpoint["nodeName"].as_str() {
            for problem in names::dns1123_subdomain(node) {
                errors.push(FieldError::invalid(
                    &format!("{path}.nodeName"),
                    node,
                    &problem,
                ));
            }
        }
        if let Some(hostname) = endpoint["hostname"].as_str() {
            for problem in names::dns1123_label(hostname) {
                errors.push(FieldError::invalid(
                    &format!("{path}.hostname"),
                    hostname,
                    &problem,
                ));
            }
        }
    }
    errors
}

fn addresses(endpoint_path: &str, addresses: &Value, address_type: &str) -> ErrorList {
    let path = format!("{endpoint_path}.addresses");
    let list = addresses.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut errors = ErrorList::new();
    if list.is_empty() {
        errors.push(FieldError::required(
            &path,
            "must contain at least 1 address",
        ));
    } else if list.len() > MAX_ADDRESSES {
        errors.push(FieldError::too_many(&path, list.len(), MAX_ADDRESSES));
    }
    for (i, address) in list.iter().enumerate() {
        let value = address.as_str().unwrap_or_default();
        let indexed = format!("{path}[{i}]");
        match address_type {
            "IPv4" | "IPv6" => errors.extend(ip_address(&path, &indexed, value, address_type)),
            "FQDN" => errors.extend(fqdn(&indexed, value)),
            _ => {}
        }
    }
    errors
}

/// An address of an IP slice: valid, of the slice's family, usable as an endpoint.
fn ip_address(path: &str, indexed: &str, value: &str, family: &str) -> ErrorList {
    let parsed = match ip::parse(value) {
        Ok(parsed) => parsed,
        Err(problem) => return vec![FieldError::invalid(indexed, value, problem)],
    };
    let mut errors = ErrorList::new();
    match (family, parsed) {
        ("IPv4", IpAddr::V6(_)) => {
            errors.push(FieldError::invalid(path, value, "must be an IPv4 address"));
        }
        ("IPv6", IpAddr::V4(_)) => {
            errors.push(FieldError::invalid(path, value, "must be an IPv6 address"));
        }
        _ => errors.extend(ip::validate_endpoint(indexed, parsed, value)),
    }
    errors
}

/// `IsFullyQualifiedDomainName`.
fn fqdn(path: &str, value: &str) -> ErrorList {
    if value.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let problems = names::dns1123_subdomain(name);
    if !problems.is_empty() {
        return vec![FieldError::invalid(path, name, problems.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for label in name.split('.') {
        let problems = names::dns1123_label(label);
        if !problems.is_empty() {
            return vec![FieldError::invalid(path, label, problems.join(","))];
        }
    }
    ErrorList::new()
}

fn ports(ports: Option<&Vec<Value>>) -> ErrorList {
    let ports = ports.map(Vec::as_slice).unwrap_or_default();
    if ports.len() > MAX_PORTS {
        return vec![FieldError::too_many("ports", ports.len(), MAX_PORTS)];
    }
    let mut errors = ErrorList::new();
    let mut seen = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let path = format!("ports[{i}]");
        let name = port["name"].as_str().unwrap_or_default();
        if !name.is_empty() {
            for problem in names::dns1123_label(name) {
                errors.push(FieldError::invalid(&format!("{path}.name"), name, &problem));
            }
        }
        if !seen.insert(name) {
            errors.push(FieldError::duplicate(&format!("{path}.name"), name));
        }
        match port["protocol"].as_str() {
            None => errors.push(FieldError::required(&format!("{path}.protocol"), "")),
            Some(p) if !PROTOCOLS.contains(&p) => errors.push(FieldError::not_supported(
                &format!("{path}.protocol"),
                p,
                &PROTOCOLS,
            )),
            Some(_) => {}
        }
        if let Some(app_protocol) = port["appProtocol"].as_str() {
            for problem in names::qualified_name(app_protocol) {
                errors.push(FieldError::invalid(
                    &format!("{path}.appProtocol"),
                    app_protocol,
                    &problem,
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(extra: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "s", "namespace": "n"}, "addressType": "IPv4"});
        for (k, v) in extra.as_object().unwrap() {
            obj[k] = v.clone();
        }
        decode_defaults(&mut obj);
        obj
    }

    fn messages(obj: &Value) -> Vec<String> {
        validate_create(obj)
            .iter()
            .map(FieldError::message)
            .collect()
    }

    #[test]
    fn defaults_and_storage_form() {
        let mut obj =
            slice(json!({"endpoints": [{"addresses": ["10.1.1.1"]}], "ports": [{"port": 80}]}));
        assert_eq!(obj["endpoints"][0]["conditions"], json!({}));
        assert_eq!(
            obj["ports"][0],
            json!({"name": "", "protocol": "TCP", "port": 80})
        );
        let mut empty = slice(json!({"endpoints": []}));
        storage_form(&mut empty);
        assert_eq!(empty["endpoints"], Value::Null);
        assert_eq!(empty["ports"], Value::Null);
        storage_form(&mut obj);
        assert_eq!(obj["ports"][0]["port"], 80);
    }

    #[test]
    fn addresses_must_match_the_family_and_be_strict() {
        assert_eq!(
            messages(&slice(json!({"endpoints": [{"addresses": ["fd00::1"]}]}))),
            vec!["endpoints[0].addresses: Invalid value: \"fd00::1\": must be an IPv4 address"]
        );
        assert_eq!(
            messages(&slice(
                json!({"endpoints": [{"addresses": ["10.244.001.5"]}]})
            )),
            vec![
                "endpoints[0].addresses[0]: Invalid value: \"10.244.001.5\": must not have leading 0s"
            ]
        );
        assert_eq!(
            messages(&slice(json!({"endpoints": [{"addresses": []}]}))),
            vec!["endpoints[0].addresses: Required value: must contain at least 1 address"]
        );
        let many: Vec<Value> = (0..1001)
            .map(|_| json!({"addresses": ["10.1.1.1"]}))
            .collect();
        assert_eq!(
            messages(&slice(json!({"endpoints": many}))),
            vec!["endpoints: Too many: 1001: must have at most 1000 items"]
        );
        let fqdn = json!({"metadata": {"name": "s", "namespace": "n"}, "addressType": "FQDN", "endpoints": [{"addresses": ["db"]}]});
        assert_eq!(validate_create(&fqdn).len(), 1);
    }

    #[test]
    fn ports_and_address_types() {
        assert_eq!(
            messages(&slice(
                json!({"ports": [{"name": "http", "port": 1}, {"name": "http", "port": 2}]})
            )),
            vec!["ports[1].name: Duplicate value: \"http\""]
        );
        let mut obj = slice(json!({}));
        obj["addressType"] = json!("IPv5");
        assert_eq!(
            messages(&obj),
            vec![
                "addressType: Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
            ]
        );
        let old = slice(json!({}));
        let mut new = old.clone();
        new["addressType"] = json!("IPv6");
        let errors = validate_update(&new, &old);
        assert_eq!(
            errors.last().unwrap().message(),
            "addressType: Invalid value: \"IPv6\": field is immutable"
        );
    }
}
