#!/usr/bin/env bash
# 1024 simulated peers under SMPI: protocol allreduce with restarts (binomial-tree
# collective: the fewest messages, so the cheapest to simulate), fail rate
# 0.001, 20 trials, each ended once it reaches variance 1e-9 (--stop-at-target:
# the rounds after it would average equal values). The trace must be valid, and
# the mean number of rounds to variance 1e-9 must match theory.
#
#   tests/scripts/test_smpi_1024.sh BINARY      (BINARY: build-smpi/apps/averaging_bench)
#
# Theory: under `--on-failure abort` the one world-wide group averages exactly
# (every peer gets the same bits, so the variance is 0) in the first round in which
# none of the 1024 peers fails, and keeps its values otherwise. Failures are
# independent across rounds and peers, so the rounds to any target are geometric
# with success probability p = 0.999^1024 ~ 0.359: mean 1/p ~ 2.785, sd ~ 2.2.
# The test passes when the sample mean is within 3 standard errors (sample sd /
# sqrt(20)) of 1/p. The seed is fixed, so the outcome is reproducible; but note
# that over seeds a correct program fails this about 3% of the time (1e6 simulated
# samples of 20: the geometric law is skewed, so a low sample mean comes with a
# low sample sd), against 0.5% with the exact se sqrt(1-p)/p/sqrt(20) ~ 0.50,
# which is printed too.
source "$(dirname "$0")/common.sh"

[ $# -eq 1 ] || die "usage: test_smpi_1024.sh BINARY"
[ -e "$1" ] || die "no program at $1 (build it first)"
BIN=$(realpath "$1")

PEERS=1024 TRIALS=20 ROUNDS=50 RATE=0.001
out=$SCRATCH/run.h5
say "smpirun -n $PEERS: --protocol allreduce --on-failure abort --fail-rate $RATE --trials $TRIALS --rounds $ROUNDS --stop-at-target"
started=$(now)
rc=0
timeout -k 10 540 "$AVB_SMPIRUN" -n "$PEERS" "$BIN" --protocol allreduce --on-failure abort --collective tree \
  --fail-rate "$RATE" --trials "$TRIALS" --rounds "$ROUNDS" --stop-at-target --seed 0 --out "$out" --quiet \
  >"$SCRATCH/stdout.txt" 2>"$SCRATCH/stderr.txt" </dev/null || rc=$?
wall=$(elapsed "$started")
say "wall time: $wall s"
if [ "$rc" -ne 0 ]; then
  echo "--- stdout" >&2; cat "$SCRATCH/stdout.txt" >&2
  echo "--- stderr" >&2; tail -20 "$SCRATCH/stderr.txt" >&2
  [ "$rc" -ne 124 ] || die "timed out after 540 s"
  die "exit code $rc"
fi
ok "exit 0 in $wall s"
sed 's/^/    /' "$SCRATCH/stdout.txt"

check_trace "$out" --peers "$PEERS" --trials "$TRIALS" --complete 1 --rounds "$ROUNDS"

if report=$(timeout 60 "$AVB_PYTHON" - "$out" "$PEERS" "$TRIALS" "$RATE" <<'EOF'
import math, sys
import h5py
import numpy as np

path, peers, trials, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
with h5py.File(path, "r") as f:
    s = f["summary"]
    rounds = s["rounds_to_1e-9"][()].astype(float)
    reached = s["reached_1e-9"][()]
assert len(rounds) == trials, f"{len(rounds)} summary rows, expected {trials}"
assert reached.all(), f"target 1e-9 not reached in trial(s) {np.nonzero(reached == 0)[0].tolist()}"
expected = 1.0 / (1.0 - rate) ** peers
mean = rounds.mean()
se = rounds.std(ddof=1) / math.sqrt(trials)
z = (mean - expected) / se if se > 0 else math.inf
p = (1.0 - rate) ** peers
exact_se = math.sqrt(1.0 - p) / p / math.sqrt(trials)
print(f"rounds to 1e-9: mean {mean:.3f} ± {se:.3f} (se), expected 1/{1 - rate:g}^{peers} = {expected:.3f}, "
      f"z = {z:+.2f} (with the exact se {exact_se:.3f}: {(mean - expected) / exact_se:+.2f}); "
      f"per trial {rounds.astype(int).tolist()}")
sys.exit(0 if abs(z) <= 3 else 1)
EOF
); then
  ok "$report"
else
  bad "mean rounds to 1e-9 is not within 3 standard errors of theory: $report"
fi
finish
