"""Rewrites a trace from one layout of /trials into the other, values unchanged:
to_v8 makes a v9 trace (one table over (trial, row)) a v8 one (a group per trial),
to_v9 does the reverse. For tests of the readers and the checker that need a trace
of the other layout than the programs write, and for old traces a v9-only tool
should read.

    from avbench.layouts import to_v8, to_v9
    to_v8("run.h5", "run-v8.h5")       # schema_version 8, /trials/<k>/ groups
    to_v9("run-v8.h5", "again.h5")     # schema_version 9, the same values as run.h5

Both copy the root attributes (schema_version set to 8 or 9), /config, /optimum
and /summary, and rebuild /trials as docs/trace-format.md says of each version
(v8's layout under Versions): dimension scales attached, groups tracking creation
order, v9's fill values past each trial's rows, /summary/targets added (v9) or
dropped (v8). v8's
per-trial attributes seed, complete, diverged, rounds_to_<t>/steps_to_<t> and
reached_<t> are v9's /summary columns. to_v9 also takes older traces, with the
columns their version lacks as zeros (as load_trace reads them), `diverged` 0 and
the root attributes as they are (run_kind added to a v1 trace); it needs their
/summary. ValueError for a source not of the layout it converts from, or whose
trials do not fit a table (sgd: every trial's steps a prefix of the longest's).
The destination is overwritten. h5py and numpy only.
"""

from __future__ import annotations

import os

import h5py
import numpy as np

from . import schema

TARGET_PREFIXES = schema.TARGET_PREFIXES
ATTRIBUTE_TYPES = {"seed": "uint64"}  # v8's trial attributes not int32


def _copy_attrs(src, dst, replace: dict | None = None) -> None:
    """Every attribute of `src` onto `dst` in its order, each of its own stored type,
    the value of `replace` in place of its own."""
    for name in src.attrs:
        value = (replace or {}).get(name, src.attrs[name])
        dst.attrs.create(name, value, dtype=src.attrs.get_id(name).dtype)


def _create(path) -> h5py.File:
    """A new file at `path` (replacing one), whose root lists its attributes in creation
    order and its groups by name, as the writer's."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_attr_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    return h5py.File(h5py.h5f.create(os.fsencode(path), h5py.h5f.ACC_TRUNC, fcpl=fcpl))


def _vector(g: h5py.Group, name: str, values, dtype, extendible: bool = False) -> h5py.Dataset:
    values = np.asarray(values, dtype=dtype)
    if extendible:  # as v9's writer appends: chunked, unlimited, its type's fill value
        return g.create_dataset(name, data=values, maxshape=(None,), chunks=(max(1, min(len(values), 1024)),),
                                fillvalue=schema.FILL[values.dtype.name])
    return g.create_dataset(name, data=values)


def _scaled(g: h5py.Group, scale: h5py.Dataset, columns: dict[str, np.ndarray]) -> None:
    """1-D columns over the dimension `scale` (already in `g`), attached to it."""
    for name, values in columns.items():
        g.create_dataset(name, data=values).dims[0].attach_scale(scale)


def _common(src: h5py.File, dst: h5py.File, version: int, summary: dict[str, np.ndarray]) -> None:
    """Root attributes, /config, /optimum and /summary (`summary`: its columns, `trial`
    the scale of the others; v9's `targets`, if there, a scale attached to nothing)."""
    _copy_attrs(src, dst, {"schema_version": version})
    _copy_attrs(src["config"], dst.create_group("config", track_order=True))
    if "optimum" in src:
        o = dst.create_group("optimum", track_order=True)
        _copy_attrs(src["optimum"], o)
        if "x" in src["optimum"]:
            coordinate = o.create_dataset("coordinate", data=src["optimum/coordinate"][()])
            coordinate.make_scale("coordinate")
            _scaled(o, coordinate, {"x": src["optimum/x"][()]})
    s = dst.create_group("summary", track_order=True)
    trial = _vector(s, "trial", summary["trial"], np.int32, extendible=version >= schema.TABLE_SINCE)
    trial.make_scale("trial")
    for name, values in summary.items():
        if name not in ("trial", "targets"):
            _vector(s, name, values, values.dtype, extendible=version >= schema.TABLE_SINCE).dims[0].attach_scale(trial)
    if "targets" in summary:  # last, as v9's writer adds it
        _vector(s, "targets", summary["targets"], np.float64).make_scale("targets")


def _kind(f: h5py.File) -> str:
    return str(f.attrs.get("run_kind", "averaging"))


def to_v8(src, dst) -> None:
    """The v9 trace `src` rewritten as a v8 trace `dst` (module docstring)."""
    with h5py.File(src, "r") as f:
        if int(f.attrs["schema_version"]) < schema.TABLE_SINCE:
            raise ValueError(f"{os.fspath(src)}: schema_version {int(f.attrs['schema_version'])}, not a v9 trace")
        kind, t = _kind(f), f["trials"]
        scale_name = schema.ROW_SCALE[kind]
        trial, rows, scale = t["trial"][()], t["rows"][()], t[scale_name][()]
        table = {c: t[c][()] for c in schema.table_columns(kind)}
        summary = {n: f["summary"][n][()] for n in f["summary"] if n != "targets"}
        targets = f["summary"]["targets"][()]
        with _create(dst) as out:
            _common(f, out, 8, summary)
            trials = out.create_group("trials", track_order=True)
            for k, (index, n) in enumerate(zip(trial, rows)):
                g = trials.create_group(str(int(index)), track_order=True)
                _v8_attributes(g, summary, k)
                g.create_dataset("targets", data=targets).make_scale("targets")
                row_scale = g.create_dataset(scale_name, data=scale[:n])
                row_scale.make_scale(scale_name)
                _scaled(g, row_scale, {c: v[k, :n] for c, v in table.items()})


def _v8_attributes(g: h5py.Group, summary: dict, k: int) -> None:
    """A v8 trial group's attributes from row k of /summary, in v8's order."""
    names = ["seed", "complete", "diverged", *(n for n in summary if n.startswith(TARGET_PREFIXES))]
    for name in names:
        if name in summary:
            g.attrs.create(name, summary[name][k], dtype=ATTRIBUTE_TYPES.get(name, "int32"))


def _v8_trials(f: h5py.File, kind: str) -> tuple[list, list]:
    """(names, {column: array} per trial) of a v1..v8 trace, in writing order, every
    column of v9 present (zeros where the version had none)."""
    from .trials import _groups
    spec = schema.ROW_SPECS[kind]
    names, trials = _groups(f), []
    for name in names:
        g = f["trials"][name]
        n = len(g[next(iter(spec))])
        trials.append({c: g[c][()] if c in g else np.zeros(n, dtype=k) for c, k in spec.items()})
    return names, trials


def _table_scale(path: str, kind: str, trials: list) -> np.ndarray:
    """The v9 row scale of trials: the longest trial's round or step, which every
    trial's must begin (ValueError otherwise)."""
    name = schema.ROW_SCALE[kind]
    longest = max(trials, key=lambda c: len(c[name]))[name] if trials else np.zeros(0, np.int32)
    for k, c in enumerate(trials):
        if not np.array_equal(c[name], longest[:len(c[name])]):
            raise ValueError(f"{path}: trial {k}'s {name} is not a prefix of the longest trial's: no v9 table holds it")
    return longest


def to_v9(src, dst) -> None:
    """The v1..v8 trace `src` rewritten as a v9 trace `dst` (module docstring)."""
    path = os.fspath(src)
    with h5py.File(src, "r") as f:
        if int(f.attrs["schema_version"]) >= schema.TABLE_SINCE:
            raise ValueError(f"{path}: schema_version {int(f.attrs['schema_version'])}, already a v9 trace")
        kind = _kind(f)
        names, trials = _v8_trials(f, kind)
        scale = _table_scale(path, kind, trials)
        if "summary" not in f or "trial" not in f["summary"]:
            raise ValueError(f"{path}: no /summary/trial, which v9 needs for the trials' seeds and flags")
        summary = {n: f["summary"][n][()] for n in f["summary"]}
        if kind == "sgd" and "diverged" not in summary:
            summary["diverged"] = np.zeros(len(names), dtype=np.int32)
        summary["targets"] = f["trials"][names[0]]["targets"][()] if names else np.zeros(0)
        with _create(dst) as out:
            _common(f, out, 9, summary)
            if "run_kind" not in out.attrs:  # a v1 trace: averaging, named since v2
                out.attrs.create("run_kind", kind, dtype=h5py.string_dtype("utf-8"))
            _v9_trials(out.create_group("trials", track_order=True), kind, names, trials, scale)


def _v9_trials(g: h5py.Group, kind: str, names: list, trials: list, scale: np.ndarray) -> None:
    """v9's /trials: trial, the row scale, rows, then the 2-D columns over both."""
    rows = np.asarray([len(c[schema.ROW_SCALE[kind]]) for c in trials], dtype=np.int32)
    trial = _vector(g, "trial", [int(n) for n in names], np.int32, extendible=True)
    trial.make_scale("trial")
    row_scale = _vector(g, schema.ROW_SCALE[kind], scale, np.int32, extendible=True)
    row_scale.make_scale(schema.ROW_SCALE[kind])
    _vector(g, "rows", rows, np.int32, extendible=True).dims[0].attach_scale(trial)
    shape = (len(trials), len(scale))
    chunks = (max(1, min(shape[0], 64)), max(1, min(shape[1], 1024)))
    for col, kind_of in schema.table_columns(kind).items():
        fill = schema.FILL[kind_of]
        values = np.full(shape, fill, dtype=kind_of)
        for t, c in enumerate(trials):
            values[t, :rows[t]] = c[col]
        ds = g.create_dataset(col, data=values, maxshape=(None, None), chunks=chunks, fillvalue=fill)
        ds.attrs.create("_FillValue", fill, dtype=kind_of)
        ds.dims[0].attach_scale(trial)
        ds.dims[1].attach_scale(row_scale)
