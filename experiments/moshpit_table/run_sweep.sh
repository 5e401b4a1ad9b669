#!/usr/bin/env bash
# The averaging sweep of Section 4.1 (Moshpit SGD): one averaging_bench run per cell
# N x p x protocol, each leaving one trace $RESULTS/N<N>_p<p>_<protocol>.h5 and the
# program's table and messages in $RESULTS/N<N>_p<p>_<protocol>.log. This script only
# writes the cells as rows of $RESULTS/table.tsv; scripts/avbench sweep runs them
# (experiments/sweep_common.sh: JOBS, RESULTS, AVB_ENGINE, PYTHON, SLURM).
#
#   experiments/moshpit_table/run_sweep.sh                       # the whole sweep, sequential engine
#   AVB_ENGINE=smpi experiments/moshpit_table/run_sweep.sh       # the same under SMPI (hours)
#   JOBS=2 TRIALS=20 PEERS=512 RESULTS=/tmp/t experiments/moshpit_table/run_sweep.sh
#   PROTOCOLS="gossip sgp-paper pushsum" TRIALS=20 experiments/moshpit_table/run_sweep.sh
#   AVB_ENGINE=openmpi SLURM=1 SLURM_ARGS="--time 02:00:00" experiments/moshpit_table/run_sweep.sh
#
# Settings, as environment variables [default], beside sweep_common.sh's:
#   PEERS      peer counts N, space-separated        [512 768 900 1024]
#   RATES      failure rates p (used verbatim in the file names)  [0 0.001 0.005 0.01]
#   PROTOCOLS  protocols                             [allreduce random-groups moshpit]
#              the paper's graph columns: PROTOCOLS="gossip sgp-paper pushsum" TRIALS=20
#              (gossip = Gossip, sgp-paper = SGP; pushsum has no published column)
#   TRIALS     trials per cell                       [100]
#   SEED       one seed for every cell               [2021]
#
# Resumable (a complete trace is skipped, a stopped one redone); each cell that ends
# normally appends "cell seconds" to $RESULTS/walltime.tsv.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run_sweep.sh
read -r -a peers <<<"${PEERS:-512 768 900 1024}"
read -r -a rates <<<"${RATES:-0 0.001 0.005 0.01}"
read -r -a protocols <<<"${PROTOCOLS:-allreduce random-groups moshpit}"
trials=${TRIALS:-100} seed=${SEED:-2021}

protocol_flags() {  # protocol -> its flags, as column=value
  case "$1" in
    # "All-Reduce with restarts", said explicitly; the collective does not change the
    # rounds, and tree is the cheapest to simulate (the group protocols refuse the flag).
    allreduce) echo "on-failure=abort collective=tree" ;;
    random-groups) echo "group-size=32" ;;
    moshpit) echo "grid=32x32" ;;           # the paper's grid for every N
    # The graph columns hardly stop early (gossip never reaches 1e-9 in 50 rounds,
    # sgp-paper after ~45), so they cost ~50 full rounds a trial: README.md says how slow.
    # Gossip as the paper simulated it: the ring, self + 2 neighbours at 1/3 each, rows
    # renormalised over the alive entries (our defaults, said explicitly).
    gossip) echo "topology=ring weights=uniform alive-weights=renormalize" ;;
    sgp-paper) echo "" ;;                   # the paper's "SGP" (i +- 2^k); no options
    pushsum) echo "topology=one-peer-exp" ;;  # real push-sum; no published column
    *) die "PROTOCOLS: '$1' is not one of allreduce random-groups moshpit gossip sgp-paper pushsum" ;;
  esac
}

for protocol in "${protocols[@]}"; do protocol_flags "$protocol" >/dev/null; done  # dies on a bad name
for n in "${peers[@]}"; do for p in "${rates[@]}"; do for protocol in "${protocols[@]}"; do
  sweep_row "name=N${n}_p${p}_${protocol} peers=$n program=$avg_bench protocol=$protocol fail-rate=$p" \
    "trials=$trials rounds=50 seed=$seed target=1e-4 target=1e-9 stop-at-target=true" \
    "$(protocol_flags "$protocol") quiet=true"
done; done; done
sweep_run
