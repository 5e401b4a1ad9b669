"""Writes traces' rows as a CSV or netCDF file, in the traces' own column names.

    avbench export TRACE.h5 [TRACE.h5 ...] --out FILE.csv [--summary] [--config]
    avbench export TRACE.h5 --out FILE.nc

CSV: one row per round (averaging) or evaluation step (training) of every trial
of every trace, the columns of load_trace (docs/analysis.md): the trace's path,
its identity (run_kind, engine, peers, ...), the trial, its seed and flags, the
per-row columns of docs/trace-format.md, bytes_per_peer and the targets' rounds
(steps). --summary writes one row per trial instead (/summary: read_summary's
columns), --config adds every recorded option as a column (a name that collides
with a column above is prefixed config_, as everywhere). Traces of both kinds
cannot share one CSV file.

netCDF (FILE.nc, one trace): load_trace(as_xarray=True)'s Dataset over (trial,
round) or (trial, step), the options as attributes.

Exit 0 when written; 2 for bad arguments or a file that is not a trace, with one
line naming it, and OUT as it was (the file is written beside it, then renamed).
"""
from __future__ import annotations

import argparse
import os
import sys

import h5py

from avbench.cli import OneLineParser


def _without_config(df, path):
    """df without the columns that /config added (kept: the identity and rows)."""
    from avbench.traces import read_config
    with h5py.File(path, "r") as f:
        keys = read_config(f)
    # A key that collided with a column went in as config_<key> (traces.py).
    added = [f"config_{k}" if f"config_{k}" in df.columns else k for k in keys]
    return df.drop(columns=[c for c in added if c in df.columns])


def frame(paths, summary: bool = False, config: bool = False):
    """The rows of every trace as one DataFrame (per trial with `summary`)."""
    import pandas as pd
    from avbench.traces import load_trace, read_summary
    frames = []
    for path in paths:
        df = read_summary(path) if summary else load_trace(path)
        frames.append(df if config else _without_config(df, path))
    kinds = {str(df["run_kind"].iloc[0]) for df in frames if len(df)}
    if len(kinds) > 1:
        raise ValueError("traces of both run kinds (averaging and sgd) cannot share one table: export each kind alone")
    return pd.concat(frames, ignore_index=True)


def main(argv: list[str]) -> int:
    p = OneLineParser(prog="avbench export", description=__doc__.split("\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1])
    p.add_argument("traces", nargs="+", metavar="TRACE.h5")
    p.add_argument("--out", required=True, help="FILE.csv, or FILE.nc (netCDF, one trace)")
    p.add_argument("--summary", action="store_true", help="one row per trial (/summary), not per round or step")
    p.add_argument("--config", action="store_true", help="add every recorded option as a column")
    a = p.parse_args(argv)
    ext = os.path.splitext(a.out)[1].lower()
    if ext not in (".csv", ".nc"):
        p.error(f"--out {a.out}: the name must end in .csv or .nc (netCDF)")
    if ext == ".nc" and (len(a.traces) != 1 or a.summary or a.config):
        p.error("--out FILE.nc: one trace, without --summary or --config (its options are the Dataset's attributes)")
    for path in a.traces:
        if not os.path.isfile(path):
            p.error(f"{path}: no such file")
    from avbench.files import TraceError
    # Written beside OUT, then renamed: a failed export leaves OUT as it was.
    partial = os.path.join(os.path.dirname(a.out) or ".", f".{os.path.basename(a.out)}.tmp.{os.getpid()}{ext}")
    try:
        if ext == ".nc":
            from avbench.traces import load_trace
            # h5netcdf: netCDF-4, which keeps the seeds' uint64 (netCDF-3 cannot).
            load_trace(a.traces[0], as_xarray=True).to_netcdf(partial, engine="h5netcdf")
        else:
            frame(a.traces, a.summary, a.config).to_csv(partial, index=False)
        os.replace(partial, a.out)
    except (OSError, TraceError, ValueError) as e:
        if os.path.exists(partial):
            os.remove(partial)
        p.error(str(e))
    print(f"avbench export: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
