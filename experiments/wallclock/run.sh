#!/usr/bin/env bash
# Wall-clock study: simulated seconds per averaging round and to consensus (variance
# 1e-4 from N(0, 1) values) for a ResNet-50-sized model, per protocol, peer count,
# platform, failure rate and wire precision; plus a training slice that charges the
# local SGD step's compute before every round. One SMPI run per cell, each leaving
# $RESULTS/<cell>.h5 and its .log. README.md says why the parameters are what they are.
#
#   experiments/wallclock/run.sh                              # the whole study
#   JOBS=2 PEERS_LIST="16 64" KINDS=cluster experiments/wallclock/run.sh
#   PROTOCOLS=allreduce PRECISIONS="fp32 fp16" FAILS=0 PEERS_LIST=4 KINDS=cluster \
#     PARTS=avg ROUNDS=1 TRIALS=1 RESULTS=/tmp/w experiments/wallclock/run.sh
#   AVB_ENGINE=sequential KINDS="cluster fat geo" experiments/wallclock/run.sh
#
# Cells: avg_<protocol>_<precision>_n<N>_<kind>_f<fail rate> (averaging only, no
# compute) and sgd_<protocol>_n<N>_<kind> (fp32, no failures, SGD_ROUNDS rounds, each
# preceded by H local steps of STEP_FLOPS flops charged at the host's speed).
# AVB_ENGINE=sequential runs the averaging cells on the sequential engine instead,
# named ..._seq: the same values, and time the α–β estimate of the platforms
# (cluster, fat, cloud, geo: docs/performance.md has its agreement with SMPI), in
# seconds rather than hours; it has no form of swarm and runs no sgd part, and
# refuses them. summarize.py sets the estimates beside SMPI's cells.
# Protocols (the study's name -> averaging_bench flags):
#   allreduce      allreduce (ring or butterfly, chosen for the model's length), abort on
#                  any failure: All-Reduce with restarts
#   moshpit        moshpit on its default grid, ceil(sqrt N)^2, survivors average
#   random-groups  random-groups of 32
#   sgp            pushsum on the one-peer exponential graph (SGP's); sgp-paper takes
#                  no --model-dim
#   gossip         gossip on the exponential graph
#   swarm          swarm, blocking, round clock, complete graph
#
# Settings, as environment variables [default]:
#   PROTOCOLS    [allreduce moshpit random-groups sgp gossip swarm; sequential: no swarm]
#   PEERS_LIST   peer counts N                      [16 64 256 1024]
#   KINDS        platforms (scripts/platform.py)    [cluster cloud geo]; also fat: the
#                cluster with a backbone of FAT_BB (a non-blocking switch)
#   FAT_BB       backbone bandwidth of fat, GBps     [1000]
#   FAILS        failure rates per peer and round   [0 0.001 0.01]
#   PRECISIONS   fp32: --model-dim 12800000; fp16: --model-dim 6400000 (doubles on the
#                wire: 4 and 2 bytes x 25.6M parameters)   [fp32 fp16]
#   PARTS        avg, sgd or both                   [avg sgd; sequential: avg]
#   TRIALS       trials per averaging cell          [3]
#   ROUNDS       cap on rounds per trial (--stop-at-target ends a trial at 1e-4)  [20]
#   DETECTION    --detection-timeout seconds, in cells with failures   [2]
#   SGD_PEERS    N of the training slice            [64]
#   SGD_KINDS    platforms of the training slice    [cluster cloud]
#   SGD_ROUNDS   rounds per training-slice trial    [4]
#   SGD_TRIALS   trials per training-slice cell     [1]
#   H            local steps per round              [1]
#   STEP_FLOPS   flops of one local step            [3.6e8: 0.36 s on a 1 Gflop/s host]
#   SEED         --seed of every cell               [1]
#   BLOCKSIZE    SimGrid's smpi/shared-malloc-blocksize, bytes: one mapping per padded
#                buffer when it is at least the model's size, instead of one per MiB
#                (Linux allows 65530 per process; README.md)   [134217728]
#   and experiments/sweep_common.sh's JOBS, RESULTS, AVERAGING_BENCH, PYTHON.
set -euo pipefail

avb_default_engine=smpi
source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh
case "$engine" in
  smpi) suffix="" all_protocols="allreduce moshpit random-groups sgp gossip swarm" all_kinds="cluster cloud geo"
        all_parts="avg sgd" ;;
  sequential) suffix=_seq all_protocols="allreduce moshpit random-groups sgp gossip" all_kinds="cluster fat cloud geo"
              all_parts=avg ;;
  *) die "AVB_ENGINE='$engine': this study needs simulated time (smpi) or its estimate (sequential)" ;;
esac

read -r -a protocols <<<"${PROTOCOLS:-$all_protocols}"
read -r -a peers_list <<<"${PEERS_LIST:-16 64 256 1024}"
read -r -a kinds <<<"${KINDS:-$all_kinds}"
read -r -a fails <<<"${FAILS:-0 0.001 0.01}"
read -r -a precisions <<<"${PRECISIONS:-fp32 fp16}"
read -r -a parts <<<"${PARTS:-$all_parts}"
read -r -a sgd_kinds <<<"${SGD_KINDS:-cluster cloud}"
trials=${TRIALS:-3} rounds=${ROUNDS:-20} detection=${DETECTION:-2} seed=${SEED:-1}
sgd_peers=${SGD_PEERS:-64} sgd_rounds=${SGD_ROUNDS:-4} sgd_trials=${SGD_TRIALS:-1}
local_steps=${H:-1} step_flops=${STEP_FLOPS:-3.6e8} blocksize=${BLOCKSIZE:-134217728}
for v in BLOCKSIZE:$blocksize TRIALS:$trials ROUNDS:$rounds SGD_PEERS:$sgd_peers SGD_ROUNDS:$sgd_rounds SGD_TRIALS:$sgd_trials \
         H:$local_steps; do
  is_count "${v#*:}" || die "${v%%:*}='${v#*:}' is not a positive integer"
done
for n in "${peers_list[@]}"; do is_count "$n" && [ "$n" -ge 4 ] || die "PEERS_LIST: '$n' is not an integer >= 4"; done
case "$seed" in '' | *[!0-9]*) die "SEED='$seed' is not a non-negative integer" ;; esac
for v in "DETECTION:$detection" "STEP_FLOPS:$step_flops" $(printf 'FAILS:%s ' "${fails[@]}"); do
  awk -v s="${v#*:}" 'BEGIN { exit !(s ~ /^[0-9.eE+-]+$/ && s + 0 >= 0) }' || die "${v%%:*}: '${v#*:}' is not a number >= 0"
done
for k in "${kinds[@]}" "${sgd_kinds[@]}"; do
  case "$k" in cluster | cloud | geo | fat) ;; *) die "KINDS/SGD_KINDS: '$k' is not cluster, cloud, geo or fat" ;; esac
done
for p in "${precisions[@]}"; do case "$p" in fp32 | fp16) ;; *) die "PRECISIONS: '$p' is not fp32 or fp16" ;; esac; done
for p in "${parts[@]}"; do case "$p" in avg | sgd) ;; *) die "PARTS: '$p' is not avg or sgd" ;; esac; done
fat_bb=${FAT_BB:-1000}
awk -v s="$fat_bb" 'BEGIN { exit !(s ~ /^[0-9.eE+-]+$/ && s + 0 > 0) }' || die "FAT_BB: '$fat_bb' is not a number > 0 (GBps)"
if [ "$engine" = sequential ]; then
  for p in "${parts[@]}"; do [ "$p" != sgd ] || die "PARTS: sgd charges compute, which the sequential engine does not model (AVB_ENGINE=smpi)"; done
fi

protocol_flags() {  # the study's protocol name -> averaging_bench flags, as column=value
  case "$1" in
    allreduce) echo "protocol=allreduce" ;;
    moshpit) echo "protocol=moshpit" ;;
    random-groups) echo "protocol=random-groups" ;;
    sgp) echo "protocol=pushsum" ;;  # its default graph: the one-peer exponential graph
    gossip) echo "protocol=gossip topology=exp" ;;
    swarm) echo "protocol=swarm" ;;
    *) die "PROTOCOLS: '$1' is not one of allreduce moshpit random-groups sgp gossip swarm" ;;
  esac
}
# A kind's platform: smpirun.sh's options (launcher columns), or the sequential
# engine's flags for the same cluster.
platform() {
  case "$engine:$1" in
    smpi:fat) echo "launcher.kind=cluster launcher.bb-bw=${fat_bb}GBps" ;;
    smpi:*) echo "launcher.kind=$1" ;;
    sequential:fat) echo "backbone-bandwidth=$(awk -v g="$fat_bb" 'BEGIN { printf "%.6g", g * 1e9 }')" ;;
    sequential:cluster) echo "" ;;
    sequential:*) echo "platform=$1" ;;
  esac
}
# Doubles on the wire per peer vector: 25.6M parameters of 4 (fp32) or 2 (fp16) bytes.
model_dim() { case "$1" in fp32) echo 12800000 ;; fp16) echo 6400000 ;; esac; }

common="program=$avg_bench dim=1 seed=$seed quiet=true"
cfg="launcher.cfg=smpi/shared-malloc-blocksize:$blocksize"
[ "$engine" = smpi ] || cfg=""
for part in "${parts[@]}"; do
  if [ "$part" = avg ]; then
    # Cheapest first (small N), so a campaign cut short has whole small-N tables.
    for n in "${peers_list[@]}"; do for kind in "${kinds[@]}"; do for f in "${fails[@]}"; do
      for prec in "${precisions[@]}"; do for p in "${protocols[@]}"; do
        det=""
        awk -v f="$f" 'BEGIN { exit !(f + 0 > 0) }' && det="detection-timeout=$detection"
        launch="$(platform "$kind") $cfg" flags=""
        [ "$engine" = smpi ] || launch=$cfg flags=$(platform "$kind")
        sweep_row "name=avg_${p}_${prec}_n${n}_${kind}_f${f}${suffix} peers=$n $launch" \
          "$(protocol_flags "$p") model-dim=$(model_dim "$prec") fail-rate=$f $det $flags" \
          "rounds=$rounds trials=$trials target=1e-4 stop-at-target=true $common"
      done; done
    done; done; done
  else
    flops=$(awk -v h="$local_steps" -v f="$step_flops" 'BEGIN { printf "%.6g", h * f }')
    for kind in "${sgd_kinds[@]}"; do for p in "${protocols[@]}"; do
      sweep_row "name=sgd_${p}_n${sgd_peers}_${kind} peers=$sgd_peers $(platform "$kind") $cfg" \
        "$(protocol_flags "$p") model-dim=$(model_dim fp32) compute-flops=$flops" \
        "rounds=$sgd_rounds trials=$sgd_trials $common"
    done; done
  fi
done
sweep_run
