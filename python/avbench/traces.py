"""Loading avbench HDF5 traces (docs/trace-format.md) into tidy pandas DataFrames.

One row per (trace, trial, row of the trial): a round of an averaging trace, an
evaluation of a training (sgd) trace. Every row carries what is needed to group it
without going back to the file:

  trace            the file's path, as given (str)
  run_kind         "averaging" or "sgd" (schema v1 files, which predate the
                   attribute, are averaging traces)
  schema_version   1 to 5
  engine           "openmpi", "mpich" or "smpi"
  peers            n_peers, the number of peers N
  trace_complete   the root `complete` (False: the run was stopped early)
  trial            the trial's index (its group name under /trials)
  seed             the trial's seed (uint64)
  complete         the trial's own `complete` (False: cut short; keep it out of
                   averages, which figures.plot_metric does by default)
  diverged         sgd, schema v5: the trial's model became NaN or infinite and
                   it was stopped there (keep it out of averages too); False for
                   averaging traces and earlier files
  <per-row columns>  round, variance, error, ... or step, round, loss, gap, ...
                   exactly as stored; `decode_failures`, added in schema v3, is 0
                   for v1/v2 files (nothing could fail to decode before quantizers),
                   and `detection_time`, added in v4, is 0.0 for earlier files (no
                   detection timeout existed)
  bytes_per_peer   bytes_sent / peers (cumulative, like bytes_sent)
  rounds_to_<t>, reached_<t> (averaging) or steps_to_<t>, reached_<t> (sgd)
                   the trial's target attributes, repeated on each of its rows
  <config>         every /config attribute but `text`, typed: integers and floats
                   as numbers, "true"/"false" as bools, the rest (e.g. "32x32",
                   "0.0001,1e-09") as str. A config key that collides with a column
                   above (e.g. the run's `seed`) is prefixed: `config_seed`.

Columns a trace lacks (a config option another protocol does not have) are NaN in a
sweep. Nothing here prints; unreadable or unknown files raise.
"""

from __future__ import annotations

import glob as _glob
import os
from pathlib import Path
from typing import Iterable, Union

import h5py
import numpy as np
import pandas as pd

# v1: no run_kind; v1, v2: no decode_failures; v1-v3: no detection_time; v1-v4: no diverged
KNOWN_SCHEMA_VERSIONS = (1, 2, 3, 4, 5)
DIVERGED_SINCE = 5
RUN_KINDS = ("averaging", "sgd")

# Per-row columns by run kind, in the writer's order (tests/scripts/check_trace.py).
ROW_COLUMNS = {
    "averaging": ("round", "variance", "error", "mean_drift", "alive", "groups", "failed_groups",
                  "decode_failures", "bytes_sent", "time", "detection_time"),
    "sgd": ("step", "round", "loss", "gap", "relative_gap", "distance", "consensus", "accuracy", "alive",
            "groups", "failed_groups", "decode_failures", "bytes_sent", "time", "detection_time"),
}
ADDED_IN = {"decode_failures": 3, "detection_time": 4}
ADDED_DTYPE = {"decode_failures": np.int32, "detection_time": np.float64}
# What identifies a row, before the per-row columns.
ID_COLUMNS = ("trace", "run_kind", "schema_version", "engine", "peers", "trace_complete", "trial", "seed",
              "complete", "diverged")
TARGET_PREFIXES = ("rounds_to_", "steps_to_", "reached_")

PathLike = Union[str, os.PathLike]


def parse_value(text: str):
    """A /config value typed where obvious: int, float, bool, else the str itself."""
    s = str(text).strip()
    if s in ("true", "false"):
        return s == "true"
    try:
        return int(s)
    except ValueError:
        pass
    if s.lower() in ("nan", "inf", "-inf", "infinity"):
        return str(text)  # as option values these are more likely names than numbers
    try:
        return float(s)
    except ValueError:
        return str(text)


def read_config(f: h5py.File) -> dict:
    """/config as {option: typed value}, without `text`."""
    if "config" not in f:
        return {}
    return {k: parse_value(v) for k, v in f["config"].attrs.items() if k != "text"}


def _attr_str(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def load_trace(path: PathLike, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """Every row of every trial of one trace, as a tidy DataFrame (module docstring).

    `columns` limits the per-row columns read (round, and step for sgd, always are):
    each is a dataset of its own, and reading fewer is faster on big sweeps.

    A trace stopped early (`complete` = 0 at the root, or on a trial) is loaded as it
    is and flagged in `trace_complete` / `complete`. Raises ValueError for a schema
    version this reader does not know or an unknown run_kind, OSError for a file
    HDF5 cannot open.
    """
    path = os.fspath(path)
    with h5py.File(path, "r") as f:
        version = int(f.attrs.get("schema_version", -1))
        if version not in KNOWN_SCHEMA_VERSIONS:
            raise ValueError(f"{path}: schema_version {version}; this reader knows "
                             f"{', '.join(map(str, KNOWN_SCHEMA_VERSIONS))}")
        kind = "averaging" if version == 1 else _attr_str(f.attrs.get("run_kind", ""))
        if kind not in RUN_KINDS:
            raise ValueError(f"{path}: run_kind {kind!r} is neither averaging nor sgd")
        peers = int(f.attrs["n_peers"])
        ident = {
            "trace": path, "run_kind": kind, "schema_version": version,
            "engine": _attr_str(f.attrs.get("engine", "")), "peers": peers,
            "trace_complete": bool(int(f.attrs.get("complete", 0))),
        }
        wanted = None if columns is None else set(columns) | {"round", "step"}
        columns = tuple(c for c in ROW_COLUMNS[kind] if wanted is None or c in wanted)
        config = read_config(f)
        # Gather every trial's columns as arrays and build one frame at the end:
        # a DataFrame per trial costs ~1 ms, which a sweep of 10,000 trials notices.
        parts: dict[str, list] = {c: [] for c in columns}
        trial_ids, seeds, completes, divergeds, lengths = [], [], [], [], []
        targets: dict[str, list] = {}
        for i, (name, g) in enumerate(f["trials"].items() if "trials" in f else []):
            length = None
            for col in columns:
                if col in g:
                    parts[col].append(g[col][()])
                    length = len(parts[col][-1])
                elif ADDED_IN.get(col, 1) <= version:
                    raise ValueError(f"{path}: /trials/{name} has no {col} column")
            length = length or 0
            for col in columns:
                if len(parts[col]) == i:  # added by a later schema: 0 throughout
                    parts[col].append(np.zeros(length, dtype=ADDED_DTYPE.get(col, np.int32)))
            trial_ids.append(int(name))
            seeds.append(np.uint64(g.attrs.get("seed", 0)))
            completes.append(bool(int(g.attrs.get("complete", 0))))
            if kind == "sgd" and version >= DIVERGED_SINCE and "diverged" not in g.attrs:
                raise ValueError(f"{path}: /trials/{name} has no diverged attribute (schema v{version})")
            divergeds.append(bool(int(g.attrs.get("diverged", 0))))
            lengths.append(length)
            for k, v in g.attrs.items():
                if k.startswith(TARGET_PREFIXES):
                    targets.setdefault(k, [-1] * i).append(int(v))
            for v in targets.values():  # a target this trial lacks (none should)
                if len(v) == i:
                    v.append(-1)
    data: dict = {k: np.repeat(np.asarray([v], dtype=object if isinstance(v, str) else None), sum(lengths))
                  for k, v in ident.items()}
    data["trial"] = np.repeat(np.asarray(trial_ids, dtype=np.int64), lengths)
    data["seed"] = np.repeat(np.asarray(seeds, dtype=np.uint64), lengths)
    data["complete"] = np.repeat(np.asarray(completes, dtype=bool), lengths)
    data["diverged"] = np.repeat(np.asarray(divergeds, dtype=bool), lengths)
    for col in columns:
        data[col] = np.concatenate(parts[col]) if parts[col] else np.zeros(0, dtype=np.float64)
    df = pd.DataFrame(data)
    if "bytes_sent" in df:
        df["bytes_per_peer"] = df["bytes_sent"].astype(float) / peers
    for k, v in targets.items():
        df[k] = np.repeat(np.asarray(v, dtype=np.int64), lengths)
    for k, v in config.items():
        name = k if k not in df.columns else f"config_{k}"
        df[name] = v
    return df


def trace_paths(source, pattern: str = "*.h5") -> list[str]:
    """The trace files named by `source`: a file, a folder (its `pattern` files,
    sorted; hidden temporary files of runs in progress never match), a glob
    pattern, or an iterable of any of these. Order kept, duplicates dropped."""
    items: Iterable = [source] if isinstance(source, (str, os.PathLike)) else source
    out: list[str] = []
    for item in items:
        s = os.fspath(item)
        if os.path.isdir(s):
            found = sorted(str(p) for p in Path(s).glob(pattern))
        elif _glob.has_magic(s):
            found = sorted(_glob.glob(s))
        else:
            found = [s]
        out += [p for p in found if p not in out]
    return out


def load_sweep(source, pattern: str = "*.h5", run_kind: str | None = None,
               columns: Iterable[str] | None = None) -> pd.DataFrame:
    """Every trace named by `source` (see trace_paths) in one tidy DataFrame.

    `run_kind` ("averaging" or "sgd") keeps only traces of that kind, for folders
    holding both. Raises FileNotFoundError when no trace is left (an empty sweep is
    almost always a wrong path), and what load_trace raises for a bad file.
    `columns` is load_trace's.
    """
    paths = trace_paths(source, pattern)
    frames = []
    for p in paths:
        if not os.path.exists(p):
            raise FileNotFoundError(p)
        df = load_trace(p, columns)
        if run_kind is None or (len(df) and df["run_kind"].iat[0] == run_kind) or \
                (not len(df) and _kind_of(p) == run_kind):
            frames.append(df)
    if not frames:
        raise FileNotFoundError(f"no {run_kind + ' ' if run_kind else ''}traces in {source!r}")
    # Concatenating frames whose config columns differ gives NaN where a trace lacks one.
    return pd.concat(frames, ignore_index=True, sort=False)


def _kind_of(path: str) -> str:
    with h5py.File(path, "r") as f:
        return "averaging" if int(f.attrs.get("schema_version", 1)) == 1 else _attr_str(f.attrs.get("run_kind", ""))


def per_trial(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, trial): its last row (final values, totals, targets)."""
    return df.groupby(["trace", "trial"], sort=False, as_index=False).tail(1).reset_index(drop=True)
