#!/usr/bin/python3
"""Validate an avbench HDF5 trace against schema v8 (docs/trace-format.md).

Both kinds of run are checked: averaging traces (averaging_bench) and training
traces (sgd_bench), told apart by the root attribute run_kind. Schema v1 files,
which predate run_kind and were all averaging traces, are accepted as such, and so
are v2 files, which predate the decode_failures column, v3 files, which predate
the detection_time column, and v4 files, which predate the training trials'
diverged flag, v5 files, which predate time_model and run_seconds, v6 files,
which predate the dimension scales, and v7 files, which predate the averaging
layout's late column.

As a module:

    from check_trace import check_file
    problems = check_file("run.h5", peers=1024, trials=10, complete=1, rounds=50)
    problems = check_file("sgd.h5", kind="sgd", peers=16, trials=3, complete=1, steps=1000)

returns a list of human-readable problems (empty when the file is valid).

As a program:

    avbench check FILE [--kind averaging|sgd] [--peers N] [--trials K] [--complete 0|1]
                        [--rounds R]                                    (averaging)
                        [--steps S] [--local-steps H] [--eval-every E]  (sgd)

prints one line per problem and exits 1, or prints one confirmation line and
exits 0. Run it with Debian's /usr/bin/python3, which sees python3-h5py.

The checks are exactly the promises of docs/trace-format.md; when the format
changes, the document, the writer (src/trace) and this file change together. The
structural rules (versions, columns and their types, lengths, the round and step
index, the complete flags) are python/avbench/schema.py's, which the readers
(avbench.load_trace, read_summary, trace_state) apply too, so that they refuse
what this checker refuses.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

import h5py
import numpy as np


from avbench import schema  # the rules the readers share: theirs, not a copy that can drift

SCHEMA_VERSION = schema.SCHEMA_VERSION
KNOWN_VERSIONS = schema.KNOWN_VERSIONS
DIVERGED_SINCE = schema.DIVERGED_SINCE
TIME_MODEL_SINCE = schema.TIME_MODEL_SINCE
SCALES_SINCE = schema.SCALES_SINCE
RUN_KINDS = schema.RUN_KINDS

# Root attributes and their kinds: "int32" or "str" (variable-length UTF-8).
ROOT_ATTRS_V1 = {
    "schema_version": "int32",
    "avbench_version": "str",
    "git_sha": "str",
    "created_utc": "str",
    "command_line": "str",
    "engine": "str",
    "mpi_library": "str",
    "n_peers": "int32",
    "complete": "int32",
}
ROOT_ATTRS = {**{k: v for k, v in ROOT_ATTRS_V1.items() if k != "complete"}, "run_kind": "str", "complete": "int32"}
ROOT_ATTRS_V6 = {**ROOT_ATTRS, "time_model": "str", "run_seconds": "float64"}
ENGINES = ("openmpi", "mpich", "smpi", "sequential")
TIME_MODELS = schema.TIME_MODELS
ROOT_GROUPS = schema.ROOT_GROUPS

# The columns of each kind of trial, in writing order, and the version that added
# a column (python/avbench/schema.py).
COUNTER_COLUMNS = schema.COUNTER_COLUMNS
TRIAL_COLUMNS = schema.TRIAL_COLUMNS
TRAINING_COLUMNS = schema.TRAINING_COLUMNS
ADDED_IN = schema.ADDED_IN
columns_of = schema.columns_of


def quantizer_can_fail(quantizer: str, kind: str) -> str:
    """Whether messages quantized by `quantizer` (the /config value; "none" when
    absent) can fail to decode (docs/protocols.md, "Quantizers"): "always" for
    lattice (a value too far from the receiver's reference); "diverged" for
    uniform8 and stochastic:B in a training run (only a non-finite vector, which
    only a diverging run has, cannot be encoded); "never" otherwise."""
    if quantizer == "lattice":
        return "always"
    if kind == "sgd" and (quantizer == "uniform8" or quantizer.startswith("stochastic:")):
        return "diverged"
    return "never"



# Value rules of the training columns, one entry per column that has any:
# "model" measures the average model (a diverging run overflows it to +inf or
# NaN after row 0, never -inf; all other floats of a trace, accuracy aside, are
# finite), "finite" is finite in every row, "nonneg" is never negative.
TRAINING_VALUE_RULES = {
    "loss": ("model",),
    "gap": ("model",),
    "relative_gap": ("model",),
    "distance": ("model", "nonneg"),
    "consensus": ("model", "nonneg"),
    "time": ("finite", "nonneg"),
}
MODEL_COLUMNS = tuple(name for name, rules in TRAINING_VALUE_RULES.items() if "model" in rules)
# A training trial has diverged at the first row after row 0 whose model columns
# are not finite or whose gap exceeds 1e6 times the widest gap between x_0 and the
# peers' own optima (src/sgd/metrics.hpp, TrainingMetrics::diverged). That limit
# needs every peer's problem, which the trace does not hold; the box holds x_0, so
# its relative gap is at least this: a row at or below it cannot have diverged.
DIVERGED_RELATIVE_GAP = 1e6

# /summary columns that repeat a trial column's last row, per run kind, in the
# order the trial's summary lists them.
SUMMARY_FROM_LAST_ROW = {
    "averaging": {"final_variance": "variance", "final_error": "error", "bytes_sent": "bytes_sent", "time": "time"},
    "sgd": {"final_gap": "gap", "final_relative_gap": "relative_gap", "final_consensus": "consensus",
            "final_accuracy": "accuracy", "bytes_sent": "bytes_sent", "time": "time"},
}

# Attributes of /optimum (a training trace), in writing order; its one dataset is x.
OPTIMUM_ATTRS = {
    "loss": "float64",
    "initial_loss": "float64",
    "gradient_norm": "float64",
    "iterations": "int32",
    "converged": "int32",
    "method": "str",
    "test_set": "str",
}
OPTIMUM_METHODS = ("ldlt", "newton", "lbfgs")

# "Equal up to rounding" for quantities computed two ways (the gap as f(x̄) - f*
# and as 1/2 (x̄-x*)ᵀH(x̄-x*), the initial state against /optimum): relative to
# the loss scale. Rounding is ~1e-16; a real error is far above this.
REL_TOL = 1e-9

KINDS = schema.KINDS

UTC_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
TRIAL_NAME = schema.TRIAL_NAME  # fullmatch


def target_suffix(target: float) -> str:
    """Suffix of a target's names, e.g. 2.5e-3 -> "2.5e-3", 1e-09 -> "1e-9".

    Mirrors avb::target_attribute_name: the shortest decimal that reads back as
    the same double (Python's repr), in scientific form, exponent without '+'
    or leading zeros.
    """
    target = float(target)
    if not np.isfinite(target) or target <= 0:
        raise ValueError(f"target must be positive and finite, got {target!r}")
    sign, digits, exponent = Decimal(repr(target)).normalize().as_tuple()
    mantissa = str(digits[0])
    if len(digits) > 1:
        mantissa += "." + "".join(str(d) for d in digits[1:])
    return f"{mantissa}e{exponent + len(digits) - 1}"


def target_attribute_name(target: float) -> str:
    return "rounds_to_" + target_suffix(target)


def summary_columns(targets, kind: str = "averaging", version=SCHEMA_VERSION) -> dict[str, str]:
    """The /summary datasets, in order, for the given targets and run kind."""
    cols = {"trial": "int32", "seed": "uint64"}
    suffixes = [target_suffix(t) for t in targets]
    to = "rounds_to" if kind == "averaging" else "steps_to"
    cols.update({f"{to}_{s}": "int32" for s in suffixes})
    cols.update({f"reached_{s}": "int32" for s in suffixes})
    if kind == "averaging":
        cols.update({
            "final_variance": "float64",
            "final_error": "float64",
            "bytes_sent": "uint64",
            "time": "float64",
            "rounds": "int32",
            "complete": "int32",
        })
    else:
        cols.update({
            "final_gap": "float64",
            "final_relative_gap": "float64",
            "final_consensus": "float64",
            "final_accuracy": "float64",
            "bytes_sent": "uint64",
            "time": "float64",
            "steps": "int32",
            "rounds": "int32",
            "complete": "int32",
        })
        if (version if version in KNOWN_VERSIONS else SCHEMA_VERSION) >= DIVERGED_SINCE:
            cols["diverged"] = "int32"
    return cols


class _Checker:
    def __init__(self):
        self.problems: list[str] = []

    def problem(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    # ---- typed access; each returns None (and records why) when unusable ----

    def attr(self, obj, name: str, kind: str):
        value, why = schema.attribute(obj, name, kind)
        if why is not None:
            self.problem(f"{obj.name} attribute {name}", why)
        return value

    def flag(self, obj, name: str):
        value, why = schema.flag(obj, name)
        if why is not None:
            self.problem(f"{obj.name} attribute {name}", why)
        return value

    def column(self, group, name: str, kind: str):
        where = f"{group.name}/{name}"
        if name not in group:
            self.problem(where, "missing")
            return None
        ds = group[name]
        if not isinstance(ds, h5py.Dataset):
            self.problem(where, "not a dataset")
            return None
        why = schema.dataset_problem(ds, kind)
        if why is not None:
            self.problem(where, why)
            return None
        return ds[()]

    def scale(self, group, name: str, attached) -> None:
        """`group/name` is the dimension scale `name` (CLASS and NAME, no scale of
        its own) and is the one scale of the only axis of each `attached` dataset,
        recorded at both ends (DIMENSION_LIST and REFERENCE_LIST)."""
        where = f"{group.name}/{name}"
        if not isinstance(group.get(name), h5py.Dataset):
            return  # reported as a missing or mistyped member
        ds = group[name]
        if not h5py.h5ds.is_scale(ds.id):
            self.problem(where, "not a dimension scale (no CLASS = DIMENSION_SCALE)")
            return
        label = h5py.h5ds.get_scale_name(ds.id)
        label = label.decode("utf-8", "replace") if isinstance(label, bytes) else label
        if label != name:
            self.problem(where, f"dimension scale named {label!r}, expected {name!r}")
        for other in attached:
            member = group.get(other)
            if not isinstance(member, h5py.Dataset) or member.ndim != 1:
                continue  # reported elsewhere
            try:  # a dataset deleted while attached leaves references HDF5 cannot follow
                scales = list(member.dims[0].values())
                attached_here = h5py.h5ds.is_attached(member.id, ds.id, 0)
            except Exception as e:
                self.problem(f"{group.name}/{other}", f"its dimension scale is unreadable: {e}")
                continue
            if len(scales) != 1 or scales[0] != ds or not attached_here:
                self.problem(f"{group.name}/{other}", f"its axis has {len(scales)} scales attached, "
                                                      f"expected exactly the scale {name}")

    def exact_members(self, group, expected, what: str) -> None:
        extra = [k for k in group if k not in expected]
        if extra:
            self.problem(group.name, f"unexpected {what}: {', '.join(extra)}")

    def first_bad(self, where: str, bad_mask, describe) -> bool:
        """Reports the first row where bad_mask holds, as describe(row); True if any."""
        bad = np.nonzero(bad_mask)[0]
        if bad.size:
            self.problem(where, describe(int(bad[0])))
            return True
        return False


def _first_difference(a, b):
    """Index of the first element where a and b differ (bitwise for floats), or None."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype.kind == "f":
        same = (a == b) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    bad = np.nonzero(~same)[0]
    return int(bad[0]) if bad.size else None


def _check_root(c: _Checker, f, peers, complete, kind):
    """Returns (n_peers, complete flag, run kind); the kind falls back to the
    expected one, or to what the layout suggests, when run_kind is unusable."""
    version = c.attr(f, "schema_version", "int32")
    if version is not None and schema.version_problem(version):
        c.problem("/ attribute schema_version", schema.version_problem(version))
    expected = ROOT_ATTRS_V1 if version == 1 else ROOT_ATTRS_V6 if (version or 0) >= TIME_MODEL_SINCE else ROOT_ATTRS
    shown = version if version in KNOWN_VERSIONS else SCHEMA_VERSION
    for name in f.attrs:
        if name not in expected:
            c.problem("/ attribute " + name, f"not part of schema v{shown}")
    values = {name: c.attr(f, name, k) for name, k in expected.items() if name != "schema_version"}
    for name in ("avbench_version", "git_sha", "command_line"):
        if values[name] == "":
            c.problem(f"/ attribute {name}", "empty")
    utc = values["created_utc"]
    if utc is not None:
        ok = bool(UTC_PATTERN.match(utc))
        if ok:
            try:
                datetime.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%SZ")
            except ValueError:
                ok = False
        if not ok:
            c.problem("/ attribute created_utc", f"{utc!r} is not ISO 8601 UTC like 2026-11-30T12:00:00Z")
    if values["engine"] is not None and values["engine"] not in ENGINES:
        c.problem("/ attribute engine", f"{values['engine']!r} is not one of {', '.join(ENGINES)}")
    elif "time_model" in expected and values["time_model"] is not None and values["engine"] is not None:
        if values["time_model"] != TIME_MODELS[values["engine"]]:
            c.problem("/ attribute time_model",
                      f"{values['time_model']!r} on engine {values['engine']}, expected {TIME_MODELS[values['engine']]!r}")
    seconds = values.get("run_seconds")
    if seconds is not None and not (math.isfinite(seconds) and seconds >= 0):
        c.problem("/ attribute run_seconds", f"must be a finite number >= 0, is {seconds}")
    n_peers = values["n_peers"]
    if n_peers is not None and n_peers < 1:
        c.problem("/ attribute n_peers", f"must be at least 1, is {n_peers}")
    if peers is not None and n_peers is not None and n_peers != peers:
        c.problem("/ attribute n_peers", f"is {n_peers}, expected {peers}")
    done = values["complete"]
    if done is not None and done not in (0, 1):
        c.problem("/ attribute complete", f"must be 0 or 1, is {done}")
        done = None
    if complete is not None and done is not None and done != complete:
        c.problem("/ attribute complete", f"is {done}, expected {complete}")

    run_kind = "averaging" if version == 1 else values.get("run_kind")
    if run_kind is not None and run_kind not in RUN_KINDS:
        c.problem("/ attribute run_kind", f"{run_kind!r} is not one of {', '.join(RUN_KINDS)}")
        run_kind = None
    if kind is not None and run_kind is not None and run_kind != kind:
        c.problem("/ attribute run_kind", f"is {run_kind}, expected {kind}")
    if run_kind is None:
        run_kind = kind if kind is not None else ("sgd" if "optimum" in f else "averaging")
    return n_peers, done, run_kind


def _check_config(c: _Checker, f):
    if "config" not in f or not isinstance(f["config"], h5py.Group):
        c.problem("/config", "missing group")
        return
    config = f["config"]
    if len(config) != 0:
        c.problem("/config", "must hold attributes only, has members: " + ", ".join(config))
    for name in config.attrs:
        c.attr(config, name, "str")
    if "text" not in config.attrs:
        c.problem("/config attribute text", "missing")


def _schema_version(f):
    """schema_version when usable (checked by _check_root), else None."""
    try:
        v = f.attrs.get("schema_version")
        return int(v) if v is not None and np.ndim(v) == 0 else None
    except (TypeError, ValueError):
        return None


def _detection_timeout(f) -> float:
    """The run's --detection-timeout as /config records it; 0 when absent."""
    try:
        value = f["config"].attrs.get("detection-timeout", "0") if "config" in f else "0"
        return float(value) if isinstance(value, str) else 0.0
    except Exception:  # unreadable or not a number: _check_config reports it
        return 0.0


def _check_detection_time(c: _Checker, where: str, cols, timeout: float, rounds):
    """detection_time (schema v4): the failure-detection time charged to one peer,
    cumulative, the largest over peers: 0 in row 0, never decreasing, a whole number
    of --detection-timeout's, at most `rounds` of them (per row: the rounds, or steps,
    done), and 0
    throughout when the timeout is 0."""
    v = cols.get("detection_time")
    if v is None:
        return
    name = f"{where}/detection_time"
    if c.first_bad(name, ~np.isfinite(v) | (v < 0), lambda i: f"row {i} is {v[i]}, not a finite number >= 0"):
        return
    if v[0] != 0:
        c.problem(name, f"row 0 is {v[0]}, expected 0 (no round yet)")
    c.first_bad(name, np.diff(v) < 0, lambda i: f"decreases at row {i + 1} ({v[i]} -> {v[i + 1]})")
    if timeout <= 0:
        c.first_bad(name, v != 0, lambda i: f"row {i} is {v[i]}, but /config records detection-timeout 0")
        return
    k = v / timeout
    c.first_bad(name, np.abs(k - np.round(k)) > 1e-9 * np.maximum(k, 1),
                lambda i: f"row {i} is {v[i]}, not a whole number of detection timeouts ({timeout})")
    c.first_bad(name, np.round(k) > rounds,
                lambda i: f"row {i} charges {int(round(k[i]))} detection timeouts in {rounds[i]} rounds")


def _config_str(f, key: str, default: str) -> str:
    """The option `key` as /config records it; `default` when absent."""
    try:
        value = f["config"].attrs.get(key, default) if "config" in f else default
    except Exception:  # unreadable: _check_config reports it
        return default
    return value if isinstance(value, str) else default


def _join_every(f):
    """Under --failure churn (or trace, its schedule from a file), H (--local-steps):
    joiners load their donors' models at steps s with s % H == 0. None otherwise, or
    when /config does not say."""
    if _config_str(f, "failure", "") not in ("churn", "trace"):
        return None
    try:
        h = int(_config_str(f, "local-steps", ""))
    except ValueError:  # unreadable: _check_config reports it
        return None
    return h if h > 0 else None


def _quantizer(f) -> str:
    """The run's --quantizer as /config records it; "none" for protocols that
    record none (they send their values as they are)."""
    return _config_str(f, "quantizer", "none")


def _trial_targets(c: _Checker, g, to: str, extra_attrs=()):
    """The trial's targets and their name suffixes, after checking the trial's
    attribute names against them; (None, None) when unusable."""
    where = g.name
    targets = c.column(g, "targets", "float64")
    if targets is None:
        return None, None
    suffixes = []
    for t in targets:
        try:
            suffixes.append(target_suffix(t))
        except ValueError as e:
            c.problem(f"{where}/targets", str(e))
            return None, None
    if len(set(suffixes)) != len(suffixes):
        c.problem(f"{where}/targets", "a target appears twice")
        return None, None
    expected_attrs = ["seed", "complete", *extra_attrs] + [f"{to}_{s}" for s in suffixes] + [f"reached_{s}" for s in suffixes]
    for name in g.attrs:
        if name not in expected_attrs:
            c.problem(f"{where} attribute {name}", "not part of the schema (or no matching entry in targets)")
    return targets, suffixes


def _read_columns(c: _Checker, g, spec):
    """Every column of `spec`, or None when one is unusable or lengths differ."""
    cols = {name: c.column(g, name, kind) for name, kind in spec.items()}
    if any(v is None for v in cols.values()):
        return None
    problems = schema.length_problems({name: len(v) for name, v in cols.items()})
    for name, why in problems:
        c.problem(f"{g.name}/{name}", why)
    return None if problems else cols


def _check_counters(c: _Checker, where: str, cols, n_peers, origin: str):
    """bytes_sent/time cumulative from 0, time finite; alive, groups, failed_groups in range."""
    for name in ("bytes_sent", "time"):
        v = cols[name]
        if v[0] != 0:
            c.problem(f"{where}/{name}", f"row 0 is {v[0]}, expected 0 (cumulative since {origin})")
        # Compare neighbours directly: np.diff on uint64 would wrap around.
        c.first_bad(f"{where}/{name}", v[1:] < v[:-1],
                    lambda i: f"decreases at row {i + 1} ({v[i]} -> {v[i + 1]}); it is cumulative")
    alive, groups, failed = cols["alive"], cols["groups"], cols["failed_groups"]
    c.first_bad(f"{where}/alive", (alive < 0) | ((alive > n_peers) if n_peers is not None else False),
                lambda i: f"row {i} has {alive[i]} alive peers, outside 0..n_peers")
    c.first_bad(f"{where}/groups", groups < 0, lambda i: f"negative at row {i}")
    c.first_bad(f"{where}/failed_groups", (failed < 0) | (failed > groups),
                lambda i: f"row {i}: {failed[i]} failed of {groups[i]} groups")


def _check_late(c: _Checker, where: str, cols, waits: bool):
    """late (schema v8, averaging): the peers a waiting policy left behind in a
    round, 0 in row 0, at most the peers alive, and 0 throughout under --wait all."""
    v = cols.get("late")
    if v is None:
        return
    name = f"{where}/late"
    if c.first_bad(name, (v < 0) | (v > cols["alive"]), lambda i: f"row {i}: {v[i]} late of {cols['alive'][i]} alive"):
        return
    if v[0] != 0:
        c.problem(name, f"row 0 is {v[0]}, expected 0 (no round was run yet)")
    if not waits:
        c.first_bad(name, v != 0, lambda i: f"row {i} counts {v[i]} late peers, but /config's wait is all")


def _waits(f) -> bool:
    """Whether /config records a waiting policy other than all."""
    try:
        return "config" in f and f["config"].attrs.get("wait", "all") not in ("all", b"all")
    except Exception:  # unreadable: _check_config reports it
        return False


def _check_decode_failures(c: _Checker, where: str, cols, quantizer: str, kind: str, finite=None):
    """decode_failures (schema v3): a count per row, 0 in row 0 (nothing was sent
    yet), and 0 throughout unless the configured quantizer can fail to decode;
    for uniform8 and stochastic:B in a training run, 0 while the model columns
    are finite (`finite`, per row: all of them finite)."""
    v = cols.get("decode_failures")
    if v is None:
        return
    name = f"{where}/decode_failures"
    if c.first_bad(name, v < 0, lambda i: f"negative at row {i} ({v[i]})"):
        return
    if v[0] != 0:
        c.problem(name, f"row 0 is {v[0]}, expected 0 (nothing was sent yet)")
    can_fail = quantizer_can_fail(quantizer, kind)
    if can_fail == "always":
        return
    if can_fail == "diverged" and finite is not None:
        # Up to and including the last row before the models stop being finite.
        before = np.cumprod(finite).astype(bool)
        c.first_bad(name, before & (v != 0),
                    lambda i: f"row {i} counts {v[i]} decode failures, but quantizer {quantizer} fails only on "
                              f"non-finite models and the model columns are finite there")
        return
    c.first_bad(name, v != 0,
                lambda i: f"row {i} counts {v[i]} decode failures, but quantizer {quantizer} never fails to decode"
                          f"{' here' if quantizer != 'none' else ''} (only lattice does)")


class _Reach(NamedTuple):
    """How a kind of trace records when a trial reached each target: the attribute
    <counter>_to_<t> holds the <unit> of the first row whose METRIC is below t
    (at or below unless STRICT)."""
    counter: str
    unit: str
    metric: str
    strict: bool


_ROUNDS_TO = _Reach("rounds", "round", "variance", strict=True)
_STEPS_TO = _Reach("steps", "step", "relative_gap", strict=False)


def _check_reach(c: _Checker, g, where: str, targets, suffixes, rule: _Reach, count, values):
    """<counter>_to_<t>: the first row's COUNT whose VALUES reach t; when never, the
    cap, the last row's COUNT. Returns the attributes read, in /summary's order, and
    the reached flags."""
    last = int(count[-1])
    relation = "below" if rule.strict else "at or below"
    read, reached = {}, []
    for t, s in zip(targets, suffixes):
        name = f"{rule.counter}_to_{s}"
        n = read[name] = c.attr(g, name, "int32")
        re_ = read[f"reached_{s}"] = c.flag(g, f"reached_{s}")
        reached.append(re_)
        if n is None or re_ is None:
            continue
        hit = np.nonzero(values < t if rule.strict else values <= t)[0]
        if hit.size:
            first = int(count[hit[0]])
            if re_ != 1 or n != first:
                c.problem(f"{where} attribute {name}",
                          f"{rule.metric} is first {relation} {float(t)!r} at {rule.unit} {first}, "
                          f"but {rule.counter}_to={n} reached={re_}")
        elif re_ != 0 or n != last:
            c.problem(f"{where} attribute {name}",
                      f"{rule.metric} is never {relation} {float(t)!r}: expected {rule.counter}_to={last} "
                      f"(the cap) and reached=0, found {rule.counter}_to={n} reached={re_}")
    return read, reached


def _read_trial(c: _Checker, g, counter: str, columns, version, extra=()):
    """What every /trials/<k> group holds: the targets (with <counter>_to_<t> and
    the EXTRA attributes), the seed, the complete flag and the COLUMNS of VERSION.
    Returns (targets, suffixes, seed, complete, columns), or None when unreadable."""
    targets, suffixes = _trial_targets(c, g, counter, extra)
    if targets is None:
        return None
    spec = columns_of(columns, version)
    c.exact_members(g, ["targets", *spec], "members")
    if _has_scales(version):
        c.scale(g, "targets", [])
        dimension, *rest = spec  # the first column (round, step) indexes the rows
        c.scale(g, dimension, rest)
    seed = c.attr(g, "seed", "uint64")
    complete = c.flag(g, "complete")
    cols = _read_columns(c, g, spec)
    return None if cols is None else (targets, suffixes, seed, complete, cols)


def _check_trial(c: _Checker, g, n_peers, rounds, version=SCHEMA_VERSION, quantizer="none", detection_timeout=0.0,
                 waits=False):
    """Checks one averaging /trials/<k> group; returns what /summary must agree with, or None."""
    where = g.name
    trial = _read_trial(c, g, "rounds_to", TRIAL_COLUMNS, version)
    if trial is None:
        return None
    targets, suffixes, seed, trial_complete, cols = trial

    rnd = cols["round"]
    for name, why in schema.index_problems("averaging", cols):
        c.problem(f"{where}/{name}", why)

    for name in ("variance", "error", "mean_drift", "time"):
        v = cols[name]
        if c.first_bad(f"{where}/{name}", ~np.isfinite(v), lambda i: f"not finite at row {i} ({v[i]})"):
            continue
        c.first_bad(f"{where}/{name}", v < 0, lambda i: f"negative at row {i} ({v[i]})")

    _check_counters(c, where, cols, n_peers, "round 0")
    _check_decode_failures(c, where, cols, quantizer, "averaging")
    _check_detection_time(c, where, cols, detection_timeout, rnd)
    _check_late(c, where, cols, waits)

    variance = cols["variance"]
    last_round = int(rnd[-1])
    reach, reached = _check_reach(c, g, where, targets, suffixes, _ROUNDS_TO, rnd, variance)

    if rounds is not None:
        if last_round > rounds:
            c.problem(f"{where}/round", f"ran {last_round} rounds, more than the expected {rounds}")
        elif trial_complete == 1 and last_round != rounds and not all(r == 1 for r in reached):
            # A complete trial may stop early only once every target is reached.
            c.problem(f"{where}/round", f"complete trial ran {last_round} rounds, expected {rounds}")

    summary = {"seed": seed, "complete": trial_complete,
               **{name: cols[col][-1] for name, col in SUMMARY_FROM_LAST_ROW["averaging"].items()},
               "rounds": last_round, **reach}
    return {"targets": targets, "complete": trial_complete, "summary": summary}


def _check_optimum(c: _Checker, f, version=SCHEMA_VERSION):
    """Checks /optimum of a training trace. Returns (present, info): present is
    False for the empty group of a run stopped before it was written; info holds
    what the trials are checked against, or None when unusable."""
    if "optimum" not in f or not isinstance(f["optimum"], h5py.Group):
        c.problem("/optimum", "missing group")
        return True, None
    g = f["optimum"]
    if len(g) == 0 and len(g.attrs) == 0:
        return False, None
    _check_optimum_members(c, g, version)
    for name in g.attrs:
        if name not in OPTIMUM_ATTRS:
            c.problem(f"/optimum attribute {name}", "not part of the schema")
    # converged is a flag only: whether an unconverged optimum will do is the
    # program's decision, not the format's.
    values = {name: c.attr(g, name, kind) for name, kind in OPTIMUM_ATTRS.items() if name != "converged"}
    c.flag(g, "converged")
    x = c.column(g, "x", "float64")
    ok = x is not None and all(values[n] is not None for n in ("loss", "initial_loss", "test_set"))
    if x is not None:
        if len(x) == 0:
            c.problem("/optimum/x", "empty (x* has the model's dimension, at least 1)")
            ok = False
        elif c.first_bad("/optimum/x", ~np.isfinite(x), lambda i: f"not finite at entry {i} ({x[i]})"):
            ok = False
    for name in ("loss", "initial_loss", "gradient_norm"):
        v = values[name]
        if v is not None and not math.isfinite(v):
            c.problem(f"/optimum attribute {name}", f"not finite ({v})")
            ok = False
    if values["gradient_norm"] is not None and values["gradient_norm"] < 0:
        c.problem("/optimum attribute gradient_norm", f"negative ({values['gradient_norm']})")
    iterations, method, test_set = values["iterations"], values["method"], values["test_set"]
    if iterations is not None and iterations < 0:
        c.problem("/optimum attribute iterations", f"negative ({iterations})")
    if method is not None:
        if method not in OPTIMUM_METHODS:
            c.problem("/optimum attribute method", f"{method!r} is not one of {', '.join(OPTIMUM_METHODS)}")
        elif method == "ldlt":
            # The direct solve of a quadratic: no iterations, and no accuracy column.
            if iterations is not None and iterations != 0:
                c.problem("/optimum attribute iterations", f"is {iterations}, but method ldlt (a direct solve) has 0")
            if test_set is not None and test_set != "":
                c.problem("/optimum attribute test_set", f"is {test_set!r}, but method ldlt (a quadratic) has none")
        elif test_set == "":
            c.problem("/optimum attribute test_set", f"empty, but method {method} measures accuracy on one")
    if not ok:
        return True, None
    loss, initial = values["loss"], values["initial_loss"]
    scale = max(abs(loss), abs(initial), np.finfo(float).tiny)
    if initial < loss - REL_TOL * scale:
        c.problem("/optimum attribute initial_loss", f"{initial!r} is below the minimum loss {loss!r}")
    return True, {
        "loss": loss,
        "initial_loss": initial,
        "scale": scale,
        "x_norm2": float(np.dot(x, x)),
        "test_set": test_set,
    }


def _has_scales(version) -> bool:
    """Whether a trace of `version` carries dimension scales (an unknown or
    unreadable version is checked as the current one)."""
    return (version if version in KNOWN_VERSIONS else SCHEMA_VERSION) >= SCALES_SINCE


def _check_optimum_members(c: _Checker, g, version):
    """/optimum holds x, and since v7 coordinate: 0, 1, ..., D-1, the scale of x's axis."""
    c.exact_members(g, ["coordinate", "x"] if _has_scales(version) else ["x"], "members")
    if not _has_scales(version):
        return
    coordinate = c.column(g, "coordinate", "int32")
    x_len = len(g["x"]) if isinstance(g.get("x"), h5py.Dataset) else None
    if coordinate is not None and x_len is not None and \
            (len(coordinate) != x_len or _first_difference(coordinate, np.arange(x_len)) is not None):
        c.problem("/optimum/coordinate", f"is not 0, 1, ..., {x_len - 1} (one index per entry of x)")
    c.scale(g, "coordinate", ["x"])


def _check_step_round(c: _Checker, where: str, step, rnd, steps, local_steps, eval_every):
    """step from 0 and increasing, every eval_every steps; round from 0, not
    decreasing, at most one per step (step // local_steps when given)."""
    n = len(step)
    for name, why in schema.index_problems("sgd", {"step": step, "round": rnd}):
        c.problem(f"{where}/{name}", why)
    c.first_bad(f"{where}/round", rnd > step,
                lambda i: f"row {i}: {rnd[i]} rounds after {step[i]} steps (at most one round per step)")
    if local_steps is not None:
        c.first_bad(f"{where}/round", rnd != step // local_steps,
                    lambda i: f"row {i}: round {rnd[i]} after step {step[i]}, expected "
                              f"{step[i] // local_steps} with {local_steps} local steps per round")
    if eval_every is not None and n > 1:
        # Every eval_every steps, plus the last step when it is not a multiple.
        # (Row 0 is checked above.)
        c.first_bad(f"{where}/step", step[1:-1] != np.arange(1, n - 1) * eval_every,
                    lambda i: f"row {i + 1} is step {step[i + 1]}, expected {(i + 1) * eval_every} "
                              f"(every {eval_every} steps)")
        last, full = int(step[-1]), (n - 1) * eval_every
        if last != full and (not (n - 2) * eval_every < last < full or (steps is not None and last != steps)):
            c.problem(f"{where}/step", f"last row is step {last}, expected {full}"
                      + (f" or the last step {steps}" if steps is not None else " or the run's last step"))


def _check_training_values(c: _Checker, where: str, cols, diverged):
    """TRAINING_VALUE_RULES, the diverged flag and accuracy; returns the rows
    where every model column is finite."""
    rules = TRAINING_VALUE_RULES
    for name in (k for k, r in rules.items() if "model" in r):
        v = cols[name]
        if not np.isfinite(v[0]):
            c.problem(f"{where}/{name}", f"row 0 is {v[0]}: the initial state is finite")
        c.first_bad(f"{where}/{name}", np.isneginf(v), lambda i: f"-inf at row {i}")
    for name in (k for k, r in rules.items() if "finite" in r):
        v = cols[name]
        c.first_bad(f"{where}/{name}", ~np.isfinite(v), lambda i: f"not finite at row {i} ({v[i]})")
    for name in (k for k, r in rules.items() if "nonneg" in r):
        v = cols[name]
        c.first_bad(f"{where}/{name}", v < 0, lambda i: f"negative at row {i} ({v[i]})")
    ok = np.logical_and.reduce([np.isfinite(cols[k]) for k in MODEL_COLUMNS])
    if diverged == 0 and not ok.all():
        c.problem(f"{where} attribute diverged", f"0, but row {int(np.argmin(ok))} is not finite")
    elif diverged == 1:
        # The trial stops at the first evaluation that shows it: its last row, not
        # finite or far out (NaN compares False: `far` is about finite gaps).
        far = len(ok) > 1 and cols["relative_gap"][-1] > DIVERGED_RELATIVE_GAP
        if ok[-1] and not far:
            c.problem(f"{where} attribute diverged",
                      f"1, but the last row is finite with relative gap <= {DIVERGED_RELATIVE_GAP:g}")
        elif not ok[:-1].all():
            c.problem(f"{where} attribute diverged",
                      f"1, but row {int(np.argmin(ok))} is already not finite (the trial must stop there)")
    acc = cols["accuracy"]
    c.first_bad(f"{where}/accuracy", ~np.isnan(acc) & ((acc < 0) | (acc > 1)),
                lambda i: f"row {i} is {acc[i]}, outside [0, 1]")
    if np.isnan(acc).any() and not np.isnan(acc).all():
        c.problem(f"{where}/accuracy", "NaN in some rows only (NaN means the run measures no accuracy)")
    return ok


def _check_training_counters(c: _Checker, where: str, cols, n_peers, rnd, ok, quantizer, detection_timeout,
                             geometric, join_every):
    """Counters cumulative, and unchanged while no round ran."""
    _check_counters(c, where, cols, n_peers, "step 0")
    _check_decode_failures(c, where, cols, quantizer, "sgd", finite=ok)
    # A peer's rounds are at most its steps (rank 0's round column is its own count,
    # and under --local-steps-dist geometric other peers' counts differ).
    _check_detection_time(c, where, cols, detection_timeout, cols["step"])
    groups, alive, sent = cols["groups"], cols["alive"], cols["bytes_sent"]
    if groups[0] != 0:
        c.problem(f"{where}/groups", f"row 0 has {groups[0]} groups, expected 0 (no round yet)")
    # Under --local-steps-dist geometric the other peers' rounds do not follow
    # rank 0's: groups form and bytes flow in rows where rank 0 ran no round.
    same = np.concatenate(([False], rnd[1:] == rnd[:-1])) & (not geometric)
    c.first_bad(f"{where}/groups", same & (groups != 0),
                lambda i: f"row {i} has {groups[i]} groups, but no round ran since the previous row")
    # Under --failure churn a joiner loads its donor's model at the first of the H
    # steps before its first round (step s with s % H == 0): those bytes may show in
    # a row whose round has not run yet (or never runs, when --steps ends first).
    loads = np.zeros(len(sent), dtype=bool)
    if join_every is not None:
        step = cols["step"].astype(np.int64)
        first_load = -(-step[:-1] // join_every) * join_every  # the first s >= the previous row's step
        loads[1:] = first_load < step[1:]
    c.first_bad(f"{where}/bytes_sent", same[1:] & ~loads[1:] & (sent[1:] != sent[:-1]),
                lambda i: f"changes at row {i + 1} ({sent[i]} -> {sent[i + 1]}), but no round ran "
                          f"(SGD steps send nothing{'' if join_every is None else ', churn loads none then'})")
    if n_peers is not None:
        c.first_bad(f"{where}/alive", (rnd == 0) & (alive != n_peers),
                    lambda i: f"row {i} has {alive[i]} alive peers before any round, expected all {n_peers}")


def _check_against_optimum(c: _Checker, where: str, cols, optimum, ok):
    """Row 0 is x_0 and the gap is loss - f*, against /optimum."""
    loss, gap, acc = cols["loss"], cols["gap"], cols["accuracy"]
    if ok[0]:
        f_star, scale = optimum["loss"], optimum["scale"]
        tol = REL_TOL * scale
        if abs(loss[0] - optimum["initial_loss"]) > tol:
            c.problem(f"{where}/loss", f"row 0 is {loss[0]!r}, but /optimum initial_loss is "
                                       f"{optimum['initial_loss']!r} (row 0 is x_0)")
        c.first_bad(f"{where}/gap",
                    ok & (np.abs(gap - (loss - f_star)) > REL_TOL * np.maximum(scale, np.abs(loss))),
                    lambda i: f"row {i} is {gap[i]!r}, but loss - f* = {loss[i] - f_star!r}")
        c.first_bad(f"{where}/gap", gap < -tol, lambda i: f"negative at row {i} ({gap[i]!r}) beyond rounding")
        x2 = optimum["x_norm2"]
        if abs(cols["distance"][0] - x2) > REL_TOL * x2:
            c.problem(f"{where}/distance", f"row 0 is {cols['distance'][0]!r}, but ||x_0 - x*||^2 = ||x*||^2 "
                                           f"= {x2!r} (every peer starts at 0)")
        if cols["consensus"][0] > REL_TOL * x2:
            c.problem(f"{where}/consensus", f"row 0 is {cols['consensus'][0]!r}, expected 0 "
                                            f"(every peer starts at the same point)")
    if optimum["test_set"] == "" and not np.isnan(acc).all():
        c.problem(f"{where}/accuracy", "measured, but /optimum names no test set (expected NaN)")
    elif optimum["test_set"] != "" and np.isnan(acc).any():
        c.problem(f"{where}/accuracy", f"NaN, but /optimum says it is measured on {optimum['test_set']!r}")


def _check_relative_gap(c: _Checker, where: str, cols, optimum, ok):
    """relative_gap = gap / (f(x_0) - f*), and row 0 is x_0: the common factor is
    gap[0]. A run whose initial gap is 0 (x* = x_0) has relative_gap 0."""
    loss, gap, rel = cols["loss"], cols["gap"], cols["relative_gap"]
    if not ok[0]:
        return
    c0 = gap[0]
    if not rel[ok].any():
        scale = optimum["scale"] if optimum is not None else max(abs(loss[0]), np.finfo(float).tiny)
        if c0 > REL_TOL * scale:
            c.problem(f"{where}/relative_gap", f"0 throughout, but the initial gap is {c0!r}")
    elif c0 <= 0:
        c.problem(f"{where}/relative_gap", f"not 0, but the initial gap (gap at row 0) is {c0!r}")
    else:
        if abs(rel[0] - 1) > REL_TOL:
            c.problem(f"{where}/relative_gap", f"row 0 is {rel[0]!r}, expected 1 (row 0 is x_0)")
        c.first_bad(f"{where}/relative_gap",
                    ok & (np.abs(rel * c0 - gap) > REL_TOL * (np.abs(gap) + np.abs(rel) * c0)),
                    lambda i: f"row {i} is {rel[i]!r}, but gap / initial gap = {gap[i] / c0!r}")


def _check_training_trial(c: _Checker, g, n_peers, optimum, steps, local_steps, eval_every,
                          version=SCHEMA_VERSION, quantizer="none", detection_timeout=0.0, geometric=False,
                          join_every=None):
    """Checks one training /trials/<k> group against /optimum (when usable);
    returns what /summary must agree with, or None."""
    where = g.name
    has_diverged = (version if version in KNOWN_VERSIONS else SCHEMA_VERSION) >= DIVERGED_SINCE
    trial = _read_trial(c, g, "steps_to", TRAINING_COLUMNS, version, ("diverged",) if has_diverged else ())
    if trial is None:
        return None
    targets, suffixes, seed, trial_complete, cols = trial
    diverged = c.flag(g, "diverged") if has_diverged else None
    step = cols["step"].astype(np.int64)
    rnd = cols["round"].astype(np.int64)
    _check_step_round(c, where, step, rnd, steps, local_steps, eval_every)
    ok = _check_training_values(c, where, cols, diverged)
    _check_training_counters(c, where, cols, n_peers, rnd, ok, quantizer, detection_timeout, geometric, join_every)
    with np.errstate(invalid="ignore", over="ignore"):
        if optimum is not None:
            _check_against_optimum(c, where, cols, optimum, ok)
        _check_relative_gap(c, where, cols, optimum, ok)
    reach, reached = _check_reach(c, g, where, targets, suffixes, _STEPS_TO, step, cols["relative_gap"])

    last_step = int(step[-1])
    if steps is not None:
        if last_step > steps:
            c.problem(f"{where}/step", f"ran {last_step} steps, more than the expected {steps}")
        elif trial_complete == 1 and last_step != steps and not all(r == 1 for r in reached) and diverged != 1:
            # A complete trial may stop early only once every target is reached,
            # or when it diverged.
            c.problem(f"{where}/step", f"complete trial ran {last_step} steps, expected {steps}")

    summary = {"seed": seed, "complete": trial_complete,
               **{name: cols[col][-1] for name, col in SUMMARY_FROM_LAST_ROW["sgd"].items()},
               "steps": last_step, "rounds": int(rnd[-1])}
    if has_diverged:
        summary["diverged"] = diverged
    summary.update(reach)
    return {"targets": targets, "complete": trial_complete, "summary": summary}


def _check_summary(c: _Checker, f, infos: dict[int, dict], order: list[int], targets, kind, version=SCHEMA_VERSION):
    if "summary" not in f or not isinstance(f["summary"], h5py.Group):
        c.problem("/summary", "missing group")
        return
    s = f["summary"]
    if len(s.attrs):
        c.problem("/summary", "must hold datasets only, has attributes: " + ", ".join(s.attrs))
    expected = summary_columns(targets if targets is not None else [], kind, version)
    c.exact_members(s, expected, "datasets (or no matching target in the trials)")
    if _has_scales(version):
        c.scale(s, "trial", [name for name in s if name != "trial"])
    cols = {}
    for name, k in expected.items():
        v = c.column(s, name, k)
        if v is None:
            continue
        why = schema.summary_length_problem(len(v), len(order))
        if why is not None:
            c.problem(f"/summary/{name}", why)
            continue
        cols[name] = v
    if "trial" not in cols:
        return
    trial = [int(x) for x in cols["trial"]]
    if sorted(trial) != sorted(order) or len(set(trial)) != len(trial):
        c.problem("/summary/trial", f"lists trials {trial}, but /trials holds {order}")
        return
    if trial != order:
        c.problem("/summary/trial", f"order {trial} differs from the order trials were written {order}")

    # Row i of /summary describes /trials/<trial[i]>; it must repeat that trial's
    # attributes and last row exactly (NaN as NaN).
    for i, k in enumerate(trial):
        info = infos.get(k)
        if info is None:
            continue
        for name, want in info["summary"].items():
            if name not in cols or want is None:
                continue
            got = cols[name][i]
            if _first_difference([got], [np.asarray(want, dtype=cols[name].dtype)]) is not None:
                c.problem(f"/summary/{name}", f"row {i} (trial {k}) is {got}, the trial says {want}")


def _check_trials(c: _Checker, group, check_one):
    """Every /trials/<k> through check_one; returns (the indices in writing
    order, what each usable trial says /summary must repeat)."""
    if len(group.attrs):
        c.problem("/trials", "must hold groups only, has attributes: " + ", ".join(group.attrs))
    order, infos = [], {}
    for name in group:
        if not TRIAL_NAME.fullmatch(name) or not isinstance(group[name], h5py.Group):
            c.problem(f"/trials/{name}", "not a trial (a group named by a decimal index)")
            continue
        k = int(name)
        order.append(k)
        info = check_one(group[name])
        if info is not None:
            infos[k] = info
    return order, infos


def _check_trials_agree(c: _Checker, order, infos, done):
    """All trials share one list of targets (the summary has a column each), and
    only the last trial written, in a run itself incomplete, can have been cut
    short. Returns the targets (None without a usable trial)."""
    targets = None
    for k in order:
        if k not in infos:
            continue
        if targets is None:
            targets = infos[k]["targets"]
        elif _first_difference(targets, infos[k]["targets"]) is not None or \
                len(targets) != len(infos[k]["targets"]):
            c.problem(f"/trials/{k}/targets", f"{list(infos[k]['targets'])} differ from {list(targets)}")
    for where, why in schema.completeness_problems(done, [(str(k), infos[k]["complete"])
                                                          for k in order if k in infos]):
        c.problem(where, why)
    return targets


def check_file(path, peers=None, trials=None, complete=None, rounds=None, kind=None,
               steps=None, local_steps=None, eval_every=None) -> list[str]:
    """Every way `path` departs from its schema (v1 to v7), as one message per problem.

    Optional expectations: kind (run_kind, "averaging" or "sgd"), peers
    (n_peers), trials (number of trials written), complete (root flag, 0 or 1).
    Averaging only: rounds (rounds per trial: a complete trial ran exactly this
    many unless it reached every target earlier; none ran more). Training only:
    steps (likewise, for the last row's step), local_steps (round = step // H in
    every row), eval_every (rows every E steps, plus the last step).
    """
    c = _Checker()
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # not HDF5, missing, unreadable
        return [f"cannot open as HDF5: {e}"]
    try:
        with f:
            n_peers, done, run_kind = _check_root(c, f, peers, complete, kind)
            if run_kind == "sgd" and rounds is not None:
                c.problem("expectation rounds", "applies to averaging traces; this is an sgd trace (use steps)")
            if run_kind == "averaging":
                for name, value in (("steps", steps), ("local_steps", local_steps), ("eval_every", eval_every)):
                    if value is not None:
                        c.problem(f"expectation {name}", "applies to sgd traces; this is an averaging trace")
            c.exact_members(f, ROOT_GROUPS[run_kind], "members")
            _check_config(c, f)
            version = _schema_version(f)
            quantizer = _quantizer(f)
            geometric = _config_str(f, "local-steps-dist", "fixed") == "geometric"
            join_every = _join_every(f)
            detection_timeout = _detection_timeout(f)
            waits = _waits(f)
            optimum_present, optimum = (_check_optimum(c, f, version) if run_kind == "sgd" else (True, None))

            if "trials" not in f or not isinstance(f["trials"], h5py.Group):
                c.problem("/trials", "missing group")
                return c.problems
            check_one = (
                (lambda g: _check_training_trial(c, g, n_peers, optimum, steps, local_steps, eval_every, version,
                                                 quantizer, detection_timeout, geometric, join_every))
                if run_kind == "sgd" else
                (lambda g: _check_trial(c, g, n_peers, rounds, version, quantizer, detection_timeout, waits)))
            order, infos = _check_trials(c, f["trials"], check_one)
            if trials is not None and len(order) != trials:
                c.problem("/trials", f"holds {len(order)} trials, expected {trials}")
            if not optimum_present and len(f["trials"]):
                c.problem("/optimum", "empty (no x, no attributes), but /trials holds trials: "
                                      "only a run stopped before its first trial may leave it empty")
            targets = _check_trials_agree(c, order, infos, done)
            _check_summary(c, f, infos, order, targets, run_kind, version)
    except Exception as e:  # a broken file must give a message, not a traceback
        c.problem("file", f"unreadable: {type(e).__name__}: {e}")
    return c.problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="avbench check", description="Validate an avbench trace (schema v7; v1 to v6 traces too).")
    parser.add_argument("file")
    parser.add_argument("--kind", choices=RUN_KINDS, help="expected run_kind")
    parser.add_argument("--peers", type=int, help="expected n_peers")
    parser.add_argument("--trials", type=int, help="expected number of trials")
    parser.add_argument("--complete", type=int, choices=(0, 1), help="expected root complete flag")
    parser.add_argument("--rounds", type=int,
                        help="averaging: rounds per trial: complete trials ran exactly R unless every "
                             "target was reached earlier; no trial ran more")
    parser.add_argument("--steps", type=int,
                        help="sgd: steps per trial: complete trials end at step S unless every target "
                             "was reached earlier; no trial ran more")
    parser.add_argument("--local-steps", type=int, help="sgd: H, SGD steps per averaging round (round = step // H)")
    parser.add_argument("--eval-every", type=int, help="sgd: E, steps between rows (and the last step)")
    args = parser.parse_args(argv)
    for name in ("local_steps", "eval_every"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    problems = check_file(args.file, peers=args.peers, trials=args.trials, complete=args.complete,
                          rounds=args.rounds, kind=args.kind, steps=args.steps,
                          local_steps=args.local_steps, eval_every=args.eval_every)
    for p in problems:
        print(f"{args.file}: {p}")
    if problems:
        return 1
    with h5py.File(args.file, "r") as f:
        version = f.attrs["schema_version"]
        kind = f.attrs.get("run_kind", "averaging")
    print(f"{args.file}: valid avbench {kind} trace (schema v{version})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
