#!/usr/bin/env python3
"""Swarm on the sequential engine against its targets (issue 28), each a ratio
measured in this run (scripts/bench.sh item 5):

  scale: averaging, 1,048,576 peers x 20 rounds, one trial: 120 s / its seconds
         (goal >= 1), and 8 GB / its peak memory (goal >= 1)
  sgd:   logistic local SGD, 1,024 peers x 1,000 steps, one trial: 10 s / its seconds
  demo:  the demo's swarm cell (1024 peers, 20 trials, fail rate 0.001, stop at
         1e-9): one SMPI trial's seconds / the 20 sequential trials' (goal >= 100);
         only with --smpi-build. Measured first, on a machine not yet warmed by
         the others, each side the best of its repeats (3 of ours, 2 of SMPI's:
         a quiet machine's spread was 25% for SMPI's trial and 15% for ours)

    swarm_targets.py --build DIR [--smpi-build DIR] [--smoke] [--out DIR]

--smoke: 4096 peers, 200 steps, 64 demo peers (seconds; the ratios mean nothing).
Prints "RATIO swarm target=... ratio=... seconds=..." lines.
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import h5py


def run(command):
    """Runs command; returns (wall seconds, its own peak resident bytes)."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"swarm_targets: {' '.join(command)} failed ({code}): {errors.strip()[-300:]}")
    return seconds, usage.ru_maxrss * 1024


def best_of(repeats, command):
    """The least run_seconds (the trials' own clock) of `repeats` runs of command, which writes --out."""
    out = command[command.index("--out") + 1]
    seconds = []
    for _ in range(repeats):
        run(command)
        with h5py.File(out) as trace:
            seconds.append(float(trace.attrs["run_seconds"]))
    return min(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--smpi-build")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="avb-swarm-"))
    out.mkdir(parents=True, exist_ok=True)
    avg = os.path.join(args.build, "apps", "averaging_bench")
    sgd = os.path.join(args.build, "apps", "sgd_bench")
    peers, steps, demo_peers = (4096, 200, 64) if args.smoke else (1048576, 1000, 1024)

    if args.smpi_build:
        demo = ["--protocol", "swarm", "--fail-rate", "0.001", "--stop-at-target", "--seed", "0", "--rounds", "60",
                "--overwrite", "--quiet"]
        smpirun = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "smpirun.sh"
        ours = best_of(3, [avg, "--engine", "sequential", "--peers", str(demo_peers), "--trials", "20", "--out",
                           str(out / "demo-seq.h5")] + demo)
        theirs = best_of(2, [str(smpirun), "-n", str(demo_peers), os.path.join(args.smpi_build, "apps",
                             "averaging_bench"), "--trials", "1", "--out", str(out / "demo-smpi.h5")] + demo)
        print(f"RATIO swarm target=demo n={demo_peers} ratio={theirs / ours:.4g} seconds={ours:.4g} smpi={theirs:.4g}")

    seconds, peak = run([avg, "--engine", "sequential", "--peers", str(peers), "--protocol", "swarm", "--rounds", "20",
                         "--trials", "1", "--out", str(out / "scale.h5"), "--overwrite", "--quiet"])
    print(f"RATIO swarm target=scale-time n={peers} ratio={120 / seconds:.4g} seconds={seconds:.4g}")
    print(f"RATIO swarm target=scale-memory n={peers} ratio={8e9 / peak:.4g} seconds={peak / 1e9:.4g}")

    seconds, _ = run([sgd, "--engine", "sequential", "--peers", "1024", "--protocol", "swarm", "--objective",
                      "logistic", "--steps", str(steps), "--trials", "1", "--out", str(out / "sgd.h5"), "--overwrite",
                      "--quiet"])
    print(f"RATIO swarm target=sgd-time n=1024 ratio={10 / seconds:.4g} seconds={seconds:.4g}")


if __name__ == "__main__":
    main()
