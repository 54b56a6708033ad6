//! The *service* step (docs/sync.md#service-propagation): the hub's Service `<ns>/<mcs name>` is the template; it is
//! created in every ready cluster of P ∪ C that lacks it (and its namespace with it, see
//! [`crate::controller::pass::write::namespace`]), and replaced where the component says it differs. A Service is
//! deleted only to be created again, when the component says so (headlessness changed, which
//! no API server changes in place, and the Service is one the controller created); the delete
//! is conditional on the uid and resourceVersion read, so it never removes another object of
//! the same name, nor one changed since. How the member's copy looks is the component's
//! decision (WIT `service`); this module only writes (and reads again after a 409). Every
//! write is recorded in the member's cache (read your writes).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Client};

use crate::controller::cache::{KeptService, Store, kept};
use crate::controller::pass::conflict::on_conflict;
use crate::controller::pass::decide::{DecideError, Decider};
use crate::controller::pass::write::namespace::with_namespace;
use crate::engine::convert::ServiceChange;

/// What went wrong propagating the Service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("reading service {namespace}/{name} in cluster {cluster}")]
    Read {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("deciding service {namespace}/{name} for cluster {cluster}")]
    Decide {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<DecideError>,
    },
    #[error("creating service {namespace}/{name} in cluster {cluster}")]
    Create {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("updating service {namespace}/{name} in cluster {cluster}")]
    Update {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("deleting service {namespace}/{name} in cluster {cluster} to create it again")]
    Delete {
        cluster: String,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "the component's service {namespace}/{name} for cluster {cluster} is not a service: {why}"
    )]
    NotAService {
        cluster: String,
        namespace: String,
        name: String,
        why: String,
    },
    #[error("service {namespace}/{name} in cluster {cluster}: {why}")]
    Conflict {
        cluster: String,
        namespace: String,
        name: String,
        why: String,
    },
}

/// The Service `<namespace>/<name>` of member `cluster`, `None` when it has none.
pub async fn read_member(
    client: &Client,
    cluster: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Service>, ServiceError> {
    let api: Api<Service> = Api::namespaced(client.clone(), namespace);
    api.get_opt(name)
        .await
        .map_err(|source| ServiceError::Read {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            source: Box::new(source),
        })
}

/// What `ensure` did in one cluster.
#[derive(Debug, PartialEq, Eq)]
pub enum Propagated {
    Created,
    Updated,
    Recreated,
    Unchanged,
}

/// Makes the target member hold the template as the component decided (`change`, for the
/// member's Service as read: `read` are its uid and resourceVersion). On a 409 (another writer
/// changed the Service, or created it, since it was read) the Service is read again from the
/// member and the component (WIT `service`) asked again.
pub async fn write(
    decider: &Decider,
    target: &Target<'_>,
    template: &Service,
    change: ServiceChange,
    read: Preconditions,
) -> Result<Propagated, ServiceError> {
    let decided = Mutex::new(Some((change, read)));
    on_conflict(|| async {
        let first = decided.lock().ok().and_then(|mut d| d.take());
        let (change, read) = match first {
            Some(first) => first,
            None => target.decide_again(decider, template).await?,
        };
        target.carry_out(template, change, read).await
    })
    .await
}

/// A member's Service of the template's namespace and name, and the member's cache of
/// Services.
pub struct Target<'a> {
    pub client: &'a Client,
    pub cluster: &'a str,
    pub cache: &'a Store<KeptService>,
    /// Set when the cache showed a change by someone else right after a write (news the
    /// write's own answer hid): the pass's MCS must be looked at again.
    pub overtaken: AtomicBool,
}

impl Target<'_> {
    /// Reads the member's Service again and asks the component what to do with it.
    async fn decide_again(
        &self,
        decider: &Decider,
        template: &Service,
    ) -> Result<(ServiceChange, Preconditions), ServiceError> {
        let (namespace, name) = names(template);
        let existing = read_member(self.client, self.cluster, &namespace, &name).await?;
        let change = decider
            .service(template, existing.as_ref())
            .await
            .map_err(|source| ServiceError::Decide {
                cluster: self.cluster.to_string(),
                namespace,
                name,
                source: Box::new(source),
            })?;
        let read = existing.map(|s| s.metadata);
        let read = Preconditions {
            uid: read.as_ref().and_then(|m| m.uid.clone()),
            resource_version: read.and_then(|m| m.resource_version),
        };
        Ok((change, read))
    }

    /// Creates, replaces or recreates the Service as `change` says (`read`: the uid and
    /// resourceVersion of the Service read).
    async fn carry_out(
        &self,
        template: &Service,
        change: ServiceChange,
        read: Preconditions,
    ) -> Result<Propagated, ServiceError> {
        let (namespace, name) = names(template);
        let writing = self.cache.writing(&namespace, &name);
        let outcome = self.write_change(&namespace, &name, change, read).await;
        let (outcome, overtaken) = match outcome {
            Ok((how, Some(written))) => (Ok(how), writing.wrote(kept::service(written))),
            Ok((how, None)) => (Ok(how), writing.abandoned()),
            Err(err) => (Err(err), writing.abandoned()),
        };
        if overtaken {
            // Changed by someone else meanwhile: the caller looks again.
            self.overtaken.store(true, Ordering::Relaxed);
        }
        outcome
    }

    /// The requests of one change, and the Service the member holds after them.
    async fn write_change(
        &self,
        namespace: &str,
        name: &str,
        change: ServiceChange,
        read: Preconditions,
    ) -> Result<(Propagated, Option<Service>), ServiceError> {
        let (client, cluster) = (self.client, self.cluster);
        let api: Api<Service> = Api::namespaced(client.clone(), namespace);
        let fail = |kind: StepError, source: kube::Error| {
            kind(
                cluster.into(),
                namespace.into(),
                name.into(),
                Box::new(source),
            )
        };
        let create = async |copy: Service| {
            let params = PostParams::default();
            with_namespace(client, namespace, || api.create(&params, &copy))
                .await
                .map_err(|source| fail(ServiceError::create, source))
        };
        match change {
            ServiceChange::Unchanged => Ok((Propagated::Unchanged, None)),
            ServiceChange::Create(copy) => {
                create(copy).await.map(|s| (Propagated::Created, Some(s)))
            }
            ServiceChange::Recreate(copy) => {
                let only_what_was_read = DeleteParams {
                    preconditions: Some(read),
                    ..DeleteParams::default()
                };
                match api.delete(name, &only_what_was_read).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(source) => return Err(fail(ServiceError::delete, source)),
                }
                create(copy).await.map(|s| (Propagated::Recreated, Some(s)))
            }
            ServiceChange::Conflict(why) => Err(ServiceError::Conflict {
                cluster: cluster.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
                why,
            }),
            ServiceChange::Replace(copy) => api
                .replace(name, &PostParams::default(), &copy)
                .await
                .map(|s| (Propagated::Updated, Some(s)))
                .map_err(|source| fail(ServiceError::update, source)),
        }
    }
}

/// The template's namespace and name: the member Service's.
fn names(template: &Service) -> (String, String) {
    let meta = &template.metadata;
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// A [`ServiceError`] of one request, from the cluster, namespace, name and client error.
type StepError = fn(String, String, String, Box<kube::Error>) -> ServiceError;

impl ServiceError {
    fn create(cluster: String, namespace: String, name: String, source: Box<kube::Error>) -> Self {
        ServiceError::Create {
            cluster,
            namespace,
            name,
            source,
        }
    }

    fn update(cluster: String, namespace: String, name: String, source: Box<kube::Error>) -> Self {
        ServiceError::Update {
            cluster,
            namespace,
            name,
            source,
        }
    }

    fn delete(cluster: String, namespace: String, name: String, source: Box<kube::Error>) -> Self {
        ServiceError::Delete {
            cluster,
            namespace,
            name,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::engine::{EngineOptions, PolicyEngine};

    fn service(value: serde_json::Value) -> Service {
        serde_json::from_value(value).unwrap()
    }

    fn decider() -> Decider {
        Decider {
            engine: PolicyEngine::embedded(EngineOptions::default()).unwrap(),
            budget: Duration::from_secs(5),
        }
    }

    /// The component's decisions arrive as typed Services the client can write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn the_component_decides_the_copy_and_the_replacement() {
        let decider = decider();
        let template = service(json!({
            "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                         "labels": {"a": "b"}},
            "spec": {"type": "NodePort", "clusterIP": "10.9.9.9", "clusterIPs": ["10.9.9.9"],
                     "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}
        }));
        let ServiceChange::Create(copy) = decider.service(&template, None).await.unwrap() else {
            panic!("a member without the Service gets a copy");
        };
        let spec = copy.spec.as_ref().unwrap();
        assert_eq!(spec.cluster_ip, None);
        assert_eq!(spec.cluster_ips, None);
        assert_eq!(spec.ports.as_ref().unwrap()[0].node_port, None);
        assert_eq!(copy.metadata.uid, None);
        assert_eq!(copy.metadata.resource_version, None);
        assert_eq!(copy.metadata.name.as_deref(), Some("web"));

        let member = service(json!({
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "3"},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.99", "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "nodePort": 31000,
                                "protocol": "TCP", "targetPort": 80}]}
        }));
        assert_eq!(
            decider.service(&template, Some(&member)).await.unwrap(),
            ServiceChange::Unchanged
        );
        let mut changed = template.clone();
        changed.spec.as_mut().unwrap().selector = None;
        let ServiceChange::Replace(out) = decider.service(&changed, Some(&member)).await.unwrap()
        else {
            panic!("a changed selector is replaced");
        };
        let spec = out.spec.unwrap();
        assert_eq!(out.metadata.resource_version.as_deref(), Some("3"));
        assert_eq!(spec.cluster_ip.as_deref(), Some("10.0.0.99"));
        assert_eq!(spec.ports.unwrap()[0].node_port, Some(31000));
    }
}
