# Shared by every experiments/<name>/test_notebook.sh (source it, then call nb_init):
# the scratch folder, the check counters, running a notebook headless and checking
# what it produced. Each script keeps only its own tiny sweep and its own checks.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
#   nb_init NAME                      # sets `here` (the experiment folder) and `root`
#   nb_averaging_bench "$@"           # [AVERAGING_BENCH [MPIEXEC]]: sets bench, mpiexec
#   nb_run_cell LABEL OUT NP ARGS...  # one cell of a tiny sweep on real ranks
#   nb_run_sweep SUFFIX CELL...       # the experiment's run.sh, twice (caller's `sweep`)
#   nb_check_summary ROWS [PATTERN WHAT]...   # summarize.py on the sweep
#   nb_execute NOTEBOOK VAR=VALUE...  # jupyter nbconvert --execute, environment set
#   nb_check_figures FIG...           # PNGs in $scratch/figures
#   nb_check_executed MIN_IMAGES [CONDITION]   # CONDITION: Python over `text`, `argv`
#   nb_check_tracked NOTEBOOK         # outputs cleared; figures in $here untouched
#   nb_finish
#
# Needs Debian's python3 with h5py, pandas, matplotlib and jupyter nbconvert with a
# python3 kernel (scripts/install-deps.sh installs them).

source "$(dirname "${BASH_SOURCE[0]}")/../tests/scripts/verdicts.sh"  # ok, bad, die, finish

nb_init() {
  TEST_NAME=$1
  here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)  # the script that called nb_init
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  python=/usr/bin/python3
  # The package and the experiment's own modules, for the notebook and the checks
  # (a user installs the package: pip install ./python; docs/analysis.md).
  export PYTHONPATH="$root/python:$here${PYTHONPATH:+:$PYTHONPATH}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
  export PYDEVD_DISABLE_FILE_VALIDATION=1                            # quiets ipykernel's debugger warning
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/avb-$TEST_NAME.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  traces=0
  command -v jupyter >/dev/null || die "jupyter is not on PATH (scripts/install-deps.sh installs jupyter-nbconvert)"
  mkdir -p "$scratch/results" "$scratch/figures"
  figures_before=$(nb_figures_sum)
}

# The tracked figures of the experiment, as one checksum: the test must not touch them.
nb_figures_sum() { { cat "$here"/fig_*.png 2>/dev/null || true; } | md5sum; }

# Executes NOTEBOOK (a file in $here) into $scratch/executed.ipynb with the given
# environment (which points it at the tiny sweep and at $scratch/figures).
nb_execute() {
  local notebook=$1
  shift
  if env "$@" timeout 240 jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=200 \
    "$here/$notebook" --output-dir "$scratch" --output executed.ipynb >"$scratch/nbconvert.log" 2>&1; then
    ok "notebook executed"
  else
    cat "$scratch/nbconvert.log" >&2
    die "jupyter nbconvert --execute failed"
  fi
}

# Each FIG was written to $scratch/figures as a PNG (checked by its signature).
nb_check_figures() {
  local fig f
  for fig in "$@"; do
    f=$scratch/figures/$fig
    if [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
      ok "figure $fig"
    else
      bad "figure $fig missing or not a PNG"
    fi
  done
}

# Every code cell of the executed notebook ran, none raised, at least MIN_IMAGES
# figures are inline, and CONDITION (a Python expression over `text`, all the cells'
# text output, and `argv`, the extra arguments) holds.
nb_check_executed() {
  local min_images=$1 condition=${2:-True} report
  shift $(($# < 2 ? $# : 2))
  if report=$("$python" - "$scratch/executed.ipynb" "$min_images" "$condition" "$@" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
code = [c for c in nb["cells"] if c["cell_type"] == "code"]
errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None]
images = sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
text = "".join("".join(o.get("text", "")) for c in code for o in c.get("outputs", []))
held = eval(sys.argv[3], {"text": text, "argv": sys.argv[4:]})
print(f"{len(code)} code cells, {len(errors)} errors, {len(unrun)} not run, {images} inline images"
      + ("" if held else f"; the condition {sys.argv[3]} does not hold"))
sys.exit(0 if not errors and not unrun and images >= int(sys.argv[2]) and held else 1)
PY
  ); then ok "executed notebook: $report"; else bad "executed notebook: $report"; fi
}

# The tracked NOTEBOOK keeps its outputs cleared, and the tiny sweep left the
# experiment's own figures alone.
nb_check_tracked() {
  "$python" -c 'import json, sys; nb = json.load(open(sys.argv[1]))
sys.exit(any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"))' "$here/$1" ||
    bad "$1 has outputs (clear them before committing)"
  [ "$(nb_figures_sum)" = "$figures_before" ] || bad "figures in $here were written by the tiny sweep"
}

nb_finish() { finish; }

# Each program was built (dies naming the first one missing).
nb_need() {
  local program
  for program in "$@"; do
    [ -x "$program" ] || die "$program is missing (the Open MPI build: cmake --preset default && cmake --build build)"
  done
}

# The arguments of a test that runs averaging_bench itself: [AVERAGING_BENCH [MPIEXEC]],
# by default build/apps/averaging_bench and mpiexec on PATH.
nb_averaging_bench() {
  bench=${1:-$root/build/apps/averaging_bench}
  mpiexec=${2:-mpiexec}
  nb_need "$bench"
}

# One cell of a tiny sweep: averaging_bench on NP real ranks with ARGS, its trace in OUT,
# counted in $traces; a failed run ends the test with its log.
nb_run_cell() {
  local label=$1 out=$2 np=$3
  shift 3
  if ! timeout 60 "$mpiexec" -n "$np" --oversubscribe "$bench" "$@" --out "$out" --quiet \
       >"$scratch/run.log" 2>&1; then
    cat "$scratch/run.log" >&2
    die "averaging_bench failed for $label"
  fi
  [ -s "$out" ] && traces=$((traces + 1)) || bad "no trace $out"
}

# The experiment's run.sh through the caller's `sweep TIMEOUT` (which sets its
# environment and writes to $scratch/results): it must write the trace
# <CELL>SUFFIX.h5 and one wall time for each CELL; run again, it must skip them all.
nb_run_sweep() {
  local suffix=$1 log cell
  shift
  if ! sweep 240 >"$scratch/run.log" 2>&1; then
    cat "$scratch/run.log" >&2
    for log in "$scratch"/results/*.log; do [ -e "$log" ] && { echo "== $log" >&2; tail -5 "$log" >&2; }; done
    die "run.sh failed"
  fi
  for cell in "$@"; do
    [ -s "$scratch/results/$cell$suffix.h5" ] || bad "run.sh wrote no trace $cell$suffix.h5"
  done
  [ "$(tail -n +2 "$scratch/results/walltime.tsv" | wc -l)" -eq $# ] ||
    bad "walltime.tsv has not one line per cell: $(cat "$scratch/results/walltime.tsv")"
  ok "run.sh: $# traces, one wall time each"

  sweep 60 >"$scratch/rerun.log" 2>&1 || bad "run.sh rerun failed"
  [ "$(grep -c '^skip ' "$scratch/rerun.log")" -eq $# ] && ! grep -q '^start ' "$scratch/rerun.log" &&
    ok "rerun: every cell skipped" || bad "rerun did not skip every cell: $(cat "$scratch/rerun.log")"
}

# summarize.py on the sweep: ROWS rows in the CSV, and for each PATTERN (a grep
# pattern) a line of table.md matching it, else "table.md lacks the WHAT row".
nb_check_summary() {
  local want=$1 rows
  shift
  if "$python" "$here/summarize.py" --results "$scratch/results" --csv "$scratch/results.csv" \
       --md "$scratch/table.md" >"$scratch/summary.out" 2>&1; then
    rows=$(tail -n +2 "$scratch/results.csv" | wc -l)
    [ "$rows" -eq "$want" ] && ok "summarize.py: $rows rows" || bad "summarize.py: $rows rows, not $want"
    while [ $# -ge 2 ]; do
      grep -q -- "$1" "$scratch/table.md" || bad "table.md lacks the $2 row"
      shift 2
    done
  else
    cat "$scratch/summary.out" >&2
    bad "summarize.py failed"
  fi
}
