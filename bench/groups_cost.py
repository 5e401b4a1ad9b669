#!/usr/bin/python3
"""Per-round time of moshpit groups by --groups and --collective (issue 17).

Runs averaging_bench under Open MPI (mpirun) or SMPI (scripts/smpirun.sh) once per
configuration and repeat, in an order that rotates from one repeat to the next, and
prints one markdown row per configuration: the median over repeats of each run's
median round time (the trace's cumulative `time` column, differenced), and the
spread of those run medians.

  bench/groups_cost.py BIN --engine mpi|smpi --np 4 --grid 2x2 --dim 1 \
      --rounds 50 --repeats 5 view/auto comm/auto comm/mpi
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import h5py
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launcher(engine, np_):
    if engine == "mpi":
        return ["mpirun", "-n", str(np_), "--oversubscribe"]
    return [os.path.join(REPO, "scripts", "smpirun.sh"), "-n", str(np_)]


def run_once(args, config, out):
    groups, collective = config.split("/")
    cmd = launcher(args.engine, args.np) + [
        args.bin, "--protocol", "moshpit", "--grid", args.grid, "--dim", str(args.dim),
        "--rounds", str(args.rounds), "--trials", "1", "--seed", "3", "--groups", groups,
        "--collective", collective, "--out", out, "--overwrite", "--quiet"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"groups_cost.py: {' '.join(cmd)} failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    with h5py.File(out, "r") as f:  # the one trial's rows: row 0 of /trials' 2-D columns (schema v9)
        trials = f["trials"]
        times = np.diff(trials["time"][0, :trials["rows"][0]])
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bin")
    parser.add_argument("configs", nargs="+", help="GROUPS/COLLECTIVE, e.g. view/auto comm/mpi")
    parser.add_argument("--engine", choices=["mpi", "smpi"], default="mpi")
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--grid", default="2x2")
    parser.add_argument("--dim", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    medians = {c: [] for c in args.configs}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.repeats):
            shift = r % len(args.configs)
            for config in args.configs[shift:] + args.configs[:shift]:
                medians[config].append(run_once(args, config, os.path.join(scratch, "run.h5")))
    print(f"| engine | n | dim | --groups/--collective | round time, median of {args.repeats} run medians | "
          "run medians min..max |")
    for config, values in medians.items():
        print(f"| {args.engine} | {args.np} | {args.dim} | {config} | {statistics.median(values) * 1e6:.1f} us | "
              f"{min(values) * 1e6:.1f}..{max(values) * 1e6:.1f} us |")


if __name__ == "__main__":
    main()
