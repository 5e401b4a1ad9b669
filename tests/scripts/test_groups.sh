#!/usr/bin/env bash
# --groups comm and --collective mpi from the command line (issue 17), on one engine:
#
#   tests/scripts/test_groups.sh AVERAGING_BENCH mpi|smpi NP
#
# Moshpit on a square grid of NP peers and random-groups, with failures:
# 1. --groups comm with the butterfly (the default) leaves the very bits of
#    --groups view: variance, error, mean_drift, groups, bytes_sent in every row;
# 2. --groups comm --collective mpi (the library's MPI_Allreduce) agrees with the
#    view within 1e-12 relative, with the same groups and bytes (mpi is charged the
#    ring's bytes, which equal the butterfly's);
# 3. each trace's /config records groups and collective, so that it replays.
source "$(dirname "$0")/common.sh"

need_args 3 "$#" "AVERAGING_BENCH mpi|smpi NP"
program_arg BIN "$1" averaging_bench
ENGINE=$2
NP=$3
side=$(awk -v n="$NP" 'BEGIN { s = int(sqrt(n) + 0.5); print s }')
[ $((side * side)) -eq "$NP" ] || die "NP must be a square (the moshpit grid), got $NP"

compare() {  # compare VIEW OTHER TOLERANCE: every round's columns; 0 = bit for bit
  timeout 60 "$AVB_PYTHON" - "$@" <<'PY'
import sys
import h5py
import numpy as np
from avbench.trials import all_trial_columns
view, other, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
problems = []
with h5py.File(view, "r") as a, h5py.File(other, "r") as b:
    ca, cb = all_trial_columns(a), all_trial_columns(b)
    if len(ca) != len(cb):
        problems.append(f"{len(ca)} trials vs {len(cb)}")
    for k, (ta, tb) in enumerate(zip(ca, cb)):
        for col in ("groups", "failed_groups", "alive", "bytes_sent"):
            if not np.array_equal(ta[col], tb[col]):
                problems.append(f"trial {k} {col}: {ta[col]} vs {tb[col]}")
        for col in ("variance", "error", "mean_drift"):
            x, y = ta[col], tb[col]
            if tol == 0:
                same = np.array_equal(x.view(np.uint64), y.view(np.uint64))
            else:
                same = bool(np.all(np.abs(x - y) <= tol * np.maximum(1.0, np.abs(x))))
            if not same:
                problems.append(f"trial {k} {col}: max difference {np.max(np.abs(x - y)):.3e}")
        if int(ta["groups"].sum()) == 0:
            problems.append(f"trial {k}: no group averaged")
    config = dict(b["config"].attrs)
for p in problems:
    print(p)
print("config groups=%s collective=%s" % (config.get("groups"), config.get("collective")))
sys.exit(1 if problems else 0)
PY
}

expect_config() {  # expect_config TRACE GROUPS COLLECTIVE
  local got
  got=$(timeout 60 "$AVB_PYTHON" -c '
import sys, h5py
c = h5py.File(sys.argv[1], "r")["config"].attrs
print(c["groups"], c["collective"])' "$1")
  if [ "$got" = "$2 $3" ]; then ok "$(basename "$1"): /config groups=$2 collective=$3"; else
    bad "$(basename "$1"): /config has '$got', expected '$2 $3'"; fi
}

check() {  # check NAME TOLERANCE VIEW_ARGS -- OTHER_ARGS
  local name=$1 tol=$2 report
  shift 2
  local view=() other=()
  while [ "$1" != -- ]; do view+=("$1"); shift; done
  shift
  other=("$@")
  run_engine "$ENGINE" "$BIN" "$SCRATCH/$name-view.h5" "${view[@]}"
  run_engine "$ENGINE" "$BIN" "$SCRATCH/$name.h5" "${other[@]}"
  if report=$(compare "$SCRATCH/$name-view.h5" "$SCRATCH/$name.h5" "$tol" 2>&1); then
    ok "$name: same as --groups view (tolerance $tol): $report"
  else
    bad_with_report "$name: differs from --groups view (tolerance $tol):" "$report"
  fi
}

common=(--dim 7 --rounds 6 --trials 2 --seed 11 --fail-rate 0.1)
moshpit=(--protocol moshpit --grid "${side}x${side}" "${common[@]}")
groups=(--protocol random-groups --group-size 3 "${common[@]}")

check moshpit-comm 0 "${moshpit[@]}" -- "${moshpit[@]}" --groups comm
expect_config "$SCRATCH/moshpit-comm.h5" comm auto
check moshpit-mpi 1e-12 "${moshpit[@]}" -- "${moshpit[@]}" --groups comm --collective mpi
expect_config "$SCRATCH/moshpit-mpi.h5" comm mpi
check partial-mpi 1e-12 "${groups[@]}" --on-failure partial -- "${groups[@]}" --on-failure partial --groups comm \
  --collective mpi
check groups-ring 0 "${groups[@]}" --collective ring -- "${groups[@]}" --collective ring --groups comm
finish
