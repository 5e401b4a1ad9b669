#!/usr/bin/env bash
# Local SGD on two convex problems with five averaging protocols: one sgd_bench run
# per cell N x objective x p x protocol, each leaving one trace
# $RESULTS/N<N>_<objective>_p<p>_<protocol>.h5 and the program's table and messages
# in the .log beside it. README.md says why the parameters are what they are. This
# script only writes the cells as rows of $RESULTS/table.tsv; scripts/avbench sweep runs
# them (experiments/sweep_common.sh: JOBS, RESULTS, AVB_ENGINE, SGD_BENCH, PYTHON, SLURM).
#
#   experiments/sgd_convex/run.sh                          # the whole sweep (40 cells), under SMPI
#   JOBS=2 experiments/sgd_convex/run.sh                   # two cells at a time
#   PEERS=64 OBJECTIVES=logistic RESULTS=/tmp/s experiments/sgd_convex/run.sh
#   AVB_ENGINE=openmpi PEERS=4 PROTOCOLS="allreduce pushsum" STEPS=30 RESULTS=/tmp/s experiments/sgd_convex/run.sh
#
# Settings, as environment variables [default], beside sweep_common.sh's. STEPS,
# TRIALS, DIMS and EVAL take a list of N:value overrides after an optional bare
# default ("1000 1024:200": 200 at N = 1024, 1000 for any other N).
#   PEERS       peer counts N                            [64 1024]
#   OBJECTIVES  quadratic and/or logistic                [quadratic logistic]
#   RATES       failure rates p (used verbatim in the file names)   [0 0.01]
#   PROTOCOLS   cells, among: allreduce moshpit gossip-ring gossip-exp pushsum, and
#               allreduce-survivors (not in the default sweep)
#                                                        [allreduce moshpit gossip-ring gossip-exp pushsum]
#   STEPS       SGD steps per trial                      [1000 1024:200]
#   TRIALS      trials per cell                          [3 1024:1]
#   DIMS        model dimension d                        [10 1024:4]
#   EVAL        --eval-every                             [10 1024:5]
#   SEED        one seed for every cell (same problem, minibatches, failures)  [1]
#
# The problems (the same lr for every protocol of a cell row, chosen so that all of
# them converge; see README.md):
#   quadratic  --preset epfl --zeta 1 --sigma s --batch 1 --lr 1/N --lr-schedule inverse
#              --lr-decay-steps 6, with s = 0.01 sqrt(64 d / (10 N)): the same relative
#              noise floor at every (N, d) (0.01 at N = 64, d = 10)
#   logistic   synthetic, --label-skew 0.8 --batch 8 --lr 1 --lr-schedule inverse
#              --lr-decay-steps 20 (separation 1, 100 samples per peer: the defaults)
# Every cell: --target 1e-2 --target 1e-4, no --stop-at-target (whole curves).
# Cells run largest N first, so that the long ones do not end the sweep alone.
# Resumable (a complete trace is skipped, a stopped one redone); each cell that ends
# normally appends "cell seconds" to $RESULTS/walltime.tsv.
set -euo pipefail

# Kept on SMPI, where its results were measured; AVB_ENGINE=sequential gives the
# same values (not the same time column) in a fraction of the time.
avb_default_engine=smpi
source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh
read -r -a peers <<<"${PEERS:-64 1024}"
read -r -a objectives <<<"${OBJECTIVES:-quadratic logistic}"
read -r -a rates <<<"${RATES:-0 0.01}"
read -r -a protocols <<<"${PROTOCOLS:-allreduce moshpit gossip-ring gossip-exp pushsum}"
steps_spec=${STEPS:-1000 1024:200} trials_spec=${TRIALS:-3 1024:1}
dims_spec=${DIMS:-10 1024:4} eval_spec=${EVAL:-10 1024:5} seed=${SEED:-1}

[ ${#peers[@]} -gt 0 ] && [ ${#objectives[@]} -gt 0 ] && [ ${#rates[@]} -gt 0 ] && [ ${#protocols[@]} -gt 0 ] ||
  die "PEERS, OBJECTIVES, RATES and PROTOCOLS must not be empty"
for n in "${peers[@]}"; do
  is_count "$n" || die "PEERS: '$n' is not a positive integer"
  for spec in STEPS:"$steps_spec" TRIALS:"$trials_spec" DIMS:"$dims_spec" EVAL:"$eval_spec"; do
    per_n "${spec#*:}" "$n" "${spec%%:*}" >/dev/null
  done
done
for o in "${objectives[@]}"; do
  case "$o" in quadratic|logistic) ;; *) die "OBJECTIVES: '$o' is neither quadratic nor logistic" ;; esac
done
for p in "${rates[@]}"; do
  awk -v p="$p" 'BEGIN { exit !(p ~ /^[0-9.eE+-]+$/ && p + 0 >= 0 && p + 0 <= 1) }' ||
    die "RATES: '$p' is not a number in [0, 1]"
done
for protocol in "${protocols[@]}"; do
  case "$protocol" in
    allreduce|allreduce-survivors|moshpit|gossip-ring|gossip-exp|pushsum) ;;
    *) die "PROTOCOLS: '$protocol' is not one of allreduce allreduce-survivors moshpit gossip-ring gossip-exp pushsum" ;;
  esac
done

protocol_flags() {  # cell protocol -> its flags, as column=value
  case "$1" in
    allreduce) echo "protocol=allreduce" ;;       # its default: abort (restarts), collective auto
    allreduce-survivors) echo "protocol=allreduce on-failure=survivors" ;;
    moshpit) echo "protocol=moshpit" ;;           # default grid: ceil(sqrt N)^2, 8x8 and 32x32
    gossip-ring) echo "protocol=gossip topology=ring" ;;   # uniform weights 1/3, rows renormalised
    gossip-exp) echo "protocol=gossip topology=exp" ;;     # i -> i + 2^j, weights 1/(log2 N + 1)
    pushsum) echo "protocol=pushsum" ;;           # its default topology: one-peer-exp
  esac
}

problem_flags() {  # objective N d -> its flags, as column=value
  case "$1" in
    quadratic)
      local sigma lr
      sigma=$(awk -v n="$2" -v d="$3" 'BEGIN { printf "%.3g", 0.01 * sqrt(64 * d / (10 * n)) }')
      lr=$(awk -v n="$2" 'BEGIN { printf "%.10g", 1 / n }')
      echo "objective=quadratic preset=epfl zeta=1 sigma=$sigma batch=1 lr=$lr lr-schedule=inverse lr-decay-steps=6" ;;
    logistic)
      echo "objective=logistic label-skew=0.8 batch=8 lr=1 lr-schedule=inverse lr-decay-steps=20" ;;
  esac
}

for n in $(printf '%s\n' "${peers[@]}" | sort -rn); do
  d=$(per_n "$dims_spec" "$n" DIMS)
  for objective in "${objectives[@]}"; do for p in "${rates[@]}"; do for protocol in "${protocols[@]}"; do
    sweep_row "name=N${n}_${objective}_p${p}_${protocol} peers=$n program=$sgd_bench" \
      "$(protocol_flags "$protocol") fail-rate=$p $(problem_flags "$objective" "$n" "$d") dim=$d" \
      "steps=$(per_n "$steps_spec" "$n" STEPS) eval-every=$(per_n "$eval_spec" "$n" EVAL)" \
      "trials=$(per_n "$trials_spec" "$n" TRIALS) seed=$seed target=1e-2 target=1e-4 quiet=true"
  done; done; done
done
sweep_run
