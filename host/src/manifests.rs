//! `mcs-policy manifests`: the Validating/MutatingWebhookConfiguration that points an API server
//! (Karmada's, or any Kubernetes one serving the MultiClusterService CRD) at this server, with
//! Karmada's rule for MultiClusterServices, and in the validating one a second webhook for the
//! upstream Multi-Cluster Services API's ServiceExports (`multicluster.x-k8s.io`). An API server
//! accepts a rule for a resource it does not serve (no CRD installed): that webhook is then
//! never called.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct ManifestsArgs {
    /// Namespace of the Service in front of the webhook server.
    #[arg(
        long,
        value_name = "NS",
        required_unless_present = "url",
        requires = "service"
    )]
    pub namespace: Option<String>,
    /// Name of that Service.
    #[arg(
        long,
        value_name = "NAME",
        required_unless_present = "url",
        requires = "namespace"
    )]
    pub service: Option<String>,
    /// Base URL of the server instead of a Service reference (e.g.
    /// `https://mcs-policy.example.com:8443`), for API servers that cannot resolve the
    /// Service (Karmada's apiserver looks Services up in its own cluster). The paths are
    /// appended.
    #[arg(long, value_name = "URL", conflicts_with_all = ["namespace", "service"])]
    pub url: Option<String>,
    /// PEM file with the CA that signed the serving certificate (becomes `caBundle`). Without
    /// it the webhooks have no `caBundle`: for `serve --certificate-secret`, which patches its
    /// own CA in once it listens.
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,
    /// Port of the Service.
    #[arg(long, default_value_t = 443)]
    pub port: u16,
    /// Name of the two configuration objects.
    #[arg(long, default_value = "mcs-policy")]
    pub name: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestsError {
    #[error("reading CA bundle {path} failed")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("CA bundle {0} holds no PEM certificate")]
    NotPem(String),
    #[error("rendering YAML failed: {0}")]
    Yaml(String),
}

/// Where an API server sends the admission requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A Service of the API server's own cluster.
    Service {
        namespace: String,
        name: String,
        port: u16,
    },
    /// A base URL; the paths are appended.
    Url(String),
}

/// The label that marks the configurations as ours: `mcs-policy unregister` deletes only
/// configurations that carry it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "mcs-policy");

/// The two configurations as one YAML stream.
pub fn render(args: &ManifestsArgs) -> Result<String, ManifestsError> {
    let pem = match &args.ca_bundle {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|source| ManifestsError::Read {
                path: path.display().to_string(),
                source,
            })?;
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                return Err(ManifestsError::NotPem(path.display().to_string()));
            }
            Some(pem)
        }
        None => None,
    };
    let endpoint = match &args.url {
        Some(url) => Endpoint::Url(url.clone()),
        None => Endpoint::Service {
            namespace: args.namespace.clone().unwrap_or_default(),
            name: args.service.clone().unwrap_or_default(),
            port: args.port,
        },
    };
    let [validating, mutating] = configurations(&args.name, &endpoint, pem.as_deref());
    let yaml =
        |v: &Value| serde_yaml::to_string(v).map_err(|e| ManifestsError::Yaml(e.to_string()));
    Ok(format!("{}---\n{}", yaml(&validating)?, yaml(&mutating)?))
}

/// The ValidatingWebhookConfiguration and the MutatingWebhookConfiguration named `name`, with
/// Karmada's rule for MultiClusterServices (and, validating only, the ServiceExport webhook),
/// sending to `endpoint` and trusting the PEM CAs `ca_pem` (their `caBundle`; none without).
pub fn configurations(name: &str, endpoint: &Endpoint, ca_pem: Option<&[u8]>) -> [Value; 2] {
    let ca = ca_pem.map(|pem| base64::engine::general_purpose::STANDARD.encode(pem));
    let ca = ca.as_deref();
    [
        configuration(
            name,
            endpoint,
            ca,
            "ValidatingWebhookConfiguration",
            "/validate-multiclusterservice",
        ),
        configuration(
            name,
            endpoint,
            ca,
            "MutatingWebhookConfiguration",
            "/mutate-multiclusterservice",
        ),
    ]
}

fn client_config(endpoint: &Endpoint, ca: Option<&str>, path: &str) -> Value {
    let mut config = match endpoint {
        Endpoint::Url(url) => json!({ "url": format!("{}{path}", url.trim_end_matches('/')) }),
        Endpoint::Service {
            namespace,
            name,
            port,
        } => json!({
            "service": {
                "namespace": namespace,
                "name": name,
                "path": path,
                "port": port,
            },
        }),
    };
    if let Some(ca) = ca {
        config["caBundle"] = json!(ca);
    }
    config
}

/// The webhook Karmada's own configurations name for MultiClusterServices, in both.
pub const MCS_WEBHOOK: &str = "multiclusterservice.karmada.io";
/// The validating webhook for the upstream Multi-Cluster Services API's ServiceExports
/// (`multicluster.x-k8s.io`, KEP-1645), in the ValidatingWebhookConfiguration only.
pub const SERVICE_EXPORT_WEBHOOK: &str = "serviceexport.multicluster.x-k8s.io";

/// One webhook entry: CREATE and UPDATE of the namespaced `resources` of `group` at
/// `versions`, sent to `client_config`. Every entry fails closed (`failurePolicy: Fail`) and
/// matches equivalent requests (`matchPolicy: Equivalent`, the API server's default, written
/// out): a request through another version of the same resource is converted and sent too.
fn webhook(
    name: &str,
    group: &str,
    versions: &[&str],
    resource: &str,
    client_config: &Value,
) -> Value {
    json!({
        "name": name,
        "rules": [{
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": [group],
            "apiVersions": versions,
            "resources": [resource],
            "scope": "Namespaced",
        }],
        "clientConfig": client_config,
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 3,
    })
}

fn configuration(
    name: &str,
    endpoint: &Endpoint,
    ca: Option<&str>,
    kind: &str,
    path: &str,
) -> Value {
    let client_config = client_config(endpoint, ca, path);
    let mut mcs = webhook(
        MCS_WEBHOOK,
        "networking.karmada.io",
        &["*"],
        "multiclusterservices",
        &client_config,
    );
    let webhooks = if kind == "MutatingWebhookConfiguration" {
        mcs["reinvocationPolicy"] = json!("Never");
        vec![mcs]
    } else {
        // ServiceExports are validated, never defaulted: both served versions of mcs-api's CRD
        // (policies/crds/), to the same validating path.
        let export = webhook(
            SERVICE_EXPORT_WEBHOOK,
            "multicluster.x-k8s.io",
            &["v1alpha1", "v1beta1"],
            "serviceexports",
            &client_config,
        );
        vec![mcs, export]
    };
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": { "app.kubernetes.io/name": "mcs-policy", MANAGED_BY.0: MANAGED_BY.1 },
        },
        "webhooks": webhooks,
    })
}
