#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `scripts/test.sh`. CI runs exactly this (.ci/run).
# It installs what the tests need when it is missing (the wasm target, the wasmtime CLI, npm
# packages for the JavaScript host), so nothing has to be set up by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

WASMTIME_VERSION=48.0.8   # must match the `wasmtime` crate pinned in Cargo.toml
export PATH="$HOME/.cargo/bin:$PATH"   # where rustup and `cargo install` put tools

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: wasm32-unknown-unknown target"
rustup target add wasm32-unknown-unknown >/dev/null

if ! wasmtime --version 2>/dev/null | grep -q "wasmtime $WASMTIME_VERSION"; then
  step "installing wasmtime-cli $WASMTIME_VERSION (once per machine, ~11 min)"
  cargo install wasmtime-cli --locked --version "$WASMTIME_VERSION"
fi

if ! command -v kubectl >/dev/null; then
  step "installing kubectl (kubernetes-client) for the kube-sim tests"
  if command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq kubernetes-client) || true
  fi
fi

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "build every binary (the tests run the real ones)"
cargo build --workspace --bins --examples --locked

step "unit, doc and integration tests"
cargo test --workspace --locked

step "the shipped release build: profile-guided, checked against the fixtures (scripts/build-release.sh)"
scripts/build-release.sh

step "JavaScript host (jco) against mcs-policy eval"
(
  cd tests/js
  npm ci --prefer-offline --no-audit --no-fund --loglevel=error
  MCS_POLICY_BIN="$PWD/../../target/debug/mcs-policy" node run.mjs
)
