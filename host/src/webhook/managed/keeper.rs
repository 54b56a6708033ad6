//! The I/O of a self-managed certificate: reading and writing the Secret, reading what the
//! webhook configurations trust and patching their `caBundle`.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

use super::configurations::{self, Patched};
use super::material::{self, Material, Wanted};
use super::{ManagedArgs, ManagedError, client, namespace};
use crate::manifests::MANAGED_BY;

/// The kinds of the two configurations, in the order [`configurations::read`] returns them.
const KINDS: [&str; 2] = [
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

/// What one round of [`Keeper::keep`] left.
#[derive(Debug)]
pub struct Round {
    /// The material to serve.
    pub material: Material,
    /// Both configurations were found and their `caBundle` holds the Secret's CAs.
    pub settled: bool,
}

/// Keeps one Secret, and the `caBundle` of its webhook configurations.
#[derive(Clone)]
pub struct Keeper {
    secrets: Api<Secret>,
    namespace: String,
    secret: String,
    configurations: Client,
    configuration: String,
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
        Ok(Some(Keeper {
            secrets: Api::namespaced(here, &namespace),
            secret,
            configurations,
            configuration: args.webhook_configuration.clone(),
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

    /// The material to serve at start, before the server listens: reads the Secret and what
    /// the configurations trust, and writes what [`material::next`] says. Patches nothing.
    pub async fn certificate(&self) -> Result<Material, ManagedError> {
        Ok(self.round(false).await?.material)
    }

    /// One round once the server listens: [`Keeper::certificate`], then the Secret's CAs into
    /// the `caBundle` of every webhook of both configurations. Missing configurations are
    /// logged and left missing.
    pub async fn keep(&self) -> Result<Round, ManagedError> {
        self.round(true).await
    }

    /// Repeats (up to three times) while a write lost a race or what the configurations trust
    /// changed, since either can make the next decision different.
    async fn round(&self, patch: bool) -> Result<Round, ManagedError> {
        for _ in 0..3 {
            let (current, version) = self.read().await?;
            let found = match configurations::read(&self.configurations, &self.configuration).await
            {
                Ok(found) => Some(found),
                Err(err) => {
                    tracing::warn!(
                        error = %err,
                        "reading the webhook configurations failed: no CA counts as trusted by \
                         them this round"
                    );
                    None
                }
            };
            let trusted = found
                .as_ref()
                .map(configurations::trusted)
                .unwrap_or_default();
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
            let (true, Some(found)) = (patch, found) else {
                return Ok(Round {
                    material,
                    settled: false,
                });
            };
            let patched = match configurations::patch_ca_bundle(
                &self.configurations,
                &found,
                material.ca_bundle.as_bytes(),
            )
            .await
            {
                Ok(patched) => patched,
                Err(err) => {
                    tracing::warn!(error = %err, "patching the caBundle of the webhook configurations failed");
                    return Ok(Round {
                        material,
                        settled: false,
                    });
                }
            };
            for (kind, patched) in KINDS.iter().zip(patched) {
                if patched == Patched::Missing {
                    tracing::warn!(
                        configuration = %self.configuration,
                        %kind,
                        "webhook configuration {} ({kind}) not found: the chart/manifests create \
                         it; nothing to patch",
                        self.configuration
                    );
                }
            }
            if patched.contains(&Patched::Patched) {
                tracing::info!(
                    configuration = %self.configuration,
                    validating = ?patched[0],
                    mutating = ?patched[1],
                    "caBundle of the webhook configurations patched"
                );
            }
            if patched.contains(&Patched::Patched) || patched.contains(&Patched::Changed) {
                continue;
            }
            return Ok(Round {
                material,
                settled: !patched.contains(&Patched::Missing),
            });
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
