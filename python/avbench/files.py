"""The light part of reading a trace: opening it, its attributes, whether it is
complete. h5py only (no pandas), so that sweep drivers can ask cheaply."""

from __future__ import annotations

import os
from typing import Union

import h5py
import numpy as np

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


def _int_attr(path: str, obj, where: str, name: str, default=None) -> int:
    """An integer attribute of `obj`; `default` when absent and a default is given."""
    if name not in obj.attrs:
        if default is not None:
            return default
        raise TraceError(path, where, f"has no attribute {name}")
    v = obj.attrs[name]
    if not (np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.integer)):
        raise TraceError(path, f"{where} attribute {name}", f"is {v!r}, not an integer")
    return int(v)


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
    trace (sweep drivers must then stop rather than overwrite it)."""
    path = os.fspath(path)
    with open_trace(path) as f:
        if "schema_version" not in f.attrs and "n_peers" not in f.attrs:
            raise TraceError(path, "/", "not an avbench trace (no schema_version, no n_peers)")
        return "complete" if _int_attr(path, f, "/", "complete", default=0) == 1 else "incomplete"
