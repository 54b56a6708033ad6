//! Building a wasm component from a workspace package, shared by the build scripts of `host`
//! (the policy) and `tests` (a hostile component for failure tests).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";

/// Builds `package` (library `lib_name`) for wasm32-unknown-unknown with the `guest` profile,
/// in its own target directory under `root/target/`, and copies the component to `out`.
pub fn build_component(root: &Path, package: &str, lib_name: &str, out: &Path) {
    ensure_wasm_target();
    let target_dir = root.join("target").join(format!("{package}-build"));
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "-p",
            package,
            "--lib",
            "--target",
            TARGET,
            "--profile",
            "guest",
        ])
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
    let status = cmd.status().expect("running cargo for a wasm component");
    assert!(
        status.success(),
        "building the {package} component failed ({status})"
    );

    let built = target_dir
        .join(TARGET)
        .join("guest")
        .join(format!("{lib_name}.wasm"));
    std::fs::copy(&built, out)
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
    assert!(
        status.success(),
        "rustup target add {TARGET} failed ({status})"
    );
}

fn has_target(sysroot: &Path) -> bool {
    sysroot
        .join("lib")
        .join("rustlib")
        .join(TARGET)
        .join("lib")
        .is_dir()
}
