#!/usr/bin/env bash
# Runs every benchmark of bench/ in one go and prints one table of ratios, all
# measured in this run, each next to its goal (issue 8; docs/performance.md).
#
#   scripts/bench.sh [--smoke] [--no-build] [--engine mpi|smpi|both] [--build DIR]
#                    [--build-smpi DIR] [--np "2 4"] [--smpi-np "2 4 8 16"] [--keep DIR]
#
# Builds nothing but the bench targets (cmake --build) of build/ (Open MPI) and
# build-smpi/ (SMPI), each only if the directory exists; a missing engine's rows
# are skipped. Items:
#   1  build/bench/allreduce_bench under mpirun -n 2 and 4: ring (and butterfly)
#      bus bandwidth over MPI_Allreduce's, 8 KiB .. 64 MiB; goal >= 1.0 from 1 MiB
#   2  build-smpi/bench/smpi_allreduce_bound on the default cluster platform, n = 2,
#      4, 8, 16: alpha-beta cost / simulated time; goal >= 0.95 at 16 MiB
#   3  build/bench/kernels_bench: kernels' touched bytes/s over memcpy's (goal >= 0.8),
#      quantizer encode/decode in GB/s of input doubles (goal >= 1)
#   4  build/apps/averaging_bench --engine sequential against bench/numpy_averaging.py
#      on the same cells (1024 peers, fail rate 0.01, 100 trials x 50 rounds) for
#      moshpit, allreduce, random-groups, gossip, sgp: numpy's seconds over the
#      trace's run_seconds (bench/sequential_vs_numpy.py); goal >= 5 for moshpit
#   5  swarm on the sequential engine (bench/swarm_targets.py): 1M peers x 20 rounds
#      within 120 s and 8 GB, logistic SGD 1024 peers x 1000 steps within 10 s (each
#      target over the measurement, goal >= 1), and with build-smpi/ the demo's swarm
#      cell, one SMPI trial over 20 sequential ones (goal >= 100)
#   6  the MLP on Fashion-MNIST (bench/mlp_targets.py): build/bench/mlp_bench's step
#      of batch 32 against Eigen's products of its shapes (products / step, goal
#      >= 1/3), and 1024 peers x 100 local steps on the sequential engine within
#      120 s (goal >= 1)
# --smoke: tiny sizes and short runs (seconds), to check that everything runs and
# prints well-formed ratios (ctest bench_smoke); pass/miss is then meaningless.
# Item 1's "measured" column gives the quartiles of the per-iteration paired ratios
# [q1, q3] (the spread), then each side's bus bandwidth from its median time.
# Exit status: 0 when every program ran and printed every expected ratio (misses
# of a goal do not fail: timings on a shared machine are not assertions), 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build build_smpi=$root/build-smpi engine=both smoke=0 do_build=1 nps="2 4" smpi_nps="2 4 8 16" keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --no-build) do_build=0; shift ;;
    --engine) engine=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --build-smpi) build_smpi=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --smpi-np) smpi_nps=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${keep:-$(mktemp -d /tmp/avb-bench.XXXXXX)}
mkdir -p "$out"
[ -n "$keep" ] || trap 'rm -rf "$out"' EXIT
have_mpi=0 have_smpi=0
case "$engine" in mpi|smpi|both) ;; *) echo "bench.sh: error: --engine: '$engine' is not mpi, smpi or both" >&2; exit 2 ;; esac
[ "$engine" != smpi ] && [ -f "$build/CMakeCache.txt" ] && have_mpi=1
[ "$engine" != mpi ] && [ -f "$build_smpi/CMakeCache.txt" ] && have_smpi=1
if [ $have_mpi = 0 ] && [ $have_smpi = 0 ]; then
  echo "bench.sh: error: neither $build nor $build_smpi is a build directory (scripts/build.sh makes them)" >&2
  exit 1
fi
if [ $do_build = 1 ]; then
  [ $have_mpi = 0 ] || cmake --build "$build" --target allreduce_bench kernels_bench mlp_bench sgd_bench -j2 >&2
  [ $have_smpi = 0 ] || cmake --build "$build_smpi" --target smpi_allreduce_bound -j2 >&2
fi

if [ $smoke = 1 ]; then
  mpi_args=(--min-bytes 8K --max-bytes 64K --budget 1M --max-iterations 20 --benchmark_color=false)
  kernel_args=(--benchmark_color=false --benchmark_filter='/(32768|21845|16384|13107|65536)$' --benchmark_min_time=0.01)
  smpi_sizes=64K,256K
  nps=${nps% *}  # the first only
  smpi_nps="2 4"
else
  mpi_args=(--benchmark_color=false)
  kernel_args=(--benchmark_color=false --benchmark_min_time=0.3)
  smpi_sizes=1M,4M,16M,64M
fi
failed=0
start=$(date +%s)
if [ $have_mpi = 1 ]; then
  for np in $nps; do
    echo "bench.sh: allreduce_bench -n $np" >&2
    mpirun -n "$np" --oversubscribe "$build/bench/allreduce_bench" "${mpi_args[@]}" >"$out/mpi-$np.txt" 2>&1 ||
      { echo "bench.sh: allreduce_bench -n $np failed:" >&2; tail -5 "$out/mpi-$np.txt" >&2; failed=1; }
  done
  echo "bench.sh: kernels_bench" >&2
  "$build/bench/kernels_bench" "${kernel_args[@]}" >"$out/kernels.txt" 2>&1 ||
    { echo "bench.sh: kernels_bench failed:" >&2; tail -5 "$out/kernels.txt" >&2; failed=1; }
  echo "bench.sh: sequential engine vs numpy" >&2
  /usr/bin/python3 "$root/bench/sequential_vs_numpy.py" --build "$build" --out "$out/sequential" \
    $([ $smoke = 0 ] || echo --smoke) >"$out/sequential.txt" 2>&1 ||
    { echo "bench.sh: sequential_vs_numpy.py failed:" >&2; tail -5 "$out/sequential.txt" >&2; failed=1; }
  grep '^# rounds' "$out/sequential.txt" >&2 || true
  echo "bench.sh: swarm's targets" >&2
  /usr/bin/python3 "$root/bench/swarm_targets.py" --build "$build" --out "$out/swarm" \
    $([ $have_smpi = 0 ] || echo --smpi-build "$build_smpi") $([ $smoke = 0 ] || echo --smoke) >"$out/swarm.txt" 2>&1 ||
    { echo "bench.sh: swarm_targets.py failed:" >&2; tail -5 "$out/swarm.txt" >&2; failed=1; }
  echo "bench.sh: the MLP's targets" >&2
  /usr/bin/python3 "$root/bench/mlp_targets.py" --build "$build" --out "$out/mlp" $([ $smoke = 0 ] || echo --smoke) \
    >"$out/mlp.txt" 2>&1 || { echo "bench.sh: mlp_targets.py failed:" >&2; tail -5 "$out/mlp.txt" >&2; failed=1; }
fi
if [ $have_smpi = 1 ]; then
  for np in $smpi_nps; do
    echo "bench.sh: smpi_allreduce_bound -n $np" >&2
    files=$("$here/avbench" platform "$np" "$out/platforms")
    { read -r platform; read -r hostfile; } <<<"$files"
    "$here/smpirun.sh" -n "$np" --platform "$platform" --hostfile "$hostfile" \
      "$build_smpi/bench/smpi_allreduce_bound" --platform "$platform" --sizes "$smpi_sizes" >"$out/smpi-$np.txt" 2>&1 ||
      { echo "bench.sh: smpi_allreduce_bound -n $np failed:" >&2; tail -5 "$out/smpi-$np.txt" >&2; failed=1; }
  done
fi

# One table from every RATIO line; a line whose value is not a positive finite
# number, or a program that printed none, fails the run.
cat "$out"/*.txt | grep -o 'RATIO .*' >"$out/ratios" || true
/usr/bin/python3 - "$out/ratios" "$smoke" "$have_mpi" "$have_smpi" <<'PY' || failed=1
import math, sys
path, smoke, have_mpi, have_smpi = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1"
rows, bad = [], 0
kinds = set()
for line in open(path):
    f = line.split()
    kind, kv = f[1], dict(x.split("=", 1) for x in f[2:])
    kinds.add(kind)
    try:
        value = float(kv["ratio"] if "ratio" in kv else kv["GBps"])
        ok = math.isfinite(value) and value > 0
    except (KeyError, ValueError):
        ok, value = False, float("nan")
    if not ok:
        bad += 1
        print(f"bench.sh: malformed: {line.strip()}", file=sys.stderr)
    b = int(float(kv.get("bytes", 0)))
    size = f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
    if kind == "allreduce":
        what = f"1 {kv['algo']} busbw / MPI_Allreduce"
        goal = 1.0 if kv["algo"] == "ring" and b >= 1 << 20 else None
        rows.append((what, f"n={kv['n']}", size, value, goal,
                     f"[{float(kv['q1']):.2f}, {float(kv['q3']):.2f}] busbw {float(kv['busbw']):.3f} vs {float(kv['mpi_busbw']):.3f} GB/s"))
    elif kind == "smpi":
        goal = 0.95 if b == 16 << 20 else None
        rows.append((f"2 {kv['algo']} alpha-beta / simulated", f"n={kv['n']}", size, value, goal,
                     f"{float(kv['simulated']):.4g} s vs bound {float(kv['bound']):.4g} s"))
    elif kind == "kernel":
        rows.append((f"3 {kv['name']} / memcpy (same bytes touched)", "1 core", size, value, 0.8,
                     f"{float(kv['GBps']):.2f} vs {float(kv['memcpy_GBps']):.2f} GB/s touched"))
    elif kind == "quantizer":
        rows.append((f"3 {kv['name']} GB/s", "1 core", size, value, 1.0, "GB/s of input doubles"))
    elif kind == "sequential":
        rows.append((f"4 {kv['method']} numpy / sequential", f"n={kv['n']}", f"{kv['trials']}x{kv['rounds']}",
                     value, 5.0 if kv["method"] == "moshpit" else None,
                     f"numpy {float(kv['numpy_s']):.4g} s vs sequential {float(kv['ours_s']):.4g} s ({float(kv['traced_s']):.4g} s with a trace)"))
    elif kind == "mlp":
        if kv["name"] == "step":
            rows.append((f"6 mlp step: its GEMMs / the step", "1 core", f"B={kv['batch']}", value, 1 / 3,
                         f"step {float(kv['step_us']):.4g} us vs GEMMs {float(kv['gemm_us']):.4g} us"))
        else:
            rows.append((f"6 mlp {kv['steps']} steps (120 s / measured)", f"n={kv['n']}", "", value, 1.0,
                         f"{float(kv['seconds']):.4g} s"))
    elif kind == "swarm":
        goal = 100.0 if kv["target"] == "demo" else 1.0
        unit = "GB peak" if kv["target"] == "scale-memory" else "s"
        rows.append((f"5 swarm {kv['target']} (target / measured)", f"n={kv['n']}", "", value, goal,
                     f"{float(kv['seconds']):.4g} {unit}" + (f" vs SMPI {float(kv['smpi']):.4g} s" if "smpi" in kv else "")))
expected = ({"allreduce", "kernel", "quantizer", "sequential", "swarm", "mlp"} if have_mpi else set()) | ({"smpi"} if have_smpi else set())
for k in sorted(expected - kinds):
    bad += 1
    print(f"bench.sh: no '{k}' results", file=sys.stderr)
print(f"{'item':46} {'ranks':6} {'size':>8} {'ratio':>8} {'goal':>6}  {'':4}  measured")
def order(r):  # by item, ranks, size; stable: each program's order within
    n = int(r[1][2:]) if r[1].startswith("n=") else 0
    number, _, unit = r[2].partition(" ")
    shift = {"MiB": 20, "KiB": 10}.get(unit)  # item 4's "trials x rounds" keeps its order
    return (r[0][0], n, 0 if shift is None else int(number) << shift)
rows.sort(key=order)
for what, n, size, value, goal, note in rows:
    verdict = "" if goal is None else ("pass" if value >= goal else "miss")
    print(f"{what:46} {n:6} {size:>8} {value:8.3f} {'' if goal is None else format(goal, '.2f'):>6}  {verdict:4}  {note}")
met = sum(1 for r in rows if r[4] is not None and r[3] >= r[4])
total = sum(1 for r in rows if r[4] is not None)
print(f"# {met}/{total} goals met{' (smoke run: sizes too small to mean anything)' if smoke else ''}")
sys.exit(1 if bad else 0)
PY
echo "# bench.sh: $(($(date +%s) - start)) s; raw outputs in $out$([ -n "$keep" ] || echo ' (removed; --keep DIR keeps them)')"
exit $failed
