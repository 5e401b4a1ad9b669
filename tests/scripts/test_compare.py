#!/usr/bin/python3
"""compare_paired: `avbench compare` and avbench.paired on real sequential runs.

    test_compare.py AVERAGING_BENCH

- the paired mean difference of rounds to each target equals the one computed
  from the traces' own /summary (rounds_to_<t>, written by the C++ side), trial
  by trial matched by seed; the interval is mean +- t(0.975, n-1) * sd / sqrt(n)
  with the quantile written out, not computed;
- a trace paired with itself: every difference 0, p = 1, nothing significant;
- gossip on a ring against all-reduce: significantly more rounds;
- refusals (exit 2, one line naming why): another --seed, another --fail-rate
  (the failures differ), another --peers;
- `--csv` writes what avbench.paired returns.
"""
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

import avbench
from tally import Tally

TOOLS = Path(__file__).resolve().parents[2] / "scripts" / "avbench"
T_975_19 = 2.093024054408263  # Student's t, 97.5% quantile, 19 degrees of freedom (tables)
T = Tally("compare_paired")
check = T.check


def run(bench, out, protocol, *extra, peers="64", fail_rate="0.02"):
    args = [bench, "--engine", "sequential", "--peers", peers, "--protocol", protocol, "--fail-rate", fail_rate,
            "--trials", "20", "--rounds", "60", "--quiet", "--out", str(out), "--overwrite", *extra]
    subprocess.run(args, check=True, capture_output=True)
    return str(out)


def compare(*args):
    return subprocess.run([str(TOOLS), "compare", *args], capture_output=True, text=True)


def rounds_by_seed(path, suffix):
    with h5py.File(path) as f:
        s = f["summary"]
        return dict(zip(s["seed"][()].tolist(), s[f"rounds_to_{suffix}"][()].tolist()))


def main():
    bench = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = run(bench, tmp / "allreduce.h5", "allreduce", "--on-failure", "survivors")
        moshpit = run(bench, tmp / "moshpit.h5", "moshpit")
        gossip = run(bench, tmp / "gossip.h5", "gossip", "--topology", "ring")
        df = avbench.paired([base, moshpit, gossip])

        for suffix in ("1e-4", "1e-9"):
            a, b = rounds_by_seed(base, suffix), rounds_by_seed(moshpit, suffix)
            d = np.array([b[s] - a[s] for s in a], dtype=float)
            row = df[(df["label"] == "moshpit") & (df["metric"] == "rounds") & (df["target"] == float(suffix))].iloc[0]
            half = T_975_19 * d.std(ddof=1) / math.sqrt(d.size)
            check(row["pairs"] == 20 and row["mean_difference"] == d.mean(),
                  f"moshpit - allreduce, rounds to {suffix}: {row['mean_difference']} = the summaries' {d.mean()}")
            check(math.isclose(row["ci_high"] - row["mean_difference"], half, rel_tol=1e-9) or (half == 0 and
                  row["ci_high"] == row["mean_difference"]), f"its interval's half width {half:.6g}")
        ring = df[(df["label"] == "gossip (ring)") & (df["metric"] == "rounds")]
        check(bool(ring["significant"].all()) and bool((ring["ci_low"] > 0).all()),
              f"gossip on a ring needs significantly more rounds than all-reduce: {ring['mean_difference'].tolist()}")

        same = avbench.paired([moshpit, moshpit])
        check(bool((same["mean_difference"] == 0).all()) and bool((same["p_value"] == 1).all())
              and not same["significant"].any(), "a trace against itself: differences 0, p = 1, none significant")

        csv = tmp / "paired.csv"
        done = compare(base, moshpit, gossip, "--csv", str(csv))
        check(done.returncode == 0 and "paired differences against allreduce" in done.stdout,
              f"avbench compare prints the paired table (exit {done.returncode}) {done.stderr.strip()}")
        if csv.exists():
            written = pd.read_csv(csv)
            check(np.allclose(written["mean_difference"], df["mean_difference"], rtol=1e-12, atol=0)
                  and written["significant"].tolist() == df["significant"].tolist(), "--csv holds avbench.paired's rows")

        refusals = {"no complete trial seed in common": run(bench, tmp / "seed1.h5", "moshpit", "--seed", "1"),
                    "failures differ": run(bench, tmp / "fail.h5", "moshpit", fail_rate="0.1"),
                    "peers 32 against 64": run(bench, tmp / "p32.h5", "moshpit", peers="32")}
        for why, other in refusals.items():
            done = compare(base, other)
            lines = done.stderr.strip().splitlines()
            check(done.returncode == 2 and len(lines) == 1 and why in lines[0],
                  f"refused, {why}: exit {done.returncode}, {lines}")
        done = compare(base, refusals["failures differ"], "--unpaired")
        check(done.returncode == 0 and "paired" not in done.stdout, "--unpaired: the table alone, exit 0")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
