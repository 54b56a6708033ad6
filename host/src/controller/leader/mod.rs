//! Leader election for `mcs-policy sync` (see `docs/sync.md`, "High availability"): several
//! replicas may run, and only the holder of a `coordination.k8s.io/v1` Lease in the hub syncs.
//! [`super::run`] waits for [`Leadership::acquired`] before it starts, stops when
//! [`Leadership::lost`] resolves, and [`Leadership::release`]s the Lease on shutdown.
//!
//! The protocol is client-go's `leaderelection` package with a `LeaseLock`:
//! - every retry period a candidate reads the Lease (creating it, and its namespace, if
//!   missing) and takes it when nobody holds it, when we already hold it, or when the holder has
//!   not changed the record for `leaseDurationSeconds`, measured on *our* monotonic clock from
//!   when we last saw the record change, so clock skew between replicas does not matter;
//! - every write is a PUT carrying the resourceVersion that was read, so of two replicas racing
//!   for the Lease one wins and the other gets 409 Conflict;
//! - the leader renews every retry period; when renewing has not succeeded within the renew
//!   deadline (or the Lease turns out to be held by someone else) it stops leading;
//! - on shutdown the leader empties `holderIdentity` and sets `leaseDurationSeconds: 1`
//!   (client-go's `ReleaseOnCancel`), so another replica takes over at once.
//!
//! Like client-go's `LeaderElector.Run`, a [`Leadership`] leads at most once: once lost, the
//! controller exits and its Deployment starts it again.
//!
//! Parts: `args` (the flags and their checks), this module (the handle the controller holds),
//! `elector` (the task that reads and writes the Lease) and `record` (what to write, no I/O).
//!
//! Why not a crate. `kube-lease-manager` 0.13.1 builds with kube 5.0 and k8s-openapi 0.29 but
//! keeps other semantics: it computes expiry from the holder's `renewTime` on the wall clock
//! (clock skew matters), writes with server-side apply and strategic merge patches instead of a
//! PUT carrying the resourceVersion, counts a transition on the first acquisition, takes whole
//! seconds only (no `1500ms` renew deadline), releases by clearing the fields rather than
//! `holderIdentity: ""` with `leaseDurationSeconds: 1` (a standby sleeps until the old expiry
//! instead of taking over at its next retry), does not create the Lease's namespace, and has no
//! renew deadline: a leader that cannot reach the hub keeps reporting that it leads, where we
//! must stop and exit. `kubert`'s lease module (0.25) needs kube 1.1 and k8s-openapi 0.25. Both
//! were read against the behaviour `tests/tests/sync_leader.rs` checks and the README promises;
//! the hand-made elector stays.

mod args;
mod elector;
mod record;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

pub use args::{LeaderArgs, LeaderError};
use elector::{Elector, elect};

/// Where this replica stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Trying to acquire the Lease.
    Candidate,
    /// Holding the Lease.
    Leader,
    /// No longer leading, or stopped before leading; this [`Leadership`] will not lead again.
    Done,
}

/// This replica's leadership: always leading without `--leader-elect`, else driven by a task
/// that acquires and renews the Lease. Dropping it stops that task (which releases the Lease in
/// the background); [`Leadership::release`] does the same and waits for it.
#[derive(Debug)]
pub struct Leadership {
    role: watch::Receiver<Role>,
    /// Keeps the channel open when no election runs.
    _fixed: Option<watch::Sender<Role>>,
    /// Stops the election task, and the task.
    task: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
    /// Why the election cannot reach the Lease while it waits for it (`None`: it can).
    lease_problem: watch::Receiver<Option<String>>,
}

/// Starts leader election in the hub (`--leader-elect`), or returns a leadership that always
/// leads. Needs a Tokio runtime.
pub fn start(hub: kube::Client, args: &LeaderArgs) -> Result<Leadership, LeaderError> {
    args.validate()?;
    let (problems, lease_problem) = watch::channel(None);
    if !args.leader_elect {
        let (fixed, role) = watch::channel(Role::Leader);
        return Ok(Leadership {
            role,
            _fixed: Some(fixed),
            task: None,
            lease_problem,
        });
    }
    let elector = Elector::new(hub, args, problems);
    let (sender, role) = watch::channel(Role::Candidate);
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(elect(elector, sender, stopped));
    Ok(Leadership {
        role,
        _fixed: None,
        task: Some((stop, task)),
        lease_problem,
    })
}

impl Leadership {
    /// Whether this replica leads now.
    pub fn is_leader(&self) -> bool {
        *self.role.borrow() == Role::Leader
    }

    /// Resolves once this replica leads (at once without `--leader-elect`); never if it stopped
    /// before leading.
    pub async fn acquired(&mut self) {
        let leading = matches!(
            self.role
                .wait_for(|r| *r != Role::Candidate)
                .await
                .as_deref(),
            Ok(Role::Leader)
        );
        if !leading {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves once this replica, having led, no longer does (or the election stopped);
    /// never without `--leader-elect`.
    pub async fn lost(&mut self) {
        // An error means the election task is gone: not leading either.
        let _ = self.role.wait_for(|r| *r == Role::Done).await;
    }

    /// Why the election cannot reach the Lease, as it changes: `None` while it can (or without
    /// `--leader-elect`), the last failure once several attempts in a row have failed.
    pub fn lease_problems(&self) -> watch::Receiver<Option<String>> {
        self.lease_problem.clone()
    }

    /// Stops the election; when leading, gives the Lease up first so another replica takes
    /// over at once.
    pub async fn release(mut self) {
        if let Some((stop, task)) = self.task.take() {
            let _ = stop.send(());
            let _ = task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::args::tests::parse;
    use super::*;

    #[tokio::test]
    async fn without_election_this_replica_always_leads() {
        let mut leadership = start(test_client(), &parse(&[])).unwrap();
        assert!(leadership.is_leader());
        tokio::time::timeout(Duration::from_secs(1), leadership.acquired())
            .await
            .expect("acquired at once");
        let lost = tokio::time::timeout(Duration::from_millis(50), leadership.lost()).await;
        assert!(lost.is_err(), "never lost");
        leadership.release().await;
    }

    /// A client for an address nothing listens on: building it touches no network.
    fn test_client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }
}
