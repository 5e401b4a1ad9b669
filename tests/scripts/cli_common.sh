# Shared by the command-line tests (test_cli.sh, test_sgd_cli.sh); sourced after
# common.sh, not run.
#
#   cli_init PROGRAM BINARY ENGINE
#
# sets APP (the program's name, as it prints it in "APP: error: ..."), BIN, ENGINE,
# LAUNCH (2 peers) and three folders under $SCRATCH:
#   work  where the app runs and writes; watched for changes by bad_case
#   logs  its stdout and stderr, outside the watched folder
#   conf  --config files and data files, also outside
#
# What a refusal must look like, checked by bad_case for every bad input:
#   - exit code 2 (from the program, or the launcher, which passes the rank's code on);
#   - exactly one line on stderr starting "APP: error:", and that line starts with
#     the offending flag ("APP: error: --dim: ...") and names what is accepted (each
#     case lists the words it must contain);
#   - no run header ("# APP ...") on stdout: the run never started;
#   - the working folder is unchanged: same names, sizes, modes and modification
#     times, the folder's own included (so a temporary file created and deleted
#     also counts), and the pre-existing trace existing.h5 keeps its SHA-256.
# Where a refusal runs: what it prints and leaves is the apps' own parsing code,
# the same on every engine; a launcher adds only that the line comes out once from
# every rank with exit code 2. So under Open MPI (ENGINE mpi: build/ and the
# sanitizer build) each refusal runs on the sequential engine, in one process that
# starts no MPI (a few hundredths of a second instead of mpirun's half second), and
# the cases named in LAUNCHED (a calling script's blank-separated tags, at least one
# of each kind: a bad value, a combination, a --config line, --out) run through
# mpirun as well. A case that sets --engine or --peers itself runs as it is written
# (alone when it asks for --engine sequential, else through the launcher). Under
# SMPI, whose program cannot run without smpirun, every case runs through smpirun.
# Launcher noise is ignored: Open MPI's "-----" banners never start with
# "APP: error:", and lines starting with '[' are dropped before counting: they are
# SimGrid's log lines (e.g. "[peer-0:0:(1) 0.000000] ... SMPI process did not
# return 0") and the app's own "[12s] trial ..." progress.

cli_init() {
  APP=$1
  [ -e "$2" ] || die "no program at $2 (build it first)"
  BIN=$(realpath "$2")
  ENGINE=$3
  set_launcher "$ENGINE" 2
  # When a rank exits non-zero, Open MPI's mpirun aborts the job: it signals the
  # other ranks and waits odls_base_sigkill_timeout (1 s) twice before SIGKILL,
  # although they are exiting by themselves: 2.4 s per refused run instead of
  # 0.5 s. Without the wait nothing is lost: rank 0 prints its error before
  # MPI_Finalize, which no rank leaves before every rank has entered it, and the
  # launcher still exits with the ranks' code 2.
  if [ "$ENGINE" = mpi ]; then export OMPI_MCA_odls_base_sigkill_timeout=0; fi
  work=$SCRATCH/work
  logs=$SCRATCH/logs
  conf=$SCRATCH/conf
  mkdir -p "$work" "$logs" "$conf"
  say "engine $ENGINE: ${LAUNCH[*]} $BIN"
}

# run_app TAG ARGS...: runs the app on 2 peers in $work; sets RC, OUT and ERR.
run_app() {
  run_via "$1" launcher "${@:2}"
}

# run_via TAG HOW ARGS...: run_app, HOW being "launcher" (2 peers through mpirun or
# smpirun), "alone" (the program by itself) or "sequential" (alone, with
# --engine sequential --peers 2 put first).
run_via() {
  local tag=$1 how=$2
  shift 2
  local launch=("${LAUNCH[@]}")
  case "$how" in
    launcher) ;;
    alone) launch=() ;;
    sequential)
      launch=()
      set -- --engine sequential --peers 2 "$@"
      ;;
    *) die "run_via: unknown way '$how'" ;;
  esac
  OUT=$logs/$tag.out
  ERR=$logs/$tag.err
  set +e
  (cd "$work" && timeout -k 10 120 "${launch[@]}" "$BIN" "$@") >"$OUT" 2>"$ERR" </dev/null
  RC=$?
  set -e
  if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
    bad "$tag: timed out after 120 s: ${*}"
  fi
}

# refusal_ways TAG ARGS...: how bad_case runs a case with ARGS (see the top of this
# file): sets WAYS to one or two of launcher, alone, sequential.
LAUNCHED="" LAUNCHED_RUN=0 WAYS=()
refusal_ways() {
  local tag=$1 a prev="" engine="" own=0
  shift
  WAYS=(launcher)
  [ "$ENGINE" = mpi ] || return 0
  for a in "$@"; do
    [ "$prev" = --engine ] && engine=$a
    [[ "$a" == --engine=* ]] && engine=${a#--engine=}
    [[ "$a" == --engine || "$a" == --engine=* || "$a" == --peers || "$a" == --peers=* ]] && own=1
    prev=$a
  done
  if [ "$engine" = sequential ]; then
    WAYS=(alone)
  elif [ "$own" = 0 ]; then
    WAYS=(sequential)
    [[ " $LAUNCHED " != *" $tag "* ]] || WAYS+=(launcher)
  fi
}

show_logs() {
  { echo "    --- stdout"; sed 's/^/    /' "$OUT"; echo "    --- stderr"; sed 's/^/    /' "$ERR"; } >&2
}

# The working folder's names, types, sizes, modes and modification times (find's
# order: readdir's, the same for an unchanged folder), and existing.h5's SHA-256.
snapshot() {
  find "$work" -printf '%P|%y|%s|%m|%T@\n'
  if [ -f "$work/existing.h5" ]; then sha256sum "$work/existing.h5"; fi
}

# bad_case TAG FLAG_REGEX NEEDLES -- ARGS...
#   FLAG_REGEX: the flag the error line must start with (an ERE, e.g. --dim)
#   NEEDLES:    words the error line must contain, separated by '|'
# A case whose TAG is in CLI_LEFT_OUT (a calling script's slice, blank-separated)
# is not run, only counted in CLI_LEFT_OUT_COUNT.
CLI_LEFT_OUT="" CLI_LEFT_OUT_COUNT=0
bad_case() {
  local tag=$1 flag_re=$2 needles=$3
  if [[ " $CLI_LEFT_OUT " == *" $tag "* ]]; then
    CLI_LEFT_OUT_COUNT=$((CLI_LEFT_OUT_COUNT + 1))
    return
  fi
  shift 4
  local how
  refusal_ways "$tag" "$@"
  for how in "${WAYS[@]}"; do
    [ "$how" = launcher ] && [ "$ENGINE" = mpi ] && LAUNCHED_RUN=$((LAUNCHED_RUN + 1))
    check_refusal "$tag" "$flag_re" "$needles" "$how" "$@"
  done
}

# launched_check: under Open MPI, says how many refusals also ran through mpirun,
# and fails when none did (a LAUNCHED list naming no case that ran would otherwise
# leave the launcher's part unchecked without a word).
launched_check() {
  [ "$ENGINE" = mpi ] || return 0
  if [ "$LAUNCHED_RUN" -gt 0 ]; then
    say "$LAUNCHED_RUN refusal(s) also through mpirun, the others on the sequential engine"
  else
    bad "no refusal ran through mpirun: LAUNCHED ($LAUNCHED) names no case that ran"
  fi
}

# check_refusal TAG FLAG_REGEX NEEDLES HOW ARGS...: one run of a bad_case, run_via
# HOW. The checks are bash's own (a case costs its run and two snapshots).
check_refusal() {
  local tag=$1 flag_re=$2 needles=$3 how=$4
  shift 4
  local before after text lines=0 line="" needle missing="" started=0
  before=$(snapshot)
  run_via "$tag" "$how" "$@"
  after=$(snapshot)
  local problems=()
  [ "$RC" -eq 2 ] || problems+=("exit code $RC, expected 2")
  while IFS= read -r text || [ -n "$text" ]; do
    [[ $text == "["* ]] && continue
    if [[ $text == "$APP: error:"* ]]; then
      lines=$((lines + 1))
      [ -n "$line" ] || line=$text
    fi
  done <"$ERR"
  if [ "$lines" -ne 1 ]; then
    problems+=("$lines '$APP: error:' lines on stderr, expected exactly 1")
  fi
  if [ -n "$line" ]; then
    local start="^$APP: error: ($flag_re)([:= ]|\$)"
    [[ $line =~ $start ]] || problems+=("the error line does not start with the flag ($flag_re)")
    IFS='|' read -r -a words <<<"$needles"
    for needle in "${words[@]}"; do
      [[ $line == *"$needle"* ]] || missing+=" '$needle'"
    done
    [ -z "$missing" ] || problems+=("the error line does not name the accepted values:$missing")
  fi
  while IFS= read -r text || [ -n "$text" ]; do
    [[ $text == "# $APP"* ]] && started=1
  done <"$OUT"
  [ "$started" = 0 ] || problems+=("the run started (header on stdout)")
  if [ "$before" != "$after" ]; then
    local changes
    changes=$(diff <(echo "$before" | LC_ALL=C sort) <(echo "$after" | LC_ALL=C sort) | grep '^[<>]' | tr '\n' ' ' || true)
    problems+=("files changed in the working folder: ${changes:-the order of the listing}")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    ok "refused $* ($how) -> exit 2, \"$line\""
  else
    bad "$tag ($how): $APP $*"
    local p
    for p in "${problems[@]}"; do echo "    - $p" >&2; done
    show_logs
  fi
}

# bad_config TAG FLAG_REGEX NEEDLES TEXT: a --config file holding TEXT (printf %b:
# escapes such as \n are read), given with the calling script's ${keep[@]}, is
# refused as bad_case checks. The file is $conf/TAG.ini.
bad_config() {
  local tag=$1 flag_re=$2 needles=$3 text=$4
  printf '%b' "$text" >"$conf/$tag.ini"
  bad_case "$tag" "$flag_re" "$needles" -- --config "$conf/$tag.ini" "${keep[@]}"
}

# check_help FLAG...: --help exits 0, prints the usage once, writes nothing, and
# mentions every FLAG.
check_help() {
  local before n_usage flag
  before=$(snapshot)
  run_app help --help
  n_usage=$(grep -c '^Usage:' "$OUT" || true)
  if [ "$RC" -eq 0 ] && [ "$n_usage" -eq 1 ] && [ "$before" = "$(snapshot)" ]; then
    ok "--help: exit 0, usage printed once, no file written"
  else
    bad "--help: exit code $RC (expected 0), 'Usage:' printed $n_usage times (expected 1)"
    show_logs
  fi
  for flag in "$@"; do
    grep -q -- "$flag" "$OUT" || bad "--help does not mention $flag"
  done
}

# no_temp_files: no ".NAME.tmp.*" file (a trace being written) is left in $work.
# overwrite_case RUN_ARGS... -- CHECK_TRACE_ARGS...: --overwrite replaces
# existing.h5 with the run's trace, which check_trace then checks.
overwrite_case() {
  local run=()
  while [ "$1" != -- ]; do
    run+=("$1")
    shift
  done
  shift
  local old_sum
  old_sum=$(sha256sum <"$work/existing.h5")
  run_app overwrite "${run[@]}" --out existing.h5 --overwrite --quiet
  if [ "$RC" -eq 0 ] && [ "$old_sum" != "$(sha256sum <"$work/existing.h5")" ]; then
    check_trace "$work/existing.h5" "$@"
  else
    bad "--overwrite: exit code $RC, or the file was not replaced"
    show_logs
  fi
}

no_temp_files() {
  local leftover
  leftover=$(find "$work" -name '.*.tmp.*')
  [ -z "$leftover" ] || bad "temporary file left behind: $leftover"
}

# h5_eval FILE EXPR: prints the Python expression EXPR of the open h5py.File f; EXPR
# may use the trial accessors of avbench.trials (trial_count, trial_columns,
# trial_info, all_trial_columns, all_trial_info, trial_targets).
h5_eval() {
  timeout 60 "$AVB_PYTHON" -c '
import sys, h5py
from avbench.trials import all_trial_columns, all_trial_info, trial_columns, trial_count, trial_info, trial_targets
with h5py.File(sys.argv[1], "r") as f:
    print(eval(sys.argv[2]))
' "$1" "$2"
}

# table_rows FILE: the result rows of a run's stdout (the lines that are not
# comments: one per trial) and its mean and standard-error lines, without the
# time column under Open MPI, where it is wall-clock time; under SMPI it is
# simulated time, the same on every run, and is kept.
table_rows() {
  if [ "$ENGINE" = smpi ]; then
    grep -E '^[^#]|^# +(mean|± se) ' "$1" || true
  else
    grep -E '^[^#]|^# +(mean|± se) ' "$1" | awk '{ $NF = ""; print }' || true
  fi
}

# replay_config TAG TRACE REFERENCE_OUT: runs the app again with --config set to the
# /config text that TRACE records (every option, --out included; the replay writes
# $work/TAG.h5 instead), and checks that it gives the same result as the run that
# wrote TRACE, whose stdout is REFERENCE_OUT: the same table rows and the same
# /summary, but for the time columns under Open MPI (wall-clock time there).
replay_config() {
  local tag=$1 trace=$2 reference=$3
  local text=$conf/$tag.ini
  if ! timeout 60 "$AVB_PYTHON" -c '
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    open(sys.argv[2], "w").write(f["config"].attrs["text"])
' "$trace" "$text"; then
    bad "$tag: cannot read the /config text of $(basename "$trace")"
    return
  fi
  rm -f "$work/$tag.h5"
  run_app "$tag" --config "$text" --out "$tag.h5"
  if [ "$RC" -ne 0 ]; then
    bad "$tag: replaying the /config text of $(basename "$trace"): exit code $RC"
    show_logs
    return
  fi
  local want got
  want=$(table_rows "$reference")
  got=$(table_rows "$OUT")
  if [ -z "$want" ]; then
    bad "$tag: no table rows in $(basename "$reference") to compare with"
  elif [ "$want" != "$got" ]; then
    bad "$tag: replaying the /config text of $(basename "$trace") gave other table rows:"
    diff <(echo "$want") <(echo "$got") | sed 's/^/    /' >&2 || true
  else
    ok "$tag: the /config text of $(basename "$trace") replays the run ($(echo "$want" | wc -l) same table rows)"
  fi
  local engine_time=1
  [ "$ENGINE" = smpi ] && engine_time=0
  local report
  if report=$(timeout 60 "$AVB_PYTHON" -c '
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    sa, sb = a["summary"], b["summary"]
    if sorted(sa) != sorted(sb):
        sys.exit(f"/summary members differ: {sorted(sa)} vs {sorted(sb)}")
    for name in sa:
        if name == "time" and sys.argv[3] == "1":
            continue
        x, y = sa[name][()], sb[name][()]
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            sys.exit(f"/summary/{name} differs: {x} vs {y}")
' "$trace" "$work/$tag.h5" "$engine_time" 2>&1); then
    ok "$tag: same /summary$([ "$engine_time" = 1 ] && echo ' but time')"
  else
    bad "$tag: replay: $report"
  fi
}

# warn_case TAG NEEDLE -- ARGS...: a run that is accepted but probably should not
# be: exit 0, and on stderr exactly one "APP: warning:" line, which contains
# NEEDLE (printed once, by rank 0, whatever the number of peers).
warn_case() {
  local tag=$1 needle=$2
  shift 3
  run_app "$tag" "$@" --quiet
  local lines line
  # A run with decode failures also reports them after the run ("decode failures
  # persisted", tested on its own): that line is not the start-up warning.
  lines=$(grep "^$APP: warning:" "$ERR" | grep -vc "^$APP: warning: decode failures persisted: " || true)
  line=$(grep "^$APP: warning:" "$ERR" | grep -v "^$APP: warning: decode failures persisted: " | head -1 || true)
  if [ "$RC" -eq 0 ] && [ "$lines" -eq 1 ] && printf '%s\n' "$line" | grep -Fq -- "$needle"; then
    ok "$tag: exit 0, \"$line\""
  else
    bad "$tag: $APP $*: exit code $RC (expected 0), $lines warning line(s) (expected 1 containing '$needle')"
    show_logs
  fi
}
