#!/usr/bin/env bash
# sgd_bench gives the same numbers on both engines: 8 peers under Open MPI and
# under SMPI must write bit-identical traces, every column of every row but time,
# every trial attribute, /optimum and /summary (time excepted).
#
#   tests/scripts/test_cross_engine_sgd.sh MPI_BINARY SMPI_BINARY
#
# Minibatches, gradient noise, failures and the data are keyed draws, and the
# collectives fix their order of summation, so nothing may depend on the engine.
# The cases cover both objectives, a LIBSVM file dealt by rank 0, failures, churn,
# local steps, momentum and the three schedules, and a run whose trial 0 diverges
# (its relative gap passes its limit, TrainingMetrics::diverged, before the model
# overflows) and trial 1 does not:
# every engine must stop the same trial at the same row.
#
# The sequential engine (MPI_BINARY --engine sequential --peers 8) must write the
# Open MPI trace's bits too, time excepted (compare_sequential.py); all-reduce's
# metrics to 1e-12 of each column's largest value, since Open MPI sums along a
# ring or a tree and the sequential engine in peer order.
source "$(dirname "$0")/common.sh"

need_args 2 $# MPI_BINARY SMPI_BINARY
program_arg MPI_BIN "$1" "Open MPI program" "build the default preset first"
program_arg SMPI_BIN "$2" "SMPI program"
NP=8

# A small LIBSVM file: 40 samples, 6 features, labels +-1 (awk's own seeded rand).
awk 'BEGIN { srand(7); for (i = 0; i < 40; i++) { y = (i % 3 == 0) ? -1 : 1; line = y;
       for (k = 1; k <= 6; k++) if (rand() < 0.7) line = line " " k ":" sprintf("%.3f", y * 0.5 + rand() - 0.5);
       print line } }' >"$SCRATCH/data.svm"

# Trial 0 diverges, trial 1 does not: lr above 2(1 + momentum)/L = 0.375 (L = N = 8).
diverging="--protocol pushsum --fail-rate 0.2 --objective quadratic --momentum 0.5 --lr 0.5"
configs=(
  "--protocol moshpit --fail-rate 0.2 --objective logistic --label-skew 0.6 --batch 4 --lr 0.5 --momentum 0.5"
  "--protocol pushsum --fail-rate 0.2 --detection-timeout 0.25 --objective quadratic --sigma 0.3 --batch 2 --lr 0.05 --lr-schedule inverse --lr-decay-steps 5"
  "--protocol gossip --topology exp --local-steps 3 --objective quadratic --preset conditioned --condition 10 --lr 0.1 --lr-schedule step --lr-decay-steps 20"
  "--protocol allreduce --fail-rate 0.1 --objective logistic --data $SCRATCH/data.svm --split label-sorted --batch 2 --lr 1"
  "--protocol random-groups --group-size 3 --fail-rate 0.2 --failure permanent --objective quadratic --lr 0.05"
  "--protocol moshpit --fail-rate 0.2 --failure churn --join-rate 0.5 --detection-timeout 0.5 --local-steps 2 --objective quadratic --momentum 0.5 --lr 0.05"
  "$diverging"
)

for config in "${configs[@]}"; do
  read -r -a args <<<"$config"
  args+=(--steps 60 --eval-every 7 --trials 2 --seed 4242)
  tag=$(printf '%s' "${args[1]}")
  [[ "$config" != *churn* ]] || tag=$tag-churn
  [ "$config" != "$diverging" ] || tag=$tag-diverging
  run_both_engines "$tag" "${args[@]}"
  run_sequential "$tag" "${args[@]}"
  for engine in mpi smpi; do
    check_trace "$SCRATCH/$engine-$tag.h5" --kind sgd --peers "$NP" --trials 2 --complete 1 --steps 60
  done
  compare_engines "$tag" <<'EOF'
import sys
import h5py
import numpy as np

from avbench.trials import all_trial_columns, all_trial_info, trial_targets
from bitwise import same

problems = []
with h5py.File(sys.argv[1], "r") as m, h5py.File(sys.argv[2], "r") as s:
    if (m.attrs["engine"], s.attrs["engine"]) != ("openmpi", "smpi"):
        problems.append(f"engines {m.attrs['engine']!r}, {s.attrs['engine']!r}")
    for name in sorted(set(m["optimum"].attrs) | set(s["optimum"].attrs)):
        if not same(m["optimum"].attrs.get(name, np.nan), s["optimum"].attrs.get(name, np.nan)) and \
                m["optimum"].attrs.get(name) != s["optimum"].attrs.get(name):
            problems.append(f"/optimum attribute {name} differs")
    if not same(m["optimum/x"][()], s["optimum/x"][()]):
        problems.append("/optimum/x differs")
    rows = 0
    for name in ("trial", "rows", "step"):
        if not same(m["trials"][name][()], s["trials"][name][()]):
            problems.append(f"/trials/{name} differs: {m['trials'][name][()]} vs {s['trials'][name][()]}")
    if not same(trial_targets(m), trial_targets(s)):
        problems.append(f"targets differ: {trial_targets(m)} vs {trial_targets(s)}")
    columns_m, columns_s = all_trial_columns(m), all_trial_columns(s)
    info_m, info_s = all_trial_info(m), all_trial_info(s)
    if len(columns_m) != len(columns_s):
        problems.append(f"{len(columns_m)} trials vs {len(columns_s)}")
    for k, (a, b, ia, ib) in enumerate(zip(columns_m, columns_s, info_m, info_s)):
        for name in set(a) | set(b):
            if name != "time" and not same(a.get(name), b.get(name)):
                problems.append(f"trial {k} {name} differs: {a.get(name)} vs {b.get(name)}")
        for name in set(ia) | set(ib):
            if ia.get(name) != ib.get(name):
                problems.append(f"trial {k} {name} differs: {ia.get(name)} vs {ib.get(name)}")
        rows += len(a["step"])
    for name in m["summary"]:
        if name != "time" and not same(m["summary"][name][()], s["summary"][name][()]):
            problems.append(f"/summary/{name} differs")
    gaps = columns_m[0]["relative_gap"]
    if sys.argv[1].endswith("-diverging.h5"):
        marks = [info_m[k]["diverged"] for k in (0, 1)]
        if marks != [1, 0] or not (gaps[-1] > 1e6 and np.isfinite(gaps).all()):
            problems.append(f"diverged {marks}, expected [1, 0], trial 0 stopped at a finite relative gap "
                            f"above 1e6 ({gaps})")
    elif not gaps[-1] < gaps[0]:
        problems.append(f"relative gap did not fall ({gaps[0]} -> {gaps[-1]}): nothing was trained")
for p in problems:
    print(p)
sys.exit(1 if problems else print(f"identical: {rows} rows, attributes, /optimum, /summary but time") or 0)
EOF
done
finish
