#!/usr/bin/env bash
# Everything CI runs: installs the dependencies, builds both engines and runs every
# test. Stops at the first failure.
#
#   scripts/test.sh            (from any folder; as root, or with sudo for apt-get)
#   scripts/test.sh --full     and then the randomized campaigns whole, of which CI
#                              runs a slice (about 2 hours more; docs/testing.md)
#
# build/       Open MPI build (preset default): unit, MPI and app script tests
# build-smpi/  SMPI build (preset smpi): MPI tests on simulated peers, 1024-peer run,
#              app script tests, and the cross-engine comparison, which also
#              uses build/ (hence the order); its tests and build/'s run in one
#              ctest (build-suite/)
# build-asan/  the build/ suite again under ASan + UBSan (preset asan, clang), less the
#              tests whose work is Python's (notebooks, summaries, Slurm, docs) and
#              those that only repeat C++ code other tests run there; the longest
#              run a slice of their cases; and libFuzzer on the config, topology,
#              LIBSVM and platform readers, 30 s each (docs/reliability.md)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
exec </dev/null   # nothing here reads input; CI has none
full=0
case "${1:-}" in
  "") ;;
  --full) full=1 ;;
  *) echo "test.sh: error: unknown argument '$1' (accepted: none, or --full)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "test.sh: error: one argument at most (--full), got $#" >&2; exit 2; }

started=$SECONDS
step="start"
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "test.sh: FAILED at step \"$step\" (exit $rc) after $((SECONDS - started)) s" >&2; fi' EXIT
run_step() {
  step=$1
  shift
  echo "== test.sh: $step"
  local t0=$SECONDS
  "$@"
  echo "== test.sh: $step: ok ($((SECONDS - t0)) s)"
}

jobs=$(nproc)
# build/'s and build-smpi/'s tests in one ctest (build-suite/ includes both), so that
# the one ends while the other's tests already run: no core idles at the end of a
# tree's tests. ctest applies a test's properties to every test of its name, so the
# names must differ between the trees; this refuses to run them otherwise.
suite_ctest() {
  mkdir -p build-suite
  printf '# Written by scripts/test.sh: build/ and build-smpi/ as one suite.\nsubdirs("../build" "../build-smpi")\n' \
    >build-suite/CTestTestfile.cmake
  local twice
  twice=$(ctest --test-dir build-suite -N | sed -n 's/^ *Test *#[0-9]*: //p' | sort | uniq -d)
  if [ -n "$twice" ]; then
    echo "test.sh: error: tests named alike in build/ and build-smpi/ (give each a name of its own): $twice" >&2
    return 1
  fi
  ctest --test-dir build-suite "$@"
}
# Debug information as line tables only (-g1): its level does not change the code
# GCC and clang generate (what the tests test), and full information costs a third
# of the compile time; stacks and sanitizer reports still name functions and lines.
lines_only=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1)
run_step "install dependencies" scripts/install-deps.sh
run_step "configure build/ (Open MPI)" cmake --preset default "${lines_only[@]}"
run_step "build build/" cmake --build build -j"$jobs"
run_step "configure build-smpi/ (SMPI)" cmake --preset smpi "${lines_only[@]}"
run_step "build build-smpi/" cmake --build build-smpi -j"$jobs"
run_step "ctest build/ and build-smpi/ (one run: build-suite/)" suite_ctest --output-on-failure -j2
# The Open MPI suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (leak checks off: Open MPI's own allocations at exit would drown ours; impossible
# allocation sizes return null, as glibc does, so the apps' out-of-memory errors are
# tested rather than ASan's own abort).
run_step "configure build-asan/ (ASan + UBSan, libFuzzer; clang)" cmake --preset asan "${lines_only[@]}" \
  -DAVB_FUZZ_SECONDS=30
run_step "build build-asan/" cmake --build build-asan -j"$jobs"
run_step "ctest build-asan/ (with 4 fuzzers x 30 s)" ctest --preset asan -j2

if [ "$full" = 1 ]; then
  # The campaigns whose slices CI runs (size_campaign, smpi_swarm_campaign, fuzz_*),
  # whole, as docs/reliability.md reports them; each run replays from its seed.
  run_step "size campaign, 2000 runs (campaign_sizes.py)" /usr/bin/python3 tests/scripts/campaign_sizes.py \
    --runs 2000 --seed 1 --jobs 2 --progress 100 --bin build/apps/averaging_bench --sgd-bin build/apps/sgd_bench
  run_step "swarm campaign, 2000 runs up to 256 peers (swarm_campaign.py)" /usr/bin/python3 \
    tests/scripts/swarm_campaign.py --runs 2000 --seed 2026 --max-peers 256 --jobs 2 \
    --averaging build-smpi/apps/averaging_bench --sgd build-smpi/apps/sgd_bench
  run_step "configure build-asan/ for 10 minutes a fuzzer" cmake --preset asan -DAVB_FUZZ_SECONDS=600
  run_step "ctest build-asan/ fuzz_* (4 fuzzers x 600 s)" ctest --preset asan -R '^fuzz_' -j2
  run_step "configure build-asan/ back to CI's 30 s" cmake --preset asan -DAVB_FUZZ_SECONDS=30
fi

echo "test.sh: all tests passed in build/, build-smpi/ and build-asan/$([ "$full" = 1 ] && echo ", and the whole campaigns,") in $((SECONDS - started)) s"
echo "test.sh: each test's time and share: scripts/test_budget.py"
