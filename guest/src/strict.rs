//! The rules of the `strict` policy (SPEC §6), each behind its own setting. They run after the
//! Karmada-compatible rules, so a strict policy only ever adds errors and warnings.

use std::collections::BTreeSet;

use crate::decode::Mcs;
use crate::field::{BadValue, FieldError, child, index};
use crate::validate::{Known, Rules};

/// Errors of the enabled strict rules, in this order: empty types, repeated types, duplicate
/// provider names, duplicate consumer names, port names unknown to the hub Service.
pub fn errors(mcs: &Mcs, rules: &Rules, known: &Known) -> Vec<FieldError> {
    let spec = &mcs.spec;
    let types = spec.types.as_deref().unwrap_or_default();
    let mut errs = Vec::new();
    if rules.reject_empty_types && types.is_empty() {
        errs.push(FieldError::required(
            "spec.types",
            "must contain exactly one of \"CrossCluster\", \"LoadBalancer\"",
        ));
    }
    if rules.reject_repeated_types {
        errs.extend(repeats(types).map(|i| {
            FieldError::duplicate(index("spec.types", i), BadValue::named_str(&types[i]))
        }));
    }
    if rules.reject_duplicate_cluster_names {
        for (list, path) in [
            (&spec.provider_clusters, "spec.providerClusters"),
            (&spec.consumer_clusters, "spec.consumerClusters"),
        ] {
            errs.extend(repeats(list).map(|i| {
                FieldError::duplicate(
                    child(&index(path, i), "name"),
                    BadValue::Str(list[i].clone()),
                )
            }));
        }
    }
    if let (true, Some(service_ports)) = (rules.reject_unknown_port_names, &known.service_ports) {
        let supported: Vec<String> = service_ports
            .iter()
            .map(|(name, _)| name.clone())
            .filter(|n| !n.is_empty())
            .collect();
        let known: BTreeSet<&str> = supported.iter().map(String::as_str).collect();
        for (i, port) in spec.ports.iter().enumerate() {
            if !port.name.is_empty() && !known.contains(port.name.as_str()) {
                errs.push(FieldError::unsupported(
                    child(&index("spec.ports", i), "name"),
                    BadValue::Str(port.name.clone()),
                    &supported,
                ));
            }
        }
    }
    errs
}

/// Admission warnings: cluster names that are not registered (when the registry is known).
pub fn warnings(mcs: &Mcs, rules: &Rules, known: &Known) -> Vec<String> {
    let (true, Some(registered)) = (rules.warn_unregistered_clusters, &known.registered_clusters)
    else {
        return Vec::new();
    };
    let registered: BTreeSet<&str> = registered.iter().map(String::as_str).collect();
    let spec = &mcs.spec;
    let mut out = Vec::new();
    for (list, path, role) in [
        (&spec.provider_clusters, "spec.providerClusters", "provider"),
        (&spec.consumer_clusters, "spec.consumerClusters", "consumer"),
    ] {
        for (i, name) in list.iter().enumerate() {
            if !name.is_empty() && !registered.contains(name.as_str()) {
                out.push(format!(
                    "{}: {role} cluster {} is not registered",
                    child(&index(path, i), "name"),
                    crate::gofmt::go_quote(name)
                ));
            }
        }
    }
    out
}

/// Indices of items equal to an earlier item.
fn repeats(items: &[String]) -> impl Iterator<Item = usize> + '_ {
    let mut seen = BTreeSet::new();
    items
        .iter()
        .enumerate()
        .filter_map(move |(i, item)| (!seen.insert(item.as_str())).then_some(i))
}
