#!/usr/bin/env bash
# --availability FILE (--failure trace): churn on a schedule read from a file.
#
#   tests/scripts/test_availability.sh AVERAGING_BENCH SGD_BENCH
#
# 1. scripts/avbench availability churn writes the schedule of a keyed churn trial; a
#    run on that file equals the keyed run bit for bit (every column, the
#    sequential engine's time too), for group and graph protocols and for SGD.
# 2. The same trace on Open MPI (8 real processes) equals the sequential engine.
# 3. A diurnal trace: the run's alive column is what the file says, round by round,
#    and the trace is valid; a trace in seconds becomes the rounds stated.
# 4. Bad traces and bad combinations: one line naming the flag, exit 2, nothing
#    written (on 2 Open MPI ranks, so printed once); the generator's bad input too.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/cli_common.sh"

need_args 2 $# AVERAGING_BENCH SGD_BENCH
program_arg AVG "$1" "averaging_bench"
program_arg SGD "$2" "sgd_bench"
GEN="$AVB_TOOLS availability"
COMPARE="$AVB_TESTS_DIR/compare_sequential.py"
cd "$SCRATCH"

# compare TAG A.h5 B.h5 [compare_sequential.py options]
compare() {
  local tag=$1 report
  shift
  if report=$(timeout 60 "$AVB_PYTHON" "$COMPARE" "$@" 2>&1); then ok "$tag: $report"
  else bad_with_report "$tag: the traces differ:" "$report"; fi
}

# run TAG BIN ARGS...: runs one program (no launcher), dies on failure.
run() {
  local tag=$1 bin=$2 rc=0
  shift 2
  timeout -k 5 120 "$bin" "$@" --quiet >"$tag.log" 2>&1 </dev/null || rc=$?
  [ "$rc" -eq 0 ] || { sed 's/^/    /' "$tag.log" >&2; die "$tag: exit $rc: $*"; }
}

# ---- 1. a keyed churn trial, written as a trace, is that trial ----------------
churn=(--fail-rate 0.06 --join-rate 0.3 --seed 11)
$GEN churn churn64.csv --peers 64 --rounds 25 "${churn[@]}"
[ "$(grep -c '^[0-9]' churn64.csv)" -ge 20 ] || die "the churn trace of 64 peers has fewer than 20 spells"
for protocol in moshpit random-groups gossip allreduce; do
  run "keyed-$protocol" "$AVG" --engine sequential --peers 64 --protocol "$protocol" --rounds 25 --trials 1 \
    --failure churn "${churn[@]}" --detection-timeout 0.1 --out "keyed-$protocol.h5"
  run "trace-$protocol" "$AVG" --engine sequential --peers 64 --protocol "$protocol" --rounds 25 --trials 1 \
    --seed 11 --availability churn64.csv --detection-timeout 0.1 --out "trace-$protocol.h5"
  compare "$protocol: trace = keyed churn" "trace-$protocol.h5" "keyed-$protocol.h5" --time-within 0
  check_trace "trace-$protocol.h5" --peers 64 --trials 1 --rounds 25
done
run sgd-keyed "$SGD" --engine sequential --peers 64 --protocol moshpit --steps 50 --local-steps 2 --trials 1 \
  --failure churn "${churn[@]}" --out sgd-keyed.h5
run sgd-trace "$SGD" --engine sequential --peers 64 --protocol moshpit --steps 50 --local-steps 2 --trials 1 \
  --seed 11 --availability churn64.csv --out sgd-trace.h5
compare "sgd moshpit: trace = keyed churn" sgd-trace.h5 sgd-keyed.h5 --time-within 0

# ---- 2. the same trace on Open MPI -------------------------------------------------
$GEN churn churn8.csv --peers 8 --rounds 15 --fail-rate 0.1 --join-rate 0.4 --seed 3
for protocol in moshpit gossip; do
  set_launcher mpi 8
  rc=0
  timeout -k 10 120 "${LAUNCH[@]}" "$AVG" --protocol "$protocol" --rounds 15 --trials 1 --seed 3 \
    --availability churn8.csv --out "mpi-$protocol.h5" --quiet >"mpi-$protocol.log" 2>&1 </dev/null || rc=$?
  [ "$rc" -eq 0 ] || { sed 's/^/    /' "mpi-$protocol.log" >&2; die "Open MPI $protocol: exit $rc"; }
  run "seq8-$protocol" "$AVG" --engine sequential --peers 8 --protocol "$protocol" --rounds 15 --trials 1 \
    --seed 3 --availability churn8.csv --out "seq8-$protocol.h5"
  compare "$protocol: Open MPI = sequential on a trace" "seq8-$protocol.h5" "mpi-$protocol.h5"
done

# ---- 3. a diurnal trace; a trace in seconds ----------------------------------------
$GEN diurnal diurnal.csv --peers 48 --rounds 72 --round-seconds 1800 --seed 4
run diurnal "$AVG" --engine sequential --peers 48 --protocol moshpit --rounds 72 --trials 2 \
  --availability diurnal.csv --out diurnal.h5
check_trace diurnal.h5 --peers 48 --trials 2 --rounds 72
if report=$("$AVB_PYTHON" - diurnal.csv diurnal.h5 <<'PY' 2>&1
import sys
import h5py
import numpy as np
from avbench.trials import trial_columns
csv, trace = sys.argv[1], sys.argv[2]
rounds, peers = 72, 48
down = np.zeros((rounds + 1, peers), dtype=bool)
for line in open(csv):
    if line.startswith("#") or line.startswith("peer"):
        continue
    p, d, u = line.strip().split(",")
    end = rounds + 1 if u == "" else min(int(u), rounds + 1)
    down[int(d):end, int(p)] = True
expected = peers - down.sum(axis=1)
with h5py.File(trace, "r") as f:
    for k in (0, 1):
        t = trial_columns(f, k, ["alive", "round"])
        alive = t["alive"]
        rnd = t["round"]
        if not np.array_equal(alive, expected[rnd]):
            sys.exit(f"trial {k}: alive {alive.tolist()} but the file says {expected[rnd].tolist()}")
print(f"alive follows the file in both trials ({expected.min()} to {expected.max()} peers up; the day shows)")
assert expected.min() < 0.8 * peers < expected.max(), "a diurnal trace with no visible day"
PY
); then ok "diurnal: $report"; else bad_with_report "diurnal: the run does not follow its trace:" "$report"; fi
printf 'peer,down,up\n0,0,3600\n1,5000,9100\n1,9200,\n2,100,200\n' >seconds.csv
expected=$(printf '0,1,3\n1,4,\n')
got=$($GEN seconds seconds.csv - --round-seconds 1800 | grep '^[0-9]')
if [ "$got" = "$expected" ]; then ok "seconds: 1800 s rounds give the stated spells (a short gap merges, a short spell vanishes)"
else bad "seconds: got $(echo "$got" | tr '\n' ' '), expected $(echo "$expected" | tr '\n' ' ')"; fi

# ---- 4. refusals -------------------------------------------------------------------------
cli_init averaging_bench "$AVG" mpi
printf 'peer,down,up\n1,2,4\n' >"$conf/ok.csv"
printf 'peer,down,up\n0,3,9\n0,5,12\n' >"$conf/overlap.csv"
printf 'peer,down,up\n0,-2,4\n' >"$conf/negative.csv"
printf '0,3,9\n' >"$conf/noheader.csv"
printf 'peer,down,up\n5,3,9\n' >"$conf/wide.csv"
bad_case overlap --availability "overlap.csv:3|overlaps" -- --availability "$conf/overlap.csv"
bad_case negative --availability "negative.csv:2|down '-2'|[1, 2147483647]" -- --availability "$conf/negative.csv"
bad_case noheader --availability "peer,down,up" -- --availability "$conf/noheader.csv"
bad_case wide --availability "peer 5|2 peers" -- --availability "$conf/wide.csv"
bad_case missing --availability "cannot open" -- --availability "$conf/none.csv"
bad_case with-rate --fail-rate "--failure trace" -- --availability "$conf/ok.csv" --fail-rate 0.1
bad_case with-churn --availability "--failure trace|churn" -- --availability "$conf/ok.csv" --failure churn
bad_case no-file --failure "--availability FILE" -- --failure trace
bad_case pushsum --failure "trace|pushsum" -- --availability "$conf/ok.csv" --protocol pushsum
for args in "churn - --peers 0 --rounds 5 --fail-rate 0.1" "churn - --peers 4 --rounds 5 --fail-rate 2" \
            "diurnal - --peers 4 --rounds 5 --round-seconds 0" "seconds $conf/overlap.csv - --round-seconds 60"; do
  rc=0
  # shellcheck disable=SC2086 # the arguments are words
  $GEN $args >gen.out 2>gen.err || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <gen.err)" -eq 1 ] && [ ! -s gen.out ] && grep -q "error:" gen.err; then
    ok "avbench availability $args -> exit 2, $(grep error: gen.err)"
  else
    bad_with_report "avbench availability $args: exit $rc" "$(cat gen.out gen.err)"
  fi
done
finish
