use super::*;
use crate::condition::SEPARATOR;

// Conditions (ported from host/src/controller/status.rs).

#[test]
fn a_merge_keeps_the_transition_time_while_the_status_stays() {
    let first = merge(&[], &[Condition::dispatched(&[])], Some(1), "t1").unwrap();
    assert_eq!(first[0]["lastTransitionTime"], "t1");
    assert_eq!(first[0]["observedGeneration"], 1);
    assert_eq!(
        merge(&first, &[Condition::dispatched(&[])], Some(1), "t2"),
        None
    );
    let failed = merge(
        &first,
        &[Condition::dispatched(&["boom".into()])],
        Some(1),
        "t3",
    )
    .unwrap();
    assert_eq!(failed[0]["lastTransitionTime"], "t3");
    let again = merge(
        &failed,
        &[Condition::dispatched(&["other".into()])],
        Some(1),
        "t4",
    )
    .unwrap();
    assert_eq!(again[0]["lastTransitionTime"], "t3");
    assert_eq!(again[0]["message"], "other");
    // A new generation alone rewrites the condition, not its transition time.
    let next = merge(
        &again,
        &[Condition::dispatched(&["other".into()])],
        Some(2),
        "t5",
    )
    .unwrap();
    assert_eq!(next[0]["lastTransitionTime"], "t3");
    assert_eq!(next[0]["observedGeneration"], 2);
}

#[test]
fn a_merge_keeps_conditions_of_other_types() {
    let other = json!({"type": "Ready", "status": "True"});
    let out = merge(
        std::slice::from_ref(&other),
        &[Condition::dispatched(&[])],
        None,
        "t",
    )
    .unwrap();
    assert_eq!(out[0], other);
    assert_eq!(out[1]["type"], DISPATCHED);
    assert!(out[1].get("observedGeneration").is_none());
}

// Events (ported from host/src/controller/events.rs).

fn basis() -> StatusBasis {
    StatusBasis {
        report: true,
        invalid: None,
        dispatches: true,
        service_failures: Vec::new(),
        template_missing: false,
        dispatch_failures: Vec::new(),
        load_balancer_failures: Vec::new(),
        load_balancer: None,
        unknown_providers: Vec::new(),
        unknown_consumers: Vec::new(),
        incompatible: Vec::new(),
        unsynced: Vec::new(),
    }
}

fn reasons(events: &[EventNote]) -> Vec<&str> {
    events.iter().map(|e| e.reason.as_str()).collect()
}

#[test]
fn only_changes_are_reported() {
    let basis = StatusBasis {
        unknown_providers: vec!["ghost".into()],
        ..basis()
    };
    let now = Reported {
        unknown: vec!["provider ghost".into()],
        incompatible: vec![incompatible("Consumer", "old")],
        unsynced: Vec::new(),
        service_applied: Some(false),
        dispatched: Some(true),
        load_balancer: None,
    };
    let boom = ["boom".to_string()];
    let first = due(&nothing_reported(), &now, &basis, &boom, &[], None);
    assert_eq!(
        reasons(&first),
        [
            "ClusterNotFound",
            "APIIncompatible",
            "SyncServiceFailed",
            "DispatchEndpointSliceSucceed"
        ]
    );
    assert_eq!(first[0].message, "Provider cluster ghost is not found");
    assert!(first[0].warning && !first[3].warning);
    assert_eq!(first[2].message, "boom");
    assert!(due(&now, &now, &basis, &boom, &[], None).is_empty());
}

#[test]
fn a_cluster_without_endpointslices_is_reported_once_when_it_appears() {
    let before = Reported {
        incompatible: vec![incompatible("Consumer", "old")],
        ..nothing_reported()
    };
    let now = Reported {
        incompatible: vec![
            incompatible("Consumer", "old"),
            incompatible("Provider", "m2"),
        ],
        ..nothing_reported()
    };
    assert_eq!(
        due(&before, &now, &basis(), &[], &[], None),
        [EventNote {
            warning: true,
            reason: "APIIncompatible".into(),
            message: "Provider cluster m2 does not support EndpointSlice".into(),
        }]
    );
}

#[test]
fn the_load_balancer_condition_is_reported_when_its_status_changes() {
    let condition = |complete: bool, message: &str| {
        let reason = if complete {
            balancer::COMPLETE
        } else {
            balancer::INCOMPLETE
        };
        Condition::new(balancer::CONDITION, complete, reason, message)
    };
    let notes = |before: Option<bool>, now: bool, c: &Condition| {
        let seen = |lb| Reported {
            load_balancer: lb,
            ..nothing_reported()
        };
        due(&seen(before), &seen(Some(now)), &basis(), &[], &[], Some(c))
    };
    let pending = condition(false, "cluster m2 has no load balancer ingress yet");
    assert_eq!(
        notes(None, false, &pending),
        [EventNote {
            warning: true,
            reason: "LoadBalancerStatusIncomplete".into(),
            message: "cluster m2 has no load balancer ingress yet".into(),
        }]
    );
    assert!(notes(Some(false), false, &pending).is_empty());
    let done = condition(
        true,
        "every provider cluster has a load balancer ingress: m1, m2",
    );
    let complete = notes(Some(false), true, &done);
    assert_eq!(reasons(&complete), ["LoadBalancerStatusComplete"]);
    assert!(!complete[0].warning);
}

// Message sizes (ported from host/src/controller/messages.rs).

fn failures(n: usize, len: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{i:04}{}", "x".repeat(len - 4)))
        .collect()
}

#[test]
fn what_fits_is_joined_whole() {
    let parts = failures(3, 10);
    assert_eq!(join_bounded(&parts, 100), parts.join("; "));
    assert_eq!(bounded(&[], CONDITION_LIMIT), None);
    assert_eq!(bounded(&parts, EVENT_LIMIT).unwrap(), parts.join("; "));
}

#[test]
fn what_does_not_fit_is_counted() {
    let parts = failures(500, 100);
    let message = join_bounded(&parts, CONDITION_LIMIT);
    assert!(message.len() <= CONDITION_LIMIT, "{}", message.len());
    let kept = message
        .split(SEPARATOR)
        .filter(|part| part.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert!(
        message.ends_with(&format!("; and {} more failures", 500 - kept)),
        "{message}"
    );
    assert!(message.starts_with("0000x"));
    let short = bounded(&parts, EVENT_LIMIT).unwrap();
    assert!(short.len() <= EVENT_LIMIT);
    assert!(short.ends_with("more failures"), "{short}");
}

#[test]
fn a_single_huge_failure_is_cut_on_a_character_boundary() {
    let huge = vec!["é".repeat(40_000)];
    let message = join_bounded(&huge, CONDITION_LIMIT);
    assert!(message.len() <= CONDITION_LIMIT);
    assert!(message.ends_with("..."));
    let two = vec!["é".repeat(40_000), "next".to_string()];
    let message = join_bounded(&two, 1000);
    assert!(message.len() <= 1000);
    assert!(message.ends_with("...; and 1 more failure"), "{message}");
}

// `conclude`.

const NOW: &str = "2024-05-01T10:00:00Z";

fn current(conditions: &str) -> StatusNow {
    StatusNow {
        conditions: conditions.into(),
        generation: Some(3),
        now: NOW.into(),
    }
}

fn no_failures() -> WriteFailures {
    WriteFailures {
        service: Vec::new(),
        dispatch: Vec::new(),
    }
}

/// The conditions written: `(type, status, reason, message)`.
fn conditions(update: &StatusUpdate) -> Vec<(String, String, String, String)> {
    let text = update.conditions.as_deref().expect("conditions written");
    let values: Vec<Value> = serde_json::from_str(text).unwrap();
    values
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (
                field("type"),
                field("status"),
                field("reason"),
                field("message"),
            )
        })
        .collect()
}

fn condition(update: &StatusUpdate, type_: &str) -> (String, String, String) {
    let (_, status, reason, message) = conditions(update)
        .into_iter()
        .find(|c| c.0 == type_)
        .unwrap_or_else(|| panic!("no {type_} condition"));
    (status, reason, message)
}

#[test]
fn an_invalid_mcs_gets_only_valid_false_no_events_and_no_retry() {
    let basis = StatusBasis {
        invalid: Some("spec.ports[0].port: Invalid value: 0".into()),
        unknown_providers: vec!["ghost".into()],
        ..basis()
    };
    let update = conclude(&basis, &no_failures(), &current("[]"), None);
    assert_eq!(
        conditions(&update),
        [(
            "Valid".to_string(),
            "False".to_string(),
            "ValidationFailed".to_string(),
            "spec.ports[0].port: Invalid value: 0".to_string()
        )]
    );
    assert!(update.events.is_empty());
    assert!(!update.retry);
    assert_eq!(update.reported, nothing_reported());
}

/// An MCS can break its rules without end (thousands of repeated port names): its `Valid`
/// message stays within what the CRD lets the API server store.
#[test]
fn a_huge_validation_message_is_cut_to_the_condition_limit() {
    let huge = "spec.ports[1].name: Duplicate value: \"http\", ".repeat(3_000);
    let basis = StatusBasis {
        invalid: Some(huge.clone()),
        ..basis()
    };
    let update = conclude(&basis, &no_failures(), &current("[]"), None);
    let (_, _, _, message) = conditions(&update).remove(0);
    assert!(huge.len() > CONDITION_LIMIT);
    assert!(message.len() <= CONDITION_LIMIT, "{}", message.len());
    assert!(message.starts_with("spec.ports[1].name: Duplicate value"));
    assert!(
        message.ends_with("..."),
        "{}",
        &message[message.len() - 20..]
    );
}

#[test]
fn a_pass_that_does_not_report_writes_no_conditions_but_retries_a_dispatch_failure() {
    let basis = StatusBasis {
        report: false,
        dispatch_failures: vec!["listing endpointslices in cluster m1: boom".into()],
        ..basis()
    };
    let update = conclude(&basis, &no_failures(), &current("[]"), None);
    assert_eq!(update.conditions, None);
    assert!(update.events.is_empty());
    assert!(update.retry);
    let clean = StatusBasis {
        dispatch_failures: Vec::new(),
        ..basis
    };
    assert!(!conclude(&clean, &no_failures(), &current("[]"), None).retry);
}

#[test]
fn a_missing_template_fails_service_applied_but_is_not_retried() {
    let basis = StatusBasis {
        template_missing: true,
        service_failures: vec!["service shop/web not found in the hub".into()],
        ..basis()
    };
    let update = conclude(&basis, &no_failures(), &current("[]"), None);
    let (status, reason, message) = condition(&update, SERVICE_APPLIED);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ServiceAppliedFailed")
    );
    assert_eq!(message, "service shop/web not found in the hub");
    assert!(!update.retry);
    // The other steps' failures are retried all the same.
    let written = WriteFailures {
        dispatch: vec!["applying endpointslice shop/m1-web-a to cluster m2: boom".into()],
        ..no_failures()
    };
    assert!(conclude(&basis, &written, &current("[]"), None).retry);
    // Any other Service failure is retried.
    let failed = StatusBasis {
        template_missing: false,
        service_failures: vec!["reading service shop/web from the hub: boom".into()],
        ..basis
    };
    assert!(conclude(&failed, &no_failures(), &current("[]"), None).retry);
}

#[test]
fn write_failures_follow_read_failures_in_the_condition_message() {
    let basis = StatusBasis {
        service_failures: vec!["reading service shop/web in cluster m1: boom".into()],
        dispatch_failures: vec!["cluster m3 is not ready".into()],
        ..basis()
    };
    let written = WriteFailures {
        service: vec!["creating service shop/web in cluster m2: no".into()],
        dispatch: vec!["applying endpointslice shop/m1-web-a to cluster m2: no".into()],
    };
    let update = conclude(&basis, &written, &current("[]"), None);
    assert_eq!(
        condition(&update, SERVICE_APPLIED).2,
        "reading service shop/web in cluster m1: boom; creating service shop/web in cluster m2: no"
    );
    assert_eq!(
        condition(&update, DISPATCHED).2,
        "cluster m3 is not ready; applying endpointslice shop/m1-web-a to cluster m2: no"
    );
    assert!(update.retry);
    let failed: Vec<_> = update.events.iter().filter(|e| e.warning).collect();
    assert_eq!(failed.len(), 2);
    assert!(failed[1].message.ends_with("to cluster m2: no"));
}

#[test]
fn a_second_identical_pass_emits_no_events_and_writes_no_conditions() {
    let basis = StatusBasis {
        unknown_consumers: vec!["gone".into()],
        incompatible: vec![incompatible("Provider", "m2")],
        dispatch_failures: vec!["listing endpointslices in cluster m2: 404".into()],
        ..basis()
    };
    let first = conclude(&basis, &no_failures(), &current("[]"), None);
    assert_eq!(
        reasons(&first.events),
        [
            "ClusterNotFound",
            "APIIncompatible",
            "SyncServiceSucceed",
            "DispatchEndpointSliceFailed"
        ]
    );
    let types: Vec<String> = conditions(&first).into_iter().map(|c| c.0).collect();
    assert_eq!(types, [VALID, SERVICE_APPLIED, DISPATCHED]);
    let written = first.conditions.clone().unwrap();
    let second = conclude(
        &basis,
        &no_failures(),
        &current(&written),
        Some(&first.reported),
    );
    assert_eq!(second.conditions, None);
    assert!(second.events.is_empty());
    assert_eq!(second.reported, first.reported);
    assert!(second.retry);
}

fn not_synced_basis(clusters: &[(&str, &str)]) -> StatusBasis {
    StatusBasis {
        unsynced: clusters
            .iter()
            .map(|(cluster, reason)| UnsyncedCluster {
                cluster: cluster.to_string(),
                reason: reason.to_string(),
            })
            .collect(),
        ..basis()
    }
}

#[test]
fn a_cluster_not_synced_sets_clusters_synced_false_and_gets_one_event_when_news() {
    let pull = "pull mode (Karmada's agent in the cluster syncs it)";
    let listed = not_synced_basis(&[("m3", pull), ("m4", "its secret s does not exist")]);
    let first = conclude(&listed, &no_failures(), &current("[]"), None);
    let types: Vec<String> = conditions(&first).into_iter().map(|c| c.0).collect();
    assert_eq!(types, [VALID, SERVICE_APPLIED, DISPATCHED, CLUSTERS_SYNCED]);
    let m3 = format!("Cluster m3 is not synced: {pull}");
    let m4 = "Cluster m4 is not synced: its secret s does not exist".to_string();
    assert_eq!(
        condition(&first, CLUSTERS_SYNCED),
        (
            "False".into(),
            CLUSTER_NOT_SYNCED.into(),
            format!("{m3}; {m4}")
        )
    );
    // Dispatched reports the clusters that are synced: a cluster not synced is no failure, and
    // no retry fixes it.
    assert_eq!(condition(&first, DISPATCHED).0, "True");
    assert!(!first.retry);
    let not_synced: Vec<&EventNote> = first
        .events
        .iter()
        .filter(|e| e.reason == CLUSTER_NOT_SYNCED)
        .collect();
    assert_eq!(not_synced.len(), 2);
    assert!(not_synced.iter().all(|e| e.warning));
    assert_eq!([&not_synced[0].message, &not_synced[1].message], [&m3, &m4]);
    assert_eq!(first.reported.unsynced, [m3.clone(), m4.clone()]);
    // The same again: nothing new.
    let written = first.conditions.clone().unwrap();
    let again = conclude(
        &listed,
        &no_failures(),
        &current(&written),
        Some(&first.reported),
    );
    assert!(again.events.is_empty() && again.conditions.is_none());
    // Another reason for m4 is news: an Event for each cluster not synced now, as for
    // ClusterNotFound.
    let moved = not_synced_basis(&[("m3", pull), ("m4", "its spec.apiEndpoint is empty")]);
    let next = conclude(
        &moved,
        &no_failures(),
        &current(&written),
        Some(&first.reported),
    );
    assert_eq!(
        reasons(&next.events),
        [CLUSTER_NOT_SYNCED, CLUSTER_NOT_SYNCED]
    );
    assert!(
        next.events[1]
            .message
            .ends_with("its spec.apiEndpoint is empty")
    );
    // Once every listed cluster is synced, the condition turns True (no Event: nothing to
    // warn about).
    let synced = conclude(
        &basis(),
        &no_failures(),
        &current(&written),
        Some(&first.reported),
    );
    assert_eq!(
        condition(&synced, CLUSTERS_SYNCED),
        (
            "True".into(),
            "AllClustersSynced".into(),
            "Every listed cluster that exists is synced".into()
        )
    );
    assert!(synced.events.is_empty());
    assert!(synced.reported.unsynced.is_empty());
}

#[test]
fn clusters_synced_is_not_added_to_an_mcs_that_never_listed_a_cluster_not_synced() {
    let update = conclude(&basis(), &no_failures(), &current("[]"), None);
    let types: Vec<String> = conditions(&update).into_iter().map(|c| c.0).collect();
    assert_eq!(types, [VALID, SERVICE_APPLIED, DISPATCHED]);
    // An invalid MCS reports Valid only.
    let invalid = StatusBasis {
        invalid: Some("spec.types: Unsupported value".into()),
        ..not_synced_basis(&[("m3", "pull mode")])
    };
    let update = conclude(&invalid, &no_failures(), &current("[]"), None);
    assert_eq!(conditions(&update).len(), 1);
    assert!(update.events.is_empty());
}

#[test]
fn a_load_balancer_pass_reports_its_condition_and_not_the_dispatch() {
    let report = LoadBalancerReport {
        ingress: Vec::new(),
        changed: false,
        complete: false,
        reason: balancer::INCOMPLETE.into(),
        message: "cluster m1 has no load balancer ingress yet".into(),
    };
    let basis = StatusBasis {
        dispatches: false,
        load_balancer: Some(report),
        ..basis()
    };
    let update = conclude(&basis, &no_failures(), &current("[]"), None);
    let types: Vec<String> = conditions(&update).into_iter().map(|c| c.0).collect();
    assert_eq!(types, [VALID, SERVICE_APPLIED, balancer::CONDITION]);
    assert_eq!(
        reasons(&update.events),
        ["SyncServiceSucceed", "LoadBalancerStatusIncomplete"]
    );
    assert_eq!(update.reported.dispatched, None);
    assert_eq!(update.reported.load_balancer, Some(false));
    assert!(!update.retry);
}

/// `conclude`'s answer with every `lastTransitionTime` blanked, as comparable text.
fn without_transition_times(update: &StatusUpdate) -> String {
    let conditions = update.conditions.as_deref().map(|text| {
        let mut values: Vec<Value> = serde_json::from_str(text).unwrap();
        for v in &mut values {
            v["lastTransitionTime"] = Value::Null;
        }
        values
    });
    format!(
        "{conditions:?} {:?} {:?} {}",
        update.events, update.reported, update.retry
    )
}

#[test]
fn the_time_of_a_pass_only_stamps_transition_times() {
    // The host skips a pass whose input repeats that of a pass with nothing to write
    // (host/src/controller/quiet.rs): that is sound only if `now` decides nothing else.
    let failing = StatusBasis {
        dispatch_failures: vec!["listing endpointslices in cluster m2: 404".into()],
        incompatible: vec![incompatible("Provider", "m2")],
        ..basis()
    };
    let invalid = StatusBasis {
        invalid: Some("spec.types: Unsupported value".into()),
        ..basis()
    };
    for basis in [basis(), failing, invalid] {
        let first = conclude(&basis, &no_failures(), &current("[]"), None);
        let written = first.conditions.clone().unwrap_or_else(|| "[]".into());
        for (conditions, reported) in [("[]", None), (written.as_str(), Some(&first.reported))] {
            let at = |now: &str| {
                let status = StatusNow {
                    now: now.into(),
                    ..current(conditions)
                };
                conclude(&basis, &no_failures(), &status, reported)
            };
            let (early, late) = (at(NOW), at("2031-12-31T23:59:59Z"));
            assert_eq!(
                without_transition_times(&early),
                without_transition_times(&late)
            );
        }
    }
}
