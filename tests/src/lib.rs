//! Shared helpers for the integration tests: where the built binaries are, the fixtures, and
//! WAVE encoding for the wasmtime CLI.

pub mod fixtures;
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
