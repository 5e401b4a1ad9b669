#!/usr/bin/env bash
# End to end on real Open MPI ranks: gossip (uniform weights, no failures) on 8 peers on
# five graphs (ring, torus, hypercube, exp, one-peer-exp), 3 trials of 12 rounds: one
# trace per graph, named <graph>.h5; then gossip_rates.ipynb executed headless on them;
# checks that every cell ran without error and that every figure was written as a PNG.
#
#   experiments/gossip_rates/test_notebook.sh [AVERAGING_BENCH [MPIEXEC]]
#                                  default: build/apps/averaging_bench, mpiexec on PATH
#
# (run.sh needs graph_info, averaging_bench and the SMPI build; the notebook draws graph_info's
# predictions only where run.sh left them, so the test needs only averaging_bench.)
# Needs Debian's python3 with h5py, pandas, matplotlib and jupyter nbconvert with a
# python3 kernel (scripts/install-deps.sh installs them). Nothing in the repository is
# written: traces, executed notebook and figures go to a scratch folder, removed at the end.
set -euo pipefail

# shellcheck source=../notebook_test.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
nb_init gossip_rates_notebook
nb_averaging_bench "$@"

# 1. The tiny sweep: run.sh's gossip flags, 8 peers.
for graph in ring torus hypercube exp one-peer-exp; do
  nb_run_cell "$graph" "$scratch/results/$graph.h5" 8 --protocol gossip --topology "$graph" --weights uniform \
    --trials 3 --rounds 12 --seed 1
done
ok "$traces traces"

# 2. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute gossip_rates.ipynb GOSSIP_RATES_RESULTS="$scratch/results" GOSSIP_RATES_FIGURES="$scratch/figures"
expected=(fig_ratio_rounds.png fig_variance_vs_rounds.png fig_variance_vs_time.png fig_variance_vs_bytes.png)
nb_check_figures "${expected[@]}"
# Every code cell ran, none raised, the figures are inline, and every graph was read
# (one line each: "<graph>: N = 8, 3 trials").
nb_check_executed "${#expected[@]}" 'text.count(", 3 trials,") == int(argv[0])' "$traces"
nb_check_tracked gossip_rates.ipynb
nb_finish
