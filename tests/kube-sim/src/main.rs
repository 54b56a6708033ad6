//! kube-sim: a test double for a Kubernetes API server, for integration tests on machines
//! where no real kube-apiserver can run. See README.md.

mod admin;
mod api;
mod app;
mod builtin;
mod cli;
mod compaction;
mod crd;
mod discovery;
mod empty;
mod faults;
mod field_selector;
mod fields;
mod gojson;
mod gotypes;
mod history;
mod kinds;
mod label_index;
mod label_lexer;
mod label_syntax;
mod lifecycle;
mod listing;
mod network;
mod object;
mod openapi;
mod registry;
mod request_log;
mod selector;
mod server;
mod status;
mod store;
mod stored;
mod strategic;
mod types;
mod value_index;
mod warning;
mod watch_window;

use std::io::Write;
use std::time::Duration;

use clap::Parser;
use tracing_subscriber::EnvFilter;

// One thread: a test run starts many kube-sims on few cores (21 in `scripts/bench-sync.sh`'s
// cold start, on 2), and with a worker pool each their requests were handed between threads.
// Alternating cold starts (3 rounds): the kube-sims' CPU 16.2-19.7 s against 20.6-21.7 s with
// the default pool, every copy in place 14.7-18.1 s against 17.3-18.8 s. Nothing here blocks
// a thread.
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = cli::Args::parse();
    init_logging();
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("kube-sim: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn run(args: cli::Args) -> Result<(), String> {
    let bookmark_interval = Duration::try_from_secs_f64(args.bookmark_interval_seconds)
        .map_err(|e| format!("invalid --bookmark-interval-seconds: {e}"))?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    announce(&format!("listening on http://{address}"))?;
    tracing::info!(cluster = %args.name, %address, "kube-sim serving");
    let settings = app::Settings {
        token: args.token,
        server_address: address.to_string(),
        bookmark_interval,
        history_limit: args
            .watch_history
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        service_cidr: args.service_cluster_ip_range,
    };
    let app = app::App::new(settings);
    compaction::spawn(
        app.clone(),
        Duration::from_secs(args.compaction_interval_seconds),
    );
    tokio::select! {
        () = server::serve(listener, app) => Ok(()),
        () = shutdown_signal() => {
            tracing::info!(cluster = %args.name, "shutting down");
            Ok(())
        }
    }
}

/// Prints the first stdout line, which launchers wait for.
fn announce(line: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => return interrupt.await.unwrap_or(()),
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    interrupt.await.unwrap_or(());
}
