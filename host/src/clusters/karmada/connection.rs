//! Building a member's connection, with no I/O: its `Target` and the Secret `spec.secretRef`
//! names become a [`Connection`] (as Karmada builds a member's client), then a one-context
//! kubeconfig, so kube reads the CA bundle, TLS and proxy settings as it reads them from a
//! file, then a client [`Config`].

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Config;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use serde_json::json;

use super::object::{Skip, Target};

/// The Secret key of the bearer token (Karmada's `SecretTokenKey`).
const TOKEN_KEY: &str = "token";
/// The Secret key of the PEM CA bundle (Karmada's `SecretCADataKey`).
const CA_KEY: &str = "caBundle";
/// The context name of the in-memory kubeconfig a member's client is built from.
const CONTEXT: &str = "karmada-member";

/// How to reach a member: what its client is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The endpoint as a URL.
    pub server: String,
    pub token: String,
    /// The PEM CA bundle, unless TLS verification is off.
    pub ca: Option<Vec<u8>>,
    pub insecure: bool,
    pub proxy: Option<String>,
}

/// `target` with the credentials of `secret`, as Karmada builds a member's client: the token
/// is required; the CA bundle is used unless TLS verification is off.
pub fn connection(target: &Target, secret: &Secret) -> Result<Connection, Skip> {
    let data = secret.data.as_ref();
    let value = |key: &str| {
        data.and_then(|d| d.get(key))
            .map(|v| v.0.clone())
            .filter(|v| !v.is_empty())
    };
    let token = value(TOKEN_KEY)
        .and_then(|t| String::from_utf8(t).ok())
        .ok_or_else(|| Skip::NoToken {
            secret: target.secret.to_string(),
            key: TOKEN_KEY,
        })?;
    let ca = if target.insecure { None } else { value(CA_KEY) };
    Ok(Connection {
        server: server_url(&target.endpoint, ca.is_some() || target.insecure),
        token,
        ca,
        insecure: target.insecure,
        proxy: target.proxy.clone(),
    })
}

/// `endpoint` as a URL. Karmada allows `host`, `host:port`, `IP` or `IP:port`; like
/// client-go, a scheme-less endpoint gets `https://` when TLS is configured (a CA bundle, or
/// verification off) and `http://` otherwise.
fn server_url(endpoint: &str, tls: bool) -> String {
    match endpoint.split_once("://") {
        Some((scheme, rest)) if !scheme.is_empty() && !rest.is_empty() => endpoint.to_string(),
        _ if tls => format!("https://{endpoint}"),
        _ => format!("http://{endpoint}"),
    }
}

/// A one-context kubeconfig for `connection`, so kube reads the CA bundle, the TLS and proxy
/// settings exactly as it reads them from a file.
pub fn kubeconfig(connection: &Connection) -> Result<Kubeconfig, serde_json::Error> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let document = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": connection.server,
            "certificate-authority-data": connection.ca.as_ref().map(|ca| b64.encode(ca)),
            "insecure-skip-tls-verify": connection.insecure,
            "proxy-url": connection.proxy,
        }}],
        "users": [{"name": CONTEXT, "user": {"token": connection.token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
        "current-context": CONTEXT,
    });
    serde_json::from_value(document)
}

/// The client configuration for `connection`.
pub async fn config(connection: &Connection) -> Result<Config, ConfigError> {
    let kubeconfig = kubeconfig(connection).map_err(ConfigError::Document)?;
    let options = KubeConfigOptions {
        context: Some(CONTEXT.to_string()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(ConfigError::Kubeconfig)?;
    // As client-go: a CA bundle without a certificate is an error, not an empty trust store
    // that fails every connection later.
    if connection.ca.is_some() && config.root_cert.as_ref().is_none_or(Vec::is_empty) {
        return Err(ConfigError::NoCertificate);
    }
    Ok(config)
}

/// Why a member's client configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("writing its kubeconfig")]
    Document(#[source] serde_json::Error),
    #[error("reading its kubeconfig")]
    Kubeconfig(#[source] KubeconfigError),
    #[error("its caBundle holds no PEM certificate")]
    NoCertificate,
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{pem, secret, target};
    use super::*;
    use crate::clusters::{ClientOptions, build_client};

    #[test]
    fn the_connection_takes_token_and_ca_bundle_from_the_secret() {
        let s = secret("7", &[("token", "abc"), ("caBundle", pem().as_str())]);
        let c = connection(&target("https://10.0.0.1:6443", false), &s).unwrap();
        assert_eq!(c.server, "https://10.0.0.1:6443");
        assert_eq!(c.token, "abc");
        assert!(
            c.ca.as_deref()
                .is_some_and(|ca| ca.starts_with(b"-----BEGIN CERTIFICATE"))
        );
        assert!(!c.insecure);
    }

    #[test]
    fn insecure_clusters_ignore_the_ca_bundle() {
        let s = secret("7", &[("token", "abc"), ("caBundle", pem().as_str())]);
        let c = connection(&target("https://m", true), &s).unwrap();
        assert_eq!(c.ca, None);
        assert!(c.insecure);
    }

    #[test]
    fn a_secret_without_token_gives_no_connection() {
        let s = secret("7", &[("caBundle", pem().as_str())]);
        let err = connection(&target("https://m", false), &s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "its secret karmada-cluster/member1 has no non-empty \"token\""
        );
        let s = secret("7", &[("token", "")]);
        assert!(connection(&target("https://m", false), &s).is_err());
    }

    #[test]
    fn scheme_less_endpoints_get_https_only_with_tls() {
        assert_eq!(server_url("10.0.0.1:6443", true), "https://10.0.0.1:6443");
        assert_eq!(server_url("10.0.0.1:6443", false), "http://10.0.0.1:6443");
        assert_eq!(server_url("kube.example", true), "https://kube.example");
        assert_eq!(server_url("http://127.0.0.1:1", true), "http://127.0.0.1:1");
    }

    #[tokio::test]
    async fn the_config_carries_server_token_and_tls_settings() {
        let c = Connection {
            server: "https://10.0.0.1:6443".into(),
            token: "abc".into(),
            ca: None,
            insecure: true,
            proxy: None,
        };
        let config = config(&c).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:6443/");
        assert!(config.accept_invalid_certs);
        assert!(config.auth_info.token.is_some());
        assert_eq!(config.root_cert, None);
    }

    #[tokio::test]
    async fn a_pem_ca_bundle_becomes_the_root_certificate() {
        let c = Connection {
            server: "https://10.0.0.1:6443".into(),
            token: "abc".into(),
            ca: Some(pem().into_bytes()),
            insecure: false,
            proxy: None,
        };
        let config = config(&c).await.unwrap();
        assert_eq!(config.root_cert.as_ref().map(Vec::len), Some(1));
        assert!(!config.accept_invalid_certs);
        assert!(build_client(config, &ClientOptions::default()).is_ok());
    }

    #[tokio::test]
    async fn the_proxy_url_reaches_the_client() {
        for proxy in ["http://proxy:3128", "socks5://proxy:1080"] {
            let c = Connection {
                server: "https://10.0.0.1:6443".into(),
                token: "abc".into(),
                ca: None,
                insecure: true,
                proxy: Some(proxy.into()),
            };
            let config = config(&c).await.unwrap();
            assert_eq!(
                config.proxy_url.as_ref().map(|u| u.to_string()),
                Some(format!("{proxy}/"))
            );
            assert!(
                build_client(config, &ClientOptions::default()).is_ok(),
                "{proxy}"
            );
        }
    }

    #[tokio::test]
    async fn an_invalid_ca_bundle_or_endpoint_gives_no_config() {
        let c = Connection {
            server: "https://m".into(),
            token: "abc".into(),
            ca: Some(b"not a certificate".to_vec()),
            insecure: false,
            proxy: None,
        };
        assert!(config(&c).await.is_err());
        let c = Connection {
            server: "http://bad host:1".into(),
            ca: None,
            ..c
        };
        assert!(config(&c).await.is_err());
    }
}
