"""avbench analysis: load HDF5 traces into tidy pandas DataFrames and draw the
standard figures (docs/analysis.md).

    import avbench      # pip install ./python; or, in a checkout, PYTHONPATH=python
    df = avbench.load_sweep("experiments/moshpit_table/results")    # folder, glob or list
    avbench.plot_metric(df[df["peers"] == 1024], x="round", by="protocol")
    avbench.standard_figures(df, "figures/")
    ds = avbench.load_trace("run.h5", as_xarray=True)   # an xarray.Dataset over (trial, round)
    avbench.paired(["a.h5", "b.h5"])                     # paired differences, same seeds
    ds = avbench.run(protocol="moshpit", peers=1024, fail_rate=0.01, out="m.h5")   # a run, its Dataset

Needs Debian's h5py, numpy, pandas and matplotlib (run with /usr/bin/python3). The
names load on first use, so that `avbench.trace_state` (h5py only) stays cheap.
The tools (sweep, aggregate, compare, check, platform, availability) are the
`avbench` command (avbench/cli.py; scripts/avbench in a checkout).
"""

import importlib

_WHERE = {
    "files": ("TraceError", "trace_state"),
    "trials": ("all_trial_columns", "all_trial_info", "trial_columns", "trial_count", "trial_info", "trial_targets"),
    "traces": ("KNOWN_SCHEMA_VERSIONS", "load_summary", "load_sweep", "load_trace", "per_trial", "read_summary",
               "read_walltimes", "trace_paths", "value_at"),
    "figures": ("aggregate", "plot_metric", "standard_figures"),
    "tables": ("table_parser", "write_table"),
    "paired": ("PairingError", "paired"),
    "api": ("RunError", "RunWarning", "run", "sweep"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'avbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
