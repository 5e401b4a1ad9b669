"""The light part of reading a trace: opening it, its attributes, whether it is
complete. h5py only (no pandas), so that sweep drivers can ask cheaply."""

from __future__ import annotations

import os
from typing import Union

import h5py

from . import schema

PathLike = Union[str, os.PathLike]


def _attr_str(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


class TraceError(ValueError):
    """A file that is not a readable trace of a known schema. `path` is the file,
    `where` the dataset, group or attribute at fault ("/" for the file as a whole);
    both open the message."""

    def __init__(self, path: str, where: str, problem: str):
        super().__init__(f"{path}: {where}: {problem}")
        self.path, self.where = path, where


def _attr(path: str, obj, where: str, name: str, kind: str):
    """The attribute `name` of `obj`, of the format's type `kind` (schema.attribute),
    or TraceError naming it."""
    value, why = schema.attribute(obj, name, kind)
    if why is not None:
        raise TraceError(path, f"{where} attribute {name}", why)
    return value


def _flag(path: str, obj, where: str, name: str) -> int:
    """A 0/1 int32 attribute (complete, diverged, reached_<t>), or TraceError."""
    value, why = schema.flag(obj, name)
    if why is not None:
        raise TraceError(path, f"{where} attribute {name}", why)
    return value


def identity(path: str, f: h5py.File) -> dict:
    """The root's identifying values, checked as avbench check checks them: a known
    schema_version (int32), run_kind (v2 on), n_peers >= 1, engine, the complete flag,
    and the root groups of that kind of run."""
    version = _attr(path, f, "/", "schema_version", "int32")
    why = schema.version_problem(version)
    if why is not None:
        raise TraceError(path, "/ attribute schema_version", why)
    kind = "averaging" if version == 1 else _attr(path, f, "/", "run_kind", "str")
    if kind not in schema.RUN_KINDS:
        raise TraceError(path, "/ attribute run_kind", f"{kind!r} is neither averaging nor sgd")
    peers = _attr(path, f, "/", "n_peers", "int32")
    if peers < 1:
        raise TraceError(path, "/ attribute n_peers", f"is {peers}, not a positive number of peers")
    ident = {"trace": path, "run_kind": kind, "schema_version": version,
             "engine": _attr(path, f, "/", "engine", "str"), "peers": peers,
             "trace_complete": bool(_flag(path, f, "/", "complete"))}
    for name in schema.ROOT_GROUPS[kind]:
        if not isinstance(f.get(name), h5py.Group):
            raise TraceError(path, f"/{name}", "missing group")
    return ident


def trial_count(path: str, f: h5py.File, version: int) -> int:
    """How many trials the trace holds, from metadata: /trials's groups (v1..v8), or
    the length of /trials/trial (v9), or TraceError when that is not a 1-D dataset."""
    if not schema.is_table(version):
        return len(f["trials"])
    ds = f["trials"].get("trial")
    why = "missing" if ds is None else "not a dataset" if not isinstance(ds, h5py.Dataset) else \
        schema.dataset_problem(ds, schema.TABLE_VECTORS["trial"])
    if why is not None:
        raise TraceError(path, "/trials/trial", why)
    return ds.shape[0]


def check_summary(path: str, f: h5py.File, trials: int, version: int | None = None) -> None:
    """/summary's columns: 1-D datasets of one row per trial written (metadata only);
    in v9 (`version`), but for its dimension scale `targets`, one entry per target."""
    scales = schema.SUMMARY_SCALES if version is not None and schema.is_table(version) else {}
    for name in f["summary"]:
        if name in scales:
            continue
        where = f"/summary/{name}"
        try:
            ds = h5py.h5d.open(f["summary"].id, name.encode())
        except KeyError:
            raise TraceError(path, where, "not a dataset") from None
        if len(ds.shape) != 1:
            raise TraceError(path, where, f"not 1-D (shape {ds.shape})")
        why = schema.summary_length_problem(ds.shape[0], trials)
        if why is not None:
            raise TraceError(path, where, why)


def open_trace(path: str) -> h5py.File:
    """The file, open for reading; FileNotFoundError, or TraceError when HDF5 cannot open it."""
    try:
        return h5py.File(path, "r")
    except FileNotFoundError:
        raise
    except OSError as e:
        raise TraceError(path, "/", f"not an HDF5 file HDF5 can open ({e})") from e


def trace_state(path: PathLike) -> str:
    """"complete" when the run that wrote `path` ended with every trial done (root
    `complete` = 1), "incomplete" when it was stopped early and saved what it had.
    Raises FileNotFoundError for a missing file and TraceError for one that is not a
    trace of a known schema version (sweep drivers must then stop rather than
    overwrite it). Checks the root only (identity), so that it stays cheap."""
    path = os.fspath(path)
    with open_trace(path) as f:
        return "complete" if identity(path, f)["trace_complete"] else "incomplete"
