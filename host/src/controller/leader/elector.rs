//! The election task: client-go's `LeaderElector` over a `LeaseLock`. It reads and writes the
//! Lease in the hub (creating it and its namespace when missing), publishes this replica's
//! [`Role`], renews while leading, and releases the Lease when stopped. What to write is
//! decided by [`super::record`].

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::record::{claim, holder, may_take, now, released, unexpired, whole_seconds};
use super::{LeaderArgs, Role};

/// The election task: acquire, then renew until lost or stopped.
pub(super) async fn elect(
    mut elector: Elector,
    role: watch::Sender<Role>,
    mut stop: oneshot::Receiver<()>,
) {
    tracing::info!(lease = %elector.describe(), identity = %elector.identity, "attempting to acquire the leader lease");
    tokio::select! {
        _ = &mut stop => {
            role.send_replace(Role::Done);
            return;
        }
        () = elector.acquire() => {}
    }
    role.send_replace(Role::Leader);
    tracing::info!(lease = %elector.describe(), identity = %elector.identity, "became leader");
    let stopped = tokio::select! {
        _ = &mut stop => true,
        () = elector.keep() => false,
    };
    if stopped {
        elector.release().await;
        role.send_replace(Role::Done);
        return;
    }
    role.send_replace(Role::Done);
    tracing::warn!(lease = %elector.describe(), identity = %elector.identity, "lost leadership");
}

/// The lease record last seen, and when it was first seen so on the local monotonic clock.
#[derive(Debug, Clone, PartialEq)]
struct Observed {
    spec: LeaseSpec,
    at: Instant,
}

/// What one acquire-or-renew attempt found.
#[derive(Debug, PartialEq)]
enum Attempt {
    /// We hold the Lease (created, taken or renewed).
    Leading,
    /// Someone else holds it and it has not expired.
    HeldBy(String),
    /// Reading or writing failed (why); try again later.
    Failed(String),
}

/// Failed attempts in a row after which a follower reports the Lease out of reach: one can
/// fail when two replicas write at once; three (6 s at the default retry period) cannot.
const FAILURES_BEFORE_UNREACHABLE: u32 = 3;

/// client-go's `LeaderElector` over a `LeaseLock`.
pub(super) struct Elector {
    leases: Api<Lease>,
    namespaces: Api<Namespace>,
    name: String,
    namespace: String,
    identity: String,
    /// `leaseDurationSeconds` we write: the lease duration in whole seconds, rounded up.
    lease_seconds: i32,
    renew_deadline: Duration,
    retry_period: Duration,
    /// The Lease as last read or written; its resourceVersion makes the next write conditional.
    lease: Option<Lease>,
    observed: Option<Observed>,
    /// The holder last logged.
    reported: Option<String>,
    /// Why the Lease is out of reach while this replica follows (`None`: it is not).
    lease_problem: watch::Sender<Option<String>>,
}

impl Elector {
    pub(super) fn new(
        hub: kube::Client,
        args: &LeaderArgs,
        lease_problem: watch::Sender<Option<String>>,
    ) -> Elector {
        Elector {
            leases: Api::namespaced(hub.clone(), &args.lease_namespace),
            namespaces: Api::all(hub),
            name: args.lease_name.clone(),
            namespace: args.lease_namespace.clone(),
            identity: args.identity(),
            lease_seconds: whole_seconds(args.lease_duration),
            renew_deadline: args.renew_deadline,
            retry_period: args.retry_period,
            lease: None,
            observed: None,
            reported: None,
            lease_problem,
        }
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Tries every retry period until we hold the Lease. Publishes why the Lease is out of
    /// reach once [`FAILURES_BEFORE_UNREACHABLE`] attempts in a row have failed, and that it is
    /// not after any attempt that reads it.
    async fn acquire(&mut self) {
        let mut failures = 0;
        loop {
            let attempt = tokio::time::timeout(self.renew_deadline, self.try_acquire_or_renew())
                .await
                .unwrap_or_else(|_| {
                    Attempt::Failed(format!(
                        "lease {}: no answer within the renew deadline ({:?})",
                        self.describe(),
                        self.renew_deadline
                    ))
                });
            match attempt {
                Attempt::Leading => {
                    self.lease_problem.send_replace(None);
                    return;
                }
                Attempt::HeldBy(_) => {
                    failures = 0;
                    self.lease_problem.send_replace(None);
                }
                Attempt::Failed(why) => {
                    failures += 1;
                    if failures >= FAILURES_BEFORE_UNREACHABLE {
                        self.lease_problem.send_replace(Some(why));
                    }
                }
            }
            tokio::time::sleep(self.retry_period).await;
        }
    }

    /// Renews every retry period; returns when leadership is lost.
    async fn keep(&mut self) {
        loop {
            tokio::time::sleep(self.retry_period).await;
            if !self.renew().await {
                return;
            }
        }
    }

    /// One renewal: retries every retry period until it succeeds (`true`), the renew deadline
    /// passes or the Lease is found held by someone else (`false`).
    async fn renew(&mut self) -> bool {
        let deadline = Instant::now() + self.renew_deadline;
        loop {
            match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                Ok(Attempt::Leading) => return true,
                Ok(Attempt::HeldBy(_)) | Err(_) => return false,
                Ok(Attempt::Failed(_)) => {}
            }
            let next = Instant::now() + self.retry_period;
            if next >= deadline {
                return false;
            }
            tokio::time::sleep_until(next).await;
        }
    }

    /// client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> Attempt {
        // 1. The leader's fast path: write over the Lease as we last wrote it.
        if let (Some(observed), Some(lease)) = (&self.observed, &self.lease)
            && holder(&observed.spec) == self.identity
            && unexpired(&observed.spec, observed.at, Instant::now())
        {
            let record = claim(
                Some(&observed.spec),
                &self.identity,
                self.lease_seconds,
                now(),
            );
            match self.write(lease.clone(), record).await {
                Ok(()) => return Attempt::Leading,
                Err(err) => {
                    tracing::debug!(error = %err, "optimistic renewal failed; reading the lease")
                }
            }
        }
        // 2. Read the Lease, or create it.
        let current = match self.leases.get_opt(&self.name).await {
            Ok(Some(current)) => current,
            Ok(None) => return self.create().await,
            Err(err) => {
                tracing::warn!(lease = %self.describe(), error = %err, "cannot read the leader lease");
                return Attempt::Failed(format!("reading lease {}: {err}", self.describe()));
            }
        };
        let observed = self.observe(current.spec.clone().unwrap_or_default());
        self.lease = Some(current.clone());
        self.report(&observed.spec);
        // 3. Held by someone else and not expired: wait.
        if !may_take(&observed.spec, observed.at, Instant::now(), &self.identity) {
            return Attempt::HeldBy(holder(&observed.spec).to_string());
        }
        // 4. Take or renew it.
        let record = claim(
            Some(&observed.spec),
            &self.identity,
            self.lease_seconds,
            now(),
        );
        match self.write(current, record).await {
            Ok(()) => Attempt::Leading,
            Err(err) => {
                tracing::info!(lease = %self.describe(), error = %err, "cannot update the leader lease");
                Attempt::Failed(format!("updating lease {}: {err}", self.describe()))
            }
        }
    }

    /// Creates the Lease (and its namespace) with us as holder.
    async fn create(&mut self) -> Attempt {
        self.ensure_namespace().await;
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(claim(None, &self.identity, self.lease_seconds, now())),
        };
        match self.leases.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.observe(created.spec.clone().unwrap_or_default());
                self.lease = Some(created);
                Attempt::Leading
            }
            Err(err) => {
                tracing::info!(lease = %self.describe(), error = %err, "cannot create the leader lease");
                Attempt::Failed(format!("creating lease {}: {err}", self.describe()))
            }
        }
    }

    /// Creates the Lease's namespace when it does not exist. Failures are only logged: without
    /// the right to read or create namespaces, creating the Lease says whether it exists.
    async fn ensure_namespace(&self) {
        match self.namespaces.get_opt(&self.namespace).await {
            Ok(Some(_)) => return,
            Ok(None) => {}
            Err(err) => {
                return tracing::debug!(namespace = %self.namespace, error = %err, "cannot read the lease namespace");
            }
        }
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match self
            .namespaces
            .create(&PostParams::default(), &namespace)
            .await
        {
            Ok(_) => tracing::info!(namespace = %self.namespace, "created the lease namespace"),
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(err) => {
                tracing::warn!(namespace = %self.namespace, error = %err, "cannot create the lease namespace")
            }
        }
    }

    /// PUTs `lease` (with the resourceVersion it was read with) carrying `record`.
    async fn write(&mut self, mut lease: Lease, record: LeaseSpec) -> Result<(), kube::Error> {
        lease.spec = Some(record);
        let written = self
            .leases
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        self.observe(written.spec.clone().unwrap_or_default());
        self.lease = Some(written);
        Ok(())
    }

    /// Remembers `spec`, restarting the expiry clock when it differs from the last one seen.
    fn observe(&mut self, spec: LeaseSpec) -> Observed {
        match &self.observed {
            Some(seen) if seen.spec == spec => seen.clone(),
            _ => {
                let seen = Observed {
                    spec,
                    at: Instant::now(),
                };
                self.observed = Some(seen.clone());
                seen
            }
        }
    }

    /// Logs the holder when it changed since last logged.
    fn report(&mut self, spec: &LeaseSpec) {
        let holder = holder(spec);
        if self.reported.as_deref() == Some(holder) {
            return;
        }
        if !holder.is_empty() && holder != self.identity {
            tracing::info!(lease = %self.describe(), holder, "lease held by {holder}");
        }
        self.reported = Some(holder.to_string());
    }

    /// client-go's `release`: when we hold the Lease, empties its holder so another replica
    /// takes it at once. Bounded by the renew deadline; failures are logged (the Lease then
    /// expires by itself).
    async fn release(&mut self) {
        let released = tokio::time::timeout(self.renew_deadline, async {
            for _ in 0..2 {
                let (Some(observed), Some(lease)) = (&self.observed, &self.lease) else {
                    return Ok(());
                };
                if holder(&observed.spec) != self.identity {
                    return Ok(());
                }
                let record = released(&observed.spec, now());
                match self.write(lease.clone(), record).await {
                    // Our last renewal may have been cut short: read the Lease and try again.
                    Err(kube::Error::Api(status)) if status.is_conflict() => {
                        let current = self.leases.get(&self.name).await?;
                        self.observe(current.spec.clone().unwrap_or_default());
                        self.lease = Some(current);
                    }
                    other => return other,
                }
            }
            Ok(())
        })
        .await;
        match released {
            Ok(Ok(())) => tracing::info!(lease = %self.describe(), "released the leader lease"),
            Ok(Err(err)) => {
                tracing::warn!(lease = %self.describe(), error = %err, "cannot release the leader lease")
            }
            Err(_) => {
                tracing::warn!(lease = %self.describe(), "releasing the leader lease timed out")
            }
        }
    }
}
