//! Validation of a MultiClusterService admission request ([validation](../../docs/validation.md),
//! the strict rules of [policies](../../docs/policies.md)): decode, then metadata, spec and (on
//! update) immutability and status rules, rendered as Kubernetes renders field errors.

use std::collections::BTreeSet;

use crate::decode::{Ingress, Mcs, decode_mcs};
use crate::field::{BadValue, aggregate, child, index};
use crate::{
    AdmissionRequest, Context, Denial, FieldError, Operation, Rejection, Settings, clusterset,
    meta, names, strict,
};

pub const CROSS_CLUSTER: &str = "CrossCluster";
pub const LOAD_BALANCER: &str = "LoadBalancer";

/// The `karmada-compatible` policy: no rule beyond Karmada's.
pub const KARMADA_COMPATIBLE: Settings = Settings {
    reject_empty_types: false,
    reject_repeated_types: false,
    reject_duplicate_cluster_names: false,
    reject_unknown_port_names: false,
    warn_unregistered_clusters: false,
};

/// Nothing known about the environment.
pub const NOTHING_KNOWN: Context = Context {
    registered_clusters: None,
    service_ports: None,
};

/// Validates an admission request (WIT `validate`); `Ok` carries the warnings of an allowed
/// request.
pub fn validate_request(
    request: &AdmissionRequest,
    settings: &Settings,
    context: &Context,
) -> Result<Vec<String>, Denial> {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Ok(Vec::new());
    }
    let new = match decode_mcs(&request.object) {
        Ok(new) => new,
        // Not a MultiClusterService: a ServiceExport has rules of its own (looked for only
        // here, so a MultiClusterService's admission costs nothing more).
        Err(e) => match clusterset::admission::service_export(&request.object) {
            Some(export) => return clusterset::admission::validate(&export),
            None => return Err(Denial::Malformed(e)),
        },
    };
    let errors = match request.operation {
        Operation::Update => {
            let old = decode_mcs(request.old_object.as_deref().unwrap_or_default())
                .map_err(Denial::Malformed)?;
            validate_update(&new, &old, settings, context)
        }
        _ => validate_mcs(&new, settings, context),
    };
    let warnings = strict::warnings(&new, settings, context);
    if errors.is_empty() {
        Ok(warnings)
    } else {
        Err(Denial::Forbidden(Rejection {
            message: aggregate(&errors),
            errors,
            warnings,
        }))
    }
}

/// docs/validation.md#metadata-rules + docs/validation.md#spec-rules (+ strict rules): the checks shared by create and update.
pub fn validate_mcs(mcs: &Mcs, settings: &Settings, context: &Context) -> Vec<FieldError> {
    let mut errs = meta::validate_create(&mcs.meta);
    errs.extend(validate_spec(mcs));
    errs.extend(strict::errors(mcs, settings, context));
    errs
}

/// docs/validation.md#update-rules: metadata update, types immutability, the whole object, then status.
pub fn validate_update(
    new: &Mcs,
    old: &Mcs,
    settings: &Settings,
    context: &Context,
) -> Vec<FieldError> {
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
    errs.extend(validate_mcs(new, settings, context));
    errs.extend(load_balancer_status(&new.ingress));
    errs
}

/// docs/validation.md#spec-rules, in order: ports, types, provider clusters, consumer clusters.
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

/// docs/validation.md#load-balancer-status: Karmada's lifted `ValidateLoadBalancerStatus`.
fn load_balancer_status(ingress: &[Ingress]) -> Vec<FieldError> {
    ingress
        .iter()
        .enumerate()
        .flat_map(|(i, ing)| {
            ingress_errors(
                &index("status.loadBalancer.ingress", i),
                &ing.ip,
                &ing.hostname,
            )
        })
        .collect()
}

/// The errors of one `status.loadBalancer.ingress[]` entry at `path` (empty strings: absent).
/// Also what keeps a member's entry out of the MCS status (`balancer.rs`): a status the
/// webhook rejects would make every later update of the MCS be rejected.
pub(crate) fn ingress_errors(path: &str, ip: &str, hostname: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !ip.is_empty() && !names::is_ip_sloppy(ip) {
        errs.push(FieldError::invalid(
            child(path, "ip"),
            BadValue::Str(ip.to_string()),
            "must be a valid IP address",
        ));
    }
    if !hostname.is_empty() {
        let host_path = child(path, "hostname");
        for msg in names::dns1123_subdomain(hostname) {
            errs.push(FieldError::invalid(
                host_path.clone(),
                BadValue::Str(hostname.to_string()),
                msg,
            ));
        }
        if names::is_ip_sloppy(hostname) {
            errs.push(FieldError::invalid(
                host_path,
                BadValue::Str(hostname.to_string()),
                "must be a DNS name, not an IP address",
            ));
        }
    }
    errs
}
