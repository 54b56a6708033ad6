#!/usr/bin/env bash
# Load benchmark of the webhook server: `scripts/bench-webhook.sh [seconds] [connections]`.
# Starts the release server with a self-signed certificate and drives it with wrk (Debian
# package, installed when missing) over TLS with keep-alive connections: /healthz (the floor:
# TLS + HTTP, no policy) and /validate (the full path: parse, fresh wasm instance, response),
# then a long /validate run sampling the server's RSS. Prints numbers to paste in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-64}
SOAK_SECONDS=${SOAK_SECONDS:-60}
PORT=${PORT:-18443}

if ! command -v wrk >/dev/null; then
  apt-get update -qq && apt-get install -y -qq wrk
fi
cargo build --release -p mcs-policy --locked
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT

python3 - "$work/review.json" <<'PY'
import json, sys
case = json.load(open("tests/fixtures/validate/rejects_duplicate_port_names.json"))
json.dump(case["review"], open(sys.argv[1], "w"))
PY
cat > "$work/post.lua" <<LUA
local f = io.open("$work/review.json", "r")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
LUA

RUST_LOG=warn target/release/mcs-policy serve --self-signed --self-signed-dir "$work/tls" \
  --listen "127.0.0.1:$PORT" > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 50); do grep -q "listening on" "$work/server.out" 2>/dev/null && break; sleep 0.1; done
curl -sf --cacert "$work/tls/ca.crt" "https://127.0.0.1:$PORT/healthz" >/dev/null

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "wrk -t2 -c$CONNECTIONS -d${SECONDS_PER_RUN}s --latency, TLS, keep-alive; server and wrk share the cores"
wrk -t2 -c"$CONNECTIONS" -d2s "https://127.0.0.1:$PORT/healthz" >/dev/null   # warm-up
for target in healthz validate; do
  echo
  echo "== /$target"
  if [ "$target" = healthz ]; then
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency "https://127.0.0.1:$PORT/healthz"
  else
    wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency -s "$work/post.lua" "https://127.0.0.1:$PORT/validate?timeout=10s"
  fi | grep -E "Requests/sec|Latency  |50%|99%|Non-2xx|Socket errors"
done

echo
echo "== RSS over a ${SOAK_SECONDS}s /validate run (KiB, sampled every 5 s)"
wrk -t2 -c"$CONNECTIONS" -d"${SOAK_SECONDS}s" -s "$work/post.lua" "https://127.0.0.1:$PORT/validate" > "$work/soak.txt" &
load=$!
samples=""
while kill -0 $load 2>/dev/null; do
  samples="$samples $(ps -o rss= -p $server | tr -d ' ')"
  sleep 5
done
echo "rss:$samples"
grep -E "Requests/sec" "$work/soak.txt"
echo
echo "== /metrics after the runs"
curl -sf --cacert "$work/tls/ca.crt" "https://127.0.0.1:$PORT/metrics" | grep -E '^mcs_policy_(admission_requests_total|engine_failures_total|overloads_total)'
