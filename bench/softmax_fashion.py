#!/usr/bin/python3
"""Multinomial logistic regression on Fashion-MNIST, one peer: the test accuracy
of sgd_bench's optimum x* (L-BFGS, lambda = 1/m) and of SGD's last model, against
the published range for a linear model (Xiao, Rasul and Vollgraf 2017, Table 3:
LogisticRegression 0.836 to 0.842 over C in {1, 10, 100}, L1 or L2, one-vs-rest).

    softmax_fashion.py --bin build/apps/sgd_bench [--data-limit M] [--steps S] [--out TRACE]

Runs (then reads the trace it wrote):

    sgd_bench --engine sequential --peers 1 --objective softmax \\
        --data DIR/train-images-idx3-ubyte.gz --test-data DIR/t10k-images-idx3-ubyte.gz \\
        --steps S --batch 32 --lr 0.5 --lr-schedule inverse --lr-decay-steps 3000 --eval-every 3000

and prints one line, FASHION key=value ..., with x*'s test accuracy computed here
from /optimum/x and the t10k files (numpy). A figure, not a test: exit 0 when the
run ran, 1 when it did not, 2 on bad input. The full set's optimum takes minutes.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import time

import h5py
import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
PUBLISHED = (0.836, 0.842)


def read_idx(path: str, offset: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def test_accuracy(x: np.ndarray) -> float:
    pixels = read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784) / 255.0
    labels = read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz", 8)
    k = x.size // 785
    weights, bias = x[: k * 784].reshape(k, 784), x[k * 784 :]
    return float(np.mean(np.argmax(pixels @ weights.T + bias, axis=1) == labels))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True, help="sgd_bench")
    p.add_argument("--data-limit", type=int, default=0, help="train on the first M images (0: all 60,000)")
    p.add_argument("--steps", type=int, default=30000)
    p.add_argument("--out", default="softmax_fashion.h5")
    a = p.parse_args()
    command = [a.bin, "--engine", "sequential", "--peers", "1", "--objective", "softmax",
               "--data", f"{DATA}/train-images-idx3-ubyte.gz", "--test-data", f"{DATA}/t10k-images-idx3-ubyte.gz",
               "--data-limit", str(a.data_limit), "--steps", str(a.steps), "--batch", "32", "--lr", "0.5",
               "--lr-schedule", "inverse", "--lr-decay-steps", "3000", "--eval-every", "3000",
               "--out", a.out, "--overwrite", "--quiet"]
    start = time.monotonic()
    if subprocess.run(command).returncode != 0:
        print("softmax_fashion: sgd_bench failed", file=sys.stderr)
        return 1
    seconds = time.monotonic() - start
    with h5py.File(a.out, "r") as f:
        optimum = f["optimum"]
        x = np.asarray(optimum["x"])
        attrs = {k: optimum.attrs[k] for k in ("iterations", "gradient_norm", "loss", "converged")}
        last = int(f["trials/rows"][0]) - 1  # trial 0's last evaluation (schema v9's table)
        sgd_accuracy = float(f["trials/accuracy"][0, last])
        sgd_gap = float(f["trials/relative_gap"][0, last])
    print(f"FASHION data_limit={a.data_limit} steps={a.steps} lbfgs_iterations={attrs['iterations']} "
          f"converged={attrs['converged']} gradient_norm={attrs['gradient_norm']:.3e} f*={attrs['loss']:.10f} "
          f"optimum_test_accuracy={test_accuracy(x):.4f} sgd_test_accuracy={sgd_accuracy:.4f} "
          f"sgd_relative_gap={sgd_gap:.3e} published={PUBLISHED[0]}..{PUBLISHED[1]} seconds={seconds:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
