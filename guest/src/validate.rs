//! Validation of a MultiClusterService admission request (SPEC §2 and the strict rules of §6):
//! decode, then metadata, spec and (on update) immutability and status rules, rendered as
//! Kubernetes renders field errors.

use std::collections::BTreeSet;

use crate::decode::{Ingress, Mcs, decode_mcs};
use crate::field::{BadValue, FieldError, aggregate, child, index};
use crate::names;
use crate::{meta, strict};

pub const CROSS_CLUSTER: &str = "CrossCluster";
pub const LOAD_BALANCER: &str = "LoadBalancer";

/// Settings and context as plain values (the WIT records map onto these in `lib.rs`).
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub reject_empty_types: bool,
    pub reject_repeated_types: bool,
    pub reject_duplicate_cluster_names: bool,
    pub reject_unknown_port_names: bool,
    pub warn_unregistered_clusters: bool,
}

/// What the host knows about the environment.
#[derive(Clone, Debug, Default)]
pub struct Known {
    pub registered_clusters: Option<Vec<String>>,
    /// `(name, port)` of the hub Service's ports.
    pub service_ports: Option<Vec<(String, i32)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Create,
    Update,
    Other,
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Does not decode: HTTP 400 with this message.
    Malformed(String),
    /// Breaks rules: HTTP 403 with the aggregated message.
    Forbidden {
        errors: Vec<FieldError>,
        message: String,
        warnings: Vec<String>,
    },
}

/// Validates an admission request; `Ok` carries the warnings of an allowed request.
pub fn validate_request(
    op: Op,
    object: &str,
    old_object: Option<&str>,
    rules: &Rules,
    known: &Known,
) -> Result<Vec<String>, Refusal> {
    if op == Op::Other {
        return Ok(Vec::new());
    }
    let new = decode_mcs(object).map_err(Refusal::Malformed)?;
    let errors = match op {
        Op::Update => {
            let old = decode_mcs(old_object.unwrap_or_default()).map_err(Refusal::Malformed)?;
            validate_update(&new, &old, rules, known)
        }
        _ => validate_mcs(&new, rules, known),
    };
    let warnings = strict::warnings(&new, rules, known);
    if errors.is_empty() {
        Ok(warnings)
    } else {
        Err(Refusal::Forbidden {
            message: aggregate(&errors),
            errors,
            warnings,
        })
    }
}

/// SPEC §2.2 + §2.3 (+ strict rules): the checks shared by create and update.
pub fn validate_mcs(mcs: &Mcs, rules: &Rules, known: &Known) -> Vec<FieldError> {
    let mut errs = meta::validate_create(&mcs.meta);
    errs.extend(validate_spec(mcs));
    errs.extend(strict::errors(mcs, rules, known));
    errs
}

/// SPEC §2.4: metadata update, types immutability, the whole object, then status.
pub fn validate_update(new: &Mcs, old: &Mcs, rules: &Rules, known: &Known) -> Vec<FieldError> {
    let mut errs = meta::validate_update(&new.meta, &old.meta);
    if new.spec.types != old.spec.types {
        errs.push(FieldError::invalid(
            "spec.types",
            old.spec
                .types
                .as_deref()
                .map_or_else(|| BadValue::Json("null".to_string()), BadValue::str_list),
            "MultiClusterService types are immutable",
        ));
    }
    errs.extend(validate_mcs(new, rules, known));
    errs.extend(load_balancer_status(&new.ingress));
    errs
}

/// SPEC §2.3, in order: ports, types, provider clusters, consumer clusters.
fn validate_spec(mcs: &Mcs) -> Vec<FieldError> {
    let spec = &mcs.spec;
    let mut errs = Vec::new();
    let mut seen_port_names: BTreeSet<&str> = BTreeSet::new();
    for (i, port) in spec.ports.iter().enumerate() {
        let path = index("spec.ports", i);
        if !port.name.is_empty() {
            let name_path = child(&path, "name");
            for msg in names::dns1123_label(&port.name) {
                errs.push(FieldError::invalid(
                    name_path.clone(),
                    BadValue::Str(port.name.clone()),
                    msg,
                ));
            }
            if !seen_port_names.insert(&port.name) {
                errs.push(FieldError::duplicate(
                    name_path,
                    BadValue::Str(port.name.clone()),
                ));
            }
        }
        if !(1..=65535).contains(&port.port) {
            errs.push(FieldError::invalid(
                child(&path, "port"),
                BadValue::Int(i64::from(port.port)),
                "must be between 1 and 65535, inclusive",
            ));
        }
    }

    let types = spec.types.as_deref().unwrap_or_default();
    for (i, t) in types.iter().enumerate() {
        if t != CROSS_CLUSTER && t != LOAD_BALANCER {
            errs.push(FieldError::invalid(
                index("spec.types", i),
                BadValue::named_str(t),
                "ExposureType Error",
            ));
        }
    }
    // More than one distinct type: some type differs from the first.
    if types.iter().any(|t| *t != types[0]) {
        errs.push(FieldError::invalid(
            "spec.types",
            BadValue::str_list(types),
            "MultiClusterService types should not contain more than one type",
        ));
    }

    for (list, path) in [
        (&spec.provider_clusters, "spec.range.providerClusters"),
        (&spec.consumer_clusters, "spec.range.consumerClusters"),
    ] {
        for (i, name) in list.iter().enumerate() {
            if let Some(problem) = names::cluster_name_problem(name) {
                errs.push(FieldError::invalid(
                    index(path, i),
                    BadValue::Str(name.clone()),
                    problem,
                ));
            }
        }
    }
    errs
}

/// SPEC §2.4 item 5: Karmada's lifted `ValidateLoadBalancerStatus`.
fn load_balancer_status(ingress: &[Ingress]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ing) in ingress.iter().enumerate() {
        let path = index("status.loadBalancer.ingress", i);
        if !ing.ip.is_empty() && !names::is_ip_sloppy(&ing.ip) {
            errs.push(FieldError::invalid(
                child(&path, "ip"),
                BadValue::Str(ing.ip.clone()),
                "must be a valid IP address",
            ));
        }
        if !ing.hostname.is_empty() {
            let host_path = child(&path, "hostname");
            for msg in names::dns1123_subdomain(&ing.hostname) {
                errs.push(FieldError::invalid(
                    host_path.clone(),
                    BadValue::Str(ing.hostname.clone()),
                    msg,
                ));
            }
            if names::is_ip_sloppy(&ing.hostname) {
                errs.push(FieldError::invalid(
                    host_path,
                    BadValue::Str(ing.hostname.clone()),
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errs
}
