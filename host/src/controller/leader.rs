//! Leader election for `mcs-policy sync` (SPEC §4.11): several replicas may run, and only the
//! holder of a `coordination.k8s.io/v1` Lease in the hub syncs. [`super::run`] waits for
//! [`Leadership::acquired`] before it starts, stops when [`Leadership::lost`] resolves, and
//! [`Leadership::release`]s the Lease on shutdown.
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

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Leader election (`mcs-policy sync` flags). Durations use Go's syntax (`15s`, `1500ms`).
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Elect one leader among the replicas through a Lease in the hub; only the leader syncs, the
    /// others wait and take over within the lease duration. Off: this replica always syncs and
    /// no Lease is touched.
    #[arg(long)]
    pub leader_elect: bool,

    /// Name of the Lease (`coordination.k8s.io/v1`) in the hub.
    #[arg(long, default_value = "mcs-policy-sync", value_name = "NAME")]
    pub lease_name: String,

    /// Namespace of the Lease; created if it does not exist.
    #[arg(long, default_value = "mcs-policy-system", value_name = "NAMESPACE")]
    pub lease_namespace: String,

    /// How long the other replicas wait, after they last saw the Lease change, before they take
    /// it over from a leader that stopped renewing. Must exceed --renew-deadline.
    #[arg(long, default_value = "15s", value_parser = crate::duration::parse_positive_duration, value_name = "DURATION")]
    pub lease_duration: Duration,

    /// How long the leader keeps retrying a failing renewal before it stops leading (and the
    /// process exits with an error). Must exceed --retry-period.
    #[arg(long, default_value = "10s", value_parser = crate::duration::parse_positive_duration, value_name = "DURATION")]
    pub renew_deadline: Duration,

    /// Time between two attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = crate::duration::parse_positive_duration, value_name = "DURATION")]
    pub retry_period: Duration,

    /// This replica's name in the Lease's holderIdentity; unique per replica. Default: the host
    /// name (the pod name in Kubernetes), `_`, the process id and start time.
    #[arg(long, value_name = "NAME")]
    pub identity: Option<String>,
}

/// Why leader election cannot start: its flags contradict each other.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("--lease-duration ({lease:?}) must be greater than --renew-deadline ({renew:?})")]
    LeaseNotAboveRenew { lease: Duration, renew: Duration },
    #[error("--renew-deadline ({renew:?}) must be greater than --retry-period ({retry:?})")]
    RenewNotAboveRetry { renew: Duration, retry: Duration },
    #[error("--identity must not be empty (an empty holderIdentity means the lease is free)")]
    EmptyIdentity,
    #[error("--lease-name and --lease-namespace must not be empty")]
    EmptyLease,
}

impl LeaderArgs {
    /// Checks the flags as client-go's `NewLeaderElector` does.
    pub fn validate(&self) -> Result<(), LeaderError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(LeaderError::LeaseNotAboveRenew {
                lease: self.lease_duration,
                renew: self.renew_deadline,
            });
        }
        if self.renew_deadline <= self.retry_period {
            return Err(LeaderError::RenewNotAboveRetry {
                renew: self.renew_deadline,
                retry: self.retry_period,
            });
        }
        if self.identity.as_deref() == Some("") {
            return Err(LeaderError::EmptyIdentity);
        }
        if self.lease_name.is_empty() || self.lease_namespace.is_empty() {
            return Err(LeaderError::EmptyLease);
        }
        Ok(())
    }

    /// `--identity`, or the default one.
    pub fn identity(&self) -> String {
        self.identity.clone().unwrap_or_else(default_identity)
    }
}

/// Host name, `_`, process id and start time (µs since the epoch): unique per process without
/// any randomness, and readable in `kubectl get lease -o yaml`.
fn default_identity() -> String {
    let host = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "mcs-policy".to_string());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default();
    format!("{host}_{}-{started}", std::process::id())
}

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
}

/// Starts leader election in the hub (`--leader-elect`), or returns a leadership that always
/// leads. Needs a Tokio runtime.
pub fn start(hub: kube::Client, args: &LeaderArgs) -> Result<Leadership, LeaderError> {
    args.validate()?;
    if !args.leader_elect {
        let (fixed, role) = watch::channel(Role::Leader);
        return Ok(Leadership {
            role,
            _fixed: Some(fixed),
            task: None,
        });
    }
    let elector = Elector::new(hub, args);
    let (sender, role) = watch::channel(Role::Candidate);
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(elect(elector, sender, stopped));
    Ok(Leadership {
        role,
        _fixed: None,
        task: Some((stop, task)),
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

    /// Stops the election; when leading, gives the Lease up first so another replica takes
    /// over at once.
    pub async fn release(mut self) {
        if let Some((stop, task)) = self.task.take() {
            let _ = stop.send(());
            let _ = task.await;
        }
    }
}

/// The election task: acquire, then renew until lost or stopped.
async fn elect(mut elector: Elector, role: watch::Sender<Role>, mut stop: oneshot::Receiver<()>) {
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
    /// Reading or writing failed; try again later.
    Failed,
}

/// client-go's `LeaderElector` over a `LeaseLock`.
struct Elector {
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
}

impl Elector {
    fn new(hub: kube::Client, args: &LeaderArgs) -> Elector {
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
        }
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Tries every retry period until we hold the Lease.
    async fn acquire(&mut self) {
        loop {
            let attempt = tokio::time::timeout(self.renew_deadline, self.try_acquire_or_renew());
            if let Ok(Attempt::Leading) = attempt.await {
                return;
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
                Ok(Attempt::Failed) => {}
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
                return Attempt::Failed;
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
                Attempt::Failed
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
                Attempt::Failed
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

/// `leaseDurationSeconds` for `duration`: whole seconds rounded up (others must never think
/// the lease shorter than we do), at least 1.
fn whole_seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_micros().div_ceil(1_000_000))
        .unwrap_or(i32::MAX)
        .max(1)
}

/// Now, at the microsecond precision the API server keeps (`MicroTime`).
fn now() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now)
}

/// The holder of a lease record; empty when nobody holds it.
fn holder(spec: &LeaseSpec) -> &str {
    spec.holder_identity.as_deref().unwrap_or_default()
}

/// Whether the record, first seen unchanged at `seen`, is still within its
/// `leaseDurationSeconds` at `now` (client-go's `isLeaseValid`).
fn unexpired(spec: &LeaseSpec, seen: Instant, now: Instant) -> bool {
    let seconds = u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0);
    seen + Duration::from_secs(seconds) > now
}

/// Whether `identity` may take a Lease whose record is `spec`, first seen at `seen`: nobody
/// holds it, we do, or the holder let it expire.
fn may_take(spec: &LeaseSpec, seen: Instant, now: Instant, identity: &str) -> bool {
    let holder = holder(spec);
    holder.is_empty() || holder == identity || !unexpired(spec, seen, now)
}

/// The record `identity` writes to acquire or renew over `old` (`None`: creating the Lease).
/// Renewing keeps acquireTime and leaseTransitions; a new holder counts one more transition.
fn claim(old: Option<&LeaseSpec>, identity: &str, lease_seconds: i32, now: Timestamp) -> LeaseSpec {
    let mut record = LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(lease_seconds),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    };
    match old {
        Some(old) if holder(old) == identity => {
            record.acquire_time = old.acquire_time.clone();
            record.lease_transitions = Some(old.lease_transitions.unwrap_or(0));
        }
        Some(old) => record.lease_transitions = Some(old.lease_transitions.unwrap_or(0) + 1),
        None => {}
    }
    record
}

/// The record the leader writes to give the Lease up (client-go's `ReleaseOnCancel`): no
/// holder, a one-second duration, the transitions kept.
fn released(old: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(old.lease_transitions.unwrap_or(0)),
        ..LeaseSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        leader: LeaderArgs,
    }

    fn parse(args: &[&str]) -> LeaderArgs {
        let argv = std::iter::once("test").chain(args.iter().copied());
        Cli::try_parse_from(argv).expect("flags parse").leader
    }

    fn held_by(holder: &str, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(MicroTime(Timestamp::from_second(100).unwrap())),
            renew_time: Some(MicroTime(Timestamp::from_second(200).unwrap())),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn defaults_are_client_gos_and_election_is_off() {
        let args = parse(&[]);
        assert!(!args.leader_elect);
        assert_eq!(args.lease_name, "mcs-policy-sync");
        assert_eq!(args.lease_namespace, "mcs-policy-system");
        assert_eq!(args.lease_duration, Duration::from_secs(15));
        assert_eq!(args.renew_deadline, Duration::from_secs(10));
        assert_eq!(args.retry_period, Duration::from_secs(2));
        assert!(args.validate().is_ok());
    }

    #[test]
    fn durations_take_go_syntax() {
        let args = parse(&[
            "--leader-elect",
            "--lease-duration",
            "2s",
            "--renew-deadline",
            "1500ms",
            "--retry-period",
            "250ms",
            "--identity",
            "replica-0",
        ]);
        assert_eq!(args.renew_deadline, Duration::from_millis(1500));
        assert_eq!(args.identity(), "replica-0");
        assert!(args.validate().is_ok());
    }

    #[test]
    fn rejects_a_lease_duration_not_above_the_renew_deadline() {
        let err = parse(&["--lease-duration", "10s"]).validate().unwrap_err();
        assert!(
            matches!(err, LeaderError::LeaseNotAboveRenew { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("--lease-duration"), "{err}");
    }

    #[test]
    fn rejects_a_renew_deadline_not_above_the_retry_period() {
        let args = parse(&["--renew-deadline", "2s"]);
        let err = args.validate().unwrap_err();
        assert!(
            matches!(err, LeaderError::RenewNotAboveRetry { .. }),
            "{err}"
        );
    }

    #[test]
    fn rejects_an_empty_identity() {
        let err = parse(&["--identity", ""]).validate().unwrap_err();
        assert!(matches!(err, LeaderError::EmptyIdentity), "{err}");
    }

    #[test]
    fn the_default_identity_is_unique_per_process_and_never_empty() {
        let identity = parse(&[]).identity();
        assert!(
            identity.contains(&format!("_{}-", std::process::id())),
            "{identity}"
        );
        assert!(!identity.starts_with('_'), "{identity}");
    }

    #[test]
    fn a_held_lease_is_taken_only_once_it_expired_on_our_clock() {
        let seen = Instant::now();
        let spec = held_by("other", 15);
        assert!(!may_take(&spec, seen, seen, "me"));
        assert!(!may_take(
            &spec,
            seen,
            seen + Duration::from_millis(14_999),
            "me"
        ));
        assert!(may_take(&spec, seen, seen + Duration::from_secs(15), "me"));
        assert!(may_take(&spec, seen, seen + Duration::from_secs(60), "me"));
    }

    #[test]
    fn expiry_ignores_the_holders_clock() {
        // renewTime lies far in the past (a skewed holder clock): still held, because we saw
        // the record change just now.
        let seen = Instant::now();
        let mut spec = held_by("other", 15);
        spec.renew_time = Some(MicroTime(at(0)));
        assert!(!may_take(&spec, seen, seen + Duration::from_secs(1), "me"));
    }

    #[test]
    fn a_free_or_own_lease_is_taken_at_once() {
        let seen = Instant::now();
        assert!(may_take(&held_by("", 15), seen, seen, "me"));
        assert!(may_take(&LeaseSpec::default(), seen, seen, "me"));
        assert!(may_take(&held_by("me", 15), seen, seen, "me"));
    }

    #[test]
    fn creating_writes_us_as_holder_with_no_transitions() {
        let record = claim(None, "me", 15, at(500));
        assert_eq!(record.holder_identity.as_deref(), Some("me"));
        assert_eq!(record.lease_duration_seconds, Some(15));
        assert_eq!(record.acquire_time, Some(MicroTime(at(500))));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(0));
    }

    #[test]
    fn taking_over_counts_a_transition_and_restarts_acquire_time() {
        let record = claim(Some(&held_by("other", 30)), "me", 15, at(500));
        assert_eq!(record.holder_identity.as_deref(), Some("me"));
        assert_eq!(record.lease_duration_seconds, Some(15));
        assert_eq!(record.acquire_time, Some(MicroTime(at(500))));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(4));
    }

    #[test]
    fn taking_a_released_lease_counts_a_transition() {
        let free = released(&held_by("other", 15), at(400));
        assert_eq!(
            claim(Some(&free), "me", 15, at(500)).lease_transitions,
            Some(4)
        );
    }

    #[test]
    fn renewing_moves_only_renew_time() {
        let record = claim(Some(&held_by("me", 15)), "me", 15, at(500));
        assert_eq!(record.acquire_time, Some(MicroTime(at(100))));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(3));
    }

    #[test]
    fn releasing_empties_the_holder_and_shortens_the_lease() {
        let record = released(&held_by("me", 15), at(500));
        assert_eq!(record.holder_identity.as_deref(), Some(""));
        assert_eq!(record.lease_duration_seconds, Some(1));
        assert_eq!(record.renew_time, Some(MicroTime(at(500))));
        assert_eq!(record.lease_transitions, Some(3));
        assert!(may_take(&record, Instant::now(), Instant::now(), "next"));
    }

    #[test]
    fn the_recorded_duration_rounds_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_secs(15)), 15);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
    }

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
