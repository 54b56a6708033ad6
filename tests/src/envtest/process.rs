//! A child process that cannot outlive the test process.
//!
//! Shared control planes live in statics, which Rust never drops, and a panicking test may skip
//! a guard; so each process runs under a small `sh` that holds the read end of a pipe from the
//! test process and SIGKILLs the child when that pipe closes: when the guard drops (it closes the
//! pipe and reaps the `sh`), and when the test process exits, however it exits.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// Runs "$@" in the background; a second background job waits for EOF on the saved stdin (fd 3)
/// and kills it. The shell itself ends with the child, so `try_wait` tells a process that died.
const WATCHDOG: &str = r#"exec 3<&0
"$@" 3<&- </dev/null &
p=$!
( read -r _ <&3; kill -KILL "$p" 2>/dev/null ) &
wait "$p""#;

/// A running process; killed (SIGKILL) and reaped on drop.
pub struct Process {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    log: PathBuf,
}

impl Process {
    /// Starts `program` with `args` and extra `env`, stdout and stderr appended to `log`.
    pub fn start<S: AsRef<OsStr>>(
        name: &str,
        program: &Path,
        args: &[S],
        env: &[(String, String)],
        log: &Path,
    ) -> Process {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("log file {}: {e}", log.display()));
        let mut command = Command::new("sh");
        command
            .args(["-c", WATCHDOG, "sh"])
            .arg(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{name} ({}) starts: {e}", program.display()));
        let stdin = child.stdin.take();
        Process {
            name: name.to_string(),
            child,
            stdin,
            log: log.to_path_buf(),
        }
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let from = all.len().saturating_sub(lines);
        format!(
            "--- {} ({}), last {} lines:\n{}",
            self.name,
            self.log.display(),
            all.len() - from,
            all[from..].join("\n")
        )
    }

    /// Kills it and waits until it is gone.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}
