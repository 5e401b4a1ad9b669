# Shared by the test_*.sh scripts in this folder; sourced, not run.
#
# Gives each script: strict mode, the repository root, a scratch folder removed on
# exit, pass/fail helpers, and the launcher for an engine. Every test command runs
# under `timeout`, so a hung MPI job ends the test instead of the CI run.
set -euo pipefail

AVB_TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AVB_REPO=$(cd "$AVB_TESTS_DIR/../.." && pwd)
AVB_PYTHON=/usr/bin/python3                 # Debian's, which sees python3-h5py
AVB_CHECK_TRACE=$AVB_TESTS_DIR/check_trace.py
AVB_SMPIRUN=$AVB_REPO/scripts/smpirun.sh
TEST_NAME=$(basename "$0" .sh)

# Open MPI refuses to run as root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/avb-$TEST_NAME.XXXXXX")
# Scripts that start background jobs add their own clean-up to this list.
avb_cleanup_hooks=()
avb_cleanup() {
  local hook
  for hook in "${avb_cleanup_hooks[@]}"; do "$hook" || true; done
  rm -rf "$SCRATCH"
}
trap avb_cleanup EXIT

AVB_FAILURES=0
say() { echo "$TEST_NAME: $*"; }
ok() { echo "$TEST_NAME: ok: $*"; }
# Records a failed check and carries on, so one run reports every broken case.
bad() {
  echo "$TEST_NAME: FAIL: $*" >&2
  AVB_FAILURES=$((AVB_FAILURES + 1))
}
# Ends the test now (for failures that make later checks meaningless).
die() {
  echo "$TEST_NAME: FAIL: $*" >&2
  exit 1
}
# The last line of every script: non-zero exit when any check failed.
finish() {
  if [ "$AVB_FAILURES" -ne 0 ]; then
    echo "$TEST_NAME: $AVB_FAILURES check(s) FAILED" >&2
    exit 1
  fi
  echo "$TEST_NAME: all checks passed"
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

# Wall-clock seconds since the epoch, with nanoseconds (no bc on a bare Debian).
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Runs check_trace.py on FILE with the given expectations; records a failure.
check_trace() {
  local file=$1
  shift
  local report
  if report=$(timeout 60 "$AVB_PYTHON" "$AVB_CHECK_TRACE" "$file" "$@" 2>&1); then
    ok "check_trace.py $(basename "$file") $*"
  else
    bad "check_trace.py $(basename "$file") $* rejected the trace:"
    printf '%s\n' "$report" | sed 's/^/    /' >&2
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
