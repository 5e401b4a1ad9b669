#!/usr/bin/python3
"""Checks bench/numpy_averaging.py against theory and the Moshpit paper's table
(ctest numpy_averaging); exit 0 when every check passes.

    /usr/bin/python3 bench/test_numpy_averaging.py

Statistical checks allow 4 standard errors: a correct simulation fails one with
probability below 1e-4, while the faults they guard against (a wrong graph, a
wrong group split, failures ignored) move the means by far more. Seeds are fixed,
so a run repeats exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import unittest
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
import numpy_averaging as na  # this folder's (a script's folder is on its path)

Z = 4.0


def rounds(method, n, p, trials, target=1e-9, seed=1, **kw):
    """Per-trial rounds to target over 50 rounds."""
    curves, _ = na.simulate(method, n, p, trials, 50, np.random.default_rng(seed), **kw)
    return np.array([na.rounds_to(c, target) for c in curves])


def capped_geometric(q, cap):
    """Mean and sd of min(G, cap), G ~ Geometric(q) on {1, 2, ...}: P(G > k) = (1 - q)^k."""
    k = np.arange(cap)
    tail = (1 - q) ** k
    mean = tail.sum()
    second = ((2 * k + 1) * tail).sum()  # E[X^2] = sum over k < cap of (2k + 1) P(X > k)
    return mean, math.sqrt(second - mean ** 2)


def stepper(method, n, seed=2):
    """(one trial's step function, its generator), as simulate builds them."""
    rng = np.random.default_rng(seed)
    opts = argparse.Namespace(grid=(32, 32), group_size=32)
    return na.FACTORIES[method](n, opts)(rng), rng


class Theory(unittest.TestCase):
    def test_moshpit_full_grid_is_exact_after_two_rounds(self):
        # 1024 peers fill the 32x32 grid: a row average then a column average is exact.
        r = rounds("moshpit", 1024, 0.0, 10)
        self.assertTrue((r == 2).all(), r)

    def test_allreduce_without_failures_takes_one_round(self):
        for target in na.TARGETS:
            self.assertTrue((rounds("allreduce", 1024, 0.0, 10, target) == 1).all())

    def test_allreduce_with_restarts_is_a_capped_geometric(self):
        n, p, trials = 512, 0.002, 400
        mean, sd = capped_geometric((1 - p) ** n, 50)
        r = rounds("allreduce", n, p, trials)
        self.assertLess(abs(r.mean() - mean), Z * sd / math.sqrt(trials), (r.mean(), mean))

    def test_random_groups_contract_by_r_minus_1_over_n_minus_1(self):
        # E[V_{t+1} | V_t] = (r - 1)/(N - 1) V_t exactly, so the mean per-round ratio
        # estimates it without bias; rounds 1..5 stay far above rounding noise.
        n, r = 1024, 32
        curves, _ = na.simulate("random-groups", n, 0.0, 40, 5, np.random.default_rng(3))
        ratios = np.concatenate([np.array(c[1:]) / np.array(c[:-1]) for c in curves])
        expected = (r - 1) / (n - 1)
        se = ratios.std(ddof=1) / math.sqrt(ratios.size)
        self.assertLess(abs(ratios.mean() - expected), Z * se, (ratios.mean(), expected, se))
        self.assertLess(abs(ratios.mean() / expected - 1), 0.1)


class Published(unittest.TestCase):
    """Rows of the table (N = 512), means of the authors' 10 restarts. The tolerance
    is 4 sqrt(se^2 + sd^2/10): our standard error plus the published mean's own,
    sd/sqrt(10) with sd our spread over trials."""

    def near(self, method, p, published_9, published_4, trials=20):
        for target, published in ((1e-9, published_9), (1e-4, published_4)):
            r = rounds(method, 512, p, trials, target)
            sd = r.std(ddof=1)
            tolerance = Z * math.sqrt(sd ** 2 / trials + sd ** 2 / 10)
            with self.subTest(method=method, p=p, target=target):
                self.assertLessEqual(abs(r.mean() - published), tolerance, (r.mean(), published))

    def test_gossip_never_reaches_either_target(self):
        # ... though it does average: the variance halves well within the 50 rounds.
        self.assertTrue((rounds("gossip", 512, 0.0, 10, 0.5) < 50).all())
        for p in (0.0, 0.01):
            for target in na.TARGETS:
                self.assertTrue((rounds("gossip", 512, p, 10, target) == 50).all())

    def test_sgp(self):
        self.near("sgp", 0.0, 47.6, 15.6)
        self.near("sgp", 0.01, 47.8, 15.6)

    def test_moshpit_and_random_groups(self):
        self.near("moshpit", 0.0, 8.2, 3.6)
        self.near("random-groups", 0.0, 6.1, 3.0)


class Mean(unittest.TestCase):
    def drift(self, method, p, n=1024, steps=10):
        """Largest |mean - initial mean| over the rounds of one trial."""
        step, rng = stepper(method, n)
        x = rng.standard_normal(n)
        start, worst = x.mean(), 0.0
        for t in range(1, steps + 1):
            x = step(x, rng.random(n) >= p, t)
            worst = max(worst, abs(x.mean() - start))
        return worst

    def test_group_averages_keep_the_mean_under_failures(self):
        for method in ("allreduce", "random-groups", "moshpit"):
            self.assertLess(self.drift(method, 0.1), 1e-12, method)

    def test_renormalised_and_row_normalised_rows_move_it(self):
        self.assertGreater(self.drift("gossip", 0.1), 1e-6)
        self.assertGreater(self.drift("sgp", 0.0), 1e-6)  # rows, not columns, sum to 1


class Cli(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, str(HERE / "numpy_averaging.py"), *args],
                              capture_output=True, text=True, timeout=60)

    def test_prints_one_json_object(self):
        done = self.run_cli("--method", "moshpit", "--peers", "64", "--grid", "8,8", "--fail-rate", "0",
                            "--trials", "3", "--rounds", "5")
        self.assertEqual(done.returncode, 0, done.stderr)
        out = json.loads(done.stdout)
        self.assertEqual((out["method"], out["peers"], out["trials"], out["rounds"]), ("moshpit", 64, 3, 5))
        self.assertGreater(out["seconds"], 0)
        self.assertEqual((out["rounds_to_1e-9_mean"], out["rounds_to_1e-9_se"]), (2.0, 0.0))

    def test_bad_input_is_one_line_naming_the_flag(self):
        for flag, value in (("--fail-rate", "1.5"), ("--peers", "0"), ("--grid", "4x"), ("--method", "ring")):
            args = {"--method": "moshpit", "--peers": "16", "--fail-rate": "0", "--trials": "1", "--rounds": "1"}
            args[flag] = value
            done = self.run_cli(*[s for kv in args.items() for s in kv])
            with self.subTest(flag=flag):
                self.assertEqual(done.returncode, 2)
                self.assertEqual(done.stdout, "")
                self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
                self.assertIn(flag, done.stderr)


if __name__ == "__main__":
    unittest.main()
