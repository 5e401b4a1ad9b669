#!/usr/bin/env bash
# End to end on real Open MPI ranks: a tiny version of the sweep (N = 4 and 8, p = 0 and
# 0.1, allreduce, random-groups and moshpit, 3 trials of at most 10 rounds: 12 traces,
# named as run_sweep.sh names them), then moshpit_table.ipynb executed headless on it;
# checks that every cell ran without error and that every figure was written as a PNG.
#
#   experiments/moshpit_table/test_notebook.sh [AVERAGING_BENCH [MPIEXEC]]
#                                  default: build/apps/averaging_bench, mpiexec on PATH
#
# (run_sweep.sh itself launches with smpirun or srun; here the cells run under mpiexec,
# with the sweep's flags, so that the test needs only the Open MPI build.)
# Needs Debian's python3 with h5py, pandas, matplotlib and jupyter nbconvert with a
# python3 kernel (scripts/install-deps.sh installs them). Nothing in the repository is
# written: traces, executed notebook and figures go to a scratch folder, removed at the end.
set -euo pipefail

# shellcheck source=../notebook_test.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
nb_init moshpit_table_notebook
nb_averaging_bench "$@"

# 1. The tiny sweep, with run_sweep.sh's per-protocol flags (group size and grid scaled down).
for n in 4 8; do for p in 0 0.1; do for protocol in allreduce random-groups moshpit; do
  case $protocol in
    allreduce) extra=(--on-failure abort --collective tree) ;;
    random-groups) extra=(--group-size 2) ;;
    moshpit) extra=(--grid 2x$((n / 2))) ;;
  esac
  cell=N${n}_p${p}_${protocol}
  nb_run_cell "$cell" "$scratch/results/$cell.h5" "$n" --protocol "$protocol" --fail-rate "$p" --trials 3 \
    --rounds 10 --seed 2021 --target 1e-4 --target 1e-9 --stop-at-target "${extra[@]}"
done; done; done
ok "$traces traces"

# 2. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute moshpit_table.ipynb MOSHPIT_RESULTS="$scratch/results" MOSHPIT_FIGURES="$scratch/figures"
expected=(fig_variance_rounds.png fig_N8_p0.1_variance_vs_rounds.png fig_N8_p0.1_variance_vs_time.png
          fig_N8_p0.1_variance_vs_bytes.png)
nb_check_figures "${expected[@]}"
# Every code cell ran, none raised, the figures are inline, and the table has one row
# per cell.
nb_check_executed "${#expected[@]}" 'f"{argv[0]} cells" in text' "$traces"
nb_check_tracked moshpit_table.ipynb
nb_finish
