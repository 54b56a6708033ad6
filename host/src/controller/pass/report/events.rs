//! The *events* step's write: core v1 Events on the MultiClusterService in the hub, as the
//! component's `conclude` says they are due (docs/sync.md#status-conditions-and-events).

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DynamicObject, PostParams};
use kube::{Api, Client};

use crate::controller::names::object_name;
use crate::engine::types::EventNote;

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

/// Writes `note` as a core v1 Event about `mcs` in its namespace of the hub.
pub async fn emit(hub: &Client, mcs: &DynamicObject, note: &EventNote) -> Result<(), EventError> {
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
