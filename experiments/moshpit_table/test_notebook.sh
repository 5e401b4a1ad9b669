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

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${1:-$root/build/apps/averaging_bench}
mpiexec=${2:-mpiexec}
python=/usr/bin/python3
name=moshpit_table_notebook
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

# 1. The tiny sweep, with run_sweep.sh's per-protocol flags (group size and grid scaled down).
mkdir -p "$scratch/results"
cells=0
for n in 4 8; do for p in 0 0.1; do for protocol in allreduce random-groups moshpit; do
  case $protocol in
    allreduce) extra=(--on-failure abort --collective tree) ;;
    random-groups) extra=(--group-size 2) ;;
    moshpit) extra=(--grid 2x$((n / 2))) ;;
  esac
  out=$scratch/results/N${n}_p${p}_${protocol}.h5
  if ! timeout 60 "$mpiexec" -n "$n" --oversubscribe "$bench" --protocol "$protocol" --fail-rate "$p" --trials 3 \
       --rounds 10 --seed 2021 --target 1e-4 --target 1e-9 --stop-at-target "${extra[@]}" --out "$out" --quiet \
       >"$scratch/run.log" 2>&1; then
    cat "$scratch/run.log" >&2
    die "averaging_bench failed for N${n}_p${p}_${protocol}"
  fi
  [ -s "$out" ] && cells=$((cells + 1)) || bad "no trace $out"
done; done; done
ok "$cells traces"

# 2. The notebook, headless, on the tiny sweep; figures to the scratch folder.
figures_sum() { { cat "$here"/fig_*.png 2>/dev/null || true; } | md5sum; }
before=$(figures_sum)
mkdir -p "$scratch/figures"
if MOSHPIT_RESULTS="$scratch/results" MOSHPIT_FIGURES="$scratch/figures" \
   timeout 240 jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=200 \
     "$here/moshpit_table.ipynb" --output-dir "$scratch" --output executed.ipynb >"$scratch/nbconvert.log" 2>&1; then
  ok "notebook executed"
else
  cat "$scratch/nbconvert.log" >&2
  die "jupyter nbconvert --execute failed"
fi
expected=(fig_variance_rounds.png fig_N8_p0.1_variance_vs_rounds.png fig_N8_p0.1_variance_vs_time.png
          fig_N8_p0.1_variance_vs_bytes.png)
for fig in "${expected[@]}"; do
  f=$scratch/figures/$fig
  if [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
    ok "figure $fig"
  else
    bad "figure $fig missing or not a PNG"
  fi
done
# Every code cell ran, none raised, the figures are in the notebook too, and the table
# has one row per cell.
if report=$("$python" - "$scratch/executed.ipynb" "${#expected[@]}" "$cells" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
code = [c for c in nb["cells"] if c["cell_type"] == "code"]
errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None]
images = sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
text = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", []))
print(f"{len(code)} code cells, {len(errors)} errors, {len(unrun)} not run, {images} inline images")
sys.exit(0 if not errors and not unrun and images >= int(sys.argv[2]) and f"{sys.argv[3]} cells" in text else 1)
PY
); then ok "executed notebook: $report"; else bad "executed notebook: $report"; fi
"$python" -c 'import json, sys; nb = json.load(open(sys.argv[1]))
sys.exit(any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"))' "$here/moshpit_table.ipynb" ||
  bad "moshpit_table.ipynb has outputs (clear them before committing)"
[ "$(figures_sum)" = "$before" ] || bad "figures in $here were written by the tiny sweep"

if [ "$failures" -ne 0 ]; then
  echo "$name: $failures check(s) FAILED" >&2
  exit 1
fi
echo "$name: all checks passed"
