//! `mcs-policy serve`: load the policy, component and certificate, then accept TLS connections
//! (HTTP/1.1 and h2 by ALPN) until the shutdown signal, and drain in-flight requests.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::managed::{Keeper, ManagedError, Material};
use super::{AppState, ServeArgs, router};
use crate::engine::EngineError;
use crate::listen::{self, ListenAddr};
use crate::reload::watch_files;
use crate::settings::SettingsError;
use crate::tls::{self, CertFiles, ReloadingResolver, TlsError};

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Managed(#[from] Box<ManagedError>),
    #[error(
        "no certificate: pass --tls-cert and --tls-key, --self-signed, or --certificate-secret"
    )]
    NoCertificate,
    #[error("listening on {addr} failed")]
    Listen {
        addr: ListenAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Runs the server until `shutdown` resolves, then drains for up to `--drain-timeout`.
pub async fn serve(
    args: ServeArgs,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (policy, context) = args.policy.load()?;
    let engine = args.engine.load()?;
    crate::malloc::release_freed();
    tokio::pin!(shutdown);
    let keeper = Keeper::from_args(&args.managed).await.map_err(Box::new)?;
    let (key, source) = match keeper {
        Some(keeper) => {
            let Some(material) = first_material(&keeper, &mut shutdown).await else {
                return Ok(());
            };
            let key = tls::certified_key_from_pem(
                material.tls_cert.as_bytes(),
                material.tls_key.as_bytes(),
            )?;
            (key, Source::Managed(Box::new((keeper, material))))
        }
        None => {
            let files = certificate_files(&args)?;
            (tls::load_certified_key(&files)?, Source::Files(files))
        }
    };
    let resolver = ReloadingResolver::new(key);
    let tls_config = tls::server_config(resolver.clone())?;
    let listener = listen::bind(args.listen).map_err(|source| ServeError::Listen {
        addr: args.listen,
        source,
    })?;
    let local = listener.local_addr().map_err(|source| ServeError::Listen {
        addr: args.listen,
        source,
    })?;

    let mut state = AppState::new(engine.clone(), policy, context, args.engine.max_concurrency);
    state.default_timeout = args.default_timeout;
    state.timeout_margin = args.timeout_margin;
    tracing::info!(
        listen = %local,
        policy = %state.policy.name,
        component = %engine.digest(),
        cert = %source,
        "serving admission webhooks on https://{local} (/validate, /mutate, /validate-multiclusterservice, /mutate-multiclusterservice)"
    );

    // Machine-readable, for scripts and tests that listen on port 0.
    crate::logging::announce(&format!("listening on https://{local}"));

    let (stop_tx, stop_rx) = watch::channel(false);
    let (serving_tx, serving_rx) = watch::channel(false);
    spawn_reloaders(&args, &state, source, resolver, serving_rx, stop_rx.clone());

    let app = router(state.clone());
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let acceptor = TlsAcceptor::from(tls_config);
    // From here on connections are accepted: the webhook configurations may be told to trust
    // this server's CA.
    let _ = serving_tx.send(true);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(err) => {
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(err)) => {
                    tracing::debug!(%peer, error = %err, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let conn = builder
                .serve_connection(TokioIo::new(tls), service)
                .into_owned();
            if let Err(err) = watcher.watch(conn).await {
                tracing::debug!(%peer, error = %err, "connection ended with an error");
            }
        });
    }

    state.ready.store(false, Ordering::Relaxed);
    drop(listener);
    let _ = stop_tx.send(true);
    tracing::info!(drain_timeout = ?args.drain_timeout, "shutting down: draining in-flight requests");
    if tokio::time::timeout(args.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("drain timeout reached; closing remaining connections");
    }
    tracing::info!("server stopped");
    Ok(())
}

fn certificate_files(args: &ServeArgs) -> Result<CertFiles, ServeError> {
    if args.self_signed {
        let made = tls::write_self_signed(&args.self_signed_dir)?;
        tracing::info!(ca_bundle = %made.ca_bundle.display(), "self-signed certificate for localhost written");
        if !crate::logging::json() {
            println!(
                "self-signed CA bundle written to {}\ntry: curl --cacert {} https://{}/healthz",
                made.ca_bundle.display(),
                made.ca_bundle.display(),
                curl_host(args.listen)
            );
        }
        return Ok(made.files);
    }
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Ok(CertFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => Err(ServeError::NoCertificate),
    }
}

/// Where the serving certificate comes from.
enum Source {
    Files(CertFiles),
    Managed(Box<(Keeper, Material)>),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Files(files) => write!(f, "{}", files.cert.display()),
            Source::Managed(managed) => write!(f, "Secret {}", managed.0.secret_name()),
        }
    }
}

/// The first material of a self-managed certificate: tried until it succeeds (the API server
/// may not be reachable yet), each failure logged, or `None` when shutdown comes first.
async fn first_material(
    keeper: &Keeper,
    shutdown: &mut (impl Future<Output = ()> + Unpin),
) -> Option<Material> {
    let mut wait = Duration::from_millis(500);
    loop {
        match keeper.certificate().await {
            Ok(material) => return Some(material),
            Err(err) => {
                tracing::warn!(error = %err, retry_in = ?wait, "the webhook certificate is not ready yet")
            }
        }
        tokio::select! {
            _ = &mut *shutdown => return None,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

/// Once the server accepts connections (`serving`), and then every
/// `--certificate-check-interval`, keeps the Secret and the `caBundle` of the configurations,
/// and serves a renewed certificate for new handshakes. Until a round finds both configurations
/// and leaves them trusting the Secret's CAs, the next comes sooner: after 1 s, doubling up to
/// the interval.
async fn keep_certificate(
    keeper: Keeper,
    mut served: Material,
    resolver: Arc<ReloadingResolver>,
    metrics: Arc<super::Metrics>,
    mut serving: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) {
    tokio::select! {
        _ = stop.wait_for(|stopped| *stopped) => return,
        ready = serving.wait_for(|serving| *serving) => if ready.is_err() { return },
    }
    let mut retry = Duration::from_secs(1);
    loop {
        let wait = match keeper.keep().await {
            Ok(round) => {
                let wait = if round.settled {
                    keeper.interval
                } else {
                    retry.min(keeper.interval)
                };
                serve_renewed(&keeper, &mut served, round.material, &resolver, &metrics);
                wait
            }
            Err(err) => {
                tracing::warn!(error = %err, "keeping the webhook certificate failed; serving the current one");
                retry.min(keeper.interval)
            }
        };
        retry = if wait == keeper.interval {
            Duration::from_secs(1)
        } else {
            retry * 2
        };
        tokio::select! {
            _ = stop.wait_for(|stopped| *stopped) => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Serves `material` for new handshakes when it is not what `served` is.
fn serve_renewed(
    keeper: &Keeper,
    served: &mut Material,
    material: Material,
    resolver: &ReloadingResolver,
    metrics: &super::Metrics,
) {
    if material.tls_cert == served.tls_cert && material.tls_key == served.tls_key {
        return;
    }
    match tls::certified_key_from_pem(material.tls_cert.as_bytes(), material.tls_key.as_bytes()) {
        Ok(key) => {
            resolver.replace(key);
            metrics.reload("certificate", true);
            tracing::info!(secret = %keeper.secret_name(), "serving the renewed certificate");
            *served = material;
        }
        Err(err) => {
            metrics.reload("certificate", false);
            tracing::error!(error = %err, "the Secret's certificate does not load; keeping the previous one");
        }
    }
}

/// The host of the `try: curl` line: the loopback address for `:PORT` and unspecified ones.
fn curl_host(listen: ListenAddr) -> String {
    match listen {
        ListenAddr::Addr(addr) if !addr.ip().is_unspecified() => addr.to_string(),
        ListenAddr::Addr(addr) => format!("localhost:{}", addr.port()),
        ListenAddr::Any(port) => format!("localhost:{port}"),
    }
}

/// Background tasks that reload the certificate and the component when their files change, or
/// keep a self-managed certificate.
fn spawn_reloaders(
    args: &ServeArgs,
    state: &AppState,
    source: Source,
    resolver: Arc<ReloadingResolver>,
    serving: watch::Receiver<bool>,
    stop: watch::Receiver<bool>,
) {
    let metrics = state.metrics.clone();
    let files = match source {
        Source::Files(files) => files,
        Source::Managed(managed) => {
            let (keeper, material) = *managed;
            tokio::spawn(keep_certificate(
                keeper,
                material,
                resolver,
                metrics,
                serving,
                stop.clone(),
            ));
            spawn_component_reloader(args, state, stop);
            return;
        }
    };
    let cert_files = files.clone();
    tokio::spawn(watch_files(
        vec![files.cert.clone(), files.key.clone()],
        args.reload_interval,
        move || match tls::load_certified_key(&cert_files) {
            Ok(key) => {
                resolver.replace(key);
                metrics.reload("certificate", true);
                tracing::info!(cert = %cert_files.cert.display(), "certificate reloaded");
            }
            Err(err) => {
                metrics.reload("certificate", false);
                tracing::error!(error = %err, "certificate changed but could not be loaded; keeping the previous one");
            }
        },
        until_stopped(stop.clone()),
    ));
    spawn_component_reloader(args, state, stop);
}

/// Resolves once `rx` says stopped.
async fn until_stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stopped| *stopped).await;
}

/// Reloads `--component` when its file changes.
fn spawn_component_reloader(args: &ServeArgs, state: &AppState, stop: watch::Receiver<bool>) {
    if let Some(path) = args.engine.component.clone() {
        let engine = state.engine.clone();
        let metrics = state.metrics.clone();
        let watched = path.clone();
        tokio::spawn(watch_files(
            vec![watched],
            args.reload_interval,
            move || match tokio::task::block_in_place(|| {
                let reloaded = engine.reload_from_file(&path);
                crate::malloc::release_freed();
                reloaded
            }) {
                Ok(digest) => {
                    metrics.reload("component", true);
                    tracing::info!(component = %path.display(), %digest, "policy component reloaded");
                }
                Err(err) => {
                    metrics.reload("component", false);
                    tracing::error!(error = %err, "policy component changed but was refused; the previous one keeps serving");
                }
            },
            until_stopped(stop),
        ));
    }
}
