# Shared by scripts/bench-webhook.sh and scripts/profile-webhook.sh (sourced, not run).

# need_tool COMMAND: installs the Debian package of that name when the command is missing.
need_tool() {
  if ! command -v "$1" >/dev/null; then
    apt-get update -qq && apt-get install -y -qq "$1"
  fi
}

# server_binary shipped|plain: MCS_POLICY_BIN when set; else `shipped`, the release binary as
# the image ships it (the profile-guided build of scripts/build-release.sh), or `plain`, a
# `cargo build --release`, whose stage functions the profile-guided build inlines away; prints
# the path.
server_binary() {
  if [ -n "${MCS_POLICY_BIN:-}" ]; then
    echo "$MCS_POLICY_BIN"
  elif [ "$1" = shipped ]; then
    scripts/build-release.sh target/pgo/mcs-policy >&2
    echo target/pgo/mcs-policy
  else
    cargo build --release -p mcs-policy --locked >&2
    echo target/release/mcs-policy
  fi
}

# write_review FILE: the request both scripts send, the denied 1.3 KB validate of the
# `rejects_duplicate_port_names` fixture.
write_review() {
  python3 - "$1" <<'PY'
import json, sys
case = json.load(open("tests/fixtures/validate/rejects_duplicate_port_names.json"))
json.dump(case["review"], open(sys.argv[1], "w"))
PY
}
