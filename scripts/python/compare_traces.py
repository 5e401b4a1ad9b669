#!/usr/bin/python3
"""One line per avbench trace: rounds to each variance target, bytes, time.

    compare_traces.py TRACE.h5 [TRACE.h5 ...]

Reads /summary of each trace (docs/trace-format.md) and prints, per trace, the
protocol and the mean ± standard error over trials of the rounds to each target,
the bytes each peer sent, and the time per trial (simulated seconds under SMPI,
wall seconds under Open MPI). A '*' marks a mean that includes trials which never
reached the target (counted at the cap: the rounds run). Only trials that ran to
the end are used; a run cut short says so.

Run it with Debian's /usr/bin/python3, which sees python3-h5py.
"""

from __future__ import annotations

import math
import sys

import h5py
import numpy as np


def mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return float(v.mean()), float(se)


def targets_of(summary) -> list[str]:
    """Target suffixes ("1e-4", "1e-9"), loosest first."""
    names = [k[len("rounds_to_"):] for k in summary if k.startswith("rounds_to_")]
    return sorted(names, key=float, reverse=True)


def row(path: str) -> dict:
    with h5py.File(path, "r") as f:
        s = f["summary"]
        done = s["complete"][()] == 1
        peers = int(f.attrs["n_peers"])
        r = {
            "protocol": str(f["config"].attrs.get("protocol", "?")),
            "engine": str(f.attrs["engine"]),
            "peers": peers,
            "trials": int(done.sum()),
            "complete": int(f.attrs["complete"]),
            "targets": {},
            "bytes": mean_se(s["bytes_sent"][()][done] / peers),
            "time": mean_se(s["time"][()][done]),
        }
        for t in targets_of(s):
            rounds = s[f"rounds_to_{t}"][()][done]
            reached = s[f"reached_{t}"][()][done]
            r["targets"][t] = (*mean_se(rounds), bool((reached == 0).any()))
        return r


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    rows = []
    for path in argv:
        try:
            rows.append(row(path))
        except (OSError, KeyError) as e:
            print(f"compare_traces.py: error: {path}: {e}", file=sys.stderr)
            return 1
    targets = []
    for r in rows:
        targets += [t for t in r["targets"] if t not in targets]
    time_kind = "simulated" if all(r["engine"] == "smpi" for r in rows) else "time"

    header = f"{'protocol':<14} {'peers':>6} {'trials':>6}"
    for t in targets:
        header += f" {'rounds to ' + t:>17}"
    header += f" {'bytes/peer':>12} {time_kind + ' s/trial':>20}"
    print(header)
    for r in rows:
        line = f"{r['protocol']:<14} {r['peers']:>6} {r['trials']:>6}"
        for t in targets:
            if t in r["targets"]:
                m, se, capped = r["targets"][t]
                line += f" {f'{m:.2f} ± {se:.2f}' + ('*' if capped else ' '):>17}"
            else:
                line += f" {'-':>17}"
        bm, _ = r["bytes"]
        tm, tse = r["time"]
        line += f" {bm:>12.1f} {f'{tm:.4f} ± {tse:.4f}':>20}"
        if not r["complete"]:
            line += "  (run cut short)"
        print(line)
    if any(capped for r in rows for (_, _, capped) in r["targets"].values()):
        print("* some trials never reached the target; they count as the rounds run (the cap)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
