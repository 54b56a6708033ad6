#!/usr/bin/env bash
# Fails when Karmada's own MultiClusterService handling is on, so that it and mcs-policy's sync
# controller do not both sync the same MultiClusterServices:
#
#   scripts/karmada-mcs-check.sh --context karmada-host [--namespace karmada-system]
#   scripts/karmada-mcs-check.sh --from-file deployment.yaml     # offline, kubectl's output
#
# It reads the running flags (command and args of every container) of the Deployments of the
# namespace that run karmada-controller-manager or karmada-agent (check each pull-mode member's
# karmada-agent with that member's --context) and, for each, decides as the binary does:
# - the feature gate MultiClusterService (Alpha, off by default) is on when the --feature-gates
#   flags, merged in order (a later key wins, repeated flags add up), say MultiClusterService=true,
#   or do not name it and say AllAlpha=true (component-base: AllAlpha sets only the alpha gates
#   neither named nor set by an earlier --feature-gates flag);
# - with the gate on, Karmada syncs unless each of its controllers is disabled in --controllers
#   (karmada-controller-manager: multiclusterservice, endpointsliceCollect,
#   endpointsliceDispatch; karmada-agent: endpointsliceCollect). Repeated --controllers flags add
#   up; in the list the first entry naming a controller decides (`name` on, `-name` off), else
#   `*` turns on all (default `*`).
# Prints one line per Deployment checked; exits 1 naming the Deployment and the flag when one
# handles MultiClusterServices, 2 on a usage error or when no Deployment was found.
set -euo pipefail

usage() {
  echo "usage: $0 --context CONTEXT [--namespace NS] | --from-file FILE" >&2
  exit 2
}
context='' namespace=karmada-system file=''
while [ $# -gt 0 ]; do
  case $1 in
    --context) context=${2:?$(usage)}; shift 2 ;;
    --context=*) context=${1#*=}; shift ;;
    --namespace | -n) namespace=${2:?$(usage)}; shift 2 ;;
    --namespace=*) namespace=${1#*=}; shift ;;
    --from-file) file=${2:?$(usage)}; shift 2 ;;
    --from-file=*) file=${1#*=}; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done
[ -n "$context" ] || [ -n "$file" ] || usage
command -v kubectl >/dev/null || {
  echo "karmada-mcs-check.sh: no kubectl on PATH" >&2
  exit 2
}

# One line per item: D<TAB>deployment, C<TAB>container, A<TAB>argument (command, then args).
template='{range .items[*]}{"D\t"}{.metadata.name}{"\n"}{range .spec.template.spec.containers[*]}{"C\t"}{.name}{"\n"}{range .command[*]}{"A\t"}{@}{"\n"}{end}{range .args[*]}{"A\t"}{@}{"\n"}{end}{end}{end}'
if [ -n "$file" ]; then
  # Offline: kubectl reads the file (JSON or YAML, one Deployment or a List) without a server.
  single=${template#'{range .items[*]}'}
  single=${single%'{end}'}
  lines=$(KUBECONFIG=/dev/null kubectl annotate --local -f "$file" mcs-policy/checked=true \
    -o "jsonpath=$single")
  where="file $file"
else
  lines=$(kubectl --context "$context" -n "$namespace" get deployments -o "jsonpath=$template")
  where="context $context, namespace $namespace"
fi

# gate_on FLAGVALUES...: the effective MultiClusterService gate of these --feature-gates values,
# as component-base computes it: each flag merges its entries into the gates named so far (a
# later value of a key wins), then sets the named gates; AllAlpha sets the alpha gates that are
# neither named nor already set by an earlier flag.
gate_on() {
  local raw_mcs='' raw_alpha='' enabled='' value entry key v entries
  for value in "$@"; do
    IFS=',' read -ra entries <<<"$value"
    for entry in "${entries[@]}"; do
      entry=${entry// /}
      [ -n "$entry" ] || continue
      key=${entry%%=*} v=${entry#*=}
      case $v in 1 | t | T | true | TRUE | True) v=true ;; *) v=false ;; esac
      case $key in
        MultiClusterService) raw_mcs=$v ;;
        AllAlpha) raw_alpha=$v ;;
      esac
    done
    if [ -n "$raw_mcs" ]; then
      enabled=$raw_mcs
    elif [ -n "$raw_alpha" ] && [ -z "$enabled" ]; then
      enabled=$raw_alpha
    fi
  done
  [ "$enabled" = true ]
}

# controller_on NAME FLAGVALUES...: whether --controllers (default *) runs NAME.
controller_on() {
  local name=$1 star=false entry
  shift
  local list=("$@")
  [ ${#list[@]} -gt 0 ] || list=('*')
  local joined
  joined=$(IFS=,; echo "${list[*]}")
  IFS=',' read -ra entries <<<"$joined"
  for entry in "${entries[@]}"; do
    entry=${entry// /}
    [ "$entry" = "$name" ] && return 0
    [ "$entry" = "-$name" ] && return 1
    [ "$entry" = '*' ] && star=true
  done
  $star
}

failed=0 checked=0
# check DEPLOYMENT CONTAINER ARGS...
check() {
  local deployment=$1 container=$2
  shift 2
  local binary=${1:-} gates=() controllers=() i=1 arg next component needed
  case $binary in
    *karmada-controller-manager*) component=karmada-controller-manager
      needed=(multiclusterservice endpointsliceCollect endpointsliceDispatch) ;;
    *karmada-agent*) component=karmada-agent needed=(endpointsliceCollect) ;;
    *) return 0 ;;
  esac
  checked=$((checked + 1))
  local args=("$@")
  while [ $i -lt ${#args[@]} ]; do
    arg=${args[i]} next=${args[i + 1]:-}
    case $arg in
      --feature-gates=*) gates+=("${arg#*=}") ;;
      --feature-gates) gates+=("$next"); i=$((i + 1)) ;;
      --controllers=*) controllers+=("${arg#*=}") ;;
      --controllers) controllers+=("$next"); i=$((i + 1)) ;;
    esac
    i=$((i + 1))
  done
  local shown_gates shown_controllers
  shown_gates=$(IFS=' '; printf -- '--feature-gates=%s ' "${gates[@]}")
  [ ${#gates[@]} -gt 0 ] || shown_gates='(no --feature-gates)'
  shown_controllers=$(IFS=' '; printf -- '--controllers=%s ' "${controllers[@]}")
  [ ${#controllers[@]} -gt 0 ] || shown_controllers='(no --controllers: *)'
  if ! gate_on "${gates[@]}"; then
    echo "ok: Deployment $deployment ($component): MultiClusterService is off: ${shown_gates% }"
    return 0
  fi
  local running=()
  for c in "${needed[@]}"; do
    if controller_on "$c" "${controllers[@]}"; then running+=("$c"); fi
  done
  if [ ${#running[@]} -eq 0 ]; then
    echo "ok: Deployment $deployment ($component): MultiClusterService is on (${shown_gates% }), but ${shown_controllers% } disables ${needed[*]}"
    return 0
  fi
  echo "FAIL: Deployment $deployment, container $container ($component): ${shown_gates% } turns Karmada's MultiClusterService handling on, and ${shown_controllers% } runs ${running[*]}: set MultiClusterService=false in --feature-gates (or disable ${running[*]} in --controllers) with your installer's setting (docs/deploying.md)" >&2
  failed=1
}

deployment='' container='' argv=()
flush() {
  [ -n "$container" ] && check "$deployment" "$container" "${argv[@]}"
  container='' argv=()
}
while IFS=$'\t' read -r tag value; do
  case $tag in
    D) flush; deployment=$value ;;
    C) flush; container=$value ;;
    A) argv+=("$value") ;;
  esac
done <<<"$lines"
flush

if [ "$checked" = 0 ]; then
  echo "karmada-mcs-check.sh: no karmada-controller-manager or karmada-agent Deployment in $where" >&2
  exit 2
fi
exit $failed
