#!/usr/bin/env bash
# Coverage-guided fuzzing of the policy (fuzz/, cargo-fuzz + libFuzzer):
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# runs each target (default: all of them, see fuzz/README.md) for SECONDS (default 60), one after
# the other, at the lowest CPU priority. Every target runs the guest natively and the component
# under wasmtime and fails on a crash, a divergence or a broken property (tests/differential).
# Each run starts from the checked-in corpus (fuzz/corpus/<target>, seeded from tests/fixtures)
# and the run's own working corpus (fuzz/corpus-work/<target>, kept between runs, not checked
# in), and ends by merging both back into fuzz/corpus/<target>, minimised to the fewest inputs
# that cover the same edges. A failing input is written to
# fuzz/artifacts/<target>/; see TESTING.md for what to do with it.
#
# Prints one line per target: executions, new corpus size, crash (file) or ok; appends the same
# to fuzz/runs.log. Needs the nightly toolchain and cargo-fuzz (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SECONDS_PER_TARGET=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(review validate mutate filter service plan prune decide structured)

export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
TRIPLE=$(rustc +nightly -vV | sed -n 's/^host: //p')
BIN_DIR=$CARGO_TARGET_DIR/$TRIPLE/release
LOG=$ROOT/fuzz/runs.log

step() { printf '\n==> %s\n' "$*" >&2; }

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  step "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

# The component under test is the one stable builds and ships (the guest profile, exactly as
# host/build.rs builds it), embedded into the nightly fuzz build instead of a nightly rebuild.
step "building the component (stable, guest profile)"
env -u RUSTFLAGS -u CARGO_TARGET_DIR nice -n 19 cargo build -q -p guest --lib \
  --target wasm32-unknown-unknown --profile guest --target-dir "$ROOT/target/guest-build"
export MCS_POLICY_PREBUILT_COMPONENT=$ROOT/target/guest-build/wasm32-unknown-unknown/guest/guest.wasm

step "seeding fuzz/corpus from tests/fixtures"
nice -n 19 cargo run -q -p differential --example seed_corpus -- fuzz/corpus

step "building the fuzz targets (nightly, no sanitizer: the guest is safe Rust)"
(cd fuzz && nice -n 19 cargo +nightly fuzz build -s none)

summary=()
for target in "${TARGETS[@]}"; do
  corpus=fuzz/corpus/$target
  work=fuzz/corpus-work/$target
  artifacts=fuzz/artifacts/$target
  mkdir -p "$corpus" "$work" "$artifacts"
  max_len=8192
  [ "$target" = structured ] && max_len=4096
  step "fuzzing $target for ${SECONDS_PER_TARGET}s"
  out=fuzz/corpus-work/.$target.log
  status=0
  nice -n 19 "$BIN_DIR/$target" "$work" "$corpus" \
    -max_total_time="$SECONDS_PER_TARGET" -max_len="$max_len" -timeout=60 \
    -rss_limit_mb=4096 -dict=fuzz/json.dict -print_final_stats=1 \
    -artifact_prefix="$artifacts/" 2>"$out" || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
  crash=$(sed -n 's/^.*Test unit written to \(.*\)$/\1/p' "$out" | tail -1)
  if [ "$status" -ne 0 ]; then
    grep -v '^#' "$out" | tail -60 >&2
    result="FAILED ${crash:-exit $status}"
  else
    result=ok
  fi
  # Fold what this run found back into the checked-in corpus, minimised to a smallest set of
  # inputs covering the same edges (hit counts ignored: the working corpus keeps those).
  merged=fuzz/corpus-work/.$target.merged
  rm -rf "$merged" && mkdir -p "$merged"
  nice -n 19 "$BIN_DIR/$target" -set_cover_merge=1 -use_counters=0 -max_len="$max_len" \
    -timeout=60 -rss_limit_mb=4096 "$merged" "$corpus" "$work" >/dev/null 2>&1 || true
  if [ -n "$(ls -A "$merged")" ]; then
    rm -rf "$corpus" && mv "$merged" "$corpus"
  else
    rm -rf "$merged"
  fi
  line=$(printf '%s\t%s\t%ss\texecs=%s\tcorpus=%s\t%s' "$(date -u +%FT%TZ)" "$target" \
    "$SECONDS_PER_TARGET" "${execs:-?}" "$(ls "$corpus" | wc -l)" "$result")
  echo "$line" >>"$LOG"
  summary+=("$line")
  rm -f "$out"
done

printf '\n%s\n' "${summary[@]}"
printf '\nexecutions so far (fuzz/runs.log):\n'
awk -F'\t' '{ sub("execs=", "", $4); total[$2] += $4; if ($6 != "ok") failed[$2]++ }
  END { for (t in total) printf "  %-10s %12d  runs failed: %d\n", t, total[t], failed[t] }' "$LOG" | sort
if [[ " ${summary[*]} " == *FAILED* ]]; then exit 1; fi
