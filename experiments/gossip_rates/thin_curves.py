#!/usr/bin/python3
"""Thin a sequential-engine trace's variance curves to what the table and the plot need.

    PYTHONPATH=python /usr/bin/python3 experiments/gossip_rates/thin_curves.py TRACE.h5 \
        [--ratio 1e-6] [--dense 2000] [--points 400] > out.csv

TRACE.h5 is averaging_bench --engine sequential's trace, every round of every
trial (300,000 rounds of the ring). This prints, per trial, columns
trial,round,variance for
  - every round up to --dense (so SMPI traces of shorter runs compare row by row),
  - about --points rounds spaced evenly on a log scale beyond it (for the plot),
  - the first round whose variance / initial variance is below --ratio, and the
    round before it (so the crossing is exact in the thinned file),
  - the trial's last round.
Any schema version (avbench.trials reads v9's table and older traces' trial groups).
"""

from __future__ import annotations

import argparse
import math
import sys

import h5py

from avbench.trials import all_trial_columns, all_trial_info


def thin(rounds, variance, ratio, dense, points):
    """The indices of the rows to keep, in order."""
    step = math.log(10) / max(1, points) * 6  # log-spaced: ~points per 6 decades of rounds
    v0, crossed, next_log = float(variance[0]), False, math.log(max(1, dense))
    kept = []
    for i, (rnd, var) in enumerate(zip(rounds, variance)):
        keep = rnd <= dense or i == len(rounds) - 1
        if rnd > dense and math.log(rnd) >= next_log:
            keep = True
            while next_log <= math.log(rnd):
                next_log += step
        if not crossed and v0 > 0 and var / v0 < ratio:
            crossed = True
            keep = True
            if i > 0 and (not kept or kept[-1] != i - 1):
                kept.append(i - 1)
        if keep:
            kept.append(i)
    return kept


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="averaging_bench --engine sequential's trace (.h5)")
    ap.add_argument("--ratio", type=float, default=1e-6)
    ap.add_argument("--dense", type=int, default=2000)
    ap.add_argument("--points", type=int, default=400)
    a = ap.parse_args()
    out = sys.stdout
    out.write("trial,round,variance\n")
    with h5py.File(a.trace, "r") as f:
        trials = zip((info["trial"] for info in all_trial_info(f)), all_trial_columns(f, ["round", "variance"]))
        for k, cols in sorted(trials, key=lambda t: t[0]):
            rounds, variance = cols["round"].tolist(), cols["variance"].tolist()
            for i in thin(rounds, variance, a.ratio, a.dense, a.points):
                out.write(f"{k},{rounds[i]},{variance[i]!r}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
