#!/usr/bin/env bash
# Same seed, same results on every engine: 8 peers under Open MPI (real processes),
# under SMPI (simulated) and on the sequential engine (one process) must write
# bit-identical per-round columns.
#
#   tests/scripts/test_cross_engine.sh MPI_BINARY SMPI_BINARY
#
# Every random draw is keyed by (seed, round, peer), and the collectives fix their
# order of summation, so nothing may depend on the engine. Compared exactly (float
# bits), every trial and every row: round, variance, error, mean_drift, alive,
# groups, failed_groups, bytes_sent, the trial attributes and every /summary column
# but time (wall-clock seconds under Open MPI, simulated seconds under SMPI).
# Failures are injected (rate 0.05 on 8 peers: some peer fails in about a third of
# the rounds; and 0.3) under both `survivors` and `abort`, and the test checks
# that they did happen. The vector length 5 does not divide among 8 peers, so
# uneven pieces are exercised too; so is each all-reduce algorithm the program
# offers, moshpit and random-groups under all three failure semantics, the
# waiting policies (which cut the same late peers on every engine, also on a real
# MPI, where the work they model takes no time), and the graph protocols.
source "$(dirname "$0")/common.sh"

need_args 2 $# MPI_BINARY SMPI_BINARY
program_arg MPI_BIN "$1" "Open MPI program" "build the default preset first: cmake --preset default && cmake --build build"
program_arg SMPI_BIN "$2" "SMPI program"
NP=8

# The third engine: every peer in one process (MPI_BIN --engine sequential,
# common.sh's run_sequential), with --detection-timeout too: the peers that wait out
# a failure, hence the detection_time column, must be the same.

# Every all-reduce algorithm the program accepts (a singleton run of 0 rounds
# tells); add new ones to this list. Without --collective, just the default.
collectives=()
if timeout 30 "$MPI_BIN" --help 2>/dev/null | grep -q -- '--collective'; then
  for c in ring doubling tree; do
    if timeout 30 "$MPI_BIN" --collective "$c" --rounds 0 --trials 1 --quiet >/dev/null 2>&1; then
      collectives+=("$c")
    fi
  done
  [ ${#collectives[@]} -gt 0 ] || die "the program accepts none of --collective ring, doubling, tree"
else
  collectives=(default)
fi
say "collectives: ${collectives[*]}"

# semantics:fail-rate. At rate 0.05 the variance soon reaches exactly 0 (in the
# first round without failures), after which every row is trivially equal; at 0.3
# with survivors, partial groups average for many rounds, so the floating-point
# sums of most rows are compared.
configs=()
for config in survivors:0.05 abort:0.05 survivors:0.3; do
  semantics=${config%%:*} rate=${config#*:}
  for collective in "${collectives[@]}"; do
    c="allreduce --fail-rate $rate --on-failure $semantics"
    [ "$collective" = default ] || c+=" --collective $collective"
    configs+=("$c")
  done
done
# Then every protocol's [cross_engine] cases (tests/protocols/NAME/cases.txt): the
# group protocols under each failure semantics (partial moves the mean, and its
# failure phases are drawn from their own stream: the same on every engine too),
# the waiting policies, the graph protocols and their quantizers.
protocol_cases cross_engine "$MPI_BIN"
configs+=("${CASES[@]}")
for config in "${configs[@]}"; do
    read -r -a protocol_args <<<"$config"
    args=(--protocol "${protocol_args[@]}" --dim 5 --rounds 40 --trials 3 --seed 12345)
    tag=$(printf '%s' "$config" | tr -d ' -' | tr '.' 'p')
    run_both_engines "$tag" "${args[@]}"
    for engine in mpi smpi; do
      check_trace "$SCRATCH/$engine-$tag.h5" --peers "$NP" --trials 3 --complete 1 --rounds 40
    done
    run_sequential "$tag" "${args[@]}"
    compare_engines "$tag" <<'EOF'
import sys
import h5py
import numpy as np

from avbench.trials import all_trial_columns, all_trial_info, trial_targets
from bitwise import same

COLUMNS = ["round", "variance", "error", "mean_drift", "late", "alive", "groups", "failed_groups",
           "decode_failures", "bytes_sent"]

problems = []
with h5py.File(sys.argv[1], "r") as m, h5py.File(sys.argv[2], "r") as s:
    if m.attrs["engine"] != "openmpi" or s.attrs["engine"] != "smpi":
        problems.append(f"engines are {m.attrs['engine']!r} and {s.attrs['engine']!r}, expected openmpi and smpi")
    for name in ("trial", "rows", "round"):
        if not same(m["trials"][name][()], s["trials"][name][()]):
            problems.append(f"/trials/{name}: {m['trials'][name][()]} vs {s['trials'][name][()]}")
    if not same(trial_targets(m), trial_targets(s)):
        problems.append(f"targets {trial_targets(m)} vs {trial_targets(s)}")
    columns_m, columns_s = all_trial_columns(m, COLUMNS), all_trial_columns(s, COLUMNS)
    info_m, info_s = all_trial_info(m), all_trial_info(s)
    failed_rounds = failed_groups = 0
    for k, (a, b, ia, ib) in enumerate(zip(columns_m, columns_s, info_m, info_s)):
        for name in COLUMNS:
            if name not in a or name not in b or not same(a[name], b[name]):
                x, y = a.get(name, np.zeros(0)), b.get(name, np.zeros(0))
                n = min(len(x), len(y))
                diff = [i for i in range(n) if not same(x[i:i + 1], y[i:i + 1])]
                where = f"first at row {diff[0]}: {x[diff[0]]!r} vs {y[diff[0]]!r}" if diff else f"lengths {len(x)} vs {len(y)}"
                problems.append(f"trial {k} {name} differs ({where})")
        for name in sorted(set(ia) | set(ib)):
            if ia.get(name) != ib.get(name):
                problems.append(f"trial {k} {name}: {ia.get(name)!r} vs {ib.get(name)!r}")
        alive = a["alive"]
        failed_rounds += int((alive[1:] < m.attrs["n_peers"]).sum())
        failed_groups += int(a["failed_groups"].sum())
    for name in sorted(set(m["summary"]) | set(s["summary"])):
        if name == "time":
            continue
        if name not in m["summary"] or name not in s["summary"]:
            problems.append(f"/summary/{name} exists in one trace only")
        elif not same(m["summary"][name][()], s["summary"][name][()]):
            problems.append(f"/summary/{name}: {m['summary'][name][()]} vs {s['summary'][name][()]}")
    if failed_rounds == 0:
        problems.append("no peer ever failed: failures were not exercised")
    v = columns_m[0]["variance"]
    if not (v[0] > 0 and v[-1] < v[0]):
        problems.append(f"variance did not fall (first {v[0]!r}, last {v[-1]!r}): nothing was averaged")
    rows = sum(len(c["round"]) for c in columns_m)
    moving = sum(int((c["variance"] > 0).sum()) for c in columns_m)

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"identical: {len(COLUMNS)} columns x {rows} rows ({moving} with variance > 0), trial attributes, "
      f"/summary but time; {failed_rounds} rounds with failed peers, {failed_groups} failed groups")
EOF
done
finish
