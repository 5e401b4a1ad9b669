#!/usr/bin/env bash
# End to end on the sequential engine: run.sh --smoke (8 peers, --hidden 16, the first
# 400 training images, 20 steps, 2 trials, p = 0 and 0.01, the six methods: 12 cells),
# summarize.py on it, then the notebook executed headless on it; checks the traces, the
# table, that every cell ran without error and that every figure was written as a PNG.
#
#   experiments/fashion_mlp/test_notebook.sh [SGD_BENCH]     default: build/apps/sgd_bench
#
# Needs sgd_bench, the Fashion-MNIST files in /usr/share/datasets/fashion-mnist (or
# DATA=folder), Debian's python3 with h5py, pandas, matplotlib and jupyter nbconvert
# with a python3 kernel (scripts/install-deps.sh installs them). Nothing in the
# repository is written: traces, executed notebook and figures go to a scratch
# folder, removed at the end.
set -euo pipefail

# shellcheck source=../notebook_test.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
nb_init fashion_mlp_notebook
bench=${1:-$root/build/apps/sgd_bench}
nb_need "$bench"
[ -r "${DATA:-/usr/share/datasets/fashion-mnist}/train-images-idx3-ubyte.gz" ] ||
  die "no Fashion-MNIST in ${DATA:-/usr/share/datasets/fashion-mnist} (set DATA to its folder)"

# 1. The sweep: 2 rates x 6 methods at N = 8.
cells=()
for p in 0 0.01; do for method in allreduce moshpit sgp swarm diloco noloco; do
  cells+=("N8_p${p}_${method}")
done; done
sweep() { SGD_BENCH="$bench" timeout "$1" "$here/run.sh" --smoke --results "$scratch/results"; }
# Each cell's trace and wall time; a second run skips every cell.
nb_run_sweep "" "${cells[@]}"

# 2. The table: 12 rows, the two trials of each cell counted.
nb_check_summary ${#cells[@]} '| 8 | 0.01 | random | noloco | 2 | 20 |' noloco '| 8 | 0 | random | diloco | 2 |' diloco

# 3. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute fashion_mlp.ipynb FASHION_MLP_RESULTS="$scratch/results" FASHION_MLP_FIGURES="$scratch/figures"
expected=(fig_N8_p0.png fig_N8_p0.01.png)
nb_check_figures "${expected[@]}"
# Every code cell ran, none raised, the figures are inline and the table was shown.
nb_check_executed "${#expected[@]}" '"wrote fig_N8_p0.png, fig_N8_p0.01.png" in text'
nb_check_tracked fashion_mlp.ipynb
nb_finish
