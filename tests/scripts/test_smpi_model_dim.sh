#!/usr/bin/env bash
# --model-dim against the runs it stands for, at 64 simulated peers.
#
#   tests/scripts/test_smpi_model_dim.sh SEQUENTIAL_BINARY SMPI_BINARY
#
# For each protocol, three SMPI runs of the same trial: --dim 1 --model-dim 100000,
# --dim 100000, and --dim 1. compare_model_dim.py requires the first to have the
# second's bytes_sent, its final simulated time within 2%, and the third's values
# bit for bit (swarm, asynchronous: only its first round's, as later interactions
# follow the simulated time, the model's). Then the sequential engine (SEQUENTIAL_BINARY, the Open MPI build's
# averaging_bench) alike for the protocols it runs: its estimate with
# --model-dim must match its estimate with --dim 100000.
source "$(dirname "$0")/common.sh"

need_args 2 $# SEQUENTIAL_BINARY SMPI_BINARY
program_arg SEQ "$1" "Open MPI build's averaging_bench" "build the default preset: cmake --build build --target averaging_bench"
program_arg BIN "$2" "SMPI program"

PEERS=64
MODEL=100000
configs=(
  "allreduce --collective ring"
  "moshpit --grid 8x8"
  "gossip --topology torus"
)
sequential_configs=("${configs[@]}")
configs+=("swarm --topology complete")

# run_triple ENGINE TAG ARGS...: the model, direct and same-dim runs, then the check.
run_triple() {
  local engine=$1 tag=$2 started rc report kind timing=()
  shift 2
  [ "$tag" != swarm ] || timing=(--timing-dependent)
  started=$(now)
  for kind in model direct same; do
    local dims=(--dim 1 --model-dim "$MODEL")
    [ "$kind" != direct ] || dims=(--dim "$MODEL")
    [ "$kind" != same ] || dims=(--dim 1)
    local out="$SCRATCH/$engine-$tag-$kind.h5" args=("$@" "${dims[@]}" --rounds 2 --trials 1 --seed 17 --quiet)
    rc=0
    if [ "$engine" = smpi ]; then
      timeout -k 10 300 "$AVB_SMPIRUN" -n "$PEERS" "$BIN" "${args[@]}" --out "$out" >"$out.log" 2>&1 </dev/null || rc=$?
    else
      timeout 120 "$SEQ" --engine sequential --peers "$PEERS" "${args[@]}" --out "$out" >"$out.log" 2>&1 </dev/null ||
        rc=$?
    fi
    if [ "$rc" -ne 0 ]; then
      bad_with_report "$engine $tag $kind: exited $rc:" "$(tail -5 "$out.log")"
      return
    fi
  done
  if report=$(timeout 60 "$AVB_PYTHON" "$AVB_TESTS_DIR/compare_model_dim.py" "$SCRATCH/$engine-$tag-model.h5" \
                "$SCRATCH/$engine-$tag-direct.h5" "$SCRATCH/$engine-$tag-same.h5" --time-within 0.02 "${timing[@]}" 2>&1); then
    ok "$engine $tag: $report ($(elapsed "$started") s)"
  else
    bad_with_report "$engine $tag: --model-dim is not the run it stands for:" "$report"
  fi
}

for config in "${configs[@]}"; do
  read -r protocol rest <<<"$config"
  read -r -a extra <<<"$rest"
  run_triple smpi "$protocol" --protocol "$protocol" "${extra[@]}"
done
for config in "${sequential_configs[@]}"; do
  read -r protocol rest <<<"$config"
  read -r -a extra <<<"$rest"
  run_triple sequential "$protocol" --protocol "$protocol" "${extra[@]}"
done
finish
