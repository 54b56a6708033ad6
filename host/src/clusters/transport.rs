//! The HTTP transport under every cluster's client: what a member costs the controller at rest.
//!
//! kube's own stack (`ClientBuilder::try_from(Config)`) builds a TLS configuration per client
//! and offers only HTTP/1.1. With no `certificate-authority` in the kubeconfig that
//! configuration holds the system's whole root store, parsed again for every client (about
//! 80 KB a member on kube-sim, BENCHMARKS.md "What a member costs"), and each of a member's
//! concurrent watches holds a connection (and a TLS session) of its own. This stack:
//!
//! - **shares one TLS configuration** among the clients with the same trust (the same CA
//!   certificates or CA file, or none, and the same `insecure-skip-tls-verify`) and no client
//!   certificate; it is built by kube's own [`ConfigExt::rustls_client_config`], so what a
//!   client trusts is unchanged;
//! - **offers HTTP/2** over TLS (ALPN `h2`, then `http/1.1`): a Kubernetes API server accepts
//!   it, and the watches of a member then share connections as streams. A connection answers
//!   pings or is closed: a ping every [`PING_INTERVAL`] without an answer within
//!   [`PING_TIMEOUT`] ends it (client-go's defaults), so a dead connection fails its watches,
//!   which list again. Plain `http://` servers stay on HTTP/1.1.
//!
//! Above the connection it has kube's layers, in kube's order: the base URI, the retry of 429
//! and 503 answers (when `default_retry`), the authentication and the extra headers
//! (impersonation). Configurations this stack does not reproduce exactly go through kube's own
//! stack ([`fits`]): a proxy, an exec credential plugin (its client certificates expire), a TLS
//! server name override.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::Config;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder, ConfigExt};
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder};

/// How often an HTTP/2 connection is pinged while it carries requests (client-go's
/// `ReadIdleTimeout`).
pub const PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a ping may wait for its answer before the connection is closed (client-go's
/// `PingTimeout`).
pub const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// The service under a client: requests of kube's body, responses of any body.
type Stack = BoxService<hyper::Request<Body>, hyper::Response<hyper::body::Incoming>, BoxError>;

/// What a shared TLS configuration depends on: the trusted CAs and whether they are checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Trust {
    root_cert: Option<Vec<Vec<u8>>>,
    root_cert_file: Option<PathBuf>,
    accept_invalid_certs: bool,
}

/// The most trusts remembered at once.
const MAX_SHARED: usize = 64;

/// The TLS configurations shared so far, by trust.
static SHARED: OnceLock<Mutex<HashMap<Trust, rustls::ClientConfig>>> = OnceLock::new();

/// Whether this stack reproduces kube's for `config` (else kube's own stack builds it).
pub fn fits(config: &Config) -> bool {
    config.proxy_url.is_none()
        && config.auth_info.exec.is_none()
        && config.tls_server_name.is_none()
}

/// The client builder of `config` over this transport. Call only when [`fits`] holds.
pub fn builder(config: &Config) -> Result<ClientBuilder<Stack>, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(config)?)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http);
    let connections = HyperClient::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_INTERVAL)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .build::<_, Body>(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(connections);
    Ok(ClientBuilder::new(
        BoxService::new(service),
        config.default_namespace.clone(),
    ))
}

/// The TLS configuration of `config`: shared with every client of the same trust when it
/// presents no client certificate, else its own.
fn tls_config(config: &Config) -> Result<rustls::ClientConfig, kube::Error> {
    let auth = &config.auth_info;
    let identity = auth.client_certificate.is_some()
        || auth.client_certificate_data.is_some()
        || auth.client_key.is_some()
        || auth.client_key_data.is_some();
    if identity {
        return config.rustls_client_config();
    }
    let trust = Trust {
        root_cert: config.root_cert.clone(),
        root_cert_file: config.root_cert_file.clone(),
        accept_invalid_certs: config.accept_invalid_certs,
    };
    let mut shared = SHARED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(tls) = shared.get(&trust) {
        // A clone shares the root store, the verifier and the session cache.
        return Ok(tls.clone());
    }
    let tls = config.rustls_client_config()?;
    // Rotated CAs leave trusts no client uses: forget them all now and then (the clients
    // keep their clones).
    if shared.len() >= MAX_SHARED {
        shared.clear();
    }
    shared.insert(trust, tls.clone());
    Ok(tls)
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use hyper_util::server::conn::auto;
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use tokio::net::TcpListener;
    use tokio::sync::Barrier;

    use super::*;
    use crate::clusters::{ClientOptions, build_client};

    /// An https server offering HTTP/2 and HTTP/1.1 (the crate's own serving TLS), answering
    /// each request with its HTTP version once `together` requests are in; returns its URL,
    /// its CA in PEM and the counts of connections it accepted and requests it received.
    async fn server(together: usize) -> (String, String, [Arc<AtomicUsize>; 2]) {
        let dir = std::env::temp_dir().join(format!(
            "mcs-policy-transport-{}-{together}",
            std::process::id()
        ));
        let made = crate::tls::write_self_signed(&dir).unwrap();
        let key = crate::tls::load_certified_key(&made.files).unwrap();
        let tls = crate::tls::server_config(crate::tls::ReloadingResolver::new(key)).unwrap();
        let ca = std::fs::read_to_string(&made.ca_bundle).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(together));
        let (count, requests) = (accepted.clone(), received.clone());
        tokio::spawn(async move {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                let (acceptor, barrier) = (acceptor.clone(), barrier.clone());
                let requests = requests.clone();
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |request: hyper::Request<_>| {
                        let barrier = barrier.clone();
                        requests.fetch_add(1, Ordering::SeqCst);
                        async move {
                            barrier.wait().await;
                            let body = format!("{:?}", request.version());
                            Ok::<_, Infallible>(hyper::Response::new(body))
                        }
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (url, ca, [accepted, received])
    }

    /// A client of `url` trusting `ca`, as a member's kubeconfig context gives it.
    async fn client(url: &str, ca: &str) -> kube::Client {
        use base64::Engine;
        let ca = base64::engine::general_purpose::STANDARD.encode(ca);
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{url}\", \
             certificate-authority-data: {ca}}}\nusers:\n- name: u\n  user: {{token: t}}\n\
             contexts:\n- name: m\n  context: {{cluster: c, user: u}}\ncurrent-context: m\n"
        );
        let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        assert!(fits(&config));
        build_client(config, &ClientOptions::default()).unwrap()
    }

    async fn version(client: &kube::Client) -> String {
        let request = hyper::Request::get("/version").body(Vec::new()).unwrap();
        client.request_text(request).await.unwrap()
    }

    #[tokio::test]
    async fn a_members_concurrent_requests_share_one_http2_connection_over_tls() {
        let (url, ca, [accepted, received]) = server(3).await;
        let member = client(&url, &ca).await;
        let first = tokio::spawn({
            let member = member.clone();
            async move { version(&member).await }
        });
        // The first request holds its connection at the barrier; the next two must join it
        // as streams (HTTP/1.1 would need a connection each).
        while received.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let (second, third) = tokio::join!(version(&member), version(&member));
        assert_eq!(first.await.unwrap(), "HTTP/2.0");
        assert_eq!([second, third], ["HTTP/2.0", "HTTP/2.0"]);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn clients_of_the_same_trust_share_one_tls_configuration() {
        let (url, ca, _) = server(1).await;
        let trusted = |ca: &str| {
            let shared = SHARED.get_or_init(Mutex::default).lock().unwrap();
            shared
                .keys()
                .filter(|t| {
                    t.root_cert
                        .as_ref()
                        .is_some_and(|certs| certs.len() == 1 && ca.contains(&pem_body(&certs[0])))
                })
                .count()
        };
        let one = client(&url, &ca).await;
        let two = client(&url, &ca).await;
        assert_eq!(trusted(&ca), 1, "one configuration for both");
        assert_eq!(version(&one).await, "HTTP/2.0");
        assert_eq!(version(&two).await, "HTTP/2.0");
    }

    /// The first line of base64 of a DER certificate, as its PEM holds it.
    fn pem_body(der: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(der)[..64].to_string()
    }
}
