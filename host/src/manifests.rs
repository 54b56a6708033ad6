//! `mcs-policy manifests`: the Validating/MutatingWebhookConfiguration that points an API server
//! (Karmada's, or any Kubernetes one serving the MultiClusterService CRD) at this server, with
//! Karmada's rule for MultiClusterServices.

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
    /// PEM file with the CA that signed the serving certificate (becomes `caBundle`).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: PathBuf,
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

/// The two configurations as one YAML stream.
pub fn render(args: &ManifestsArgs) -> Result<String, ManifestsError> {
    let pem = std::fs::read(&args.ca_bundle).map_err(|source| ManifestsError::Read {
        path: args.ca_bundle.display().to_string(),
        source,
    })?;
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(ManifestsError::NotPem(args.ca_bundle.display().to_string()));
    }
    let ca = base64::engine::general_purpose::STANDARD.encode(&pem);
    let validating = configuration(
        args,
        &ca,
        "ValidatingWebhookConfiguration",
        "/validate-multiclusterservice",
    );
    let mutating = configuration(
        args,
        &ca,
        "MutatingWebhookConfiguration",
        "/mutate-multiclusterservice",
    );
    let yaml =
        |v: &Value| serde_yaml::to_string(v).map_err(|e| ManifestsError::Yaml(e.to_string()));
    Ok(format!("{}---\n{}", yaml(&validating)?, yaml(&mutating)?))
}

fn client_config(args: &ManifestsArgs, ca: &str, path: &str) -> Value {
    match &args.url {
        Some(url) => {
            json!({ "url": format!("{}{path}", url.trim_end_matches('/')), "caBundle": ca })
        }
        None => json!({
            "service": {
                "namespace": args.namespace,
                "name": args.service,
                "path": path,
                "port": args.port,
            },
            "caBundle": ca,
        }),
    }
}

fn configuration(args: &ManifestsArgs, ca: &str, kind: &str, path: &str) -> Value {
    let mut webhook = json!({
        "name": "multiclusterservice.karmada.io",
        "rules": [{
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["networking.karmada.io"],
            "apiVersions": ["*"],
            "resources": ["multiclusterservices"],
            "scope": "Namespaced",
        }],
        "clientConfig": client_config(args, ca, path),
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 3,
    });
    if kind == "MutatingWebhookConfiguration" {
        webhook["reinvocationPolicy"] = json!("Never");
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": { "name": args.name, "labels": { "app.kubernetes.io/name": "mcs-policy" } },
        "webhooks": [webhook],
    })
}
