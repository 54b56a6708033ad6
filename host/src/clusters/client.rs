//! Clients of the member clusters and the hub, with the error handling of `docs/api-errors.md`:
//! 429 and 503 answers are retried after their `Retry-After` (kube's server-aware retry
//! layer, which `Config::default_retry` turns on), and no request waits longer than
//! `--request-timeout` for its answer, retries included, so a hanging member fails its step
//! instead of stalling the pass.

use std::time::Duration;

use kube::client::ClientBuilder;
use kube::{Client, Config};
use tower::timeout::TimeoutLayer;

use super::transport;

/// How clients talk to their cluster.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// The longest wait for a response's headers, retries after 429/503 included. Watches
    /// are unaffected once their stream has started.
    pub request_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// A client for `config` with `options` applied, over the [`transport`] shared by the
/// clusters (kube's own stack when it does not fit the configuration).
pub fn build_client(mut config: Config, options: &ClientOptions) -> Result<Client, kube::Error> {
    config.default_retry = true;
    config.connect_timeout = Some(
        config
            .connect_timeout
            .map_or(options.request_timeout, |t| t.min(options.request_timeout)),
    );
    let timeout = TimeoutLayer::new(options.request_timeout);
    if transport::fits(&config) {
        return Ok(transport::builder(&config)?.with_layer(&timeout).build());
    }
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&timeout)
        .build())
}
