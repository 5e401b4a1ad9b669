#!/usr/bin/python3
"""Item 4 of scripts/bench.sh: the sequential engine against the numpy peer
(bench/numpy_averaging.py) on the same cells, in one run (issue 16).

    sequential_vs_numpy.py --build DIR --out DIR [--smoke] [--methods moshpit,gossip,...]

For each cell (default: 1024 peers, fail rate 0.01, 100 trials x 50 rounds, no
early stop; --smoke: 64 peers, 3 trials x 10 rounds) it runs the numpy peer, then
DIR/apps/averaging_bench --engine sequential with the same cell, and prints

    RATIO sequential method=M n=N trials=T rounds=R numpy_s=X ours_s=Y ratio=X/Y

where X is the peer's own timing of its trial loop and Y the run's wall time as
averaging_bench prints it ("# wall time", without process start-up), both without
writing a trace; traced_s, the trace's run_seconds of the same run with --out, says
what writing every round of every trial to HDF5 adds. A second line
per cell gives both sides' mean rounds to 1e-9 (± standard error): different
random streams, so they should agree statistically, not exactly.
Exit 0 when every cell gave a ratio, 1 when one side failed, 2 on bad input.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

from numpy_averaging import Parser

HERE = Path(__file__).resolve().parent
GROUP_SIZE = 32
# numpy peer's method -> averaging_bench's protocol flags (the grid is added per N).
PROTOCOLS = {
    "moshpit": ["--protocol", "moshpit"],
    "allreduce": ["--protocol", "allreduce"],
    "random-groups": ["--protocol", "random-groups", "--group-size", str(GROUP_SIZE)],
    "gossip": ["--protocol", "gossip", "--topology", "ring"],
    "sgp": ["--protocol", "sgp-paper"],
}
FULL = dict(peers=1024, fail_rate=0.01, trials=100, rounds=50)
SMOKE = dict(peers=64, fail_rate=0.01, trials=3, rounds=10)


def grid(peers):
    """The square grid that holds the peers: 32x32 for 1024."""
    side = math.isqrt(peers - 1) + 1 if peers > 1 else 1
    return f"{side}x{side}"


def cell_flags(cell):
    return ["--peers", str(cell["peers"]), "--fail-rate", str(cell["fail_rate"]),
            "--trials", str(cell["trials"]), "--rounds", str(cell["rounds"])]


def run(command):
    """stdout of command; RuntimeError with its last stderr line when it fails."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"{Path(command[0]).name} exited {done.returncode}: {last}")
    return done.stdout


def numpy_side(method, cell):
    """(seconds, mean rounds to 1e-9, its standard error) of the numpy peer."""
    command = [sys.executable, str(HERE / "numpy_averaging.py"), "--method", method, *cell_flags(cell),
               "--grid", grid(cell["peers"]), "--group-size", str(GROUP_SIZE)]
    out = json.loads(run(command))
    return out["seconds"], out["rounds_to_1e-9_mean"], out["rounds_to_1e-9_se"]


def sequential_side(method, cell, build, trace):
    """(seconds, mean rounds to 1e-9, its standard error) of the sequential engine:
    the run's wall time as it prints it, without a trace (the peer writes none
    either), then the same run again with one, for its rounds and its run_seconds."""
    extra = ["--grid", grid(cell["peers"])] if method == "moshpit" else []
    command = [str(build / "apps" / "averaging_bench"), "--engine", "sequential", *PROTOCOLS[method], *extra,
               *cell_flags(cell), "--quiet"]
    printed = re.search(r"^# wall time: ([0-9.e+-]+) s$", run(command), re.MULTILINE)
    if not printed:
        raise RuntimeError("averaging_bench printed no '# wall time' line")
    run([*command, "--out", str(trace), "--overwrite"])
    with h5py.File(trace, "r") as f:
        r9 = np.asarray(f["summary"]["rounds_to_1e-9"][:], dtype=float)
        traced = float(f.attrs["run_seconds"])
    se = r9.std(ddof=1) / math.sqrt(r9.size) if r9.size > 1 else 0.0
    return float(printed.group(1)), traced, float(r9.mean()), float(se)


def compare(method, cell, build, out):
    """Both sides on one cell: the RATIO line and the rounds side by side."""
    numpy_s, numpy_r, numpy_se = numpy_side(method, cell)
    ours_s, traced_s, ours_r, ours_se = sequential_side(method, cell, build, out / f"seq-{method}.h5")
    n, t, r = cell["peers"], cell["trials"], cell["rounds"]
    ratio = numpy_s / ours_s if ours_s > 0 else float("nan")
    print(f"RATIO sequential method={method} n={n} trials={t} rounds={r} "
          f"numpy_s={numpy_s:.6g} ours_s={ours_s:.6g} traced_s={traced_s:.6g} ratio={ratio:.6g}")
    print(f"# rounds to 1e-9, {method} n={n}: numpy {numpy_r:.2f} ± {numpy_se:.2f}, "
          f"sequential {ours_r:.2f} ± {ours_se:.2f}")
    sys.stdout.flush()


def parse_args(argv):
    p = Parser(description="The sequential engine against the numpy peer (RATIO lines).")
    p.add_argument("--build", required=True, type=Path, help="build directory holding apps/averaging_bench")
    p.add_argument("--out", required=True, type=Path, help="folder for the traces")
    p.add_argument("--smoke", action="store_true", help="tiny cells: 64 peers, 3 trials x 10 rounds")
    p.add_argument("--methods", default=",".join(PROTOCOLS), help="comma-separated subset of the methods")
    args = p.parse_args(argv)
    args.methods = args.methods.split(",")
    unknown = [m for m in args.methods if m not in PROTOCOLS]
    if unknown:
        p.error(f"argument --methods: '{unknown[0]}' is not one of {', '.join(PROTOCOLS)}")
    return args


def main(argv=None):
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cell, failed = SMOKE if args.smoke else FULL, 0
    for method in args.methods:
        try:
            compare(method, cell, args.build, args.out)
        except (RuntimeError, OSError, KeyError, ValueError) as e:
            print(f"sequential_vs_numpy.py: {method}: {e}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
