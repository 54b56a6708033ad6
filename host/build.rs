//! Builds the guest component and embeds it in the host binary, so `mcs-policy` works alone.
//!
//! Runs a nested `cargo build -p guest --target wasm32-unknown-unknown --profile guest` into its
//! own target directory (no lock contention with the outer build), after making sure the wasm
//! target is installed (`rustup target add` when missing: a fresh clone needs no manual step).
//! Set `MCS_POLICY_PREBUILT_COMPONENT=/path/to/policy.wasm` to embed a prebuilt component instead.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host/ lives in the workspace").to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("mcs_policy.wasm");

    println!("cargo:rerun-if-env-changed=MCS_POLICY_PREBUILT_COMPONENT");
    if let Ok(prebuilt) = env::var("MCS_POLICY_PREBUILT_COMPONENT") {
        println!("cargo:rerun-if-changed={prebuilt}");
        std::fs::copy(&prebuilt, &out)
            .unwrap_or_else(|e| panic!("copying MCS_POLICY_PREBUILT_COMPONENT={prebuilt}: {e}"));
        return;
    }

    for watched in ["guest/src", "guest/Cargo.toml", "wit", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    ensure_wasm_target();
    let target_dir = root.join("target").join("guest-build");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "-p", "guest", "--lib", "--target", TARGET, "--profile", "guest"])
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's flags and wrappers (clippy, coverage, RUSTFLAGS for the host) must not
    // leak into the wasm build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("running cargo for the guest component");
    assert!(status.success(), "building the guest component failed ({status})");

    let built = target_dir.join(TARGET).join("guest").join("guest.wasm");
    std::fs::copy(&built, &out)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", built.display(), out.display()));
}

/// Installs the wasm target with rustup when the active toolchain lacks it.
fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if sysroot.is_some_and(|s| has_target(&s)) {
        return;
    }
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", TARGET]);
    if let Ok(toolchain) = env::var("RUSTUP_TOOLCHAIN") {
        cmd.args(["--toolchain", &toolchain]);
    }
    let status = cmd
        .status()
        .expect("the wasm32-unknown-unknown target is missing and rustup could not be run");
    assert!(status.success(), "rustup target add {TARGET} failed ({status})");
}

fn has_target(sysroot: &Path) -> bool {
    sysroot.join("lib").join("rustlib").join(TARGET).join("lib").is_dir()
}
