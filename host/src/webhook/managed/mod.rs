//! A self-managed serving certificate (`serve --certificate-secret`): the server makes its CA
//! and serving certificate, keeps them in a Secret of its namespace, rotates them, and creates
//! and keeps current the Validating/MutatingWebhookConfiguration that send admission requests
//! to it, `caBundle` included. Kyverno and Gatekeeper manage their webhooks the same way; with
//! it, installing needs neither cert-manager nor a certificate made by hand.
//!
//! Several replicas agree on one certificate because the Secret is the only source: each
//! replica reads it, and a write carries the resourceVersion it read (a create, none), so of
//! two replicas that decide at once one wins and the other reads the winner's material on its
//! next try. The rules of what to write are [`material`]'s; this module does the I/O.

pub mod configurations;
pub mod material;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::clusters::origin::HubOrigin;
use crate::clusters::{self as open, ClientOptions};
use crate::duration::parse_go_duration;
use crate::manifests::{Endpoint, MANAGED_BY};
pub use configurations::{ConfigurationError, Removed};
pub use material::{Material, Wanted};

/// Where a Pod's namespace is, when neither the flag nor `POD_NAMESPACE` says.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// `serve`'s flags for a self-managed certificate.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Self-managed certificate and webhook configurations")]
pub struct ManagedArgs {
    /// Make, keep and rotate the serving certificate in this Secret (keys ca.crt, ca.key,
    /// tls.crt, tls.key) of --certificate-namespace, and create and keep current the webhook
    /// configurations named --webhook-configuration, caBundle included. Needs --service.
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
    /// NAME.NS.svc and NAME.NS.svc.cluster.local, and the configurations send to it (unless
    /// --webhook-url).
    #[arg(
        long,
        env = "MCS_POLICY_SERVICE",
        value_name = "NAME",
        requires = "certificate_secret"
    )]
    pub service: Option<String>,

    /// Port of that Service.
    #[arg(long, default_value_t = 443, value_name = "PORT")]
    pub service_port: u16,

    /// Name of the ValidatingWebhookConfiguration and the MutatingWebhookConfiguration this
    /// server keeps (`mcs-policy unregister` deletes them).
    #[arg(
        long,
        env = "MCS_POLICY_WEBHOOK_CONFIGURATION",
        default_value = "mcs-policy",
        value_name = "NAME"
    )]
    pub webhook_configuration: String,

    /// The configurations send to this base URL instead of the Service, e.g.
    /// https://mcs-policy.karmada-system.svc:443 for a karmada-apiserver, which resolves no
    /// Service of the cluster this server runs in. The host must be one of the certificate's
    /// names.
    #[arg(long, value_name = "URL", requires = "certificate_secret")]
    pub webhook_url: Option<String>,

    /// Kubeconfig of the API server that holds the webhook configurations (Karmada: the
    /// karmada-apiserver) [default: the cluster of the Secret].
    #[arg(long, value_name = "FILE", requires = "certificate_secret")]
    pub webhook_kubeconfig: Option<PathBuf>,

    /// Kubeconfig of the cluster that holds the Secret [default: the cluster this Pod runs in].
    #[arg(long, value_name = "FILE", requires = "certificate_secret")]
    pub kubeconfig: Option<PathBuf>,

    /// How often the Secret and the configurations are checked (and a rotation made).
    #[arg(long, default_value = "1m", value_parser = parse_go_duration, value_name = "DURATION")]
    pub certificate_check_interval: Duration,

    /// Validity of a new CA; it is replaced when a third of it is left.
    #[arg(long, default_value = "87600h", value_parser = parse_go_duration, value_name = "DURATION")]
    pub ca_validity: Duration,

    /// Validity of a new serving certificate; it is renewed when a third of it is left.
    #[arg(long, default_value = "8760h", value_parser = parse_go_duration, value_name = "DURATION")]
    pub serving_validity: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ManagedError {
    #[error(
        "--certificate-secret needs a namespace: give --certificate-namespace, set POD_NAMESPACE, \
         or run in a Pod with a ServiceAccount"
    )]
    NoNamespace,
    #[error(transparent)]
    Cluster(#[from] Box<crate::clusters::ClusterError>),
    #[error("{verb} Secret {namespace}/{name} failed: {source}")]
    Secret {
        verb: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(transparent)]
    Configuration(#[from] ConfigurationError),
    #[error(transparent)]
    Issue(#[from] material::IssueError),
    #[error("Secret {0} kept changing under this server; trying again later")]
    Contended(String),
}

/// Keeps one Secret and its webhook configurations.
#[derive(Clone)]
pub struct Keeper {
    secrets: Api<Secret>,
    namespace: String,
    secret: String,
    configurations: Client,
    configuration: String,
    endpoint: Endpoint,
    wanted: Wanted,
    pub interval: Duration,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keeper({}/{})", self.namespace, self.secret)
    }
}

impl Keeper {
    /// The keeper `args` describe, with its clients; `None` without `--certificate-secret`.
    pub async fn from_args(args: &ManagedArgs) -> Result<Option<Keeper>, ManagedError> {
        let Some(secret) = args.certificate_secret.clone() else {
            return Ok(None);
        };
        let namespace = namespace(args)?;
        let service = args.service.clone().unwrap_or_default();
        let here = client(&args.kubeconfig).await?;
        let configurations = match &args.webhook_kubeconfig {
            Some(_) => client(&args.webhook_kubeconfig).await?,
            None => here.clone(),
        };
        let endpoint = match &args.webhook_url {
            Some(url) => Endpoint::Url(url.clone()),
            None => Endpoint::Service {
                namespace: namespace.clone(),
                name: service.clone(),
                port: args.service_port,
            },
        };
        Ok(Some(Keeper {
            secrets: Api::namespaced(here, &namespace),
            secret,
            configurations,
            configuration: args.webhook_configuration.clone(),
            endpoint,
            wanted: Wanted {
                dns_names: vec![
                    format!("{service}.{namespace}.svc"),
                    format!("{service}.{namespace}.svc.cluster.local"),
                ],
                ca_validity: args.ca_validity,
                serving_validity: args.serving_validity,
            },
            namespace,
            interval: args.certificate_check_interval,
        }))
    }

    /// Where the certificate lives, for logs.
    pub fn secret_name(&self) -> String {
        format!("{}/{}", self.namespace, self.secret)
    }

    /// One round: read the Secret and what the configurations trust, write what
    /// [`material::next`] says, make the configurations trust the Secret's CAs. Repeats (up to
    /// three times) while a write lost a race or the configurations changed, since either can
    /// make the next decision different. Missing configurations are created only with
    /// `create` (at start; see [`configurations::apply`]). Returns the material to serve.
    pub async fn keep(&self, create: bool) -> Result<Material, ManagedError> {
        for _ in 0..3 {
            let (current, version) = self.read().await?;
            let trusted =
                configurations::trusted(&self.configurations, &self.configuration).await?;
            let now = time::OffsetDateTime::now_utc();
            let material = match material::next(now, current.as_ref(), &trusted, &self.wanted)? {
                material::Next::Keep => current.expect("Keep means there is a material"),
                material::Next::Write { material, why } => {
                    if !self.write(&material, version).await? {
                        continue;
                    }
                    tracing::info!(secret = %self.secret_name(), %why, "webhook certificate written");
                    material
                }
            };
            let applied = configurations::apply(
                &self.configurations,
                &self.configuration,
                &self.endpoint,
                material.ca_bundle.as_bytes(),
                create,
            )
            .await?;
            if applied.contains(&configurations::Applied::Absent) {
                tracing::warn!(
                    configuration = %self.configuration,
                    "a webhook configuration was deleted (mcs-policy unregister?); it is re-created \
                     only when a server starts"
                );
            }
            let changed = applied.iter().any(|a| {
                matches!(
                    a,
                    configurations::Applied::Created | configurations::Applied::Updated
                )
            });
            if changed {
                tracing::info!(
                    configuration = %self.configuration,
                    validating = ?applied[0],
                    mutating = ?applied[1],
                    "webhook configurations applied"
                );
                continue;
            }
            return Ok(material);
        }
        Err(ManagedError::Contended(self.secret_name()))
    }

    async fn read(&self) -> Result<(Option<Material>, Option<String>), ManagedError> {
        let secret = self
            .secrets
            .get_opt(&self.secret)
            .await
            .map_err(|source| self.secret_error("reading", source))?;
        let Some(secret) = secret else {
            return Ok((None, None));
        };
        let version = secret.metadata.resource_version.clone();
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| {
            data.get(key)
                .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned())
                .unwrap_or_default()
        };
        Ok((
            Some(Material {
                ca_bundle: text("ca.crt"),
                ca_key: text("ca.key"),
                tls_cert: text("tls.crt"),
                tls_key: text("tls.key"),
            }),
            version,
        ))
    }

    /// Writes `material`: a create when `version` is `None`, else a replace of that version.
    /// `false` when another writer came first (409).
    async fn write(
        &self,
        material: &Material,
        version: Option<String>,
    ) -> Result<bool, ManagedError> {
        let data: BTreeMap<String, ByteString> = [
            ("ca.crt", &material.ca_bundle),
            ("ca.key", &material.ca_key),
            ("tls.crt", &material.tls_cert),
            ("tls.key", &material.tls_key),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.secret.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([
                    (
                        "app.kubernetes.io/name".to_string(),
                        "mcs-policy".to_string(),
                    ),
                    (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
                ])),
                resource_version: version.clone(),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/tls".to_string()),
            data: Some(data),
            ..Secret::default()
        };
        let written = match version {
            None => self.secrets.create(&PostParams::default(), &secret).await,
            Some(_) => {
                self.secrets
                    .replace(&self.secret, &PostParams::default(), &secret)
                    .await
            }
        };
        match written {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(source) => Err(self.secret_error("writing", source)),
        }
    }

    fn secret_error(&self, verb: &'static str, source: kube::Error) -> ManagedError {
        ManagedError::Secret {
            verb,
            namespace: self.namespace.clone(),
            name: self.secret.clone(),
            source: Box::new(source),
        }
    }
}

/// A client of the kubeconfig's current context, or of the cluster this Pod runs in.
async fn client(kubeconfig: &Option<PathBuf>) -> Result<Client, ManagedError> {
    let origin = match kubeconfig {
        Some(path) => HubOrigin::Kubeconfig {
            path: path.clone(),
            context: None,
        },
        None => HubOrigin::InCluster,
    };
    let cluster = open::hub(&origin, &ClientOptions::default())
        .await
        .map_err(Box::new)?;
    Ok(cluster.client)
}

fn namespace(args: &ManagedArgs) -> Result<String, ManagedError> {
    args.certificate_namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .or_else(|| {
            std::env::var("POD_NAMESPACE")
                .ok()
                .filter(|ns| !ns.is_empty())
        })
        .or_else(|| {
            std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE)
                .ok()
                .map(|ns| ns.trim().to_string())
                .filter(|ns| !ns.is_empty())
        })
        .ok_or(ManagedError::NoNamespace)
}

/// `mcs-policy unregister`.
#[derive(Debug, Clone, clap::Args)]
pub struct UnregisterArgs {
    /// Name of the two configurations to delete (only those labelled
    /// app.kubernetes.io/managed-by=mcs-policy are).
    #[arg(long, default_value = "mcs-policy", value_name = "NAME")]
    pub webhook_configuration: String,

    /// Kubeconfig of the API server that holds them [default: the cluster this Pod runs in].
    #[arg(long, value_name = "FILE")]
    pub webhook_kubeconfig: Option<PathBuf>,
}

/// Deletes the configurations (uninstall: before the server goes, so that no configuration
/// with `failurePolicy: Fail` is left pointing at nothing). Prints one line per configuration.
pub async fn unregister(args: &UnregisterArgs) -> Result<(), ManagedError> {
    let client = client(&args.webhook_kubeconfig).await?;
    for (kind, removed) in configurations::unregister(&client, &args.webhook_configuration).await? {
        let name = &args.webhook_configuration;
        match removed {
            Removed::Deleted => println!("{kind} {name}: deleted"),
            Removed::Absent => println!("{kind} {name}: not there"),
            Removed::NotOurs => println!(
                "{kind} {name}: left alone, it is not labelled {}={}",
                MANAGED_BY.0, MANAGED_BY.1
            ),
        }
    }
    Ok(())
}
