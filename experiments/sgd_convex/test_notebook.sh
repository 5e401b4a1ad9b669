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

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${1:-$root/build/apps/sgd_bench}
source "$root/experiments/notebook_test.sh"
nb_init sgd_convex_notebook

[ -x "$bench" ] || die "$bench is missing (the Open MPI build: cmake --preset default && cmake --build build)"

# 1. The sweep: 1 peer-count x 2 problems x 2 rates x 2 protocols, 2 trials of 30 steps.
cells=()
for objective in quadratic logistic; do for p in 0 0.01; do for protocol in allreduce pushsum; do
  cells+=("N4_${objective}_p${p}_${protocol}")
done; done; done
if ! AVB_ENGINE=openmpi SGD_BENCH="$bench" PEERS=4 PROTOCOLS="allreduce pushsum" STEPS=30 TRIALS=2 EVAL=5 \
     RESULTS="$scratch/results" timeout 240 "$here/run.sh" >"$scratch/run.log" 2>&1; then
  cat "$scratch/run.log" >&2
  for log in "$scratch"/results/*.log; do [ -e "$log" ] && { echo "== $log" >&2; tail -5 "$log" >&2; }; done
  die "run.sh failed"
fi
for cell in "${cells[@]}"; do
  [ -s "$scratch/results/$cell.h5" ] || bad "run.sh wrote no trace $cell.h5"
done
[ "$(tail -n +2 "$scratch/results/walltime.tsv" | wc -l)" -eq ${#cells[@]} ] ||
  bad "walltime.tsv has not one line per cell: $(cat "$scratch/results/walltime.tsv")"
ok "run.sh: ${#cells[@]} traces, one wall time each"

# A second run skips every cell.
AVB_ENGINE=openmpi SGD_BENCH="$bench" PEERS=4 PROTOCOLS="allreduce pushsum" STEPS=30 TRIALS=2 EVAL=5 \
  RESULTS="$scratch/results" timeout 60 "$here/run.sh" >"$scratch/rerun.log" 2>&1 || bad "run.sh rerun failed"
[ "$(grep -c '^skip ' "$scratch/rerun.log")" -eq ${#cells[@]} ] && ! grep -q '^start ' "$scratch/rerun.log" &&
  ok "rerun: every cell skipped" || bad "rerun did not skip every cell: $(cat "$scratch/rerun.log")"

# 2. The table.
if "$python" "$here/summarize.py" --results "$scratch/results" --csv "$scratch/results.csv" \
     --md "$scratch/table.md" >"$scratch/summary.out" 2>&1; then
  rows=$(tail -n +2 "$scratch/results.csv" | wc -l)
  [ "$rows" -eq ${#cells[@]} ] && ok "summarize.py: $rows rows" || bad "summarize.py: $rows rows, not ${#cells[@]}"
  grep -q '| 4 | logistic | 0.01 | pushsum | 2 |' "$scratch/table.md" || bad "table.md lacks the logistic/pushsum row"
else
  cat "$scratch/summary.out" >&2
  bad "summarize.py failed"
fi

# 3. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute sgd_convex.ipynb SGD_CONVEX_RESULTS="$scratch/results" SGD_CONVEX_FIGURES="$scratch/figures"
expected=(fig_N4_quadratic_p0.png fig_N4_quadratic_p0.01.png fig_N4_logistic_p0.png fig_N4_logistic_p0.01.png
          fig_final_gap.png)
nb_check_figures "${expected[@]}"
# Every code cell ran, none raised, and the figures are inline.
nb_check_executed "${#expected[@]}"
nb_check_tracked sgd_convex.ipynb
nb_finish
