//! Our own derived Services and imported EndpointSlices in a member, whatever their name: where
//! the exported names come from when nothing else names them any more.
//!
//! The keys come from the ServiceExports and our ServiceImports ([`super::keys`]); the derived
//! Services and imported slices are read through the shared member caches, which keep only the
//! groups of known keys. An object of ours whose export and import are both gone (deleted while
//! the controller was stopped, or a ServiceImport deleted by hand) would name no key, and would
//! never be looked at again. So each member also has two narrow watches, label-selected to what
//! carries our markers:
//!
//! - Services labelled `networking.karmada.io/created-by: mcs-policy-clusterset` and
//!   `multicluster.kubernetes.io/service-name` (the derived Services);
//! - EndpointSlices labelled `endpointslice.kubernetes.io/managed-by:
//!   endpointslice-clusterset-controller.karmada.io` and `multicluster.kubernetes.io/service-name`
//!   (the imported slices).
//!
//! Each object is kept as its identity and the name it was imported for (its
//! `multicluster.kubernetes.io/service-name`), grouped by that name: no spec, no endpoints, and
//! nothing of anyone else's objects. The name becomes a key, and its pass decides; the
//! host decides nothing here (the component deletes only what carries our markers, with the
//! uid and resourceVersion read).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ApiResource, DynamicObject, ObjectMeta};

use crate::controller::clusterset::names::{
    CLUSTERSET_MANAGER, CREATED_BY, CREATED_BY_LABEL, MCS_SERVICE_NAME_LABEL, derived_name,
};
use crate::controller::names::MANAGED_BY_LABEL;

/// Which of our objects a watch follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ours {
    DerivedServices,
    ImportedSlices,
}

impl Ours {
    /// The resource watched.
    pub fn resource(self) -> ApiResource {
        match self {
            Ours::DerivedServices => ApiResource::erase::<Service>(&()),
            Ours::ImportedSlices => ApiResource::erase::<EndpointSlice>(&()),
        }
    }

    /// The label selector of the watch: our markers, and the exported name's label.
    pub fn selector(self) -> String {
        match self {
            Ours::DerivedServices => {
                format!("{CREATED_BY_LABEL}={CREATED_BY},{MCS_SERVICE_NAME_LABEL}")
            }
            Ours::ImportedSlices => {
                format!("{MANAGED_BY_LABEL}={CLUSTERSET_MANAGER},{MCS_SERVICE_NAME_LABEL}")
            }
        }
    }
}

impl Ours {
    /// The exported name an object of ours (as kept) was made for, its store group.
    pub fn name_of(self, object: &DynamicObject) -> Option<&str> {
        match self {
            Ours::DerivedServices => derived_for(object),
            Ours::ImportedSlices => exported_name(object),
        }
    }
}

/// What is kept of an object of ours: namespace, name, uid, resourceVersion and the
/// `multicluster.kubernetes.io/service-name` label.
pub fn keep(object: DynamicObject) -> DynamicObject {
    let meta = object.metadata;
    let labels = meta.labels.and_then(|mut labels| {
        let name = labels.remove(MCS_SERVICE_NAME_LABEL)?;
        Some(BTreeMap::from([(MCS_SERVICE_NAME_LABEL.to_string(), name)]))
    });
    DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
            resource_version: meta.resource_version,
            labels,
            ..ObjectMeta::default()
        },
        data: serde_json::Value::Null,
    }
}

/// The exported name an imported slice of ours was made for (its store group): its
/// `multicluster.kubernetes.io/service-name`.
pub fn exported_name(object: &DynamicObject) -> Option<&str> {
    let name = object
        .metadata
        .labels
        .as_ref()?
        .get(MCS_SERVICE_NAME_LABEL)?;
    Some(name.as_str())
}

/// The exported name a derived Service of ours was made for (its store group): its
/// `multicluster.kubernetes.io/service-name`, when the Service bears that name's derived name
/// (a Service of another name is no derived Service of that import: no group).
pub fn derived_for(object: &DynamicObject) -> Option<&str> {
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    let exported = exported_name(object)?;
    (object.metadata.name.as_deref()? == derived_name(namespace, exported)).then_some(exported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, labels: &[(&str, &str)]) -> DynamicObject {
        let mut object = DynamicObject::new(name, &Ours::DerivedServices.resource()).within("shop");
        object.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        object.metadata.uid = Some("u1".into());
        object.data = serde_json::json!({"spec": {"ports": []}});
        object
    }

    #[test]
    fn an_object_of_ours_is_kept_as_its_identity_and_exported_name() {
        let derived = derived_name("shop", "web");
        let kept = keep(object(
            &derived,
            &[
                (CREATED_BY_LABEL, CREATED_BY),
                (MCS_SERVICE_NAME_LABEL, "web"),
            ],
        ));
        assert_eq!(exported_name(&kept), Some("web"));
        assert_eq!(kept.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(kept.metadata.labels.as_ref().map(BTreeMap::len), Some(1));
        assert!(kept.data.is_null());
        assert_eq!(derived_for(&kept), Some("web"));
        let elsewhere = keep(object(
            "derived-0000000000",
            &[(MCS_SERVICE_NAME_LABEL, "web")],
        ));
        assert_eq!(derived_for(&elsewhere), None);
        assert_eq!(exported_name(&elsewhere), Some("web"));
        assert_eq!(exported_name(&keep(object("x", &[]))), None);
    }

    #[test]
    fn the_watches_select_our_markers_and_the_exported_names_label() {
        assert_eq!(
            Ours::DerivedServices.selector(),
            "networking.karmada.io/created-by=mcs-policy-clusterset,multicluster.kubernetes.io/service-name"
        );
        assert_eq!(
            Ours::ImportedSlices.selector(),
            "endpointslice.kubernetes.io/managed-by=endpointslice-clusterset-controller.karmada.io,multicluster.kubernetes.io/service-name"
        );
    }
}
