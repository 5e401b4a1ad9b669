#!/usr/bin/env bash
# One fuzzing campaign for ctest: copies the seed corpus to a scratch folder and
# fuzzes from there, so that the tree stays as committed.
#
#   run_fuzzer.sh FUZZER SEED_DIR SCRATCH_DIR SECONDS
#
# Fails (libFuzzer's exit code) on a crash, an uncaught exception, a sanitizer
# report, a leak, an input slower than 10 s or a run above 2 GB; the input that did
# it is left in SCRATCH_DIR as crash-*, timeout-*, leak-* or oom-*, to be replayed
# with `FUZZER FILE`.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 FUZZER SEED_DIR SCRATCH_DIR SECONDS" >&2; exit 2; }
# Absolute paths: the fuzzer runs from the scratch folder.
fuzzer=$(realpath "$1") seeds=$(realpath "$2") scratch=$(realpath -m "$3") seconds=$4
rm -rf "$scratch"
mkdir -p "$scratch/corpus"
cp "$seeds"/* "$scratch/corpus/"
# The sanitized suite's ctest preset turns leak checks off and lets impossible
# allocations return null (for Open MPI and the apps' error paths); a fuzzer wants
# both reported. Later ASAN_OPTIONS entries win.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:allocator_may_return_null=0"
cd "$scratch"   # relative paths a fuzzed input names stay inside the scratch folder
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$scratch/" "$scratch/corpus"
