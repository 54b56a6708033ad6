#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `scripts/test.sh`. CI runs exactly this (.ci/run).
# It installs what the tests need when it is missing (the wasm target, the wasmtime CLI, npm
# packages for the JavaScript host), so nothing has to be set up by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$HOME/.cargo/bin:$PATH"   # where rustup puts cargo

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: wasm32-unknown-unknown target"
rustup target add wasm32-unknown-unknown >/dev/null

step "wasmtime CLI of the wasmtime crate's major version (scripts/wasmtime-cli.sh)"
wasmtime_dir=$(scripts/wasmtime-cli.sh)
"$wasmtime_dir/wasmtime" --version

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
PATH="$wasmtime_dir:$PATH" cargo test --workspace --locked

step "the shipped release build: profile-guided, checked against the fixtures (scripts/build-release.sh)"
scripts/build-release.sh

step "JavaScript host (jco) against mcs-policy eval"
(
  cd tests/js
  npm ci --prefer-offline --no-audit --no-fund --loglevel=error
  MCS_POLICY_BIN="$PWD/../../target/debug/mcs-policy" node run.mjs
)
