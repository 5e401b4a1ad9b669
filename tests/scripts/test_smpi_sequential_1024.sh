#!/usr/bin/env bash
# Every protocol on 1024 simulated peers under SMPI against the sequential engine,
# the cases of each protocol's table (tests/protocols/NAME/cases.txt,
# [sequential_1024]).
#
#   tests/scripts/test_smpi_sequential_1024.sh SEQUENTIAL_BINARY SMPI_BINARY
#
# SEQUENTIAL_BINARY is build/apps/averaging_bench (run with --engine sequential),
# SMPI_BINARY build-smpi/apps/averaging_bench. Both run the same trials, and
# compare_sequential.py requires the same counters, targets and metric bits (an
# all-reduce's metrics within 1e-12 of the initial variance: SMPI sums along a
# ring or a tree). (GoogleTest cannot run on 1024 SMPI ranks: each privatized copy
# takes a pthread key, and there are only 1024.)
source "$(dirname "$0")/common.sh"

need_args 2 $# SEQUENTIAL_BINARY SMPI_BINARY
program_arg SEQ "$1" "Open MPI build's averaging_bench" "build the default preset: cmake --build build --target averaging_bench"
program_arg BIN "$2" "SMPI program"
PEERS=1024
common=(--dim 2 --rounds 8 --trials 2 --seed 77)

# Every protocol's [sequential_1024] cases (tests/protocols/NAME/cases.txt).
protocol_cases sequential_1024 "$AVB_SMPIRUN" -n 1 "$BIN"
configs=("${CASES[@]}")
number=0
for config in "${configs[@]}"; do
  read -r -a args <<<"$config"
  number=$((number + 1))
  smpi_against_sequential "$config" "case$number" "$PEERS" "" "" "" --protocol "${args[@]}" "${common[@]}" --quiet ||
    true  # reported; the other cases still run
done

# One-peer exponential graph, 1024 = 2^10 peers, no failures: gossip and push-sum
# hold the exact average after log2 N = 10 rounds, and not before.
for protocol in gossip pushsum; do
  rc=0
  timeout -k 10 300 "$AVB_SMPIRUN" -n "$PEERS" "$BIN" --protocol "$protocol" --topology one-peer-exp --trials 2 \
    --rounds 10 --seed 5 --out "$SCRATCH/exact-$protocol.h5" --quiet >"$SCRATCH/exact-$protocol.log" 2>&1 \
    </dev/null || rc=$?
  [ "$rc" -eq 0 ] || { bad "$protocol one-peer-exp: exit code $rc"; continue; }
  if report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/exact-$protocol.h5" <<'PY'
import sys
from avbench.trials import all_trial_columns
v = [c["variance"] for c in all_trial_columns(sys.argv[1], ["variance"])]
print("variance after rounds 9 and 10:", [(f"{x[9]:.2g}", f"{x[10]:.2g}") for x in v])
sys.exit(0 if all(x[10] < 1e-25 and x[9] > 1e-6 for x in v) else 1)
PY
  ); then ok "$protocol, one-peer-exp: exact in 10 rounds: $report"; else bad "$protocol, one-peer-exp: $report"; fi
done
finish
