#!/usr/bin/env bash
# End-to-end check of `mcs-policy sync` against REAL Kubernetes clusters made with kind:
# a hub (holding the MultiClusterService CRD and the Service template) and two members.
# member1 runs a real Deployment, so the real EndpointSlice controller makes the slices the
# controller copies into member2.
#
#   scripts/e2e-kind.sh            # create the clusters, run the checks, delete the clusters
#   KEEP=1 scripts/e2e-kind.sh     # leave the clusters (and the controller log) behind
#
# Needs: a Docker engine, `kind` and `kubectl` on PATH, and access to the images kind and the
# test Deployment pull. NOT run in CI: the project's machines have no container engine. The
# test suite runs the same scenarios against kube-sim (tests/kube-sim), an API server speaking
# the Kubernetes REST protocol; this script is for machines that can run the real thing.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null || { echo "e2e-kind: $tool is required" >&2; exit 2; }
done
docker info >/dev/null 2>&1 || { echo "e2e-kind: no Docker engine answers" >&2; exit 2; }

PREFIX=${PREFIX:-mcs-e2e}
CLUSTERS=(hub member1 member2)
work=$(mktemp -d)
export KUBECONFIG="$work/kubeconfig"
controller=""

cleanup() {
  [ -n "$controller" ] && kill "$controller" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then
    echo "kept: clusters ${CLUSTERS[*]/#/$PREFIX-}, kubeconfig $KUBECONFIG, log $work/sync.log"
  else
    for c in "${CLUSTERS[@]}"; do kind delete cluster --name "$PREFIX-$c" >/dev/null 2>&1 || true; done
    rm -rf "$work"
  fi
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local limit=$1; shift
  for _ in $(seq "$limit"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  echo "e2e-kind: timed out after ${limit}s waiting for: $*" >&2
  [ -f "$work/sync.log" ] && tail -50 "$work/sync.log" >&2
  return 1
}

step "kind clusters: ${CLUSTERS[*]}"
for c in "${CLUSTERS[@]}"; do
  kind create cluster --name "$PREFIX-$c" --wait 120s
  # kind names contexts kind-<name>; the controller uses context names as cluster names.
  kubectl config rename-context "kind-$PREFIX-$c" "$c"
done

step "build mcs-policy"
cargo build --release -p mcs-policy --locked
bin=target/release/mcs-policy

step "hub: the MultiClusterService CRD and the Service template"
kubectl --context hub apply -f policies/crds/
kubectl --context hub wait --for condition=established --timeout=60s \
  crd/multiclusterservices.networking.karmada.io
kubectl --context hub create namespace shop
kubectl --context hub -n shop create service clusterip web --tcp=80:8080

step "member1: a real workload behind Service shop/web"
kubectl --context member1 create namespace shop
kubectl --context member1 -n shop create deployment web --image=registry.k8s.io/e2e-test-images/agnhost:2.53 \
  --port=8080 -- /agnhost netexec --http-port=8080
kubectl --context member1 -n shop create service clusterip web --tcp=80:8080
kubectl --context member1 -n shop rollout status deployment/web --timeout=180s
kubectl --context member2 create namespace shop

step "start mcs-policy sync"
RUST_LOG=info "$bin" sync --kubeconfig "$KUBECONFIG" --hub hub --resync-interval 10s \
  > "$work/sync.log" 2>&1 &
controller=$!

step "MultiClusterService shop/web: member1 provides, member2 consumes"
kubectl --context hub apply -f - <<'YAML'
apiVersion: networking.karmada.io/v1alpha1
kind: MultiClusterService
metadata: {name: web, namespace: shop}
spec:
  types: [CrossCluster]
  providerClusters: [{name: member1}]
  consumerClusters: [{name: member2}]
YAML

copy_exists() {
  kubectl --context member2 -n shop get endpointslices \
    -l endpointslice.kubernetes.io/managed-by=endpointslice-dispatch-controller.karmada.io \
    -o jsonpath='{.items[*].metadata.name}' | grep -q '^member1-'
}
wait_for 60 copy_exists
name=$(kubectl --context member2 -n shop get endpointslices \
  -l endpointslice.kubernetes.io/managed-by=endpointslice-dispatch-controller.karmada.io \
  -o jsonpath='{.items[0].metadata.name}')
echo "copy in member2: $name"
provision=$(kubectl --context member2 -n shop get endpointslice "$name" \
  -o jsonpath='{.metadata.annotations.endpointslice\.karmada\.io/provision-cluster}')
[ "$provision" = member1 ] || { echo "e2e-kind: provision-cluster is '$provision'" >&2; exit 1; }
kubectl --context member2 -n shop get service web >/dev/null   # the template was propagated

dispatched() {
  [ "$(kubectl --context hub -n shop get multiclusterservice web \
    -o jsonpath='{.status.conditions[?(@.type=="EndpointSliceDispatched")].status}')" = True ]
}
wait_for 60 dispatched

step "scale member1's workload: the copy follows"
kubectl --context member1 -n shop scale deployment web --replicas=2
two_endpoints() {
  [ "$(kubectl --context member2 -n shop get endpointslice "$name" \
    -o jsonpath='{range .endpoints[*]}{.addresses[0]}{"\n"}{end}' | grep -c .)" -ge 2 ]
}
wait_for 120 two_endpoints

step "delete the MultiClusterService: the copy goes, the MCS is released"
kubectl --context hub -n shop delete multiclusterservice web --wait=true --timeout=60s
no_copy() { ! copy_exists; }
wait_for 60 no_copy

echo
echo "e2e-kind: all checks passed"
