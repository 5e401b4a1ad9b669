#!/usr/bin/env python3
"""Two traces of the same run on two engines, compared as samples: where the
order of asynchronous events follows simulated time, the engines agree in
distribution, not bit for bit (docs/simulation.md, "Asynchronous protocols").

    compare_statistics.py A.h5 B.h5 [--z 3] [--min-trials 30]

For each target of the traces, the rounds (or steps) to reach it and the simulated
seconds to reach it, per trial: Welch's statistic z = |mean_A - mean_B| /
sqrt(se_A^2 + se_B^2) must be below --z for both, and each trace must hold at
least --min-trials trials that reached it. Prints one line per quantity; exit 1
when one fails, 2 on bad input.
"""
import argparse
import math
import sys

import h5py
import numpy as np
from avbench.trials import all_trial_columns, all_trial_info


def samples(path, target):
    """Per complete trial: (rounds to target, seconds to target), of trials that reached it."""
    counts, seconds, unit = [], [], "round"
    with h5py.File(path, "r") as f:
        unit = "step" if f.attrs.get("run_kind") == "sgd" else "round"
        indices = [info["trial"] for info in all_trial_info(f)]
        for _, trial in sorted(zip(indices, all_trial_columns(f), strict=True), key=lambda p: p[0]):
            metric = trial["relative_gap"][()] if "relative_gap" in trial else trial["variance"][()]
            below = np.nonzero(metric < target)[0]
            if len(below) == 0:
                continue
            first = int(below[0])
            counts.append(float(trial[unit][first] if unit in trial else trial["round"][first]))
            seconds.append(float(trial["time"][first]))
    return np.array(counts), np.array(seconds), unit


def targets(path):
    with h5py.File(path, "r") as f:
        text = str(f["config"].attrs["target"])
    return [float(t) for t in text.replace(";", ",").split(",") if t.strip()]


def welch(a, b):
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    diff = abs(a.mean() - b.mean())
    if se == 0:
        return 0.0 if diff == 0 else math.inf
    return diff / se


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--z", type=float, default=3.0)
    parser.add_argument("--min-trials", type=int, default=30)
    parser.add_argument("--target", type=float, action="append", help="instead of the traces' own targets")
    args = parser.parse_args()
    failed = False
    for target in args.target or targets(args.a):
        (ca, sa, unit), (cb, sb, _) = samples(args.a, target), samples(args.b, target)
        if min(len(ca), len(cb)) < args.min_trials:
            print(f"target {target:g}: only {len(ca)} and {len(cb)} trials reached it (at least {args.min_trials} wanted)")
            failed = True
            continue
        for what, a, b in ((unit + "s", ca, cb), ("seconds", sa, sb)):
            z = welch(a, b)
            verdict = "ok" if z < args.z else "DIFFERS"
            print(f"target {target:g} {what} to it: {a.mean():.6g} +- {a.std(ddof=1) / math.sqrt(len(a)):.2g} "
                  f"vs {b.mean():.6g} +- {b.std(ddof=1) / math.sqrt(len(b)):.2g} ({len(a)} and {len(b)} trials), "
                  f"z = {z:.2f} (below {args.z:g}): {verdict}")
            failed |= z >= args.z
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, KeyError, ValueError) as e:
        print(f"compare_statistics.py: {e}", file=sys.stderr)
        sys.exit(2)
