//! What a pass over one MultiClusterService did: copies applied and deleted, the failures of
//! its reads and writes (for the log and the metrics; the component decides what they mean),
//! and whether it must be retried.

pub mod events;
pub mod status;

pub use crate::clusters::api_error::chain;
use crate::clusters::api_error::{Kind, classify};

/// One failed read or write in a cluster.
#[derive(Clone, Debug)]
pub struct Failure {
    pub cluster: String,
    pub kind: Kind,
    /// The error with its causes.
    pub message: String,
}

impl Failure {
    /// The failure of `err` in `cluster` for `mcs`, logged.
    pub fn logged(mcs: &str, cluster: &str, err: &(dyn std::error::Error + 'static)) -> Self {
        let message = chain(err);
        let kind = classify(err);
        if kind.is_credentials() {
            tracing::warn!(mcs, cluster, error = %message, "member cluster refuses our credentials (docs/api-errors.md): fix its kubeconfig or secret, or its RBAC");
        } else {
            tracing::warn!(mcs, cluster, error = %message, "member cluster step failed");
        }
        Failure {
            cluster: cluster.to_string(),
            kind,
            message,
        }
    }
}

/// What a pass did for one MCS.
#[derive(Debug, Default)]
pub struct Report {
    /// Copies applied.
    pub applied: usize,
    /// Stale copies deleted.
    pub deleted: usize,
    /// What failed, read or written.
    pub failures: Vec<Failure>,
    /// The component says the pass must be retried after a backoff.
    pub retry: bool,
}

impl Report {
    /// Whether the pass needs no retry.
    pub fn succeeded(&self) -> bool {
        !self.retry
    }
}
