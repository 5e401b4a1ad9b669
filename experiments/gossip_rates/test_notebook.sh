#!/usr/bin/env bash
# End to end on real Open MPI ranks: gossip (uniform weights, no failures) on 8 peers on
# five graphs (ring, torus, hypercube, exp, one-peer-exp), 3 trials of 12 rounds: one
# trace per graph, named <graph>.h5; then gossip_rates.ipynb executed headless on them;
# checks that every cell ran without error and that every figure was written as a PNG.
#
#   experiments/gossip_rates/test_notebook.sh [AVERAGING_BENCH [MPIEXEC]]
#                                  default: build/apps/averaging_bench, mpiexec on PATH
#
# (run.sh needs graph_info, oracle_cli and the SMPI build; the notebook draws graph_info's
# predictions only where run.sh left them, so the test needs only averaging_bench.)
# Needs Debian's python3 with h5py, pandas, matplotlib and jupyter nbconvert with a
# python3 kernel (scripts/install-deps.sh installs them). Nothing in the repository is
# written: traces, executed notebook and figures go to a scratch folder, removed at the end.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${1:-$root/build/apps/averaging_bench}
mpiexec=${2:-mpiexec}
python=/usr/bin/python3
name=gossip_rates_notebook
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

# 1. The tiny sweep: run.sh's gossip flags, 8 peers.
mkdir -p "$scratch/results"
cells=0
graphs=(ring torus hypercube exp one-peer-exp)
for graph in "${graphs[@]}"; do
  out=$scratch/results/$graph.h5
  if ! timeout 60 "$mpiexec" -n 8 --oversubscribe "$bench" --protocol gossip --topology "$graph" --weights uniform \
       --trials 3 --rounds 12 --seed 1 --out "$out" --quiet >"$scratch/run.log" 2>&1; then
    cat "$scratch/run.log" >&2
    die "averaging_bench failed for $graph"
  fi
  [ -s "$out" ] && cells=$((cells + 1)) || bad "no trace $out"
done
ok "$cells traces"

# 2. The notebook, headless, on the tiny sweep; figures to the scratch folder.
figures_sum() { { cat "$here"/fig_*.png 2>/dev/null || true; } | md5sum; }
before=$(figures_sum)
mkdir -p "$scratch/figures"
if GOSSIP_RATES_RESULTS="$scratch/results" GOSSIP_RATES_FIGURES="$scratch/figures" \
   timeout 240 jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=200 \
     "$here/gossip_rates.ipynb" --output-dir "$scratch" --output executed.ipynb >"$scratch/nbconvert.log" 2>&1; then
  ok "notebook executed"
else
  cat "$scratch/nbconvert.log" >&2
  die "jupyter nbconvert --execute failed"
fi
expected=(fig_ratio_rounds.png fig_variance_vs_rounds.png fig_variance_vs_time.png fig_variance_vs_bytes.png)
for fig in "${expected[@]}"; do
  f=$scratch/figures/$fig
  if [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
    ok "figure $fig"
  else
    bad "figure $fig missing or not a PNG"
  fi
done
# Every code cell ran, none raised, the figures are in the notebook too, and every graph
# was read (one line each: "<graph>: N = 8, 3 trials").
if report=$("$python" - "$scratch/executed.ipynb" "${#expected[@]}" "$cells" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
code = [c for c in nb["cells"] if c["cell_type"] == "code"]
errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None]
images = sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
text = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", []))
print(f"{len(code)} code cells, {len(errors)} errors, {len(unrun)} not run, {images} inline images")
sys.exit(0 if not errors and not unrun and images >= int(sys.argv[2]) and text.count(", 3 trials,") == int(sys.argv[3]) else 1)
PY
); then ok "executed notebook: $report"; else bad "executed notebook: $report"; fi
"$python" -c 'import json, sys; nb = json.load(open(sys.argv[1]))
sys.exit(any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"))' "$here/gossip_rates.ipynb" ||
  bad "gossip_rates.ipynb has outputs (clear them before committing)"
[ "$(figures_sum)" = "$before" ] || bad "figures in $here were written by the tiny sweep"

if [ "$failures" -ne 0 ]; then
  echo "$name: $failures check(s) FAILED" >&2
  exit 1
fi
echo "$name: all checks passed"
