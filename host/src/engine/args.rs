//! The engine's argument group (`--component`, `--memory-limit-mib`, `--max-concurrency`,
//! `--cache-dir`), flattened into every command that runs the component, and the one place the
//! engine is loaded from them.

use std::path::PathBuf;
use std::time::Duration;

use super::{EngineError, EngineOptions, PolicyEngine};

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
    /// The engine options these flags ask for.
    pub fn options(&self) -> EngineOptions {
        EngineOptions {
            memory_limit_bytes: self.memory_limit_mib.saturating_mul(1 << 20),
            max_concurrency: self.max_concurrency.max(1),
            epoch_tick: Duration::from_millis(5),
            cache_dir: self.cache_dir.clone(),
            parallel_compilation: false,
            ..EngineOptions::default()
        }
    }

    /// The engine running `--component`, or the embedded component without it.
    pub fn load(&self) -> Result<PolicyEngine, EngineError> {
        let options = self.options();
        match &self.component {
            Some(path) => PolicyEngine::from_file(path, options),
            None => PolicyEngine::embedded(options),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        engine: EngineArgs,
    }

    fn parse(args: &[&str]) -> EngineArgs {
        let argv = std::iter::once("test").chain(args.iter().copied());
        Cli::try_parse_from(argv).expect("flags parse").engine
    }

    #[test]
    fn the_flags_become_engine_options() {
        let options = parse(&["--memory-limit-mib", "2", "--max-concurrency", "0"]).options();
        assert_eq!(options.memory_limit_bytes, 2 << 20);
        assert_eq!(
            options.max_concurrency, 1,
            "at least one evaluation at a time"
        );
        assert_eq!(options.cache_dir, None);
    }

    #[test]
    fn a_missing_component_file_is_an_error_naming_it() {
        let err = parse(&["--component", "/nonexistent/policy.wasm"])
            .load()
            .unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/policy.wasm"),
            "{err}"
        );
    }
}
