#!/usr/bin/env bash
# Prints a directory holding the real Kubernetes control-plane binaries the tests start
# (kube-apiserver, etcd, kube-controller-manager), found as controller-runtime's envtest finds
# them, in this order:
#   1. $KUBEBUILDER_ASSETS, when it is set and holds all three;
#   2. `setup-envtest use -i -p path 1.36.x`, when setup-envtest (controller-runtime) is on PATH;
#   3. the setup.sh of a folder shared/envtest/ beside the repository's clone (this project's
#      machines and CI lay one there), which unpacks its binaries and prints their directory.
# Fails, saying all three, when none yields them. Used by scripts/test.sh and by the tests
# themselves (tests/src/envtest) when KUBEBUILDER_ASSETS is unset.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
binaries=(kube-apiserver etcd kube-controller-manager)

complete() { # DIR: holds every binary, executable
  local b
  [ -n "$1" ] && [ -d "$1" ] || return 1
  for b in "${binaries[@]}"; do [ -x "$1/$b" ] || return 1; done
}

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  if complete "$KUBEBUILDER_ASSETS"; then echo "$KUBEBUILDER_ASSETS"; exit 0; fi
  echo "envtest-assets: KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks one of ${binaries[*]}; looking elsewhere" >&2
fi

if command -v setup-envtest >/dev/null 2>&1; then
  if dir=$(setup-envtest use -i -p path 1.36.x 2>/dev/null) && complete "$dir"; then
    echo "$dir"; exit 0
  fi
  echo "envtest-assets: setup-envtest use -i -p path 1.36.x gave no complete directory; looking elsewhere" >&2
fi

beside="$(dirname "$repo")/shared/envtest/setup.sh"
if [ -x "$beside" ]; then
  if dir=$("$beside") && complete "$dir"; then echo "$dir"; exit 0; fi
  echo "envtest-assets: $beside gave no complete directory" >&2
fi

cat >&2 <<MSG
envtest-assets: no kube-apiserver, etcd and kube-controller-manager found. Give them one of these ways:
  1. KUBEBUILDER_ASSETS=DIR, a directory holding all three (v1.36);
  2. setup-envtest on PATH (go install sigs.k8s.io/controller-runtime/tools/setup-envtest@latest),
     which downloads them: setup-envtest use -i -p path 1.36.x;
  3. a folder shared/envtest/ beside this clone ($beside), as this project's machines and CI have.
MSG
exit 1
