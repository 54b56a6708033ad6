//! Builds the hostile test component (tests/hostile-guest) so failure tests can load it.

#[path = "../host/build_wasm.rs"]
mod build_wasm;

use std::env;
use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("hostile.wasm");
    for watched in [
        "tests/hostile-guest/src",
        "tests/hostile-guest/Cargo.toml",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    build_wasm::build_component(&root, "hostile-guest", "hostile_guest", &out);
}
