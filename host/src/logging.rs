//! Logs on stderr, through `tracing`: `text` (coloured only on a terminal) or `json`, the level
//! from `RUST_LOG` (default `info`, hickory-server's `warn`). Called once by `main.rs` before
//! any command runs.
//!
//! Under `json` every line the program writes on stderr or stdout for `serve` and `sync` is a
//! JSON object: the lines meant for scripts ([`announce`]), the final error ([`exit_error`])
//! and panics go through `tracing` as well.

use std::ffi::OsStr;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `init` chose `json`.
static JSON: AtomicBool = AtomicBool::new(false);

/// Installs the global subscriber: `format` is `text` or `json` (`--log-format`).
pub fn init(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // hickory-server (`mcs-policy dns`) logs every query at info.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,hickory_server=warn"));
    let colour = colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    if format == "json" {
        JSON.store(true, Ordering::Relaxed);
        builder.json().init();
        std::panic::set_hook(Box::new(|info| {
            tracing::error!(panic = %info, "the program panicked");
        }));
    } else {
        builder.init();
    }
}

/// Whether logs are JSON (`--log-format json`).
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// A line for scripts, such as `listening on https://ADDR`: on stdout (flushed at once) in the
/// text format; in `json`, an `info` event whose message is the line, so that every line is
/// JSON.
pub fn announce(line: &str) {
    if json() {
        tracing::info!("{line}");
    } else {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }
}

/// The error a command ends with: `error: ...` on stderr in the text format, an `error` event
/// in `json`.
pub fn exit_error(err: &anyhow::Error) {
    if json() {
        tracing::error!(error = %format!("{err:#}"), "exiting with an error");
    } else {
        eprintln!("error: {err:#}");
    }
}

/// Whether text logs carry ANSI colour codes: only when stderr is a terminal, and not when
/// `NO_COLOR` is set to anything but the empty string (<https://no-color.org>). A file, a pipe
/// or a container runtime's log collector gets plain text.
pub fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_a_terminal() {
        assert!(colour(true, None));
        assert!(!colour(false, None));
    }

    #[test]
    fn no_color_turns_colour_off_unless_empty() {
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(true, Some(OsStr::new("false"))));
        assert!(colour(true, Some(OsStr::new(""))));
        assert!(!colour(false, Some(OsStr::new(""))));
    }
}
