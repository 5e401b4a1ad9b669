"""Loading avbench HDF5 traces (docs/trace-format.md) into tidy pandas DataFrames.

One row per (trace, trial, row of the trial): a round of an averaging trace, an
evaluation of a training (sgd) trace. Every row carries what is needed to group it
without going back to the file:

  trace            the file's path, as given (str)
  run_kind         "averaging" or "sgd" (schema v1 files, which predate the
                   attribute, are averaging traces)
  schema_version   one of KNOWN_SCHEMA_VERSIONS
  engine           "openmpi", "mpich", "smpi" or "sequential"
  peers            n_peers, the number of peers N
  trace_complete   the root `complete` (False: the run was stopped early)
  trial            the trial's index (its group name under /trials; v9: /trials/trial)
  seed             the trial's seed (uint64)
  complete         the trial's own `complete` (False: cut short; keep it out of
                   averages, which figures.plot_metric does by default)
  diverged         sgd, schema v5: the trial's model became NaN or infinite, or
                   its gap passed its limit (docs/sgd.md), and it was stopped
                   there (keep it out of averages too); False for averaging
                   traces and earlier files
  <per-row columns>  round, variance, error, ... or step, round, loss, gap, ...
                   exactly as stored (v9: the trial's cells of the 2-D columns,
                   the scale for `round` or `step`); `decode_failures`, added in
                   schema v3, is 0 for v1/v2 files (nothing could fail to decode),
                   `detection_time`, added in v4, is 0.0 for earlier files (no
                   detection timeout existed), and the averaging `late`, added in
                   v8, is 0 for earlier files (no waiting policy existed)
  bytes_per_peer   bytes_sent / peers (cumulative, like bytes_sent)
  rounds_to_<t>, reached_<t> (averaging) or steps_to_<t>, reached_<t> (sgd)
                   the trial's target attributes, repeated on each of its rows
  <config>         every /config attribute but `text`, typed: integers and floats
                   as numbers, "true"/"false" as bools, the rest (e.g. "32x32",
                   "0.0001,1e-09") as str. A config key that collides with a column
                   above (e.g. the run's `seed`) is prefixed: `config_seed`.

Columns a trace lacks (a config option another protocol does not have) are NaN in a
sweep. Nothing here prints. A file that is not a trace this reader knows, or that
breaks a promise of the schema it loads, raises TraceError, a ValueError whose
message names the file and the dataset or attribute at fault. The readers refuse
every structural fault scripts/avbench check refuses, by the same rules
(schema.py): the schema version, the root attributes and groups they read, every
column of every trial present, 1-D, of its exact type and of the trial's length,
round (averaging) 0, 1, 2, ... or step (sgd) from 0 and increasing with round never
decreasing, the complete flags (only the last trial cut short, none in a complete
run), /summary one row per trial; in v9 (trial_table.py) the table's shapes,
trial indices and rows, and /summary agreeing with /trials. Besides, a column read
is checked against what the format promises of its values (finite where it says so).
"""

from __future__ import annotations

import glob as _glob
import os
from pathlib import Path
from typing import Iterable

import h5py
import numpy as np
import pandas as pd

from . import schema

# v1: no run_kind; v1, v2: no decode_failures; v1-v3: no detection_time; v1-v4: no diverged;
# v1-v6: no dimension scales (which this reader does not need); v1-v7: no late
KNOWN_SCHEMA_VERSIONS = schema.KNOWN_VERSIONS
DIVERGED_SINCE = schema.DIVERGED_SINCE
RUN_KINDS = schema.RUN_KINDS

# Per-row columns by run kind, in the writer's order.
ROW_COLUMNS = {kind: tuple(spec) for kind, spec in schema.ROW_SPECS.items()}
ADDED_IN = schema.ADDED_IN
ADDED_DTYPE = {"decode_failures": np.int32, "detection_time": np.float64}
# What identifies a row, before the per-row columns.
ID_COLUMNS = ("trace", "run_kind", "schema_version", "engine", "peers", "trace_complete", "trial", "seed",
              "complete", "diverged")
TARGET_PREFIXES = schema.TARGET_PREFIXES
COLUMN_KIND = schema.VALUE_PROMISES  # what the format promises of each per-row column's values
TRIAL_NAME = schema.TRIAL_NAME  # a trial's index in decimal, as the writer names it (fullmatch)

from .files import (PathLike, TraceError, _attr, _flag, check_summary,  # noqa: F401, E402
                    identity, open_trace, trial_count)  # (TraceError: public here too)


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


def _read_column(path: str, ds: h5py.Dataset, where: str, col: str) -> np.ndarray:
    """One per-row column (its type already checked), checked against what the format
    promises of its values."""
    v = ds[()]
    bad = schema.promise_violation(col, v)
    if bad is not None:
        i = bad[0]
        diverged = " (a diverged model may be +inf or NaN after row 0)" if COLUMN_KIND[col] == "model" else ""
        raise TraceError(path, where, f"row {i} is {v[i]}, where the format promises a finite value{diverged}")
    return v


def load_trace(path: PathLike, columns: Iterable[str] | None = None, as_xarray: bool = False):
    """Every row of every trial of one trace, as a tidy DataFrame (module docstring).

    `columns` limits the per-row columns read (round, and step for sgd, always are):
    each is a dataset of its own, and reading fewer is faster on big sweeps.
    `as_xarray=True` returns the same values as one xarray.Dataset over (trial,
    round), or (trial, step) for an sgd trace, trials of unequal length padded by
    NaN, the config as attributes (avbench/datasets.py).

    A trace stopped early (`complete` = 0 at the root, or on a trial) is loaded as it
    is and flagged in `trace_complete` / `complete`. Raises FileNotFoundError for a
    missing file and TraceError (a ValueError naming the file and the dataset) for
    anything else: a file HDF5 cannot open, or one avbench check refuses for its
    structure (module docstring), or a column read whose values break the format's
    promise (NaN where it says finite). `columns` limits what is read, not what is
    checked: the other columns' presence, type and length are checked from their
    metadata, their values are not read.

    Both layouts of /trials give the same frame for the same run: v1..v8's group per
    trial, and v9's one table over (trial, row), whose 2-D columns are each read
    once (trial_table.py), the trials' seeds, flags and targets coming from /summary.
    """
    path = os.fspath(path)
    f = open_trace(path)
    with f:
        ident = identity(path, f)
        kind = ident["run_kind"]
        wanted = None if columns is None else set(columns) | {"round", "step"}
        names = tuple(c for c in ROW_COLUMNS[kind] if wanted is None or c in wanted)
        trials = _table(path, f, ident, names) if schema.is_table(ident["schema_version"]) else \
            _groups(path, f, ident, names)
        config = read_config(f)
    if as_xarray:
        from .datasets import to_dataset
        return to_dataset(trials, ident, config)
    return _frame(trials, ident, config)


def _table(path: str, f: h5py.File, ident: dict, names: tuple[str, ...]):
    """The trials of a v9 trace (its one table), checked."""
    from .trial_table import read_table
    return read_table(path, f, ident, names)


def _groups(path: str, f: h5py.File, ident: dict, names: tuple[str, ...]) -> "_Trials":
    """The trials of a v1..v8 trace (a group per trial), checked."""
    trials = _Trials(path, ident["schema_version"], ident["run_kind"], names)
    for name, g in f["trials"].items():
        trials.add(name, g)
    for where, why in schema.completeness_problems(int(ident["trace_complete"]), trials.flags()):
        raise TraceError(path, where, why)
    check_summary(path, f, len(trials.ids))
    return trials


class _Trials:
    """The trials of one trace, gathered as arrays and made one frame at the end: a
    DataFrame per trial would cost more than reading the trial on a big sweep."""

    def __init__(self, path: str, version: int, kind: str, columns: tuple[str, ...]):
        self.path, self.version, self.kind, self.columns = path, version, kind, columns
        self.parts: dict[str, list] = {c: [] for c in columns}
        self.ids, self.seeds, self.completes, self.divergeds, self.lengths = [], [], [], [], []
        self.targets: dict[str, list] = {}

    def add(self, name: str, g) -> None:
        """Trial `name` (the group /trials/<name>), checked."""
        where = f"/trials/{name}"
        if not TRIAL_NAME.fullmatch(name) or not isinstance(g, h5py.Group):
            raise TraceError(self.path, where, "not a trial: trials are groups named by their index "
                                               "(0, 1, 2, ... in decimal, without leading zeros)")
        i = len(self.ids)
        self.lengths.append(self._add_columns(g, where, i))
        self.ids.append(int(name))
        self.seeds.append(np.uint64(_attr(self.path, g, where, "seed", "uint64")))
        self.completes.append(bool(_flag(self.path, g, where, "complete")))
        diverged = self.kind == "sgd" and self.version >= DIVERGED_SINCE
        self.divergeds.append(bool(_flag(self.path, g, where, "diverged")) if diverged else False)
        self._add_targets(g, where, i)

    def flags(self) -> list[tuple[str, int]]:
        """(trial name, complete flag) in writing order, for schema.completeness_problems."""
        return [(str(k), int(c)) for k, c in zip(self.ids, self.completes)]

    def _add_columns(self, g: h5py.Group, where: str, i: int) -> int:
        """Trial i's per-row columns, checked as avbench check checks their structure
        (schema.py); returns their length. The columns read are checked for their
        values too; the others from their metadata alone (a third of a read's cost)."""
        spec = schema.columns_of(schema.ROW_SPECS[self.kind], self.version)
        lengths, read = {}, {}
        for col, kind in {**spec, "targets": "float64"}.items():
            at = f"{where}/{col}"
            if col not in g:
                raise TraceError(self.path, at, "missing: the trial has no such column")
            try:
                ds = g[col] if col in self.parts else h5py.h5d.open(g.id, col.encode())
            except KeyError:
                raise TraceError(self.path, at, "not a dataset") from None
            if not isinstance(ds, (h5py.Dataset, h5py.h5d.DatasetID)):
                raise TraceError(self.path, at, "not a dataset")
            why = schema.dataset_problem(ds, kind)
            if why is not None:
                raise TraceError(self.path, at, why)
            if col != "targets":
                lengths[col] = ds.shape[0]
            if col in self.parts:
                read[col] = ds
        for col, why in schema.length_problems(lengths):
            raise TraceError(self.path, f"{where}/{col}", why)
        values = {col: _read_column(self.path, ds, f"{where}/{col}", col) for col, ds in read.items()}
        for col, why in schema.index_problems(self.kind, values):
            raise TraceError(self.path, f"{where}/{col}", why)
        length = next(iter(lengths.values()))
        for col in self.columns:  # a column added by a later schema is 0 throughout
            self.parts[col].append(values[col] if col in values else
                                   np.zeros(length, dtype=ADDED_DTYPE.get(col, np.int32)))
        return length

    def _add_targets(self, g: h5py.Group, where: str, i: int) -> None:
        """Trial i's target attributes (rounds_to_<t>, ...); -1 where it lacks one."""
        for k in g.attrs:
            if k.startswith(TARGET_PREFIXES):
                value = _flag(self.path, g, where, k) if k.startswith("reached_") else \
                    _attr(self.path, g, where, k, "int32")
                self.targets.setdefault(k, [-1] * i).append(value)
        for v in self.targets.values():  # a target this trial lacks (none should)
            if len(v) == i:
                v.append(-1)

    def flat(self, col: str) -> np.ndarray:
        """Column `col` over every row of every trial, trial after trial."""
        return np.concatenate(self.parts[col]) if self.parts[col] else np.zeros(0, dtype=np.float64)

    def grid(self) -> tuple[np.ndarray, dict]:
        """The row coordinate and the per-row columns over (trial, row) (datasets.grid)."""
        from .datasets import grid
        return grid(self)


def _frame(trials, ident: dict, config: dict) -> pd.DataFrame:
    """The tidy frame of what load_trace gathered (_Trials, or trial_table.Table for
    v9): identity, trial attributes, per-row columns, targets, config."""
    lengths = trials.lengths
    data: dict = {k: np.repeat(np.asarray([v], dtype=object if isinstance(v, str) else None), sum(lengths))
                  for k, v in ident.items()}
    data["trial"] = np.repeat(np.asarray(trials.ids, dtype=np.int64), lengths)
    data["seed"] = np.repeat(np.asarray(trials.seeds, dtype=np.uint64), lengths)
    data["complete"] = np.repeat(np.asarray(trials.completes, dtype=bool), lengths)
    data["diverged"] = np.repeat(np.asarray(trials.divergeds, dtype=bool), lengths)
    for col in trials.columns:
        data[col] = trials.flat(col)
    df = pd.DataFrame(data)
    if "bytes_sent" in df:
        df["bytes_per_peer"] = df["bytes_sent"].astype(float) / ident["peers"]
    for k, v in trials.targets.items():
        df[k] = np.repeat(np.asarray(v, dtype=np.int64), lengths)
    for k, v in config.items():
        df[k if k not in df.columns else f"config_{k}"] = v
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
    with open_trace(path) as f:
        return identity(path, f)["run_kind"]


def per_trial(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (trace, trial): its last row (final values, totals, targets)."""
    return df.groupby(["trace", "trial"], sort=False, as_index=False).tail(1).reset_index(drop=True)


def load_summary(source, pattern: str = "*.h5", run_kind: str | None = None) -> pd.DataFrame:
    """One row per (trace, trial) from each trace's /summary (read_summary), for
    every trace named by `source`; `source`, `pattern` and `run_kind` are
    load_sweep's. Raises FileNotFoundError when no trace of that kind is left."""
    frames = [df for df in map(read_summary, trace_paths(source, pattern))
              if run_kind is None or df.attrs["run_kind"] == run_kind]
    if not frames:
        raise FileNotFoundError(f"no {run_kind + ' ' if run_kind else ''}traces in {source!r}")
    return pd.concat(frames, ignore_index=True, sort=False)


def read_summary(path: PathLike) -> pd.DataFrame:
    """One trace's /summary (docs/trace-format.md), one row per trial: its columns as
    stored (final_variance, rounds_to_<t>, bytes_sent, ...; `complete` as a bool),
    the identifying columns trace, run_kind, engine, peers, trace_complete, and every
    /config option as in load_trace. The same without the rows, for a trace stopped
    before any trial ended, in .attrs: run_kind, engine, peers, trace_complete and
    config (a dict). Raises FileNotFoundError, or TraceError for a file whose root
    load_trace refuses (schema version, identity, groups) or whose /summary is not
    one row per trial."""
    path = os.fspath(path)
    f = open_trace(path)
    with f:
        ident = identity(path, f)
        version = ident.pop("schema_version")
        s = f["summary"]
        check_summary(path, f, trial_count(path, f, version), version)
        scales = schema.SUMMARY_SCALES if schema.is_table(version) else {}  # v9's targets: not a row per trial
        df = pd.DataFrame({name: s[name][()] for name in s if name not in scales})
        config = read_config(f)
    if "complete" in df:
        df["complete"] = df["complete"].astype(int) == 1
    for k, v in {**ident, **config}.items():
        df[k if k not in df.columns or k in ident else f"config_{k}"] = v
    df.attrs.update({k: v for k, v in ident.items() if k != "trace"}, config=config)
    return df


def value_at(rows: pd.DataFrame, trial: int, x: str, at, column: str) -> float:
    """`column` of trial `trial` in the row where `x` (round or step) equals `at`, as
    load_trace gives the rows; NaN when there is no such row."""
    hit = rows.loc[(rows["trial"] == trial) & (rows[x] == at), column]
    return float(hit.iat[0]) if len(hit) else float("nan")


def read_walltimes(folder: PathLike) -> dict[str, float]:
    """cell name -> seconds from the walltime.tsv that scripts/avbench sweep keeps in a
    sweep's folder (the last line of a cell wins); {} without one."""
    path = Path(folder) / "walltime.tsv"
    out: dict[str, float] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            cell, _, seconds = line.partition("\t")
            try:
                out[cell] = float(seconds.split("\t")[-1])
            except ValueError:
                pass
    return out
