#!/usr/bin/env bash
# SwarmSGD against its analysis: the contraction the analysis predicts, convergence
# of local SGD on 256 peers, and reproducible asynchrony on heterogeneous hosts.
#
#   tests/scripts/test_swarm.sh ENGINE AVERAGING_BENCH SGD_BENCH [PART...]
#
# ENGINE is sequential (the programs of build/) or smpi (those of build-smpi/);
# PARTs are contraction, sgd and hosts (default: all three). CI runs every part on
# the sequential engine (swarm) and the hosts part under SMPI (smpi_swarm_hosts):
# smpi_async holds the two engines to the same rows where the order of events is
# the time model's, and to the same distributions elsewhere (docs/simulation.md).
#
# 1. contraction (complete graph, blocking, p = 0, 32 peers). One interaction with a
#    uniformly random edge gives E[Gamma'] = (1 - lambda_2/(r n)) Gamma, which on
#    the complete graph is 1 - 1/(n - 1) exactly. With --clock poisson every
#    initiator is uniform and independent, and the ticks (32 a simulated second,
#    interactions about 1.3 ms) rarely overlap: the measured per-interaction factor
#    must be within 5% of theory, in 1 - c. With --clock round each peer initiates
#    exactly once a round, and peers that have not yet initiated are the ones still
#    far from the mean: the contraction is stronger than the theory's (about 1.2x in
#    1 - c); checked to be at least 1.05x.
#    Estimator: per (trial, round), E[Gamma_{r+1} / Gamma_r | K] = c^K with K the
#    completed interactions of the round; c solves mean(ratio / c^K) = 1. Its
#    standard error, from a bootstrap over trials, is printed (about 1.5%).
# 2. sgd: local SGD with swarm on the EPFL quadratic, 256 peers, lr 1/N decaying as
#    1/s: relative gap below 1e-5 after 400 steps.
# 3. hosts: lognormal host speeds (sigma 0.5), --step-flops 1e7, geometric local
#    steps: the run converges, its simulated time exceeds the slowest host's compute,
#    and two runs give bit-identical traces (the asynchrony is simulated, so it is
#    reproducible).
source "$(dirname "$0")/common.sh"

[ $# -ge 3 ] || die "usage: test_swarm.sh sequential|smpi AVERAGING_BENCH SGD_BENCH [contraction|sgd|hosts ...]"
ENGINE=$1
program_arg AVG "$2" "averaging_bench"
program_arg SGD "$3" "sgd_bench"
select_parts "contraction sgd hosts" "${@:4}"

run() {  # run NAME PEERS PROGRAM ARGS...: trace in $SCRATCH/NAME.h5
  run_on "$ENGINE" "$@"
}

contraction() {  # contraction TRACE PEERS LOW HIGH: (1 - c)/(1 - c_theory) in [LOW, HIGH]
  timeout 120 "$AVB_PYTHON" - "$@" <<'PY'
import sys
import h5py
import numpy as np
from avbench.trials import all_trial_columns

path, n, low, high = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
trials = []
with h5py.File(path, "r") as f:
    for t in all_trial_columns(f, ["variance", "groups", "failed_groups"]):
        v, k = t["variance"], t["groups"] - t["failed_groups"]
        trials.append([(v[r] / v[r - 1], k[r]) for r in range(1, len(v))])

def estimate(rows):
    ratio = np.array([a for a, _ in rows])
    k = np.array([b for _, b in rows], dtype=float)
    lo, hi = 0.5, 1.0 - 1e-12
    for _ in range(200):  # mean(ratio / c^k) falls as c grows
        c = (lo + hi) / 2
        lo, hi = (c, hi) if np.mean(ratio / c**k) > 1 else (lo, c)
    return c

theory = 1 - 1 / (n - 1)
c = estimate([row for trial in trials for row in trial])
rel = (1 - c) / (1 - theory)
rng = np.random.default_rng(0)
boot = [(1 - estimate([row for i in rng.integers(0, len(trials), len(trials)) for row in trials[i]])) / (1 - theory)
        for _ in range(200)]
print(f"per interaction {c:.5f}, theory {theory:.5f}: (1 - c)/(1 - theory) = {rel:.3f} +- {np.std(boot):.3f}")
sys.exit(0 if low <= rel <= high else 1)
PY
}

# 1. Contraction.
if wanted contraction; then
  common=(--protocol swarm --dim 1 --rounds 2 --trials 100 --seed 7)
  run poisson 32 "$AVG" "${common[@]}" --clock poisson
  report=$(contraction "$SCRATCH/poisson.h5" 32 0.95 1.05) || die "poisson clock off theory: $report"
  ok "--clock poisson, $report"
  run round 32 "$AVG" "${common[@]}" --clock round
  report=$(contraction "$SCRATCH/round.h5" 32 1.05 2) || die "round clock not stronger than theory: $report"
  ok "--clock round, $report"
fi

# 2. Local SGD on 256 peers.
if wanted sgd; then
  run sgd256 256 "$SGD" --protocol swarm --objective quadratic --dim 1 --steps 400 --local-steps 2 \
    --lr 0.00390625 --lr-schedule inverse --lr-decay-steps 6 --eval-every 50 --seed 3
  gap=$(timeout 60 "$AVB_PYTHON" -c "import sys; from avbench.trials import trial_columns; print(trial_columns(sys.argv[1], 0, ['relative_gap'])['relative_gap'][-1])" \
    "$SCRATCH/sgd256.h5")
  "$AVB_PYTHON" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1e-5 else 1)" "$gap" ||
    die "swarm SGD on 256 peers: relative gap $gap after 400 steps (expected < 1e-5)"
  ok "swarm SGD on 256 peers, relative gap $gap after 400 steps"
fi

# 3. Heterogeneous hosts, geometric local steps: converges, takes the slow hosts'
#    time, and reproduces bit for bit.
if wanted hosts; then
  hetero=(--speed-sigma 0.5 --speed-seed 4 --protocol swarm --objective quadratic --dim 1 --steps 300
          --local-steps 3 --local-steps-dist geometric --step-flops 1e7 --lr 0.015625 --lr-schedule inverse
          --lr-decay-steps 6 --eval-every 50 --seed 3)
  run hetero1 64 "$SGD" "${hetero[@]}"
  run hetero2 64 "$SGD" "${hetero[@]}"
  report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/hetero1.h5" "$SCRATCH/hetero2.h5" "$AVB_TESTS_DIR" <<'PY'
import sys
from avbench.trials import trial_columns, trial_targets
from bitwise import same
a, b = trial_columns(sys.argv[1], 0), trial_columns(sys.argv[2], 0)
different = [k for k in a if not same(a[k], b.get(k))]
if not same(trial_targets(sys.argv[1]), trial_targets(sys.argv[2])):
    different.append("targets")
if different:
    sys.exit(f"two runs differ in {different}")
gap, time = a["relative_gap"][-1], a["time"][-1]
# 300 steps of 1e7 flops: 3 s on a median host; the slowest of 64 lognormal(0.5)
# hosts is about 3x slower. How far 300 steps get depends on which hosts are slow:
# the relative gap ends between 5e-4 and 0.09 over --speed-seed 1, 2, 4 and 5 (the
# keyed draws); every one falls more than tenfold from 1.
if not (gap < 0.1 and time > 3.0):
    sys.exit(f"relative gap {gap} (expected < 0.1), simulated time {time} s (expected > 3 s)")
print(f"relative gap {gap:.3g}, simulated time {time:.3g} s, identical traces")
PY
  ) || die "heterogeneous run: $report"
  ok "heterogeneous hosts, $report"
fi
finish
