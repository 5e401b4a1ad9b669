# The pass/fail vocabulary of the test scripts: sourced by common.sh (tests/scripts)
# and by experiments/notebook_test.sh, not run. The sourcing script sets TEST_NAME,
# the prefix of every line.
AVB_FAILURES=0
say() { echo "$TEST_NAME: $*"; }
ok() { echo "$TEST_NAME: ok: $*"; }
# Records a failed check and carries on, so one run reports every broken case.
bad() {
  echo "$TEST_NAME: FAIL: $*" >&2
  AVB_FAILURES=$((AVB_FAILURES + 1))
}
# Records a failure described by MESSAGE, with the REPORT that explains it indented below.
bad_with_report() {
  bad "$1"
  printf '%s\n' "$2" | sed 's/^/    /' >&2
}
# Ends the test now (for failures that make later checks meaningless).
die() {
  echo "$TEST_NAME: FAIL: $*" >&2
  exit 1
}
# The last call of every script: non-zero exit when any check failed.
finish() {
  if [ "$AVB_FAILURES" -ne 0 ]; then
    echo "$TEST_NAME: $AVB_FAILURES check(s) FAILED" >&2
    exit 1
  fi
  echo "$TEST_NAME: all checks passed"
}
