//! The *status* step's write: the MultiClusterService's conditions in the hub
//! (docs/sync.md#status-conditions-and-events) and `status.loadBalancer`, as the component
//! decided them (`conclude`, `decide`).
//!
//! The component answers the whole `conditions` list (ours set, every other type kept as it
//! read them), so the write is conditional on what it read: the patch carries that
//! resourceVersion, and a 409 (another writer, or a cache behind the hub) re-reads the MCS and
//! asks the component again on the conditions the hub holds now. A condition of a type we do
//! not set is never removed or set back.

use std::future::Future;

use k8s_openapi::api::core::v1::LoadBalancerIngress;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::clusters::api_error::{Kind, chain, classify};
use crate::controller::names::{mcs_resource, object_name};
use crate::controller::pass::conflict::CONFLICT_ATTEMPTS;
use crate::controller::pass::decide::DecideError;

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
    #[error("reading multiclusterservice {object} in the hub again after a conflict")]
    Reread {
        object: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(transparent)]
    Conclude(#[from] DecideError),
}

/// Sets the MCS's `status.conditions` to `conditions` (JSON text of the whole list, as the
/// component's `conclude` gives it for `mcs`) and `status.loadBalancer.ingress` to `ingress`,
/// each when given, in one merge patch of `/status` (an empty `ingress` removes the field,
/// leaving `loadBalancer: {}` as a Service without ingress has it); writes nothing when neither
/// is. A patch with conditions carries `mcs`'s resourceVersion; on a 409 the MCS is read again
/// and `recompute` (the component's `conclude` on the conditions the hub holds now, JSON text or
/// `None` when they are already as wanted) gives the conditions of the next attempt, up to
/// [`CONFLICT_ATTEMPTS`] in all. Returns the MCS as the hub holds it afterwards, when it was
/// written (`None` also when the MCS is gone, or is another object of the same name, by then).
pub async fn set_status<R, Fut>(
    hub: &Client,
    mcs: &DynamicObject,
    conditions: Option<String>,
    ingress: Option<Vec<LoadBalancerIngress>>,
    mut recompute: R,
) -> Result<Option<DynamicObject>, StatusError>
where
    R: FnMut(Value) -> Fut,
    Fut: Future<Output = Result<Option<String>, DecideError>>,
{
    let object = object_name(mcs);
    let parse = |text: Option<String>| {
        text.as_deref()
            .map(serde_json::from_str::<Value>)
            .transpose()
            .map_err(|source| StatusError::Conditions {
                object: object.clone(),
                source,
            })
    };
    let mut conditions = parse(conditions)?;
    let api: Api<DynamicObject> = Api::namespaced_with(
        hub.clone(),
        mcs.metadata.namespace.as_deref().unwrap_or_default(),
        &mcs_resource(),
    );
    let name = mcs.metadata.name.as_deref().unwrap_or_default();
    let mut read = mcs.metadata.resource_version.clone();
    let mut tries = 1;
    loop {
        let Some(body) = patch_body(conditions.as_ref(), ingress.as_deref(), read.as_deref())
        else {
            return Ok(None);
        };
        let err = match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(written) => return Ok(Some(written)),
            Err(err) => err,
        };
        if tries >= CONFLICT_ATTEMPTS || classify(&err) != Kind::Conflict {
            return Err(StatusError::Patch {
                object,
                source: Box::new(err),
            });
        }
        tries += 1;
        tracing::debug!(mcs = %object, error = %chain(&err), tries, "status conflict; re-reading and concluding again");
        let fresh = api
            .get_opt(name)
            .await
            .map_err(|source| StatusError::Reread {
                object: object.clone(),
                source: Box::new(source),
            })?;
        let Some(fresh) = fresh.filter(|f| f.metadata.uid == mcs.metadata.uid) else {
            return Ok(None);
        };
        read = fresh.metadata.resource_version.clone();
        if conditions.is_some() {
            let now = fresh.data["status"]["conditions"].clone();
            conditions = parse(recompute(now).await?)?;
        }
    }
}

/// The merge patch of `/status` setting `conditions` and `ingress` (each when given; an empty
/// `ingress` is `null`), conditional on `resource_version` when it sets conditions: the list is
/// replaced whole, so it must be the one the component read with ours set in it. `None` when
/// there is nothing to set.
fn patch_body(
    conditions: Option<&Value>,
    ingress: Option<&[LoadBalancerIngress]>,
    resource_version: Option<&str>,
) -> Option<Value> {
    if conditions.is_none() && ingress.is_none() {
        return None;
    }
    let mut status = serde_json::Map::new();
    if let Some(conditions) = conditions {
        status.insert("conditions".into(), conditions.clone());
    }
    if let Some(ingress) = ingress {
        let ingress = (!ingress.is_empty()).then_some(ingress);
        status.insert("loadBalancer".into(), json!({ "ingress": ingress }));
    }
    let mut body = json!({ "status": status });
    if let (Some(_), Some(version)) = (conditions, resource_version) {
        body["metadata"] = json!({ "resourceVersion": version });
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conditions() -> Value {
        json!([
            {"type": "Valid", "status": "True", "reason": "ValidationSucceed", "message": ""},
            {"type": "ExternalDNSReady", "status": "True", "reason": "Published", "message": "x"},
        ])
    }

    #[test]
    fn conditions_are_written_whole_and_only_on_the_version_read() {
        let list = conditions();
        let body = patch_body(Some(&list), None, Some("42")).unwrap();
        assert_eq!(
            body,
            json!({"metadata": {"resourceVersion": "42"}, "status": {"conditions": list}}),
            "another writer's condition goes back as read, and a newer MCS refuses the patch"
        );
    }

    #[test]
    fn load_balancer_status_alone_is_not_conditional() {
        let ingress = [LoadBalancerIngress {
            ip: Some("10.0.0.9".into()),
            ..LoadBalancerIngress::default()
        }];
        let body = patch_body(None, Some(&ingress), Some("42")).unwrap();
        assert_eq!(
            body,
            json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}})
        );
        let body = patch_body(None, Some(&[]), Some("42")).unwrap();
        assert_eq!(body, json!({"status": {"loadBalancer": {"ingress": null}}}));
    }

    #[test]
    fn both_in_one_patch_and_nothing_when_neither() {
        let list = conditions();
        let body = patch_body(Some(&list), Some(&[]), Some("7")).unwrap();
        assert_eq!(body["metadata"]["resourceVersion"], "7");
        assert_eq!(body["status"]["conditions"], list);
        assert_eq!(body["status"]["loadBalancer"], json!({"ingress": null}));
        assert_eq!(patch_body(None, None, Some("7")), None);
    }
}
