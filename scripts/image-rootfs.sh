#!/usr/bin/env bash
# The root filesystem of the mcs-policy image, staged from a built binary:
#   scripts/image-rootfs.sh BINARY DIR
#
# The one place that says which files the image holds and where. Both images use it, so they
# cannot drift: policies/deploy/Dockerfile runs it in its builder stage (then `FROM scratch`,
# `COPY --from=builder /rootfs /`), scripts/build-image.sh over a binary already built.
#
# DIR must be missing or empty. It gets, owned by root, nothing else (no shell, no package
# manager, no writable directory: a Pod's root is read-only, the Deployments mount emptyDirs):
#   /mcs-policy                          the binary (ENTRYPOINT)
#   the shared libraries `ldd BINARY` names, at the paths it names (glibc, libgcc_s, the
#                                        dynamic loader at the ELF's interpreter path)
#   /etc/ssl/certs/ca-certificates.crt   Debian's CA bundle (ca-certificates): kube's client
#                                        verifies an API server whose kubeconfig or Karmada
#                                        Cluster secret gives no CA against the system's roots
#                                        (rustls-platform-verifier -> rustls-native-certs, which
#                                        reads this file)
#   /etc/passwd, /etc/group              user and group 65532 (nonroot), the image's USER
#   /etc/nsswitch.conf                   `hosts: files dns`: /etc/hosts (the Pod's, hostAliases)
#                                        before DNS, as on any Debian system; glibc's built-in
#                                        default without this file asks DNS first
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY DIR" >&2
  exit 2
fi
binary=$1 dir=$2
[ -x "$binary" ] || { echo "$0: $binary is not an executable file" >&2; exit 1; }
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
  echo "$0: $dir is not empty; give a new or empty directory" >&2
  exit 1
fi
mkdir -p "$dir"

install -m 0755 "$binary" "$dir/mcs-policy"

# `ldd` lines: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", the loader as
# "/lib64/ld-linux-x86-64.so.2 (0x...)", and the kernel's "linux-vdso.so.1 (0x...)" (no file).
libs=$(ldd "$binary" | awk '
  /=> not found/ { print "missing:" $1; next }
  $2 == "=>" && $3 ~ /^\// { print $3; next }
  $1 ~ /^\// { print $1 }')
if grep -q '^missing:' <<<"$libs"; then
  echo "$0: ldd cannot find $(grep '^missing:' <<<"$libs" | cut -d: -f2- | tr '\n' ' ')for $binary" >&2
  exit 1
fi
[ -n "$libs" ] || { echo "$0: ldd names no library for $binary (static?)" >&2; exit 1; }
while read -r lib; do
  mkdir -p "$dir$(dirname "$lib")"
  cp -L "$lib" "$dir$lib"   # the file, not the symlink (/lib64/ld-linux-x86-64.so.2 is one)
  chmod 0755 "$dir$lib"
done <<<"$libs"

ca=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca" ] || { echo "$0: no $ca here: install Debian's ca-certificates" >&2; exit 1; }
install -D -m 0644 "$ca" "$dir$ca"

install -d -m 0755 "$dir/etc"
printf 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$dir/etc/passwd"
printf 'nonroot:x:65532:\n' >"$dir/etc/group"
printf 'hosts: files dns\n' >"$dir/etc/nsswitch.conf"
chmod 0644 "$dir/etc/passwd" "$dir/etc/group" "$dir/etc/nsswitch.conf"
