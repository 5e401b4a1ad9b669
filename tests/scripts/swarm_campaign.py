#!/usr/bin/env python3
"""Randomized campaign of swarm's progress engine under SMPI: every run must end
with exit 0 and a complete trace, never a deadlock, a hang or an error.

    swarm_campaign.py --averaging A --sgd S --runs K [--seed S] [--max-peers N]
                      [--jobs J] [--log FILE] [--only I]

Run i draws its configuration from (seed, i) alone, so `--seed S --only I` replays
run I of a campaign exactly (the failing command is also printed). A configuration
covers: 2..max-peers simulated peers (log-uniform), blocking and non-blocking
modes; for sgd_bench fixed or geometric local steps H in 1..8, --eval-every 1..50,
lognormal host speeds, --step-flops with stragglers, failures; for averaging_bench
the round and Poisson clocks, transient, permanent and churn failures, stragglers
with --compute-flops and detection timeouts; quantizers none, fp16 and lattice.
Each run is limited to --timeout seconds of wall time (a hang is a failure).
"""

import argparse
import concurrent.futures
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import h5py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMPIRUN = os.path.join(REPO, "scripts", "smpirun.sh")


def draw(seed, i, max_peers):
    """(program kind, smpirun options, program options) of run i."""
    rng = random.Random(f"{seed}/{i}")
    peers = max(2, min(max_peers, int(round(math.exp(rng.uniform(math.log(2), math.log(max_peers)))))))
    launch = []
    if rng.random() < 0.4:
        launch += ["--speed-sigma", rng.choice(["0.25", "0.5", "1"]), "--speed-seed", str(rng.randrange(1000))]
    args = ["--protocol", "swarm", "--mode", rng.choice(["blocking", "non-blocking"]),
            "--seed", str(rng.randrange(1 << 32)), "--trials", str(rng.choice([1, 1, 2]))]
    quantizer = rng.choice(["none", "none", "fp16", "lattice"])
    args += ["--quantizer", quantizer]
    if rng.random() < 0.5:
        args += ["--fail-rate", rng.choice(["0.01", "0.05", "0.2"])]
    if rng.random() < 0.3:
        args += ["--stragglers", rng.choice(["0.1", "0.5"]), "--straggler-slowdown", rng.choice(["2", "8"])]
    if rng.random() < 0.5:
        kind = "sgd"
        h = rng.randint(1, 8)
        args += ["--steps", str(rng.randint(10, 60)), "--local-steps", str(h),
                 "--local-steps-dist", rng.choice(["fixed", "geometric"]),
                 "--eval-every", str(rng.choice([1, 2, 3, 4, 5, 8, 10, 17, 25, 50])),
                 "--dim", str(rng.choice([1, 5, 20])), "--lr", "0.01"]
        if rng.random() < 0.5 or "--stragglers" in args:
            args += ["--step-flops", rng.choice(["1e5", "1e6", "1e7"])]
    else:
        kind = "averaging"
        args += ["--rounds", str(rng.randint(2, 8)), "--dim", str(rng.choice([1, 4, 32])),
                 "--clock", rng.choice(["round", "round", "poisson"])]
        failure = rng.choice(["transient", "transient", "permanent", "churn"])
        if failure != "transient":
            if "--fail-rate" not in args:
                args += ["--fail-rate", "0.05"]
            args += ["--failure", failure]
            if failure == "churn":
                args += ["--join-rate", rng.choice(["0.1", "0.5"])]
        if rng.random() < 0.3 or "--stragglers" in args:
            args += ["--compute-flops", rng.choice(["1e6", "1e8"])]
        if rng.random() < 0.2:
            args += ["--detection-timeout", "0.01"]
    return kind, peers, launch, args


def run_one(opts, i):
    """Runs i; a run killed by a signal it did not cause (another job on the machine
    killing processes by name, the OOM killer) is run once more: SMPI is
    deterministic, so a deadlock or an error of ours happens again."""
    result = run_once(opts, i)
    if result[4] and result[4].startswith("exit -"):
        again = run_once(opts, i)
        if again[4] is None:
            return again[:4] + (f"replayed: the first attempt ended by signal {result[4][6:].split(':')[0]}",) + again[5:]
        return again
    return result


def run_once(opts, i):
    kind, peers, launch, args = draw(opts.seed, i, opts.max_peers)
    program = opts.sgd if kind == "sgd" else opts.averaging
    with tempfile.TemporaryDirectory(prefix="avb-campaign-") as scratch:
        out = os.path.join(scratch, "run.h5")
        command = [SMPIRUN, "-n", str(peers)] + launch + ["--", program] + args + ["--out", out, "--quiet"]
        started = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=opts.timeout,
                                  stdin=subprocess.DEVNULL)
            rc, err = done.returncode, done.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = "timeout", (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else ""
        seconds = time.monotonic() - started
        problem = None
        if rc != 0:
            problem = f"exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}"
        else:
            try:
                with h5py.File(out, "r") as f:
                    if int(f.attrs["complete"]) != 1:
                        problem = "trace not complete"
            except OSError as e:
                problem = f"no readable trace: {e}"
    return i, kind, peers, seconds, problem, " ".join(command).replace(out, "run.h5")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--averaging", required=True)
    p.add_argument("--sgd", required=True)
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--max-peers", type=int, default=256)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--log", help="one line per run: index, program, peers, seconds, verdict, command")
    p.add_argument("--only", type=int, help="replay this run index alone")
    opts = p.parse_args()
    opts.averaging, opts.sgd = os.path.abspath(opts.averaging), os.path.abspath(opts.sgd)
    indices = [opts.only] if opts.only is not None else range(opts.runs)
    print(f"swarm_campaign: seed {opts.seed}, {len(indices)} runs, up to {opts.max_peers} peers, "
          f"{opts.jobs} at a time (replay run I with --seed {opts.seed} --only I)", flush=True)
    failures, peers_seen, started = [], [], time.monotonic()
    log = open(opts.log, "w") if opts.log else None
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for i, kind, peers, seconds, problem, command in pool.map(lambda k: run_one(opts, k), indices):
            peers_seen.append(peers)
            replayed = problem is not None and problem.startswith("replayed")
            if replayed:
                print(f"swarm_campaign: run {i}: {problem}", flush=True)
                problem = None
            verdict = "ok" if problem is None else f"FAIL ({problem})"
            if log:
                log.write(f"{i}\t{kind}\t{peers}\t{seconds:.1f}\t{verdict}\t{command}\n")
                log.flush()
            if problem is not None:
                failures.append((i, problem, command))
                print(f"swarm_campaign: run {i} FAILED: {problem}\n  {command}", file=sys.stderr, flush=True)
    elapsed = time.monotonic() - started
    print(f"swarm_campaign: {len(indices)} runs ({sum(p >= 64 for p in peers_seen)} with >= 64 peers, "
          f"largest {max(peers_seen)}), {len(failures)} failed, {elapsed:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
