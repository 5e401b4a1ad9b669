#!/usr/bin/env bash
# scripts/smpirun.sh: one error is one line on stderr, whatever the number of
# simulated peers, and a deadlock is never exit 0 (docs/simulation.md, "Errors and
# deadlocks"; docs/reliability.md, "SMPI output").
#
#   tests/scripts/test_smpi_output.sh AVERAGING_BENCH MISBEHAVE [SECTION...]
#
# MISBEHAVE is tests/smpi/misbehave.cpp built for SMPI. Sections (all by default):
#   deadlock  misbehave deadlock on 16 peers (every rank blocked in MPI_Recv; the
#             program says nothing): exit 3, exactly one line on stderr, from
#             smpirun.sh, naming the deadlock and the 16 blocked ranks, nothing on
#             stdout; with AVB_SMPI_RAW_LOG the file holds SimGrid's full report
#             (the "Deadlock detected" line and one actor line per rank).
#             misbehave deadlock-reported (its own on-deadlock handler prints one
#             line and exits 3, as the apps' does): exit 3, that line alone.
#   errors    averaging_bench --dim lots on 256 peers: exit 2, exactly one line,
#             the program's "averaging_bench: error: --dim: ...", nothing on stdout
#             (before: 257 lines on stderr and smpirun's "Execution failed with code
#             2." on stdout); a program path with no file: exit 127, one line naming
#             it; a file that is not an SMPI program (a text file; an executable
#             that is not a shared object): exit 126, one line naming it, no
#             backtrace; a program returning 1 on every rank without a word: exit 1,
#             one line saying so; rank 1 calling MPI_Abort without a word (SimGrid
#             then reports a deadlock of the others, and exits 0): exit 1, one line
#             naming MPI_Abort and rank 1; a run that succeeds prints nothing; the
#             program started directly, without smpirun: exit 2, one line saying how
#             to start it (before: "Segmentation fault", exit 139).
source "$(dirname "$0")/common.sh"

need_args 2+ $# AVERAGING_BENCH MISBEHAVE [deadlock] [errors]
program_arg BIN "$1" program
program_arg MISBEHAVE "$2" program
shift 2
SECTIONS=("$@")
[ ${#SECTIONS[@]} -gt 0 ] || SECTIONS=(deadlock errors)
wanted() { [[ " ${SECTIONS[*]} " == *" $1 "* ]]; }

# expect TAG WANT_RC WANT_LINES PATTERN -- COMMAND...: runs COMMAND (smpirun.sh
# with its arguments) and checks its exit code, that stderr has exactly WANT_LINES
# lines (1 unless 0), the first matching the ERE PATTERN, and that stdout is empty.
expect() {
  local tag=$1 want_rc=$2 want_lines=$3 pattern=$4
  shift 5
  local out=$SCRATCH/$tag.out err=$SCRATCH/$tag.err rc=0
  timeout -k 10 120 "$@" >"$out" 2>"$err" </dev/null || rc=$?
  local lines
  lines=$(wc -l <"$err")
  local problems=()
  [ "$rc" -eq "$want_rc" ] || problems+=("exit $rc, want $want_rc")
  [ "$lines" -eq "$want_lines" ] || problems+=("$lines line(s) on stderr, want $want_lines")
  if [ "$want_lines" -gt 0 ] && ! head -1 "$err" | grep -Eq -- "$pattern"; then
    problems+=("stderr does not match '$pattern'")
  fi
  [ ! -s "$out" ] || problems+=("$(wc -l <"$out") line(s) on stdout, want none")
  if [ ${#problems[@]} -eq 0 ]; then
    ok "$tag: exit $rc, $lines line(s)$( [ "$lines" -eq 0 ] || printf ': %s' "$(head -1 "$err")")"
  else
    bad "$tag: $(IFS=';'; echo "${problems[*]}")"
    { echo "    --- stdout"; head -20 "$out" | sed 's/^/    /'; echo "    --- stderr"; head -20 "$err" | sed 's/^/    /'; } >&2
  fi
}

if wanted deadlock; then
  raw=$SCRATCH/deadlock-raw.log
  expect deadlock 3 1 '^smpirun\.sh: error: SimGrid detected a deadlock: 16 ranks blocked; 16 on one message \(.*MPI_Recv.*\): ranks 0-15$' -- \
    env AVB_SMPI_RAW_LOG="$raw" "$AVB_SMPIRUN" -n 16 "$MISBEHAVE" deadlock
  actors=$(cat "$raw" 2>/dev/null | grep -c '\[ker_engine/INFO\] Actor [0-9]* ([0-9]*@peer-[0-9]*): waiting for communication' || true)
  if grep -q 'Deadlock detected' "$raw" && [ "$actors" -eq 16 ]; then
    ok "deadlock: AVB_SMPI_RAW_LOG keeps SimGrid's report (the deadlock line, $actors actor lines)"
  else
    bad "deadlock: AVB_SMPI_RAW_LOG file has $actors actor line(s), want 16, and the 'Deadlock detected' line"
  fi
  expect deadlock-reported 3 1 '^misbehave: error: deadlock: ' -- "$AVB_SMPIRUN" -n 16 "$MISBEHAVE" deadlock-reported
fi

if wanted errors; then
  expect bad-flag-256 2 1 '^averaging_bench: error: --dim: ' -- "$AVB_SMPIRUN" -n 256 "$BIN" --dim lots
  expect missing 127 1 "^smpirun\.sh: error: $SCRATCH/no-such-program: no such file" -- \
    "$AVB_SMPIRUN" -n 4 "$SCRATCH/no-such-program" --dim 4
  echo "not a program" >"$SCRATCH/notes.txt"
  expect text-file 126 1 "^smpirun\.sh: error: cannot load $SCRATCH/notes\.txt: " -- "$AVB_SMPIRUN" -n 4 "$SCRATCH/notes.txt"
  # An executable (position-independent, as Debian builds them) is not a shared
  # object: the Open MPI build of the app, or any program, cannot be loaded.
  expect executable 126 1 "^smpirun\.sh: error: cannot load $(type -P true): .*executable" -- \
    "$AVB_SMPIRUN" -n 4 "$(type -P true)"
  # The SMPI build's program started without smpirun: one line saying how to start it, not a segfault.
  expect run-directly 2 1 "^error: this program is avbench's SMPI build, .*scripts/smpirun\.sh -n N" -- "$BIN" --help
  expect silent-exit 1 1 '^smpirun\.sh: error: misbehave exited with status 1 on 4 of 4 ranks$' -- \
    "$AVB_SMPIRUN" -n 4 "$MISBEHAVE" exit 1
  expect abort 1 1 '^smpirun\.sh: error: misbehave called MPI_Abort on rank 1$' -- "$AVB_SMPIRUN" -n 4 "$MISBEHAVE" abort
  expect success 0 0 '' -- "$AVB_SMPIRUN" -n 4 "$MISBEHAVE" exit 0
fi
finish
