#!/usr/bin/env bash
# What a member costs `mcs-policy sync` at rest: for each fleet size N, a hub kube-sim and N
# empty members (kube-sim), the release controller started on them, waited for until ready
# (/readyz: its caches listed), left SETTLE seconds at rest, then its resident memory
# (VmRSS, RssAnon), heap (glibc mallinfo2, from its metrics), threads and TCP connections are
# read, and the API requests of one resync window at rest are counted from every kube-sim's
# request log, beside the resync passes the controller ran in it. Prints a table row per N and
# the KB per member between the smallest N and each other one. See BENCHMARKS.md, "What a
# member costs". Where the bytes go: MEMBER_COST_WRAP="heaptrack -o FILE", then kill -9 the
# controller while at rest and read `heaptrack_print -f FILE.zst --print-leaks 1`.
#
# Settings (defaults in brackets):
#   MEMBER_COST_N ["2 60 120"]   fleet sizes
#   MEMBER_COST_SETTLE [25]      seconds at rest before memory is read
#   MEMBER_COST_SIMS [shared]    `shared`: one kube-sim serves every member (each member still
#                                has its own context, client and connections); `each`: one
#                                kube-sim per member
#   MEMBER_COST_TLS []           set: the members are one real kube-apiserver (etcd and
#                                kube-apiserver from scripts/envtest-assets.sh) served over
#                                https, its CA in each member's context, as real members are;
#                                the request count then covers the hub only
#   MEMBER_COST_MCS [0]          MultiClusterServices made in the hub before the start, each from
#                                every member to every member, with its hub Service (namespace
#                                shop): a resync at rest then has passes to skip. Use with
#                                MEMBER_COST_SIMS=each (members sharing one kube-sim would share
#                                one namespace)
#   MEMBER_COST_RESYNC [10s]     the controller's --resync-interval; the request count covers
#                                one such window plus 2 s
#   MEMBER_COST_BIN [target/release/mcs-policy]
#   MEMBER_COST_ARGS []          more `mcs-policy sync` flags
#   MEMBER_COST_NOBUILD []       set to skip `cargo build`
#   MEMBER_COST_WRAP []          a command the controller runs under (e.g. `heaptrack -o FILE`;
#                                its numbers are then the wrapper's too)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SIZES=${MEMBER_COST_N:-"2 60 120"}
SETTLE=${MEMBER_COST_SETTLE:-25}
SIMS=${MEMBER_COST_SIMS:-shared}
RESYNC=${MEMBER_COST_RESYNC:-10s}
BIN=${MEMBER_COST_BIN:-$ROOT/target/release/mcs-policy}
SIM=$ROOT/target/release/kube-sim
if [ -z "${MEMBER_COST_NOBUILD:-}" ]; then
  cargo build --release --locked -p mcs-policy -p kube-sim --bins
fi

WORK=$(mktemp -d)
PIDS=()
# Stops what this script started: kube-apiserver does not wait for its shutdown delay.
stop_all() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
cleanup() {
  stop_all
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts a kube-sim named $1; sets URL to its address.
start_sim() {
  local out=$WORK/sim-$1.out
  rm -f "$out"
  "$SIM" --listen 127.0.0.1:0 --name "$1" --service-cluster-ip-range 10.0.0.0/16 >"$out" 2>/dev/null &
  PIDS+=($!)
  until grep -q '^listening on ' "$out" 2>/dev/null; do sleep 0.05; done
  URL=$(sed -n 's/^listening on //p' "$out" | head -1)
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Counts the resource requests in the request logs of the URLs given.
requests() {
  local total=0 url n
  for url in "$@"; do
    n=$(curl -s "$url/_sim/requests" | jq '[.requests[] | select(.resourceRequest)] | length')
    total=$((total + n))
  done
  echo "$total"
}

# MEMBER_COST_CA (a PEM file): the members' certificate-authority-data, as a kubeconfig of real
# members has it; without it their clients trust the system's roots.
CA=""
if [ -n "${MEMBER_COST_CA:-}" ]; then CA=", certificate-authority-data: $(base64 -w0 "$MEMBER_COST_CA")"; fi
# A real API server over https for the members (MEMBER_COST_TLS): sets TLS_URL and CA.
start_apiserver() {
  local assets tls=$WORK/tls etcd_port api_port
  assets=$(scripts/envtest-assets.sh)
  mkdir -p "$tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=member-cost-ca \
    -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$tls/server.key" \
    -out "$tls/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >"$tls/san"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
    -CAcreateserial -days 2 -extfile "$tls/san" -out "$tls/server.crt" 2>/dev/null
  openssl genrsa -out "$tls/sa.key" 2048 2>/dev/null
  openssl rsa -in "$tls/sa.key" -pubout -out "$tls/sa.pub" 2>/dev/null
  echo 't,admin,admin,system:masters' >"$tls/tokens"
  etcd_port=$(free_port)
  "$assets/etcd" --data-dir "$tls/etcd" --unsafe-no-fsync --log-level warn \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$(free_port)" >"$tls/etcd.log" 2>&1 &
  PIDS+=($!)
  api_port=$(free_port)
  "$assets/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$tls/server.crt" --tls-private-key-file "$tls/server.key" \
    --token-auth-file "$tls/tokens" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$tls/sa.pub" --service-account-signing-key-file "$tls/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --cert-dir "$tls/certs" >"$tls/apiserver.log" 2>&1 &
  PIDS+=($!)
  TLS_URL=https://127.0.0.1:$api_port
  until [ "$(curl -s --cacert "$tls/ca.crt" "$TLS_URL/readyz")" = ok ]; do sleep 0.5; done
  CA=", certificate-authority-data: $(base64 -w0 "$tls/ca.crt")"
}

CRD_JSON=$WORK/mcs-crd.json
python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' \
  policies/crds/networking.karmada.io_multiclusterservices.yaml >"$CRD_JSON"

kind=kube-sim; [ -n "${MEMBER_COST_TLS:-}" ] && kind="one kube-apiserver over https"
[ -z "${MEMBER_COST_TLS:-}" ] && [ "$SIMS" = shared ] && kind="one shared kube-sim"
[ -z "${MEMBER_COST_TLS:-}" ] && [ "$SIMS" != shared ] && kind="a kube-sim each"
echo "member cost: $(date -u +%F), $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- host || echo '+changes'), members: $kind, settle ${SETTLE}s, resync $RESYNC"
echo "MultiClusterServices: ${MEMBER_COST_MCS:-0}"
echo "| members | VmRSS KB | RssAnon KB | heap KB | threads | TCP conns | requests in a resync window at rest |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
declare -A RSS
for n in $SIZES; do
  start_sim hub
  hub=$URL
  curl -sf -X POST -H 'content-type: application/json' --data-binary @"$CRD_JSON" \
    "$hub/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
  MCS=${MEMBER_COST_MCS:-0}
  if [ "$MCS" -gt 0 ]; then
    curl -sf -X POST -H 'content-type: application/json' "$hub/api/v1/namespaces" \
      -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}' >/dev/null
    clusters=$(for i in $(seq 1 "$n"); do printf '{"name":"m%s"},' "$i"; done)
    clusters="[${clusters%,}]"
    for k in $(seq 1 "$MCS"); do
      curl -sf -X POST -H 'content-type: application/json' "$hub/api/v1/namespaces/shop/services" \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web-$k\",\"namespace\":\"shop\"},\"spec\":{\"selector\":{\"app\":\"web-$k\"},\"ports\":[{\"port\":80}]}}" >/dev/null
      curl -sf -X POST -H 'content-type: application/json' \
        "$hub/apis/networking.karmada.io/v1alpha1/namespaces/shop/multiclusterservices" \
        -d "{\"apiVersion\":\"networking.karmada.io/v1alpha1\",\"kind\":\"MultiClusterService\",\"metadata\":{\"name\":\"web-$k\",\"namespace\":\"shop\"},\"spec\":{\"types\":[\"CrossCluster\"],\"providerClusters\":$clusters,\"consumerClusters\":$clusters}}" >/dev/null
    done
  fi
  urls=("$hub")
  members=()
  if [ -n "${MEMBER_COST_TLS:-}" ]; then start_apiserver; URL=$TLS_URL
  elif [ "$SIMS" = shared ]; then start_sim members; urls+=("$URL"); fi
  for i in $(seq 1 "$n"); do
    if [ -z "${MEMBER_COST_TLS:-}" ] && [ "$SIMS" != shared ]; then start_sim "m$i"; urls+=("$URL"); fi
    members+=("$URL")
  done
  kubeconfig=$WORK/kubeconfig-$n.yaml
  {
    echo "apiVersion: v1"; echo "kind: Config"; echo "clusters:"
    echo "- name: hub"; echo "  cluster: {server: \"$hub\"}"
    for i in $(seq 1 "$n"); do
      echo "- name: m$i"; echo "  cluster: {server: \"${members[$((i - 1))]}\"$CA}"
    done
    echo "users:"; echo "- name: u"; echo "  user: {token: t}"; echo "contexts:"
    echo "- name: hub"; echo "  context: {cluster: hub, user: u}"
    for i in $(seq 1 "$n"); do echo "- name: m$i"; echo "  context: {cluster: m$i, user: u}"; done
    echo "current-context: hub"
  } >"$kubeconfig"
  port=$(free_port)
  # shellcheck disable=SC2086
  RUST_LOG=warn ${MEMBER_COST_WRAP:-} "$BIN" sync --kubeconfig "$kubeconfig" --hub hub \
    --metrics-listen "127.0.0.1:$port" --resync-interval "$RESYNC" ${MEMBER_COST_ARGS:-} \
    >/dev/null 2>"$WORK/controller-$n.log" &
  pid=$!
  PIDS+=($pid)
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$port/readyz")" = 200 ]; do
    kill -0 "$pid" || { cat "$WORK/controller-$n.log"; exit 1; }
    sleep 0.2
  done
  sleep "$SETTLE"
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
  anon=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")
  threads=$(awk '/^Threads/ {print $2}' "/proc/$pid/status")
  heap=$(curl -s "127.0.0.1:$port/metrics" | awk '/^mcs_policy_sync_heap_bytes / {printf "%d", $2/1024}')
  conns=$(ss -tnpH state established 2>/dev/null | grep -c "pid=$pid," || true)
  passes() {
    curl -s "127.0.0.1:$port/metrics" | awk '/^mcs_policy_sync_passes_total/ {n += $NF} END {print n + 0}'
  }
  before=$(passes)
  for url in "${urls[@]}"; do curl -s -X DELETE "$url/_sim/requests" >/dev/null; done
  window=$(( ${RESYNC%s} + 2 ))
  sleep "$window"
  reqs=$(requests "${urls[@]}")
  ran=$(( $(passes) - before ))
  RSS[$n]=$rss
  echo "| $n | $rss | $anon | ${heap:-?} | $threads | $conns | $reqs in ${window}s ($ran resync passes) |"
  stop_all
done
first=""
for n in $SIZES; do
  if [ -z "$first" ]; then first=$n; continue; fi
  echo "KB per member, $first -> $n members: $(( (RSS[$n] - RSS[$first]) / (n - first) ))"
done
