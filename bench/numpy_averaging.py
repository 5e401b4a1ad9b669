#!/usr/bin/python3
"""The Moshpit paper's averaging experiment (Section 4.1) in plain numpy: the peer
that the sequential engine is timed against (issue 16; docs/performance.md).

    numpy_averaging.py --method {allreduce,gossip,sgp,random-groups,moshpit}
                       --peers N --fail-rate P --trials T --rounds R
                       [--grid 32,32] [--group-size 32] [--seed S] [--stop-at-target]

Each peer holds one scalar ~ N(0, 1); in each round each peer fails with
probability P (it skips that round and keeps its value); the metric is the
population variance over all N peers. Written the way a researcher would write a
quick Monte Carlo: one numpy Generator, a Python loop over trials and rounds,
each round vectorised over the peers. Its random streams are its own, so its
numbers agree with avbench's statistically, not bit for bit.

Prints one JSON object: the cell, "seconds" (wall time of the trial loop only),
and the mean and standard error over trials of the rounds to variance 1e-9 and
1e-4 (the first round whose variance is below the target; the rounds run when
never). --stop-at-target ends a trial once the variance is below 1e-9.
Bad input: one line naming the flag, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

TARGETS = (1e-9, 1e-4)
METHODS = ("allreduce", "gossip", "sgp", "random-groups", "moshpit")


# Each method is a factory: method(n, opts) -> new_trial(rng) -> step(x, alive, t),
# where step returns the values after round t (1-based) given the alive mask.

def allreduce(n, opts):
    """With restarts: everyone averages, but only in a round where all are alive."""
    def step(x, alive, t):
        return np.full_like(x, x.mean()) if alive.all() else x
    return lambda rng: step


def gossip(n, opts):
    """Ring, self and both neighbours at 1/3, rows renormalised over the alive ones."""
    def step(x, alive, t):
        a = alive.astype(float)
        s = x * a
        num = s + np.roll(s, 1) + np.roll(s, -1)
        den = a + np.roll(a, 1) + np.roll(a, -1)
        # A failed peer's row may be empty; its result is dropped, so avoid 0/0.
        return np.where(alive, num / np.maximum(den, 1.0), x)
    return lambda rng: step


def sgp_graph(n, h):
    """Edges (rows, cols) of the authors' graph h: self loops plus, for k = 2^h and
    2^(h+1), the ones of the identity rolled by k in flattened order."""
    rows, cols = [np.arange(n)], [np.arange(n)]
    for k in (2 ** h, 2 ** (h + 1)):
        flat = (np.arange(n) * (n + 1) + k) % (n * n)
        rows.append(flat // n)
        cols.append(flat % n)
    return np.concatenate(rows), np.concatenate(cols)


def sgp(n, opts):
    """The authors' "SGP": pull-based, row-normalised, no push-sum weights."""
    period = int(math.floor(math.log2(n - 1)))
    graphs = [sgp_graph(n, h) for h in range(period)]

    def step(x, alive, t):
        rows, cols = graphs[t % period]
        w = alive[cols].astype(float)
        num = np.bincount(rows, weights=x[cols] * w, minlength=n)
        den = np.bincount(rows, weights=w, minlength=n)
        return np.where(alive, num / np.maximum(den, 1.0), x)
    return lambda rng: step


def group_average(x, members, groups):
    """x with x[members] replaced by the mean of each member's group (ids in groups)."""
    sums = np.bincount(groups, weights=x[members])
    counts = np.bincount(groups)
    out = x.copy()
    out[members] = sums[groups] / counts[groups]
    return out


def random_groups(n, opts):
    """Alive peers shuffled into groups of g, leftovers spread round-robin."""
    g = opts.group_size

    def new_trial(rng):
        def step(x, alive, t):
            members = rng.permutation(np.flatnonzero(alive))
            count = max(1, members.size // g)
            groups = np.arange(members.size) // g
            groups[count * g:] = np.arange(members.size - count * g) % count
            return group_average(x, members, groups)
        return step
    return new_trial


def moshpit(n, opts):
    """N distinct random cells of the grid; round t averages along axis (t-1) mod d
    among the alive peers of each line (survivors average, failed ones keep values)."""
    shape = opts.grid

    def new_trial(rng):
        coords = np.unravel_index(rng.choice(math.prod(shape), n, replace=False), shape)
        lines = []
        for axis in range(len(shape)):
            rest = [c for a, c in enumerate(coords) if a != axis]
            lines.append(np.ravel_multi_index(rest, [s for a, s in enumerate(shape) if a != axis]) if rest
                         else np.zeros(n, dtype=np.intp))

        def step(x, alive, t):
            members = np.flatnonzero(alive)
            return group_average(x, members, lines[(t - 1) % len(shape)][members])
        return step
    return new_trial


FACTORIES = dict(zip(METHODS, (allreduce, gossip, sgp, random_groups, moshpit)))


def rounds_to(variances, target):
    """First round whose variance is below target; the rounds run when never."""
    below = np.flatnonzero(np.asarray(variances) < target)
    return int(below[0]) if below.size else len(variances) - 1


def run_trial(step, rng, n, p, rounds, stop):
    """Variance after rounds 0..R of one trial (fewer when stopped at the target)."""
    x = rng.standard_normal(n)
    variances = [x.var()]
    for t in range(1, rounds + 1):
        x = step(x, rng.random(n) >= p, t)
        variances.append(x.var())
        if stop and variances[-1] < min(TARGETS):
            break
    return variances


def simulate(method, n, p, trials, rounds, rng, grid=(32, 32), group_size=32, stop=False):
    """(per-trial variance curves, seconds of the trial loop)."""
    opts = argparse.Namespace(grid=tuple(grid), group_size=group_size)
    new_trial = FACTORIES[method](n, opts)
    start = time.perf_counter()
    curves = [run_trial(new_trial(rng), rng, n, p, rounds, stop) for _ in range(trials)]
    return curves, time.perf_counter() - start


def summary(values):
    """Mean and standard error of the mean (0 for a single trial)."""
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return float(v.mean()), float(se)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        """Bad input: one line (no usage block), exit 2."""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def checked(convert, accepted, ok):
    """An argparse type: convert, then ok(value), else name what is accepted."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"'{text}' is not {accepted}")
        return value
    return parse


def grid_shape(text):
    """'32,32' or '32x32' -> (32, 32); None when not sides >= 1."""
    sides = [int(s) for s in text.replace("x", ",").split(",")]
    return tuple(sides) if sides and all(s >= 1 for s in sides) else None


def parse_args(argv):
    p = Parser(description="Moshpit Section 4.1 averaging experiment in plain numpy (prints JSON).")
    p.add_argument("--method", required=True, choices=METHODS)
    p.add_argument("--peers", required=True, type=checked(int, "an integer >= 1", lambda v: v >= 1))
    p.add_argument("--fail-rate", required=True, type=checked(float, "a number in [0, 1]", lambda v: 0 <= v <= 1))
    p.add_argument("--trials", required=True, type=checked(int, "an integer >= 1", lambda v: v >= 1))
    p.add_argument("--rounds", required=True, type=checked(int, "an integer >= 0", lambda v: v >= 0))
    p.add_argument("--grid", default=(32, 32),
                   type=checked(grid_shape, "a grid: sides >= 1 joined by ',' or 'x' such as 32,32", bool))
    p.add_argument("--group-size", default=32, type=checked(int, "an integer >= 2", lambda v: v >= 2))
    p.add_argument("--seed", default=0, type=checked(int, "an integer >= 0", lambda v: v >= 0))
    p.add_argument("--stop-at-target", action="store_true", help="end a trial once the variance is below 1e-9")
    args = p.parse_args(argv)
    if args.method == "moshpit" and math.prod(args.grid) < args.peers:
        p.error(f"argument --grid: {math.prod(args.grid)} cells cannot hold --peers {args.peers}: "
                "the grid needs at least as many cells as peers")
    if args.method == "sgp" and args.peers < 3:
        p.error(f"argument --peers: sgp needs an integer >= 3 (floor(log2(N - 1)) graphs), got {args.peers}")
    return args


def main(argv=None):
    a = parse_args(argv)
    curves, seconds = simulate(a.method, a.peers, a.fail_rate, a.trials, a.rounds, np.random.default_rng(a.seed),
                               a.grid, a.group_size, a.stop_at_target)
    out = {"method": a.method, "peers": a.peers, "fail_rate": a.fail_rate, "trials": a.trials,
           "rounds": a.rounds, "seconds": seconds}
    for target in TARGETS:
        name = f"rounds_to_{target:.0e}".replace("e-0", "e-")
        out[f"{name}_mean"], out[f"{name}_se"] = summary([rounds_to(c, target) for c in curves])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
