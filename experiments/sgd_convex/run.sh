#!/usr/bin/env bash
# Local SGD on two convex problems with five averaging protocols: one sgd_bench run
# per cell N x objective x p x protocol, each leaving one trace
# $RESULTS/N<N>_<objective>_p<p>_<protocol>.h5 and the program's table and messages
# in the .log beside it. README.md says why the parameters are what they are.
#
#   experiments/sgd_convex/run.sh                          # the whole sweep (40 cells), under SMPI
#   JOBS=2 experiments/sgd_convex/run.sh                   # two cells at a time
#   PEERS=64 OBJECTIVES=logistic RESULTS=/tmp/s experiments/sgd_convex/run.sh
#   AVB_ENGINE=openmpi PEERS=4 PROTOCOLS="allreduce pushsum" STEPS=30 RESULTS=/tmp/s experiments/sgd_convex/run.sh
#
# Settings, as environment variables [default]. STEPS, TRIALS, DIMS and EVAL take
# a list of N:value overrides after an optional bare default ("1000 1024:200": 200 at
# N = 1024, 1000 for any other N).
#   PEERS       peer counts N                            [64 1024]
#   OBJECTIVES  quadratic and/or logistic                [quadratic logistic]
#   RATES       failure rates p (used verbatim in the file names)   [0 0.01]
#   PROTOCOLS   cells, among: allreduce moshpit gossip-ring gossip-exp pushsum, and
#               allreduce-survivors (not in the default sweep)
#                                                        [allreduce moshpit gossip-ring gossip-exp pushsum]
#   STEPS       SGD steps per trial                      [1000 1024:200]
#   TRIALS      trials per cell                          [3 1024:1]
#   DIMS        model dimension d                        [10 1024:4]
#   EVAL        --eval-every                             [10 1024:5]
#   SEED        one seed for every cell (same problem, minibatches, failures)  [1]
#   JOBS        cells run at the same time               [1]  (an SMPI cell uses one core)
#   RESULTS     output folder                            [experiments/sgd_convex/results]
#   AVB_ENGINE  smpi: sgd_bench of build-smpi/ under scripts/smpirun.sh (1 Gb/s links);
#               openmpi: sgd_bench of build/ under `mpirun -n N --oversubscribe`   [smpi]
#   SGD_BENCH   the sgd_bench binary                     [build-smpi/apps/sgd_bench or build/apps/sgd_bench]
#   PYTHON      interpreter with h5py                    [/usr/bin/python3]
#
# The problems (the same lr for every protocol of a cell row, chosen so that all of
# them converge; see README.md):
#   quadratic  --preset epfl --zeta 1 --sigma s --batch 1 --lr 1/N --lr-schedule inverse
#              --lr-decay-steps 6, with s = 0.01 sqrt(64 d / (10 N)): the same relative
#              noise floor at every (N, d) (0.01 at N = 64, d = 10)
#   logistic   synthetic, --label-skew 0.8 --batch 8 --lr 1 --lr-schedule inverse
#              --lr-decay-steps 20 (separation 1, 100 samples per peer: the defaults)
# Every cell: --target 1e-2 --target 1e-4, no --stop-at-target (whole curves).
#
# Cells run largest N first, so that the long ones do not end the sweep alone.
# Resumable: a cell whose trace exists with complete=1 is skipped; one with complete=0
# (stopped early) is run again and replaced. Traces reach their final name only through
# sgd_bench's own atomic --out. SIGTERM/SIGINT stop the running cells, which save what
# they have (complete=0); the sweep then exits 143/130 without starting more cells.
# Each cell that ends normally appends a line to $RESULTS/walltime.tsv
# (cell N objective p protocol steps trials seconds). Exit status: 0 when every cell
# is done, 1 when some failed, 2 for bad settings.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
read -r -a peers <<<"${PEERS:-64 1024}"
read -r -a objectives <<<"${OBJECTIVES:-quadratic logistic}"
read -r -a rates <<<"${RATES:-0 0.01}"
read -r -a protocols <<<"${PROTOCOLS:-allreduce moshpit gossip-ring gossip-exp pushsum}"
steps_spec=${STEPS:-1000 1024:200} trials_spec=${TRIALS:-3 1024:1}
dims_spec=${DIMS:-10 1024:4} eval_spec=${EVAL:-10 1024:5}
seed=${SEED:-1} jobs=${JOBS:-1} engine=${AVB_ENGINE:-smpi} python=${PYTHON:-/usr/bin/python3}
results=${RESULTS:-$here/results}

die() { echo "run.sh: error: $*" >&2; exit 2; }
is_count() { case "$1" in ''|*[!0-9]*) return 1 ;; *) [ "$1" -ge 1 ] ;; esac; }

# per_n SPEC N NAME: the value for N in "default N:value ...".
per_n() {
  local spec=$1 n=$2 name=$3 value="" tok
  for tok in $spec; do case "$tok" in *:*) ;; *) value=$tok ;; esac; done  # the bare default
  for tok in $spec; do case "$tok" in "$n":*) value=${tok#*:} ;; esac; done  # N's own, if any
  [ -n "$value" ] || die "$name='$spec' has no value for N = $n (add a bare default or $n:VALUE)"
  is_count "$value" || die "$name='$spec': '$value' (N = $n) is not a positive integer"
  echo "$value"
}

is_count "$jobs" || die "JOBS='$jobs' is not a positive integer"
[ ${#peers[@]} -gt 0 ] && [ ${#objectives[@]} -gt 0 ] && [ ${#rates[@]} -gt 0 ] && [ ${#protocols[@]} -gt 0 ] ||
  die "PEERS, OBJECTIVES, RATES and PROTOCOLS must not be empty"
for n in "${peers[@]}"; do
  is_count "$n" || die "PEERS: '$n' is not a positive integer"
  for spec in STEPS:"$steps_spec" TRIALS:"$trials_spec" DIMS:"$dims_spec" EVAL:"$eval_spec"; do
    per_n "${spec#*:}" "$n" "${spec%%:*}" >/dev/null
  done
done
for o in "${objectives[@]}"; do
  case "$o" in quadratic|logistic) ;; *) die "OBJECTIVES: '$o' is neither quadratic nor logistic" ;; esac
done
for p in "${rates[@]}"; do
  awk -v p="$p" 'BEGIN { exit !(p ~ /^[0-9.eE+-]+$/ && p + 0 >= 0 && p + 0 <= 1) }' ||
    die "RATES: '$p' is not a number in [0, 1]"
done
for protocol in "${protocols[@]}"; do
  case "$protocol" in
    allreduce|allreduce-survivors|moshpit|gossip-ring|gossip-exp|pushsum) ;;
    *) die "PROTOCOLS: '$protocol' is not one of allreduce allreduce-survivors moshpit gossip-ring gossip-exp pushsum" ;;
  esac
done
case "$engine" in
  smpi) bench=${SGD_BENCH:-$root/build-smpi/apps/sgd_bench}
        [ -x "$bench" ] || die "$bench is missing; build it (cmake --preset smpi && cmake --build build-smpi --target sgd_bench) or set SGD_BENCH" ;;
  openmpi) bench=${SGD_BENCH:-$root/build/apps/sgd_bench}
        [ -x "$bench" ] || die "$bench is missing; build it (cmake --preset default && cmake --build build --target sgd_bench) or set SGD_BENCH"
        command -v mpirun >/dev/null || die "AVB_ENGINE=openmpi launches with mpirun, which is not on PATH" ;;
  *) die "AVB_ENGINE='$engine' is neither smpi nor openmpi" ;;
esac
bench=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")
mkdir -p "$results"
results=$(cd "$results" && pwd)  # absolute: the runs start from the repo root
cd "$root"                        # so each trace's command_line re-runs from there

# Exit 0 if the trace is complete, 1 if it is not; anything else means we cannot tell,
# and then we stop rather than overwrite a trace that may be good.
trace_state() {
  "$python" - "$1" <<'EOF'
import sys
try:
    import h5py
    with h5py.File(sys.argv[1], "r") as f:
        sys.exit(0 if int(f.attrs["complete"]) == 1 else 1)
except SystemExit:
    raise
except BaseException as e:
    print(f"{sys.argv[1]}: {e}", file=sys.stderr)
    sys.exit(3)
EOF
}

cell_name() { echo "N$1_$2_p$3_$4"; }  # N objective p protocol

cell_command() {  # N objective p protocol out overwrite -> the command, in array `cmd`
  local n=$1 objective=$2 p=$3 protocol=$4 out=$5 overwrite=$6 d problem=() proto=()
  d=$(per_n "$dims_spec" "$n" DIMS)
  case "$protocol" in
    allreduce) proto=(--protocol allreduce) ;;       # its default: abort (restarts), collective auto
    allreduce-survivors) proto=(--protocol allreduce --on-failure survivors) ;;
    moshpit) proto=(--protocol moshpit) ;;           # default grid: ceil(sqrt N)^2, 8x8 and 32x32
    gossip-ring) proto=(--protocol gossip --topology ring) ;;   # uniform weights 1/3, rows renormalised
    gossip-exp) proto=(--protocol gossip --topology exp) ;;     # i -> i + 2^j, weights 1/(log2 N + 1)
    pushsum) proto=(--protocol pushsum) ;;           # its default topology: one-peer-exp
  esac
  case "$objective" in
    quadratic)
      local sigma lr
      sigma=$(awk -v n="$n" -v d="$d" 'BEGIN { printf "%.3g", 0.01 * sqrt(64 * d / (10 * n)) }')
      lr=$(awk -v n="$n" 'BEGIN { printf "%.10g", 1 / n }')
      problem=(--objective quadratic --preset epfl --zeta 1 --sigma "$sigma" --batch 1
               --lr "$lr" --lr-schedule inverse --lr-decay-steps 6) ;;
    logistic)
      problem=(--objective logistic --label-skew 0.8 --batch 8
               --lr 1 --lr-schedule inverse --lr-decay-steps 20) ;;
  esac
  if [ "$engine" = smpi ]; then cmd=(scripts/smpirun.sh -n "$n" "$bench")
  else cmd=(mpirun -n "$n" --oversubscribe "$bench"); fi
  cmd+=("${proto[@]}" --fail-rate "$p" "${problem[@]}" --dim "$d"
        --steps "$(per_n "$steps_spec" "$n" STEPS)" --eval-every "$(per_n "$eval_spec" "$n" EVAL)"
        --trials "$(per_n "$trials_spec" "$n" TRIALS)" --seed "$seed"
        --target 1e-2 --target 1e-4 --out "$out" --quiet)
  [ "$overwrite" = 1 ] && cmd+=(--overwrite)
  return 0
}

log_walltime() {  # cell N objective p protocol seconds
  { flock 9
    [ -s "$results/walltime.tsv" ] || printf 'cell\tN\tobjective\tp\tprotocol\tsteps\ttrials\tseconds\n' >&9
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" \
      "$(per_n "$steps_spec" "$2" STEPS)" "$(per_n "$trials_spec" "$2" TRIALS)" "$6" >&9
  } 9>>"$results/walltime.tsv"
}

# The cells still to run, as "N objective p protocol overwrite", largest N first.
todo=()
for n in $(printf '%s\n' "${peers[@]}" | sort -rn); do
  for objective in "${objectives[@]}"; do for p in "${rates[@]}"; do for protocol in "${protocols[@]}"; do
    cell=$(cell_name "$n" "$objective" "$p" "$protocol")
    out="$results/$cell.h5"
    if [ -e "$out" ]; then
      state=0; trace_state "$out" || state=$?
      case $state in
        0) echo "skip  $cell (trace complete)"; continue ;;
        1) echo "redo  $cell (trace stopped early)"; todo+=("$n $objective $p $protocol 1") ;;
        *) die "cannot read $out (is h5py available to $python? set PYTHON)" ;;
      esac
    else
      todo+=("$n $objective $p $protocol 0")
    fi
  done; done; done
done

# Each cell runs in its own session (setsid), so that a stop request reaches the whole
# cell (smpirun or mpirun and the program under it) and we can wait for all of it.
# Without job control a background child leads no process group, so setsid needs no
# fork: $! is the cell's pid, process group and session.
set +m
declare -A cell_of=() start_of=()
stop=0 failed=()
trap 'stop=143' TERM
trap 'stop=130' INT

finish() {  # pid: the cell has ended; log it
  local pid=$1 rc=0 n objective p protocol cell seconds
  wait "$pid" || rc=$?
  read -r n objective p protocol _ <<<"${cell_of[$pid]}"
  cell=$(cell_name "$n" "$objective" "$p" "$protocol")
  seconds=$(awk -v a="${start_of[$pid]}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  unset "cell_of[$pid]" "start_of[$pid]"
  if [ "$rc" = 0 ]; then
    log_walltime "$cell" "$n" "$objective" "$p" "$protocol" "$seconds"
    echo "done  $cell in ${seconds} s"
  elif [ "$stop" != 0 ]; then
    echo "stop  $cell after ${seconds} s (exit $rc; trace kept with complete=0, redone next time)"
  else
    failed+=("$cell"); echo "FAIL  $cell (exit $rc; see $results/$cell.log)" >&2
  fi
}

sweep_start=$(date +%s.%N)
next=0
while [ "$stop" = 0 ] && { [ "$next" -lt "${#todo[@]}" ] || [ "${#cell_of[@]}" -gt 0 ]; }; do
  while [ "$stop" = 0 ] && [ "$next" -lt "${#todo[@]}" ] && [ "${#cell_of[@]}" -lt "$jobs" ]; do
    read -r n objective p protocol overwrite <<<"${todo[next]}"
    cell=$(cell_name "$n" "$objective" "$p" "$protocol")
    cell_command "$n" "$objective" "$p" "$protocol" "$results/$cell.h5" "$overwrite"
    echo "start $cell: ${cmd[*]}"
    setsid "${cmd[@]}" >"$results/$cell.log" 2>&1 </dev/null &
    cell_of[$!]=${todo[next]} start_of[$!]=$(date +%s.%N)
    next=$((next + 1))
  done
  # Poll rather than `wait -n`: a trapped signal interrupts this wait at once.
  sleep 0.2 & wait $! || true
  for pid in "${!cell_of[@]}"; do kill -0 "$pid" 2>/dev/null || finish "$pid"; done
done

if [ "$stop" != 0 ]; then
  echo "run.sh: stopping ${#cell_of[@]} running cell(s)" >&2
  for pid in "${!cell_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${!cell_of[@]}"; do
    while kill -0 -- "-$pid" 2>/dev/null; do sleep 1; done  # the session's last process
    finish "$pid"
  done
  exit "$stop"
fi
total=$(awk -v a="$sweep_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
if [ "${#failed[@]}" -gt 0 ]; then
  echo "run.sh: ${#failed[@]} cell(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "run.sh: ${#todo[@]} cell(s) run in ${total} s; table: $python $here/summarize.py --results $results"
