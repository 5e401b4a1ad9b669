#!/usr/bin/python3
"""export_tables: `avbench export` on real sequential runs of both programs.

    test_export.py AVERAGING_BENCH SGD_BENCH

- CSV, per row: one line per round (per evaluation step) of every trial, the
  trace's own column names, every value read back equal to the bit to the trace's
  datasets (h5py, not the package's reader);
- CSV --summary: the trace's /summary, column by column;
- netCDF: xarray opens it and finds load_trace(as_xarray=True)'s variables, equal;
- refusals (exit 2, one line): another extension, two traces into one .nc, the
  two run kinds in one CSV, a missing file; an existing OUT is left as it was.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import xarray as xr

import avbench
from avbench import schema
from bitwise import same
from tally import Tally

TOOLS = Path(__file__).resolve().parents[2] / "scripts" / "avbench"
T = Tally("export_tables")
check = T.check


def export(*args):
    return subprocess.run([str(TOOLS), "export", *args], capture_output=True, text=True)


def same_as_trace(csv, trace, columns, counter):
    """Every trial's rows of `columns` in the CSV equal the trace's datasets: in v9's
    /trials, trial t's rows are the first rows[t] cells of row t of each 2-D column
    and of the scale `counter` (round or step)."""
    df = pd.read_csv(csv, float_precision="round_trip")
    bad = []
    with h5py.File(trace) as f:
        t = f["trials"]
        trial, lengths = t["trial"][()], t["rows"][()]
        rows = int(lengths.sum())
        if len(df) != rows:
            return [f"{len(df)} CSV rows, the trace has {rows}"]
        for c in columns:
            values = t[c][()]
            for row, (k, n) in enumerate(zip(trial, lengths)):
                mine = df[df["trial"] == int(k)]
                want, got = (values[:n] if c == counter else values[row, :n]), mine[c].to_numpy()
                if not np.array_equal(want.astype(got.dtype) if want.dtype.kind != "f" else want, got, equal_nan=True):
                    bad.append(f"trial {k} column {c}")
    return bad


def main():
    avg_bench, sgd_bench = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        avg, sgd = tmp / "avg.h5", tmp / "sgd.h5"
        subprocess.run([avg_bench, "--engine", "sequential", "--peers", "32", "--protocol", "moshpit", "--fail-rate",
                        "0.05", "--trials", "4", "--rounds", "12", "--target", "1e-6", "--stop-at-target", "--quiet",
                        "--out", str(avg)], check=True, capture_output=True)
        subprocess.run([sgd_bench, "--engine", "sequential", "--peers", "8", "--protocol", "gossip", "--trials", "3",
                        "--steps", "40", "--eval-every", "10", "--quiet", "--out", str(sgd)],
                       check=True, capture_output=True)
        for trace, columns, counter in ((avg, schema.TRIAL_COLUMNS, "round"), (sgd, schema.TRAINING_COLUMNS, "step")):
            done = export(str(trace), "--out", str(tmp / "rows.csv"))
            names = list(columns)
            bad = same_as_trace(tmp / "rows.csv", trace, names, counter) if done.returncode == 0 else [done.stderr]
            check(not bad, f"{trace.name}: the CSV holds every row, {len(names)} columns by the trace's names, "
                           f"equal to the bit: {bad[:3]}")
            done = export(str(trace), "--out", str(tmp / "summary.csv"), "--summary")
            if done.returncode == 0:
                df = pd.read_csv(tmp / "summary.csv", float_precision="round_trip")
                with h5py.File(trace) as f:  # every column over trial (not the scale targets)
                    s = f["summary"]
                    bad = [c for c in s if c != "targets" and
                           not same(df[c].to_numpy().astype(s[c].dtype), s[c][()])]
            check(done.returncode == 0 and not bad, f"{trace.name} --summary: /summary column by column {bad}")
            nc = tmp / f"{trace.stem}.nc"
            done = export(str(trace), "--out", str(nc))
            if done.returncode == 0:
                want = avbench.load_trace(str(trace), as_xarray=True)
                with xr.open_dataset(nc, engine="h5netcdf") as got:
                    bad = [v for v in want.data_vars
                           if not np.array_equal(got[v].values, want[v].values, equal_nan=True)]
                    check(not bad and got.sizes == want.sizes, f"{trace.name}: the netCDF file is load_trace's "
                                                               f"Dataset {dict(got.sizes)} {bad}")
            else:
                check(False, f"{trace.name}: netCDF export failed: {done.stderr}")
        refusals = {"must end in .csv or .nc": [str(avg), "--out", str(tmp / "x.txt")],
                    "one trace": [str(avg), str(avg), "--out", str(tmp / "x.nc")],
                    "both run kinds": [str(avg), str(sgd), "--out", str(tmp / "x.csv")],
                    "no such file": [str(tmp / "none.h5"), "--out", str(tmp / "x.csv")]}
        (tmp / "x.csv").write_text("kept\n")  # a refused export leaves an existing OUT as it was
        for why, args in refusals.items():
            done = export(*args)
            lines = done.stderr.strip().splitlines()
            check(done.returncode == 2 and len(lines) == 1 and why in lines[0], f"refused, {why}: {lines}")
        left = sorted(p.name for p in tmp.iterdir() if p.name.startswith("."))
        check((tmp / "x.csv").read_text() == "kept\n" and not left, f"x.csv kept, no partial file left {left}")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
