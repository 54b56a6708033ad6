//! The built-in resource types kube-sim serves from startup, and the namespaces every cluster has.

use crate::registry::{GenerationPolicy, ResourceType, Special};

/// Namespaces that exist in a fresh cluster.
pub const DEFAULT_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
    short_names: &'static [&'static str],
    generation: GenerationPolicy,
    special: Special,
}

const BUILTINS: [Builtin; 12] = [
    Builtin {
        group: "",
        version: "v1",
        plural: "namespaces",
        kind: "Namespace",
        namespaced: false,
        status: true,
        short_names: &["ns"],
        generation: GenerationPolicy::None,
        special: Special::Namespace,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "services",
        kind: "Service",
        namespaced: true,
        status: true,
        short_names: &["svc"],
        generation: GenerationPolicy::None,
        special: Special::None,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        status: false,
        short_names: &["ev"],
        generation: GenerationPolicy::None,
        special: Special::None,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "secrets",
        kind: "Secret",
        namespaced: true,
        status: false,
        short_names: &[],
        generation: GenerationPolicy::None,
        special: Special::None,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "configmaps",
        kind: "ConfigMap",
        namespaced: true,
        status: false,
        short_names: &["cm"],
        generation: GenerationPolicy::None,
        special: Special::None,
    },
    Builtin {
        group: "discovery.k8s.io",
        version: "v1",
        plural: "endpointslices",
        kind: "EndpointSlice",
        namespaced: true,
        status: false,
        short_names: &[],
        generation: GenerationPolicy::ContentOrLabels,
        special: Special::None,
    },
    Builtin {
        group: "batch",
        version: "v1",
        plural: "jobs",
        kind: "Job",
        namespaced: true,
        status: true,
        short_names: &[],
        generation: GenerationPolicy::Spec,
        special: Special::None,
    },
    Builtin {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        kind: "Lease",
        namespaced: true,
        status: false,
        short_names: &[],
        generation: GenerationPolicy::None,
        special: Special::None,
    },
    Builtin {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        status: false,
        short_names: &["ev"],
        generation: GenerationPolicy::None,
        special: Special::None,
    },
    Builtin {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "mutatingwebhookconfigurations",
        kind: "MutatingWebhookConfiguration",
        namespaced: false,
        status: false,
        short_names: &[],
        generation: GenerationPolicy::Spec,
        special: Special::None,
    },
    Builtin {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingwebhookconfigurations",
        kind: "ValidatingWebhookConfiguration",
        namespaced: false,
        status: false,
        short_names: &[],
        generation: GenerationPolicy::Spec,
        special: Special::None,
    },
    Builtin {
        group: "apiextensions.k8s.io",
        version: "v1",
        plural: "customresourcedefinitions",
        kind: "CustomResourceDefinition",
        namespaced: false,
        status: true,
        short_names: &["crd", "crds"],
        generation: GenerationPolicy::Spec,
        special: Special::CustomResourceDefinition,
    },
];

/// The resource types served from startup.
pub fn builtin_types() -> Vec<ResourceType> {
    BUILTINS.iter().map(to_resource_type).collect()
}

/// The discovery categories of a built-in resource (`rest.CategoriesProvider`).
fn categories(b: &Builtin) -> &'static [&'static str] {
    match (b.group, b.plural) {
        ("", "services") | ("batch", "jobs") => &["all"],
        ("admissionregistration.k8s.io", _) => &["api-extensions"],
        _ => &[],
    }
}

fn to_resource_type(b: &Builtin) -> ResourceType {
    ResourceType {
        group: b.group.to_owned(),
        version: b.version.to_owned(),
        storage_version: b.version.to_owned(),
        plural: b.plural.to_owned(),
        singular: b.kind.to_lowercase(),
        kind: b.kind.to_owned(),
        namespaced: b.namespaced,
        status_subresource: b.status,
        short_names: b.short_names.iter().map(|s| (*s).to_owned()).collect(),
        categories: categories(b).iter().map(|c| (*c).to_owned()).collect(),
        generation: b.generation,
        special: b.special,
        defined_by: None,
    }
}
