#!/usr/bin/env bash
# The sequential engine's time estimate against SMPI's simulated time, and its
# values against SMPI's, on the default homogeneous cluster at 64 and 1024 peers.
#
#   tests/scripts/test_smpi_time_estimate.sh SEQUENTIAL_BINARY SMPI_BINARY
#
# SEQUENTIAL_BINARY is build/apps/averaging_bench (run with --engine sequential),
# SMPI_BINARY build-smpi/apps/averaging_bench under scripts/smpirun.sh. For each
# configuration both run the same trials; compare_sequential.py requires the same
# counters and targets, the same metric bits (all-reduce: within 1e-12 of the
# initial variance), and each trial's estimated time within 2% of the simulated
# time (10% for a configuration marked ~0.10: what the estimate does not model,
# docs/performance.md). Vectors of 1000 and 100000 values cover latency- and bandwidth-bound rounds
# (the backbone included), failures change the groups. With --detection-timeout, the
# peers that wait out a failure add it to the round on both engines (and the
# detection_time columns must be equal); a configuration may name a platform other
# than the default cluster, given to smpirun.sh and to the sequential engine's
# platform flags (`fat`: a non-blocking backbone; `slow`: slower, longer links;
# `fast`: hosts of 4 Gflop/s; `cloud`, `cloud3`: avbench platform's cloud, lognormal host
# speeds and link bandwidths drawn from the same keyed stream by both, seeds 1
# and 3; `geo`, `geo-slow-wan`: avbench platform's regions joined by wide-area
# links; `three`: tests/platforms/three-regions.xml, regions of unequal sizes,
# hosts and backbones, one reached through two wide-area links, read by both). With --compute-flops and stragglers both engines charge each alive
# peer's work at its host's speed, a straggler's slowed down; each peer's messages
# start when both ends are done with their work, and a peer that waits out a
# failure does so after its own messages, beside the others' (push-sum at model
# size on geo with failures: some rounds end before one message plus the wait).
# Under churn, the joiners' state loads take a step of their own.
source "$(dirname "$0")/common.sh"

need_args 2 $# SEQUENTIAL_BINARY SMPI_BINARY
program_arg SEQ "$1" "Open MPI build's averaging_bench" "build the default preset: cmake --build build --target averaging_bench"
program_arg BIN "$2" "SMPI program"

# A platform's smpirun.sh options | the sequential engine's options for the same.
three=$AVB_REPO/tests/platforms/three-regions.xml
"$AVB_PYTHON" "$AVB_REPO/scripts/platform_hosts.py" "$three" "$SCRATCH/three-regions.hosts"
declare -A platforms=(
  [three]="--platform $three --hostfile $SCRATCH/three-regions.hosts|--platform $three"
  [cluster]="|"
  [fat]="--bb-bw 1000GBps|--backbone-bandwidth 1e12"
  [slow]="--bw 50MBps --lat 200us --bb-lat 1ms|--link-bandwidth 5e7 --link-latency 2e-4 --backbone-latency 1e-3"
  [fast]="--speed 4Gf|--host-speed 4e9"
  [cloud]="--kind cloud|--platform cloud"
  [cloud3]="--kind cloud --speed-seed 3|--platform cloud --speed-seed 3"
  [geo]="--kind geo|--platform geo"
  [geo-slow-wan]="--kind geo --regions 8 --wan-bw 100MBps|--platform geo --regions 8 --wan-bandwidth 1e8"
  [geo2-slow-wan]="--kind geo --regions 2 --wan-bw 100MBps|--platform geo --regions 2 --wan-bandwidth 1e8"
)
configs=(
  "64 100000 moshpit --grid 8x8"
  "64 100000 allreduce --fail-rate 0.02 --detection-timeout 0.5"
  "64 100000 moshpit --grid 8x8 --fail-rate 0.02 --detection-timeout 0.25 @fat"
  "64 100000 gossip --topology exp --fail-rate 0.02 --detection-timeout 0.25 @slow"
  "64 100000 allreduce --collective ring"
  "64 100000 gossip --topology torus --fail-rate 0.05"
  "64 1000 pushsum --fail-rate 0.05"
  "1024 1000 moshpit --grid 32x32 --fail-rate 0.01 ~0.10"
  "1024 1000 pairwise"
  "1024 1000 sgp-paper --fail-rate 0.01"
  "1024 1 random-groups"
  "64 1000 moshpit --grid 8x8 --compute-flops 2e7 --stragglers 0.1 --straggler-slowdown 4 --fail-rate 0.02 --detection-timeout 0.25"
  "64 100000 allreduce --compute-flops 5e7 --stragglers 0.2 --straggler-slowdown 3 @fast"
  "64 1000 gossip --topology exp --compute-flops 1e6 --stragglers 0.05 --straggler-slowdown 10"
  "64 100000 allreduce @cloud"
  "64 100000 moshpit --grid 8x8 @cloud"
  "64 1000 moshpit --grid 8x8 --compute-flops 1e7 --stragglers 0.1 @cloud"
  "64 1000 gossip --topology exp @cloud3"
  "64 100000 random-groups --group-size 8 @cloud3"
  "64 100000 moshpit --grid 8x8 @geo"
  "64 100000 allreduce @geo"
  "64 1000 moshpit --grid 8x8 --fail-rate 0.02 --detection-timeout 0.25 @geo"
  "64 1000 gossip --topology exp @geo"
  "64 100000 random-groups --group-size 16 @geo-slow-wan"
  "4 1 pushsum --model-dim 12800000 @geo"
  "16 1 pushsum --model-dim 12800000 @geo"
  "16 1 pushsum --model-dim 12800000 --fail-rate 0.1 --detection-timeout 2 @geo"
  "16 1 allreduce --collective ring --model-dim 12800000 @geo2-slow-wan"
  "64 100000 moshpit --grid 8x8 --failure churn --fail-rate 0.05 --join-rate 0.3"
  "64 1000 gossip --topology exp --failure churn --fail-rate 0.05 --join-rate 0.3 --detection-timeout 0.1"
  "64 100000 moshpit --grid 8x8 @three"
  "64 100000 allreduce --collective ring @three"
  "64 1000 gossip --topology exp @three"
  "64 100000 pushsum --fail-rate 0.05 --detection-timeout 0.25 @three"
  "64 1000 moshpit --grid 8x8 --compute-flops 1e7 --stragglers 0.1 @three"
  "64 1000 moshpit --grid 8x8 --fail-rate 0.02 --detection-timeout 0.25 @three ~0.10"
)
for config in "${configs[@]}"; do
  within=0.02
  if [[ "$config" == *" ~"* ]]; then
    within=${config##* ~}
    config=${config% ~*}
  fi
  platform=cluster
  [[ "$config" != *@* ]] || platform=${config##*@}
  read -r peers dim protocol rest <<<"${config%@*}"
  read -r -a extra <<<"$rest"
  tag=$(printf '%s' "$config" | tr -c 'a-z0-9\n' '_')
  smpi_against_sequential "$config" "$tag" "$peers" "$within" "${platforms[$platform]%%|*}" "${platforms[$platform]#*|}" \
    --protocol "$protocol" "${extra[@]}" --dim "$dim" --rounds 4 --trials 1 --seed 31 --quiet || true
done
finish
