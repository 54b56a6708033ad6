#!/usr/bin/env bash
# Instruction count of one webhook request, per stage (callgrind; does not move with machine
# noise, unlike wrk's numbers):
#   scripts/profile-webhook.sh [requests] [path]
#
# Starts the release server (a plain `cargo build --release`: the profile-guided build that ships
# inlines most of the functions that mark the stages, so only the total and two stages would show)
# under `valgrind --tool=callgrind` with instrumentation off, sends a warm-up, then counts only
# while REQUESTS requests (default 2000) are sent one after another over one keep-alive TLS
# connection (the denied validate of `rejects_duplicate_port_names`, as in
# scripts/bench-webhook.sh), and prints the instructions per request: in total and for the stages
# of BENCHMARKS.md's "Where the CPU goes". User space only: the kernel's share (TCP, scheduling,
# the pooling allocator's page-table scan) needs `perf` under load.
#
# `--max-concurrency 1`: valgrind cannot reserve the pooling allocator's default address space.
# `--cache-dir`: compiling the component under valgrind takes minutes; later runs reuse it.
# Environment: MCS_POLICY_BIN (a binary to profile instead of building one), PORT (19443),
# KEEP (a directory to keep the callgrind output in, for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-2000}
ROUTE=${2:-/validate}
PORT=${PORT:-19443}

. scripts/webhook-common.sh
need_tool valgrind
bin=$(server_binary plain)
work=$(mktemp -d)
out=${KEEP:-$work}
mkdir -p "$out" target/profile-cache
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

write_review "$work/review.json"
cat > "$work/client.py" <<'PY'
import http.client, ssl, sys
count, port, body, route = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], "rb").read(), sys.argv[4]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
for _ in range(count):
    if route == "/healthz":
        conn.request("GET", route)
    else:
        conn.request("POST", route, body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        sys.exit(f"{route} answered {response.status}")
PY

RUST_LOG=warn valgrind --tool=callgrind --instr-atstart=no --dump-instr=no \
  --callgrind-out-file="$out/callgrind.out.%p" \
  "$bin" serve --self-signed --self-signed-dir "$work/tls" --listen "127.0.0.1:$PORT" \
  --max-concurrency 1 --cache-dir target/profile-cache >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do
  curl -sk "https://127.0.0.1:$PORT/healthz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 1
done
python3 "$work/client.py" 200 "$PORT" "$work/review.json" "$ROUTE"
callgrind_control -i on "$server" >/dev/null 2>&1
python3 "$work/client.py" "$REQUESTS" "$PORT" "$work/review.json" "$ROUTE"
callgrind_control -i off "$server" >/dev/null 2>&1
callgrind_control -d "$server" >/dev/null 2>&1
kill "$server"
wait "$server" 2>/dev/null || true
server=
profile=$(ls -S "$out"/callgrind.out.* | head -1)

# Inclusive instructions per request of the functions that mark each stage (`|` separates
# the names a stage had in earlier builds).
callgrind_annotate --inclusive=yes "$profile" 2>/dev/null | awk -v n="$REQUESTS" -v route="$ROUTE" '
  function stage(label, pattern) { labels[++count] = label; patterns[count] = pattern }
  BEGIN {
    stage("total", "PROGRAM TOTALS")
    stage("HTTP read and parse, TLS decrypt included (hyper)", "Conn<I,B,T>::poll_read_head ")
    stage("AdmissionReview parse (host)", "webhook::review::parse_review ")
    stage("instance set-up (InstancePre::instantiate)", "engine::runtime::instantiate |InstancePre<T>::instantiate ")
    stage("the component call (lowering, guest code, lifting)", "TypedFunc<Params,Return>::call ")
    stage("instance reset (store drop)", "drop_in_place<wasmtime::runtime::store::StoreInner")
    stage("response body (JSON)", "webhook::review::ReviewOut::to_json |axum::json::Json<T> as axum_core::response::into_response::IntoResponse>::into_response")
  }
  {
    for (i = 1; i <= count; i++) {
      if (i in found) continue
      alternatives = split(patterns[i], names, "|")
      for (j = 1; j <= alternatives; j++) {
        if (index($0, names[j])) { value = $1; gsub(",", "", value); found[i] = value; break }
      }
    }
  }
  END {
    printf "instructions per %s request (%d requests, callgrind, user space)\n", route, n
    for (i = 1; i <= count; i++) {
      if (i in found) printf "  %-55s %8.1fk\n", labels[i], found[i] / n / 1000
    }
  }'
echo "profile: $profile (kept only with KEEP=DIR)"
