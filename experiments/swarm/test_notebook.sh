#!/usr/bin/env bash
# End to end on real Open MPI ranks: a tiny sweep with run.sh (4 peers; swarm plain,
# fp16, lattice and Poisson-clocked, moshpit and ring gossip averaging 10 values for
# 6 rounds; swarm with geometric local steps, plain and lattice, moshpit and ring gossip
# training for 20 steps: 10 cells), summarize.py on it, then the notebook executed
# headless on it; checks the traces, the table, that every notebook cell ran without
# error and that both figures were written as PNGs.
#
#   experiments/swarm/test_notebook.sh [AVERAGING_BENCH [SGD_BENCH]]
#                                      default: build/apps/averaging_bench, build/apps/sgd_bench
#
# Needs the Open MPI build of both programs, Debian's python3 with h5py, pandas,
# matplotlib and jupyter nbconvert with a python3 kernel (scripts/install-deps.sh
# installs them). Nothing in the repository is written: traces, executed notebook and
# figures go to a scratch folder, removed at the end.
set -euo pipefail

# shellcheck source=../notebook_test.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
nb_init swarm_notebook
avg_bench=${1:-$root/build/apps/averaging_bench}
sgd_bench=${2:-$root/build/apps/sgd_bench}
nb_need "$avg_bench" "$sgd_bench"

# 1. The sweep.
cells=(avg_swarm avg_swarm-fp16 avg_swarm-lattice16 avg_swarm-poisson avg_moshpit avg_gossip-ring
       sgd_swarm-geo sgd_swarm-geo-lattice sgd_moshpit sgd_gossip-ring)
sweep() {
  AVB_ENGINE=openmpi AVERAGING_BENCH="$avg_bench" SGD_BENCH="$sgd_bench" CELLS="${cells[*]}" PEERS=4 DIM=10 \
    ROUNDS=6 RING_ROUNDS=10 TRIALS=2 SGD_DIM=10 STEPS=20 SGD_TRIALS=1 RESULTS="$scratch/results" \
    timeout "$1" "$here/run.sh"
}
# Each cell's trace and wall time; a second run skips every cell.
nb_run_sweep _mpi "${cells[@]}"

# 2. The table.
nb_check_summary ${#cells[@]} '^| swarm-lattice16 | lattice | mpi | 2 |' swarm-lattice16 \
  '^| swarm-geo | none | mpi | 1 |' "sgd swarm-geo"

# 3. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute swarm.ipynb SWARM_RESULTS="$scratch/results" SWARM_FIGURES="$scratch/figures"
expected=(fig_averaging.png fig_sgd.png)
nb_check_figures "${expected[@]}"
# Every code cell ran, none raised, and the figures are inline.
nb_check_executed "${#expected[@]}"
nb_check_tracked swarm.ipynb
nb_finish
