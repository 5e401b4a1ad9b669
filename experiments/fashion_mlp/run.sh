#!/usr/bin/env bash
# The MLP on Fashion-MNIST (784-128-10, ReLU) trained by six decentralized methods:
# one sgd_bench run per cell N x p x method, each leaving one trace
# $RESULTS/N<N>_p<p>_<method>[_<split>].h5 (+ .log; the split named unless random).
# README.md says why the parameters are what they are. The cells become rows of
# $RESULTS/table.tsv, which scripts/avbench sweep runs (experiments/sweep_common.sh:
# JOBS, AVB_ENGINE, SGD_BENCH, PYTHON); a complete trace is skipped, a stopped one redone.
#
#   experiments/fashion_mlp/run.sh [--results DIR] [--smoke]
#
#   --results DIR  where the traces go (the same as RESULTS=DIR)   [experiments/fashion_mlp/results]
#   --smoke        a tiny sweep for the test: 8 peers, --hidden 16, --data-limit 400,
#                  20 steps, 2 trials, p = 0 and 0.01 (each setting below still applies)
#
# Settings, as environment variables [default; --smoke's in braces]. STEPS, TRIALS and
# EVAL take "default N:value ..." (sweep_common.sh's per_n).
#   PEERS       peer counts N                              [64 1024] {8}
#   RATES       failure rates p (verbatim in the file names)  [0.01] {0 0.01}
#   METHODS     among allreduce moshpit sgp swarm diloco noloco, and allreduce-survivors
#               diloco-survivors (not in the default sweep)   [the six]
#   STEPS       local SGD steps per trial                  [300 1024:80] {20}
#   TRIALS      trials per cell                            [3 1024:1] {2}
#   EVAL        --eval-every                               [20 1024:10] {10}
#   HIDDEN      hidden units                               [128] {16}
#   DATA_LIMIT  training images used, 0 = all 60,000       [0] {400}
#   SPLIT       random, or dirichlet (--dirichlet-alpha 0.5)   [random]
#   SEED        one seed for every cell                    [1]
#   DATA        the folder of the four IDX files           [/usr/share/datasets/fashion-mnist]
set -euo pipefail

smoke=0
while [ $# -gt 0 ]; do
  case "$1" in
    --results) [ $# -ge 2 ] || { echo "run.sh: --results needs a folder" >&2; exit 2; }
      export RESULTS=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    *) echo "run.sh: unknown argument '$1' (--results DIR, --smoke)" >&2; exit 2 ;;
  esac
done

source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh
if [ "$smoke" = 1 ]; then
  d_peers=8 d_rates="0 0.01" d_steps=20 d_trials=2 d_eval=10 d_hidden=16 d_limit=400
else
  d_peers="64 1024" d_rates=0.01 d_steps="300 1024:80" d_trials="3 1024:1" d_eval="20 1024:10"
  d_hidden=128 d_limit=0
fi
read -r -a peers <<<"${PEERS:-$d_peers}"
read -r -a rates <<<"${RATES:-$d_rates}"
read -r -a methods <<<"${METHODS:-allreduce moshpit sgp swarm diloco noloco}"
steps_spec=${STEPS:-$d_steps} trials_spec=${TRIALS:-$d_trials} eval_spec=${EVAL:-$d_eval}
hidden=${HIDDEN:-$d_hidden} limit=${DATA_LIMIT:-$d_limit} split=${SPLIT:-random} seed=${SEED:-1}
data=${DATA:-/usr/share/datasets/fashion-mnist}

[ ${#peers[@]} -gt 0 ] && [ ${#rates[@]} -gt 0 ] && [ ${#methods[@]} -gt 0 ] ||
  die "PEERS, RATES and METHODS must not be empty"
for n in "${peers[@]}"; do
  is_count "$n" || die "PEERS: '$n' is not a positive integer"
  for spec in STEPS:"$steps_spec" TRIALS:"$trials_spec" EVAL:"$eval_spec"; do
    per_n "${spec#*:}" "$n" "${spec%%:*}" >/dev/null
  done
done
for p in "${rates[@]}"; do
  awk -v p="$p" 'BEGIN { exit !(p ~ /^[0-9.eE+-]+$/ && p + 0 >= 0 && p + 0 <= 1) }' ||
    die "RATES: '$p' is not a number in [0, 1]"
done
case "$split" in random|dirichlet) ;; *) die "SPLIT: '$split' is neither random nor dirichlet" ;; esac
[ -r "$data/train-images-idx3-ubyte.gz" ] || die "DATA=$data has no train-images-idx3-ubyte.gz"

method_flags() {  # method -> its flags, as column=value
  case "$1" in
    allreduce) echo "protocol=allreduce local-steps=1" ;;  # minibatch SGD; a round with a peer down is cancelled
    moshpit) echo "protocol=moshpit local-steps=10" ;;     # grid 8x8 / 32x32 groups
    sgp) echo "protocol=pushsum local-steps=1" ;;          # SGP: push-sum on the one-peer exponential graph
    swarm) echo "protocol=swarm local-steps=10" ;;         # SwarmSGD: random pairs, blocking
    diloco) echo "protocol=allreduce local-steps=10 outer-optimizer=nesterov" ;;   # outer lr 0.7, momentum 0.9
    noloco) echo "protocol=pairwise local-steps=10 outer-optimizer=sgd outer-momentum=0.3" ;;
    # The alive peers all-reduce among themselves instead of cancelling the round.
    allreduce-survivors) echo "protocol=allreduce local-steps=1 on-failure=survivors" ;;
    diloco-survivors) echo "protocol=allreduce local-steps=10 outer-optimizer=nesterov on-failure=survivors" ;;
    *) die "METHODS: '$1' is not one of allreduce moshpit sgp swarm diloco noloco allreduce-survivors diloco-survivors" ;;
  esac
}
for m in "${methods[@]}"; do method_flags "$m" >/dev/null; done

# One MLP step on a batch of 32 is ~6 x 32 x 101,770 = 2e7 flops (forward and backward),
# charged at the platform's 1e9 flops/s: the time axis counts compute as well as the wire.
problem="objective=mlp hidden=$hidden data=$data/train-images-idx3-ubyte.gz"
problem+=" test-data=$data/t10k-images-idx3-ubyte.gz data-limit=$limit split=$split"
problem+=" lr=0.1 batch=32 step-flops=2e7"
suffix=""  # a non-iid cell is a cell of its own, not the iid one's trace
[ "$split" = random ] || suffix=_$split
for n in $(printf '%s\n' "${peers[@]}" | sort -rn); do  # the long cells first
  for p in "${rates[@]}"; do for m in "${methods[@]}"; do
    sweep_row "name=N${n}_p${p}_${m}$suffix peers=$n program=$sgd_bench" \
      "$(method_flags "$m") fail-rate=$p $problem" \
      "steps=$(per_n "$steps_spec" "$n" STEPS) eval-every=$(per_n "$eval_spec" "$n" EVAL)" \
      "trials=$(per_n "$trials_spec" "$n" TRIALS) seed=$seed quiet=true"
  done; done
done
sweep_run
