#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs the dependencies, builds
# both engines' averaging_bench, averages on 1024 simulated peers with every
# protocol family (the list below), and prints one comparison line per protocol,
# then each protocol's paired differences against allreduce (avbench compare); then
# trains with local SGD on the same number of peers, one line per training method
# (all-reduce every step, Moshpit SGD, DiLoCo, Streaming DiLoCo, NoLoCo, D-PSGD,
# gradient tracking, AD-PSGD).
# Every protocol gets the same seeds, failures (rate 0.001 per peer and round),
# targets (variance 1e-4 and 1e-9) and cap (60 rounds, enough for the graph
# protocols to reach 1e-9); each trial stops once the variance is below 1e-9. So
# the table compares what it takes to reach the targets: rounds, bytes sent per
# peer and time, mean ± standard error over the trials.
#
# Engines: the synchronous protocols run on the sequential engine (build/,
# --engine sequential), which gives SMPI's values bit for bit and an α–β estimate
# of its simulated time (docs/architecture.md, Engines) in a fraction of a second,
# where SMPI (build-smpi/), simulating every message of 1024 peers, would take
# minutes for the 20 trials of all six (the graph protocols need tens of rounds in
# which every peer sends). swarm, asynchronous, runs there too, as events in
# simulated time (docs/simulation.md, "Asynchronous protocols"); one trial of it
# then runs on SMPI beside, and the demo prints how much faster the 20 trials were
# than that one. The table names each row's engine, and says what a round is for swarm.
# Only the first run installs and builds: once the packages are present and the
# builds are up to date, those two steps are no-ops (a second or two).
#
#   scripts/demo.sh            (from any folder; as root, or with sudo for apt-get)
#
# Writes results/demo-<protocol>.h5 (and the run's own output, .log) for each
# protocol, results/demo-sgd-<method>.h5 for each training method, results/demo.h5, a copy of the allreduce trace (the reference every
# other protocol is compared with), and
# results/demo.png, the variance against rounds per protocol (geometric mean over the
# trials, ±1 standard error band; a trial that stopped holds its last value; drawn
# with python/avbench, docs/analysis.md). Existing files of those names are replaced.
# The README gives its wall time.
#
# For tests, the environment may change: AVB_DEMO_PEERS (1024), AVB_DEMO_OUT (the
# folder, results), AVB_DEMO_SETUP (1; 0 skips installing and building) and
# AVB_DEMO_BIN, AVB_DEMO_SMPI_BIN (build/apps, build-smpi/apps).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

# protocol engine trials cap [flags of that protocol]: every family avbench has.
runs=(
  "allreduce sequential 20 60"
  "random-groups sequential 20 60"
  "moshpit sequential 20 60"
  "gossip sequential 20 60 --topology exp"
  "pushsum sequential 20 60"
  "pairwise sequential 20 60"
  "swarm sequential 20 60"
)
peers=${AVB_DEMO_PEERS:-1024}
out=${AVB_DEMO_OUT:-results}
bin=${AVB_DEMO_BIN:-build/apps}
smpi_bin=${AVB_DEMO_SMPI_BIN:-build-smpi/apps}
case "$peers" in '' | *[!0-9]* | 0 | 1) echo "demo.sh: error: AVB_DEMO_PEERS '$peers' must be a whole number >= 2" >&2; exit 2 ;; esac
# --stop-at-target ends a trial once the variance is below 1e-9 (the last target);
# --rounds is only the cap.
run_args=(--fail-rate 0.001 --stop-at-target --seed 0)

started=$SECONDS
if [ "${AVB_DEMO_SETUP:-1}" != 0 ]; then
  echo "== demo: installing dependencies"
  scripts/install-deps.sh
  echo "== demo: building averaging_bench on SMPI (build-smpi/) and Open MPI (build/, for the sequential engine)"
  cmake --preset smpi >/dev/null
  cmake --build build-smpi -j"$(nproc)" --target averaging_bench >/dev/null
  cmake --preset default >/dev/null
  cmake --build build -j"$(nproc)" --target averaging_bench sgd_bench >/dev/null
fi

mkdir -p "$out"
traces=()
for run in "${runs[@]}"; do
  read -r p engine trials cap flags <<<"$run"
  read -r -a flags <<<"${flags:-}"
  trace=$out/demo-$p.h5
  echo "== demo: $p on $peers simulated peers ($engine) -> $trace"
  t0=$SECONDS
  if [ "$engine" = smpi ]; then
    launch=(scripts/smpirun.sh -n "$peers" "$smpi_bin/averaging_bench")
  else
    launch=("$bin/averaging_bench" --engine sequential --peers "$peers")
  fi
  # Its own table goes to a log; the comparison below has the numbers.
  if ! "${launch[@]}" --protocol "$p" "${flags[@]}" "${run_args[@]}" --trials "$trials" --rounds "$cap" \
    --out "$trace" --overwrite --quiet >"$out/demo-$p.log" 2>&1; then
    tail -n 5 "$out/demo-$p.log" >&2
    echo "demo.sh: error: the $p run failed (its output: $out/demo-$p.log)" >&2
    exit 1
  fi
  echo "   ($((SECONDS - t0)) s)"
  traces+=("$trace")
done
# swarm's 20 trials against one trial of it on SMPI, side by side.
echo "== demo: swarm, one trial on SMPI ($peers peers) -> $out/demo-swarm-smpi.h5"
t0=$(date +%s.%N)
scripts/smpirun.sh -n "$peers" "$smpi_bin/averaging_bench" --protocol swarm "${run_args[@]}" --trials 1 --rounds 60 \
  --out "$out/demo-swarm-smpi.h5" --overwrite --quiet >"$out/demo-swarm-smpi.log" 2>&1 ||
  { tail -n 5 "$out/demo-swarm-smpi.log" >&2; echo "demo.sh: error: swarm's SMPI run failed" >&2; exit 1; }
smpi_seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
sequential_seconds=$(/usr/bin/python3 -c "import h5py,sys; print('%.3f' % h5py.File(sys.argv[1])['/'].attrs['run_seconds'])" "$out/demo-swarm.h5")
awk -v s="$sequential_seconds" -v m="$smpi_seconds" \
  'BEGIN { printf "speed of swarm: 20 trials on the sequential engine in %s s, one trial on SMPI in %s s: %.0fx\n", s, m, m / s }'

cp "$out/demo-allreduce.h5" "$out/demo.h5"

echo
echo "== demo: comparison ($peers peers, ${run_args[*]}; mean ± standard error over trials)"
scripts/avbench compare "${traces[@]}"

echo
echo "== demo: figure -> $out/demo.png"
PYTHONPATH=python /usr/bin/python3 - "$out/demo.png" "${traces[@]}" <<'EOF'
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

import avbench

df = avbench.load_sweep(sys.argv[2:], columns=["variance"])
fig, ax = plt.subplots(figsize=(7.5, 4.8))
avbench.plot_metric(df, x="round", y="variance", by="protocol", ax=ax, lw=1.6)
for target in (1e-4, 1e-9):
    ax.axhline(target, color="0.5", lw=0.8, ls=":")
n = int(df["peers"].iat[0])
ax.set_title(f"{n} simulated peers, failure rate {df['fail-rate'].iat[0]:g}: variance across peers\n"
             "(geometric mean over trials, band ±1 standard error; exact averages drawn at 1e-30;\n"
             "swarm's round: one asynchronous interaction started by every peer)", fontsize=9)
fig.tight_layout()
fig.savefig(sys.argv[1], dpi=110)
EOF
# The training half: local SGD on the same peers' label-skewed logistic regression
# shards, one line per method (docs/sgd.md), 10 trials each with the same seeds.
# name | its flags (each method's H, or none: one step per round)
methods=(
  "allreduce|--protocol allreduce --local-steps 1"
  "moshpit-local|--protocol moshpit --local-steps 10"
  "diloco|--protocol allreduce --local-steps 10 --outer-optimizer nesterov"
  "streaming-diloco|--protocol allreduce --local-steps 5 --outer-optimizer nesterov --fragments 2"
  "noloco|--protocol pairwise --local-steps 10 --outer-optimizer sgd --outer-momentum 0.3"
  "d-psgd|--protocol gossip --topology exp --local-steps 1"
  "tracking|--protocol gossip --topology exp --gradient-tracking"
  "ad-psgd|--protocol swarm --mode blocking --local-steps 1"
)
train_args=(--objective logistic --label-skew 0.8 --steps 300 --lr 0.2 --batch 8 --eval-every 10 --target 1e-1
  --target 1e-2 --fail-rate 0.001 --seed 0 --trials 10)
echo
echo "== demo: training (logistic regression, label-skewed shards, $peers peers, sequential engine)"
trained=()
for m in "${methods[@]}"; do
  name=${m%%|*}
  read -r -a flags <<<"${m#*|}"
  trace=$out/demo-sgd-$name.h5
  if ! "$bin/sgd_bench" --engine sequential --peers "$peers" "${flags[@]}" "${train_args[@]}" --out "$trace" \
    --overwrite --quiet >"$out/demo-sgd-$name.log" 2>&1; then
    tail -n 5 "$out/demo-sgd-$name.log" >&2
    echo "demo.sh: error: the $name training run failed (its output: $out/demo-sgd-$name.log)" >&2
    exit 1
  fi
  trained+=("$trace")
done
# Unpaired: a peer's failures are drawn per averaging round, and the methods' rounds
# come after different numbers of steps.
scripts/avbench compare --unpaired "${trained[@]}"

echo
echo "demo: done; total wall time $((SECONDS - started)) s; traces and demo.png in $out/ (read them with python/avbench, see docs/analysis.md)"
