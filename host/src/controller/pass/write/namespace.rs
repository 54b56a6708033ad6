//! Namespaces in member clusters. A real API server refuses any object in a namespace that does
//! not exist (`404 namespaces "shop" not found`, the NamespaceLifecycle admission plugin), and a
//! consumer cluster need not have the MultiClusterService's namespace: Karmada propagates
//! namespaces to its members, so its users never see this. The controller does the same, lazily:
//! a write refused because the namespace is missing creates the namespace, labelled as created
//! by the controller, and is tried once more. Namespaces are never deleted by the controller
//! (other objects may live in them); a namespace being deleted refuses new objects with 403,
//! which is reported like any other refusal.

use std::future::Future;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::{Api, Client};

/// The label on what the controller creates in members, as the component marks the Services it
/// creates (see the `service` decision): the Namespaces carry it too, so an operator can tell
/// them from their own.
pub const CREATED_BY_LABEL: &str = "networking.karmada.io/created-by";
/// Its value.
pub const CREATED_BY: &str = "mcs-policy";

/// Whether `err` is the API server's refusal of a write into the namespace `namespace` because
/// it does not exist (404 whose details name the namespace, not the object).
pub fn is_missing_namespace(err: &kube::Error, namespace: &str) -> bool {
    let kube::Error::Api(status) = err else {
        return false;
    };
    status.code == 404
        && status
            .details
            .as_ref()
            .is_some_and(|d| d.kind == "namespaces" && d.name == namespace)
}

/// Runs `write`; when it is refused because `namespace` does not exist in the cluster of
/// `client`, creates the namespace and runs `write` once more. A failure to create the
/// namespace is returned as the write's error.
pub async fn with_namespace<T, F, Fut>(
    client: &Client,
    namespace: &str,
    mut write: F,
) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    match write().await {
        Err(err) if is_missing_namespace(&err, namespace) => {
            create(client, namespace).await?;
            write().await
        }
        outcome => outcome,
    }
}

/// Creates `namespace` with the controller's label; one that appeared meanwhile is fine.
async fn create(client: &Client, namespace: &str) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let object = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_string()),
            labels: Some([(CREATED_BY_LABEL.to_string(), CREATED_BY.to_string())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => {
            tracing::info!(namespace, "created the namespace in a member cluster");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    /// A 404 as a real kube-apiserver 1.36 sends it.
    fn not_found(kind: &str, name: &str) -> kube::Error {
        let status: Status = serde_json::from_value(serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("{kind} \"{name}\" not found"), "reason": "NotFound",
            "details": {"name": name, "kind": kind}, "code": 404
        }))
        .unwrap();
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn only_a_404_naming_the_namespace_is_a_missing_namespace() {
        assert!(is_missing_namespace(
            &not_found("namespaces", "shop"),
            "shop"
        ));
        assert!(!is_missing_namespace(
            &not_found("namespaces", "other"),
            "shop"
        ));
        assert!(!is_missing_namespace(
            &not_found("services", "shop"),
            "shop"
        ));
        let conflict = kube::Error::Api(Box::new(Status {
            code: 409,
            ..Status::default()
        }));
        assert!(!is_missing_namespace(&conflict, "shop"));
    }
}
