#!/usr/bin/env bash
# A run stopped by SIGTERM (Slurm's time limit, scancel) or SIGINT (Ctrl-C) keeps
# what it has measured: the launcher exits non-zero, and the trace exists under
# its final name, is readable, valid, marked complete = 0, holds at least one row
# after the initial state, and no temporary file is left beside it.
#
#   tests/scripts/test_sigterm.sh BINARY ENGINE [once]
#     ENGINE: mpi (mpirun) or smpi (smpirun.sh)
#     once: only SIGTERM to the launcher (the sanitizer build's slice: SIGINT and the
#     singleton go through the same handler and exit path, checked in build/)
#
# BINARY is averaging_bench (rounds of averaging) or sgd_bench (SGD steps, a row
# every --eval-every steps); the test tells them apart by the file name.
#
# The signal goes to the launcher, as Slurm and a terminal would send it:
#   - Open MPI 4.1's mpirun sends the ranks SIGCONT, waits odls_base_sigkill_timeout
#     (1 s by default), sends SIGTERM, waits as long again, then SIGKILLs them
#     (orte/mca/odls/base/odls_base_default_fns.c). A rank therefore has 1 s to
#     finish its round (or its --eval-every steps) and save; here that takes under
#     a millisecond. A run whose rounds take longer loses its trace (only the
#     temporary file is left) unless OMPI_MCA_odls_base_sigkill_timeout is raised.
#     mpirun then exits with 1, not the ranks' 143. So that the app's own exit
#     code 128+signal is checked as well, the mpi engine also stops a singleton:
#     the program started without mpirun (1 peer), which gets the signal itself.
#   - SimGrid's smpirun sends SIGTERM to the simulation process (whatever signal it
#     got; every rank returns 143) and exits at once with 128+signal, while the
#     simulation is still saving. The test therefore waits for the launcher's whole
#     process group to end, not just the launcher, before looking at the file.
source "$(dirname "$0")/common.sh"

[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = once ]; } || die "usage: test_sigterm.sh BINARY mpi|smpi [once]"
ONCE=${3:-}
[ -e "$1" ] || die "no program at $1 (build it first)"
BIN=$(realpath "$1")
ENGINE=$2
set_launcher "$ENGINE" 2

APP=$(basename "$BIN")
case "$APP" in
  averaging_bench)
    # 100 trials of 100,000 rounds of 20,000 values on 2 peers: hours, far longer
    # than the test, which stops it after a few seconds.
    RUN_ARGS=(--dim 20000 --rounds 100000 --trials 100 --fail-rate 0.01)
    PROGRESS='trial 1/100, round [1-9]'  # "[3s]   0.0% trial 1/100, round 812/100000, ..."
    EXPECT=(--kind averaging --complete 0 --rounds 100000)
    ROW=round
    ;;
  sgd_bench)
    # 100 trials of 10^8 SGD steps, measured every 1,000 steps: hours again.
    RUN_ARGS=(--steps 100000000 --eval-every 1000 --trials 100 --fail-rate 0.01)
    PROGRESS='trial 1/100, step [1-9]'  # "[3s]   0.0% trial 1/100, step 1025000/100000000, ..."
    EXPECT=(--kind sgd --complete 0 --steps 100000000 --local-steps 1 --eval-every 1000)
    ROW=step
    ;;
  *) die "BINARY must be averaging_bench or sgd_bench, got '$APP'" ;;
esac

# The launcher runs in its own process group (job control, set -m), so that the
# test can wait for every process it started and, if something hangs, kill them
# all by that group's id. Job control also keeps SIGINT deliverable: without it,
# bash starts background commands with SIGINT ignored, and smpirun (a shell
# script) could then not trap it. There is no `timeout` around the launcher, so
# that the signal reaches the launcher alone (timeout would relay it to the whole
# group); the waits below are bounded instead, and kill the group when exceeded.
LAUNCHER_PID=""
kill_launcher_group() {
  if [ -n "$LAUNCHER_PID" ] && kill -0 -- "-$LAUNCHER_PID" 2>/dev/null; then
    kill -KILL -- "-$LAUNCHER_PID" 2>/dev/null || true
  fi
}
avb_cleanup_hooks+=(kill_launcher_group)

# wait_gone PID SECONDS: waits until no process of group PID is left; 1 on timeout.
wait_gone() {
  local pgid=$1 limit=$2 start
  start=$(now)
  while kill -0 -- "-$pgid" 2>/dev/null; do
    if awk -v a="$start" -v b="$(now)" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then return 1; fi
    sleep 0.1
  done
}

# stop_run SIGNAL [singleton]: starts a long run, sends SIGNAL to the launcher (or,
# for a singleton, to the program) once it is measuring, and checks what it leaves.
stop_run() {
  local sig=$1 mode=${2:-launcher}
  local what=SIG$sig peers=2 command=("${LAUNCH[@]}" "$BIN")
  if [ "$mode" = singleton ]; then
    what="SIG$sig (singleton)" peers=1 command=("$BIN")
  fi
  local dir=$SCRATCH/$sig-$mode
  mkdir -p "$dir"
  local out=$dir/run.h5 log=$dir/stdout.txt err=$dir/stderr.txt
  set -m
  # smpirun.sh drops SimGrid's per-rank "SMPI process did not return 0" lines from
  # stderr; its raw copy keeps them for the check below.
  AVB_SMPI_RAW_LOG=$dir/simgrid.log "${command[@]}" "${RUN_ARGS[@]}" --out "$out" >"$log" 2>"$err" </dev/null &
  LAUNCHER_PID=$!
  set +m
  local pgid
  pgid=$(awk '{ print $5 }' "/proc/$LAUNCHER_PID/stat" 2>/dev/null || echo "?")
  [ "$pgid" = "$LAUNCHER_PID" ] || die "the launcher $LAUNCHER_PID is not leading its process group ($pgid)"
  local started
  started=$(now)

  # It is measuring once a progress line is printed; the app prints the first
  # after a few seconds of running.
  local waited=0
  until grep -q "^\[[0-9]*s\] *[0-9.]*% $PROGRESS" "$err"; do
    if ! kill -0 "$LAUNCHER_PID" 2>/dev/null; then
      echo "--- stdout" >&2; cat "$log" >&2; echo "--- stderr" >&2; cat "$err" >&2
      die "$what: the run ended before it could be stopped"
    fi
    waited=$((waited + 1))
    [ "$waited" -le 600 ] || die "$what: no progress line after 60 s (killed the run)"
    sleep 0.1
  done
  say "$what: run going after $(elapsed "$started") s: $(grep '^\[' "$err" | tail -1)"

  # To the launcher alone, as its PID (mpirun, the smpirun shell script, or the
  # singleton program).
  local sent
  sent=$(now)
  kill -s "$sig" "$LAUNCHER_PID"
  # The launcher must go within 60 s, and so must everything it started.
  wait_gone "$LAUNCHER_PID" 60 || die "$what: processes still running 60 s after the signal (killed them)"
  local rc=0
  wait "$LAUNCHER_PID" || rc=$?
  local launcher_s
  launcher_s=$(elapsed "$sent")
  say "$what: exit code $rc, every process gone $launcher_s s after the signal"
  LAUNCHER_PID=""

  # The program exits with 128+signal; smpirun passes that on, mpirun exits 1.
  local code=$((128 + $(kill -l "$sig")))
  if [ "$mode" = singleton ] || [ "$ENGINE" = smpi ]; then
    if [ "$rc" -eq "$code" ]; then
      ok "$what: exit code $code (128 + SIG$sig)"
    else
      bad "$what: exit code $rc, expected $code (128 + SIG$sig)"
    fi
  elif [ "$rc" -eq 0 ]; then
    bad "$what: the launcher exited 0; a stopped run must exit non-zero"
  else
    ok "$what: non-zero exit ($rc)"
  fi
  if [ "$ENGINE" = smpi ] && [ "$mode" = launcher ]; then
    # Every simulated rank got SIGTERM from smpirun and returned 143 (SimGrid's
    # report, kept by AVB_SMPI_RAW_LOG), and stderr holds none of those lines.
    local returns
    returns=$(grep -o 'Return value : [0-9]*' "$dir/simgrid.log" | awk '{ print $4 }' | sort | uniq -c | awk '{ printf "%s%sx%s", s, $1, $2; s = " " }')
    if [ "$returns" = "2x143" ] || [ "$returns" = "2x$code" ]; then
      ok "$what: both simulated ranks returned 128+signal ($returns)"
    else
      bad "$what: the simulated ranks returned '$returns', expected 2x143 (smpirun relays SIGTERM)"
    fi
    if grep -q 'did not return 0' "$err"; then
      bad "$what: SimGrid's per-rank return lines reached stderr"
    fi
  fi
  if grep -q '^# run cut short by a stop request' "$log"; then
    ok "$what: rank 0 reported the stop on stdout"
  else
    bad "$what: no '# run cut short by a stop request' line on stdout"
  fi

  local leftover
  leftover=$(find "$dir" -name '.*.tmp.*')
  [ -z "$leftover" ] || bad "$what: temporary file left behind: $leftover"
  if [ ! -f "$out" ]; then
    bad "$what: no trace at $out"
    echo "--- stdout" >&2; cat "$log" >&2; echo "--- stderr" >&2; grep -v '^\[[0-9]*s\]' "$err" >&2 || true
    return
  fi
  check_trace "$out" --peers "$peers" "${EXPECT[@]}"
  local rows
  if rows=$(timeout 60 "$AVB_PYTHON" -c '
import sys, h5py
from avbench.trials import all_trial_columns, trial_info
column = sys.argv[2]
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["complete"] == 0, "complete is %r" % f.attrs["complete"]
    trials = all_trial_columns(f, [column])
    rows = sum(len(t[column]) - 1 for t in trials)
    last = trials[-1]
    assert rows >= 1, "no row after the initial state"
    assert trial_info(f, len(trials) - 1)["complete"] == 0, "the last trial is not marked cut short"
    print(f"{len(trials)} trial(s), {rows} row(s) after the initial state, last {column} {last[column][-1]}")
' "$out" "$ROW" 2>&1); then
    ok "$what: h5py reads it: complete = 0, $rows, last trial cut short"
  else
    bad "$what: trace content: $rows"
  fi
}

# wait_busy TEXT SECONDS: returns once a process of the run (a program or
# SimGrid's smpimain whose command line holds TEXT, the run's --out path; not a
# launcher) has used SECONDS of CPU time; 1 if none has after 60 s.
wait_busy() {
  local text=$1 want=$2 tick waited=0 pid comm
  tick=$(getconf CLK_TCK)
  while [ "$waited" -lt 600 ]; do
    for pid in $(pgrep -f -- "$text"); do
      comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
      case "$comm" in "$APP" | smpimain) ;; *) continue ;; esac
      # utime and stime: fields 14 and 15 of stat, 12 and 13 after "(comm) ".
      awk -v t="$tick" -v w="$want" '{ sub(/^.*\) /, ""); exit !(($12 + $13) / t >= w) }' "/proc/$pid/stat" \
        2>/dev/null && return 0
    done
    sleep 0.1
    waited=$((waited + 1))
  done
  return 1
}

# stop_early WHAT DIR LINE EXTRA WANT_RC COMMAND...: a stop before the run. Starts
# COMMAND with --out DIR/run.h5 in a group of its own, sends SIGTERM once one of
# its processes has used a second of CPU, and checks what it leaves: the one LINE
# on stderr within 1 + EXTRA s (more under load, timed as it appears), exit
# WANT_RC, nothing on stdout and no file in DIR but the logs (and a FIFO).
stop_early() {
  local what=$1 dir=$2 line=$3 extra=$4 want_rc=$5
  shift 5
  local out=$dir/run.h5 log=$dir/stdout.txt err=$dir/stderr.txt
  set -m
  "$@" --out "$out" >"$log" 2>"$err" </dev/null &
  LAUNCHER_PID=$!
  set +m
  # Parsing the flags takes milliseconds of CPU, what is stopped seconds.
  wait_busy "$out" 1 || die "$what: no process of the run used a second of CPU within 60 s (killed the run)"
  local sent rc=0 said polls=0
  sent=$(now)
  kill -TERM "$LAUNCHER_PID"
  while kill -0 "$LAUNCHER_PID" 2>/dev/null && [ "$polls" -lt 3000 ]; do  # 60 s
    grep -qxF "$line" "$err" && break
    sleep 0.02
    polls=$((polls + 1))
  done
  said=$(elapsed "$sent")
  wait_gone "$LAUNCHER_PID" 60 || die "$what: processes still running 60 s after the signal (killed them)"
  wait "$LAUNCHER_PID" || rc=$?
  LAUNCHER_PID=""
  local bound
  bound=$(awk -v c="$(nproc)" -v x="$extra" '{ printf "%.1f", 1 + x + $1 / c }' /proc/loadavg)
  if [ "$(cat "$err")" = "$line" ] && awk -v t="$said" -v b="$bound" 'BEGIN { exit !(t < b) }'; then
    ok "$what: one line after $said s (bound $bound s at this load): $line"
  else
    bad_with_report "$what: want the one line '$line' within $bound s, got after $said s:" "$(cat "$err")"
  fi
  if [ "$rc" -eq "$want_rc" ]; then ok "$what: exit code $rc"; else bad "$what: exit code $rc, expected $want_rc"; fi
  if [ -s "$log" ] || [ -n "$(find "$dir" -mindepth 1 ! -name stdout.txt ! -name stderr.txt ! -type p)" ]; then
    bad_with_report "$what: want nothing written (no header, no trace):" "$(cat "$log"; ls -A "$dir")"
  else
    ok "$what: nothing on stdout, nothing written"
  fi
}

# stop_setup [singleton]: sgd_bench stopped while it builds its problem (2 x 100,000
# synthetic samples of 200 features and the optimum of their pooled set: seconds
# on every engine; the ranks poll the signal and leave together).
stop_setup() {
  local mode=${1:-launcher} what="SIGTERM in the set-up" command=("${LAUNCH[@]}" "$BIN")
  if [ "$mode" = singleton ]; then
    what="SIGTERM in the set-up (singleton)" command=("$BIN")
  fi
  local dir=$SCRATCH/setup-$mode
  mkdir -p "$dir"
  # A second (more under load); mpirun relays the ranks' output only once it has
  # waited odls_base_sigkill_timeout (1 s) twice (see the top of this file), and
  # exits with its own code for a stopped job.
  local extra=0 want_rc=143
  if [ "$mode" = launcher ] && [ "$ENGINE" = mpi ]; then
    extra=2 want_rc=1
  fi
  stop_early "$what" "$dir" "sgd_bench: error: stopped by signal 15 while building the problem; nothing was written" \
    "$extra" "$want_rc" "${command[@]}" --objective logistic --samples-per-peer 100000 --dim 200 --steps 10
}

# The FIFO's writer (stop_check), blocked in open() if the program never read it.
WRITER_PID=""
stop_writer() {
  [ -n "$WRITER_PID" ] || return 0
  kill "$WRITER_PID" 2>/dev/null || true
  wait "$WRITER_PID" 2>/dev/null || true
  WRITER_PID=""
}
avb_cleanup_hooks+=(stop_writer)

# stop_check: sgd_bench (a singleton) stopped while it checks its options, here
# while its estimate reads a --data file through that never ends (a FIFO that
# `yes` fills).
stop_check() {
  local dir=$SCRATCH/check
  mkdir -p "$dir"
  mkfifo "$dir/endless.svm"
  yes "1 1:0.5 2:0.25 3:0.125" >"$dir/endless.svm" 2>/dev/null &
  WRITER_PID=$!
  stop_early "SIGTERM while checking the options" "$dir" \
    "sgd_bench: error: stopped by signal 15 while checking the options; nothing was written" 0 143 \
    "$BIN" --objective logistic --data "$dir/endless.svm" --steps 10
  stop_writer
}

say "engine $ENGINE: ${LAUNCH[*]} $BIN"
stop_run TERM
if [ "$ONCE" = once ]; then
  say "once: SIGINT and the singleton stops left to the full run (same handler, same exit path)"
  finish
  exit 0
fi
stop_run INT
if [ "$ENGINE" = mpi ]; then
  stop_run TERM singleton
  stop_run INT singleton
fi
if [ "$APP" = sgd_bench ]; then
  stop_setup
  if [ "$ENGINE" = mpi ]; then
    stop_setup singleton
    stop_check
  fi
fi
finish
