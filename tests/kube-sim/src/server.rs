//! The HTTP/1.1 accept loop. Each connection is served by hyper; while the server is
//! "unreachable", every request outside `/_sim/` gets its connection closed without a response.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

use crate::app::{self, App};

/// The error that makes hyper drop a connection without answering.
#[derive(Debug)]
struct Unreachable;

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("kube-sim is simulating an unreachable server")
    }
}

impl std::error::Error for Unreachable {}

/// Serves connections from `listener` forever.
pub async fn serve(listener: TcpListener, app: Arc<App>) {
    let router = app::router(app.clone());
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve_connection(stream, router.clone(), app.clone()));
            }
            Err(e) => {
                // Out of file descriptors and the like: back off briefly and keep accepting.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn serve_connection(stream: TcpStream, router: Router, app: Arc<App>) {
    // Nagle would delay small watch events.
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let router = router.clone();
        let app = app.clone();
        async move {
            if app.network.is_unreachable() && !request.uri().path().starts_with("/_sim/") {
                return Err(Unreachable);
            }
            let response = router.oneshot(request).await;
            Ok(response.unwrap_or_else(|never: Infallible| match never {}))
        }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    if let Err(e) = connection.await {
        tracing::debug!(error = %e, "connection ended");
    }
}
