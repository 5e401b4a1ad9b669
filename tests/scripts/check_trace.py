#!/usr/bin/python3
"""Validate an avbench HDF5 trace against schema v1 (docs/trace-format.md).

As a module:

    from check_trace import check_file
    problems = check_file("run.h5", peers=1024, trials=10, complete=1, rounds=50)

returns a list of human-readable problems (empty when the file is valid).

As a program:

    check_trace.py FILE [--peers N] [--trials K] [--complete 0|1] [--rounds R]

prints one line per problem and exits 1, or prints one confirmation line and
exits 0. Run it with Debian's /usr/bin/python3, which sees python3-h5py.

The checks are exactly the promises of docs/trace-format.md; when the format
changes, the document, the writer (src/trace) and this file change together.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from decimal import Decimal

import h5py
import numpy as np

SCHEMA_VERSION = 1

# Root attributes and their kinds: "int32" or "str" (variable-length UTF-8).
ROOT_ATTRS = {
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
ENGINES = ("openmpi", "mpich", "smpi")
ROOT_GROUPS = ("config", "trials", "summary")

# Per-round columns of /trials/<k>, in the order the writer creates them.
TRIAL_COLUMNS = {
    "round": "int32",
    "variance": "float64",
    "error": "float64",
    "mean_drift": "float64",
    "alive": "int32",
    "groups": "int32",
    "failed_groups": "int32",
    "bytes_sent": "uint64",
    "time": "float64",
}

# (kind, itemsize) of each numeric type name; byte order is not checked, since
# h5py converts on read and the writer always writes little endian anyway.
KINDS = {"int32": ("i", 4), "uint64": ("u", 8), "float64": ("f", 8)}

UTC_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
TRIAL_NAME = re.compile(r"^(0|[1-9][0-9]*)$")


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


def summary_columns(targets) -> dict[str, str]:
    """The /summary datasets, in order, for the given targets."""
    cols = {"trial": "int32", "seed": "uint64"}
    suffixes = [target_suffix(t) for t in targets]
    cols.update({f"rounds_to_{s}": "int32" for s in suffixes})
    cols.update({f"reached_{s}": "int32" for s in suffixes})
    cols.update({
        "final_variance": "float64",
        "final_error": "float64",
        "bytes_sent": "uint64",
        "time": "float64",
        "rounds": "int32",
        "complete": "int32",
    })
    return cols


class _Checker:
    def __init__(self):
        self.problems: list[str] = []

    def problem(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    # ---- typed access; each returns None (and records why) when unusable ----

    def attr(self, obj, name: str, kind: str):
        where = f"{obj.name} attribute {name}"
        if name not in obj.attrs:
            self.problem(where, "missing")
            return None
        aid = obj.attrs.get_id(name)
        if aid.shape != ():
            self.problem(where, f"not a scalar (shape {aid.shape})")
            return None
        dtype = aid.dtype
        if kind == "str":
            info = h5py.check_string_dtype(dtype)
            if info is None or info.encoding != "utf-8" or info.length is not None:
                self.problem(where, f"not a variable-length UTF-8 string (dtype {dtype})")
                return None
            try:
                value = obj.attrs[name]
            except Exception as e:  # undecodable bytes, broken heap
                self.problem(where, f"unreadable: {e}")
                return None
            if not isinstance(value, str):
                self.problem(where, f"h5py reads it as {type(value).__name__}, not str")
                return None
            return value
        want = KINDS[kind]
        if (dtype.kind, dtype.itemsize) != want:
            self.problem(where, f"type {dtype}, expected {kind}")
            return None
        return obj.attrs[name].item()

    def flag(self, obj, name: str):
        value = self.attr(obj, name, "int32")
        if value is not None and value not in (0, 1):
            self.problem(f"{obj.name} attribute {name}", f"must be 0 or 1, is {value}")
            return None
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
        if ds.ndim != 1:
            self.problem(where, f"not 1-D (shape {ds.shape})")
            return None
        if (ds.dtype.kind, ds.dtype.itemsize) != KINDS[kind]:
            self.problem(where, f"type {ds.dtype}, expected {kind}")
            return None
        return ds[()]

    def exact_members(self, group, expected, what: str) -> None:
        extra = [k for k in group if k not in expected]
        if extra:
            self.problem(group.name, f"unexpected {what}: {', '.join(extra)}")


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


def _check_root(c: _Checker, f, peers, complete):
    for name in f.attrs:
        if name not in ROOT_ATTRS:
            c.problem("/ attribute " + name, "not part of schema v1")
    values = {name: c.attr(f, name, kind) for name, kind in ROOT_ATTRS.items()}
    if values["schema_version"] is not None and values["schema_version"] != SCHEMA_VERSION:
        c.problem("/ attribute schema_version", f"is {values['schema_version']}, this checker knows {SCHEMA_VERSION}")
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
    return n_peers, done


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


def _check_trial(c: _Checker, g, n_peers, rounds):
    """Checks one /trials/<k> group; returns what /summary must agree with, or None."""
    where = g.name
    targets = c.column(g, "targets", "float64")
    if targets is None:
        return None
    suffixes = []
    for t in targets:
        try:
            suffixes.append(target_suffix(t))
        except ValueError as e:
            c.problem(f"{where}/targets", str(e))
            return None
    if len(set(suffixes)) != len(suffixes):
        c.problem(f"{where}/targets", "a target appears twice")
        return None

    expected_attrs = ["seed", "complete"] + [f"rounds_to_{s}" for s in suffixes] + [f"reached_{s}" for s in suffixes]
    for name in g.attrs:
        if name not in expected_attrs:
            c.problem(f"{where} attribute {name}", "not part of schema v1 (or no matching entry in targets)")
    c.exact_members(g, ["targets", *TRIAL_COLUMNS], "members")
    seed = c.attr(g, "seed", "uint64")
    trial_complete = c.flag(g, "complete")

    cols = {name: c.column(g, name, kind) for name, kind in TRIAL_COLUMNS.items()}
    if any(v is None for v in cols.values()):
        return None
    lengths = {name: len(v) for name, v in cols.items()}
    if len(set(lengths.values())) != 1:
        c.problem(where, "columns differ in length: " + ", ".join(f"{k}={v}" for k, v in lengths.items()))
        return None
    n = lengths["round"]
    if n == 0:
        c.problem(where, "no rows (row 0, the initial state, is required)")
        return None

    rnd = cols["round"]
    if rnd[0] != 0:
        c.problem(f"{where}/round", f"row 0 is round {rnd[0]}, expected 0")
    steps = np.diff(rnd.astype(np.int64))
    bad = np.nonzero(steps != 1)[0]
    if bad.size:
        i = int(bad[0])
        c.problem(f"{where}/round", f"does not increase by 1 at row {i + 1} ({rnd[i]} -> {rnd[i + 1]})")

    for name in ("variance", "error", "mean_drift", "time"):
        v = cols[name]
        bad = np.nonzero(~np.isfinite(v))[0]
        if bad.size:
            c.problem(f"{where}/{name}", f"not finite at row {int(bad[0])} ({v[bad[0]]})")
            continue
        bad = np.nonzero(v < 0)[0]
        if bad.size:
            c.problem(f"{where}/{name}", f"negative at row {int(bad[0])} ({v[bad[0]]})")

    for name in ("bytes_sent", "time"):
        v = cols[name]
        if v[0] != 0:
            c.problem(f"{where}/{name}", f"row 0 is {v[0]}, expected 0 (cumulative since round 0)")
        # Compare neighbours directly: np.diff on uint64 would wrap around.
        bad = np.nonzero(v[1:] < v[:-1])[0]
        if bad.size:
            i = int(bad[0])
            c.problem(f"{where}/{name}", f"decreases at row {i + 1} ({v[i]} -> {v[i + 1]}); it is cumulative")

    alive, groups, failed = cols["alive"], cols["groups"], cols["failed_groups"]
    for i in np.nonzero((alive < 0) | ((alive > n_peers) if n_peers is not None else False))[0][:1]:
        c.problem(f"{where}/alive", f"row {int(i)} has {alive[i]} alive peers, outside 0..n_peers")
    for i in np.nonzero(groups < 0)[0][:1]:
        c.problem(f"{where}/groups", f"negative at row {int(i)}")
    for i in np.nonzero((failed < 0) | (failed > groups))[0][:1]:
        c.problem(f"{where}/failed_groups", f"row {int(i)}: {failed[i]} failed of {groups[i]} groups")

    # Rounds-to-target: the first round whose variance is below the target; when
    # never, the cap, which is the number of rounds run (the last round).
    variance = cols["variance"]
    last_round = int(rnd[-1])
    rounds_to, reached = [], []
    for t, s in zip(targets, suffixes):
        rt = c.attr(g, f"rounds_to_{s}", "int32")
        re_ = c.flag(g, f"reached_{s}")
        rounds_to.append(rt)
        reached.append(re_)
        if rt is None or re_ is None:
            continue
        below = np.nonzero(variance < t)[0]
        if below.size:
            first = int(rnd[below[0]])
            if re_ != 1 or rt != first:
                c.problem(f"{where} attribute rounds_to_{s}",
                          f"variance first falls below {float(t)!r} in round {first}, "
                          f"but rounds_to={rt} reached={re_}")
        elif re_ != 0 or rt != last_round:
            c.problem(f"{where} attribute rounds_to_{s}",
                      f"variance never falls below {float(t)!r}: expected rounds_to={last_round} (the cap) "
                      f"and reached=0, found rounds_to={rt} reached={re_}")

    if rounds is not None:
        if last_round > rounds:
            c.problem(f"{where}/round", f"ran {last_round} rounds, more than the expected {rounds}")
        elif trial_complete == 1 and last_round != rounds and not all(r == 1 for r in reached):
            # A complete trial may stop early only once every target is reached.
            c.problem(f"{where}/round", f"complete trial ran {last_round} rounds, expected {rounds}")

    return {
        "targets": targets,
        "seed": seed,
        "complete": trial_complete,
        "rounds_to": rounds_to,
        "reached": reached,
        "final_variance": variance[-1],
        "final_error": cols["error"][-1],
        "bytes_sent": cols["bytes_sent"][-1],
        "time": cols["time"][-1],
        "rounds": last_round,
    }


def _check_summary(c: _Checker, f, infos: dict[int, dict], order: list[int], targets):
    if "summary" not in f or not isinstance(f["summary"], h5py.Group):
        c.problem("/summary", "missing group")
        return
    s = f["summary"]
    if len(s.attrs):
        c.problem("/summary", "must hold datasets only, has attributes: " + ", ".join(s.attrs))
    expected = summary_columns(targets if targets is not None else [])
    c.exact_members(s, expected, "datasets (or no matching target in the trials)")
    cols = {}
    for name, kind in expected.items():
        v = c.column(s, name, kind)
        if v is None:
            continue
        if len(v) != len(order):
            c.problem(f"/summary/{name}", f"has {len(v)} rows for {len(order)} trials")
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
    # attributes and last row exactly.
    suffixes = [target_suffix(t) for t in (targets if targets is not None else [])]
    for i, k in enumerate(trial):
        info = infos.get(k)
        if info is None:
            continue
        expect = {
            "seed": info["seed"],
            "complete": info["complete"],
            "final_variance": info["final_variance"],
            "final_error": info["final_error"],
            "bytes_sent": info["bytes_sent"],
            "time": info["time"],
            "rounds": info["rounds"],
        }
        for j, suf in enumerate(suffixes):
            expect[f"rounds_to_{suf}"] = info["rounds_to"][j]
            expect[f"reached_{suf}"] = info["reached"][j]
        for name, want in expect.items():
            if name not in cols or want is None:
                continue
            got = cols[name][i]
            if _first_difference([got], [np.asarray(want, dtype=cols[name].dtype)]) is not None:
                c.problem(f"/summary/{name}", f"row {i} (trial {k}) is {got}, the trial says {want}")


def check_file(path, peers=None, trials=None, complete=None, rounds=None) -> list[str]:
    """Every way `path` departs from schema v1, as one message per problem.

    Optional expectations: peers (n_peers), trials (number of trials written),
    complete (root flag, 0 or 1), rounds (rounds per trial: a complete trial ran
    exactly this many unless it reached every target earlier; none ran more).
    """
    c = _Checker()
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # not HDF5, missing, unreadable
        return [f"cannot open as HDF5: {e}"]
    try:
        with f:
            n_peers, done = _check_root(c, f, peers, complete)
            c.exact_members(f, ROOT_GROUPS, "members")
            _check_config(c, f)

            if "trials" not in f or not isinstance(f["trials"], h5py.Group):
                c.problem("/trials", "missing group")
                return c.problems
            group = f["trials"]
            if len(group.attrs):
                c.problem("/trials", "must hold groups only, has attributes: " + ", ".join(group.attrs))
            order, infos = [], {}
            for name in group:
                if not TRIAL_NAME.match(name) or not isinstance(group[name], h5py.Group):
                    c.problem(f"/trials/{name}", "not a trial (a group named by a decimal index)")
                    continue
                k = int(name)
                order.append(k)
                info = _check_trial(c, group[name], n_peers, rounds)
                if info is not None:
                    infos[k] = info
            if trials is not None and len(order) != trials:
                c.problem("/trials", f"holds {len(order)} trials, expected {trials}")

            # All trials share one list of targets (the summary has a column each).
            targets = None
            for k in order:
                if k not in infos:
                    continue
                if targets is None:
                    targets = infos[k]["targets"]
                elif _first_difference(targets, infos[k]["targets"]) is not None or \
                        len(targets) != len(infos[k]["targets"]):
                    c.problem(f"/trials/{k}/targets", f"{list(infos[k]['targets'])} differ from {list(targets)}")

            # Only the last trial written can have been cut short, and only in a
            # run that is itself incomplete.
            flags = [(k, infos[k]["complete"]) for k in order if k in infos]
            for pos, (k, flag) in enumerate(flags):
                if flag == 0 and pos != len(flags) - 1:
                    c.problem(f"/trials/{k} attribute complete", "0, but it is not the last trial written")
                if flag == 0 and done == 1:
                    c.problem(f"/trials/{k} attribute complete", "0 in a run marked complete")

            _check_summary(c, f, infos, order, targets)
    except Exception as e:  # a broken file must give a message, not a traceback
        c.problem("file", f"unreadable: {type(e).__name__}: {e}")
    return c.problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Validate an avbench trace (schema v1).")
    parser.add_argument("file")
    parser.add_argument("--peers", type=int, help="expected n_peers")
    parser.add_argument("--trials", type=int, help="expected number of trials")
    parser.add_argument("--complete", type=int, choices=(0, 1), help="expected root complete flag")
    parser.add_argument("--rounds", type=int,
                        help="rounds per trial: complete trials ran exactly R unless every "
                             "target was reached earlier; no trial ran more")
    args = parser.parse_args(argv)
    problems = check_file(args.file, peers=args.peers, trials=args.trials,
                          complete=args.complete, rounds=args.rounds)
    for p in problems:
        print(f"{args.file}: {p}")
    if problems:
        return 1
    print(f"{args.file}: valid avbench trace (schema v{SCHEMA_VERSION})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
