//! The *service* step (SPEC §4.7): the hub's Service `<ns>/<mcs name>` is the template; it is
//! created in every ready cluster of P ∪ C that lacks it, and updated where its ports, type or
//! selector differ, keeping the member's own immutable fields. Services are never deleted.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::PostParams;
use kube::{Api, Client};

use crate::engine::types;

/// What went wrong propagating the Service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("service {namespace}/{name} not found in the hub")]
    TemplateMissing { namespace: String, name: String },
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

/// The template's ports as the component's `service-port` records.
pub fn service_ports(template: &Service) -> Vec<types::ServicePort> {
    template
        .spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| types::ServicePort {
            name: p.name.clone().unwrap_or_default(),
            port: p.port,
        })
        .collect()
}

/// What `ensure` did in one cluster.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

/// Makes `cluster` hold the template: creates it when missing, replaces it (keeping the
/// member's clusterIP(s), nodePorts and healthCheckNodePort) when ports, type or selector
/// differ.
pub async fn ensure(
    client: &Client,
    cluster: &str,
    template: &Service,
) -> Result<Outcome, ServiceError> {
    let namespace = template.metadata.namespace.clone().unwrap_or_default();
    let name = template.metadata.name.clone().unwrap_or_default();
    let api: Api<Service> = Api::namespaced(client.clone(), &namespace);
    let existing = api
        .get_opt(&name)
        .await
        .map_err(|source| ServiceError::Read {
            cluster: cluster.to_string(),
            namespace: namespace.clone(),
            name: name.clone(),
            source: Box::new(source),
        })?;
    let Some(existing) = existing else {
        return api
            .create(&PostParams::default(), &member_copy(template))
            .await
            .map(|_| Outcome::Created)
            .map_err(|source| ServiceError::Create {
                cluster: cluster.to_string(),
                namespace,
                name,
                source: Box::new(source),
            });
    };
    if !differs(template, &existing) {
        return Ok(Outcome::Unchanged);
    }
    api.replace(&name, &PostParams::default(), &updated(template, &existing))
        .await
        .map(|_| Outcome::Updated)
        .map_err(|source| ServiceError::Update {
            cluster: cluster.to_string(),
            namespace,
            name,
            source: Box::new(source),
        })
}

/// The object created in a member: the template's name, namespace, labels and annotations, and
/// its spec without the fields the member assigns.
pub fn member_copy(template: &Service) -> Service {
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.cluster_ip = None;
    spec.cluster_ips = None;
    spec.health_check_node_port = None;
    for port in spec.ports.iter_mut().flatten() {
        port.node_port = None;
    }
    let meta = &template.metadata;
    Service {
        metadata: ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            labels: meta.labels.clone(),
            annotations: meta.annotations.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// `existing` (metadata and resourceVersion kept) with the template's spec, keeping the
/// member's clusterIP(s), healthCheckNodePort and the nodePort of each port it already had.
pub fn updated(template: &Service, existing: &Service) -> Service {
    let old = existing.spec.clone().unwrap_or_default();
    let mut spec = member_copy(template).spec.unwrap_or_default();
    spec.cluster_ip = old.cluster_ip.clone();
    spec.cluster_ips = old.cluster_ips.clone();
    spec.health_check_node_port = old.health_check_node_port;
    for port in spec.ports.iter_mut().flatten() {
        port.node_port = old
            .ports
            .iter()
            .flatten()
            .find(|o| o.name == port.name && o.port == port.port)
            .and_then(|o| o.node_port);
    }
    Service {
        metadata: existing.metadata.clone(),
        spec: Some(spec),
        status: existing.status.clone(),
    }
}

/// Whether the template's ports, type or selector differ from the member's (API-server
/// defaults and member-assigned nodePorts ignored).
pub fn differs(template: &Service, existing: &Service) -> bool {
    let (t, e) = (
        template.spec.clone().unwrap_or_default(),
        existing.spec.clone().unwrap_or_default(),
    );
    ports(&t) != ports(&e)
        || kind(&t) != kind(&e)
        || t.selector.unwrap_or_default() != e.selector.unwrap_or_default()
}

fn kind(spec: &ServiceSpec) -> &str {
    spec.type_.as_deref().unwrap_or("ClusterIP")
}

fn ports(spec: &ServiceSpec) -> Vec<ServicePort> {
    spec.ports
        .iter()
        .flatten()
        .map(|p| ServicePort {
            node_port: None,
            protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
            target_port: Some(p.target_port.clone().unwrap_or(IntOrString::Int(p.port))),
            ..p.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(value: serde_json::Value) -> Service {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_copy_drops_member_assigned_fields_and_the_update_keeps_the_members() {
        let template = service(json!({
            "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                         "labels": {"a": "b"}},
            "spec": {"type": "NodePort", "clusterIP": "10.9.9.9", "clusterIPs": ["10.9.9.9"],
                     "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}
        }));
        let copy = member_copy(&template);
        let spec = copy.spec.as_ref().unwrap();
        assert_eq!(spec.cluster_ip, None);
        assert_eq!(spec.cluster_ips, None);
        assert_eq!(spec.ports.as_ref().unwrap()[0].node_port, None);
        assert_eq!(copy.metadata.uid, None);
        assert_eq!(copy.metadata.resource_version, None);

        let member = service(json!({
            "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "3"},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.99", "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "nodePort": 31000,
                                "protocol": "TCP", "targetPort": 80}]}
        }));
        assert!(!differs(&template, &member));
        let mut changed = template.clone();
        changed.spec.as_mut().unwrap().selector = None;
        assert!(differs(&changed, &member));
        let out = updated(&changed, &member);
        let spec = out.spec.unwrap();
        assert_eq!(out.metadata.resource_version.as_deref(), Some("3"));
        assert_eq!(spec.cluster_ip.as_deref(), Some("10.0.0.99"));
        assert_eq!(spec.ports.unwrap()[0].node_port, Some(31000));
    }
}
