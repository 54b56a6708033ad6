//! The members' clients, kept between membership passes: a member's client is built from its
//! Secret (read from the hub) and kept while what it was built from, its [`Fingerprint`],
//! holds; a rotated Secret, a new endpoint, TLS or proxy setting builds a new one. A hub that
//! cannot be asked for the Secret now keeps the member's current client.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::connection::{config, connection};
use super::object::{SecretRef, Skip, Target};
use crate::clusters::api_error::chain;
use crate::clusters::{ClientOptions, Cluster, build_client};

/// What a member's client depends on: when it changes (a rotated secret gets a new
/// resourceVersion), the client is built again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    endpoint: String,
    secret: SecretRef,
    secret_version: Option<String>,
    insecure: bool,
    proxy: Option<String>,
}

/// The fingerprint of `target` reached with `secret`.
pub fn fingerprint(target: &Target, secret: &Secret) -> Fingerprint {
    Fingerprint {
        endpoint: target.endpoint.clone(),
        secret: target.secret.clone(),
        secret_version: secret.metadata.resource_version.clone(),
        insecure: target.insecure,
        proxy: target.proxy.clone(),
    }
}

/// Why a member's secret could not be had: for this pass only, or until it changes.
enum SecretError {
    Transient(Skip),
    Final(Skip),
}

/// The members' clients by cluster name, with what each was built from.
pub(super) struct Clients {
    options: ClientOptions,
    cache: Mutex<HashMap<String, (Fingerprint, Cluster)>>,
}

impl Clients {
    pub(super) fn new(options: ClientOptions) -> Self {
        Clients {
            options,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The member `target` with a client: the cached one while its fingerprint holds, else a
    /// new one (with a new [`Cluster::client_id`]). Its Secret is read from `hub`.
    pub(super) async fn connect(
        &self,
        hub: &kube::Client,
        target: &Target,
    ) -> Result<Cluster, Skip> {
        let secret = match secret(hub, &target.secret).await {
            Ok(secret) => secret,
            // A hub that does not answer now says nothing about the member: keep its client
            // rather than drop it (and its watch) for one pass.
            Err(SecretError::Transient(skip)) => {
                let cached = self.cached(&target.name, None).ok_or(skip.clone())?;
                tracing::warn!(cluster = %target.name, "{skip}; keeping its client");
                return Ok(cached);
            }
            Err(SecretError::Final(skip)) => return Err(skip),
        };
        let print = fingerprint(target, &secret);
        if let Some(cluster) = self.cached(&target.name, Some(&print)) {
            return Ok(cluster);
        }
        let connection = connection(target, &secret)?;
        let config = config(&connection)
            .await
            .map_err(|err| Skip::InvalidConfig(chain(&err)))?;
        let client =
            build_client(config, &self.options).map_err(|err| Skip::Client(chain(&err)))?;
        tracing::info!(cluster = %target.name, server = %connection.server, "built a client for the karmada cluster");
        let cluster = Cluster::new(target.name.clone(), client);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(target.name.clone(), (print, cluster.clone()));
        }
        Ok(cluster)
    }

    /// Forgets the clients of every cluster not in `present`.
    pub(super) fn keep_only(&self, present: &HashSet<String>) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.retain(|name, _| present.contains(name));
        }
    }

    /// The cached member `name`, if its fingerprint is `print` (any, when `None`).
    fn cached(&self, name: &str, print: Option<&Fingerprint>) -> Option<Cluster> {
        let cache = self.cache.lock().ok()?;
        let (cached, cluster) = cache.get(name)?;
        print.is_none_or(|p| p == cached).then(|| cluster.clone())
    }
}

/// The Secret `reference` points at, from the hub.
async fn secret(hub: &kube::Client, reference: &SecretRef) -> Result<Secret, SecretError> {
    let api: Api<Secret> = Api::namespaced(hub.clone(), &reference.namespace);
    match api.get_opt(&reference.name).await {
        Ok(Some(secret)) => Ok(secret),
        Ok(None) => Err(SecretError::Final(Skip::SecretMissing(
            reference.to_string(),
        ))),
        Err(err) => {
            // 429 and 5xx answers, timeouts and connection failures pass; other answers
            // (403: no permission) are the secret's state.
            let transient = match &err {
                kube::Error::Api(status) => status.code == 429 || status.code >= 500,
                _ => true,
            };
            let skip = Skip::SecretUnreadable {
                secret: reference.to_string(),
                reason: chain(&err),
            };
            Err(if transient {
                SecretError::Transient(skip)
            } else {
                SecretError::Final(skip)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{secret, target};
    use super::*;

    #[test]
    fn the_fingerprint_changes_when_the_secret_rotates() {
        let t = target("https://m", false);
        let before = secret("7", &[("token", "abc")]);
        let same = secret("7", &[("token", "abc")]);
        let rotated = secret("8", &[("token", "xyz")]);
        assert_eq!(fingerprint(&t, &before), fingerprint(&t, &same));
        assert_ne!(fingerprint(&t, &before), fingerprint(&t, &rotated));
    }

    #[test]
    fn the_fingerprint_changes_with_endpoint_tls_and_proxy() {
        let s = secret("7", &[("token", "abc")]);
        let base = fingerprint(&target("https://m", false), &s);
        assert_ne!(base, fingerprint(&target("https://n", false), &s));
        assert_ne!(base, fingerprint(&target("https://m", true), &s));
        let mut proxied = target("https://m", false);
        proxied.proxy = Some("http://proxy:3128".into());
        assert_ne!(base, fingerprint(&proxied, &s));
    }
}
