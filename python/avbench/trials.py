"""One trial's rows as numpy arrays, in either layout of /trials: the accessor for
tests, scripts and notebooks that would otherwise open /trials/<k> by hand (which
schema v9 no longer has). For a tidy DataFrame of every row, use load_trace.

    from avbench.trials import trial_count, trial_columns, trial_info
    with h5py.File("run.h5", "r") as f:        # or pass the path itself
        for k in range(trial_count(f)):
            cols = trial_columns(f, k)         # {"round": [0 1 2 ...], "variance": [...], ...}
            info = trial_info(f, k)            # {"trial": 0, "seed": ..., "complete": 1, ...}
        every = all_trial_columns(f, ["variance"])   # [trial 0's dict, trial 1's, ...]

- `f` is an open h5py.File (or its root group) or a path, which is then opened
  read-only for the call. Pass the open file when calling many times.
- Trial `k` is the k-th trial written, 0 <= k < trial_count(f): in v9 row k of
  /trials/trial, in v1..v8 the k-th group of /trials in creation order (in numeric
  order in a file that does not track it). For a whole run that is trial index k;
  trial_info(f, k)["trial"] is the index either way. IndexError otherwise.
- trial_columns(f, k, columns=None) -> {column: 1-D array}: the trial's row
  columns exactly as v8 stored them in /trials/<k>, in the format's order, typed:
  averaging `round` (0, 1, ..., R), variance, error, ...; sgd `step`, `round`,
  loss, ...; each of the trial's length (v9: its `rows`, never judged from fill
  values). `columns` limits them to those named (in v8's order). No `targets`:
  trial_targets(f).
- trial_info(f, k) -> {"trial", "seed", "complete", "diverged", then
  rounds_to_<t> or steps_to_<t> per target, then reached_<t> per target}: Python
  ints, from /summary (v9) or the trial group's attributes (v1..v8); `diverged`
  is 0 where the trace has none (averaging runs, sgd before v5).
- all_trial_columns(f, columns=None), all_trial_info(f): the same for every trial
  in writing order; in v9 each 2-D column (and each /summary column) is read once
  and sliced, so prefer them to a loop over trial_columns on many trials.
- trial_targets(f) -> float64 array: the run's targets t in order (/summary/targets
  in v9, a trial group's `targets` in v1..v8; empty without trials).

Reads, never checks: a damaged file gives what it holds, or whatever h5py or numpy
raise. Validate with load_trace or `avbench check`.
"""

from __future__ import annotations

import contextlib
import os

import h5py
import numpy as np

from . import schema

TARGET_PREFIXES = schema.TARGET_PREFIXES


@contextlib.contextmanager
def _opened(f):
    """The open file `f`, or the file at path `f`, open for the block."""
    if isinstance(f, (str, os.PathLike)):
        with h5py.File(f, "r") as h:
            yield h
    else:
        yield f


def has_table(f: h5py.Group) -> bool:
    """Whether the open trace `f` keeps its trials in v9's table: by its schema_version,
    or, where that is unusable, by whether /trials holds the dataset `trial`."""
    try:
        return int(f.attrs["schema_version"]) >= schema.TABLE_SINCE
    except (KeyError, TypeError, ValueError):
        return isinstance(f["trials"].get("trial"), h5py.Dataset)


def _groups(f: h5py.Group) -> list[str]:
    """The trial groups' names of a v1..v8 trace in writing order."""
    trials = f["trials"]
    names = list(trials)
    if trials.id.get_create_plist().get_link_creation_order():
        return names  # h5py lists them in creation order
    return sorted(names, key=lambda n: (0, int(n)) if n.isdigit() else (1, n))


def _position(k: int, count: int) -> int:
    if not 0 <= k < count:
        raise IndexError(f"trial position {k} out of range: the trace holds {count} trials")
    return int(k)


def trial_count(f) -> int:
    """How many trials the trace holds (module docstring)."""
    with _opened(f) as h:
        return h["trials"]["trial"].shape[0] if has_table(h) else len(h["trials"])


def _kind(trials: h5py.Group) -> str:
    return "sgd" if "step" in trials else "averaging"


def _v8_columns(g: h5py.Group, columns) -> dict[str, np.ndarray]:
    """A v1..v8 trial group's row columns, in the format's order whatever the group's."""
    order = [n for n in schema.ROW_SPECS[_kind(g)] if n in g]
    names = order + [n for n in g if n not in order and n != "targets"]
    return {n: g[n][()] for n in names if columns is None or n in columns}


def _table_names(trials: h5py.Group, columns) -> tuple[str, str, list[str]]:
    """(kind, scale, the columns to give in v8's order: the scale and the 2-D ones)."""
    kind = _kind(trials)
    scale = schema.ROW_SCALE[kind]
    names = [n for n in schema.ROW_SPECS[kind] if n in trials]
    names += [n for n, ds in trials.items() if n not in names and isinstance(ds, h5py.Dataset) and ds.ndim == 2]
    return kind, scale, [n for n in names if columns is None or n in columns]


def trial_columns(f, k: int, columns=None) -> dict[str, np.ndarray]:
    """Trial k's row columns as v8 stored them (module docstring); in v9 one read of
    the trial's cells per column."""
    with _opened(f) as h:
        trials = h["trials"]
        if not has_table(h):
            return _v8_columns(trials[_groups(h)[_position(k, len(trials))]], columns)
        k = _position(k, trials["trial"].shape[0])
        n = int(trials["rows"][k])
        _, scale, names = _table_names(trials, columns)
        return {c: trials[c][:n] if c == scale else trials[c][k, :n] for c in names}


def all_trial_columns(f, columns=None) -> list[dict[str, np.ndarray]]:
    """trial_columns of every trial, in writing order; in v9 each column read once."""
    with _opened(f) as h:
        trials = h["trials"]
        if not has_table(h):
            return [_v8_columns(trials[name], columns) for name in _groups(h)]
        rows = trials["rows"][()]
        _, scale, names = _table_names(trials, columns)
        whole = {c: trials[c][()] for c in names}
        return [{c: whole[c][:n] if c == scale else whole[c][t, :n] for c in names} for t, n in enumerate(rows)]


def _info(values: dict, k: int) -> dict:
    """The trial_info dict of row k of per-trial columns or attributes `values`."""
    out = {name: int(values[name][k]) for name in ("trial", "seed", "complete")}
    out["diverged"] = int(values["diverged"][k]) if "diverged" in values else 0
    out.update({name: int(v[k]) for name, v in values.items() if name.startswith(TARGET_PREFIXES)})
    return out


def _v8_info(g: h5py.Group, name: str) -> dict:
    values = {"trial": [int(name)], **{a: [g.attrs[a]] for a in g.attrs}}
    return _info(values, 0)


def _summary_columns(s: h5py.Group, rows=slice(None)) -> dict:
    names = ["trial", "seed", "complete", "diverged", *(n for n in s if n.startswith(TARGET_PREFIXES))]
    return {n: s[n][rows] for n in names if n in s}


def trial_info(f, k: int) -> dict:
    """Trial k's index, seed, flags and targets, as Python ints (module docstring)."""
    with _opened(f) as h:
        if not has_table(h):
            names = _groups(h)
            name = names[_position(k, len(names))]
            return _v8_info(h["trials"][name], name)
        k = _position(k, h["trials"]["trial"].shape[0])
        return _info(_summary_columns(h["summary"], slice(k, k + 1)), 0)


def all_trial_info(f) -> list[dict]:
    """trial_info of every trial, in writing order; in v9 each /summary column read once."""
    with _opened(f) as h:
        if not has_table(h):
            return [_v8_info(h["trials"][name], name) for name in _groups(h)]
        values = _summary_columns(h["summary"])
        return [_info(values, k) for k in range(len(values["trial"]))]


def trial_targets(f) -> np.ndarray:
    """The run's targets, in order (module docstring)."""
    with _opened(f) as h:
        if has_table(h):
            return h["summary"]["targets"][()]
        names = _groups(h)
        return h["trials"][names[0]]["targets"][()] if names else np.zeros(0)
