#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs the dependencies, builds
# the SMPI engine, averages on 1024 simulated peers with every protocol listed
# below (1 value per peer, failure rate 0.001 per peer and round, 20 trials of 50
# rounds), and prints one comparison line per protocol.
#
#   scripts/demo.sh            (from any folder; as root, or with sudo for apt-get)
#
# Writes results/demo-<protocol>.h5 for each protocol, and results/demo.h5, a copy
# of the allreduce trace (the reference every other protocol is compared with).
# Existing files of those names are replaced.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

# Protocols to compare; add a name here when its implementation lands.
protocols=(allreduce random-groups moshpit)
peers=1024
run_args=(--fail-rate 0.001 --trials 20 --rounds 50 --seed 0)

started=$SECONDS
echo "== demo: installing dependencies"
scripts/install-deps.sh
echo "== demo: building the SMPI engine (build-smpi/)"
cmake --preset smpi >/dev/null
cmake --build build-smpi -j"$(nproc)" --target averaging_bench >/dev/null

mkdir -p results
traces=()
for p in "${protocols[@]}"; do
  out=results/demo-$p.h5
  echo "== demo: $p on $peers simulated peers -> $out"
  t0=$SECONDS
  scripts/smpirun.sh -n "$peers" build-smpi/apps/averaging_bench --protocol "$p" "${run_args[@]}" \
    --out "$out" --overwrite --quiet
  echo "   ($((SECONDS - t0)) s)"
  traces+=("$out")
done
cp results/demo-allreduce.h5 results/demo.h5

echo
echo "== demo: comparison ($peers peers, ${run_args[*]}; mean ± standard error over trials)"
/usr/bin/python3 scripts/python/compare_traces.py "${traces[@]}"
echo
echo "demo: done in $((SECONDS - started)) s; traces in results/ (read them with h5py, see docs/trace-format.md)"
