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
from avbench.check_layout import Checker, check_summary, read_groups, read_table
from avbench.check_values import REL_TOL, check_trial

SCHEMA_VERSION = schema.SCHEMA_VERSION
ROOT_ATTRS = {"schema_version": "int32", "avbench_version": "str", "git_sha": "str", "created_utc": "str",
              "command_line": "str", "engine": "str", "mpi_library": "str", "n_peers": "int32", "run_kind": "str",
              "complete": "flag", "time_model": "str", "run_seconds": "float64"}
# /optimum's `method`: a quadratic's direct solve, a logistic's Newton, a softmax's
# L-BFGS, or none (the MLP: no x* is computed, f* = 0 bounds the loss).
OPTIMUM_METHODS = ("ldlt", "newton", "lbfgs", "none")
OPTIMUM_ATTRS = {"loss": "float64", "initial_loss": "float64", "gradient_norm": "float64", "iterations": "int32",
                 "converged": "flag", "method": "str", "test_set": "str"}
OPTIONS = {"peers": "expected n_peers", "trials": "expected number of trials",
           "rounds": "averaging: rounds per trial: complete trials ran exactly R unless every target was reached "
                     "earlier; no trial ran more",
           "steps": "sgd: steps per trial: complete trials end at step S unless every target was reached earlier; "
                    "no trial ran more",
           "local-steps": "sgd: H, SGD steps per averaging round (round = step // H)",
           "eval-every": "sgd: E, steps between rows (and the last step)"}


def _utc(text: str) -> bool:
    try:
        return bool(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text)
                    and datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return False


def _check_root(c: Checker, f, version: int, expect: dict):
    """The root attributes; returns (n_peers, complete flag, run kind), the kind
    falling back to the expected one, or to what the layout suggests."""
    names = [n for n in ROOT_ATTRS if (n != "run_kind" or version != 1) and
             (n not in ("time_model", "run_seconds") or version >= schema.TIME_MODEL_SINCE)]
    for name in (n for n in f.attrs if n not in names):
        c.problem(f"/ attribute {name}", f"not part of schema v{version}")
    v = {name: c.attr(f, name, ROOT_ATTRS[name]) for name in names}
    engine, model, seconds, peers = v["engine"], v.get("time_model"), v.get("run_seconds"), v["n_peers"]
    kind = "averaging" if version == 1 else v.get("run_kind")
    for name, bad, why in [
            ("schema_version", v["schema_version"] is not None and not schema.known(v["schema_version"]),
             schema.version_problem(v["schema_version"])),
            *((name, v[name] == "", "empty") for name in ("avbench_version", "git_sha", "command_line")),
            ("created_utc", v["created_utc"] is not None and not _utc(v["created_utc"]),
             f"{v['created_utc']!r} is not ISO 8601 UTC like 2026-11-30T12:00:00Z"),
            ("engine", engine is not None and engine not in schema.TIME_MODELS,
             f"{engine!r} is not one of {', '.join(schema.TIME_MODELS)}"),
            ("time_model", None not in (engine, model) and model != schema.TIME_MODELS.get(engine, model),
             f"{model!r} on engine {engine}, expected {schema.TIME_MODELS.get(engine)!r}"),
            ("run_seconds", seconds is not None and not (math.isfinite(seconds) and seconds >= 0),
             f"must be a finite number >= 0, is {seconds}"),
            ("n_peers", peers is not None and peers < 1, f"must be at least 1, is {peers}"),
            ("run_kind", kind is not None and kind not in schema.RUN_KINDS,
             f"{kind!r} is not one of {', '.join(schema.RUN_KINDS)}"),
            *((name, None not in (got, want) and got != want, f"is {got}, expected {want}")
              for name, got, want in (("n_peers", peers, expect["peers"]), ("complete", v["complete"],
                                      expect["complete"]), ("run_kind", kind, expect["kind"]))
              if name != "run_kind" or kind in schema.RUN_KINDS)]:
        if bad:
            c.problem(f"/ attribute {name}", why)
    return peers, v["complete"], kind if kind in schema.RUN_KINDS else \
        expect["kind"] or ("sgd" if "optimum" in f else "averaging")


def _settings(c: Checker, f) -> dict:
    """/config checked; the options the value rules depend on, as it records them."""
    config = f.get("config")
    got = {name: c.attr(config, name, "str") for name in config.attrs} if isinstance(config, h5py.Group) else {}
    if not isinstance(config, h5py.Group):
        c.problem("/config", "missing group")
    elif len(config):
        c.problem("/config", "must hold attributes only, has members: " + ", ".join(config))
    if isinstance(config, h5py.Group) and "text" not in got:
        c.problem("/config attribute text", "missing")

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
    c.members(g, ["coordinate", "x"] if version >= schema.SCALES_SINCE else ["x"], "members")
    for name in (n for n in g.attrs if n not in OPTIMUM_ATTRS):
        c.problem(f"/optimum attribute {name}", "not part of the schema")
    v, x = {name: c.attr(g, name, kind) for name, kind in OPTIMUM_ATTRS.items()}, c.column(g, "x", "float64")
    if version >= schema.SCALES_SINCE:
        coordinate = c.column(g, "coordinate", "int32")
        if coordinate is not None and x is not None and not np.array_equal(coordinate, np.arange(len(x))):
            c.problem("/optimum/coordinate", f"is not 0, 1, ..., {len(x) - 1} (one index per entry of x)")
        c.scale(g, "coordinate", ["x"])
    if x is not None and len(x) == 0:
        c.problem("/optimum/x", "empty (x* has the model's dimension, at least 1)")
    usable = x is not None and len(x) > 0 and not c.first_bad("/optimum/x", ~np.isfinite(x),
                                                              lambda i: f"not finite at entry {i} ({x[i]})")
    method, iterations, test_set, norm = v["method"], v["iterations"], v["test_set"], v["gradient_norm"]
    for name, bad, why in [
            *((n, v[n] is not None and not math.isfinite(v[n]), f"not finite ({v[n]})")
              for n in ("loss", "initial_loss", "gradient_norm")),
            ("gradient_norm", norm is not None and norm < 0, f"negative ({norm})"),
            ("iterations", iterations is not None and iterations < 0, f"negative ({iterations})"),
            ("method", method not in (None, *OPTIMUM_METHODS), f"{method!r} is not one of {', '.join(OPTIMUM_METHODS)}"),
            ("loss", method == "none" and v["loss"] != 0, f"is {v['loss']}, but method none (no x*) has the bound 0"),
            ("iterations", method == "ldlt" and iterations not in (0, None),
             f"is {iterations}, but method ldlt (a direct solve) has 0"),
            ("test_set", method == "ldlt" and test_set not in ("", None),
             f"is {test_set!r}, but method ldlt (a quadratic) has none"),
            ("test_set", method in ("newton", "lbfgs", "none") and test_set == "",
             f"empty, but method {method} measures accuracy on one")]:
        if bad:
            c.problem(f"/optimum attribute {name}", why)
    loss, initial = v["loss"], v["initial_loss"]
    if not usable or None in (loss, initial, test_set) or not math.isfinite(loss) or not math.isfinite(initial):
        return True, None
    scale = max(abs(loss), abs(initial), np.finfo(float).tiny)
    if initial < loss - REL_TOL * scale:
        c.problem("/optimum attribute initial_loss", f"{initial!r} is below the minimum loss {loss!r}")
    return True, {**v, "scale": scale, "x_norm2": float(np.dot(x, x))}


def _check(c: Checker, f, expect: dict) -> None:
    """Every check of the open trace F (check_file)."""
    version = f.attrs.get("schema_version")  # as far as usable (_check_root reports a mistyped one), or the newest
    version = int(version) if isinstance(version, np.integer) and schema.known(int(version)) else SCHEMA_VERSION
    n_peers, done, kind = _check_root(c, f, version, expect)
    for name in ("rounds",) if kind == "sgd" else ("steps", "local_steps", "eval_every"):
        if expect[name] is not None:
            c.problem(f"expectation {name}", "applies to averaging traces; this is an sgd trace (use steps)"
                      if kind == "sgd" else "applies to sgd traces; this is an averaging trace")
    c.members(f, schema.ROOT_GROUPS[kind], "members")
    run = {**expect, **_settings(c, f), "kind": kind, "n_peers": n_peers}
    present, run["optimum"] = _check_optimum(c, f, version) if kind == "sgd" else (True, None)
    if not isinstance(f.get("trials"), h5py.Group):
        return c.problem("/trials", "missing group")
    order, trials, summary = (read_table if schema.is_table(version) else read_groups)(c, f, kind, version)
    if expect["trials"] is not None and len(order) != expect["trials"]:
        c.problem("/trials", f"holds {len(order)} trials, expected {expect['trials']}")
    if not present and order:
        c.problem("/optimum", "empty (no x, no attributes), but /trials holds trials: "
                              "only a run stopped before its first trial may leave it empty")
    check_summary(c, summary, {t.k: check_trial(t, run) for t in trials})
    for pos, why in schema.cut_short_problems(done, [t.info["complete"] for t in trials]):
        c.problem(trials[pos].info_at("complete"), why)


def check_file(path, peers=None, trials=None, complete=None, rounds=None, kind=None,
               steps=None, local_steps=None, eval_every=None) -> list[str]:
    """Every way `path` departs from its schema (v1 to v9), one message per problem.
    Optional expectations: kind (run_kind), peers (n_peers), trials (written),
    complete (root flag); averaging: rounds (a complete trial ran R unless it reached
    every target earlier, none more); training: steps (likewise, the last row's step),
    local_steps (round = step // H), eval_every (a row every E steps, and the last)."""
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
    return list(dict.fromkeys(c.problems))  # a v9 scale's fault shows once, not once per trial


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
