# Shared by the test_*.sh scripts in this folder; sourced, not run.
#
# Gives each script: strict mode, the repository root, a scratch folder removed on
# exit, pass/fail helpers, and the launcher for an engine. Every test command runs
# under `timeout`, so a hung MPI job ends the test instead of the CI run.
set -euo pipefail

AVB_TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AVB_REPO=$(cd "$AVB_TESTS_DIR/../.." && pwd)
AVB_PYTHON=/usr/bin/python3                 # Debian's, which sees python3-h5py
AVB_TOOLS=$AVB_REPO/scripts/avbench        # the avbench command from the checkout (check, sweep, platform, ...)
export PYTHONPATH="$AVB_REPO/python:$AVB_TESTS_DIR${PYTHONPATH:+:$PYTHONPATH}"  # the tests' Python snippets import avbench and bitwise
AVB_SMPIRUN=$AVB_REPO/scripts/smpirun.sh
TEST_NAME=$(basename "$0" .sh)

# Open MPI refuses to run as root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/avb-$TEST_NAME.XXXXXX")
# Everything the script starts makes its temporary files in its own scratch folder:
# Open MPI's session folder included, so that two tests' mpiruns never race on it.
export TMPDIR=$SCRATCH
# Scripts that start background jobs add their own clean-up to this list.
avb_cleanup_hooks=()
avb_cleanup() {
  local hook
  for hook in "${avb_cleanup_hooks[@]}"; do "$hook" || true; done
  rm -rf "$SCRATCH"
}
trap avb_cleanup EXIT

source "$AVB_TESTS_DIR/verdicts.sh"

# Dies with the script's usage line unless it got COUNT arguments (N+: at least N).
#   need_args COUNT "$#" ARGUMENTS...   (ARGUMENTS: the usage line after the script's name)
need_args() {
  local count=$1 got=$2
  shift 2
  if [[ $count == *+ ]]; then
    [ "$got" -ge "${count%+}" ] && return
  else
    [ "$got" -eq "$count" ] && return
  fi
  die "usage: $TEST_NAME.sh $*"
}

# Sets VAR to the absolute path of the program PATH, a script argument; dies when
# there is no executable file there, naming WHAT it should be and how to build it.
#   program_arg VAR PATH WHAT [HINT]
program_arg() {
  local var=$1 path=$2 what=$3 hint=${4:-build it first}
  [ -x "$path" ] || die "no $what at $path ($hint)"
  printf -v "$var" '%s' "$(realpath "$path")"
}

# Sets the array LAUNCH to the command that runs an avbench program on NP peers.
#   mpi  -> mpirun -n NP --oversubscribe        (Open MPI, real processes)
#   smpi -> scripts/smpirun.sh -n NP            (SimGrid, simulated peers)
set_launcher() {
  local engine=$1 np=$2
  case "$engine" in
    mpi) LAUNCH=(mpirun -n "$np" --oversubscribe) ;;
    smpi) LAUNCH=("$AVB_SMPIRUN" -n "$np") ;;
    *) die "engine must be mpi or smpi, got '$engine'" ;;
  esac
}

# Sets the array ON to the command that runs PROGRAM on NP peers under ENGINE; the
# program's arguments follow it. The platform flags (--platform, --speed-sigma, ...)
# are the program's on either engine: smpirun.sh builds its platform from them.
#   sequential -> PROGRAM --engine sequential --peers NP   (one process)
#   smpi       -> scripts/smpirun.sh -n NP PROGRAM          (SimGrid, simulated peers)
#   on_engine ENGINE NP PROGRAM
on_engine() {
  local engine=$1 np=$2 program=$3
  case "$engine" in
    sequential) ON=("$program" --engine sequential --peers "$np") ;;
    smpi) ON=("$AVB_SMPIRUN" -n "$np" "$program") ;;
    *) die "engine must be sequential or smpi, got '$engine'" ;;
  esac
}

# Runs PROGRAM ARGS on PEERS peers under ENGINE (on_engine), writing the trace
# $SCRATCH/NAME.h5 and its output NAME.out and NAME.err; ends the test when the run
# fails, else says how long it took and checks the trace.
#   run_on ENGINE NAME PEERS PROGRAM ARGS...
run_on() {
  local engine=$1 name=$2 peers=$3 program=$4 rc=0 started
  shift 4
  on_engine "$engine" "$peers" "$program"
  started=$(now)
  timeout -k 10 600 "${ON[@]}" "$@" --out "$SCRATCH/$name.h5" --quiet \
    >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -20 "$SCRATCH/$name.err" >&2
    die "$name: exit code $rc"
  fi
  say "$name: $(elapsed "$started") s"
  check_trace "$SCRATCH/$name.h5"
}

# Sets the array PARTS to a script's PART arguments, or to every one of ALLOWED when
# none is given, dying on a part not in ALLOWED; `wanted PART` then says whether PART
# runs.
#   select_parts "ALLOWED..." [PART...]
select_parts() {
  local allowed=$1 part
  shift
  PARTS=("$@")
  [ ${#PARTS[@]} -gt 0 ] || read -r -a PARTS <<<"$allowed"
  for part in "${PARTS[@]}"; do
    [[ " $allowed " == *" $part "* ]] || die "a part is one of: $allowed; not '$part'"
  done
}
wanted() { [[ " ${PARTS[*]} " == *" $1 "* ]]; }

# Sets the array CASES to HARNESS's cases in the protocols' case tables
# (tests/protocols/NAME/cases.txt, read by cases.py), one "PROTOCOL FLAGS..." string
# each, for every protocol in the catalog of the program that COMMAND runs (COMMAND
# --list-protocols). Dies naming what is missing when a catalog protocol has no
# table or no section for HARNESS: a new protocol is tested everywhere or nowhere.
#   protocol_cases HARNESS COMMAND...
protocol_cases() {
  local harness=$1 listing
  shift
  timeout -k 5 120 "$@" --list-protocols >"$SCRATCH/catalog.tsv" 2>"$SCRATCH/catalog.err" </dev/null ||
    die "$* --list-protocols failed: $(head -3 "$SCRATCH/catalog.err")"
  listing=$("$AVB_PYTHON" "$AVB_TESTS_DIR/cases.py" "$harness" --catalog "$SCRATCH/catalog.tsv") ||
    die "the protocols' case tables cannot give [$harness] (above)"
  mapfile -t CASES <<<"$listing"
  [ "${#CASES[@]}" -gt 0 ] && [ -n "${CASES[0]}" ] || die "no protocol has a case for [$harness]"
}

# Wall-clock seconds since the epoch, with nanoseconds (no bc on a bare Debian).
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Runs avbench check on FILE with the given expectations; records a failure.
check_trace() {
  local file=$1
  shift
  local report
  if report=$(timeout 60 "$AVB_TOOLS" check "$file" "$@" 2>&1); then
    ok "avbench check $(basename "$file") $*"
  else
    bad_with_report "avbench check $(basename "$file") $* rejected the trace:" "$report"
  fi
}

# Runs BIN on NP peers (a variable of the calling script) under ENGINE, writing the
# trace OUT and its log OUT.log; ends the test when the run fails.
#   run_engine mpi|smpi BIN OUT ARGS...
run_engine() {
  local engine=$1 bin=$2 out=$3
  shift 3
  set_launcher "$engine" "$NP"
  local rc=0 log=$out.log
  timeout -k 10 120 "${LAUNCH[@]}" "$bin" "$@" --out "$out" --quiet >"$log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    sed 's/^/    /' "$log" >&2
    die "$engine run failed with exit code $rc: $*"
  fi
}

# ---- both engines on the same arguments (test_cross_engine*.sh) ----------------------

# Runs MPI_BIN under Open MPI and SMPI_BIN under SMPI (variables of the calling
# script) with ARGS, writing $SCRATCH/mpi-TAG.h5 and $SCRATCH/smpi-TAG.h5.
#   run_both_engines TAG ARGS...
run_both_engines() {
  local tag=$1 started
  shift
  started=$(now)
  run_engine mpi "$MPI_BIN" "$SCRATCH/mpi-$tag.h5" "$@"
  run_engine smpi "$SMPI_BIN" "$SCRATCH/smpi-$tag.h5" "$@"
  say "$tag: both engines ran $* ($(elapsed "$started") s)"
}

# Runs the Python program read from stdin on TAG's two traces (argv: the Open MPI
# trace, the SMPI trace, this folder) and records its verdict: a pass when it
# exits 0, quoting its output, else a failure with that output as the report.
#   compare_engines TAG <<'EOF' ... EOF
compare_engines() {
  local tag=$1 report
  if report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/mpi-$tag.h5" "$SCRATCH/smpi-$tag.h5" "$AVB_TESTS_DIR" 2>&1); then
    ok "$tag: $report"
  else
    bad_with_report "$tag: Open MPI and SMPI traces differ:" "$report"
  fi
}

# Runs MPI_BIN (a variable of the calling script) on the sequential engine with
# ARGS and NP peers, and compares its trace with $SCRATCH/mpi-TAG.h5
# (compare_sequential.py): the same bits, or for the all-reduce, which the MPI
# engines sum along a ring or a tree, within 1e-12.
#   run_sequential TAG ARGS...
run_sequential() {
  local tag=$1 report rc=0 seq=$SCRATCH/seq-$1.h5 tolerance=() a
  shift
  for a in "$@"; do [ "$a" != allreduce ] || tolerance=(--tolerance 1e-12); done
  timeout 120 "$MPI_BIN" --engine sequential --peers "$NP" "$@" --out "$seq" --quiet >"$seq.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    bad_with_report "$tag: the sequential engine failed (exit code $rc):" "$(cat "$seq.log")"
  elif report=$(timeout 60 "$AVB_PYTHON" "$AVB_TESTS_DIR/compare_sequential.py" "$seq" "$SCRATCH/mpi-$tag.h5" \
                 "${tolerance[@]}" 2>&1); then
    ok "$tag sequential: $report"
  else
    bad_with_report "$tag: the sequential engine's trace differs from Open MPI's:" "$report"
  fi
}

# smpi_against_sequential NAME TAG PEERS WITHIN SMPI_OPTIONS SEQ_OPTIONS ARGS...:
# runs ARGS on PEERS peers under SMPI ($BIN through smpirun.sh, the words of
# SMPI_OPTIONS before the program) and on the sequential engine ($SEQ, with the
# words of SEQ_OPTIONS), into $SCRATCH/smpi-TAG.h5 and seq-TAG.h5, and requires
# compare_sequential.py's agreement: the same counters and metric bits (an
# all-reduce's metrics within 1e-12 of the initial variance: the MPI engines sum
# along a ring) and each trial's time within WITHIN (relative; "": time not
# compared). Reports as NAME.
smpi_against_sequential() {
  local name=$1 tag=$2 peers=$3 within=() smpi_opts seq_opts started report rc=0 tolerance=()
  [ -z "$4" ] || within=(--time-within "$4")
  read -r -a smpi_opts <<<"$5"
  read -r -a seq_opts <<<"$6"
  shift 6
  [[ " $* " != *" --protocol allreduce "* ]] || tolerance=(--tolerance 1e-12)
  started=$(now)
  timeout -k 10 300 "$AVB_SMPIRUN" -n "$peers" "${smpi_opts[@]}" "$BIN" "$@" --out "$SCRATCH/smpi-$tag.h5" \
    >"$SCRATCH/$tag.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    bad_with_report "$name: SMPI exited $rc:" "$(tail -5 "$SCRATCH/$tag.log")"
    return 1
  fi
  if ! timeout 120 "$SEQ" --engine sequential --peers "$peers" "${seq_opts[@]}" "$@" --out "$SCRATCH/seq-$tag.h5" \
      >"$SCRATCH/$tag.seq.log" 2>&1 </dev/null; then
    bad_with_report "$name: the sequential engine failed:" "$(tail -5 "$SCRATCH/$tag.seq.log")"
    return 1
  fi
  if report=$(timeout 60 "$AVB_PYTHON" "$AVB_TESTS_DIR/compare_sequential.py" "$SCRATCH/seq-$tag.h5" \
                "$SCRATCH/smpi-$tag.h5" "${tolerance[@]}" "${within[@]}" 2>&1); then
    ok "$name: $report ($(elapsed "$started") s)"
  else
    bad_with_report "$name: the sequential engine disagrees with SMPI:" "$report"
    return 1
  fi
}
