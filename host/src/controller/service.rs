//! The *service* step (docs/sync.md#service-propagation): the hub's Service `<ns>/<mcs name>` is the template; it is
//! created in every ready cluster of P ∪ C that lacks it (and its namespace with it, see
//! [`super::namespace`]), and replaced where the component says it differs. A Service is
//! deleted only to be created again, when the component says so (headlessness changed, which
//! no API server changes in place, and the Service is one the controller created); the delete
//! is conditional on the uid read, so it never removes another object of the same name. How
//! the member's copy looks is the component's decision (WIT `service`); this module only reads
//! and writes.

use std::sync::Mutex;

use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Client};

use super::decide::{DecideError, Decider};
use super::namespace::with_namespace;
use super::retry::on_conflict;
use crate::engine::convert::ServiceChange;

/// What went wrong propagating the Service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("reading service {namespace}/{name} from the hub")]
    ReadTemplate {
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
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

/// The hub's Service `namespace/name`, or `None` when it does not exist.
pub async fn read_template(
    hub: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Service>, ServiceError> {
    let api: Api<Service> = Api::namespaced(hub.clone(), namespace);
    api.get_opt(name)
        .await
        .map_err(|source| ServiceError::ReadTemplate {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source: Box::new(source),
        })
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

/// Makes `cluster` hold the template as the component decided (`change`, for the member's
/// Service of uid `uid` as read). On a 409 (another writer changed the Service, or created it,
/// since it was read) the Service is read again and the component (WIT `service`) asked again.
pub async fn write(
    decider: &Decider,
    client: &Client,
    cluster: &str,
    template: &Service,
    change: ServiceChange,
    uid: Option<String>,
) -> Result<Propagated, ServiceError> {
    let target = Target::of(client, cluster, template);
    let decided = Mutex::new(Some((change, uid)));
    on_conflict(|| async {
        let first = decided.lock().ok().and_then(|mut d| d.take());
        let (change, uid) = match first {
            Some(first) => first,
            None => target.decide_again(decider, template).await?,
        };
        target.carry_out(change, uid).await
    })
    .await
}

/// A member's Service of the template's namespace and name.
struct Target<'a> {
    client: &'a Client,
    cluster: &'a str,
    namespace: String,
    name: String,
}

impl<'a> Target<'a> {
    fn of(client: &'a Client, cluster: &'a str, template: &Service) -> Self {
        Target {
            client,
            cluster,
            namespace: template.metadata.namespace.clone().unwrap_or_default(),
            name: template.metadata.name.clone().unwrap_or_default(),
        }
    }

    /// Reads the member's Service again and asks the component what to do with it.
    async fn decide_again(
        &self,
        decider: &Decider,
        template: &Service,
    ) -> Result<(ServiceChange, Option<String>), ServiceError> {
        let existing = read_member(self.client, self.cluster, &self.namespace, &self.name).await?;
        let change = decider
            .service(template, existing.as_ref())
            .await
            .map_err(|source| ServiceError::Decide {
                cluster: self.cluster.to_string(),
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                source: Box::new(source),
            })?;
        Ok((change, existing.and_then(|s| s.metadata.uid)))
    }

    /// Creates, replaces or recreates the Service as `change` says (`uid`: of the Service read).
    async fn carry_out(
        &self,
        change: ServiceChange,
        uid: Option<String>,
    ) -> Result<Propagated, ServiceError> {
        let (client, cluster) = (self.client, self.cluster);
        let (namespace, name) = (&self.namespace, &self.name);
        let api: Api<Service> = Api::namespaced(client.clone(), namespace);
        let create = async |copy: Service| {
            let params = PostParams::default();
            with_namespace(client, namespace, || api.create(&params, &copy))
                .await
                .map_err(|source| ServiceError::Create {
                    cluster: cluster.to_string(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    source: Box::new(source),
                })
        };
        match change {
            ServiceChange::Unchanged => Ok(Propagated::Unchanged),
            ServiceChange::Create(copy) => create(copy).await.map(|_| Propagated::Created),
            ServiceChange::Recreate(copy) => {
                let only_what_was_read = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid,
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match api.delete(name, &only_what_was_read).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(source) => {
                        return Err(ServiceError::Delete {
                            cluster: cluster.to_string(),
                            namespace: namespace.clone(),
                            name: name.clone(),
                            source: Box::new(source),
                        });
                    }
                }
                create(copy).await.map(|_| Propagated::Recreated)
            }
            ServiceChange::Conflict(why) => Err(ServiceError::Conflict {
                cluster: cluster.to_string(),
                namespace: namespace.clone(),
                name: name.clone(),
                why,
            }),
            ServiceChange::Replace(copy) => api
                .replace(name, &PostParams::default(), &copy)
                .await
                .map(|_| Propagated::Updated)
                .map_err(|source| ServiceError::Update {
                    cluster: cluster.to_string(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    source: Box::new(source),
                }),
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
