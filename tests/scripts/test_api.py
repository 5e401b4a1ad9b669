#!/usr/bin/python3
"""python_api: avbench.run and avbench.sweep against the programs run by hand.

    test_api.py AVERAGING_BENCH

- avbench.run(..., fail_rate=0.02, target=[...], stop_at_target=True) returns the
  Dataset load_trace(as_xarray=True) reads from the trace of the same command typed
  by hand, every variable equal to the bit, and records the options it was given;
- engine="openmpi" (mpirun, 4 ranks) gives the sequential engine's values, bit for bit;
- a bad option raises RunError with the program's one error line;
- sweep() runs every point of the grid, in order, and keeps the traces `out` names.
The sequential runs go through avbench._engine in this process where the build
made it (not the sanitized build: there they start the program).
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import avbench
from bitwise import same
from tally import Tally

T = Tally("python_api")
check = T.check


def equal(a, b, names):
    return [v for v in names if not same(a[v].values, b[v].values)]


def main():
    bench = sys.argv[1]
    os.environ["AVB_BIN_DIR"] = str(Path(bench).parent)
    here = {"in_process": any((Path(bench).parent.parent / "python").glob("_engine*.so"))}
    print(f"sequential runs {'in this process' if here['in_process'] else 'as programs'}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ds = avbench.run(protocol="moshpit", peers=64, fail_rate=0.02, trials=4, rounds=30, target=[1e-3, 1e-8],
                         stop_at_target=True, out=tmp / "api.h5", **here)
        subprocess.run([bench, "--engine", "sequential", "--peers", "64", "--protocol", "moshpit", "--fail-rate", "0.02",
                        "--trials", "4", "--rounds", "30", "--target", "1e-3", "1e-8", "--stop-at-target", "--quiet",
                        "--out", str(tmp / "cli.h5")], check=True, capture_output=True)
        cli = avbench.load_trace(str(tmp / "cli.h5"), as_xarray=True)
        differ = equal(ds, cli, list(cli.data_vars))
        check(not differ and ds.sizes == cli.sizes, f"run() is the typed command's Dataset {dict(ds.sizes)}: {differ}")
        check(ds.attrs.get("fail-rate") == 0.02 and ds.attrs.get("stop-at-target") in (True, 1, "true"),
              f"run() recorded fail-rate {ds.attrs.get('fail-rate')} and stop-at-target {ds.attrs.get('stop-at-target')}")

        mpi = avbench.run(protocol="moshpit", peers=4, engine="openmpi", trials=2, rounds=5, fail_rate=0.1)
        seq = avbench.run(protocol="moshpit", peers=4, trials=2, rounds=5, fail_rate=0.1, **here)
        values = ["variance", "error", "alive", "groups", "failed_groups", "bytes_sent"]
        differ = equal(mpi, seq, values)
        check(not differ, f"engine='openmpi' (4 ranks) gives the sequential engine's {', '.join(values)}: {differ}")

        try:
            avbench.run(protocol="gossip", peers=8, topolgy="exp", **here)
            check(False, "a mistyped option raises RunError")
        except avbench.RunError as e:
            check("--topolgy: unknown option (did you mean '--topology'?)" in str(e), f"RunError: {e}")

        runs = avbench.sweep({"protocol": ["allreduce", "pairwise"], "fail_rate": [0.0, 0.05]}, peers=16, trials=2,
                             rounds=8, **here, out=str(tmp / "sweep" / "{protocol}_{fail_rate}.h5"))
        points = [(p["protocol"], p["fail_rate"]) for p, _ in runs]
        files = sorted(f.name for f in (tmp / "sweep").iterdir())
        check(points == [("allreduce", 0.0), ("allreduce", 0.05), ("pairwise", 0.0), ("pairwise", 0.05)] and
              files == ["allreduce_0.0.h5", "allreduce_0.05.h5", "pairwise_0.0.h5", "pairwise_0.05.h5"] and
              all(d.attrs["protocol"] == p["protocol"] for p, d in runs), f"sweep(): {points}, traces {files}")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
