"""The structural rules of the trace format (docs/trace-format.md), in one place for
the readers (files.py, traces.py) and the validator (check.py, `avbench check`).

Both must refuse the same broken files: a reader that loads what the checker refuses
hands out rows that were never written (a repeated round left cells of the xarray
form uninitialised). So the rules both apply live here, and no pandas
for the checker: only h5py, numpy and the standard library.

Each rule reports what is wrong as text (None or [] when nothing is): the checker
collects the texts, the readers raise the first as a TraceError naming the file and
the dataset or attribute at fault.
"""

from __future__ import annotations

import re

import h5py
import numpy as np

# The root attribute time_model: what a trace's time column is, by its engine.
TIME_MODELS = {"openmpi": "wall clock", "mpich": "wall clock", "smpi": "simulated", "sequential": "alpha-beta estimate"}

SCHEMA_VERSION = 8  # what today's writer writes (src/trace/trace.hpp, kTraceSchemaVersion)
# v1: averaging traces without run_kind; v2: no decode_failures; v3: no detection_time;
# v4: no diverged (training trial attribute and /summary column); v5: no time_model,
# run_seconds, engine "sequential"; v6: no dimension scales, no /optimum/coordinate;
# v7: no late column (averaging)
KNOWN_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8)
DIVERGED_SINCE = 5
TIME_MODEL_SINCE = 6
SCALES_SINCE = 7
RUN_KINDS = ("averaging", "sgd")

# (kind, itemsize) of each numeric type name; byte order is not checked, since
# h5py converts on read and the writer always writes little endian anyway.
KINDS = {"int32": ("i", 4), "uint64": ("u", 8), "float64": ("f", 8)}

# The counters that end the rows of either kind of trial, in writing order.
COUNTER_COLUMNS = {
    "alive": "int32",
    "groups": "int32",
    "failed_groups": "int32",
    "decode_failures": "int32",
    "bytes_sent": "uint64",
    "time": "float64",
    "detection_time": "float64",
}

# Per-round columns of an averaging trial /trials/<k>, in the order the writer creates them.
TRIAL_COLUMNS = {
    "round": "int32",
    "variance": "float64",
    "error": "float64",
    "mean_drift": "float64",
    "late": "int32",
    **COUNTER_COLUMNS,
}

# Per-evaluation columns of a training trial /trials/<k>, in writing order.
TRAINING_COLUMNS = {
    "step": "int32",
    "round": "int32",
    "loss": "float64",
    "gap": "float64",
    "relative_gap": "float64",
    "distance": "float64",
    "consensus": "float64",
    "accuracy": "float64",
    **COUNTER_COLUMNS,
}
ROW_SPECS = {"averaging": TRIAL_COLUMNS, "sgd": TRAINING_COLUMNS}

# The groups at the root of each kind of trace.
ROOT_GROUPS = {"averaging": ("config", "trials", "summary"), "sgd": ("config", "optimum", "trials", "summary")}

# Columns added by a schema version: absent from files of earlier versions.
ADDED_IN = {"decode_failures": 3, "detection_time": 4, "late": 8}

TRIAL_NAME = re.compile(r"(0|[1-9][0-9]*)")  # a trial's index in decimal, as the writer names it (fullmatch)


def known(version) -> bool:
    return version in KNOWN_VERSIONS


def version_problem(version) -> str | None:
    """What is wrong with a usable schema_version value, if anything."""
    if known(version):
        return None
    return f"is {version}; the known versions are {', '.join(map(str, KNOWN_VERSIONS))}"


def columns_of(spec: dict[str, str], version) -> dict[str, str]:
    """The columns of `spec` that a file of schema `version` has (the current
    schema's when the version is unusable)."""
    v = version if known(version) else SCHEMA_VERSION
    return {name: kind for name, kind in spec.items() if ADDED_IN.get(name, 1) <= v}


def attribute(obj, name: str, kind: str):
    """(value, problem): the scalar attribute `name` of `obj` as `kind` ("str", a
    variable-length UTF-8 string, or a name of KINDS, that exact type); value is
    None when problem is not."""
    if name not in obj.attrs:
        return None, "missing"
    aid = obj.attrs.get_id(name)
    if aid.shape != ():
        return None, f"not a scalar (shape {aid.shape})"
    dtype = aid.dtype
    if kind == "str":
        info = h5py.check_string_dtype(dtype)
        if info is None or info.encoding != "utf-8" or info.length is not None:
            return None, f"not a variable-length UTF-8 string (dtype {dtype})"
        try:
            value = obj.attrs[name]
        except Exception as e:  # undecodable bytes, broken heap
            return None, f"unreadable: {e}"
        if not isinstance(value, str):
            return None, f"h5py reads it as {type(value).__name__}, not str"
        return value, None
    if (dtype.kind, dtype.itemsize) != KINDS[kind]:
        return None, f"type {dtype}, expected {kind}"
    return obj.attrs[name].item(), None


def flag(obj, name: str):
    """(value, problem) of an int32 attribute that must be 0 or 1."""
    value, problem = attribute(obj, name, "int32")
    if problem is None and value not in (0, 1):
        return None, f"must be 0 or 1, is {value}"
    return value, problem


def dataset_problem(ds, kind: str) -> str | None:
    """What is wrong with `ds` (an h5py Dataset, or the DatasetID of one, whose
    metadata costs a third of a read) as a 1-D column of type `kind`."""
    if len(ds.shape) != 1:
        return f"not 1-D (shape {ds.shape})"
    if (ds.dtype.kind, ds.dtype.itemsize) != KINDS[kind]:
        return f"type {ds.dtype}, expected {kind}"
    return None


def length_problems(lengths: dict[str, int]) -> list[tuple[str, str]]:
    """(column, problem) for the columns of one table (`lengths`: column -> rows, the
    index column first) whose length is not the index column's, or for the index
    column when the table has no row (row 0, the initial state, is required)."""
    if not lengths:
        return []
    index, rows = next(iter(lengths.items()))
    out = [(name, f"has {n} rows, but {index} has {rows} (the columns differ in length)")
           for name, n in lengths.items() if n != rows]
    if not out and rows == 0:
        out.append((index, "no rows (row 0, the initial state, is required)"))
    return out


def summary_length_problem(rows: int, trials: int) -> str | None:
    """/summary has one row per trial written."""
    return None if rows == trials else f"has {rows} rows for {trials} trials"


def _first(mask) -> int | None:
    bad = np.nonzero(mask)[0]
    return int(bad[0]) if bad.size else None


def index_problems(run_kind: str, cols: dict) -> list[tuple[str, str]]:
    """(column, problem) for the columns that index a trial's rows (`cols` holds at
    least them, non-empty): averaging, round 0, 1, 2, ...; training, step from 0 and
    strictly increasing, round from 0 and never decreasing."""
    out = []
    if run_kind == "averaging":
        rnd = np.asarray(cols["round"]).astype(np.int64)
        if rnd[0] != 0:
            out.append(("round", f"row 0 is round {rnd[0]}, expected 0"))
        i = _first(np.diff(rnd) != 1)
        if i is not None:
            out.append(("round", f"does not increase by 1 at row {i + 1} ({rnd[i]} -> {rnd[i + 1]})"))
        return out
    step = np.asarray(cols["step"]).astype(np.int64)
    rnd = np.asarray(cols["round"]).astype(np.int64)
    if step[0] != 0:
        out.append(("step", f"row 0 is step {step[0]}, expected 0 (the initial state)"))
    i = _first(step[1:] <= step[:-1])
    if i is not None:
        out.append(("step", f"does not increase at row {i + 1} ({step[i]} -> {step[i + 1]})"))
    if rnd[0] != 0:
        out.append(("round", f"row 0 is round {rnd[0]}, expected 0"))
    i = _first(rnd[1:] < rnd[:-1])
    if i is not None:
        out.append(("round", f"decreases at row {i + 1} ({rnd[i]} -> {rnd[i + 1]})"))
    return out


def completeness_problems(done, trials: list[tuple[str, int | None]]) -> list[tuple[str, str]]:
    """(where, problem) for the `complete` flags of a run: only the last trial written
    may have been cut short, and none in a run marked complete (`done`, the root
    flag; `trials`, (group name, flag) in writing order, None for an unusable flag)."""
    out = []
    flags = [(name, v) for name, v in trials if v is not None]
    for pos, (name, v) in enumerate(flags):
        if v == 0 and pos != len(flags) - 1:
            out.append((f"/trials/{name} attribute complete", "0, but it is not the last trial written"))
        if v == 0 and done == 1:
            out.append((f"/trials/{name} attribute complete", "0 in a run marked complete"))
    return out
