#!/usr/bin/env bash
# Local SGD with every kind of protocol on 1024 simulated peers under SMPI against
# the sequential engine of the trainer.
#
#   tests/scripts/test_smpi_sgd_sequential_1024.sh SEQUENTIAL_BINARY SMPI_BINARY
#
# SEQUENTIAL_BINARY (build/apps/sgd_bench) runs each case with --engine sequential;
# every row of the SMPI run's trace (SMPI_BINARY: build-smpi/apps/sgd_bench) must
# agree with its rows: step, round, alive, groups, failed_groups and bytes_sent
# exactly; loss, gap, relative_gap and distance within 1e-12 relative, except
# that a logistic gap (loss - f* as computed) is known only to the rounding of the
# loss, so its scale, and relative_gap's, include the loss; consensus within
# 1e-12 of (1/N) sum_i ||x_i - x*||^2 = consensus + distance, from which the
# trainer computes it as a difference (as tests/mpi/test_sgd_forms.cpp does);
# accuracy within one test sample (a margin within rounding of 0 may flip a
# prediction). Each trace also passes avbench check. GoogleTest cannot run on
# 1024 SMPI ranks: each privatized copy takes a pthread key, and there are only
# 1024.
#
# --dim 2 and 12 to 18 steps keep it short: each SMPI run takes 3 to 15 s of wall
# time (about 0.3 s per averaging round at N = 1024, for every protocol here),
# about a minute in all on a 2-core machine.
source "$(dirname "$0")/common.sh"

need_args 2 $# SEQUENTIAL_BINARY SMPI_BINARY
program_arg SEQ "$1" "Open MPI build's sgd_bench" "build the default preset: cmake --build build --target sgd_bench"
program_arg BIN "$2" "SMPI program"
PEERS=1024
common=(--dim 2 --eval-every 4 --seed 1024)

# The EPFL quadratic: peer i's curvature is i^2/N, up to N, so lr = 1/(2N) keeps
# every peer's local steps stable; --sigma adds keyed gradient noise.
quadratic="--objective quadratic --preset epfl --zeta 100 --sigma 0.5 --lr 0.00048828125"
# Synthetic logistic regression, 16 samples per peer, 80% of them of the peer's
# majority label (+1 on even peers, -1 on odd ones).
logistic="--objective logistic --samples-per-peer 16 --separation 1 --label-skew 0.6 --lr 0.5"

# Every protocol's [sgd_sequential_1024] cases (tests/protocols/NAME/cases.txt): the
# protocol, an objective above by name, then the run's own flags.
protocol_cases sgd_sequential_1024 "$AVB_SMPIRUN" -n 1 "$BIN"
configs=()
for case in "${CASES[@]}"; do
  read -r protocol objective rest <<<"$case"
  case "$objective" in
    quadratic) configs+=("--protocol $protocol $quadratic $rest") ;;
    logistic) configs+=("--protocol $protocol $logistic $rest") ;;
    *) die "[sgd_sequential_1024] case '$case': the word after the protocol must be quadratic or logistic" ;;
  esac
done
# The value of FLAG in the array args.
value_of() {
  local i
  for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    if [ "${args[i]}" = "$1" ]; then
      echo "${args[i + 1]}"
      return
    fi
  done
}

total_started=$(now)
number=0
for config in "${configs[@]}"; do
  read -r -a args <<<"$config"
  args+=("${common[@]}")
  # A name for the files: the protocol and the case's number.
  number=$((number + 1))
  tag=$(printf '%s_%s' "${args[1]}" "$number" | tr -c 'a-z0-9\n' '_')
  short="${args[*]:0:6}"
  started=$(now)
  rc=0
  timeout -k 10 300 "$AVB_SMPIRUN" -n "$PEERS" "$BIN" "${args[@]}" \
    --out "$SCRATCH/$tag.h5" --quiet >"$SCRATCH/$tag.log" 2>&1 </dev/null || rc=$?
  wall=$(elapsed "$started")
  if [ "$rc" -ne 0 ]; then
    tail -5 "$SCRATCH/$tag.log" >&2
    bad "$short: exit code $rc"
    continue
  fi
  check_trace "$SCRATCH/$tag.h5" --kind sgd --peers "$PEERS" --trials "$(value_of --trials)" --complete 1 \
    --steps "$(value_of --steps)" --local-steps "$(value_of --local-steps)" --eval-every "$(value_of --eval-every)"
  if ! timeout 120 "$SEQ" --engine sequential --peers "$PEERS" "${args[@]}" --out "$SCRATCH/$tag.seq.h5" --quiet \
      >"$SCRATCH/$tag.seq.log" 2>&1 </dev/null; then
    bad_with_report "$short: the sequential engine failed:" "$(tail -5 "$SCRATCH/$tag.seq.log")"
    continue
  fi
  if report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/$tag.h5" "$SCRATCH/$tag.seq.h5" 2>&1 <<'PY'
import math, sys
import h5py
from avbench.trials import all_trial_columns, all_trial_info


def trials_of(f):
    """[(trial index, {column: rows}), ...] of the open trace f, in writing order."""
    return [(info["trial"], columns) for info, columns in zip(all_trial_info(f), all_trial_columns(f))]


def rows_of(path):
    """Every trial's rows of a training trace, as dicts with the trial's number."""
    rows = []
    with h5py.File(path, "r") as f:
        for k, columns in trials_of(f):
            rows += [dict({name: v[i] for name, v in columns.items()}, trial=int(k)) for i in range(len(columns["step"]))]
    return rows


rows = rows_of(sys.argv[2])
problems = []
worst, worst_column = 0.0, "-"  # the largest difference of a float column, relative to its scale
with h5py.File(sys.argv[1], "r") as f:
    trials = trials_of(f)
    if sorted(int(k) for k, _ in trials) != sorted({int(r["trial"]) for r in rows}):
        problems.append(f"trials {sorted(k for k, _ in trials)} vs sequential {sorted({r['trial'] for r in rows})}")
    # A logistic gap is loss - f* as computed (a quadratic's is a quadratic form in
    # x_bar - x*): known to the rounding of the loss, not to its own.
    logistic = f["optimum"].attrs["method"] == "newton"
    test_samples = 4096  # synthetic logistic: the held-out set (docs/trace-format.md)
    for k, g in trials:
        want = [r for r in rows if int(r["trial"]) == int(k)]
        if len(want) != len(g["step"]):
            problems.append(f"trial {k}: {len(g['step'])} rows, sequential {len(want)}")
            continue
        initial_gap = float(want[0]["gap"])
        for i, w in enumerate(want):
            at = f"trial {k} step {w['step']}"
            for name in ("step", "round", "alive", "groups", "failed_groups", "bytes_sent"):
                if int(g[name][i]) != int(w[name]):
                    problems.append(f"{at} {name}: {int(g[name][i])} vs sequential {w[name]}")
            for name in ("loss", "gap", "relative_gap", "distance", "consensus"):
                got, exp = float(g[name][i]), float(w[name])
                scale = abs(exp)
                if name == "consensus":
                    scale = max(scale, float(w["distance"]) + exp)
                elif name == "gap" and logistic:
                    scale = max(scale, abs(float(w["loss"])))
                elif name == "relative_gap" and logistic:
                    scale = max(scale, abs(float(w["loss"])) / initial_gap)
                if not (math.isfinite(got) and math.isfinite(exp)):
                    problems.append(f"{at} {name}: {got!r} vs sequential {exp!r} (not finite)")
                    continue
                difference = abs(got - exp)
                if exp != 0 and difference / abs(exp) > worst:
                    worst, worst_column = difference / abs(exp), name
                if difference > 1e-12 * scale:
                    problems.append(f"{at} {name}: {got!r} vs sequential {exp!r} (difference {got - exp:.3g})")
            got, exp = float(g["accuracy"][i]), float(w["accuracy"])
            if math.isnan(exp) or math.isnan(got):
                if math.isnan(exp) != math.isnan(got):
                    problems.append(f"{at} accuracy: {got!r} vs sequential {exp!r}")
            elif abs(got - exp) > (1 + 1e-9) / test_samples:
                problems.append(f"{at} accuracy: {got!r} vs sequential {exp!r} (more than one sample)")
last = rows[-1]
print("\n".join(problems[:8] + ([f"... {len(problems)} problems in all"] if len(problems) > 8 else []))
      if problems else
      f"{len(rows)} rows agree (largest relative difference {worst:.2g}, {worst_column}; last row: step {last['step']}, "
      f"relative gap {float(last['relative_gap']):.3g}, consensus {float(last['consensus']):.3g}, "
      f"alive {last['alive']}, groups {last['groups']}, failed {last['failed_groups']})")
sys.exit(1 if problems else 0)
PY
  ); then
    ok "$short: $report (sgd_bench $wall s)"
  else
    bad "$short: the trace differs from the sequential engine's:"
    printf '%s\n' "$report" | sed 's/^/    /' >&2
  fi
done
say "wall time: $(elapsed "$total_started") s"
finish
