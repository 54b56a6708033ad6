//! Builds the guest component and embeds it in the host binary, so `mcs-policy` works alone.
//!
//! Runs a nested `cargo build -p guest --target wasm32-unknown-unknown --profile guest` into its
//! own target directory (no lock contention with the outer build), after making sure the wasm
//! target is installed (`rustup target add` when missing: a fresh clone needs no manual step).
//! The component's exports lose their `post-return` options on the way (build_post_return.rs).
//! Set `MCS_POLICY_PREBUILT_COMPONENT=/path/to/policy.wasm` to embed a prebuilt component instead
//! (as it is).

#[path = "build_post_return.rs"]
mod build_post_return;
#[path = "build_wasm.rs"]
mod build_wasm;

use std::env;
use std::path::PathBuf;

/// Sets `MCS_POLICY_COMMIT` for `--version` and the `build_info` metric: the environment's
/// `MCS_POLICY_COMMIT` when set (an image build without `.git`), else `git rev-parse HEAD` of
/// the checkout (12 hex digits), else `unknown`. Reruns when HEAD moves (not on every change
/// of the work tree: that would rebuild the crate at every `git add`).
fn embed_commit(root: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=MCS_POLICY_COMMIT");
    let git = root.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).unwrap_or_default();
    let mut watched = vec![git.join("HEAD"), git.join("packed-refs")];
    if let Some(reference) = head.trim().strip_prefix("ref: ") {
        watched.push(git.join(reference));
    }
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = env::var("MCS_POLICY_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| run(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MCS_POLICY_COMMIT={commit}");
}

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace")
        .to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("mcs_policy.wasm");
    embed_commit(&root);

    println!("cargo:rerun-if-env-changed=MCS_POLICY_PREBUILT_COMPONENT");
    if let Ok(prebuilt) = env::var("MCS_POLICY_PREBUILT_COMPONENT") {
        println!("cargo:rerun-if-changed={prebuilt}");
        std::fs::copy(&prebuilt, &out)
            .unwrap_or_else(|e| panic!("copying MCS_POLICY_PREBUILT_COMPONENT={prebuilt}: {e}"));
        return;
    }

    for watched in [
        "guest/src",
        "guest/Cargo.toml",
        "wit",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    build_wasm::build_component(&root, "guest", "guest", &out);
    let built = std::fs::read(&out).expect("reading the built component");
    let rewritten = build_post_return::without_post_return(&built)
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    std::fs::write(&out, rewritten).expect("writing the component");
}
