"""One trace as an xarray.Dataset: load_trace(path, as_xarray=True) (docs/analysis.md).

Dimensions: `trial` (the trials' indices, in writing order) and the rows' own
dimension, `round` for an averaging trace and `step` for a training (sgd) one,
whose coordinate is every value any trial reached, sorted. A trial that did not
reach a value (cut short, stopped at a target, diverged) holds NaN there; a column
that needs such padding is float64 (an integer column too, as xarray itself pads),
one that needs none keeps the type stored in the file.

Variables over (trial, round|step): the per-row columns load_trace reads, plus
bytes_per_peer. Over (trial): seed, complete, diverged and the target attributes
(rounds_to_<t> or steps_to_<t>, reached_<t>). Attributes: the identity columns of
load_trace (trace, run_kind, schema_version, engine, peers, trace_complete) and
the run's /config, typed as load_trace types them, a key that clashes with a name
above prefixed by `config_` as there; booleans are stored as 0 or 1, so that
`ds.to_netcdf(...)` can write the dataset.

Built from what load_trace read, not from the file's dimension scales, so traces
of every known schema version load this way, the same for the same run: v9's table
(/trials over (trial, round|step)) gives the values v8's trial groups gave.
"""

from __future__ import annotations

import numpy as np

ROW_DIMENSION = {"averaging": "round", "sgd": "step"}


def grid(trials) -> tuple[np.ndarray, dict]:
    """(coordinate, {column: (trial, row) array}) of v1..v8 trials (traces._Trials, one
    array per trial and column): the coordinate every value of the row dimension
    that any trial reached, sorted; every per-row column but that one padded with NaN."""
    dim = ROW_DIMENSION[trials.kind]
    values = trials.parts[dim]
    coord = np.unique(np.concatenate(values)) if values else np.zeros(0, dtype=np.int32)
    positions = [np.searchsorted(coord, v) for v in values]
    # Unpadded only when every trial fills every cell: load_trace refuses a repeated
    # round or step, but an np.empty cell left unwritten would be garbage that looks
    # like data (6.9e-310 reads as converged), so do not rely on it here.
    padded = any(not np.array_equal(p, np.arange(len(coord))) for p in positions)
    out = {}
    for col in trials.columns:
        if col == dim:
            continue
        parts = trials.parts[col]
        dtype = np.float64 if padded or not parts else np.result_type(*parts)
        a = np.full((len(parts), len(coord)), np.nan, dtype=np.float64) if padded else \
            np.empty((len(parts), len(coord)), dtype=dtype)
        for i, (p, v) in enumerate(zip(positions, parts)):
            a[i, p] = v
        out[col] = a
    return coord, out


def _netcdf_value(v):
    """An attribute netCDF can store: a bool as 0 or 1, anything else as it is."""
    return int(v) if isinstance(v, (bool, np.bool_)) else v


def to_dataset(trials, ident: dict, config: dict):
    """The xarray.Dataset of one trace from what load_trace gathered (module docstring):
    traces._Trials (v1..v8) or trial_table.Table (v9), whose grid() gives the
    coordinate of the row dimension and the per-row columns over (trial, row)."""
    import xarray as xr

    dim = ROW_DIMENSION[trials.kind]
    coord, rows = trials.grid()
    if "bytes_sent" in rows:
        rows["bytes_per_peer"] = rows["bytes_sent"].astype(np.float64) / ident["peers"]
    per_trial = {
        "seed": np.asarray(trials.seeds, dtype=np.uint64),
        "complete": np.asarray(trials.completes, dtype=bool),
        "diverged": np.asarray(trials.divergeds, dtype=bool),
        **{k: np.asarray(v, dtype=np.int64) for k, v in trials.targets.items()},
    }
    data_vars = {**{k: (("trial", dim), v) for k, v in rows.items()},
                 **{k: (("trial",), v) for k, v in per_trial.items()}}
    taken = set(ident) | set(data_vars) | {"trial", dim}
    attrs = {k: _netcdf_value(v) for k, v in ident.items()}
    attrs.update({(k if k not in taken else f"config_{k}"): _netcdf_value(v) for k, v in config.items()})
    return xr.Dataset(data_vars, coords={"trial": np.asarray(trials.ids, dtype=np.int64), dim: coord}, attrs=attrs)
