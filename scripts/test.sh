#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `scripts/test.sh`. CI runs exactly this (.ci/run).
# It installs what the tests need when it is missing (the wasm target, the wasmtime CLI, helm and
# kubectl, podman for the container image, npm packages for the JavaScript host), so nothing has
# to be set up by hand. Each step prints its wall and CPU time as it ends, and a table of all
# steps closes the run, also when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$HOME/.cargo/bin:$PATH"   # where rustup puts cargo
target=${CARGO_TARGET_DIR:-target}

# --- time per step ----------------------------------------------------------------------------
# CPU is user + system time of the steps' commands (the children this shell waited for), from
# /proc: on a busy machine it says what a step costs better than its wall time.
cpu_ticks() {
  local stat fields
  stat=$(cat "/proc/$$/stat" 2>/dev/null) || { echo 0; return; }
  read -ra fields <<<"${stat##*) }"   # from the 3rd field on: cutime, cstime are the 16th, 17th
  echo $((fields[13] + fields[14]))
}
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
clock() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
steps=()                 # "wall|cpu|result|name" of each step that ended
step_name='' step_wall=0 step_cpu=0
suite_wall=$SECONDS suite_cpu=$(cpu_ticks)

end_step() { # RESULT
  [ -n "$step_name" ] || return 0
  local wall=$((SECONDS - step_wall)) cpu=$((($(cpu_ticks) - step_cpu) / hz))
  printf -- '--- %s: %s (wall %s, cpu %s)\n' "$step_name" "$1" "$(clock $wall)" "$(clock $cpu)"
  steps+=("$wall|$cpu|$1|$step_name")
  step_name=''
}
step() { # NAME: ends the step before, starts this one
  end_step ok
  step_name=$* step_wall=$SECONDS step_cpu=$(cpu_ticks)
  printf '\n==> %s\n' "$*"
}
summary() {
  local rc=$? row wall cpu result name
  end_step "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")"
  printf '\n%-9s %-9s %-18s %s\n' wall cpu result step
  for row in "${steps[@]}"; do
    IFS='|' read -r wall cpu result name <<<"$row"
    printf '%-9s %-9s %-18s %s\n' "$(clock "$wall")" "$(clock "$cpu")" "$result" "$name"
  done
  printf '%-9s %-9s %-18s %s\n' "$(clock $((SECONDS - suite_wall)))" \
    "$(clock $((($(cpu_ticks) - suite_cpu) / hz)))" "$([ "$rc" = 0 ] && echo passed || echo FAILED)" \
    "scripts/test.sh ($(nproc 2>/dev/null || echo '?') cores)"
}
trap summary EXIT

# --- the steps --------------------------------------------------------------------------------
step "toolchain: wasm32-unknown-unknown target"
rustup target add wasm32-unknown-unknown >/dev/null

step "wasmtime CLI of the wasmtime crate's major version (scripts/wasmtime-cli.sh)"
wasmtime_dir=$(scripts/wasmtime-cli.sh)
"$wasmtime_dir/wasmtime" --version

step "helm v4 and kubectl 1.36 (scripts/k8s-tools.sh)"
k8s_tools_dir=$(scripts/k8s-tools.sh)
"$k8s_tools_dir/helm" version --short
"$k8s_tools_dir/kubectl" version --client

step "Helm chart: lint and render (policies/deploy is what the chart renders)"
"$k8s_tools_dir/helm" lint --strict policies/chart/mcs-policy
PATH="$k8s_tools_dir:$PATH" scripts/render-deploy.sh --check

step "-p mcs-policy and --workspace resolve the same features (scripts/check-features.sh)"
scripts/check-features.sh

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "build every binary (the tests run the real ones)"
cargo build --workspace --bins --examples --locked

# The binary the README runs (`cargo run --release -p mcs-policy`), so it starts at once after
# the suite, checked against the fixtures over HTTP/1.1 and h2. The profile-guided build that
# ships (scripts/build-release.sh: two more release builds) runs the same check on its own
# binary, where it is built: the Dockerfile's image, the webhook benchmarks. Built before the
# tests because the container image is made from it and tests/tests/image.rs runs that image.
step "release build of mcs-policy, its answers checked against the fixtures"
cargo build --release -p mcs-policy --locked
"$target/debug/examples/pgo_workload" --server "$target/release/mcs-policy" --check --rounds 2

# The image (scripts/build-image.sh: the Dockerfile's final stage over this release binary, in
# seconds, offline), run by tests/tests/image.rs in the test step as a Pod runs it (podman,
# runc). Debian's packages, when missing.
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  step "installing podman, buildah and runc for the container image test"
  if command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq podman buildah runc) || true
  fi
fi
step "container image from the release binary (scripts/build-image.sh)"
release_binary=$(realpath "$target/release/mcs-policy")
image_built=$(scripts/build-image.sh "$release_binary")
echo "$image_built"
MCS_POLICY_IMAGE=$(sed -n 's/^built \([^ ]*\) .*/\1/p' <<<"$image_built")
export MCS_POLICY_IMAGE MCS_POLICY_IMAGE_BINARY=$release_binary

# The real kube-apiserver, etcd and kube-controller-manager that tests/tests/real_*.rs start
# (KUBEBUILDER_ASSETS, setup-envtest, or shared/envtest/ beside the clone).
step "real control-plane binaries (scripts/envtest-assets.sh)"
envtest_assets=$(scripts/envtest-assets.sh)
echo "$envtest_assets"

step "unit, doc and integration tests (tests/tests/image.rs runs the image)"
KUBEBUILDER_ASSETS=$envtest_assets PATH="$k8s_tools_dir:$wasmtime_dir:$PATH" cargo test --workspace --locked

step "JavaScript host (jco) against mcs-policy eval"
(
  cd tests/js
  npm ci --prefer-offline --no-audit --no-fund --loglevel=error
  MCS_POLICY_BIN="$(cd ../.. && realpath "$target")/debug/mcs-policy" node run.mjs
)
