//! The *status* step's write: the MultiClusterService's conditions in the hub
//! (docs/sync.md#status-conditions-and-events) and `status.loadBalancer`, as the component
//! decided them (`conclude`, `decide`).

use k8s_openapi::api::core::v1::LoadBalancerIngress;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::read::{mcs_resource, object_name};
use super::retry::on_conflict;

/// Why the status could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("the component's conditions for multiclusterservice {object} are not JSON")]
    Conditions {
        object: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("patching the status of multiclusterservice {object} in the hub")]
    Patch {
        object: String,
        #[source]
        source: Box<kube::Error>,
    },
}

/// Sets the MCS's `status.conditions` to `conditions` (JSON text of the whole list, as the
/// component's `conclude` gives it) and `status.loadBalancer.ingress` to `ingress`, each when
/// given, in one merge patch of `/status` (an empty `ingress` removes the field, leaving
/// `loadBalancer: {}` as a Service without ingress has it); writes nothing when neither is.
/// Returns the MCS as the hub holds it afterwards, when it was written.
pub async fn set_status(
    hub: &Client,
    mcs: &DynamicObject,
    conditions: Option<&str>,
    ingress: Option<Vec<LoadBalancerIngress>>,
) -> Result<Option<DynamicObject>, StatusError> {
    let conditions = conditions
        .map(serde_json::from_str::<Value>)
        .transpose()
        .map_err(|source| StatusError::Conditions {
            object: object_name(mcs),
            source,
        })?;
    if conditions.is_none() && ingress.is_none() {
        return Ok(None);
    }
    let api: Api<DynamicObject> = Api::namespaced_with(
        hub.clone(),
        mcs.metadata.namespace.as_deref().unwrap_or_default(),
        &mcs_resource(),
    );
    let name = mcs.metadata.name.as_deref().unwrap_or_default();
    let mut status = serde_json::Map::new();
    if let Some(conditions) = conditions {
        status.insert("conditions".into(), conditions);
    }
    if let Some(ingress) = ingress {
        let ingress = (!ingress.is_empty()).then_some(ingress);
        status.insert("loadBalancer".into(), json!({ "ingress": ingress }));
    }
    let value = json!({ "status": status });
    let (params, patch) = (PatchParams::default(), Patch::Merge(&value));
    on_conflict(|| api.patch_status(name, &params, &patch))
        .await
        .map(Some)
        .map_err(|source| StatusError::Patch {
            object: object_name(mcs),
            source: Box::new(source),
        })
}
