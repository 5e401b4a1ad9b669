#!/usr/bin/env bash
# install_find_package(_smpi): `cmake --install` of a build, then a project of its
# own (tests/install) that finds it with find_package(avbench), registers a
# protocol the library does not have and runs it on 4 ranks (Open MPI, or SMPI's
# simulated ones) and on the sequential engine, checking the exact mean and that
# both engines agree.
#
#   test_install.sh SOURCE_DIR BUILD_DIR mpi MPIEXEC
#   test_install.sh SOURCE_DIR BUILD_DIR smpi
set -euo pipefail
src=$1 build=$2 engine=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
case $engine in
  mpi) run=("$4" -n 4 --oversubscribe) programs=(averaging_bench sgd_bench graph_info) ;;
  smpi) run=("$src/scripts/smpirun.sh" -n 4) programs=(averaging_bench sgd_bench) ;;  # graph_info: Open MPI builds only
  *) fail "engine: '$engine' is not one of {mpi, smpi}" ;;
esac

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for f in "${programs[@]/#/bin/}" lib/libavbench.a include/avbench/protocols/protocol.hpp \
         include/avbench/protocols/registration.hpp lib/cmake/avbench/avbenchConfig.cmake \
         lib/cmake/avbench/avbenchConfigVersion.cmake lib/cmake/avbench/avbenchTargets.cmake; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
# The installed program runs.
"${run[@]}" "$prefix/bin/averaging_bench" --rounds 3 --trials 1 --quiet --out "$work/run.h5" > /dev/null \
  || fail "the installed averaging_bench"
[ -s "$work/run.h5" ] || fail "the installed averaging_bench wrote no trace"

# The project sees the install only: a copy of tests/install, outside the source tree.
cp -r "$src/tests/install" "$work/project"
cmake -S "$work/project" -B "$work/ext" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/configure.log" || { cat "$work/configure.log"; fail "configure"; }
if grep -q -- "$src/src" "$work/ext/compile_commands.json"; then fail "the project compiled against the source tree"; fi
cmake --build "$work/ext" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }

out=$("${run[@]}" "$work/ext/dimension_exchange") || fail "dimension_exchange on 4 ranks ($engine)"
echo "$out"
[[ $out == "dimension-exchange: 4 peers, 3 trials: exact mean after 2 rounds, MPI and sequential rows agree" ]] \
  || fail "unexpected output: $out"
echo "install_find_package ($engine): ok"
