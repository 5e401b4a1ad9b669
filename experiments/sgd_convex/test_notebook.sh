#!/usr/bin/env bash
# End to end on real Open MPI ranks: a tiny sweep with run.sh (4 peers, allreduce and
# pushsum, both problems, p = 0 and 0.01, 30 steps: 8 cells), summarize.py on it, then
# the notebook executed headless on it; checks the traces, the table, that every cell
# ran without error and that every figure was written as a PNG.
#
#   experiments/sgd_convex/test_notebook.sh [SGD_BENCH]     default: build/apps/sgd_bench
#
# Needs the Open MPI build of sgd_bench, Debian's python3 with h5py, pandas, matplotlib
# and jupyter nbconvert with a python3 kernel (scripts/install-deps.sh installs them).
# Nothing in the repository is written: traces, executed notebook and figures go to a
# scratch folder, removed at the end.
set -euo pipefail

# shellcheck source=../notebook_test.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
nb_init sgd_convex_notebook
bench=${1:-$root/build/apps/sgd_bench}
nb_need "$bench"

# 1. The sweep: 1 peer-count x 2 problems x 2 rates x 2 protocols, 2 trials of 30 steps.
cells=()
for objective in quadratic logistic; do for p in 0 0.01; do for protocol in allreduce pushsum; do
  cells+=("N4_${objective}_p${p}_${protocol}")
done; done; done
sweep() {
  AVB_ENGINE=openmpi SGD_BENCH="$bench" PEERS=4 PROTOCOLS="allreduce pushsum" STEPS=30 TRIALS=2 EVAL=5 \
    RESULTS="$scratch/results" timeout "$1" "$here/run.sh"
}
# Each cell's trace and wall time; a second run skips every cell.
nb_run_sweep "" "${cells[@]}"

# 2. The table.
nb_check_summary ${#cells[@]} '| 4 | logistic | 0.01 | pushsum | 2 |' logistic/pushsum

# 3. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute sgd_convex.ipynb SGD_CONVEX_RESULTS="$scratch/results" SGD_CONVEX_FIGURES="$scratch/figures"
expected=(fig_N4_quadratic_p0.png fig_N4_quadratic_p0.01.png fig_N4_logistic_p0.png fig_N4_logistic_p0.01.png
          fig_final_gap.png)
nb_check_figures "${expected[@]}"
# Every code cell ran, none raised, and the figures are inline.
nb_check_executed "${#expected[@]}"
nb_check_tracked sgd_convex.ipynb
nb_finish
