"""sgp-paper on the sequential engine against the independent numpy model of the
authors' SGP (bench/numpy_averaging.py, method sgp): the mean rounds to 1e-9 over
many trials must agree within the two runs' noise, at sizes where the graph's
wrap-around rows matter (N not a power of two).

    test_sgp_paper_numpy.py AVERAGING_BENCH OUT_DIR

The two draw their initial values and failures from their own random streams, so
the comparison is statistical: |difference| <= 4 sqrt(se_a^2 + se_b^2) + 0.25 (the
rounds are integers; at p = 0 both standard errors can be near zero).
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CELLS = ((768, 0.0), (900, 0.01))
TRIALS = 100


def ours(bench, out_dir, n, p):
    out = out_dir / f"sgp_N{n}_p{p}.h5"
    subprocess.run([bench, "--engine", "sequential", "--peers", str(n), "--protocol", "sgp-paper",
                    "--fail-rate", str(p), "--trials", str(TRIALS), "--rounds", "50", "--seed", "2021",
                    "--target", "1e-9", "--target", "1e-4", "--stop-at-target", "--quiet", "--overwrite",
                    "--out", str(out)], check=True)
    with h5py.File(out, "r") as f:
        rounds = np.asarray(f["summary/rounds_to_1e-9"], dtype=float)
        assert f.attrs["complete"], f"{out}: trace not complete"
    return rounds.mean(), rounds.std(ddof=1) / math.sqrt(rounds.size)


def numpy_model(n, p):
    run = subprocess.run([sys.executable, str(ROOT / "bench/numpy_averaging.py"), "--method", "sgp",
                          "--peers", str(n), "--fail-rate", str(p), "--trials", str(TRIALS), "--rounds", "50",
                          "--seed", "7", "--stop-at-target"], check=True, capture_output=True, text=True)
    out = json.loads(run.stdout)
    return out["rounds_to_1e-9_mean"], out["rounds_to_1e-9_se"]


def main(bench, out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for n, p in CELLS:
        (a, se_a), (b, se_b) = ours(bench, out_dir, n, p), numpy_model(n, p)
        bound = 4 * math.hypot(se_a, se_b) + 0.25
        ok = abs(a - b) <= bound
        failed += not ok
        print(f"N={n} p={p}: sgp-paper {a:.2f} ± {se_a:.2f}, numpy sgp {b:.2f} ± {se_b:.2f}, "
              f"|difference| {abs(a - b):.2f} {'<=' if ok else '>'} {bound:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
