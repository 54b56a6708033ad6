#!/usr/bin/env bash
# Load benchmark of the webhook server:
#   scripts/bench-webhook.sh [seconds per run] [connections] [rounds]
#
# Starts the release server as it ships (the profile-guided build of scripts/build-release.sh,
# unless MCS_POLICY_BIN names a binary) with a self-signed certificate and drives it with wrk
# (Debian package, installed when missing) over TLS with keep-alive connections, alternating
# /healthz (the floor: TLS + HTTP, no policy) and /validate (the full path: parse, fresh wasm
# instance, response) for a number of rounds. For every run it prints req/s, p50, p99, the
# server's CPU per request (utime + stime from /proc/PID/stat over the run, divided by the
# requests wrk completed), its RSS and peak RSS, and the load average the run started under; then
# the medians per server and path, and a long /validate run (the soak) sampling RSS. wrk and the
# server share the machine's cores: on a busy machine every number moves, so read them with the
# load average printed beside them.
#
# With BASELINE_BIN set, a second server (that binary, e.g. one built from an older commit) is
# started too and every round runs both, baseline first, so before and after come from the
# same run under the same load. Only one server is loaded at a time; the soak runs on the
# server under test only.
#
# Environment: ROUNDS (3), SOAK_SECONDS (60; 0 skips the soak), SOAK_SAMPLE (5 s between RSS
# samples), PORT (18443; the baseline listens on PORT+1), MCS_POLICY_BIN (a binary to bench
# instead of building one), BASELINE_BIN, SERVE_ARGS (extra `serve` arguments, e.g.
# `--cache-dir DIR`).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-64}
ROUNDS=${3:-${ROUNDS:-3}}
SOAK_SECONDS=${SOAK_SECONDS:-60}
SOAK_SAMPLE=${SOAK_SAMPLE:-5}
PORT=${PORT:-18443}

. scripts/webhook-common.sh
need_tool wrk
bin=$(server_binary shipped)
work=$(mktemp -d)
declare -A pid port
trap 'for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

write_review "$work/review.json"
cat > "$work/post.lua" <<LUA
local f = io.open("$work/review.json", "r")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
LUA

# start NAME BINARY PORT: a server, waited for until it answers /healthz.
start() {
  local name=$1 binary=$2 p=$3
  mkdir -p "$work/$name"
  # shellcheck disable=SC2086
  RUST_LOG=warn "$binary" serve --self-signed --self-signed-dir "$work/$name/tls" \
    --listen "127.0.0.1:$p" ${SERVE_ARGS:-} > "$work/$name/server.out" 2>&1 &
  pid[$name]=$!
  port[$name]=$p
  for _ in $(seq 100); do grep -q "listening on" "$work/$name/server.out" 2>/dev/null && break; sleep 0.1; done
  curl -sf --cacert "$work/$name/tls/ca.crt" "https://127.0.0.1:$p/healthz" >/dev/null
}

servers=()
if [ -n "${BASELINE_BIN:-}" ]; then
  start baseline "$BASELINE_BIN" $((PORT + 1))
  servers+=(baseline)
fi
start current "$bin" "$PORT"
servers+=(current)

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/${pid[$1]}/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/${pid[$1]}/status"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
url() {
  if [ "$2" = healthz ]; then echo "https://127.0.0.1:${port[$1]}/healthz"; else echo "https://127.0.0.1:${port[$1]}/validate?timeout=10s"; fi
}
script() { if [ "$1" = validate ]; then echo "-s $work/post.lua"; fi; }

# bench SERVER PATH SECONDS: one wrk run; appends a result line to $work/runs.
bench() {
  local name=$1 target=$2 secs=$3 load before after out
  load=$(loadavg)
  before=$(cpu_ticks "$name")
  # shellcheck disable=SC2046
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${secs}s" --latency $(script "$target") "$(url "$name" "$target")")
  after=$(cpu_ticks "$name")
  echo "$out" | awk -v s="$name" -v t="$target" -v b="$before" -v a="$after" -v hz="$ticks" \
    -v rss="$(status_kib "$name" VmRSS)" -v hwm="$(status_kib "$name" VmHWM)" -v load="$load" '
    function ms(v) {
      if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
      if (v ~ /s$/) return v * 1000; return v
    }
    /requests in/ { reqs = $1 }
    /Requests\/sec/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /Non-2xx|Socket errors/ { errs = errs " " $0 }
    END {
      printf "%s %s %.0f %.2f %.2f %.1f %.1f %.1f %s%s\n", s, t, rps, p50, p99, \
        (a - b) / hz * 1e6 / reqs, rss / 1024, hwm / 1024, load, (errs ? " |" errs : "")
    }' >> "$work/runs"
  tail -1 "$work/runs" | awk '{
    printf "| %-8s | %-9s | %7s | %6s | %6s | %10s | %7s | %8s | %s %s %s |%s\n", $1, "/" $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
      (NF > 11 ? " " substr($0, index($0, "|") + 1) : "")
  }'
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "server (current): $bin ($(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes'))"
[ -n "${BASELINE_BIN:-}" ] && echo "server (baseline): $BASELINE_BIN"
echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s --latency, TLS, keep-alive; server and wrk share the cores"
echo "load average at start: $(loadavg)"
for name in "${servers[@]}"; do
  wrk -t2 -c"$CONNECTIONS" -d2s "$(url "$name" healthz)" >/dev/null                          # warm-up
  wrk -t2 -c"$CONNECTIONS" -d2s -s "$work/post.lua" "$(url "$name" validate)" >/dev/null
done

echo
echo "| server   | path      |   req/s | p50 ms | p99 ms | CPU µs/req | RSS MiB | peak MiB | load average (1, 5, 15 min) |"
echo "| -------- | --------- | ------- | ------ | ------ | ---------- | ------- | -------- | --------------------------- |"
for _ in $(seq "$ROUNDS"); do
  for name in "${servers[@]}"; do
    for target in healthz validate; do
      bench "$name" "$target" "$SECONDS_PER_RUN"
    done
  done
done

echo
echo "medians over $ROUNDS rounds:"
for name in "${servers[@]}"; do
  for target in healthz validate; do
    awk -v s="$name" -v t="$target" '$1 == s && $2 == t' "$work/runs" | awk '
      { for (i = 3; i <= 6; i++) v[i, NR] = $i }
      function median(i,   n, j, k, tmp, a) {
        n = NR; for (j = 1; j <= n; j++) a[j] = v[i, j]
        for (j = 1; j <= n; j++) for (k = j + 1; k <= n; k++) if (a[k] < a[j]) { tmp = a[j]; a[j] = a[k]; a[k] = tmp }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      END { printf "  %-8s /%-8s %8.0f req/s  p50 %.2f ms  p99 %.2f ms  %.1f µs CPU/request\n", "'"$name"'", "'"$target"'", median(3), median(4), median(5), median(6) }'
  done
  awk -v s="$name" '$1 == s && $2 == "healthz" {h[++n] = $3} $1 == s && $2 == "validate" {v[++m] = $3}
    END { t = 0; for (i = 1; i <= m; i++) t += v[i] / h[i]; printf "  %-8s /validate req/s as a share of /healthz (mean of the rounds): %.0f %%\n", s, 100 * t / m }' "$work/runs"
  echo "  $name peak RSS so far (VmHWM, includes compiling the component at start): $(( $(status_kib "$name" VmHWM) / 1024 )) MiB"
done

if [ "$SOAK_SECONDS" -gt 0 ]; then
  echo
  echo "== soak (current): /validate for ${SOAK_SECONDS}s, RSS (MiB) every ${SOAK_SAMPLE}s; load average at start: $(loadavg)"
  before=$(cpu_ticks current)
  wrk -t2 -c"$CONNECTIONS" -d"${SOAK_SECONDS}s" -s "$work/post.lua" "$(url current validate)" > "$work/soak.txt" &
  load=$!
  samples=""
  while kill -0 $load 2>/dev/null; do
    samples="$samples $(awk '{printf "%.1f", $1 / 1024}' <<<"$(status_kib current VmRSS)")"
    sleep "$SOAK_SAMPLE"
  done
  after=$(cpu_ticks current)
  echo "rss:$samples"
  awk -v b="$before" -v a="$after" -v hz="$ticks" '
    /requests in/ { reqs = $1 } /Requests\/sec/ { rps = $2 }
    END { printf "%.0f req/s, %.1f µs CPU/request\n", rps, (a - b) / hz * 1e6 / reqs }' "$work/soak.txt"
  echo "load average at end: $(loadavg); peak RSS (VmHWM): $(( $(status_kib current VmHWM) / 1024 )) MiB"
fi

echo
echo "== /metrics after the runs (current)"
curl -sf --cacert "$work/current/tls/ca.crt" "https://127.0.0.1:${port[current]}/metrics" | grep -E '^mcs_policy_(admission_requests_total|engine_failures_total|overloads_total)'
