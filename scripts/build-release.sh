#!/usr/bin/env bash
# The release binary as it ships (the container image builds it this way), optimised with the
# profile of the server under a webhook workload (profile-guided optimisation, PGO):
#   scripts/build-release.sh [OUT]      (default target/pgo/mcs-policy)
#
# 1. builds mcs-policy instrumented (`-Cprofile-generate`) in target/pgo/instrumented;
# 2. runs it under tests/examples/pgo_workload.rs: every validate and mutate fixture over
#    HTTP/1.1 and h2, plus probes, metrics and bad requests; the server writes its profile when
#    it exits;
# 3. merges the profile with llvm-profdata (rustup's `llvm-tools`, installed on first use);
# 4. builds mcs-policy again with `-Cprofile-use` in target/pgo/optimized, and copies it to OUT;
# 5. runs the same workload against OUT with `--check`: the answers must match the fixtures.
#
# Why: a webhook request runs through hyper, rustls, tokio, serde_json and wasmtime, more code
# than the CPU's instruction caches hold; laid out by the profile, the same request costs about a
# third less server CPU (BENCHMARKS.md, "Webhook CPU per request"). Two release builds: ~2x the
# time of `cargo build --release`. The guest component is not affected (wasmtime compiles it at
# load).
# `cargo build --release` / `cargo run --release` keep working as before, without the profile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/pgo/mcs-policy}

step() { printf '\n==> %s\n' "$*"; }

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  step "installing rustup's llvm-tools (llvm-profdata)"
  rustup component add llvm-tools
fi

root=$PWD/target/pgo
rm -rf "$root/profile"
mkdir -p "$root/profile"
# Only the host's crates get the flags: with --target, RUSTFLAGS skip build scripts and proc
# macros, and host/build.rs builds the guest without them.
build() {
  RUSTFLAGS="$1" cargo build --release -p mcs-policy --locked --target "$host" \
    --target-dir "$root/$2"
}

step "instrumented build (target/pgo/instrumented)"
build "-Cprofile-generate=$root/profile/raw" instrumented

workload() { cargo run -q -p tests --example pgo_workload --locked -- "$@"; }

step "the workload, on the instrumented server"
workload --server "$root/instrumented/$host/release/mcs-policy"

step "merging the profile"
"$profdata" merge -o "$root/profile/merged.profdata" "$root/profile/raw"

step "optimised build (target/pgo/optimized)"
build "-Cprofile-use=$root/profile/merged.profdata" optimized
mkdir -p "$(dirname "$out")"
cp "$root/optimized/$host/release/mcs-policy" "$out"

step "checking the optimised binary against the fixtures"
workload --server "$out" --check --rounds 2
echo "built $out"
