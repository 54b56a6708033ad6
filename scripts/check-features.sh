#!/usr/bin/env bash
# Checks that `cargo build -p mcs-policy` reuses what `cargo build --workspace` built:
#   scripts/check-features.sh
#
# Cargo resolves features for the packages a command selects. When another member turns on a
# feature of a crate mcs-policy also uses, `-p mcs-policy` builds that crate (and everything on
# top of it, up to wasmtime) a second time, with other features, and the two builds keep
# replacing each other. host/Cargo.toml ("The same features as the workspace") declares the
# union; this check fails, naming the crates, when a dependency change breaks it again. It reads
# `cargo tree` only (about a second), no build.
#
# Two comparisons, each: every crate of `-p mcs-policy` with its features, as the wider command
# resolves it.
# 1. `--workspace` without dev-dependencies (release builds, the benchmarks): no difference.
# 2. with dev-dependencies (`cargo test --workspace`, the suite's debug build): only the features
#    the tests alone need, listed below with why. The first debug `cargo build -p mcs-policy`
#    after the suite compiles these and the crates built on them a second way (kube's stack up
#    to mcs-policy, not wasmtime); cargo keeps both, so once.
set -euo pipefail
cd "$(dirname "$0")/.."

# Features only tests turn on, kept out of the binary:
#   kube jsonpatch   kube-sim's tests
#   fastrand default tempfile, in kube-sim's tests
TEST_ONLY='^(kube|fastrand) '

features() {
  cargo tree --locked --prefix none --format '{p} {f}' "$@" |
    sed -e 's/ (\*)$//' -e 's/ (\/[^)]*)//' | sort -u
}

ours=$(features -p mcs-policy -e normal,build)
status=0
compare() { # NAME FILTER ARGS...: the lines of ours the wider resolution does not have
  local name=$1 filter=$2
  shift 2
  local missing
  missing=$(comm -23 <(echo "$ours") <(features "$@") | { grep -Ev "$filter" || true; })
  if [ -n "$missing" ]; then
    echo "check-features: \`cargo build -p mcs-policy\` resolves these crates with other features than $name:"
    sed 's/^/  /' <<<"$missing"
    echo "  (compare with: cargo tree $* -e features -i CRATE; declare the union in host/Cargo.toml)"
    status=1
  fi
}
compare "\`cargo build --workspace\`" '^$' --workspace -e normal,build
compare "\`cargo test --workspace\` (beyond the test-only features listed in this script)" \
  "$TEST_ONLY" --workspace -e normal,build,dev
[ "$status" = 0 ] && echo "check-features: -p mcs-policy and --workspace resolve the same features"
exit "$status"
