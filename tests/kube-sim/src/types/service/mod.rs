//! Services: decode defaults, the registry's create and update steps (cluster IP and node port
//! allocation, `patchAllocatedValues`, the strategy's `PrepareFor*`), validation, and the
//! `default/kubernetes` Service every cluster has.

mod alloc;
mod bands;
mod cidr;
mod defaults;
mod validate;

use serde_json::{Value, json};

use super::field;
use crate::object;
use crate::status::ApiError;
use crate::store::Store;

pub use alloc::allocated_values;
pub use cidr::ServiceCidr;
pub use defaults::decode_defaults;

fn refuse(svc: &Value, errors: &[field::FieldError]) -> Result<(), ApiError> {
    match field::invalid("", "Service", object::name(svc), errors) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn key(svc: &Value) -> (String, String) {
    (
        object::namespace(svc).to_owned(),
        object::name(svc).to_owned(),
    )
}

/// The registry's create: allocations (`beginCreate`), `PrepareForCreate`, `Validate`.
pub fn prepare_create(store: &Store, svc: &mut Value) -> Result<(), ApiError> {
    defaults::normalize_cluster_ips(svc, None);
    refuse(svc, &validate::cluster_ip_fields(svc))?;
    alloc::init_ip_families(svc)?;
    let (namespace, name) = key(svc);
    alloc::allocate_create(store, svc, (&namespace, &name))?;
    svc["status"] = json!({"loadBalancer": {}});
    refuse(svc, &validate::validate(svc))
}

/// The registry's update: allocated values kept (`beginUpdate`), new allocations,
/// `PrepareForUpdate`, `ValidateUpdate`.
pub fn prepare_update(store: &Store, old: &Value, new: &mut Value) -> Result<(), ApiError> {
    defaults::patch_allocated_values(new, old);
    defaults::normalize_cluster_ips(new, Some(old));
    refuse(new, &validate::cluster_ip_fields(new))?;
    alloc::init_ip_families(new)?;
    let (namespace, name) = key(new);
    alloc::allocate_update(store, new, old, (&namespace, &name))?;
    new["status"] = old["status"].clone();
    defaults::drop_type_dependent_fields(new, old);
    refuse(new, &validate::validate_update(new, old))
}

/// The body of `default/kubernetes`, the Service of the API server itself, listening on
/// `port`: its clusterIP is the first address of the service range.
pub fn kubernetes(cidr: &ServiceCidr, port: u16) -> Value {
    let ip = cidr.address(0).to_string();
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "clusterIP": ip,
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}],
        },
    })
}
