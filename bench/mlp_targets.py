#!/usr/bin/env python3
"""The MLP on Fashion-MNIST against its targets (issue 31), each a ratio measured
in this run (scripts/bench.sh item 6):

  step:  one training step (batch 32) against the matrix products it needs, done
         by Eigen in the same process (build/bench/mlp_bench): the products'
         seconds / the step's (goal >= 1/3: the step within 3x of its GEMMs)
  scale: --objective mlp (784-128-10) on the sequential engine, 1,024 peers x 100
         local steps (all-reduce every 10), one trial, on the 60,000 training
         images with the t10k test set: 120 s / its wall seconds (goal >= 1)

    mlp_targets.py --build DIR [--smoke] [--out DIR]

--smoke: 16 peers, 10 steps on 2,000 images (seconds; the ratios mean nothing).
Prints "RATIO mlp name=... ratio=..." lines; needs the Debian package
dataset-fashion-mnist (scripts/install-deps.sh installs it).
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="avb-mlp-"))
    out.mkdir(parents=True, exist_ok=True)
    step = subprocess.run([os.path.join(args.build, "bench", "mlp_bench"), "--repeats", "40" if args.smoke else "400"],
                          capture_output=True, text=True)
    if step.returncode != 0:
        sys.exit(f"mlp_targets: mlp_bench failed ({step.returncode}): {step.stderr.strip()[-300:]}")
    print(step.stdout.strip())

    peers, steps, limit = (16, 10, 2000) if args.smoke else (1024, 100, 0)
    command = [os.path.join(args.build, "apps", "sgd_bench"), "--engine", "sequential", "--peers", str(peers),
               "--objective", "mlp", "--data", str(FASHION / "train-images-idx3-ubyte.gz"),
               "--test-data", str(FASHION / "t10k-images-idx3-ubyte.gz"), "--data-limit", str(limit),
               "--protocol", "allreduce", "--steps", str(steps), "--local-steps", "10", "--batch", "32",
               "--lr", "0.1", "--eval-every", str(steps), "--trials", "1", "--quiet",
               "--out", str(out / "scale.h5"), "--overwrite"]
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if run.returncode != 0:
        sys.exit(f"mlp_targets: {' '.join(command)} failed ({run.returncode}): {run.stderr.strip()[-300:]}")
    print(f"RATIO mlp name=scale n={peers} steps={steps} ratio={120 / seconds:.4g} seconds={seconds:.4g}")


if __name__ == "__main__":
    main()
