//! What a pass over one MultiClusterService did: copies applied and deleted, and the member
//! failures that make it retried and that its conditions and Events report.

use std::collections::BTreeSet;

use super::events::incompatible;
use super::read::ReadError;
pub use crate::clusters::api_error::chain;
use crate::clusters::api_error::{Kind, classify};

/// What a pass did for one MCS.
#[derive(Debug, Default)]
pub struct Report {
    /// Copies applied.
    pub applied: usize,
    /// Stale copies deleted.
    pub deleted: usize,
    /// Member-cluster failures, rendered with their causes.
    pub errors: Vec<String>,
    /// The cluster and kind of each failure in `errors`.
    pub failures: Vec<(String, Kind)>,
    /// `APIIncompatible` messages: clusters that answered 404 to a list of EndpointSlices,
    /// i.e. do not serve them.
    pub incompatible: BTreeSet<String>,
    /// The Service could not be propagated to some member (a missing template does not count:
    /// the hub's Service watch reports its arrival).
    pub service_failed: bool,
    /// A provider's Service could not be read for the load balancer status.
    pub load_balancer_failed: bool,
}

impl Report {
    /// Whether every step succeeded (otherwise the MCS is retried after a backoff).
    pub fn succeeded(&self) -> bool {
        self.errors.is_empty() && !self.service_failed && !self.load_balancer_failed
    }

    pub(super) fn fail(
        &mut self,
        mcs: &str,
        cluster: &str,
        err: &(dyn std::error::Error + 'static),
    ) {
        let message = chain(err);
        let kind = classify(err);
        if kind.is_credentials() {
            tracing::warn!(mcs, cluster, error = %message, "member cluster refuses our credentials (docs/api-errors.md): fix its kubeconfig or secret, or its RBAC");
        } else {
            tracing::warn!(mcs, cluster, error = %message, "member cluster step failed");
        }
        self.errors.push(message);
        self.failures.push((cluster.to_string(), kind));
    }

    /// Adds what another part of the same pass did.
    pub(super) fn absorb(&mut self, other: Report) {
        self.applied += other.applied;
        self.deleted += other.deleted;
        self.errors.extend(other.errors);
        self.failures.extend(other.failures);
        self.incompatible.extend(other.incompatible);
        self.service_failed |= other.service_failed;
        self.load_balancer_failed |= other.load_balancer_failed;
    }

    /// Fails a list of EndpointSlices in `cluster` (a `role` cluster); a 404 there means the
    /// cluster does not serve EndpointSlices at all.
    pub(super) fn fail_list(&mut self, mcs: &str, role: &str, cluster: &str, err: &ReadError) {
        if classify(err) == Kind::NotFound {
            self.incompatible.insert(incompatible(role, cluster));
        }
        self.fail(mcs, cluster, err);
    }

    /// The reports of parts of one pass, as one.
    pub(super) fn merged(parts: impl IntoIterator<Item = Report>) -> Report {
        let mut all = Report::default();
        for part in parts {
            all.absorb(part);
        }
        all
    }
}
