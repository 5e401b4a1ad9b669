#!/usr/bin/python3
"""Thin oracle_cli's CSV (stdin) to what the table and the plot need (stdout).

    build/tests/oracle_cli ... | oracle_curves.py [--ratio 1e-6] [--dense 2000] [--points 400] > out.csv

oracle_cli prints one line per (trial, round): 300,000 rounds of the ring are
~30 MB per trial. This keeps, per trial, columns trial,round,variance for
  - every round up to --dense (so SMPI traces of shorter runs compare row by row),
  - about --points rounds spaced evenly on a log scale beyond it (for the plot),
  - the first round whose variance / initial variance is below --ratio, and the
    round before it (so the crossing is exact in the thinned file),
  - the trial's last round.
"""

from __future__ import annotations

import argparse
import math
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ratio", type=float, default=1e-6)
    ap.add_argument("--dense", type=int, default=2000)
    ap.add_argument("--points", type=int, default=400)
    a = ap.parse_args()

    header = sys.stdin.readline().strip().split(",")
    if header[:3] != ["trial", "round", "variance"]:
        print(f"oracle_curves.py: error: unexpected header {header}", file=sys.stderr)
        return 2
    out = sys.stdout
    out.write("trial,round,variance\n")
    step = math.log(10) / max(1, a.points) * 6  # log-spaced: ~points per 6 decades of rounds
    trial, v0, crossed, next_log = None, None, False, 0.0
    prev = last = prev_written = None
    for line in sys.stdin:
        k, r, v = line.split(",", 3)[:3]
        if k != trial:
            if last is not None and last is not prev_written:
                out.write(last)
            trial, v0, crossed, next_log = k, float(v), False, math.log(max(1, a.dense))
            prev = prev_written = None
        rnd, var = int(r), float(v)
        row = f"{k},{r},{v}\n"
        keep = rnd <= a.dense
        if not keep and math.log(rnd) >= next_log:
            keep = True
            while next_log <= math.log(rnd):
                next_log += step
        if not crossed and v0 > 0 and var / v0 < a.ratio:
            crossed = True
            if prev is not None and prev is not prev_written:
                out.write(prev)
            keep = True
        if keep:
            out.write(row)
            prev_written = row
        prev = last = row
    if last is not None and last is not prev_written:
        out.write(last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
