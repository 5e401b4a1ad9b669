#!/usr/bin/env bash
# A peer that stops (SIGSTOP: a hung node, a debugger) must not leave the others
# waiting for ever. Under Open MPI, with --round-timeout T, the run ends with:
#   - exit status 3 from mpirun, within about 2T + a few seconds of the stop;
#   - exactly one "<program>: error: --round-timeout: ..." line, which names the
#     stopped rank among the peers waited on;
#   - the trace at --out, marked complete = 0, holding the trials finished before
#     the stop (at least one), and checked by avbench check;
#   - no process of the job left behind.
# Cases: pairwise gossip and swarm (averaging_bench), with rank 2 stopped; and
# rank 0 stopped (the trace cannot be saved: one line from another peer, exit 3).
#
#   tests/scripts/test_stall.sh BINARY      (averaging_bench or sgd_bench; 4 ranks)
source "$(dirname "$0")/common.sh"

[ $# -eq 1 ] || die "usage: test_stall.sh BINARY"
BIN=$(realpath "$1")
APP=$(basename "$BIN")
NP=4
TIMEOUT=3
case "$APP" in
  averaging_bench) LONG=(--dim 10 --rounds 200 --trials 100000) ;;
  sgd_bench) LONG=(--steps 200 --eval-every 10 --trials 100000 --dim 10) ;;
  *) die "BINARY must be averaging_bench or sgd_bench, got '$APP'" ;;
esac

LAUNCHER_PID=""
RANK_PIDS=""
cleanup_job() {
  local pid
  for pid in $RANK_PIDS; do kill -CONT "$pid" 2>/dev/null || true; kill -KILL "$pid" 2>/dev/null || true; done
  if [ -n "$LAUNCHER_PID" ]; then kill -KILL -- "-$LAUNCHER_PID" 2>/dev/null || true; fi
}
avb_cleanup_hooks+=(cleanup_job)

rank_pid() {  # rank_pid LAUNCHER RANK
  local pid r
  for pid in $(pgrep -P "$1" || true); do
    r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p' || true)
    [ "$r" = "$2" ] && { echo "$pid"; return; }
  done
}

# stall NAME VICTIM PROTOCOL-ARGS...: stops rank VICTIM once a trial is done.
stall() {
  local name=$1 victim=$2
  shift 2
  local dir=$SCRATCH/$name
  mkdir -p "$dir"
  setsid mpirun -n "$NP" --oversubscribe "$BIN" "$@" "${LONG[@]}" --round-timeout "$TIMEOUT" \
    --out "$dir/run.h5" >"$dir/out" 2>"$dir/err" </dev/null &
  LAUNCHER_PID=$!
  local t0=$SECONDS pid=""
  # Wait for the first finished trial (a row in the table), then stop the victim.
  while [ $((SECONDS - t0)) -lt 60 ] && ! grep -q '^ *[0-9]' "$dir/out" 2>/dev/null; do sleep 0.2; done
  while [ -z "$pid" ] && [ $((SECONDS - t0)) -lt 60 ]; do pid=$(rank_pid "$LAUNCHER_PID" "$victim"); sleep 0.1; done
  [ -n "$pid" ] || { bad "$name: no rank $victim found"; return; }
  RANK_PIDS="$pid"
  kill -STOP "$pid"
  local stopped=$SECONDS rc=0
  local limit=$((4 * TIMEOUT + 30))
  while kill -0 "$LAUNCHER_PID" 2>/dev/null && [ $((SECONDS - stopped)) -lt "$limit" ]; do sleep 0.2; done
  if kill -0 "$LAUNCHER_PID" 2>/dev/null; then
    bad "$name: still running $limit s after rank $victim stopped"
    cleanup_job
    return
  fi
  wait "$LAUNCHER_PID" || rc=$?
  kill -CONT "$pid" 2>/dev/null || true
  say "$name: ended $((SECONDS - stopped)) s after rank $victim stopped, exit $rc"
  [ "$rc" -eq 3 ] || bad "$name: exit $rc, expected 3"
  local lines
  lines=$(grep -c "^$APP: error: --round-timeout: " "$dir/err" || true)
  [ "$lines" -eq 1 ] || { bad "$name: $lines --round-timeout lines on stderr"; cat "$dir/err" >&2; }
  if [ "$victim" -ne 0 ]; then
    grep "^$APP: error: --round-timeout: " "$dir/err" | grep -q "peer(s) [0-9, ]*\b$victim\b.*did not report" ||
      bad "$name: the line does not name rank $victim as stopped: $(grep error "$dir/err")"
    [ -f "$dir/run.h5" ] || { bad "$name: no trace"; return; }
    "$AVB_PYTHON" - "$dir/run.h5" <<'PY' || bad "$name: trace not as expected"
import sys, h5py
from avbench.trials import trial_count
with h5py.File(sys.argv[1], "r") as f:
    assert int(f.attrs["complete"]) == 0, "complete should be 0"
    assert trial_count(f) >= 1, "no trial kept"
PY
    "$AVB_TOOLS" check "$dir/run.h5" >/dev/null || bad "$name: avbench check refuses the trace"
  fi
  ok "$name"
  LAUNCHER_PID=""
  RANK_PIDS=""
}

if [ "$APP" = averaging_bench ]; then
  stall pairwise 2 --protocol pairwise
  stall swarm 2 --protocol swarm
  stall allreduce-root 0 --protocol allreduce
else
  stall swarm-geometric 2 --protocol swarm --local-steps 4 --local-steps-dist geometric
  stall moshpit 1 --protocol moshpit
fi
finish
