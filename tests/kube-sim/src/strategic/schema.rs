//! The patch strategies of built-in types: which lists merge (the `patchStrategy:"merge"` and
//! `patchMergeKey` struct tags of `k8s.io/api`), everything else being replaced. Maps always
//! merge. Only the types kube-sim serves are described.

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replaced by the patch's list (atomic lists, lists without a strategy).
    Replace,
    /// Merged: elements matched by the merge key (maps) or by value (primitives).
    Merge(Option<&'static str>),
}

/// The list fields of `ObjectMeta` that merge.
const OBJECT_META: &[(&str, ListStrategy)] = &[
    ("metadata.finalizers", ListStrategy::Merge(None)),
    ("metadata.ownerReferences", ListStrategy::Merge(Some("uid"))),
];

const SERVICE: &[(&str, ListStrategy)] = &[
    ("spec.ports", ListStrategy::Merge(Some("port"))),
    ("status.conditions", ListStrategy::Merge(Some("type"))),
];

/// Validating- and MutatingWebhookConfiguration.
const WEBHOOK_CONFIGURATION: &[(&str, ListStrategy)] = &[
    ("webhooks", ListStrategy::Merge(Some("name"))),
    (
        "webhooks.matchConditions",
        ListStrategy::Merge(Some("name")),
    ),
];

/// batch/v1 Job: the pod template's lists with a merge key, and the status conditions.
const JOB: &[(&str, ListStrategy)] = &[
    (
        "spec.template.spec.containers",
        ListStrategy::Merge(Some("name")),
    ),
    (
        "spec.template.spec.containers.ports",
        ListStrategy::Merge(Some("containerPort")),
    ),
    (
        "spec.template.spec.containers.env",
        ListStrategy::Merge(Some("name")),
    ),
    (
        "spec.template.spec.containers.volumeMounts",
        ListStrategy::Merge(Some("mountPath")),
    ),
    (
        "spec.template.spec.containers.volumeDevices",
        ListStrategy::Merge(Some("devicePath")),
    ),
    (
        "spec.template.spec.initContainers",
        ListStrategy::Merge(Some("name")),
    ),
    (
        "spec.template.spec.initContainers.ports",
        ListStrategy::Merge(Some("containerPort")),
    ),
    (
        "spec.template.spec.initContainers.env",
        ListStrategy::Merge(Some("name")),
    ),
    (
        "spec.template.spec.initContainers.volumeMounts",
        ListStrategy::Merge(Some("mountPath")),
    ),
    (
        "spec.template.spec.initContainers.volumeDevices",
        ListStrategy::Merge(Some("devicePath")),
    ),
    (
        "spec.template.spec.volumes",
        ListStrategy::Merge(Some("name")),
    ),
    (
        "spec.template.spec.imagePullSecrets",
        ListStrategy::Merge(Some("name")),
    ),
    (
        "spec.template.spec.hostAliases",
        ListStrategy::Merge(Some("ip")),
    ),
    ("status.conditions", ListStrategy::Merge(Some("type"))),
];

const NAMESPACE: &[(&str, ListStrategy)] =
    &[("status.conditions", ListStrategy::Merge(Some("type")))];

/// The patch schema of a built-in type, by group and plural; None for types without one
/// (custom resources, which refuse strategic merge patches).
pub fn for_resource(group: &str, plural: &str) -> Option<Schema> {
    let fields: &'static [(&'static str, ListStrategy)] = match (group, plural) {
        ("", "services") => SERVICE,
        ("", "namespaces") => NAMESPACE,
        ("batch", "jobs") => JOB,
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations" | "mutatingwebhookconfigurations",
        ) => WEBHOOK_CONFIGURATION,
        ("", "configmaps" | "secrets" | "events")
        | ("discovery.k8s.io", "endpointslices")
        | ("coordination.k8s.io", "leases")
        | ("events.k8s.io", "events")
        | ("apiextensions.k8s.io", "customresourcedefinitions") => &[],
        _ => return None,
    };
    Some(Schema { fields })
}

/// The list strategies of one type.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    fields: &'static [(&'static str, ListStrategy)],
}

impl Schema {
    /// How the list at the dotted `path` (`spec.ports`) is patched.
    pub fn list(&self, path: &str) -> ListStrategy {
        OBJECT_META
            .iter()
            .chain(self.fields)
            .find(|(p, _)| *p == path)
            .map_or(ListStrategy::Replace, |(_, s)| *s)
    }
}
