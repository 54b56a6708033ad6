//! Shared helpers for the integration tests: where the built binaries are, the fixtures, and
//! WAVE encoding for the wasmtime CLI.

pub mod clusterset;
pub mod dns;
pub mod envtest;
pub mod fixtures;
pub mod sync;
pub mod wave;

use std::path::PathBuf;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf()
}

/// A binary built by `cargo build --workspace --bins` in the same profile as this test
/// (the test executable lives in `target/<profile>/deps/`).
pub fn binary(name: &str) -> PathBuf {
    let path = binary_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the binaries first (`cargo build --workspace --bins --examples`, as scripts/test.sh does)",
        path.display()
    );
    path
}

/// The hostile component built by tests/build.rs (see tests/hostile-guest).
pub const HOSTILE_COMPONENT: &str = concat!(env!("OUT_DIR"), "/hostile.wasm");

/// An example program built by `cargo test` / `cargo build --examples` in this profile.
pub fn example(name: &str) -> PathBuf {
    let dir = binary_dir().join("examples");
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the examples first (`cargo build --workspace --examples`)",
        path.display()
    );
    path
}

fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current test executable");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("test executable under target/<profile>/deps")
        .to_path_buf()
}

/// A child process killed (and reaped) when dropped, so a failing test leaves nothing running.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads `child`'s piped stdout up to its `listening on URL` line (what `mcs-policy serve`
/// prints once it accepts connections) and returns the URL; `None` when stdout ends first. Keeps
/// draining stdout afterwards, so the child never blocks on a full pipe.
pub fn listening_url(child: &mut std::process::Child) -> Option<String> {
    use std::io::{BufRead, BufReader};
    let mut lines = BufReader::new(child.stdout.take()?).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_string))?;
    std::thread::spawn(move || for _ in lines {});
    Some(url)
}

/// Starts a kube-sim on a free loopback port; returns it with its base URL.
pub fn kube_sim(name: &str) -> (KillOnDrop, String) {
    kube_sim_with(name, &[])
}

/// [`kube_sim`] with `extra` flags (e.g. `["--token", "T"]`).
pub fn kube_sim_with(name: &str, extra: &[&str]) -> (KillOnDrop, String) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(binary("kube-sim"))
        .args(["--listen", "127.0.0.1:0", "--name", name])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kube-sim starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let first = lines
        .next()
        .expect("kube-sim printed nothing")
        .expect("reading kube-sim stdout");
    let url = first
        .strip_prefix("listening on ")
        .expect("kube-sim's first line is `listening on URL`")
        .to_string();
    // Keep draining stdout so kube-sim never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (KillOnDrop(child), url)
}

/// User + system CPU seconds of process `pid` so far (/proc/PID/stat, 100 ticks a second); 0
/// when it cannot be read.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}
