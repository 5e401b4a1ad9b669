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
python=/usr/bin/python3
name=test_notebook
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export PYDEVD_DISABLE_FILE_VALIDATION=1                            # quiets ipykernel's debugger warning

scratch=$(mktemp -d "${TMPDIR:-/tmp}/avb-$name.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failures=0
ok() { echo "$name: ok: $*"; }
bad() { echo "$name: FAIL: $*" >&2; failures=$((failures + 1)); }
die() { echo "$name: FAIL: $*" >&2; exit 1; }

[ -x "$bench" ] || die "$bench is missing (the Open MPI build: cmake --preset default && cmake --build build)"
command -v jupyter >/dev/null || die "jupyter is not on PATH (scripts/install-deps.sh installs jupyter-nbconvert)"

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
mkdir -p "$scratch/figures"
if SGD_CONVEX_RESULTS="$scratch/results" SGD_CONVEX_FIGURES="$scratch/figures" \
   timeout 240 jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=200 \
     "$here/sgd_convex.ipynb" --output-dir "$scratch" --output executed.ipynb >"$scratch/nbconvert.log" 2>&1; then
  ok "notebook executed"
else
  cat "$scratch/nbconvert.log" >&2
  die "jupyter nbconvert --execute failed"
fi
expected=(fig_N4_quadratic_p0.png fig_N4_quadratic_p0.01.png fig_N4_logistic_p0.png fig_N4_logistic_p0.01.png
          fig_final_gap.png)
for fig in "${expected[@]}"; do
  f=$scratch/figures/$fig
  if [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
    ok "figure $fig"
  else
    bad "figure $fig missing or not a PNG"
  fi
done
# Every code cell ran, none raised, and the figures are in the notebook too.
if report=$("$python" - "$scratch/executed.ipynb" "${#expected[@]}" <<'EOF'
import json, sys
nb = json.load(open(sys.argv[1]))
code = [c for c in nb["cells"] if c["cell_type"] == "code"]
errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None]
images = sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
print(f"{len(code)} code cells, {len(errors)} errors, {len(unrun)} not run, {images} inline images")
sys.exit(0 if not errors and not unrun and images >= int(sys.argv[2]) else 1)
EOF
); then ok "executed notebook: $report"; else bad "executed notebook: $report"; fi
# The tracked notebook and figures are not touched by the test.
[ ! -e "$here/fig_N4_quadratic_p0.png" ] || bad "a figure of the tiny sweep landed in $here"

if [ "$failures" -ne 0 ]; then
  echo "$name: $failures check(s) FAILED" >&2
  exit 1
fi
echo "$name: all checks passed"
