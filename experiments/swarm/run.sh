#!/usr/bin/env bash
# Swarm (SwarmSGD's asynchronous pairwise averaging) against moshpit, gossip and
# pairwise, on a cluster with lognormal host speeds: one run per cell, each leaving
# one trace $RESULTS/<kind>_<cell>_<platform>.h5 and the program's table and messages
# in the .log beside it. README.md says why the parameters are what they are.
#
#   experiments/swarm/run.sh                       # the whole study (22 cells), under SMPI
#   JOBS=2 experiments/swarm/run.sh                # two cells at a time
#   CELLS="avg_swarm avg_moshpit" RESULTS=/tmp/s experiments/swarm/run.sh
#   AVB_ENGINE=openmpi PEERS=4 DIM=10 SGD_DIM=10 ROUNDS=6 RING_ROUNDS=10 STEPS=20 \
#     TRIALS=2 SGD_TRIALS=1 RESULTS=/tmp/s experiments/swarm/run.sh
#
# Cells (CELLS picks some by name; default: all). kind avg = averaging_bench, one
# vector of DIM N(0, 1) values per peer; kind sgd = sgd_bench on the EPFL quadratic,
# H = 2 local steps per round.
#   avg_swarm avg_swarm-fp16 avg_swarm-uniform8   swarm, blocking, round clock, quantizer
#   avg_swarm-lattice16 avg_swarm-lattice10       lattice, q = 2^16 (eps 2.5e-4) and q = 2^10 (eps 0.016)
#   avg_swarm-poisson avg_swarm-nonblocking       poisson clock; non-blocking mode
#   avg_moshpit avg_pairwise avg_gossip-exp       moshpit on its default grid (8x8 at N = 64)
#   avg_gossip-ring avg_gossip-ring-fp16          gossip on its default ring: RING_ROUNDS rounds
#   sgd_swarm-geo sgd_swarm-geo-fp16              swarm, geometric local steps (mean 2)
#   sgd_swarm-geo-lattice                         lattice q = 2^16, eps 2e-6
#   sgd_swarm-geo-lattice-tight                   lattice q = 2^16, eps 5e-7: too small on purpose
#   sgd_swarm-fixed                               swarm, exactly 2 local steps
#   sgd_moshpit sgd_gossip-ring sgd_gossip-exp
#   sgd_swarm-geo@0 sgd_moshpit@0                 the same on a homogeneous platform (sigma 0)
#
# Settings, as environment variables [default]:
#   PEERS        N                                        [64]
#   DIM          averaging: vector length d               [1000]
#   ROUNDS       averaging: rounds per trial              [40]
#   RING_ROUNDS  averaging: rounds of the ring-gossip cells   [2000]
#   TRIALS       averaging: trials per cell               [10]
#   SGD_DIM      sgd: model dimension d                   [100]
#   STEPS        sgd: SGD steps per trial                 [600]
#   SGD_TRIALS   sgd: trials per cell                     [5]
#   SIGMA        lognormal sigma of the host speeds (median 1 Gflop/s)   [0.5]
#   SPEED_SEED   seed of the host speeds                  [1]
#   SEED         --seed of every cell                     [1]
#   CELLS        cells to run                             [all of the above]
#   JOBS         cells run at the same time               [1]  (an SMPI cell uses one core)
#   RESULTS      output folder                            [experiments/swarm/results]
#   AVB_ENGINE   smpi: build-smpi/ programs under scripts/smpirun.sh --speed-sigma;
#                openmpi: build/ programs under `mpirun -n N --oversubscribe` (no
#                simulated platform: SIGMA and --step-flops do nothing, time is wall time)   [smpi]
#   AVERAGING_BENCH, SGD_BENCH   the programs             [build-smpi/apps/... or build/apps/...]
#   PYTHON       interpreter with h5py                    [/usr/bin/python3]
#
# The platform part of a trace's name is s<sigma> under SMPI (s0 for the '@0' cells)
# and mpi under Open MPI; summarize.py reads it from there (the trace does not record
# the platform). Resumable: a cell whose trace exists with complete=1 is skipped; one
# with complete=0 is run again and replaced. SIGTERM/SIGINT stop the running cells,
# which save what they have (complete=0); the script then exits 143/130. Each cell that
# ends normally appends a line to $RESULTS/walltime.tsv (cell seconds). Exit status:
# 0 when every cell is done, 1 when some failed, 2 for bad settings.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

ALL_CELLS="avg_swarm avg_swarm-fp16 avg_swarm-uniform8 avg_swarm-lattice16 avg_swarm-lattice10
  avg_swarm-poisson avg_swarm-nonblocking avg_moshpit avg_pairwise avg_gossip-exp avg_gossip-ring
  avg_gossip-ring-fp16 sgd_swarm-geo sgd_swarm-geo-fp16 sgd_swarm-geo-lattice sgd_swarm-geo-lattice-tight
  sgd_swarm-fixed sgd_moshpit sgd_gossip-ring sgd_gossip-exp sgd_swarm-geo@0 sgd_moshpit@0"
read -r -a cells <<<"$(echo ${CELLS:-$ALL_CELLS})"
n=${PEERS:-64} dim=${DIM:-1000} rounds=${ROUNDS:-40} ring_rounds=${RING_ROUNDS:-2000} trials=${TRIALS:-10}
sgd_dim=${SGD_DIM:-100} steps=${STEPS:-600} sgd_trials=${SGD_TRIALS:-5}
sigma=${SIGMA:-0.5} speed_seed=${SPEED_SEED:-1} seed=${SEED:-1} jobs=${JOBS:-1}
engine=${AVB_ENGINE:-smpi} python=${PYTHON:-/usr/bin/python3} results=${RESULTS:-$here/results}

die() { echo "run.sh: error: $*" >&2; exit 2; }
is_count() { case "$1" in ''|*[!0-9]*) return 1 ;; *) [ "$1" -ge 1 ] ;; esac; }
for v in PEERS:$n DIM:$dim ROUNDS:$rounds RING_ROUNDS:$ring_rounds TRIALS:$trials SGD_DIM:$sgd_dim \
         STEPS:$steps SGD_TRIALS:$sgd_trials JOBS:$jobs; do
  is_count "${v#*:}" || die "${v%%:*}='${v#*:}' is not a positive integer"
done
[ "$n" -ge 2 ] || die "PEERS='$n': swarm and pairwise need at least 2 peers"
case "$seed$speed_seed" in *[!0-9]*) die "SEED and SPEED_SEED must be non-negative integers" ;; esac
awk -v s="$sigma" 'BEGIN { exit !(s ~ /^[0-9.eE+-]+$/ && s + 0 >= 0) }' || die "SIGMA='$sigma' is not a number >= 0"
[ ${#cells[@]} -gt 0 ] || die "CELLS is empty"
for cell in "${cells[@]}"; do
  case " $(echo $ALL_CELLS) " in *" $cell "*) ;; *) die "CELLS: '$cell' is not one of: $(echo $ALL_CELLS)" ;; esac
done
if [ "$engine" = openmpi ]; then  # no simulated platform: the '@sigma' cells would repeat the others
  if [ -n "${CELLS:-}" ]; then
    for cell in "${cells[@]}"; do case "$cell" in *@*) die "CELLS: '$cell' needs AVB_ENGINE=smpi" ;; esac; done
  else
    kept=(); for cell in "${cells[@]}"; do case "$cell" in *@*) ;; *) kept+=("$cell") ;; esac; done
    cells=("${kept[@]}")
  fi
fi
case "$engine" in
  smpi) avg_bench=${AVERAGING_BENCH:-$root/build-smpi/apps/averaging_bench}
        sgd_bench=${SGD_BENCH:-$root/build-smpi/apps/sgd_bench}
        build_hint="cmake --preset smpi && cmake --build build-smpi --target averaging_bench sgd_bench" ;;
  openmpi) avg_bench=${AVERAGING_BENCH:-$root/build/apps/averaging_bench}
        sgd_bench=${SGD_BENCH:-$root/build/apps/sgd_bench}
        build_hint="cmake --preset default && cmake --build build --target averaging_bench sgd_bench"
        command -v mpirun >/dev/null || die "AVB_ENGINE=openmpi launches with mpirun, which is not on PATH" ;;
  *) die "AVB_ENGINE='$engine' is neither smpi nor openmpi" ;;
esac
need_avg=0 need_sgd=0
for cell in "${cells[@]}"; do case "$cell" in avg_*) need_avg=1 ;; sgd_*) need_sgd=1 ;; esac; done
[ "$need_avg" = 0 ] || [ -x "$avg_bench" ] || die "$avg_bench is missing; build it ($build_hint) or set AVERAGING_BENCH"
[ "$need_sgd" = 0 ] || [ -x "$sgd_bench" ] || die "$sgd_bench is missing; build it ($build_hint) or set SGD_BENCH"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
[ "$need_avg" = 0 ] || avg_bench=$(abs "$avg_bench")
[ "$need_sgd" = 0 ] || sgd_bench=$(abs "$sgd_bench")
mkdir -p "$results"
results=$(cd "$results" && pwd)  # absolute: the runs start from the repo root
cd "$root"                        # so each trace's command_line re-runs from there

# The platform of a cell: its sigma ('@S' suffix, else SIGMA), and the file-name tag.
cell_sigma() { case "$1" in *@*) echo "${1#*@}" ;; *) echo "$sigma" ;; esac; }
cell_file() {
  local base=${1%@*}
  if [ "$engine" = smpi ]; then echo "${base}_s$(cell_sigma "$1")"; else echo "${base}_mpi"; fi
}

# Exit 0 if the trace is complete, 1 if it is not, anything else: cannot tell (stop).
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

cell_command() {  # cell out overwrite -> the command, in array `cmd`
  local cell=$1 out=$2 overwrite=$3 base=${1%@*} bench args=()
  case "$base" in
    avg_*)
      bench=$avg_bench
      local r=$rounds
      case "$base" in
        avg_swarm) args=(--protocol swarm) ;;   # blocking, round clock, complete graph: the defaults
        avg_swarm-fp16) args=(--protocol swarm --quantizer fp16) ;;
        avg_swarm-uniform8) args=(--protocol swarm --quantizer uniform8) ;;
        # q eps / 2 = 8.2 covers the largest coordinate gap between two peers at the
        # start (N(0, 1) values: about 6.5 at N = 64, d = 1000); README.md has the rule.
        avg_swarm-lattice16) args=(--protocol swarm --quantizer lattice --lattice-q 65536 --lattice-eps 2.5e-4) ;;
        avg_swarm-lattice10) args=(--protocol swarm --quantizer lattice --lattice-q 1024 --lattice-eps 0.016) ;;
        avg_swarm-poisson) args=(--protocol swarm --clock poisson) ;;
        avg_swarm-nonblocking) args=(--protocol swarm --mode non-blocking) ;;
        avg_moshpit) args=(--protocol moshpit) ;;             # default grid ceil(sqrt N)^2: 8x8 at 64
        avg_pairwise) args=(--protocol pairwise) ;;           # random matchings on the complete graph
        avg_gossip-exp) args=(--protocol gossip --topology exp) ;;
        avg_gossip-ring) args=(--protocol gossip); r=$ring_rounds ;;  # default topology: ring
        avg_gossip-ring-fp16) args=(--protocol gossip --quantizer fp16); r=$ring_rounds ;;
      esac
      args+=(--dim "$dim" --rounds "$r" --trials "$trials" --seed "$seed"
             --target 1e-2 --target 1e-4 --target 1e-6) ;;
    sgd_*)
      bench=$sgd_bench
      case "$base" in
        sgd_swarm-geo) args=(--protocol swarm --local-steps-dist geometric) ;;
        sgd_swarm-geo-fp16) args=(--protocol swarm --local-steps-dist geometric --quantizer fp16) ;;
        # The models differ by up to ~0.02-0.03 per coordinate between peers (eps 1e-6,
        # q eps / 2 = 0.033, is the smallest that decoded every message in a probe run):
        # 2e-6 leaves a factor 2; 5e-7 (0.016) is too small and shows what failures do.
        sgd_swarm-geo-lattice) args=(--protocol swarm --local-steps-dist geometric --quantizer lattice
                                     --lattice-q 65536 --lattice-eps 2e-6) ;;
        sgd_swarm-geo-lattice-tight) args=(--protocol swarm --local-steps-dist geometric --quantizer lattice
                                           --lattice-q 65536 --lattice-eps 5e-7) ;;
        sgd_swarm-fixed) args=(--protocol swarm) ;;
        sgd_moshpit) args=(--protocol moshpit) ;;
        sgd_gossip-ring) args=(--protocol gossip) ;;
        sgd_gossip-exp) args=(--protocol gossip --topology exp) ;;
      esac
      # The sgd_convex quadratic: noise scaled so that sigma = 0.01 at N = 64, d = 10.
      local noise lr
      noise=$(awk -v n="$n" -v d="$sgd_dim" 'BEGIN { printf "%.3g", 0.01 * sqrt(64 * d / (10 * n)) }')
      lr=$(awk -v n="$n" 'BEGIN { printf "%.10g", 1 / n }')
      args+=(--objective quadratic --preset epfl --zeta 1 --sigma "$noise" --batch 1 --lr "$lr"
             --lr-schedule inverse --lr-decay-steps 6 --local-steps 2 --step-flops 1e7
             --dim "$sgd_dim" --steps "$steps" --eval-every 10 --trials "$sgd_trials" --seed "$seed"
             --target 1e-2 --target 1e-3) ;;
  esac
  if [ "$engine" = smpi ]; then
    cmd=(scripts/smpirun.sh -n "$n" --speed-sigma "$(cell_sigma "$cell")" --speed-seed "$speed_seed" "$bench")
  else
    cmd=(mpirun -n "$n" --oversubscribe "$bench")
  fi
  cmd+=("${args[@]}" --out "$out" --quiet)
  [ "$overwrite" = 1 ] && cmd+=(--overwrite)
  return 0
}

log_walltime() {  # file seconds
  { flock 9
    [ -s "$results/walltime.tsv" ] || printf 'cell\tseconds\n' >&9
    printf '%s\t%s\n' "$1" "$2" >&9
  } 9>>"$results/walltime.tsv"
}

todo=()
for cell in "${cells[@]}"; do
  file=$(cell_file "$cell") out="$results/$(cell_file "$cell").h5"
  if [ -e "$out" ]; then
    state=0; trace_state "$out" || state=$?
    case $state in
      0) echo "skip  $file (trace complete)"; continue ;;
      1) echo "redo  $file (trace stopped early)"; todo+=("$cell 1") ;;
      *) die "cannot read $out (is h5py available to $python? set PYTHON)" ;;
    esac
  else
    todo+=("$cell 0")
  fi
done

# Each cell runs in its own session (setsid), so that a stop request reaches the whole
# cell (smpirun or mpirun and the program under it). Without job control a background
# child leads no process group, so $! is the cell's pid, process group and session.
set +m
declare -A cell_of=() start_of=()
stop=0 failed=()
trap 'stop=143' TERM
trap 'stop=130' INT

finish() {  # pid: the cell has ended; log it
  local pid=$1 rc=0 cell file seconds
  wait "$pid" || rc=$?
  read -r cell _ <<<"${cell_of[$pid]}"
  file=$(cell_file "$cell")
  seconds=$(awk -v a="${start_of[$pid]}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  unset "cell_of[$pid]" "start_of[$pid]"
  if [ "$rc" = 0 ]; then
    log_walltime "$file" "$seconds"
    echo "done  $file in ${seconds} s"
  elif [ "$stop" != 0 ]; then
    echo "stop  $file after ${seconds} s (exit $rc; trace kept with complete=0, redone next time)"
  else
    failed+=("$file"); echo "FAIL  $file (exit $rc; see $results/$file.log)" >&2
  fi
}

sweep_start=$(date +%s.%N)
next=0
while [ "$stop" = 0 ] && { [ "$next" -lt "${#todo[@]}" ] || [ "${#cell_of[@]}" -gt 0 ]; }; do
  while [ "$stop" = 0 ] && [ "$next" -lt "${#todo[@]}" ] && [ "${#cell_of[@]}" -lt "$jobs" ]; do
    read -r cell overwrite <<<"${todo[next]}"
    file=$(cell_file "$cell")
    cell_command "$cell" "$results/$file.h5" "$overwrite"
    echo "start $file: ${cmd[*]}"
    setsid "${cmd[@]}" >"$results/$file.log" 2>&1 </dev/null &
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
