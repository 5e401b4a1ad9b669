"""The structural rules of the trace format (docs/trace-format.md), in one place for
the readers (files.py, traces.py, trial_table.py) and the validator (check.py, `avbench check`).

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

SCHEMA_VERSION = 9  # what today's writer writes (src/trace/trace.hpp, kTraceSchemaVersion)
# v1: averaging traces without run_kind; v2: no decode_failures; v3: no detection_time;
# v4: no diverged (training trial attribute and /summary column); v5: no time_model,
# run_seconds, engine "sequential"; v6: no dimension scales, no /optimum/coordinate;
# v7: no late column (averaging); v8: one group per trial, /trials/<k> (v9: one table)
KNOWN_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9)
DIVERGED_SINCE = 5
TIME_MODEL_SINCE = 6
SCALES_SINCE = 7
TABLE_SINCE = 9  # /trials: one set of 2-D datasets over (trial, row), not a group per trial (below)
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
TARGET_PREFIXES = ("rounds_to_", "steps_to_", "reached_")  # a trial's per-target values (attributes, v9 /summary)

# What the format promises of each row column's values, which the readers check in the
# columns they read: "int" an integer type; "finite" a float type, every value finite;
# "model" a float type, finite in row 0 and never -inf (a diverging training run
# overflows to +inf or NaN later); "accuracy" a float type, NaN (none measured) or finite.
VALUE_PROMISES = {
    **dict.fromkeys(("round", "step", "alive", "groups", "failed_groups", "decode_failures", "bytes_sent", "late"),
                    "int"),
    **dict.fromkeys(("variance", "error", "mean_drift", "time", "detection_time"), "finite"),
    **dict.fromkeys(("loss", "gap", "relative_gap", "distance", "consensus"), "model"), "accuracy": "accuracy"}

# v9 (TABLE_SINCE on): /trials holds the rows in 2-D datasets over (trial, row), and
# ROW_SCALE, the scale over rows, stands for v8's column of that name (row k of an
# averaging trial is round k); TABLE_VECTORS are the 1-D datasets over trial. Cells
# past a trial's rows hold FILL of their type (also the HDF5 fill value and the
# attribute _FillValue, which xarray masks); readers take the rows from `rows`,
# never from the fill: NaN is also a value (a quadratic's accuracy).
ROW_SCALE = {"averaging": "round", "sgd": "step"}
TABLE_VECTORS = {"trial": "int32", "rows": "int32"}
FILL = {"float64": float("nan"), "int32": -1, "uint64": 2**64 - 1}
# v9: the /summary datasets not over trial (the dimension scale `targets`).
SUMMARY_SCALES = {"targets": "float64"}


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


def dataset_problem(ds, kind: str, ndim: int = 1) -> str | None:
    """What is wrong with `ds` (an h5py Dataset, or the DatasetID of one, whose
    metadata costs a third of a read) as a column of type `kind` and `ndim`
    dimensions (2: a v9 table over (trial, row))."""
    if len(ds.shape) != ndim:
        return f"not {ndim}-D (shape {ds.shape})"
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


def cut_short_problems(done, flags: list) -> list[tuple[int, str]]:
    """(position, problem) for the `complete` flags of a run's trials (`flags`, in
    writing order, None for an unusable flag): only the last trial written may have
    been cut short, and none in a run marked complete (`done`, the root flag)."""
    out = []
    last = max((pos for pos, v in enumerate(flags) if v is not None), default=-1)
    for pos, v in enumerate(flags):
        if v == 0 and pos != last:
            out.append((pos, "0, but it is not the last trial written"))
        if v == 0 and done == 1:
            out.append((pos, "0 in a run marked complete"))
    return out


def completeness_problems(done, trials: list[tuple[str, int | None]]) -> list[tuple[str, str]]:
    """(where, problem) for the `complete` flags of a v1..v8 run's trial groups
    (cut_short_problems; `trials`, (group name, flag) in writing order)."""
    return [(f"/trials/{trials[pos][0]} attribute complete", why)
            for pos, why in cut_short_problems(done, [v for _, v in trials])]


def promise_violation(col: str, values, written=None) -> tuple | None:
    """The position (a tuple of indices) of the first cell of `values` that breaks
    VALUE_PROMISES[col]: a trial's column (1-D), or a v9 table (2-D over (trial,
    row), `written` its mask of the cells within each trial's rows); None if none."""
    kind = VALUE_PROMISES.get(col)
    v = np.asarray(values)
    if kind == "finite":
        bad = ~np.isfinite(v)
    elif kind == "accuracy":
        bad = np.isinf(v)
    elif kind == "model":
        first = np.zeros(v.shape, dtype=bool)
        first[..., :1] = True  # row 0, the initial state, is finite even in a diverged run
        bad = np.isneginf(v) | first & ~np.isfinite(v)
    else:
        return None
    if written is not None:
        bad &= written
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(np.argmax(bad), bad.shape))


# v9's rules: /trials as one table, and /summary (the trials' seeds, flags, targets) with it.

def is_table(version) -> bool:
    """Whether a trace of schema `version` keeps its trials in the v9 table."""
    return known(version) and version >= TABLE_SINCE


def table_columns(run_kind: str, version=SCHEMA_VERSION) -> dict[str, str]:
    """The 2-D columns of a v9 /trials, in writing order: the row columns but the scale."""
    return {n: k for n, k in columns_of(ROW_SPECS[run_kind], version).items() if n != ROW_SCALE[run_kind]}


def table_shape_problems(run_kind: str, shapes: dict[str, tuple]) -> list[tuple[str, str]]:
    """(dataset, problem) for the shapes of /trials's datasets (`shapes`: name -> shape,
    `trial` and the row scale among them, each of its number of dimensions): T =
    len(trial) in each 1-D one over trial, R = len(scale), (T, R) in each 2-D one."""
    scale = ROW_SCALE[run_kind]
    t, r = shapes["trial"][0], shapes[scale][0]
    out = []
    for name, shape in shapes.items():
        want = (t, r) if len(shape) == 2 else (r,) if name == scale else (t,)
        if tuple(shape) != want:
            out.append((name, f"shape {tuple(shape)}, expected {want} (T = {t} trials in /trials/trial, "
                              f"R = {r} rows in /trials/{scale})"))
    return out


def trial_index_problem(trial) -> str | None:
    """/trials/trial (v9): the trials' indices, each >= 0 and none twice."""
    trial = np.asarray(trial, dtype=np.int64)
    i = _first(trial < 0)
    if i is not None:
        return f"entry {i} is {trial[i]}, not a trial's index (>= 0)"
    values, counts = np.unique(trial, return_counts=True)
    return f"trial {values[counts > 1][0]} appears more than once" if (counts > 1).any() else None


def rows_problem(rows, width: int) -> str | None:
    """/trials/rows (v9): every trial has 1 .. R rows (`width`, the 2-D columns' second
    axis; row 0, the initial state, is required), and the longest has R (0 without trials)."""
    rows = np.asarray(rows, dtype=np.int64)
    i = _first((rows < 1) | (rows > width))
    if i is not None:
        return f"entry {i} is {rows[i]}, outside 1 .. {width} (the rows the 2-D columns hold)"
    longest = int(rows.max()) if rows.size else 0
    return None if longest == width else f"the longest trial has {longest} rows, but the 2-D columns hold {width}"


def written(rows, width: int) -> np.ndarray:
    """The (trial, row) mask of the cells within each trial's rows (v9)."""
    return np.arange(width) < np.asarray(rows, dtype=np.int64)[:, None]


def table_index_problems(run_kind: str, scale, rows, rnd=None, trial=None) -> list[tuple[str, str]]:
    """(dataset, problem) for what indexes a v9 table's rows (index_problems at once;
    rows_problem holds): averaging, the scale `round` 0, 1, ..., R - 1; sgd, the
    scale `step` from 0 and increasing, the 2-D `round` (`rnd`) from 0 and never
    decreasing in a trial's rows. `trial` names the trials (else their positions)."""
    scale = np.asarray(scale, dtype=np.int64)
    if not scale.size:
        return []
    if run_kind == "averaging":
        return index_problems("averaging", {"round": scale})
    out = [p for p in index_problems("sgd", {"step": scale, "round": np.zeros_like(scale)}) if p[0] == "step"]
    rnd = np.asarray(rnd, dtype=np.int64)
    names = np.arange(len(rnd)) if trial is None else np.asarray(trial)
    t = _first(rnd[:, 0] != 0) if len(rnd) else None
    if t is not None:
        out.append(("round", f"trial {names[t]}: row 0 is round {rnd[t, 0]}, expected 0"))
    down = (rnd[:, 1:] < rnd[:, :-1]) & written(rows, len(scale))[:, 1:]
    if down.any():
        t, i = np.unravel_index(np.argmax(down), down.shape)
        out.append(("round", f"trial {names[t]}: decreases at row {i + 1} ({rnd[t, i]} -> {rnd[t, i + 1]})"))
    return out


def summary_agreement_problems(run_kind: str, trial, rows, scale, summary: dict) -> list[tuple[str, str]]:
    """(dataset, problem) where a v9 /trials and /summary disagree (`summary`: its trial
    and rounds or steps, those present, one entry per trial; rows_problem holds): the
    same trials in order; averaging, rows = rounds + 1; sgd, step[rows - 1] = steps."""
    trial, rows = np.asarray(trial, dtype=np.int64), np.asarray(rows, dtype=np.int64)
    out = []
    if "trial" in summary:
        i = _first(np.asarray(summary["trial"], dtype=np.int64) != trial)
        if i is not None:
            out.append(("/summary/trial", f"row {i} is trial {summary['trial'][i]}, "
                                          f"but /trials/trial has {trial[i]} there"))
    counter = "rounds" if run_kind == "averaging" else "steps"
    if counter in summary and rows.size:
        last = rows - 1 if run_kind == "averaging" else np.asarray(scale, dtype=np.int64)[rows - 1]
        i = _first(np.asarray(summary[counter], dtype=np.int64) != last)
        if i is not None:
            out.append((f"/summary/{counter}", f"row {i} (trial {trial[i]}) is {summary[counter][i]}, but the "
                                               f"trial's last row (of {rows[i]}) is {ROW_SCALE[run_kind]} {last[i]}"))
    return out


def padding_problem(values, rows, kind: str) -> str | None:
    """A v9 2-D column of type `kind`: every cell past its trial's rows holds FILL[kind]."""
    v = np.asarray(values)
    bad = ~written(rows, v.shape[1]) & (~np.isnan(v) if kind == "float64" else v != np.asarray(FILL[kind], v.dtype))
    if not bad.any():
        return None
    t, i = np.unravel_index(np.argmax(bad), bad.shape)
    return f"entry [{t}, {i}], past the trial's {rows[t]} rows, is {v[t, i]}, not the fill value {FILL[kind]}"


def fill_problem(ds, kind: str) -> str | None:
    """A v9 2-D column `ds` of type `kind`: its HDF5 fill value and _FillValue are FILL[kind]."""
    def same(v) -> bool:
        v = np.asarray(v).reshape(-1)[0]
        return bool(np.isnan(v)) if kind == "float64" else v.dtype.kind in "iu" and int(v) == FILL[kind]
    if not same(ds.fillvalue):
        return f"HDF5 fill value {ds.fillvalue}, expected {FILL[kind]}"
    if "_FillValue" not in ds.attrs:
        return f"no attribute _FillValue (expected {FILL[kind]})"
    aid = ds.attrs.get_id("_FillValue")
    if (aid.dtype.kind, aid.dtype.itemsize) != KINDS[kind] or aid.shape not in ((), (1,)):
        return f"attribute _FillValue of type {aid.dtype} and shape {aid.shape}, expected one {kind}"
    value = ds.attrs["_FillValue"]
    return None if same(value) else f"attribute _FillValue is {value}, expected {FILL[kind]}"


def flags_problem(values) -> str | None:
    """A /summary column of 0/1 flags (complete, diverged, reached_<t>)."""
    v = np.asarray(values)
    i = _first((v != 0) & (v != 1))
    return None if i is None else f"row {i} is {v[i]}, must be 0 or 1"


def table_completeness_problems(done, trial, complete) -> list[tuple[str, str]]:
    """(where, problem) for the `complete` flags of a v9 run, read from /summary/complete
    (cut_short_problems; `trial`, the trials' indices in writing order)."""
    return [("/summary/complete", f"row {pos} (trial {trial[pos]}): {why}")
            for pos, why in cut_short_problems(done, [int(v) for v in complete])]
