//! The command line: one clap-derive tree. Doc comments are the `--help`; every flag with an
//! environment fallback says so.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::engine::EngineOptions;

/// Karmada MultiClusterService admission webhook and endpoint sync, driven by one WebAssembly
/// policy component.
///
/// Every decision (is this MultiClusterService valid, what are its defaults, which
/// EndpointSlices may a consumer cluster see) is taken by the policy component embedded in this
/// binary (or the one given with --component). This program reads, calls it, and writes.
#[derive(Debug, Parser)]
#[command(name = "mcs-policy", version, propagate_version = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,

    /// Log format on stderr: `text` or `json`. Log level from RUST_LOG (default `info`).
    #[arg(long, global = true, env = "MCS_POLICY_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the validating and mutating admission webhooks over HTTPS.
    Serve(Box<crate::webhook::ServeArgs>),
    /// Sync EndpointSlices between member clusters for every MultiClusterService in the hub.
    Sync(Box<crate::controller::SyncArgs>),
    /// Evaluate one request offline and print the answer as JSON.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Print the Validating/MutatingWebhookConfiguration YAML that points an API server here.
    Manifests(crate::manifests::ManifestsArgs),
    /// Write the embedded policy component (for the wasmtime CLI, jco or another host).
    Component(ComponentArgs),
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Validate: REQUEST is an AdmissionReview; prints the response AdmissionReview.
    Validate(EvalArgs),
    /// Default (mutate): REQUEST is an AdmissionReview; prints the response AdmissionReview,
    /// with a base64 JSONPatch when something changes.
    Mutate(EvalArgs),
    /// Endpoint filter: REQUEST is a filter input (mcs, servicePorts, sourceCluster,
    /// consumerCluster, slices); prints the EndpointSlice copies as a JSON list.
    Filter(EvalArgs),
    /// Service propagation: REQUEST is a service input (template, existing); prints what a
    /// member cluster must do with its copy of the Service (unchanged, create or replace).
    Service(EvalArgs),
}

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The request, as JSON or YAML; `-` reads stdin.
    #[arg(value_name = "REQUEST")]
    pub request: String,

    #[command(flatten)]
    pub policy: PolicyArgs,

    #[command(flatten)]
    pub engine: EngineArgs,

    /// Time budget of the evaluation, in milliseconds.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub budget_ms: u64,
}

/// Which policy to apply.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicyArgs {
    /// Policy settings: a built-in name (`karmada-compatible`, `strict`) or a settings file
    /// (see policies/).
    #[arg(
        long,
        env = "MCS_POLICY_POLICY",
        default_value = "karmada-compatible",
        value_name = "NAME|FILE"
    )]
    pub policy: String,

    /// What is known about the environment, for the rules that need it: a YAML/JSON file with
    /// `registeredClusters` (list of names), `servicePorts` (ports of the hub Service) and/or
    /// `services` (`namespace/name` → ports). Without it those rules do not apply.
    #[arg(long, env = "MCS_POLICY_CONTEXT", value_name = "FILE")]
    pub context: Option<PathBuf>,
}

/// Where the component comes from and how each call is bounded.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Policy component to load instead of the embedded one (`serve` reloads it when the file
    /// changes).
    #[arg(long, env = "MCS_POLICY_COMPONENT", value_name = "FILE")]
    pub component: Option<PathBuf>,

    /// Memory limit of one evaluation, in MiB.
    #[arg(long, default_value_t = 128, value_name = "MIB")]
    pub memory_limit_mib: usize,

    /// How many evaluations may run at once.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_concurrency: u32,

    /// Directory for compiled components, so restarts skip compilation. Default: no cache.
    #[arg(long, env = "MCS_POLICY_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl EngineArgs {
    pub fn options(&self) -> EngineOptions {
        EngineOptions {
            memory_limit_bytes: self.memory_limit_mib.saturating_mul(1 << 20),
            max_concurrency: self.max_concurrency.max(1),
            epoch_tick: Duration::from_millis(5),
            cache_dir: self.cache_dir.clone(),
            ..EngineOptions::default()
        }
    }
}

/// Parses a Go duration such as `10s`, `500ms`, `1m30s`, `1.5s`.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {s:?}: expected e.g. 10s, 500ms, 1m30s");
    if s.is_empty() {
        return Err(invalid());
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let value: f64 = rest[..num_len].parse().map_err(|_| invalid())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        total += value * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
}

/// A Go duration that must be positive (e.g. a resync interval).
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_go_duration(s)? {
        d if d.is_zero() => Err(format!("{s:?}: the duration must be positive")),
        d => Ok(d),
    }
}

#[derive(Debug, clap::Args)]
pub struct ComponentArgs {
    /// Where to write the component; `-` writes to stdout.
    #[arg(long, short, value_name = "FILE")]
    pub out: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse_go_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_go_duration("10").is_err());
        assert!(parse_go_duration("s").is_err());
        assert!(parse_go_duration("10x").is_err());
        assert!(parse_positive_duration("0").is_err());
        assert_eq!(parse_positive_duration("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn command_line_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn eval_takes_policy_and_component_after_the_subcommand() {
        let args = Args::try_parse_from([
            "mcs-policy",
            "eval",
            "validate",
            "--policy",
            "strict",
            "--component",
            "p.wasm",
            "req.json",
        ])
        .unwrap();
        let Command::Eval(EvalCommand::Validate(eval)) = args.command else {
            panic!("expected eval validate");
        };
        assert_eq!(eval.policy.policy, "strict");
        assert_eq!(eval.engine.component, Some(PathBuf::from("p.wasm")));
        assert_eq!(eval.request, "req.json");
    }
}
