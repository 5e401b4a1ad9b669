#!/usr/bin/env bash
# The averaging sweep of Section 4.1 (Moshpit SGD): one averaging_bench run per cell
# N x p x protocol, each leaving one trace $RESULTS/N<N>_p<p>_<protocol>.h5 and the
# program's table and messages in $RESULTS/N<N>_p<p>_<protocol>.log.
#
#   experiments/moshpit_table/run_sweep.sh                       # the whole sweep, under SMPI
#   JOBS=2 TRIALS=20 PEERS=512 RESULTS=/tmp/t experiments/moshpit_table/run_sweep.sh
#   PROTOCOLS="gossip sgp-paper pushsum" TRIALS=20 experiments/moshpit_table/run_sweep.sh
#
# Settings, as environment variables [default]:
#   PEERS      peer counts N, space-separated        [512 768 900 1024]
#   RATES      failure rates p (used verbatim in the file names)  [0 0.001 0.005 0.01]
#   PROTOCOLS  protocols                             [allreduce random-groups moshpit]
#              the paper's graph columns: PROTOCOLS="gossip sgp-paper pushsum" TRIALS=20
#              (gossip = Gossip, sgp-paper = SGP; pushsum has no published column)
#   TRIALS     trials per cell                       [100]
#   SEED       one seed for every cell               [2021]
#   JOBS       cells run at the same time            [1]  (an SMPI cell uses one core)
#   RESULTS    output folder                         [experiments/moshpit_table/results]
#   AVB_ENGINE smpi: build-smpi/ under scripts/smpirun.sh;
#              openmpi: build/ under `srun --mpi=pmix` (inside a Slurm allocation)  [smpi]
#   PYTHON     interpreter with h5py                 [/usr/bin/python3]
#
# Resumable: a cell whose trace exists with complete=1 is skipped; one with complete=0
# (stopped early) is run again and replaced. Traces reach their final name only through
# the program's own atomic --out. SIGTERM/SIGINT stop the running cells, which save what
# they have (complete=0); the sweep then exits 143/130 without starting more cells.
# Each cell that ends normally appends "cell N p protocol trials seconds" to
# $RESULTS/walltime.tsv. Exit status: 0 when every cell is done, 1 when some failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
read -r -a peers <<<"${PEERS:-512 768 900 1024}"
read -r -a rates <<<"${RATES:-0 0.001 0.005 0.01}"
read -r -a protocols <<<"${PROTOCOLS:-allreduce random-groups moshpit}"
trials=${TRIALS:-100} seed=${SEED:-2021} jobs=${JOBS:-1}
engine=${AVB_ENGINE:-smpi} python=${PYTHON:-/usr/bin/python3}
results=${RESULTS:-$here/results}

die() { echo "run_sweep.sh: error: $*" >&2; exit 2; }
case "$jobs" in ''|*[!0-9]*|0) die "JOBS='$jobs' is not a positive integer" ;; esac
case "$engine" in
  smpi) program=build-smpi/apps/averaging_bench
        [ -x "$root/$program" ] || die "$root/$program is missing; build it: cmake --preset smpi && cmake --build build-smpi" ;;
  openmpi) program=build/apps/averaging_bench
        [ -x "$root/$program" ] || die "$root/$program is missing; build it with the default preset (cmake --preset default && cmake --build build)"
        command -v srun >/dev/null || die "AVB_ENGINE=openmpi launches with srun, which is not on PATH" ;;
  *) die "AVB_ENGINE='$engine' is neither smpi nor openmpi" ;;
esac
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

cell_command() {  # N p protocol out overwrite -> the command, in array `cmd`
  local n=$1 p=$2 protocol=$3 out=$4 overwrite=$5 extra=()
  case "$protocol" in
    # "All-Reduce with restarts", said explicitly; the collective does not change the
    # rounds, and tree is the cheapest to simulate (the group protocols refuse the flag).
    allreduce) extra=(--on-failure abort --collective tree) ;;
    random-groups) extra=(--group-size 32) ;;
    moshpit) extra=(--grid 32x32) ;;           # the paper's grid for every N
    # The graph columns hardly stop early (gossip never reaches 1e-9 in 50 rounds,
    # sgp-paper after ~45), so they cost ~50 full rounds a trial: README.md says how slow.
    # Gossip as the paper simulated it: the ring, self + 2 neighbours at 1/3 each, rows
    # renormalised over the alive entries (our defaults, said explicitly).
    gossip) extra=(--topology ring --weights uniform --alive-weights renormalize) ;;
    sgp-paper) extra=() ;;                     # the paper's "SGP" (i +- 2^k); no options
    pushsum) extra=(--topology one-peer-exp) ;;  # real push-sum; no published column
  esac
  [ "$overwrite" = 1 ] && extra+=(--overwrite)
  if [ "$engine" = smpi ]; then cmd=(scripts/smpirun.sh -n "$n" "$program")
  else cmd=(srun --mpi=pmix --ntasks="$n" "$program"); fi
  cmd+=(--protocol "$protocol" --fail-rate "$p" --trials "$trials" --rounds 50 --seed "$seed"
        --target 1e-4 --target 1e-9 --stop-at-target
        "${extra[@]}" --out "$out" --quiet)
}

log_walltime() {  # cell N p protocol seconds
  # Slurm array tasks append to the same file, possibly over NFS: take a lock.
  { flock 9
    [ -s "$results/walltime.tsv" ] || printf 'cell\tN\tp\tprotocol\ttrials\tseconds\n' >&9
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$trials" "$5" >&9
  } 9>>"$results/walltime.tsv"
}

# The cells still to run, as "N p protocol overwrite".
todo=()
for n in "${peers[@]}"; do for p in "${rates[@]}"; do for protocol in "${protocols[@]}"; do
  out="$results/N${n}_p${p}_${protocol}.h5"
  if [ -e "$out" ]; then
    state=0; trace_state "$out" || state=$?
    case $state in
      0) echo "skip  N${n}_p${p}_${protocol} (trace complete)"; continue ;;
      1) echo "redo  N${n}_p${p}_${protocol} (trace stopped early)"; todo+=("$n $p $protocol 1") ;;
      *) die "cannot read $out (is h5py available to $python? set PYTHON)" ;;
    esac
  else
    todo+=("$n $p $protocol 0")
  fi
done; done; done

# Each cell runs in its own session (setsid) so that we can signal it, and wait for
# it, as a whole: smpirun passes SIGTERM on to the simulator and then exits at once,
# while the simulator is still saving the trace. Without job control (set +m) a
# background child leads no process group, so setsid needs no fork: $! is the pid,
# process group and session of the cell.
set +m
declare -A cell_of=() start_of=()
stop=0 failed=()
trap 'stop=143' TERM
trap 'stop=130' INT

finish() {  # pid: the cell has ended; log it
  local pid=$1 rc=0 n p protocol cell seconds
  wait "$pid" || rc=$?
  read -r n p protocol _ <<<"${cell_of[$pid]}"
  cell="N${n}_p${p}_${protocol}"
  seconds=$(awk -v a="${start_of[$pid]}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  unset "cell_of[$pid]" "start_of[$pid]"
  if [ "$rc" = 0 ]; then
    log_walltime "$cell" "$n" "$p" "$protocol" "$seconds"
    echo "done  $cell in ${seconds} s"
  elif [ "$stop" != 0 ]; then
    echo "stop  $cell after ${seconds} s (exit $rc; trace kept with complete=0, redone next time)"
  else
    failed+=("$cell"); echo "FAIL  $cell (exit $rc; see $results/$cell.log)" >&2
  fi
}

next=0
while [ "$stop" = 0 ] && { [ "$next" -lt "${#todo[@]}" ] || [ "${#cell_of[@]}" -gt 0 ]; }; do
  while [ "$stop" = 0 ] && [ "$next" -lt "${#todo[@]}" ] && [ "${#cell_of[@]}" -lt "$jobs" ]; do
    read -r n p protocol overwrite <<<"${todo[next]}"
    cell_command "$n" "$p" "$protocol" "$results/N${n}_p${p}_${protocol}.h5" "$overwrite"
    echo "start N${n}_p${p}_${protocol}: ${cmd[*]}"
    setsid "${cmd[@]}" >"$results/N${n}_p${p}_${protocol}.log" 2>&1 </dev/null &
    cell_of[$!]=${todo[next]} start_of[$!]=$(date +%s.%N)
    next=$((next + 1))
  done
  # Poll instead of `wait -n`: a trapped signal interrupts this wait at once, no exit
  # can be missed between two waits, and 0.2 s is fine enough for the wall times.
  sleep 0.2 & wait $! || true
  for pid in "${!cell_of[@]}"; do kill -0 "$pid" 2>/dev/null || finish "$pid"; done
done

if [ "$stop" != 0 ]; then
  echo "run_sweep.sh: stopping ${#cell_of[@]} running cell(s)" >&2
  for pid in "${!cell_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${!cell_of[@]}"; do
    while kill -0 -- "-$pid" 2>/dev/null; do sleep 1; done  # the session's last process
    finish "$pid"
  done
  exit "$stop"
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "run_sweep.sh: ${#failed[@]} cell(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "run_sweep.sh: all cells done; table: /usr/bin/python3 $here/make_table.py --results $results"
