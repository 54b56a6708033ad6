//! The shapes of the built-in types kube-sim serves, as the Kubernetes OpenAPI describes them to
//! structured-merge-diff (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`, `+structType=atomic`, patch merge keys), with the Go encoding of each
//! field (`omitempty`, pointer, or always present) from `k8s.io/api`, and the fields each
//! strategy resets (`GetResetFields`), whose ownership writes never record.
//!
//! Fields not listed are not part of the type: the real server drops them when decoding, so
//! they are never owned. Atomic structs and lists are leaves; their insides do not matter.

use std::sync::{Arc, LazyLock};

use serde_json::json;

use super::shape::{Shape, Zero, field, list_map, map_of, set, structure};

/// A built-in type's shape and reset fields.
pub struct Builtin {
    pub shape: Arc<Shape>,
    /// Top-level fields the main resource cannot write (the status subresource's part).
    pub reset_main: &'static [&'static str],
    /// Top-level fields the status subresource cannot write.
    pub reset_status: &'static [&'static str],
}

/// The built-in type of `group` and `kind`, if kube-sim serves it.
pub fn lookup(group: &str, kind: &str) -> Option<&'static Builtin> {
    static TYPES: LazyLock<Vec<(&str, &str, Builtin)>> = LazyLock::new(|| {
        vec![
            ("", "Namespace", with_status(namespace(), &["spec"])),
            ("", "Service", with_status(service(), &["spec"])),
            ("", "ConfigMap", plain(config_map())),
            ("", "Secret", plain(secret())),
            ("", "Event", plain(core_event())),
            ("discovery.k8s.io", "EndpointSlice", plain(endpoint_slice())),
            ("batch", "Job", with_status(job(), &["spec"])),
            ("coordination.k8s.io", "Lease", plain(lease())),
            ("events.k8s.io", "Event", plain(events_event())),
            (
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                with_status(crd(), &["metadata", "spec"]),
            ),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                plain(webhook_configuration(false)),
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
                plain(webhook_configuration(true)),
            ),
        ]
    });
    TYPES
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, t)| t)
}

fn plain(shape: Shape) -> Builtin {
    Builtin {
        shape: Arc::new(shape),
        reset_main: &[],
        reset_status: &[],
    }
}

fn with_status(shape: Shape, reset_status: &'static [&'static str]) -> Builtin {
    Builtin {
        shape: Arc::new(shape),
        reset_main: &["status"],
        reset_status,
    }
}

/// A top-level object: apiVersion, kind, metadata and these fields.
fn object(mut fields: Vec<super::shape::Field>) -> Shape {
    fields.push(field("apiVersion", Shape::Leaf));
    fields.push(field("kind", Shape::Leaf));
    fields.push(field("metadata", object_meta()).always(Zero::Object));
    structure(fields)
}

/// `metav1.ObjectMeta`.
pub fn object_meta() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    structure(vec![
        leaf("name"),
        leaf("generateName"),
        leaf("namespace"),
        leaf("selfLink"),
        leaf("uid"),
        leaf("resourceVersion"),
        leaf("generation"),
        leaf("creationTimestamp").always(Zero::Null),
        leaf("deletionTimestamp").ptr(),
        leaf("deletionGracePeriodSeconds").ptr(),
        field("labels", map_of(Shape::Leaf)),
        field("annotations", map_of(Shape::Leaf)),
        // OwnerReference is `+structType=atomic`.
        field("ownerReferences", list_map(Shape::Leaf, &["uid"])),
        field("finalizers", set()),
        leaf("managedFields"),
    ])
}

/// `metav1.Condition`, keyed by `type` where listed.
fn condition() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    structure(vec![
        leaf("type").always(Zero::Str),
        leaf("status").always(Zero::Str),
        leaf("observedGeneration"),
        leaf("lastTransitionTime").always(Zero::Null),
        leaf("reason").always(Zero::Str),
        leaf("message").always(Zero::Str),
    ])
}

fn namespace() -> Shape {
    let condition = structure(vec![
        field("type", Shape::Leaf).always(Zero::Str),
        field("status", Shape::Leaf).always(Zero::Str),
        field("lastTransitionTime", Shape::Leaf).always(Zero::Null),
        field("reason", Shape::Leaf),
        field("message", Shape::Leaf),
    ]);
    object(vec![
        field("spec", structure(vec![field("finalizers", Shape::Leaf)])).always(Zero::Object),
        field(
            "status",
            structure(vec![
                field("phase", Shape::Leaf),
                field("conditions", list_map(condition, &["type"])),
            ]),
        )
        .always(Zero::Object),
    ])
}

fn service() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let port = structure(vec![
        leaf("name"),
        leaf("protocol"),
        leaf("appProtocol").ptr(),
        leaf("port").always(Zero::Int),
        leaf("targetPort").always(Zero::Int),
        leaf("nodePort"),
    ]);
    let mut ports = list_map(port, &["port", "protocol"]);
    if let Shape::List(_, super::shape::ListKind::Map { defaults, .. }) = &mut ports {
        defaults.insert("protocol".into(), json!("TCP"));
    }
    let affinity = structure(vec![
        field("clientIP", structure(vec![leaf("timeoutSeconds").ptr()])).ptr(),
    ]);
    let spec = structure(vec![
        field("ports", ports),
        leaf("selector"),
        leaf("clusterIP"),
        leaf("clusterIPs"),
        leaf("type"),
        leaf("externalIPs"),
        leaf("sessionAffinity"),
        leaf("loadBalancerIP"),
        leaf("loadBalancerSourceRanges"),
        leaf("externalName"),
        leaf("externalTrafficPolicy"),
        leaf("healthCheckNodePort"),
        leaf("publishNotReadyAddresses"),
        field("sessionAffinityConfig", affinity).ptr(),
        leaf("ipFamilies"),
        leaf("ipFamilyPolicy").ptr(),
        leaf("allocateLoadBalancerNodePorts").ptr(),
        leaf("loadBalancerClass").ptr(),
        leaf("internalTrafficPolicy").ptr(),
        leaf("trafficDistribution").ptr(),
    ]);
    let status = structure(vec![
        field("loadBalancer", structure(vec![leaf("ingress")])).always(Zero::Object),
        field("conditions", list_map(condition(), &["type"])),
    ]);
    object(vec![
        field("spec", spec).always(Zero::Object),
        field("status", status).always(Zero::Object),
    ])
}

fn config_map() -> Shape {
    object(vec![
        field("immutable", Shape::Leaf).ptr(),
        field("data", map_of(Shape::Leaf)),
        field("binaryData", map_of(Shape::Leaf)),
    ])
}

/// `stringData` is merged into `data` when decoded; an apply may still carry it.
fn secret() -> Shape {
    object(vec![
        field("immutable", Shape::Leaf).ptr(),
        field("data", map_of(Shape::Leaf)),
        field("stringData", map_of(Shape::Leaf)),
        field("type", Shape::Leaf),
    ])
}

fn event_source() -> Shape {
    structure(vec![
        field("component", Shape::Leaf),
        field("host", Shape::Leaf),
    ])
}

/// core/v1 Event. `ObjectReference` is `+structType=atomic`.
fn core_event() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let series = structure(vec![
        leaf("count"),
        leaf("lastObservedTime").always(Zero::Null),
    ]);
    object(vec![
        leaf("involvedObject").always(Zero::Object),
        leaf("reason"),
        leaf("message"),
        field("source", event_source()).always(Zero::Object),
        leaf("firstTimestamp").always(Zero::Null),
        leaf("lastTimestamp").always(Zero::Null),
        leaf("count"),
        leaf("type"),
        leaf("eventTime").always(Zero::Null),
        field("series", series).ptr(),
        leaf("action"),
        leaf("related").ptr(),
        leaf("reportingComponent").always(Zero::Str),
        leaf("reportingInstance").always(Zero::Str),
    ])
}

/// events.k8s.io/v1 Event.
fn events_event() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let series = structure(vec![
        leaf("count").always(Zero::Int),
        leaf("lastObservedTime").always(Zero::Null),
    ]);
    object(vec![
        leaf("eventTime").always(Zero::Null),
        field("series", series).ptr(),
        leaf("reportingController"),
        leaf("reportingInstance"),
        leaf("action"),
        leaf("reason"),
        leaf("regarding").always(Zero::Object),
        leaf("related").ptr(),
        leaf("note"),
        leaf("type"),
        field("deprecatedSource", event_source()).always(Zero::Object),
        leaf("deprecatedFirstTimestamp").always(Zero::Null),
        leaf("deprecatedLastTimestamp").always(Zero::Null),
        leaf("deprecatedCount"),
    ])
}

/// discovery/v1 EndpointSlice: `endpoints` and `ports` are atomic lists, encoded even when nil.
fn endpoint_slice() -> Shape {
    object(vec![
        field("addressType", Shape::Leaf).always(Zero::Str),
        field("endpoints", Shape::Leaf).always(Zero::Null),
        field("ports", Shape::Leaf).always(Zero::Null),
    ])
}

/// coordination/v1 Lease: every spec field is a pointer.
fn lease() -> Shape {
    let names = [
        "holderIdentity",
        "leaseDurationSeconds",
        "acquireTime",
        "renewTime",
        "leaseTransitions",
        "strategy",
        "preferredHolder",
    ];
    let spec = structure(names.iter().map(|n| field(n, Shape::Leaf).ptr()).collect());
    object(vec![field("spec", spec).always(Zero::Object)])
}

/// admissionregistration/v1 Validating- and MutatingWebhookConfiguration: `webhooks` and
/// each webhook's `matchConditions` are keyed by `name`; `rules` and `admissionReviewVersions`
/// are atomic lists, the label selectors atomic structs.
fn webhook_configuration(mutating: bool) -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let service = structure(vec![
        leaf("namespace").always(Zero::Str),
        leaf("name").always(Zero::Str),
        leaf("path").ptr(),
        leaf("port").ptr(),
    ]);
    let client_config = structure(vec![
        leaf("url").ptr(),
        field("service", service).ptr(),
        leaf("caBundle"),
    ]);
    let condition = structure(vec![
        leaf("name").always(Zero::Str),
        leaf("expression").always(Zero::Str),
    ]);
    let mut webhook = vec![
        leaf("name").always(Zero::Str),
        field("clientConfig", client_config).always(Zero::Object),
        leaf("rules"),
        leaf("failurePolicy").ptr(),
        leaf("matchPolicy").ptr(),
        leaf("namespaceSelector").ptr(),
        leaf("objectSelector").ptr(),
        leaf("sideEffects").always(Zero::Null),
        leaf("timeoutSeconds").ptr(),
        leaf("admissionReviewVersions").always(Zero::Null),
    ];
    if mutating {
        webhook.push(leaf("reinvocationPolicy").ptr());
    }
    webhook.push(field("matchConditions", list_map(condition, &["name"])));
    object(vec![field(
        "webhooks",
        list_map(structure(webhook), &["name"]),
    )])
}

/// core/v1 `Container` (containers, init containers). Probes, lifecycle hooks and the security
/// context are owned as wholes (their insides are granular in the real schema).
fn container() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let mut ports = list_map(
        structure(vec![
            leaf("name"),
            leaf("hostPort"),
            leaf("containerPort").always(Zero::Int),
            leaf("protocol"),
            leaf("hostIP"),
        ]),
        &["containerPort", "protocol"],
    );
    if let Shape::List(_, super::shape::ListKind::Map { defaults, .. }) = &mut ports {
        defaults.insert("protocol".into(), json!("TCP"));
    }
    let env = structure(vec![
        leaf("name").always(Zero::Str),
        leaf("value"),
        leaf("valueFrom").ptr(),
    ]);
    let resources = structure(vec![leaf("limits"), leaf("requests"), leaf("claims")]);
    let mount = structure(vec![
        leaf("name").always(Zero::Str),
        leaf("readOnly"),
        leaf("recursiveReadOnly").ptr(),
        leaf("mountPath").always(Zero::Str),
        leaf("subPath"),
        leaf("mountPropagation").ptr(),
        leaf("subPathExpr"),
    ]);
    structure(vec![
        leaf("name").always(Zero::Str),
        leaf("image"),
        leaf("command"),
        leaf("args"),
        leaf("workingDir"),
        field("ports", ports),
        leaf("envFrom"),
        field("env", list_map(env, &["name"])),
        field("resources", resources).always(Zero::Object),
        leaf("resizePolicy"),
        leaf("restartPolicy").ptr(),
        leaf("restartPolicyRules"),
        field("volumeMounts", list_map(mount, &["mountPath"])),
        field("volumeDevices", list_map(Shape::Leaf, &["devicePath"])),
        leaf("livenessProbe").ptr(),
        leaf("readinessProbe").ptr(),
        leaf("startupProbe").ptr(),
        leaf("lifecycle").ptr(),
        leaf("terminationMessagePath"),
        leaf("terminationMessagePolicy"),
        leaf("imagePullPolicy"),
        leaf("securityContext").ptr(),
        leaf("stdin"),
        leaf("stdinOnce"),
        leaf("tty"),
    ])
}

/// core/v1 `PodSpec`, as a pod template carries it. Volumes, affinity, tolerations and the
/// other nested structures are owned as wholes (granular in the real schema).
fn pod_spec() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let security = structure(vec![
        leaf("seLinuxOptions").ptr(),
        leaf("windowsOptions").ptr(),
        leaf("runAsUser").ptr(),
        leaf("runAsGroup").ptr(),
        leaf("runAsNonRoot").ptr(),
        leaf("supplementalGroups"),
        leaf("supplementalGroupsPolicy").ptr(),
        leaf("fsGroup").ptr(),
        leaf("sysctls"),
        leaf("fsGroupChangePolicy").ptr(),
        leaf("seccompProfile").ptr(),
        leaf("appArmorProfile").ptr(),
        leaf("seLinuxChangePolicy").ptr(),
    ]);
    structure(vec![
        field("volumes", list_map(Shape::Leaf, &["name"])),
        field("initContainers", list_map(container(), &["name"])),
        field("containers", list_map(container(), &["name"])).always(Zero::Null),
        field("ephemeralContainers", list_map(Shape::Leaf, &["name"])),
        leaf("restartPolicy"),
        leaf("terminationGracePeriodSeconds").ptr(),
        leaf("activeDeadlineSeconds").ptr(),
        leaf("dnsPolicy"),
        leaf("nodeSelector"),
        leaf("serviceAccountName"),
        leaf("serviceAccount"),
        leaf("automountServiceAccountToken").ptr(),
        leaf("nodeName"),
        leaf("hostNetwork"),
        leaf("hostPID"),
        leaf("hostIPC"),
        leaf("shareProcessNamespace").ptr(),
        field("securityContext", security).ptr(),
        field("imagePullSecrets", list_map(Shape::Leaf, &["name"])),
        leaf("hostname"),
        leaf("subdomain"),
        leaf("affinity").ptr(),
        leaf("schedulerName"),
        leaf("tolerations"),
        field("hostAliases", list_map(Shape::Leaf, &["ip"])),
        leaf("priorityClassName"),
        leaf("priority").ptr(),
        leaf("dnsConfig").ptr(),
        leaf("readinessGates"),
        leaf("runtimeClassName").ptr(),
        leaf("enableServiceLinks").ptr(),
        leaf("preemptionPolicy").ptr(),
        leaf("overhead"),
        field(
            "topologySpreadConstraints",
            list_map(Shape::Leaf, &["topologyKey", "whenUnsatisfiable"]),
        ),
        leaf("setHostnameAsFQDN").ptr(),
        leaf("os").ptr(),
        leaf("hostUsers").ptr(),
        field("schedulingGates", list_map(Shape::Leaf, &["name"])),
        field("resourceClaims", list_map(Shape::Leaf, &["name"])),
        leaf("resources").ptr(),
        leaf("hostnameOverride").ptr(),
    ])
}

/// batch/v1 Job. The label selector is `+structType=atomic`; `status.conditions` is an atomic
/// list (`+listType=atomic`).
fn job() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let template = structure(vec![
        // ObjectMeta, whose zero creationTimestamp 1.36 omits (no `f:metadata` for `{}`).
        field(
            "metadata",
            structure(vec![
                leaf("name"),
                leaf("generateName"),
                leaf("namespace"),
                field("labels", map_of(Shape::Leaf)),
                field("annotations", map_of(Shape::Leaf)),
                field("finalizers", set()),
            ]),
        ),
        field("spec", pod_spec()).always(Zero::Object),
    ]);
    let spec = structure(vec![
        leaf("parallelism").ptr(),
        leaf("completions").ptr(),
        leaf("activeDeadlineSeconds").ptr(),
        leaf("podFailurePolicy").ptr(),
        leaf("successPolicy").ptr(),
        leaf("backoffLimit").ptr(),
        leaf("backoffLimitPerIndex").ptr(),
        leaf("maxFailedIndexes").ptr(),
        leaf("selector").ptr(),
        leaf("manualSelector").ptr(),
        field("template", template).always(Zero::Object),
        leaf("ttlSecondsAfterFinished").ptr(),
        leaf("completionMode").ptr(),
        leaf("suspend").ptr(),
        leaf("podReplacementPolicy").ptr(),
        leaf("managedBy").ptr(),
    ]);
    let status = structure(vec![
        leaf("conditions"),
        leaf("startTime").ptr(),
        leaf("completionTime").ptr(),
        leaf("active"),
        leaf("succeeded"),
        leaf("failed"),
        leaf("terminating").ptr(),
        leaf("completedIndexes"),
        leaf("failedIndexes").ptr(),
        leaf("uncountedTerminatedPods").ptr(),
        leaf("ready").ptr(),
    ]);
    object(vec![
        field("spec", spec).always(Zero::Object),
        field("status", status).always(Zero::Object),
    ])
}

/// apiextensions/v1 CustomResourceDefinition (`versions` is atomic; `status.conditions` is
/// encoded even when nil).
fn crd() -> Shape {
    let leaf = |name| field(name, Shape::Leaf);
    let names = || {
        structure(vec![
            leaf("plural").always(Zero::Str),
            leaf("singular"),
            leaf("shortNames"),
            leaf("kind").always(Zero::Str),
            leaf("listKind"),
            leaf("categories"),
        ])
    };
    let service = structure(vec![
        leaf("namespace").always(Zero::Str),
        leaf("name").always(Zero::Str),
        leaf("path").ptr(),
        leaf("port").ptr(),
    ]);
    let client_config = structure(vec![
        leaf("url").ptr(),
        field("service", service).ptr(),
        leaf("caBundle"),
    ]);
    let webhook = structure(vec![
        field("clientConfig", client_config).ptr(),
        leaf("conversionReviewVersions").always(Zero::Null),
    ]);
    let conversion = structure(vec![
        leaf("strategy").always(Zero::Str),
        field("webhook", webhook).ptr(),
    ]);
    let spec = structure(vec![
        leaf("group").always(Zero::Str),
        field("names", names()).always(Zero::Object),
        leaf("scope").always(Zero::Str),
        leaf("versions").always(Zero::Null),
        field("conversion", conversion).ptr(),
        leaf("preserveUnknownFields"),
    ]);
    let condition = structure(vec![
        leaf("type").always(Zero::Str),
        leaf("status").always(Zero::Str),
        leaf("lastTransitionTime").always(Zero::Null),
        leaf("reason"),
        leaf("message"),
    ]);
    let status = structure(vec![
        field("conditions", list_map(condition, &["type"])).always(Zero::Null),
        field("acceptedNames", names()).always(Zero::Object),
        leaf("storedVersions").always(Zero::Null),
    ]);
    object(vec![
        field("spec", spec).always(Zero::Object),
        field("status", status).always(Zero::Object),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::shape::{ListKind, Presence};

    #[test]
    fn service_ports_are_keyed_by_port_and_protocol_with_tcp_by_default() {
        let service = lookup("", "Service").unwrap();
        let ports = service
            .shape
            .child("f:spec")
            .unwrap()
            .child("f:ports")
            .unwrap();
        let Shape::List(_, ListKind::Map { keys, defaults }) = ports else {
            panic!("ports is a list map: {ports:?}");
        };
        assert_eq!(keys, &["port", "protocol"]);
        assert_eq!(defaults["protocol"], "TCP");
        assert_eq!(service.reset_main, &["status"]);
    }

    #[test]
    fn endpoint_slice_lists_are_atomic_and_always_encoded() {
        let slice = lookup("discovery.k8s.io", "EndpointSlice").unwrap();
        assert_eq!(slice.shape.child("f:endpoints"), Some(&Shape::Leaf));
        let Shape::Struct(s) = &*slice.shape else {
            panic!("a struct");
        };
        assert_eq!(
            s.field("ports").unwrap().presence,
            Presence::Always(Zero::Null)
        );
        assert!(lookup("", "Pod").is_none());
    }
}
