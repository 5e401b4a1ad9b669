"""avbench analysis: load HDF5 traces into tidy pandas DataFrames and draw the
standard figures (docs/analysis.md).

    import sys; sys.path.insert(0, "<repo>/python")
    import avbench
    df = avbench.load_sweep("experiments/moshpit_table/results")    # folder, glob or list
    avbench.plot_metric(df[df["peers"] == 1024], x="round", by="protocol")
    avbench.standard_figures(df, "figures/")

Needs Debian's h5py, numpy, pandas and matplotlib (run with /usr/bin/python3).
"""

from .figures import aggregate, plot_metric, standard_figures
from .traces import (KNOWN_SCHEMA_VERSIONS, TraceError, load_summary, load_sweep, load_trace, per_trial,
                     read_summary, read_walltimes, trace_paths, trace_state, value_at)

__all__ = ["KNOWN_SCHEMA_VERSIONS", "TraceError", "aggregate", "load_summary", "load_sweep", "load_trace",
           "per_trial", "plot_metric", "read_summary", "read_walltimes", "standard_figures", "trace_paths",
           "trace_state", "value_at"]
