//! What must hold of any answer, whatever the input (the WIT's docs and docs/), checked on the native
//! guest (the component gives the same answer, see [`crate::agree`]). A failure panics with the
//! call and the property.

use guest::filter::{
    DISPATCH_MANAGER, MANAGED_BY_LABEL, PROVISION_CLUSTER_ANNOTATION, SERVICE_NAME_LABEL,
};
use mcs_policy::engine::convert;
use mcs_policy::engine::types as h;
use serde_json::Value;

use crate::{Answer, Call, native};

macro_rules! ensure {
    ($call:expr, $cond:expr, $($what:tt)+) => {
        if !$cond {
            panic!("property failed: {}\ncall: {}", format!($($what)+), crate::shown($call));
        }
    };
}

mod clusterset;
mod sync;

/// Checks the properties of `answer` to `call`.
pub fn check(call: &Call, answer: &Answer) {
    match (call, answer) {
        (Call::Validate { .. }, Answer::Validate(verdict)) => validate(call, verdict),
        (Call::Mutate { request, settings }, Answer::Mutate(Ok(ops))) => {
            mutate(call, request, settings, ops)
        }
        (Call::Filter { .. }, Answer::Filter(copies)) => filter(call, copies),
        (Call::Plan { .. }, Answer::Plan(plan)) => self::plan(call, plan),
        (Call::Prune { .. }, Answer::Prune(names)) => prune(call, names),
        (Call::Service { .. }, Answer::Service(action)) => service(call, action),
        (Call::LoadBalancerStatus { .. }, Answer::LoadBalancerStatus(report)) => {
            load_balancer(call, report)
        }
        (Call::Decide { .. }, Answer::Decide(Ok(decision))) => sync::decide(call, decision),
        (Call::Decide { .. }, Answer::Decide(Err(message))) => {
            ensure!(call, !message.is_empty(), "a decode error says why")
        }
        (Call::Conclude { .. }, Answer::Conclude(update)) => sync::conclude(call, update),
        (Call::ClustersetDecide { read }, Answer::ClustersetDecide(answer)) => {
            clusterset::decide(call, read, answer)
        }
        _ => {}
    }
}

/// Denials say why; a strict setting only ever adds errors and warnings to the
/// karmada-compatible answer (strict.rs: "a strict policy only ever adds errors and warnings").
fn validate(call: &Call, verdict: &Result<Vec<String>, h::Denial>) {
    let Call::Validate {
        request, context, ..
    } = call
    else {
        return;
    };
    match verdict {
        Err(h::Denial::Malformed(message)) => {
            ensure!(
                call,
                !message.is_empty(),
                "a malformed denial has a message"
            )
        }
        Err(h::Denial::Forbidden(r)) => {
            ensure!(
                call,
                !r.errors.is_empty(),
                "a forbidden denial lists errors"
            );
            ensure!(
                call,
                !r.message.is_empty(),
                "a forbidden denial has a message"
            );
        }
        Ok(_) => {}
    }
    let compatible = native(&Call::Validate {
        request: request.clone(),
        settings: h::Settings::default(),
        context: context.clone(),
    });
    let Answer::Validate(compatible) = compatible else {
        unreachable!()
    };
    let errors = |v: &Result<Vec<String>, h::Denial>| match v {
        Err(h::Denial::Forbidden(r)) => r.errors.clone(),
        _ => Vec::new(),
    };
    match (&compatible, verdict) {
        (Err(h::Denial::Malformed(a)), Err(h::Denial::Malformed(b))) => {
            ensure!(call, a == b, "settings do not change a decode error")
        }
        (Err(h::Denial::Malformed(_)), _) | (_, Err(h::Denial::Malformed(_))) => {
            ensure!(
                call,
                false,
                "settings do not change whether an object decodes"
            )
        }
        (Ok(warnings), _) => ensure!(
            call,
            warnings.is_empty(),
            "the compatible policy gives no warnings"
        ),
        (Err(_), Ok(_)) => ensure!(
            call,
            false,
            "what the compatible policy refuses, a strict one refuses too"
        ),
        (Err(_), Err(_)) => ensure!(
            call,
            is_subsequence(&errors(&compatible), &errors(verdict)),
            "a strict policy keeps every compatible error, in order"
        ),
    }
}

fn is_subsequence<T: PartialEq>(small: &[T], big: &[T]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|x| rest.any(|y| y == x))
}

/// The patch applies (RFC 6902) to the object as sent, and defaulting the patched object changes
/// nothing more.
fn mutate(
    call: &Call,
    request: &h::AdmissionRequest,
    settings: &h::Settings,
    ops: &[h::PatchOperation],
) {
    if ops.is_empty() {
        return;
    }
    let patch_text = mcs_policy::webhook::review::patch_json(ops);
    let patch: json_patch::Patch = match serde_json::from_str(&patch_text) {
        Ok(patch) => patch,
        Err(e) => panic!(
            "the patch {patch_text} is not RFC 6902 JSON: {e}\ncall: {}",
            crate::shown(call)
        ),
    };
    let mut object: Value = match serde_json::from_str(&request.object) {
        Ok(object) => object,
        Err(e) => panic!(
            "a patched object is JSON: {e}\ncall: {}",
            crate::shown(call)
        ),
    };
    if let Err(e) = json_patch::patch(&mut object, &patch) {
        panic!(
            "the patch {patch_text} does not apply: {e}\ncall: {}",
            crate::shown(call)
        );
    }
    let again = native(&Call::Mutate {
        request: h::AdmissionRequest {
            object: object.to_string(),
            ..request.clone()
        },
        settings: *settings,
    });
    ensure!(
        call,
        again == Answer::Mutate(Ok(Vec::new())),
        "defaulting the patched object {object} changes nothing, got {again:?}"
    );
}

fn pair<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Copies carry exactly the dispatch markers, keep the MCS's namespace, have valid names when
/// the source and slice names are valid, are never copied again (the loop guard), and are
/// recognised by `prune` as this MCS's copies from this source.
fn filter(call: &Call, copies: &[h::EndpointSlice]) {
    let Call::Filter {
        mcs,
        service_ports,
        source_cluster,
        consumer_cluster,
        slices,
    } = call
    else {
        return;
    };
    if source_cluster == consumer_cluster {
        ensure!(
            call,
            copies.is_empty(),
            "a provider never gets its own slices"
        );
    }
    ensure!(
        call,
        copies.len() <= slices.len(),
        "at most one copy per slice"
    );
    for copy in copies {
        ensure!(
            call,
            copy.labels
                == [
                    (MANAGED_BY_LABEL.to_string(), DISPATCH_MANAGER.to_string()),
                    (SERVICE_NAME_LABEL.to_string(), mcs.name.clone()),
                ],
            "a copy carries exactly Karmada's dispatch labels, in key order, never the \
             Multi-Cluster Services API's: {:?}",
            copy.labels
        );
        ensure!(
            call,
            copy.annotations
                == [(
                    PROVISION_CLUSTER_ANNOTATION.to_string(),
                    source_cluster.clone()
                )],
            "a copy carries exactly the provision-cluster annotation"
        );
        ensure!(
            call,
            copy.namespace == mcs.namespace,
            "a copy stays in the MCS's namespace"
        );
        ensure!(
            call,
            !mcs.ports.is_empty() || slices.iter().any(|s| s.ports == copy.ports),
            "without MCS ports, a copy keeps every port"
        );
        ensure!(
            call,
            mcs.ports.is_empty() || !copy.ports.is_empty(),
            "a copy filtered by MCS ports keeps at least one"
        );
    }
    let source_ok = guest::names::cluster_name_problem(source_cluster).is_none();
    for slice in slices {
        let name = guest::filter::copy_name(source_cluster, &slice.name);
        if source_ok && guest::names::dns1123_subdomain(&slice.name).is_empty() {
            ensure!(
                call,
                guest::names::dns1123_subdomain(&name).is_empty(),
                "the copy of a validly named slice from a valid cluster has a valid name: {name:?}"
            );
        }
    }
    if copies.is_empty() {
        return;
    }
    let again = native(&Call::Filter {
        mcs: mcs.clone(),
        service_ports: service_ports.clone(),
        source_cluster: consumer_cluster.clone(),
        consumer_cluster: source_cluster.clone(),
        slices: copies.to_vec(),
    });
    ensure!(
        call,
        again == Answer::Filter(Vec::new()),
        "copies are never copied again, got {again:?}"
    );
    if mcs.name.is_empty() || source_cluster.is_empty() {
        return;
    }
    let names: Vec<String> = copies.iter().map(|c| c.name.clone()).collect();
    let prune = |desired: &[String], kept: &[String]| {
        native(&Call::Prune {
            mcs: mcs.clone(),
            existing: copies.to_vec(),
            desired: desired.to_vec(),
            kept_sources: kept.to_vec(),
        })
    };
    ensure!(
        call,
        prune(&[], &[]) == Answer::Prune(names.clone()),
        "undesired copies are all stale"
    );
    ensure!(
        call,
        prune(&names, &[]) == Answer::Prune(Vec::new()),
        "desired copies are never stale"
    );
    ensure!(
        call,
        prune(&[], std::slice::from_ref(source_cluster)) == Answer::Prune(Vec::new()),
        "copies from a kept source are never stale"
    );
}

/// `plan` decodes and validates as a karmada-compatible CREATE does, and splits the listed
/// clusters into registered and unknown ones.
fn plan(call: &Call, plan: &Result<h::SyncPlan, String>) {
    let Call::Plan {
        mcs,
        registered_clusters,
    } = call
    else {
        return;
    };
    let create = native(&Call::Validate {
        request: h::AdmissionRequest {
            uid: "plan".to_string(),
            operation: h::Operation::Create,
            object: mcs.clone(),
            old_object: None,
        },
        settings: h::Settings::default(),
        context: h::Context::default(),
    });
    let Answer::Validate(create) = create else {
        unreachable!()
    };
    match (plan, create) {
        (Err(a), Err(h::Denial::Malformed(b))) => {
            ensure!(
                call,
                *a == b,
                "plan and validate give the same decode error"
            )
        }
        (Ok(p), Ok(_)) => ensure!(call, p.invalid.is_none(), "what validate allows is valid"),
        (Ok(p), Err(h::Denial::Forbidden(r))) => ensure!(
            call,
            p.invalid.as_deref() == Some(r.message.as_str()),
            "plan's invalid is validate's message"
        ),
        (plan, create) => ensure!(
            call,
            false,
            "plan and validate agree on decoding: {plan:?} vs {create:?}"
        ),
    }
    let Ok(p) = plan else { return };
    ensure!(
        call,
        !(p.active && (p.deleting || p.invalid.is_some())),
        "only a valid MCS not being deleted acts"
    );
    for name in p.providers.iter().chain(&p.consumers) {
        ensure!(
            call,
            registered_clusters.contains(name),
            "selected cluster {name:?} is registered"
        );
    }
    for name in p.unknown_providers.iter().chain(&p.unknown_consumers) {
        ensure!(
            call,
            !registered_clusters.contains(name),
            "unknown cluster {name:?} is not registered"
        );
    }
}

/// Never a desired name, never a slice without every marker of this MCS's copies.
fn prune(call: &Call, names: &[String]) {
    let Call::Prune {
        mcs,
        existing,
        desired,
        kept_sources,
    } = call
    else {
        return;
    };
    for name in names {
        ensure!(
            call,
            !desired.contains(name),
            "{name:?} is desired, not stale"
        );
        let marked = existing.iter().any(|s| {
            &s.name == name
                && s.namespace == mcs.namespace
                && pair(&s.labels, SERVICE_NAME_LABEL).is_some()
                && pair(&s.labels, MANAGED_BY_LABEL).is_some()
                && s.annotations
                    .iter()
                    .any(|(k, v)| k == PROVISION_CLUSTER_ANNOTATION && !kept_sources.contains(v))
        });
        ensure!(
            call,
            marked,
            "{name:?} is one of our copies from a source not kept"
        );
    }
    ensure!(
        call,
        names.len() <= existing.len(),
        "at most one name per slice"
    );
}

/// An action converges: the Service it writes is `unchanged` when compared again. When both
/// inputs are `v1` Services (as the controller passes them), the host can decode the answer.
fn service(call: &Call, action: &Result<h::ServiceAction, String>) {
    let Call::Service { template, existing } = call else {
        return;
    };
    let written = match action {
        Err(message) => {
            ensure!(call, !message.is_empty(), "an error says why");
            return;
        }
        Ok(h::ServiceAction::Conflict(why)) => {
            ensure!(call, !why.is_empty(), "a conflict says why");
            return;
        }
        Ok(h::ServiceAction::Unchanged) => return,
        Ok(
            h::ServiceAction::Create(object)
            | h::ServiceAction::Replace(object)
            | h::ServiceAction::Recreate(object),
        ) => object,
    };
    let again = native(&Call::Service {
        template: template.clone(),
        existing: Some(written.clone()),
    });
    ensure!(
        call,
        again == Answer::Service(Ok(h::ServiceAction::Unchanged)),
        "writing {written} converges, but comparing it again gives {again:?}"
    );
    let typed =
        |text: &str| serde_json::from_str::<k8s_openapi::api::core::v1::Service>(text).is_ok();
    if typed(template)
        && existing.as_deref().is_none_or(typed)
        && let Ok(action) = action
    {
        let decoded = convert::service_change(action.clone());
        ensure!(
            call,
            decoded.is_ok(),
            "the host decodes the Service it is told to write: {:?}",
            decoded.err()
        );
    }
}

/// The status converges (written, it is unchanged when computed again), holds each entry once
/// with an entry point, and is complete only when every provider was read and has an ingress.
fn load_balancer(call: &Call, report: &h::LoadBalancerReport) {
    let Call::LoadBalancerStatus { providers, current } = call else {
        return;
    };
    let again = native(&Call::LoadBalancerStatus {
        providers: providers.clone(),
        current: report.ingress.clone(),
    });
    let Answer::LoadBalancerStatus(again) = again else {
        unreachable!()
    };
    ensure!(
        call,
        !again.changed && again.ingress == report.ingress,
        "writing {:?} converges, but computing it again gives {again:?}",
        report.ingress
    );
    ensure!(
        call,
        report.changed == (&report.ingress != current),
        "changed says whether the status differs"
    );
    for (i, e) in report.ingress.iter().enumerate() {
        ensure!(
            call,
            e.ip.is_some() || e.hostname.is_some(),
            "entry {i} names an entry point"
        );
        ensure!(
            call,
            !report.ingress[..i].contains(e),
            "entry {i} appears once"
        );
        ensure!(
            call,
            e.ports.iter().all(|p| p.error.is_some()),
            "entry {i} has no port status the CRD refuses"
        );
    }
    let all_read = !providers.is_empty()
        && providers
            .iter()
            .all(|p| matches!(&p.ingress, h::ProviderIngress::Read(list) if !list.is_empty()));
    ensure!(
        call,
        !report.complete || all_read,
        "complete only when every provider was read and has an ingress"
    );
    ensure!(call, !report.message.is_empty(), "the condition says why");
}
