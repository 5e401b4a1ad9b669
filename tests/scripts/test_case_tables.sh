#!/usr/bin/env bash
# The protocols' case tables against the catalog (tests/scripts/cases.py check):
# every protocol of the catalog has tests/protocols/NAME/cases.txt with a section
# for every harness (its cases, or why it has none), no table without a protocol,
# the [cli] cases run every failure semantics the protocol takes, and every
# [theory] suite exists in unit_tests or mpi_tests. Both programs list one catalog.
#
#   tests/scripts/test_case_tables.sh AVERAGING_BENCH SGD_BENCH UNIT_TESTS MPI_TESTS
source "$(dirname "$0")/common.sh"

need_args 4 $# AVERAGING_BENCH SGD_BENCH UNIT_TESTS MPI_TESTS
program_arg BIN "$1" averaging_bench
program_arg SGD_BIN "$2" sgd_bench
program_arg UNIT "$3" unit_tests
program_arg MPI_TESTS "$4" mpi_tests

timeout 60 "$BIN" --list-protocols >"$SCRATCH/averaging.tsv" || die "averaging_bench --list-protocols failed"
timeout 60 "$SGD_BIN" --list-protocols >"$SCRATCH/sgd.tsv" || die "sgd_bench --list-protocols failed"
if cmp -s "$SCRATCH/averaging.tsv" "$SCRATCH/sgd.tsv"; then
  ok "averaging_bench and sgd_bench list the same catalog ($(grep -vc '^#' "$SCRATCH/averaging.tsv") protocols)"
else
  bad "averaging_bench and sgd_bench list different catalogs: $(diff "$SCRATCH/averaging.tsv" "$SCRATCH/sgd.tsv" | head -4)"
fi
if report=$(timeout 120 "$AVB_PYTHON" "$AVB_TESTS_DIR/cases.py" check --catalog "$SCRATCH/averaging.tsv" \
    --tests "$UNIT" --tests "$MPI_TESTS" 2>&1); then
  ok "$report"
else
  bad_with_report "the case tables do not cover the catalog:" "$report"
fi

# The check itself: a protocol the catalog gains without a table is named.
{ cat "$SCRATCH/averaging.tsv"; printf 'dummy\tyes\tsurvivors\tsurvivors\t\ta protocol with no table\n'; } \
  >"$SCRATCH/dummy.tsv"
if report=$("$AVB_PYTHON" "$AVB_TESTS_DIR/cases.py" check --catalog "$SCRATCH/dummy.tsv" 2>&1); then
  bad "cases.py check passed a catalog with a protocol that has no table"
elif [[ $report == *"protocol 'dummy' of the catalog has no case table: create tests/protocols/dummy/cases.txt"* ]]; then
  ok "a catalog protocol without a table is named: ${report%%$'\n'*}"
else
  bad_with_report "cases.py check failed on the dummy protocol without naming its table:" "$report"
fi
for harness in cli cross_engine sequential_1024 sgd_sequential_1024; do
  if "$AVB_PYTHON" "$AVB_TESTS_DIR/cases.py" "$harness" --catalog "$SCRATCH/dummy.tsv" >/dev/null 2>&1; then
    bad "cases.py $harness gave cases for a catalog with a protocol that has no table"
  else
    ok "cases.py $harness refuses a catalog protocol without a table"
  fi
done
finish
