#!/usr/bin/env bash
# Scale benchmark of the sync controller (`mcs-policy sync`) against kube-sim clusters:
# propagation latency and API requests per write with 10 clusters, then cold-start
# convergence of 20 members x 1,000 MultiClusterServices x 2 EndpointSlices, the controller's
# RSS, heap and cached objects, and one resync at rest (requests, CPU); phase `live`: a provider
# change made during that cold start, timed to every consumer; phase `unrelated`: the cold
# start without and with objects no MCS names in a member, peak RSS and passes side by side;
# phase `clusterset`: an exported Service's change beside an MCS copy's; phase `fleet`: fleets
# of SYNC_BENCH_MEMBERS members (a list, 255 when unset) with a few providers and consumers
# per MCS and the upstream API's exports beside them: cold start against the machine's floor,
# live changes, requests at rest, peak RSS, heap per cached object, RSS per member.
# See BENCHMARKS.md.
#
# Sizes and settings come from the environment (defaults in brackets):
#   SYNC_BENCH_LATENCY_MEMBERS [9]  SYNC_BENCH_LATENCY_MCS [10]  SYNC_BENCH_WRITES [300]
#   SYNC_BENCH_MEMBERS [20; phase fleet: 255, and a list: one run per size]
#   SYNC_BENCH_MCS [1000]  SYNC_BENCH_WORKERS [8,32]
#   SYNC_BENCH_RESYNC [30s]  SYNC_BENCH_TIMEOUT [120] (seconds)
#   SYNC_BENCH_PHASES [latency,cold] (any of latency,cold,live,unrelated,clusterset,fleet)
#   SYNC_BENCH_FLEET_MCS [2] (phase fleet: MCSs per member)  SYNC_BENCH_FLEET_EXPORTS [10]
#     (phase fleet: ServiceExports; every member serving the upstream CRDs imports each)
#   SYNC_BENCH_UNRELATED_SERVICES [10000]  SYNC_BENCH_UNRELATED_SLICES [20000] (phase unrelated:
#     objects no MCS names in the first member; the cold start without and with them)
#   SYNC_BENCH_LOG [info] (the controller's RUST_LOG)
#   SYNC_BENCH_LIVE_AFTER [2] (seconds after the controller's start the live phase's change is made)
#   SYNC_BENCH_LATENCY_MEMBERS takes a list (2,9,20: one latency run per size)
#   SYNC_BENCH_BIN [target/release/mcs-policy]: the controller binary (compare builds)
#   SYNC_BENCH_BASELINE_BIN []: a second controller binary the live phase also runs, for a side
#     by side comparison in one run (e.g. an earlier commit built in a git worktree)
#   SYNC_BENCH_ARGS []: more `mcs-policy sync` flags (compare settings, e.g. --runtime-threads 2)
# e.g. the fleet curve: SYNC_BENCH_PHASES=fleet SYNC_BENCH_MEMBERS=2,20,100,255 SYNC_BENCH_WORKERS=8 \
#   SYNC_BENCH_TIMEOUT=300 scripts/bench-sync.sh
# e.g. a quick run: SYNC_BENCH_MEMBERS=5 SYNC_BENCH_MCS=100 SYNC_BENCH_WORKERS=8 scripts/bench-sync.sh
# Extra arguments go to `cargo bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace --bins --locked
cargo bench -p tests --bench sync_scale --locked "$@"
