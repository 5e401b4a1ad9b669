#!/usr/bin/env bash
# Asynchronous protocols on the sequential engine against SMPI (docs/simulation.md,
# "Asynchronous protocols"): every protocol's [smpi_exact] cases must write the
# same bits on both engines (values, counters) and times within 0.1%; its
# [smpi_statistics] cases, 30 trials on each, must agree in distribution
# (tests/scripts/compare_statistics.py: rounds and seconds to each target within 3
# standard errors). A case line is "averaging|sgd PEERS flags...".
#
#   tests/scripts/test_smpi_async.sh SEQ_AVERAGING SEQ_SGD SMPI_AVERAGING SMPI_SGD
#   (the first two built in build/, the others in build-smpi/)
source "$(dirname "$0")/common.sh"

need_args 4 $# SEQ_AVERAGING SEQ_SGD SMPI_AVERAGING SMPI_SGD
program_arg SEQ_AVG "$1" "sequential averaging_bench"
program_arg SEQ_SGD "$2" "sequential sgd_bench"
program_arg SMPI_AVG "$3" "SMPI averaging_bench"
program_arg SMPI_SGD "$4" "SMPI sgd_bench"

# run_pair TAG KIND PEERS TRIALS ARGS...: $SCRATCH/seq-TAG.h5 and $SCRATCH/smpi-TAG.h5
run_pair() {
  local tag=$1 kind=$2 peers=$3 trials=$4 seq smpi rc=0 started
  shift 4
  case $kind in
    averaging) seq=$SEQ_AVG smpi=$SMPI_AVG ;;
    sgd) seq=$SEQ_SGD smpi=$SMPI_SGD ;;
    *) die "a case must start with averaging or sgd, not '$kind'" ;;
  esac
  started=$(now)
  timeout -k 10 400 "$AVB_SMPIRUN" -n "$peers" "$smpi" "$@" --trials "$trials" --out "$SCRATCH/smpi-$tag.h5" --quiet \
    >"$SCRATCH/smpi-$tag.log" 2>&1 </dev/null || rc=$?
  [ "$rc" -eq 0 ] || die "$tag: SMPI failed (exit $rc): $(tail -3 "$SCRATCH/smpi-$tag.log")"
  timeout -k 10 120 "$seq" --engine sequential --peers "$peers" "$@" --trials "$trials" --out "$SCRATCH/seq-$tag.h5" \
    --quiet >"$SCRATCH/seq-$tag.log" 2>&1 </dev/null || rc=$?
  [ "$rc" -eq 0 ] || die "$tag: the sequential engine failed (exit $rc): $(tail -3 "$SCRATCH/seq-$tag.log")"
  say "$tag: $kind on $peers peers, $trials trials, both engines ($(elapsed "$started") s)"
}

verdict() {  # verdict TAG WHAT COMMAND...: a pass quoting its output, or a failure with it
  local tag=$1 what=$2 report
  shift 2
  if report=$(timeout 120 "$@" 2>&1); then
    ok "$tag: ${report//$'\n'/; }"
  else
    bad_with_report "$tag: $what" "$report"
  fi
}

# run_section HARNESS TRIALS SEED COMPARER [ITS OPTIONS]: every case of the section.
run_section() {
  local harness=$1 trials=$2 seed=$3 k=0 line protocol kind peers rest tag
  shift 3
  protocol_cases "$harness" "$SEQ_AVG"
  for line in "${CASES[@]}"; do
    read -r protocol kind peers rest <<<"$line"
    read -r -a flags <<<"$rest"
    tag=$harness$((k++))
    run_pair "$tag" "$kind" "$peers" "$trials" --protocol "$protocol" "${flags[@]}" --seed "$seed"
    verdict "$tag ($line)" "the engines disagree:" "$AVB_PYTHON" "$AVB_TESTS_DIR/$1" \
      "$SCRATCH/seq-$tag.h5" "$SCRATCH/smpi-$tag.h5" "${@:2}"
  done
}

run_section smpi_exact 3 7 compare_sequential.py --time-within 0.001
run_section smpi_statistics 30 11 compare_statistics.py
finish
