//! `mcs-policy serve`: load the policy, component and certificate, then accept TLS connections
//! (HTTP/1.1 and h2 by ALPN) until the shutdown signal, and drain in-flight requests.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::{AppState, ServeArgs, router};
use crate::engine::EngineError;
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
    #[error("no certificate: pass --tls-cert and --tls-key, or --self-signed")]
    NoCertificate,
    #[error("listening on {addr} failed")]
    Listen {
        addr: SocketAddr,
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
    let files = certificate_files(&args)?;
    let resolver = ReloadingResolver::new(tls::load_certified_key(&files)?);
    let tls_config = tls::server_config(resolver.clone())?;
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|source| ServeError::Listen {
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
        cert = %files.cert.display(),
        "serving admission webhooks on https://{local} (/validate, /mutate, /validate-multiclusterservice, /mutate-multiclusterservice)"
    );

    // Machine-readable, for scripts and tests that listen on port 0.
    println!("listening on https://{local}");
    let _ = std::io::Write::flush(&mut std::io::stdout());

    let (stop_tx, stop_rx) = watch::channel(false);
    spawn_reloaders(&args, &state, files, resolver, stop_rx.clone());

    let app = router(state.clone());
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let acceptor = TlsAcceptor::from(tls_config);
    tokio::pin!(shutdown);
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
        println!(
            "self-signed CA bundle written to {}\ntry: curl --cacert {} https://{}/healthz",
            made.ca_bundle.display(),
            made.ca_bundle.display(),
            args.listen
        );
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

/// Background tasks that reload the certificate and the component when their files change.
fn spawn_reloaders(
    args: &ServeArgs,
    state: &AppState,
    files: CertFiles,
    resolver: Arc<ReloadingResolver>,
    stop: watch::Receiver<bool>,
) {
    let until_stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stopped| *stopped).await;
    };
    let metrics = state.metrics.clone();
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
