//! What must hold of a sync pass (WIT `decide`, `conclude`; docs/sync.md): a decision follows
//! `plan`, writes only where the plan says, deletes only our copies, and converges (its writes
//! done, deciding again writes nothing); a conclusion stays within the message sizes and, its
//! conditions written and its report kept, concluding again changes nothing.

use guest::filter::{
    DISPATCH_MANAGER, MANAGED_BY_LABEL, PROVISION_CLUSTER_ANNOTATION, SERVICE_NAME_LABEL,
};
use guest::sync::status::{
    CLUSTERS_SYNCED, CONDITION_LIMIT, DISPATCHED, EVENT_LIMIT, SERVICE_APPLIED,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use mcs_policy::engine::types as h;
use mcs_policy::engine::{PassSlices, convert};
use serde_json::{Value, json};

use super::pair;
use crate::{Answer, Call, native};

/// See the module doc.
pub fn decide(call: &Call, decision: &h::PassDecision) {
    let Call::Decide {
        pass,
        settings,
        slices,
    } = call
    else {
        return;
    };
    let registered: Vec<String> = pass.members.iter().map(|m| m.cluster.clone()).collect();
    let mut plan = native(&Call::Plan {
        mcs: pass.mcs.clone(),
        registered_clusters: registered,
    });
    // Listed names of clusters that exist but are not synced are not unknown: the status
    // names them instead, each once.
    let not_synced = |name: &String| pass.unsynced.iter().any(|u| &u.cluster == name);
    let mut listed_unsynced: Vec<String> = Vec::new();
    if let Answer::Plan(Ok(p)) = &mut plan {
        for names in [&mut p.unknown_providers, &mut p.unknown_consumers] {
            listed_unsynced.extend(names.iter().filter(|n| not_synced(n)).cloned());
            names.retain(|n| !not_synced(n));
        }
    }
    ensure!(
        call,
        plan == Answer::Plan(Ok(decision.plan.clone())),
        "the decision follows `plan` without the clusters not synced: {plan:?}"
    );
    let mut reported: Vec<String> = decision
        .status
        .unsynced
        .iter()
        .map(|u| u.cluster.clone())
        .collect();
    reported.sort();
    listed_unsynced.sort();
    listed_unsynced.dedup();
    ensure!(
        call,
        reported == listed_unsynced,
        "the status names each listed cluster not synced once: {reported:?}"
    );
    let p = &decision.plan;
    for w in &decision.copies {
        let source = w.source_cluster.as_str();
        ensure!(
            call,
            p.active
                && p.consumers.contains(&w.cluster)
                && ready(pass, &w.cluster).next().is_some(),
            "copies go to ready consumers of an active MCS only: {}",
            w.cluster
        );
        ensure!(
            call,
            source != w.cluster && p.providers.iter().any(|c| c == source),
            "{} gets a copy from {source:?}: another provider",
            w.cluster
        );
        ensure!(
            call,
            pair(&w.copy.annotations, PROVISION_CLUSTER_ANNOTATION) == Some(source),
            "a copy names the provider it is copied from: {w:?}"
        );
        ensure!(
            call,
            slices.copy(w).is_ok(),
            "a copy names a slice and ports its provider has: {w:?}"
        );
    }
    for d in &decision.deletions {
        let ours = slices
            .members()
            .filter(|(cluster, _)| *cluster == d.cluster)
            .flat_map(|(_, held)| held)
            .map(convert::slice_to_wit)
            .any(|s| s.name == d.name && is_ours(&s, p));
        ensure!(
            call,
            ours,
            "{}/{} is deleted, which is not one of our copies there",
            d.cluster,
            d.name
        );
    }
    for s in &decision.services {
        ensure!(
            call,
            s.action != h::ServiceAction::Unchanged,
            "members whose Service matches are not listed"
        );
        ensure!(
            call,
            p.providers.contains(&s.cluster) || (p.active && p.consumers.contains(&s.cluster)),
            "the Service goes to P, and to C when CrossCluster, not to {}",
            s.cluster
        );
    }
    ensure!(
        call,
        !matches!(decision.finalizer, h::FinalizerChange::Add(_)) || p.active,
        "the finalizer is added only to an MCS that syncs"
    );
    converges(call, pass, slices, *settings, decision);
}

/// The objects of the ready members named `cluster` (a registry may name one twice).
fn ready<'a>(
    pass: &'a h::PassRead,
    cluster: &'a str,
) -> impl Iterator<Item = &'a h::MemberObjects> {
    pass.members
        .iter()
        .filter(move |m| m.cluster == cluster)
        .filter_map(|m| match &m.state {
            h::MemberState::Ready(objects) => Some(objects),
            h::MemberState::NotReady(_) => None,
        })
}

/// A slice `prune` may name: one of our copies of this MCS (docs/sync.md#dispatch-and-prune).
fn is_ours(s: &h::EndpointSlice, p: &h::SyncPlan) -> bool {
    let value = |pairs: &[(String, String)], key: &str| {
        pairs
            .iter()
            .find(|(k, v)| k == key && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    s.namespace == p.mcs.namespace
        && value(&s.labels, SERVICE_NAME_LABEL).as_deref() == Some(p.mcs.name.as_str())
        && value(&s.labels, MANAGED_BY_LABEL).as_deref() == Some(DISPATCH_MANAGER)
        && value(&s.annotations, PROVISION_CLUSTER_ANNOTATION).is_some()
}

/// Whether `items` holds some item twice.
fn repeats<T: Ord>(mut items: Vec<T>) -> bool {
    items.sort_unstable();
    items.windows(2).any(|w| w[0] == w[1])
}

/// The pass as the next one reads it once every write of `d` succeeded, or `None` when the
/// writes cannot be pictured without a real cluster: a registry naming a cluster twice, a member
/// listing two slices of one name in one namespace (which no API server holds), two copies of
/// one name for one member (providers `a` and `a-b` with slices `b-c` and `c`), or a copy
/// written over a slice that is not a copy (a server-side apply would take it over).
fn written(
    pass: &h::PassRead,
    slices: &PassSlices,
    d: &h::PassDecision,
) -> Option<(h::PassRead, PassSlices)> {
    let clusters = pass.members.iter().map(|m| m.cluster.as_str()).collect();
    let copies = d
        .copies
        .iter()
        .map(|w| (w.cluster.as_str(), w.copy.name.as_str()))
        .collect();
    let same_names = slices.members().any(|(_, held)| {
        repeats(
            held.iter()
                .map(|s| (&s.metadata.namespace, &s.metadata.name))
                .collect(),
        )
    });
    if repeats(clusters) || repeats(copies) || same_names {
        return None;
    }
    let mut next = pass.clone();
    let mut mcs: Value = serde_json::from_str(&pass.mcs).ok()?;
    let finalizers = mcs.pointer_mut("/metadata")?.as_object_mut()?;
    let list = finalizers.entry("finalizers").or_insert_with(|| json!([]));
    if list.is_null() {
        *list = json!([]);
    }
    let list = list.as_array_mut()?;
    match &d.finalizer {
        h::FinalizerChange::Keep => {}
        h::FinalizerChange::Add(name) => list.push(json!(name)),
        h::FinalizerChange::Release(name) => {
            let at = list.iter().position(|f| f == name.as_str())?;
            list.remove(at);
        }
    }
    if let Some(ingress) = &d.ingress {
        let entries: Vec<_> = ingress
            .iter()
            .cloned()
            .map(convert::ingress_from_wit)
            .collect();
        let status = mcs.as_object_mut()?.entry("status").or_insert(json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        let lb = status
            .as_object_mut()?
            .entry("loadBalancer")
            .or_insert(json!({}));
        if !lb.is_object() {
            *lb = json!({});
        }
        let lb = lb.as_object_mut()?;
        // An empty list removes `ingress`, leaving `loadBalancer: {}`.
        if entries.is_empty() {
            lb.remove("ingress");
        } else {
            lb.insert("ingress".into(), serde_json::to_value(entries).ok()?);
        }
    }
    next.mcs = mcs.to_string();
    let mut next_slices = PassSlices::new();
    for m in &mut next.members {
        m.last_ingress = d
            .remember_ingress
            .iter()
            .find(|r| r.cluster == m.cluster)
            .map(|r| r.ingress.clone());
        let h::MemberState::Ready(objects) = &mut m.state else {
            continue;
        };
        for w in d.services.iter().filter(|w| w.cluster == m.cluster) {
            if let (
                Ok(service),
                h::ServiceAction::Create(object)
                | h::ServiceAction::Replace(object)
                | h::ServiceAction::Recreate(object),
            ) = (&mut objects.service, &w.action)
            {
                *service = Some(object.clone());
            }
        }
        let Ok(member) = &mut objects.slices else {
            continue;
        };
        // What the member holds once written, read again as a host reads it.
        let mut held = slices.member(&m.cluster)?.to_vec();
        let namespace = &d.plan.mcs.namespace;
        let named = |s: &EndpointSlice, name: &str, ns: &str| {
            s.metadata.name.as_deref() == Some(name)
                && s.metadata.namespace.as_deref().unwrap_or_default() == ns
        };
        for gone in d.deletions.iter().filter(|o| o.cluster == m.cluster) {
            held.retain(|s| !named(s, &gone.name, namespace));
        }
        for w in d.copies.iter().filter(|w| w.cluster == m.cluster) {
            let copy = slices.copy(w).ok()?;
            let (name, ns) = (
                copy.metadata.name.clone().unwrap_or_default(),
                copy.metadata.namespace.clone().unwrap_or_default(),
            );
            let not_a_copy = |s: &EndpointSlice| {
                let labels = s.metadata.labels.as_ref();
                labels
                    .and_then(|l| l.get(MANAGED_BY_LABEL))
                    .map(String::as_str)
                    != Some(DISPATCH_MANAGER)
            };
            if held.iter().any(|s| named(s, &name, &ns) && not_a_copy(s)) {
                return None;
            }
            held.retain(|s| !named(s, &name, &ns));
            held.push(copy);
        }
        *member = next_slices.read(&m.cluster, held);
    }
    next.slice_bodies = next_slices.bodies().to_vec();
    next.slice_maps = next_slices.maps().to_vec();
    next.slice_ports = next_slices.ports().to_vec();
    Some((next, next_slices))
}

/// Its writes done, the next pass (nothing changed meanwhile) writes nothing: no copy, no
/// deletion, no Service, no finalizer change, and no load balancer status unless a Service was
/// recreated (a new Service has no load balancer yet, so the status follows at the next pass).
fn converges(
    call: &Call,
    pass: &h::PassRead,
    slices: &PassSlices,
    settings: h::SyncSettings,
    d: &h::PassDecision,
) {
    let Some((next, next_slices)) = written(pass, slices, d) else {
        return;
    };
    let again = native(&Call::Decide {
        pass: next,
        settings,
        slices: Box::new(next_slices),
    });
    let Answer::Decide(Ok(again)) = again else {
        panic!(
            "property failed: the MCS with the decision's writes still decodes, got {again:?}\ncall: {}",
            crate::shown(call)
        );
    };
    ensure!(
        call,
        again.copies.is_empty() && again.deletions.is_empty() && again.services.is_empty(),
        "once the decision is written, the next pass writes nothing, but it decides {}",
        crate::shown(&again)
    );
    ensure!(
        call,
        again.finalizer == h::FinalizerChange::Keep,
        "once the finalizer is changed, the next pass leaves it, got {:?}",
        again.finalizer
    );
    let recreated = d
        .services
        .iter()
        .any(|s| matches!(s.action, h::ServiceAction::Recreate(_)));
    ensure!(
        call,
        recreated || again.ingress.is_none(),
        "once status.loadBalancer is written, the next pass leaves it, got {:?}",
        again.ingress
    );
}

/// See the module doc.
pub fn conclude(call: &Call, update: &h::StatusUpdate) {
    let Call::Conclude {
        basis,
        failures,
        current,
        ..
    } = call
    else {
        return;
    };
    for e in &update.events {
        ensure!(
            call,
            e.message.len() <= EVENT_LIMIT,
            "an Event message holds at most 1 KiB, {} has {} bytes",
            e.reason,
            e.message.len()
        );
    }
    if let Some(text) = &update.conditions {
        let conditions: Vec<Value> = match serde_json::from_str(text) {
            Ok(conditions) => conditions,
            Err(e) => panic!(
                "property failed: the conditions are a JSON array: {e}: {text}\ncall: {}",
                crate::shown(call)
            ),
        };
        // The failure conditions this pass sets (the first of each type): bounded so that a
        // real API server takes the status write.
        if basis.report && basis.invalid.is_none() {
            let mut bounded = vec![SERVICE_APPLIED];
            if basis.dispatches {
                bounded.push(DISPATCHED);
            }
            if !basis.unsynced.is_empty() {
                bounded.push(CLUSTERS_SYNCED);
            }
            for type_ in bounded {
                let message = conditions
                    .iter()
                    .find(|c| c["type"] == type_)
                    .and_then(|c| c["message"].as_str())
                    .unwrap_or_default();
                ensure!(
                    call,
                    message.len() <= CONDITION_LIMIT,
                    "a {type_} message holds at most 32 KiB, got {} bytes",
                    message.len()
                );
            }
        }
    }
    let again = native(&Call::Conclude {
        basis: basis.clone(),
        failures: failures.clone(),
        current: h::StatusNow {
            conditions: update
                .conditions
                .clone()
                .unwrap_or_else(|| current.conditions.clone()),
            generation: current.generation,
            now: "2030-01-01T00:00:00Z".to_string(),
        },
        reported: Some(update.reported.clone()),
    });
    let Answer::Conclude(again) = again else {
        unreachable!()
    };
    ensure!(
        call,
        again.conditions.is_none() && again.events.is_empty(),
        "with its conditions written and its report kept, the same outcome again writes nothing \
         and sends no Event, got {again:?}"
    );
    ensure!(
        call,
        again.reported == update.reported && again.retry == update.retry,
        "the same outcome again reports and retries the same, got {again:?}"
    );
}
