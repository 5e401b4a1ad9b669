"""load_trace's reader of the v9 /trials (schema.TABLE_SINCE on): every trial's rows
in one set of 2-D datasets over (trial, row), and /summary for the trials' seeds,
flags and targets.

Each 2-D column is read once, whatever the number of trials, and the tidy rows are
the cells a mask built from /trials/rows selects: row-major, so trial after trial,
as v8's concatenation of its trial groups gave them. Nothing loops over trials, so
the cost is that of the values. Checked as avbench check checks the structure, by
schema.py's rules: every dataset present, of its type and shape, the trial indices,
rows within the table, the scale and `round` as the index rules say, /summary
agreeing with /trials, the complete flags; and the columns read against what the
format promises of their values and of their padding (the fill past each trial's
rows). Raises TraceError naming the file and the dataset.
"""

from __future__ import annotations

import h5py
import numpy as np

from . import schema
from .files import TraceError, check_summary

TARGET_PREFIXES = schema.TARGET_PREFIXES


class Table:
    """The trials of one v9 trace as load_trace gathers them (the counterpart of
    traces._Trials for v1..v8): per trial its index, seed, flags, rows and targets,
    and the 2-D columns read."""

    def __init__(self, kind: str, columns: tuple, summary: dict, trial, rows, scale, values: dict):
        self.kind, self.columns, self.values, self.scale = kind, columns, values, scale
        self.ids = trial.astype(np.int64)
        self.lengths = rows.astype(np.int64)
        self.seeds = summary["seed"].astype(np.uint64)
        self.completes = summary["complete"] == 1
        self.divergeds = summary["diverged"] == 1 if "diverged" in summary else np.zeros(len(trial), dtype=bool)
        self.targets = {k: v.astype(np.int64) for k, v in summary.items() if k.startswith(TARGET_PREFIXES)}
        self.mask = schema.written(rows, len(scale))

    def flat(self, col: str) -> np.ndarray:
        """Column `col` over every row of every trial, trial after trial."""
        if not len(self.ids):
            return np.zeros(0, dtype=np.float64)  # as v8's reader gives a trace without trials
        if col == schema.ROW_SCALE[self.kind]:
            return np.broadcast_to(self.scale, self.mask.shape)[self.mask]
        return self.values[col][self.mask]

    def grid(self) -> tuple[np.ndarray, dict]:
        """(coordinate, {column: (trial, row) array}) for datasets.to_dataset: the scale,
        and each column but the scale, float64 with NaN past a trial's rows when some
        trial is shorter than the table, else in its stored type (as datasets.grid)."""
        padded = not len(self.ids) or not self.mask.all()
        out = {}
        for col in self.columns:
            if col == schema.ROW_SCALE[self.kind]:
                continue
            v = self.values[col]
            out[col] = np.where(self.mask, v, np.nan) if padded else v
        return self.scale, out


def _dataset(path: str, group: h5py.Group, where: str, name: str, kind: str, ndim: int) -> h5py.Dataset:
    """Dataset `name` of `group`, of type `kind` and `ndim` dimensions, or TraceError."""
    at = f"{where}/{name}"
    ds = group.get(name)
    if ds is None:
        raise TraceError(path, at, "missing")
    if not isinstance(ds, h5py.Dataset):
        raise TraceError(path, at, "not a dataset")
    why = schema.dataset_problem(ds, kind, ndim)
    if why is not None:
        raise TraceError(path, at, why)
    return ds


def _structure(path: str, f: h5py.File, kind: str, version: int) -> dict[str, h5py.Dataset]:
    """The datasets of /trials, checked from their metadata: present, typed, shaped."""
    g = f["trials"]
    scale = schema.ROW_SCALE[kind]
    spec = {**{n: (k, 1) for n, k in schema.TABLE_VECTORS.items()}, scale: ("int32", 1),
            **{n: (k, 2) for n, k in schema.table_columns(kind, version).items()}}
    found = {n: _dataset(path, g, "/trials", n, k, ndim) for n, (k, ndim) in spec.items()}
    for name, why in schema.table_shape_problems(kind, {n: ds.shape for n, ds in found.items()}):
        raise TraceError(path, f"/trials/{name}", why)
    return found


def _summary(path: str, f: h5py.File, kind: str, trials: int, version: int) -> dict[str, np.ndarray]:
    """/summary's columns the trials' identity needs (trial, seed, complete, diverged,
    the targets, rounds or steps), checked: one row per trial, typed, flags 0 or 1."""
    check_summary(path, f, trials, version)
    s = f["summary"]
    counter = "rounds" if kind == "averaging" else "steps"
    need = {"trial": "int32", "seed": "uint64", "complete": "int32", counter: "int32"}
    if kind == "sgd":
        need["diverged"] = "int32"
    need.update({n: "int32" for n in s if n.startswith(TARGET_PREFIXES)})
    _dataset(path, s, "/summary", "targets", schema.SUMMARY_SCALES["targets"], 1)
    out = {n: _dataset(path, s, "/summary", n, k, 1)[()] for n, k in need.items()}
    for name, v in out.items():
        why = schema.flags_problem(v) if name in ("complete", "diverged") or name.startswith("reached_") else None
        if why is not None:
            raise TraceError(path, f"/summary/{name}", why)
    return out


def _indices(path: str, kind: str, trial, rows, scale, rnd) -> None:
    """The trial indices, the rows and what indexes them (`rnd`, sgd's 2-D round),
    checked (schema.py)."""
    why = schema.trial_index_problem(trial)
    if why is not None:
        raise TraceError(path, "/trials/trial", why)
    why = schema.rows_problem(rows, len(scale))
    if why is not None:
        raise TraceError(path, "/trials/rows", why)
    for name, why in schema.table_index_problems(kind, scale, rows, rnd, trial):
        raise TraceError(path, f"/trials/{name}", why)


def _column(path: str, v: np.ndarray, col: str, kind: str, trial, rows) -> np.ndarray:
    """One 2-D column (read whole), checked against the format's promise of its values
    within each trial's rows and of the fill past them."""
    bad = schema.promise_violation(col, v, schema.written(rows, v.shape[1]))
    if bad is not None:
        t, i = bad
        diverged = " (a diverged model may be +inf or NaN after row 0)" if schema.VALUE_PROMISES[col] == "model" else ""
        raise TraceError(path, f"/trials/{col}", f"trial {trial[t]}, row {i} is {v[t, i]}, where the format "
                                                 f"promises a finite value{diverged}")
    why = schema.padding_problem(v, rows, kind)
    if why is not None:
        raise TraceError(path, f"/trials/{col}", why)
    return v


def read_table(path: str, f: h5py.File, ident: dict, columns: tuple[str, ...]) -> Table:
    """The trials of the v9 trace `f` (open), checked; `columns`, the row columns to
    read (the others are checked from their metadata alone), in writing order."""
    kind, version = ident["run_kind"], ident["schema_version"]
    found = _structure(path, f, kind, version)
    trial, rows = found["trial"][()], found["rows"][()]
    scale = found[schema.ROW_SCALE[kind]][()]
    # sgd's 2-D round indexes the rows too, and is always read: once, for both uses.
    read = {"round": found["round"][()]} if kind == "sgd" else {}
    _indices(path, kind, trial, rows, scale, read.get("round"))
    summary = _summary(path, f, kind, len(trial), version)
    for where, why in schema.summary_agreement_problems(kind, trial, rows, scale, summary):
        raise TraceError(path, where, why)
    for where, why in schema.table_completeness_problems(int(ident["trace_complete"]), trial, summary["complete"]):
        raise TraceError(path, where, why)
    spec = schema.table_columns(kind, version)
    values = {c: _column(path, read[c] if c in read else found[c][()], c, spec[c], trial, rows)
              for c in columns if c in spec}
    return Table(kind, columns, summary, trial, rows, scale, values)
