//! The Go types of the built-in kinds kube-sim serves, field by field in declaration order
//! (`k8s.io/api` 1.36 `core/v1`, `discovery/v1`, `coordination/v1`, `events/v1`,
//! `admissionregistration/v1`;
//! `k8s.io/apiextensions-apiserver` `apiextensions/v1`).
//!
//! Not typed (decoded as anything): the insides of a CRD version's `schema`, `subresources`,
//! `additionalPrinterColumns` and `selectableFields`, and of its conversion webhook.

use super::catalog::{
    any, int32, int64, map, micro_time, named, object, ptr, slice, string, structure, time,
};
use super::{Custom, GoType};

/// `metav1.Condition`.
fn condition() -> GoType {
    structure(
        "v1.Condition",
        vec![
            ("type", string()),
            ("status", named("v1.ConditionStatus")),
            ("observedGeneration", int64()),
            ("lastTransitionTime", time()),
            ("reason", string()),
            ("message", string()),
        ],
    )
}

fn object_reference() -> GoType {
    structure(
        "v1.ObjectReference",
        vec![
            ("kind", string()),
            ("namespace", string()),
            ("name", string()),
            ("uid", named("types.UID")),
            ("apiVersion", string()),
            ("resourceVersion", string()),
            ("fieldPath", string()),
        ],
    )
}

pub(super) fn namespace() -> GoType {
    let condition = structure(
        "v1.NamespaceCondition",
        vec![
            ("type", named("v1.NamespaceConditionType")),
            ("status", named("v1.ConditionStatus")),
            ("lastTransitionTime", time()),
            ("reason", string()),
            ("message", string()),
        ],
    );
    object(
        "v1.Namespace",
        vec![
            (
                "spec",
                structure(
                    "v1.NamespaceSpec",
                    vec![("finalizers", slice(named("v1.FinalizerName")))],
                ),
            ),
            (
                "status",
                structure(
                    "v1.NamespaceStatus",
                    vec![
                        ("phase", named("v1.NamespacePhase")),
                        ("conditions", slice(condition)),
                    ],
                ),
            ),
        ],
    )
}

pub(super) fn service() -> GoType {
    let port = structure(
        "v1.ServicePort",
        vec![
            ("name", string()),
            ("protocol", named("v1.Protocol")),
            ("appProtocol", ptr(string())),
            ("port", int32()),
            ("targetPort", GoType::Custom(Custom::IntOrString)),
            ("nodePort", int32()),
        ],
    );
    let client_ip = structure("v1.ClientIPConfig", vec![("timeoutSeconds", ptr(int32()))]);
    let affinity = structure(
        "v1.SessionAffinityConfig",
        vec![("clientIP", ptr(client_ip))],
    );
    let spec = structure(
        "v1.ServiceSpec",
        vec![
            ("ports", slice(port)),
            ("selector", map(string())),
            ("clusterIP", string()),
            ("clusterIPs", slice(string())),
            ("type", named("v1.ServiceType")),
            ("externalIPs", slice(string())),
            ("sessionAffinity", named("v1.ServiceAffinity")),
            ("loadBalancerIP", string()),
            ("loadBalancerSourceRanges", slice(string())),
            ("externalName", string()),
            (
                "externalTrafficPolicy",
                named("v1.ServiceExternalTrafficPolicy"),
            ),
            ("healthCheckNodePort", int32()),
            ("publishNotReadyAddresses", GoType::Bool),
            ("sessionAffinityConfig", ptr(affinity)),
            ("ipFamilies", slice(named("v1.IPFamily"))),
            ("ipFamilyPolicy", ptr(named("v1.IPFamilyPolicy"))),
            ("allocateLoadBalancerNodePorts", ptr(GoType::Bool)),
            ("loadBalancerClass", ptr(string())),
            (
                "internalTrafficPolicy",
                ptr(named("v1.ServiceInternalTrafficPolicy")),
            ),
            ("trafficDistribution", ptr(string())),
        ],
    );
    let port_status = structure(
        "v1.PortStatus",
        vec![
            ("port", int32()),
            ("protocol", named("v1.Protocol")),
            ("error", ptr(string())),
        ],
    );
    let ingress = structure(
        "v1.LoadBalancerIngress",
        vec![
            ("ip", string()),
            ("hostname", string()),
            ("ipMode", ptr(named("v1.LoadBalancerIPMode"))),
            ("ports", slice(port_status)),
        ],
    );
    let status = structure(
        "v1.ServiceStatus",
        vec![
            (
                "loadBalancer",
                structure("v1.LoadBalancerStatus", vec![("ingress", slice(ingress))]),
            ),
            ("conditions", slice(condition())),
        ],
    );
    object("v1.Service", vec![("spec", spec), ("status", status)])
}

pub(super) fn config_map() -> GoType {
    object(
        "v1.ConfigMap",
        vec![
            ("immutable", ptr(GoType::Bool)),
            ("data", map(string())),
            ("binaryData", map(GoType::Bytes)),
        ],
    )
}

pub(super) fn secret() -> GoType {
    object(
        "v1.Secret",
        vec![
            ("immutable", ptr(GoType::Bool)),
            ("data", map(GoType::Bytes)),
            ("stringData", map(string())),
            ("type", named("v1.SecretType")),
        ],
    )
}

fn event_source() -> GoType {
    structure(
        "v1.EventSource",
        vec![("component", string()), ("host", string())],
    )
}

pub(super) fn core_event() -> GoType {
    let series = structure(
        "v1.EventSeries",
        vec![("count", int32()), ("lastObservedTime", micro_time())],
    );
    object(
        "v1.Event",
        vec![
            ("involvedObject", object_reference()),
            ("reason", string()),
            ("message", string()),
            ("source", event_source()),
            ("firstTimestamp", time()),
            ("lastTimestamp", time()),
            ("count", int32()),
            ("type", string()),
            ("eventTime", micro_time()),
            ("series", ptr(series)),
            ("action", string()),
            ("related", ptr(object_reference())),
            ("reportingComponent", string()),
            ("reportingInstance", string()),
        ],
    )
}

pub(super) fn events_event() -> GoType {
    let series = structure(
        "v1.EventSeries",
        vec![("count", int32()), ("lastObservedTime", micro_time())],
    );
    object(
        "v1.Event",
        vec![
            ("eventTime", micro_time()),
            ("series", ptr(series)),
            ("reportingController", string()),
            ("reportingInstance", string()),
            ("action", string()),
            ("reason", string()),
            ("regarding", object_reference()),
            ("related", ptr(object_reference())),
            ("note", string()),
            ("type", string()),
            ("deprecatedSource", event_source()),
            ("deprecatedFirstTimestamp", time()),
            ("deprecatedLastTimestamp", time()),
            ("deprecatedCount", int32()),
        ],
    )
}

pub(super) fn endpoint_slice() -> GoType {
    let conditions = structure(
        "v1.EndpointConditions",
        vec![
            ("ready", ptr(GoType::Bool)),
            ("serving", ptr(GoType::Bool)),
            ("terminating", ptr(GoType::Bool)),
        ],
    );
    let for_zone = structure("v1.ForZone", vec![("name", string())]);
    let for_node = structure("v1.ForNode", vec![("name", string())]);
    let hints = structure(
        "v1.EndpointHints",
        vec![("forZones", slice(for_zone)), ("forNodes", slice(for_node))],
    );
    let endpoint = structure(
        "v1.Endpoint",
        vec![
            ("addresses", slice(string())),
            ("conditions", conditions),
            ("hostname", ptr(string())),
            ("targetRef", ptr(object_reference())),
            ("deprecatedTopology", map(string())),
            ("nodeName", ptr(string())),
            ("zone", ptr(string())),
            ("hints", ptr(hints)),
        ],
    );
    let port = structure(
        "v1.EndpointPort",
        vec![
            ("name", ptr(string())),
            ("protocol", ptr(named("v1.Protocol"))),
            ("port", ptr(int32())),
            ("appProtocol", ptr(string())),
        ],
    );
    object(
        "v1.EndpointSlice",
        vec![
            ("addressType", named("v1.AddressType")),
            ("endpoints", slice(endpoint)),
            ("ports", slice(port)),
        ],
    )
}

pub(super) fn lease() -> GoType {
    let spec = structure(
        "v1.LeaseSpec",
        vec![
            ("holderIdentity", ptr(string())),
            ("leaseDurationSeconds", ptr(int32())),
            ("acquireTime", ptr(micro_time())),
            ("renewTime", ptr(micro_time())),
            ("leaseTransitions", ptr(int32())),
            ("strategy", ptr(named("v1.CoordinatedLeaseStrategy"))),
            ("preferredHolder", ptr(string())),
        ],
    );
    object("v1.Lease", vec![("spec", spec)])
}

pub(super) fn crd() -> GoType {
    let names = || {
        structure(
            "v1.CustomResourceDefinitionNames",
            vec![
                ("plural", string()),
                ("singular", string()),
                ("shortNames", slice(string())),
                ("kind", string()),
                ("listKind", string()),
                ("categories", slice(string())),
            ],
        )
    };
    let version = structure(
        "v1.CustomResourceDefinitionVersion",
        vec![
            ("name", string()),
            ("served", GoType::Bool),
            ("storage", GoType::Bool),
            ("deprecated", GoType::Bool),
            ("deprecationWarning", ptr(string())),
            ("schema", any()),
            ("subresources", any()),
            ("additionalPrinterColumns", any()),
            ("selectableFields", any()),
        ],
    );
    let conversion = structure(
        "v1.CustomResourceConversion",
        vec![
            ("strategy", named("v1.ConversionStrategyType")),
            ("webhook", any()),
        ],
    );
    let spec = structure(
        "v1.CustomResourceDefinitionSpec",
        vec![
            ("group", string()),
            ("names", names()),
            ("scope", named("v1.ResourceScope")),
            ("versions", slice(version)),
            ("conversion", ptr(conversion)),
            ("preserveUnknownFields", GoType::Bool),
        ],
    );
    let condition = structure(
        "v1.CustomResourceDefinitionCondition",
        vec![
            ("type", named("v1.CustomResourceDefinitionConditionType")),
            ("status", named("v1.ConditionStatus")),
            ("lastTransitionTime", time()),
            ("reason", string()),
            ("message", string()),
        ],
    );
    let status = structure(
        "v1.CustomResourceDefinitionStatus",
        vec![
            ("conditions", slice(condition)),
            ("acceptedNames", names()),
            ("storedVersions", slice(string())),
        ],
    );
    object(
        "v1.CustomResourceDefinition",
        vec![("spec", spec), ("status", status)],
    )
}

/// `metav1.LabelSelector`.
fn label_selector() -> GoType {
    let requirement = structure(
        "v1.LabelSelectorRequirement",
        vec![
            ("key", string()),
            ("operator", named("v1.LabelSelectorOperator")),
            ("values", slice(string())),
        ],
    );
    structure(
        "v1.LabelSelector",
        vec![
            ("matchLabels", map(string())),
            ("matchExpressions", slice(requirement)),
        ],
    )
}

/// `admissionregistration/v1` ValidatingWebhookConfiguration (`mutating` false) or
/// MutatingWebhookConfiguration: a webhook's fields, `reinvocationPolicy` for mutating ones.
fn webhook_configuration(mutating: bool) -> GoType {
    let service = structure(
        "v1.ServiceReference",
        vec![
            ("namespace", string()),
            ("name", string()),
            ("path", ptr(string())),
            ("port", ptr(int32())),
        ],
    );
    let client_config = structure(
        "v1.WebhookClientConfig",
        vec![
            ("url", ptr(string())),
            ("service", ptr(service)),
            ("caBundle", GoType::Bytes),
        ],
    );
    // `Rule` is inlined.
    let rule = structure(
        "v1.RuleWithOperations",
        vec![
            ("operations", slice(named("v1.OperationType"))),
            ("apiGroups", slice(string())),
            ("apiVersions", slice(string())),
            ("resources", slice(string())),
            ("scope", ptr(named("v1.ScopeType"))),
        ],
    );
    let condition = structure(
        "v1.MatchCondition",
        vec![("name", string()), ("expression", string())],
    );
    let mut fields = vec![
        ("name", string()),
        ("clientConfig", client_config),
        ("rules", slice(rule)),
        ("failurePolicy", ptr(named("v1.FailurePolicyType"))),
        ("matchPolicy", ptr(named("v1.MatchPolicyType"))),
        ("namespaceSelector", ptr(label_selector())),
        ("objectSelector", ptr(label_selector())),
        ("sideEffects", ptr(named("v1.SideEffectClass"))),
        ("timeoutSeconds", ptr(int32())),
        ("admissionReviewVersions", slice(string())),
    ];
    if mutating {
        fields.push((
            "reinvocationPolicy",
            ptr(named("v1.ReinvocationPolicyType")),
        ));
    }
    fields.push(("matchConditions", slice(condition)));
    let (kind, webhook) = if mutating {
        ("v1.MutatingWebhookConfiguration", "v1.MutatingWebhook")
    } else {
        ("v1.ValidatingWebhookConfiguration", "v1.ValidatingWebhook")
    };
    object(kind, vec![("webhooks", slice(structure(webhook, fields)))])
}

pub(super) fn validating_webhook_configuration() -> GoType {
    webhook_configuration(false)
}

pub(super) fn mutating_webhook_configuration() -> GoType {
    webhook_configuration(true)
}
