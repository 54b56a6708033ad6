//! What the clusterset side reads and writes, named: the Multi-Cluster Services API's resources,
//! its labels, and the derived Service's name (asked of the component, which owns it:
//! docs/clusterset-rules.md).

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock, RwLock};
use std::time::Duration;

use kube::api::{ApiResource, GroupVersionKind};

use crate::engine::{EngineOptions, PolicyEngine};

/// The label of an imported EndpointSlice that names its exported Service.
pub const MCS_SERVICE_NAME_LABEL: &str = "multicluster.kubernetes.io/service-name";
/// The marker label of the ServiceImports and derived Services the component makes.
pub const CREATED_BY_LABEL: &str = "networking.karmada.io/created-by";
/// Its value on what the clusterset side makes.
pub const CREATED_BY: &str = "mcs-policy-clusterset";
/// The managed-by value of the imported EndpointSlices.
pub const CLUSTERSET_MANAGER: &str = "endpointslice-clusterset-controller.karmada.io";
/// The ClusterProperty whose value is a member's cluster id.
pub const CLUSTER_PROPERTY: &str = "cluster.clusterset.k8s.io";

/// `multicluster.x-k8s.io/v1beta1` `ServiceExport`.
pub fn export_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("multicluster.x-k8s.io", "v1beta1", "ServiceExport"),
        "serviceexports",
    )
}

/// `multicluster.x-k8s.io/v1beta1` `ServiceImport`.
pub fn import_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("multicluster.x-k8s.io", "v1beta1", "ServiceImport"),
        "serviceimports",
    )
}

/// `about.k8s.io/v1beta1` `ClusterProperty` (cluster-scoped).
pub fn property_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("about.k8s.io", "v1beta1", "ClusterProperty"),
        "clusterproperties",
    )
}

/// How long the component may take to name a derived Service (it hashes a few bytes).
const NAMING_BUDGET: Duration = Duration::from_secs(1);
/// Past this many remembered names, the memory starts over.
const REMEMBERED_MAX: usize = 1 << 16;

/// The component that names derived Services, and the names it gave (a name depends only on
/// the component and `namespace/name`; asking again costs an instance).
struct Naming {
    engine: Option<PolicyEngine>,
    digest: String,
    names: HashMap<(String, String), String>,
}

static NAMING: LazyLock<RwLock<Naming>> = LazyLock::new(|| {
    RwLock::new(Naming {
        engine: None,
        digest: String::new(),
        names: HashMap::new(),
    })
});

/// The component the clusterset side runs (the sync controller's): it names the derived
/// Services from now on. Until it is set, the embedded component does.
pub fn use_component(engine: &PolicyEngine) {
    let mut naming = NAMING.write().unwrap_or_else(|p| p.into_inner());
    naming.engine = Some(engine.clone());
}

/// The name of the derived Service of the exported `namespace/name`, as the component names it
/// (WIT `clusterset-derived-name`, docs/clusterset-rules.md#the-derived-service). Empty, and
/// logged, if the component cannot answer: the pass then finds no derived Service under that
/// name, and the component applies its own again.
pub fn derived_name(namespace: &str, name: &str) -> String {
    let key = (namespace.to_string(), name.to_string());
    let engine = {
        let naming = NAMING.read().unwrap_or_else(|p| p.into_inner());
        let engine = naming.engine.clone();
        if let Some(known) = naming.names.get(&key)
            && engine.as_ref().is_none_or(|e| e.digest() == naming.digest)
        {
            return known.clone();
        }
        engine
    };
    let engine = match engine {
        Some(engine) => engine,
        None => match embedded() {
            Some(engine) => engine,
            None => return String::new(),
        },
    };
    match engine.clusterset_derived_name(namespace, name, NAMING_BUDGET) {
        Ok(derived) => {
            let digest = engine.digest();
            let mut naming = NAMING.write().unwrap_or_else(|p| p.into_inner());
            if naming.digest != digest || naming.names.len() >= REMEMBERED_MAX {
                naming.names.clear();
                naming.digest = digest;
            }
            naming.names.insert(key, derived.clone());
            derived
        }
        Err(err) => {
            tracing::error!(%namespace, %name, error = %err, "the policy component names no derived Service");
            String::new()
        }
    }
}

/// The embedded component, loaded once, for a process whose clusterset side has not started.
fn embedded() -> Option<PolicyEngine> {
    static EMBEDDED: OnceLock<Option<PolicyEngine>> = OnceLock::new();
    EMBEDDED
        .get_or_init(|| {
            PolicyEngine::embedded(EngineOptions::default())
                .inspect_err(
                    |err| tracing::error!(error = %err, "loading the embedded policy component"),
                )
                .ok()
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_name_is_the_components_and_ten_base32hex_characters_of_the_names_hash() {
        let name = derived_name("shop", "web");
        assert_eq!(name.len(), "derived-".len() + 10);
        assert!(
            name["derived-".len()..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'v').contains(&b))
        );
        assert_ne!(name, derived_name("shop", "api"));
        let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
        assert_eq!(
            name,
            engine
                .clusterset_derived_name("shop", "web", NAMING_BUDGET)
                .unwrap()
        );
        // Asked again: the same, from memory.
        assert_eq!(derived_name("shop", "web"), name);
    }
}
