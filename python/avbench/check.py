#!/usr/bin/python3
"""`avbench check FILE [--kind K] [--peers N] [--trials K] [--complete 0|1] [--rounds R]
[--steps S] [--local-steps H] [--eval-every E]` validates a trace of any schema version
against docs/trace-format.md: one line per problem and exit 1, or one line and exit 0.
check_file(path, ...) returns the problems. The structural rules are schema.py's, which
the readers apply too; check_layout reads the trials of either layout into one form,
on which check_values runs the value rules.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys

import h5py
import numpy as np

from avbench import schema
from avbench.check_layout import Checker, read_groups, read_table
from avbench.check_values import REL_TOL, check_trial

SCHEMA_VERSION = schema.SCHEMA_VERSION
OPTIONS = {"peers": "expected n_peers", "trials": "expected number of trials",
           "rounds": "averaging: rounds per trial: complete trials ran exactly R unless every target was reached "
                     "earlier; no trial ran more",
           "steps": "sgd: steps per trial: complete trials end at step S unless every target was reached earlier; "
                    "no trial ran more",
           "local-steps": "sgd: H, SGD steps per averaging round (round = step // H)",
           "eval-every": "sgd: E, steps between rows (and the last step)"}


def _utc(text: str) -> str | None:
    try:  # the pattern holds the form to the letter, strptime the calendar
        good = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text) and \
            datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        good = False
    return None if good else f"{text!r} is not ISO 8601 UTC like 2026-11-30T12:00:00Z"


# /optimum's `method`: a quadratic's direct solve, a logistic's Newton, a softmax's
# L-BFGS, or none (the MLP: no x* is computed, f* = 0 bounds the loss).
OPTIMUM_METHODS = ("ldlt", "newton", "lbfgs", "none")
# The attributes of / and /optimum, for Checker.attrs: name -> type or (type, rule, ...),
# a rule saying what is wrong with a value of that type (false if nothing), or the values allowed.
NONEMPTY, FINITE = ("str", lambda v: v == "" and "empty"), ("float64", lambda v: not math.isfinite(v) and
                                                                      f"not finite ({v})")
NONNEGATIVE = lambda v: v < 0 and f"negative ({v})"  # noqa: E731 (a rule like the lambdas beside it)
ROOT_ATTRS = {"schema_version": ("int32", schema.version_problem), "avbench_version": NONEMPTY, "git_sha": NONEMPTY,
              "created_utc": ("str", _utc), "command_line": NONEMPTY, "engine": ("str", tuple(schema.TIME_MODELS)),
              "mpi_library": "str", "n_peers": ("int32", lambda v: v < 1 and f"must be at least 1, is {v}"),
              "run_kind": ("str", schema.RUN_KINDS), "complete": "flag", "time_model": "str",
              "run_seconds": ("float64", lambda v: not (math.isfinite(v) and v >= 0) and
                              f"must be a finite number >= 0, is {v}")}
OPTIMUM_ATTRS = {"loss": FINITE, "initial_loss": FINITE, "gradient_norm": (*FINITE, NONNEGATIVE),
                 "iterations": ("int32", NONNEGATIVE), "converged": "flag",
                 "method": ("str", OPTIMUM_METHODS), "test_set": "str"}


def _check_root(c: Checker, f, version: int, expect: dict):
    """The root attributes; returns (n_peers, complete flag, run kind), the kind
    falling back to the expected one, or to what the layout suggests."""
    v = c.attrs(f, {n: spec for n, spec in ROOT_ATTRS.items() if (n != "run_kind" or version != 1) and (n not in (
        "time_model", "run_seconds") or version >= schema.TIME_MODEL_SINCE)}, f"not part of schema v{version}")
    engine, model = v["engine"], v.get("time_model")
    c.problem("/ attribute time_model", None not in (engine, model) and model != schema.TIME_MODELS.get(engine, model)
              and f"{model!r} on engine {engine}, expected {schema.TIME_MODELS.get(engine)!r}")
    kind = "averaging" if version == 1 else v.get("run_kind")
    kind = kind if kind in schema.RUN_KINDS else None
    for name, got, want in (("n_peers", v["n_peers"], expect["peers"]), ("complete", v["complete"], expect["complete"]),
                            ("run_kind", kind, expect["kind"])):
        c.problem(f"/ attribute {name}", None not in (got, want) and got != want and f"is {got}, expected {want}")
    return v["n_peers"], v["complete"], kind or expect["kind"] or ("sgd" if "optimum" in f else "averaging")


def _settings(c: Checker, f) -> dict:
    """/config checked; the options the value rules depend on, as it records them."""
    config, got = f.get("config"), {}
    if not isinstance(config, h5py.Group):
        c.problem("/config", "missing group")
    else:
        c.problem("/config", len(config) and "must hold attributes only, has members: " + ", ".join(config))
        got = c.attrs(config, dict.fromkeys(config.attrs, "str"))
        c.problem("/config attribute text", "text" not in got and "missing")

    def number(name, kind):
        try:
            return kind(got.get(name) or 0)
        except ValueError:
            return kind(0)
    h = number("local-steps", int) if got.get("failure") in ("churn", "trace") else 0
    return {"quantizer": got.get("quantizer") or "none", "waits": got.get("wait") not in (None, "all"),
            "detection_timeout": number("detection-timeout", float), "join_every": h if h > 0 else None,
            "geometric": got.get("local-steps-dist") == "geometric"}


def _check_optimum(c: Checker, f, version: int):
    """/optimum of a training trace: (present, what the trials are checked against or
    None); not present is the empty group of a run stopped before it wrote /optimum."""
    g = f.get("optimum")
    if not isinstance(g, h5py.Group):
        c.problem("/optimum", "missing group")
        return True, None
    if len(g) == 0 and len(g.attrs) == 0:
        return False, None
    c.members(g, ["coordinate", "x"] if version >= schema.SCALES_SINCE else ["x"])
    v, x = c.attrs(g, OPTIMUM_ATTRS, "not part of the schema"), c.column(g, "x", "float64")
    if version >= schema.SCALES_SINCE:
        coordinate = c.column(g, "coordinate", "int32")
        c.problem("/optimum/coordinate", coordinate is not None and x is not None and not np.array_equal(
            coordinate, np.arange(len(x))) and f"is not 0, 1, ..., {len(x) - 1} (one index per entry of x)")
        c.scale(g, "coordinate", ["x"])
    c.problem("/optimum/x", x is not None and len(x) == 0 and "empty (x* has the model's dimension, at least 1)")
    usable = x is not None and len(x) > 0 and not c.first_bad("/optimum/x", ~np.isfinite(x),
                                                              lambda i: f"not finite at entry {i} ({x[i]})")
    method, iterations, test_set, loss, initial = (v[n] for n in ("method", "iterations", "test_set", "loss",
                                                                   "initial_loss"))
    c.problem("/optimum attribute iterations", method == "ldlt" and iterations not in (0, None) and
              f"is {iterations}, but method ldlt (a direct solve) has 0")
    c.problem("/optimum attribute test_set", method == "ldlt" and test_set not in ("", None) and
              f"is {test_set!r}, but method ldlt (a quadratic) has none" or method in ("newton", "lbfgs", "none") and
              test_set == "" and f"empty, but method {method} measures accuracy on one")
    c.problem("/optimum attribute loss", method == "none" and loss not in (0, None) and
              f"is {loss}, but method none (no x*) has the bound 0")
    if not usable or None in (loss, initial, test_set) or not math.isfinite(loss) or not math.isfinite(initial):
        return True, None
    scale = max(abs(loss), abs(initial), np.finfo(float).tiny)
    c.problem("/optimum attribute initial_loss", initial < loss - REL_TOL * scale and
              f"{initial!r} is below the minimum loss {loss!r}")
    return True, {**v, "scale": scale, "x_norm2": float(np.dot(x, x))}


def _check(c: Checker, f, expect: dict) -> None:
    """Every check of the open trace F (check_file)."""
    version = f.attrs.get("schema_version")  # as far as usable (_check_root reports a mistyped one), or the newest
    version = int(version) if isinstance(version, np.integer) and schema.known(int(version)) else SCHEMA_VERSION
    n_peers, done, kind = _check_root(c, f, version, expect)
    for name in ("rounds",) if kind == "sgd" else ("steps", "local_steps", "eval_every"):
        c.problem(f"expectation {name}", expect[name] is not None and (
            "applies to averaging traces; this is an sgd trace (use steps)" if kind == "sgd" else
            "applies to sgd traces; this is an averaging trace"))
    c.members(f, schema.ROOT_GROUPS[kind])
    run = {**expect, **_settings(c, f), "kind": kind, "n_peers": n_peers}
    present, run["optimum"] = _check_optimum(c, f, version) if kind == "sgd" else (True, None)
    if not isinstance(f.get("trials"), h5py.Group):
        return c.problem("/trials", "missing group")
    order, trials, summary = (read_table if schema.is_table(version) else read_groups)(c, f, kind, version)
    c.problem("/trials", expect["trials"] not in (None, len(order)) and
              f"holds {len(order)} trials, expected {expect['trials']}")
    c.problem("/optimum", not present and order and "empty (no x, no attributes), but /trials holds trials: "
                                                    "only a run stopped before its first trial may leave it empty")
    expected = {t.k: check_trial(t, run) for t in trials}
    for i, k in enumerate((summary or {}).get("trial", [])):  # row i repeats exactly (NaN as NaN) what trial k says
        for name, want in expected.get(int(k), {}).items():
            got = summary[name][i] if name in summary else None
            if got is not None and want is not None and not np.array_equal(got, np.asarray(want, got.dtype),
                                                                            equal_nan=got.dtype.kind == "f"):
                c.problem(f"/summary/{name}", f"row {i} (trial {k}) is {got}, the trial says {want}")
    for pos, why in schema.cut_short_problems(done, [t.info["complete"] for t in trials]):
        c.problem(trials[pos].info_at("complete"), why)


def check_file(path, peers=None, trials=None, complete=None, rounds=None, kind=None,
               steps=None, local_steps=None, eval_every=None) -> list[str]:
    """Every way `path` departs from its schema (v1 to v9), one message per problem,
    given the optional expectations: kind (run_kind), complete (root flag) and those
    of OPTIONS (main's options, "-" for "_")."""
    c = Checker()
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # not HDF5, missing, unreadable
        return [f"cannot open as HDF5: {e}"]
    try:
        with f:
            _check(c, f, dict(peers=peers, trials=trials, complete=complete, rounds=rounds, kind=kind, steps=steps,
                              local_steps=local_steps, eval_every=eval_every))
    except Exception as e:  # a broken file must give a message, not a traceback
        c.problem("file", f"unreadable: {type(e).__name__}: {e}")
    return list(dict.fromkeys(c))  # a v9 scale's fault shows once, not once per trial


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="avbench check", description="Validate an avbench trace (schema v1 to v9).")
    parser.add_argument("file")
    parser.add_argument("--kind", choices=schema.RUN_KINDS, help="expected run_kind")
    parser.add_argument("--complete", type=int, choices=(0, 1), help="expected root complete flag")
    for name, what in OPTIONS.items():
        parser.add_argument(f"--{name}", type=int, help=what)
    args = parser.parse_args(argv)
    for name in ("local_steps", "eval_every"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    problems = check_file(args.file, **{k: v for k, v in vars(args).items() if k != "file"})
    for p in problems:
        print(f"{args.file}: {p}")
    if problems:
        return 1
    with h5py.File(args.file, "r") as f:
        version, kind = f.attrs["schema_version"], f.attrs.get("run_kind", "averaging")
    print(f"{args.file}: valid avbench {kind} trace (schema v{version})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
