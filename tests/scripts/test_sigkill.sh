#!/usr/bin/env bash
# One rank of a run under Open MPI is killed with SIGKILL mid-run (an OOM kill, a
# node lost): the job must end, not hang. Checked for a non-zero rank and for
# rank 0 (the one writing the trace):
#   - mpirun and every other rank exit within BOUND seconds of the kill
#     (measured and printed); mpirun exits non-zero;
#   - no process of the job is left (each rank has a process group of its own:
#     they are watched by PID);
#   - an earlier trace at the --out path (the run has --overwrite) is byte for
#     byte what it was: the run writes a hidden temporary file and only renames
#     it over the final name when it ends well;
#   - what is left beside it is at most that hidden temporary file of rank 0
#     (".run.h5.tmp.<pid>", killed before it could remove it), never a file under
#     the final name; the test reports it and removes it.
#
#   tests/scripts/test_sigkill.sh BINARY      (Open MPI's mpirun; 4 ranks)
#
# What happens: Open MPI's mpirun sees a rank die by a signal, prints "mpirun
# noticed that process rank R ... exited on signal 9 (Killed)", and kills the
# others: SIGCONT, SIGTERM, odls_base_sigkill_timeout (1 s by default), SIGKILL.
# The survivors' SIGTERM handler only asks for a stop at the end of the round,
# which they cannot reach (the round's collective waits for the dead rank), so
# SIGKILL ends them and rank 0's temporary file stays. The default timeout is kept
# here: the bound measured is the one a user gets.
source "$(dirname "$0")/common.sh"

[ $# -eq 1 ] || die "usage: test_sigkill.sh BINARY"
[ -e "$1" ] || die "no program at $1 (build it first)"
BIN=$(realpath "$1")
APP=$(basename "$BIN")
NP=4
BOUND=30
case "$APP" in
  averaging_bench)
    # Hours: 100 trials of 100,000 rounds of 100,000 values on 4 peers.
    LONG=(--dim 100000 --rounds 100000 --trials 100)
    SHORT=(--dim 2 --rounds 3 --trials 1)
    ;;
  sgd_bench)
    LONG=(--steps 100000000 --eval-every 1000 --trials 100)
    SHORT=(--steps 20)
    ;;
  *) die "BINARY must be averaging_bench or sgd_bench, got '$APP'" ;;
esac

LAUNCHER_PID=""
RANK_PIDS=""
kill_launcher_group() {
  if [ -n "$LAUNCHER_PID" ] && kill -0 -- "-$LAUNCHER_PID" 2>/dev/null; then
    kill -KILL -- "-$LAUNCHER_PID" 2>/dev/null || true
  fi
  local pid
  for pid in $RANK_PIDS; do kill -KILL "$pid" 2>/dev/null || true; done
}
avb_cleanup_hooks+=(kill_launcher_group)

# rank_pids LAUNCHER: "RANK PID" per line for the launcher's children that are ranks.
rank_pids() {
  local pid r
  for pid in $(pgrep -P "$1" || true); do
    r=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p' || true)
    [ -n "$r" ] && echo "$r $pid"
  done
}

# alive PID...: true when one of the PIDs is a running (not zombie) process.
alive() {
  local pid state
  for pid in "$@"; do
    state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)
    [ -n "$state" ] && [ "$state" != Z ] && return 0
  done
  return 1
}

# kill_rank VICTIM: starts the long run, SIGKILLs rank VICTIM after ~2 s of running.
kill_rank() {
  local victim=$1 what="SIGKILL of rank $1"
  local dir=$SCRATCH/rank$victim
  mkdir -p "$dir"
  local out=$dir/run.h5 log=$dir/stdout.txt err=$dir/stderr.txt
  # The earlier trace at the same path.
  timeout -k 10 120 mpirun -n 2 --oversubscribe "$BIN" "${SHORT[@]}" --out "$out" --quiet >"$dir/earlier.log" 2>&1 \
    </dev/null || { cat "$dir/earlier.log" >&2; die "$what: the earlier run failed"; }
  local before
  before=$(sha256sum "$out" | cut -d' ' -f1)

  set -m
  mpirun -n "$NP" --oversubscribe "$BIN" "${LONG[@]}" --out "$out" --overwrite --quiet >"$log" 2>"$err" </dev/null &
  LAUNCHER_PID=$!
  set +m
  # Running once all ranks are up and rank 0 is writing its temporary trace.
  local waited=0 ranks=""
  while :; do
    ranks=$(rank_pids "$LAUNCHER_PID")
    if [ "$(echo "$ranks" | grep -c .)" -eq "$NP" ] && [ -n "$(find "$dir" -name '.run.h5.tmp.*')" ]; then break; fi
    kill -0 "$LAUNCHER_PID" 2>/dev/null || { cat "$err" >&2; die "$what: the run ended before the kill"; }
    waited=$((waited + 1))
    [ "$waited" -le 600 ] || die "$what: the ranks did not start within 60 s"
    sleep 0.1
  done
  sleep 2
  kill -0 "$LAUNCHER_PID" 2>/dev/null || { cat "$err" >&2; die "$what: the run ended before the kill"; }
  local pid
  pid=$(echo "$ranks" | awk -v r="$victim" '$1 == r { print $2 }')
  local all
  all=$(echo "$ranks" | awk '{ print $2 }' | tr '\n' ' ')
  RANK_PIDS=$all
  say "$what: ranks (rank pid): $(echo "$ranks" | sort -n | tr '\n' ',' | sed 's/,$//'); killing $pid"
  local sent
  sent=$(now)
  kill -KILL "$pid"

  # mpirun and everything it started must be gone within BOUND seconds. Open MPI
  # puts each rank in a process group of its own: the ranks are waited for by PID
  # (a zombie, exited but not yet reaped, counts as gone).
  local gone=1
  while kill -0 -- "-$LAUNCHER_PID" 2>/dev/null || alive $all; do
    if awk -v a="$sent" -v b="$(now)" -v l="$BOUND" 'BEGIN { exit !(b - a > l) }'; then gone=0; break; fi
    sleep 0.05
  done
  local took
  took=$(elapsed "$sent")
  if [ "$gone" = 0 ]; then
    bad "$what: processes still running $BOUND s after the kill: $(ps -o pid=,stat=,args= -p "$LAUNCHER_PID,${all// /,}" | head -5)"
    kill_launcher_group
  else
    ok "$what: mpirun and every rank gone $took s after the kill (bound $BOUND s)"
  fi
  local rc=0
  wait "$LAUNCHER_PID" || rc=$?
  LAUNCHER_PID=""
  if [ "$rc" -ne 0 ]; then ok "$what: mpirun exit code $rc (non-zero)"; else bad "$what: mpirun exited 0"; fi
  local left=""
  for pid in $all; do alive "$pid" && left+=" $pid"; done
  [ -z "$left" ] && ok "$what: no rank left running" || bad "$what: ranks still running:$left"
  if grep -q 'exited on signal 9' "$err"; then
    ok "$what: mpirun names the killed rank ($(grep -o 'process rank [0-9]* with PID [0-9]*' "$err" | head -1))"
  else
    bad "$what: mpirun's stderr does not say a rank was killed by signal 9"
    sed 's/^/    /' "$err" >&2
  fi
  if [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$before" ]; then
    ok "$what: the earlier trace at the --out path is byte-identical (SHA-256)"
  else
    bad "$what: the earlier trace at the --out path changed"
  fi
  local others
  others=$(cd "$dir" && ls -A | grep -vxE 'run.h5|stdout.txt|stderr.txt|earlier.log|\.run\.h5\.tmp\.[0-9]+' || true)
  [ -z "$others" ] || bad "$what: unexpected files beside the trace: $others"
  local tmp
  tmp=$(cd "$dir" && ls -A | grep -xE '\.run\.h5\.tmp\.[0-9]+' || true)
  if [ -n "$tmp" ]; then
    local rank0
    rank0=$(echo "$ranks" | awk '$1 == 0 { print $2 }')
    if [ "$tmp" = ".run.h5.tmp.$rank0" ]; then
      ok "$what: left rank 0's hidden temporary file $tmp ($(stat -c %s "$dir/$tmp") bytes; removed by the test)"
    else
      bad "$what: temporary file(s) '$tmp' are not rank 0's (.run.h5.tmp.$rank0)"
    fi
    rm -f "$dir"/.run.h5.tmp.*
  else
    ok "$what: no temporary file left"
  fi
}

say "$APP on $NP ranks under $(mpirun --version 2>&1 | head -1)"
kill_rank 1
kill_rank 0
finish
