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

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
avg_bench=${1:-$root/build/apps/averaging_bench}
sgd_bench=${2:-$root/build/apps/sgd_bench}
python=/usr/bin/python3
name=swarm_notebook
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export PYDEVD_DISABLE_FILE_VALIDATION=1                            # quiets ipykernel's debugger warning

scratch=$(mktemp -d "${TMPDIR:-/tmp}/avb-$name.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failures=0
ok() { echo "$name: ok: $*"; }
bad() { echo "$name: FAIL: $*" >&2; failures=$((failures + 1)); }
die() { echo "$name: FAIL: $*" >&2; exit 1; }

for b in "$avg_bench" "$sgd_bench"; do
  [ -x "$b" ] || die "$b is missing (the Open MPI build: cmake --preset default && cmake --build build)"
done
command -v jupyter >/dev/null || die "jupyter is not on PATH (scripts/install-deps.sh installs jupyter-nbconvert)"

# 1. The sweep.
cells=(avg_swarm avg_swarm-fp16 avg_swarm-lattice16 avg_swarm-poisson avg_moshpit avg_gossip-ring
       sgd_swarm-geo sgd_swarm-geo-lattice sgd_moshpit sgd_gossip-ring)
sweep() {
  AVB_ENGINE=openmpi AVERAGING_BENCH="$avg_bench" SGD_BENCH="$sgd_bench" CELLS="${cells[*]}" PEERS=4 DIM=10 \
    ROUNDS=6 RING_ROUNDS=10 TRIALS=2 SGD_DIM=10 STEPS=20 SGD_TRIALS=1 RESULTS="$scratch/results" \
    timeout "$1" "$here/run.sh"
}
if ! sweep 240 >"$scratch/run.log" 2>&1; then
  cat "$scratch/run.log" >&2
  for log in "$scratch"/results/*.log; do [ -e "$log" ] && { echo "== $log" >&2; tail -5 "$log" >&2; }; done
  die "run.sh failed"
fi
for cell in "${cells[@]}"; do
  [ -s "$scratch/results/${cell}_mpi.h5" ] || bad "run.sh wrote no trace ${cell}_mpi.h5"
done
[ "$(tail -n +2 "$scratch/results/walltime.tsv" | wc -l)" -eq ${#cells[@]} ] ||
  bad "walltime.tsv has not one line per cell: $(cat "$scratch/results/walltime.tsv")"
ok "run.sh: ${#cells[@]} traces, one wall time each"

# A second run skips every cell.
sweep 60 >"$scratch/rerun.log" 2>&1 || bad "run.sh rerun failed"
[ "$(grep -c '^skip ' "$scratch/rerun.log")" -eq ${#cells[@]} ] && ! grep -q '^start ' "$scratch/rerun.log" &&
  ok "rerun: every cell skipped" || bad "rerun did not skip every cell: $(cat "$scratch/rerun.log")"

# 2. The table.
if "$python" "$here/summarize.py" --results "$scratch/results" --csv "$scratch/results.csv" \
     --md "$scratch/table.md" >"$scratch/summary.out" 2>&1; then
  rows=$(tail -n +2 "$scratch/results.csv" | wc -l)
  [ "$rows" -eq ${#cells[@]} ] && ok "summarize.py: $rows rows" || bad "summarize.py: $rows rows, not ${#cells[@]}"
  grep -q '^| swarm-lattice16 | lattice | mpi | 2 |' "$scratch/table.md" || bad "table.md lacks the swarm-lattice16 row"
  grep -q '^| swarm-geo | none | mpi | 1 |' "$scratch/table.md" || bad "table.md lacks the sgd swarm-geo row"
else
  cat "$scratch/summary.out" >&2
  bad "summarize.py failed"
fi

# 3. The notebook, headless, on the tiny sweep; figures to the scratch folder.
figures_sum() { { cat "$here"/fig_*.png 2>/dev/null || true; } | md5sum; }
before=$(figures_sum)
mkdir -p "$scratch/figures"
if SWARM_RESULTS="$scratch/results" SWARM_FIGURES="$scratch/figures" \
   timeout 240 jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=200 \
     "$here/swarm.ipynb" --output-dir "$scratch" --output executed.ipynb >"$scratch/nbconvert.log" 2>&1; then
  ok "notebook executed"
else
  cat "$scratch/nbconvert.log" >&2
  die "jupyter nbconvert --execute failed"
fi
expected=(fig_averaging.png fig_sgd.png)
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
# The tracked notebook keeps its outputs cleared, and the tiny sweep's figures stay in scratch.
"$python" -c 'import json, sys; nb = json.load(open(sys.argv[1]))
sys.exit(any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"))' "$here/swarm.ipynb" ||
  bad "swarm.ipynb has outputs (clear them before committing)"
[ "$(figures_sum)" = "$before" ] || bad "figures in $here were rewritten by the tiny sweep"

if [ "$failures" -ne 0 ]; then
  echo "$name: $failures check(s) FAILED" >&2
  exit 1
fi
echo "$name: all checks passed"
