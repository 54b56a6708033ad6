//! The flags of `serve --certificate-secret` and of `mcs-policy unregister`.

use std::path::PathBuf;
use std::time::Duration;

use crate::duration::parse_go_duration;

/// `serve`'s flags for a self-managed certificate.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Self-managed certificate and webhook configurations")]
pub struct ManagedArgs {
    /// Make, keep and rotate the serving certificate in this Secret (keys ca.crt, ca.key,
    /// tls.crt, tls.key) of --certificate-namespace, and, once the HTTPS listener serves, patch
    /// its CAs into the caBundle of every webhook of the configurations named
    /// --webhook-configuration (and keep it current on rotation). Those configurations are the
    /// chart's or the manifests': this server never creates nor deletes one. Needs --service.
    /// Several replicas given the same Secret serve the same certificate.
    #[arg(
        long,
        env = "MCS_POLICY_CERTIFICATE_SECRET",
        value_name = "NAME",
        requires = "service",
        conflicts_with_all = ["tls_cert", "self_signed"]
    )]
    pub certificate_secret: Option<String>,

    /// Namespace of the Secret and of the Service [default: $POD_NAMESPACE, else the namespace
    /// of the Pod's ServiceAccount].
    #[arg(long, env = "MCS_POLICY_CERTIFICATE_NAMESPACE", value_name = "NS")]
    pub certificate_namespace: Option<String>,

    /// The Service in front of this server, in the Secret's namespace: the certificate is for
    /// NAME.NS.svc and NAME.NS.svc.cluster.local.
    #[arg(
        long,
        env = "MCS_POLICY_SERVICE",
        value_name = "NAME",
        requires = "certificate_secret"
    )]
    pub service: Option<String>,

    /// Accepted for compatibility and unused: the port the configurations send to is the
    /// chart's or the manifests' to say.
    #[arg(long, default_value_t = 443, value_name = "PORT", hide = true)]
    pub service_port: u16,

    /// Name of the ValidatingWebhookConfiguration and the MutatingWebhookConfiguration whose
    /// caBundle this server patches (only caBundle). It never creates them: a missing one is
    /// logged and looked for again at the next check.
    #[arg(
        long,
        env = "MCS_POLICY_WEBHOOK_CONFIGURATION",
        default_value = "mcs-policy",
        value_name = "NAME"
    )]
    pub webhook_configuration: String,

    /// Accepted for compatibility and unused: where the configurations send (a Service or a
    /// URL) is the chart's or the manifests' to say; this server only patches their caBundle.
    #[arg(long, value_name = "URL", requires = "certificate_secret", hide = true)]
    pub webhook_url: Option<String>,

    /// Kubeconfig of the API server that holds the webhook configurations whose caBundle is
    /// patched (Karmada: the karmada-apiserver) [default: the cluster of the Secret].
    #[arg(long, value_name = "FILE", requires = "certificate_secret")]
    pub webhook_kubeconfig: Option<PathBuf>,

    /// Kubeconfig of the cluster that holds the Secret [default: the cluster this Pod runs in].
    #[arg(long, value_name = "FILE", requires = "certificate_secret")]
    pub kubeconfig: Option<PathBuf>,

    /// How often the Secret and the configurations' caBundle are checked (and a rotation made).
    /// Until both configurations are found and patched, they are looked for again sooner: after
    /// 1s, doubling up to this interval.
    #[arg(long, default_value = "1m", value_parser = parse_go_duration, value_name = "DURATION")]
    pub certificate_check_interval: Duration,

    /// Validity of a new CA; it is replaced when a third of it is left.
    #[arg(long, default_value = "87600h", value_parser = parse_go_duration, value_name = "DURATION")]
    pub ca_validity: Duration,

    /// Validity of a new serving certificate; it is renewed when a third of it is left.
    #[arg(long, default_value = "8760h", value_parser = parse_go_duration, value_name = "DURATION")]
    pub serving_validity: Duration,
}

/// `mcs-policy unregister`.
#[derive(Debug, Clone, clap::Args)]
pub struct UnregisterArgs {
    /// Name of the two configurations to delete (only those labelled
    /// app.kubernetes.io/managed-by=mcs-policy are, with their uid and resourceVersion as
    /// preconditions).
    #[arg(long, default_value = "mcs-policy", value_name = "NAME")]
    pub webhook_configuration: String,

    /// Kubeconfig of the API server that holds them [default: the cluster this Pod runs in].
    #[arg(long, value_name = "FILE")]
    pub webhook_kubeconfig: Option<PathBuf>,
}
