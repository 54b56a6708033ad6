#!/usr/bin/env bash
# The mcs-policy image:
#   scripts/build-image.sh [BINARY] [TAG]
#     BINARY  a binary already built, packed as it is, in seconds (the suite passes its plain
#             release build, target/release/mcs-policy). Without it (or empty): the shipped,
#             profile-guided binary, built first with scripts/build-release.sh into
#             target/pgo/mcs-policy (two release builds and a workload run: the webhook's
#             /validate serves about 38-41k requests a second against about 22k for the plain
#             release build, BENCHMARKS.md).
#     TAG     default localhost/mcs-policy:<version>, the version `BINARY --version` prints,
#             without a leading v (0.1.0)
#
# It is the image policies/deploy/Dockerfile builds, from another binary: the root filesystem
# comes from scripts/image-rootfs.sh (the binary, the libraries ldd names, the CA bundle,
# /etc/passwd and /etc/group for 65532), and the image's metadata (USER, ENTRYPOINT, CMD,
# EXPOSE, labels) from the Dockerfile's final stage itself, run over that directory instead of
# the builder's /rootfs. Labels: org.opencontainers.image.version (from `--version`),
# .revision (the commit `--version` names, the full hash when it is this checkout's HEAD),
# .source (`git remote get-url origin`, or $MCS_POLICY_IMAGE_SOURCE, else empty), .licenses.
#
# podman (or buildah) builds it, offline (`FROM scratch`: nothing to pull); on Debian:
# `apt-get install -y podman buildah runc`. The creation time is fixed (the epoch), so the same
# binary and commit give the same image id: a rebuild only re-tags. It prints the tag, the image
# id and the size.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-}
tag=${2:-}

case "$binary" in
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    exit 0
    ;;
esac
if [ -z "$binary" ]; then
  binary=$root/target/pgo/mcs-policy
  echo "$0: no binary given: building the profile-guided one with scripts/build-release.sh" >&2
  "$root/scripts/build-release.sh" "$binary"
fi
if [ ! -x "$binary" ]; then
  echo "$0: no binary at $binary (scripts/build-release.sh builds the profile-guided one;" \
    "cargo build --release -p mcs-policy a plain one)" >&2
  exit 1
fi
if command -v podman >/dev/null; then
  build=(podman build)
elif command -v buildah >/dev/null; then
  build=(buildah build)
else
  echo "$0: neither podman nor buildah is installed (Debian: apt-get install -y podman buildah runc)" >&2
  exit 1
fi

# `mcs-policy 0.1.0 (commit 0123456789ab)`
version_line=$("$binary" --version)
version=$(grep -oE '\bv?[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.+-]*' <<<"$version_line" | head -n1)
version=${version#v}
[ -n "$version" ] || { echo "$0: no version in \`$binary --version\`: $version_line" >&2; exit 1; }
commit=$(sed -nE 's/.*\(commit ([0-9a-f]+)\).*/\1/p' <<<"$version_line")
revision=$commit
if [ -n "$commit" ] && head=$(git -C "$root" rev-parse HEAD 2>/dev/null) \
  && [ "${head#"$commit"}" != "$head" ]; then
  revision=$head
fi
source_url=${MCS_POLICY_IMAGE_SOURCE:-$(git -C "$root" remote get-url origin 2>/dev/null || true)}
tag=${tag:-localhost/mcs-policy:$version}

context=$(mktemp -d "${TMPDIR:-/tmp}/mcs-policy-image.XXXXXX")
trap 'rm -rf "$context"' EXIT
"$root/scripts/image-rootfs.sh" "$binary" "$context/rootfs"

# The Dockerfile's final stage, from its `FROM scratch`, copying the staged directory instead of
# the builder's /rootfs.
dockerfile=$root/policies/deploy/Dockerfile
awk '/^FROM scratch/ { final = NR } { line[NR] = $0 } END {
       if (!final) exit 1
       for (i = final; i <= NR; i++) print line[i] }' "$dockerfile" >"$context/stage" || {
  echo "$0: no \`FROM scratch\` stage in $dockerfile" >&2
  exit 1
}
copy='COPY --from=builder /rootfs /'
if [ "$(grep -cxF "$copy" "$context/stage")" != 1 ]; then
  echo "$0: the final stage of $dockerfile has no line \`$copy\`" >&2
  exit 1
fi
sed "s|^$copy\$|COPY rootfs/ /|" "$context/stage" >"$context/Containerfile"

"${build[@]}" --quiet --pull=never --timestamp 0 --identity-label=false \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --build-arg "SOURCE=$source_url" \
  --iidfile "$context/iid" -t "$tag" -f "$context/Containerfile" "$context" >/dev/null

id=$(cat "$context/iid")
if [ "${build[0]}" = podman ]; then
  size="$(podman image inspect --format '{{.Size}}' "$id") bytes"
else
  size=$(buildah images --format '{{.Size}}' "$id")
fi
echo "built $tag from $binary ($version_line)"
echo "image id ${id#sha256:}, size $size"
