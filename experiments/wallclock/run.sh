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
# compute), sgd_<protocol>_<precision>_h<H>_n<N>_<kind> (the training slice: no
# failures, SGD_ROUNDS rounds, each preceded by H local steps of STEP_FLOPS flops
# charged at the host's speed) and tta_<protocol>_n<N>_<kind> (time to accuracy:
# sgd_bench's logistic regression on Fashion-MNIST sneakers against ankle boots,
# fashion_libsvm.py's files, written to $RESULTS first); the sequential engine's
# cells end in _seq.
# AVB_ENGINE=sequential runs the grid on the sequential engine: the same values,
# and time from its model of the same platforms (docs/simulation.md; swarm's
# rounds as discrete events), in minutes rather than days. summarize.py sets
# SMPI's cells beside the sequential engine's as its validation table.
# Protocols (the study's name -> averaging_bench flags):
#   allreduce      allreduce (ring or butterfly, chosen for the model's length), abort on
#                  any failure: All-Reduce with restarts
#   moshpit        moshpit on its default grid, ceil(sqrt N)^2, survivors average
#   random-groups  random-groups of 32
#   sgp            pushsum on the one-peer exponential graph (SGP's); sgp-paper takes
#                  no --model-dim
#   gossip         gossip on the exponential graph
#   swarm          swarm, blocking, round clock, complete graph
#   swarm-nb       swarm, non-blocking (the initiator averages with its partner's
#                  published model), round clock, complete graph
# Platforms (KINDS, SGD_KINDS), as the programs' platform flags (scripts/smpirun.sh
# turns them into SMPI's platform):
#   cluster, cloud, geo   --platform (scripts/avbench platform)
#   fat           the cluster with a backbone of FAT_BB (a non-blocking switch)
#   daint         SwarmSGD's interconnect as README.md sets it: one host per node, a
#                 DAINT_BW link of 1 us to a non-blocking network of 1 us
#
# Settings, as environment variables [default: smpi; sequential where it differs]:
#   PROTOCOLS    [allreduce moshpit random-groups sgp gossip swarm swarm-nb]
#   PEERS_LIST   peer counts N                      [16 64 256 1024; sequential: ... 4096 16384]
#   KINDS        platforms                          [cluster cloud geo; sequential: cluster fat cloud geo]
#   FAT_BB       backbone bandwidth of fat, GBps     [1000]
#   DAINT_BW     link bandwidth of daint, GBps       [10]
#   FAILS        failure rates per peer and round   [0 0.001 0.01]
#   PRECISIONS   what a peer vector weighs on the wire: fp32 --model-dim 12800000,
#                fp16 6400000, q8 (8-bit, as --quantizer uniform8 or lattice with
#                q = 256) 3200000 doubles: 4, 2 or 1 bytes x 25.6M parameters  [fp32 fp16]
#   PARTS        avg, sgd, tta                      [avg sgd; sequential: avg sgd tta]
#   TRIALS       trials per averaging cell          [3; sequential: 10]
#   ROUNDS       cap on rounds per trial (--stop-at-target ends a trial at 1e-4)  [20; sequential: 30]
#   DETECTION    --detection-timeout seconds, in cells with failures   [2]
#   SGD_PEERS    N of the training slice            [64; sequential: 16 64 256 1024 4096 16384]
#   SGD_KINDS    platforms of the training slice    [cluster cloud; sequential: cluster fat cloud geo daint]
#   SGD_PRECISIONS  precisions of the training slice [fp32; sequential: fp32 q8]
#   SGD_ROUNDS   rounds per training-slice trial    [4]
#   SGD_TRIALS   trials per training-slice cell     [1; sequential: 10]
#   H            local steps per round, a list      [1]
#   STEP_FLOPS   flops of one local step            [3.6e8: 0.36 s on a 1 Gflop/s host]
#   TTA_PEERS, TTA_KIND, TTA_STEPS, TTA_TRIALS  the time-to-accuracy cells' N,
#                platform, SGD steps (every protocol averages after each step; swarm
#                after a geometric number of mean 1) and trials  [1024 cluster 300 10]
#   SEED         --seed of every cell               [1]
#   BLOCKSIZE    SimGrid's smpi/shared-malloc-blocksize, bytes: one mapping per padded
#                buffer when it is at least the model's size, instead of one per MiB
#                (Linux allows 65530 per process; README.md)   [134217728]
#   and experiments/sweep_common.sh's JOBS, RESULTS, AVERAGING_BENCH, PYTHON.
set -euo pipefail

avb_default_engine=smpi
source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh
all_protocols="allreduce moshpit random-groups sgp gossip swarm swarm-nb"
case "$engine" in
  smpi) suffix="" all_peers="16 64 256 1024" all_kinds="cluster cloud geo" all_trials=3 all_rounds=20 all_parts="avg sgd"
        all_sgd_peers=64 all_sgd_kinds="cluster cloud" all_sgd_precisions=fp32 all_sgd_trials=1 ;;
  sequential) suffix=_seq all_peers="16 64 256 1024 4096 16384" all_kinds="cluster fat cloud geo" all_trials=10
              all_rounds=30 all_sgd_peers=$all_peers all_sgd_kinds="cluster fat cloud geo daint"
              all_sgd_precisions="fp32 q8" all_sgd_trials=10 all_parts="avg sgd tta" ;;
  *) die "AVB_ENGINE='$engine': this study needs simulated time (smpi or sequential)" ;;
esac

read -r -a protocols <<<"${PROTOCOLS:-$all_protocols}"
read -r -a peers_list <<<"${PEERS_LIST:-$all_peers}"
read -r -a kinds <<<"${KINDS:-$all_kinds}"
read -r -a fails <<<"${FAILS:-0 0.001 0.01}"
read -r -a precisions <<<"${PRECISIONS:-fp32 fp16}"
read -r -a parts <<<"${PARTS:-$all_parts}"
read -r -a sgd_peers <<<"${SGD_PEERS:-$all_sgd_peers}"
read -r -a sgd_kinds <<<"${SGD_KINDS:-$all_sgd_kinds}"
read -r -a sgd_precisions <<<"${SGD_PRECISIONS:-$all_sgd_precisions}"
read -r -a local_steps <<<"${H:-1}"
trials=${TRIALS:-$all_trials} rounds=${ROUNDS:-$all_rounds} detection=${DETECTION:-2} seed=${SEED:-1}
sgd_rounds=${SGD_ROUNDS:-4} sgd_trials=${SGD_TRIALS:-$all_sgd_trials}
step_flops=${STEP_FLOPS:-3.6e8} blocksize=${BLOCKSIZE:-134217728}
for v in BLOCKSIZE:$blocksize TRIALS:$trials ROUNDS:$rounds SGD_ROUNDS:$sgd_rounds SGD_TRIALS:$sgd_trials \
         $(printf 'H:%s ' "${local_steps[@]}"); do
  is_count "${v#*:}" || die "${v%%:*}='${v#*:}' is not a positive integer"
done
for n in "${peers_list[@]}" "${sgd_peers[@]}"; do
  is_count "$n" && [ "$n" -ge 4 ] || die "PEERS_LIST/SGD_PEERS: '$n' is not an integer >= 4"
done
case "$seed" in '' | *[!0-9]*) die "SEED='$seed' is not a non-negative integer" ;; esac
for v in "DETECTION:$detection" "STEP_FLOPS:$step_flops" $(printf 'FAILS:%s ' "${fails[@]}"); do
  awk -v s="${v#*:}" 'BEGIN { exit !(s ~ /^[0-9.eE+-]+$/ && s + 0 >= 0) }' || die "${v%%:*}: '${v#*:}' is not a number >= 0"
done
for k in "${kinds[@]}" "${sgd_kinds[@]}"; do
  case "$k" in cluster | cloud | geo | fat | daint) ;; *) die "KINDS/SGD_KINDS: '$k' is not cluster, fat, cloud, geo or daint" ;; esac
done
for p in "${precisions[@]}" "${sgd_precisions[@]}"; do
  case "$p" in fp32 | fp16 | q8) ;; *) die "PRECISIONS/SGD_PRECISIONS: '$p' is not fp32, fp16 or q8" ;; esac
done
for p in "${parts[@]}"; do case "$p" in avg | sgd | tta) ;; *) die "PARTS: '$p' is not avg, sgd or tta" ;; esac; done
tta_peers=${TTA_PEERS:-1024} tta_kind=${TTA_KIND:-cluster} tta_steps=${TTA_STEPS:-300} tta_trials=${TTA_TRIALS:-10}
for v in TTA_STEPS:$tta_steps TTA_TRIALS:$tta_trials; do is_count "${v#*:}" || die "${v%%:*}='${v#*:}' is not a positive integer"; done
is_count "$tta_peers" && [ "$tta_peers" -ge 4 ] || die "TTA_PEERS: '$tta_peers' is not an integer >= 4"
case "$tta_kind" in cluster | cloud | geo | fat | daint) ;; *) die "TTA_KIND: '$tta_kind' is not cluster, fat, cloud, geo or daint" ;; esac
fat_bb=${FAT_BB:-1000} daint_bw=${DAINT_BW:-10}
for v in "FAT_BB:$fat_bb" "DAINT_BW:$daint_bw"; do
  awk -v s="${v#*:}" 'BEGIN { exit !(s ~ /^[0-9.eE+-]+$/ && s + 0 > 0) }' || die "${v%%:*}: '${v#*:}' is not a number > 0 (GBps)"
done

protocol_flags() {  # the study's protocol name -> averaging_bench flags, as column=value
  case "$1" in
    allreduce) echo "protocol=allreduce" ;;
    moshpit) echo "protocol=moshpit" ;;
    random-groups) echo "protocol=random-groups" ;;
    sgp) echo "protocol=pushsum" ;;  # its default graph: the one-peer exponential graph
    gossip) echo "protocol=gossip topology=exp" ;;
    swarm) echo "protocol=swarm" ;;
    swarm-nb) echo "protocol=swarm mode=non-blocking" ;;
    *) die "PROTOCOLS: '$1' is not one of $all_protocols" ;;
  esac
}
gbps() { awk -v g="$1" 'BEGIN { printf "%.6g", g * 1e9 }'; }
# A kind's platform, as the programs' flags: the sequential engine reads them, and
# smpirun.sh makes SMPI's platform from them.
platform() {
  case "$1" in
    cluster) echo "" ;;
    fat) echo "backbone-bandwidth=$(gbps "$fat_bb")" ;;
    daint) echo "link-bandwidth=$(gbps "$daint_bw") link-latency=1e-6 backbone-bandwidth=1e15 backbone-latency=1e-6" ;;
    *) echo "platform=$1" ;;
  esac
}
# Doubles on the wire per peer vector: 25.6M parameters of 4, 2 or 1 bytes.
model_dim() { case "$1" in fp32) echo 12800000 ;; fp16) echo 6400000 ;; q8) echo 3200000 ;; esac; }

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
        sweep_row "name=avg_${p}_${prec}_n${n}_${kind}_f${f}${suffix} peers=$n $cfg" \
          "$(protocol_flags "$p") model-dim=$(model_dim "$prec") fail-rate=$f $det $(platform "$kind")" \
          "rounds=$rounds trials=$trials target=1e-4 stop-at-target=true $common"
      done; done
    done; done; done
  elif [ "$part" = tta ]; then
    "$python" "$here/fashion_libsvm.py" "$results" >/dev/null || exit 2
    for p in "${protocols[@]}"; do
      local_flags="local-steps=1"
      case "$p" in swarm*) local_flags="local-steps=1 local-steps-dist=geometric" ;; esac
      # A logistic gradient on a batch of 8 images of 784 pixels: about 4 flops a
      # pixel each (dot product, then the scaled sum).
      sweep_row "name=tta_${p}_n${tta_peers}_${tta_kind}${suffix} peers=$tta_peers program=$sgd_bench $cfg" \
        "$(protocol_flags "$p") objective=logistic data=$results/fashion-7-9.train test-data=$results/fashion-7-9.test" \
        "$local_flags steps=$tta_steps eval-every=10 batch=8 lr=0.5 step-flops=25000 $(platform "$tta_kind")" \
        "trials=$tta_trials seed=$seed quiet=true"
    done
  else
    for n in "${sgd_peers[@]}"; do for kind in "${sgd_kinds[@]}"; do for h in "${local_steps[@]}"; do
      flops=$(awk -v h="$h" -v f="$step_flops" 'BEGIN { printf "%.6g", h * f }')
      for prec in "${sgd_precisions[@]}"; do for p in "${protocols[@]}"; do
        sweep_row "name=sgd_${p}_${prec}_h${h}_n${n}_${kind}${suffix} peers=$n $cfg" \
          "$(protocol_flags "$p") model-dim=$(model_dim "$prec") compute-flops=$flops $(platform "$kind")" \
          "rounds=$sgd_rounds trials=$sgd_trials $common"
      done; done
    done; done; done
  fi
done
sweep_run
