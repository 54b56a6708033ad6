//! Leader election's argument group (`--leader-elect`, the Lease's name and namespace, its
//! timings, `--identity`), checked as client-go's `NewLeaderElector` checks them, and the
//! default identity of a replica.

use std::time::Duration;

use crate::duration::parse_positive_duration;

/// Leader election (`mcs-policy sync` flags). Durations use Go's syntax (`15s`, `1500ms`).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Leader election")]
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
    #[arg(long, default_value = "15s", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub lease_duration: Duration,

    /// How long the leader keeps retrying a failing renewal before it stops leading (and the
    /// process exits with an error). Must exceed --retry-period.
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub renew_deadline: Duration,

    /// Time between two attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_positive_duration, value_name = "DURATION")]
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
}
