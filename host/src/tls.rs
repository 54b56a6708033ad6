//! TLS for the webhook server: rustls (ring), TLS 1.2+, ALPN `h2` and `http/1.1`. The serving
//! certificate sits behind a resolver so a rotated certificate (cert-manager) is picked up for
//! new handshakes without dropping open connections. `--self-signed` makes a CA and a
//! localhost certificate signed by it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading certificate file {path} failed: {reason}")]
    Cert { path: String, reason: String },
    #[error("reading private key file {path} failed: {reason}")]
    Key { path: String, reason: String },
    #[error("certificate {cert} and key {key} do not form a usable pair: {reason}")]
    Pair {
        cert: String,
        key: String,
        reason: String,
    },
    #[error("generating the self-signed certificate failed: {0}")]
    Generate(String),
    #[error("writing {path} failed")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("building the TLS configuration failed: {0}")]
    Config(String),
}

/// Certificate and key file paths, as given on the command line or made by `--self-signed`.
#[derive(Clone, Debug, PartialEq)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Loads a PEM certificate chain and private key into a signing key.
pub fn load_certified_key(files: &CertFiles) -> Result<CertifiedKey, TlsError> {
    let cert_path = files.cert.display().to_string();
    let key_path = files.key.display().to_string();
    let read = |path: &Path| std::fs::read(path).map_err(|e| e.to_string());
    let cert = read(&files.cert).map_err(|reason| TlsError::Cert {
        path: cert_path.clone(),
        reason,
    })?;
    let key = read(&files.key).map_err(|reason| TlsError::Key {
        path: key_path.clone(),
        reason,
    })?;
    certified_key_from_pem(&cert, &key).map_err(|err| err.at(&cert_path, &key_path))
}

/// A PEM certificate chain and private key, from memory, as a signing key. Errors name the
/// texts `certificate` and `key`; [`TlsError::at`] names files instead.
pub fn certified_key_from_pem(cert: &[u8], key: &[u8]) -> Result<CertifiedKey, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Cert {
            path: "certificate".to_string(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Cert {
            path: "certificate".to_string(),
            reason: "no PEM certificate found".to_string(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsError::Key {
        path: "key".to_string(),
        reason: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, &ring::default_provider()).map_err(|e| TlsError::Pair {
        cert: "certificate".to_string(),
        key: "key".to_string(),
        reason: e.to_string(),
    })
}

impl TlsError {
    /// The same error, naming the files the texts came from.
    fn at(self, cert_path: &str, key_path: &str) -> TlsError {
        match self {
            TlsError::Cert { reason, .. } => TlsError::Cert {
                path: cert_path.to_string(),
                reason,
            },
            TlsError::Key { reason, .. } => TlsError::Key {
                path: key_path.to_string(),
                reason,
            },
            TlsError::Pair { reason, .. } => TlsError::Pair {
                cert: cert_path.to_string(),
                key: key_path.to_string(),
                reason,
            },
            other => other,
        }
    }
}

/// Serves whatever certificate was loaded last.
pub struct ReloadingResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for ReloadingResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReloadingResolver")
    }
}

impl ReloadingResolver {
    pub fn new(key: CertifiedKey) -> Arc<Self> {
        Arc::new(ReloadingResolver {
            current: RwLock::new(Arc::new(key)),
        })
    }

    /// Swaps in a new certificate for future handshakes.
    pub fn replace(&self, key: CertifiedKey) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(key);
    }
}

impl ResolvesServerCert for ReloadingResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}

/// The server configuration: TLS 1.2 and 1.3, ALPN h2 then http/1.1.
pub fn server_config(resolver: Arc<ReloadingResolver>) -> Result<Arc<ServerConfig>, TlsError> {
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// What `--self-signed` wrote.
#[derive(Clone, Debug)]
pub struct SelfSigned {
    pub files: CertFiles,
    /// The CA certificate to trust (`curl --cacert`, a webhook configuration's `caBundle`).
    pub ca_bundle: PathBuf,
}

/// Makes a CA and a serving certificate for `localhost`, `127.0.0.1` and `::1` in `dir`.
pub fn write_self_signed(dir: &Path) -> Result<SelfSigned, TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let generate = |e: rcgen::Error| TlsError::Generate(e.to_string());

    let ca_key = KeyPair::generate().map_err(generate)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(generate)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "mcs-policy self-signed CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(generate)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf_key = KeyPair::generate().map_err(generate)?;
    let mut leaf_params = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])
    .map_err(generate)?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let leaf_cert = leaf_params
        .signed_by(&leaf_key, &issuer)
        .map_err(generate)?;

    std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
        path: dir.display().to_string(),
        source,
    })?;
    let files = CertFiles {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    let ca_bundle = dir.join("ca.crt");
    write(
        &files.cert,
        &format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
    )?;
    write(&files.key, &leaf_key.serialize_pem())?;
    write(&ca_bundle, &ca_cert.pem())?;
    Ok(SelfSigned { files, ca_bundle })
}

fn write(path: &Path, contents: &str) -> Result<(), TlsError> {
    std::fs::write(path, contents).map_err(|source| TlsError::Write {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_certificate_loads_and_builds_a_config() {
        let dir = std::env::temp_dir().join(format!("mcs-policy-tls-test-{}", std::process::id()));
        let made = write_self_signed(&dir).unwrap();
        let key = load_certified_key(&made.files).unwrap();
        assert_eq!(key.cert.len(), 2, "leaf and CA");
        let config = server_config(ReloadingResolver::new(key)).unwrap();
        assert_eq!(config.alpn_protocols[0], b"h2");
        assert!(
            std::fs::read_to_string(&made.ca_bundle)
                .unwrap()
                .contains("BEGIN CERTIFICATE")
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn missing_or_mismatched_files_name_the_file() {
        let err = load_certified_key(&CertFiles {
            cert: "/nonexistent/tls.crt".into(),
            key: "/nonexistent/tls.key".into(),
        })
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tls.crt"), "{err}");
    }
}
