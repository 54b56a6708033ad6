//! The *events* step (docs/sync.md#provider-and-consumer-sets, docs/sync.md#status-conditions-and-events): core v1 Events on the MultiClusterService in the hub.
//! To avoid one Event per resync, an Event is emitted only when what it reports changes: the
//! status of its condition, or the set of unknown cluster names ([`ReportedByMcs`], per MCS uid).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DynamicObject, PostParams};
use kube::{Api, Client};

use super::messages;
use super::read::object_name;
use super::status::Condition;

/// `source.component` of every Event.
pub const COMPONENT: &str = "mcs-policy";

/// Why an Event could not be written.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("creating event {reason} for multiclusterservice {object} in the hub")]
    Create {
        object: String,
        reason: String,
        #[source]
        source: Box<kube::Error>,
    },
}

/// What was last reported for one MCS.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reported {
    pub unknown: BTreeSet<String>,
    /// `APIIncompatible` messages: clusters that do not serve EndpointSlices.
    pub incompatible: BTreeSet<String>,
    pub service_applied: Option<bool>,
    pub dispatched: Option<bool>,
    /// `LoadBalancerStatusReported` (for an MCS of type `LoadBalancer`).
    pub load_balancer: Option<bool>,
}

/// The last report of every MCS, keyed by uid.
pub type ReportedByMcs = Arc<Mutex<HashMap<String, Reported>>>;

/// One Event to write.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

/// The Events due given what was `seen` before and what is `now`.
pub fn due(
    seen: &Reported,
    now: &Reported,
    unknown_providers: &[String],
    unknown_consumers: &[String],
    service_error: Option<&str>,
    dispatch_error: Option<&str>,
    load_balancer: Option<&Condition>,
) -> Vec<Note> {
    let mut out = Vec::new();
    if now.unknown != seen.unknown {
        for (role, names) in [
            ("Provider", unknown_providers),
            ("Consumer", unknown_consumers),
        ] {
            for name in names {
                out.push(Note {
                    warning: true,
                    reason: "ClusterNotFound".into(),
                    message: format!("{role} cluster {name} is not found"),
                });
            }
        }
    }
    for message in now.incompatible.difference(&seen.incompatible) {
        out.push(Note {
            warning: true,
            reason: "APIIncompatible".into(),
            message: message.clone(),
        });
    }
    if now.service_applied != seen.service_applied {
        out.push(match service_error {
            None => Note {
                warning: false,
                reason: "SyncServiceSucceed".into(),
                message: "Service is propagated to target clusters.".into(),
            },
            Some(e) => Note {
                warning: true,
                reason: "SyncServiceFailed".into(),
                message: e.to_string(),
            },
        });
    }
    if now.dispatched.is_some() && now.dispatched != seen.dispatched {
        out.push(match dispatch_error {
            None => Note {
                warning: false,
                reason: "DispatchEndpointSliceSucceed".into(),
                message: "EndpointSlice are dispatched successfully".into(),
            },
            Some(e) => Note {
                warning: true,
                reason: "DispatchEndpointSliceFailed".into(),
                message: e.to_string(),
            },
        });
    }
    if let Some(c) = load_balancer.filter(|_| now.load_balancer != seen.load_balancer) {
        // Named like the condition's reason; the message is the condition's, within an Event's
        // size.
        out.push(Note {
            warning: !c.status,
            reason: c.reason.clone(),
            message: messages::join_bounded(
                std::slice::from_ref(&c.message),
                messages::EVENT_LIMIT,
            ),
        });
    }
    out
}

/// The `APIIncompatible` message of a `role` (`Provider`, `Consumer`) cluster that does not
/// serve `discovery.k8s.io/v1` EndpointSlices (Karmada's wording).
pub fn incompatible(role: &str, cluster: &str) -> String {
    format!("{role} cluster {cluster} does not support EndpointSlice")
}

/// Writes `note` as a core v1 Event about `mcs` in its namespace of the hub.
pub async fn emit(hub: &Client, mcs: &DynamicObject, note: &Note) -> Result<(), EventError> {
    let namespace = mcs.metadata.namespace.clone().unwrap_or_default();
    let name = mcs.metadata.name.clone().unwrap_or_default();
    let now = Time(Timestamp::now());
    let event = Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}.")),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("networking.karmada.io/v1alpha1".into()),
            kind: Some("MultiClusterService".into()),
            name: Some(name),
            namespace: Some(namespace.clone()),
            uid: mcs.metadata.uid.clone(),
            resource_version: mcs.metadata.resource_version.clone(),
            ..ObjectReference::default()
        },
        reason: Some(note.reason.clone()),
        message: Some(note.message.clone()),
        type_: Some(if note.warning { "Warning" } else { "Normal" }.into()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            host: None,
        }),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        reporting_component: Some(COMPONENT.into()),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(hub.clone(), &namespace);
    api.create(&PostParams::default(), &event)
        .await
        .map(drop)
        .map_err(|source| EventError::Create {
            object: object_name(mcs),
            reason: note.reason.clone(),
            source: Box::new(source),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_reported() {
        let now = Reported {
            unknown: BTreeSet::from(["ghost".to_string()]),
            incompatible: BTreeSet::from([incompatible("Consumer", "old")]),
            service_applied: Some(false),
            dispatched: Some(true),
            load_balancer: None,
        };
        let first = due(
            &Reported::default(),
            &now,
            &["ghost".into()],
            &[],
            Some("boom"),
            None,
            None,
        );
        let reasons: Vec<_> = first.iter().map(|n| n.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "ClusterNotFound",
                "APIIncompatible",
                "SyncServiceFailed",
                "DispatchEndpointSliceSucceed"
            ]
        );
        assert_eq!(first[0].message, "Provider cluster ghost is not found");
        assert!(due(&now, &now, &["ghost".into()], &[], Some("boom"), None, None).is_empty());
    }

    #[test]
    fn a_cluster_without_endpointslices_is_reported_once_when_it_appears() {
        let before = Reported {
            incompatible: BTreeSet::from([incompatible("Consumer", "old")]),
            ..Reported::default()
        };
        let now = Reported {
            incompatible: BTreeSet::from([
                incompatible("Consumer", "old"),
                incompatible("Provider", "m2"),
            ]),
            ..Reported::default()
        };
        let notes = due(&before, &now, &[], &[], None, None, None);
        assert_eq!(
            notes,
            [Note {
                warning: true,
                reason: "APIIncompatible".into(),
                message: "Provider cluster m2 does not support EndpointSlice".into(),
            }]
        );
    }

    #[test]
    fn the_load_balancer_condition_is_reported_when_its_status_changes() {
        let condition = |complete: bool, message: &str| Condition {
            type_: super::super::status::LOAD_BALANCER,
            status: complete,
            reason: if complete {
                "LoadBalancerStatusComplete"
            } else {
                "LoadBalancerStatusIncomplete"
            }
            .into(),
            message: message.into(),
        };
        // The Events of a pass that saw the condition `before` and sees `now`.
        let notes = |before: Option<bool>, now: bool, c: &Condition| {
            let seen = |lb| Reported {
                load_balancer: lb,
                ..Reported::default()
            };
            due(
                &seen(before),
                &seen(Some(now)),
                &[],
                &[],
                None,
                None,
                Some(c),
            )
        };
        let pending = condition(false, "cluster m2 has no load balancer ingress yet");
        assert_eq!(
            notes(None, false, &pending),
            [Note {
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
        assert_eq!(complete.len(), 1);
        assert!(!complete[0].warning);
        assert_eq!(complete[0].reason, "LoadBalancerStatusComplete");
    }
}
