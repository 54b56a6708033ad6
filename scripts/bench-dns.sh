#!/usr/bin/env bash
# Load on `mcs-policy dns` with dnsperf: queries per second, latency, lost queries and the
# server's CPU per query (utime + stime from /proc/PID/stat over the run, over the queries),
# for each kind of answer side by side against the same server in one run:
#   - `dns-version.clusterset.local` TXT: no lookup in the index (the floor: DNS parsing,
#     hickory's handler and the UDP round trip);
#   - `web.shop.svc.clusterset.local` A: a ClusterSetIP import's IP;
#   - `db.shop.svc.clusterset.local` A: a Headless import with HOSTS ready endpoints;
#   - `_pg._tcp.db.shop.svc.clusterset.local` SRV (with EDNS, so the answer is not truncated);
#   - `missing.shop.svc.clusterset.local` A: NXDOMAIN with the SOA.
# The caches are filled from one kube-sim (the repository's test API server) holding the
# upstream CRDs, one ServiceImport of each type and the Headless import's slice: kube-sim, not
# a real API server, but the API server is only read at start and by the watches.
#
# Usage: scripts/bench-dns.sh [SECONDS per kind, 10] [CLIENTS, 8] [RUNS, 3]
# Needs dnsperf (Debian package `dnsperf`), kubectl (scripts/k8s-tools.sh provides it), curl.
# Settings: BENCH_DNS_HOSTS [20] endpoints of the Headless import; BENCH_DNS_BIN
# [target/release/mcs-policy]; BENCH_DNS_NOBUILD set to skip `cargo build`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER=${1:-10}
CLIENTS=${2:-8}
RUNS=${3:-3}
HOSTS=${BENCH_DNS_HOSTS:-20}
BIN=${BENCH_DNS_BIN:-$ROOT/target/release/mcs-policy}
SIM=$ROOT/target/release/kube-sim
command -v dnsperf >/dev/null || { echo "bench-dns: dnsperf is not installed (apt install dnsperf)" >&2; exit 1; }
PATH="$(scripts/k8s-tools.sh):$PATH"
if [ -z "${BENCH_DNS_NOBUILD:-}" ]; then
  cargo build --release --locked -p mcs-policy -p kube-sim --bins
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The API server and what the controller would have written there.
"$SIM" --listen 127.0.0.1:0 --name member >"$WORK/sim.out" 2>/dev/null &
PIDS+=($!)
until grep -q '^listening on ' "$WORK/sim.out" 2>/dev/null; do sleep 0.05; done
URL=$(sed -n 's/^listening on //p' "$WORK/sim.out" | head -1)
cat >"$WORK/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: sim, cluster: {server: "$URL"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: sim, context: {cluster: sim, user: u}}]
current-context: sim
EOF
export KUBECONFIG=$WORK/kubeconfig
# Created with JSON bodies (kubectl writes some kinds as protobuf, which kube-sim does not
# decode).
post() { curl -sf -o /dev/null -H 'Content-Type: application/json' --data-binary "@$2" "$URL$1"; }
kubectl create --dry-run=client -o json \
  -f policies/crds/multicluster.x-k8s.io_serviceimports.yaml >"$WORK/crd.json"
post /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$WORK/crd.json"
kubectl wait --for condition=Established crd/serviceimports.multicluster.x-k8s.io --timeout 30s >/dev/null
echo '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}' >"$WORK/ns.json"
post /api/v1/namespaces "$WORK/ns.json"
imports=/apis/multicluster.x-k8s.io/v1beta1/namespaces/shop/serviceimports
echo '{"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"type": "ClusterSetIP", "ips": ["10.96.0.10"], "ports": [{"name": "http", "protocol": "TCP", "port": 80}]}}' >"$WORK/web.json"
echo '{"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport", "metadata": {"name": "db", "namespace": "shop"}, "spec": {"type": "Headless", "ports": [{"name": "pg", "protocol": "TCP", "port": 5432}]}}' >"$WORK/db.json"
post "$imports" "$WORK/web.json"
post "$imports" "$WORK/db.json"
{
  echo '{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "db-east", "namespace": "shop", "labels": {"multicluster.kubernetes.io/service-name": "db", "multicluster.kubernetes.io/source-cluster": "east", "endpointslice.kubernetes.io/managed-by": "endpointslice-clusterset-controller.karmada.io"}}, "addressType": "IPv4", "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}], "endpoints": ['
  for i in $(seq 1 "$HOSTS"); do
    sep=,; [ "$i" = "$HOSTS" ] && sep=
    echo "{\"addresses\": [\"10.2.$((i / 250)).$((i % 250 + 1))\"], \"hostname\": \"db-$i\", \"conditions\": {\"ready\": true}}$sep"
  done
  echo ']}'
} >"$WORK/slice.json"
post /apis/discovery.k8s.io/v1/namespaces/shop/endpointslices "$WORK/slice.json"

DNS_PORT=$(free_port)
HTTP_PORT=$(free_port)
RUST_LOG=warn "$BIN" dns --kubeconfig "$WORK/kubeconfig" --listen "127.0.0.1:$DNS_PORT" \
  --metrics-listen "127.0.0.1:$HTTP_PORT" 2>"$WORK/dns.log" &
DNS_PID=$!
PIDS+=("$DNS_PID")
for _ in $(seq 1 200); do
  curl -sf "http://127.0.0.1:$HTTP_PORT/readyz" >/dev/null && break
  sleep 0.05
done
curl -sf "http://127.0.0.1:$HTTP_PORT/readyz" >/dev/null || { cat "$WORK/dns.log" >&2; exit 1; }

kinds=(version clusterset-ip headless srv nxdomain)
declare -A query=(
  [version]="dns-version.clusterset.local TXT"
  [clusterset-ip]="web.shop.svc.clusterset.local A"
  [headless]="db.shop.svc.clusterset.local A"
  [srv]="_pg._tcp.db.shop.svc.clusterset.local SRV"
  [nxdomain]="missing.shop.svc.clusterset.local A"
)
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$DNS_PID/stat"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD); $SECONDS_PER s per kind, $CLIENTS clients, $RUNS runs, a Headless import of $HOSTS endpoints"
printf '%-14s %4s %12s %14s %10s %16s\n' kind run "queries/s" "avg latency" lost "server µs/query"
for run in $(seq 1 "$RUNS"); do
  for kind in "${kinds[@]}"; do
    echo "${query[$kind]}" >"$WORK/q-$kind"
    edns=(); [ "$kind" = srv ] && edns=(-e)
    before=$(cpu_ticks)
    dnsperf -s 127.0.0.1 -p "$DNS_PORT" -d "$WORK/q-$kind" -l "$SECONDS_PER" -c "$CLIENTS" \
      -q 100 "${edns[@]}" >"$WORK/out-$kind" 2>&1
    after=$(cpu_ticks)
    completed=$(awk '/Queries completed:/ {print $3}' "$WORK/out-$kind")
    lost=$(awk '/Queries lost:/ {print $3}' "$WORK/out-$kind")
    qps=$(awk '/Queries per second:/ {printf "%.0f", $4}' "$WORK/out-$kind")
    latency=$(awk '/Average Latency/ {printf "%.2f ms", $4 * 1000}' "$WORK/out-$kind")
    cpu=$(awk -v t="$((after - before))" -v hz="$ticks" -v n="$completed" \
      'BEGIN {if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print "-"}')
    printf '%-14s %4s %12s %14s %10s %16s\n' "$kind" "$run" "$qps" "$latency" "$lost" "$cpu"
  done
done
echo "server RSS: $(awk '/VmRSS/ {print $2, $3}' "/proc/$DNS_PID/status"); load after: $(cut -d' ' -f1-3 /proc/loadavg)"
