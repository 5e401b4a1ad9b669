#!/usr/bin/python3
"""Collects a sweep's traces into one CSV table, one row per run (docs/slurm.md).

    avbench aggregate TABLE OUT [--csv PATH]

For row i of TABLE (the sweep's table, python/avbench/sweep_table.py) it reads
OUT/<name>.h5 and writes one CSV row (default OUT/aggregate.csv) with:

- `row`, `name`, `trace`: the table row, its name, the trace's path;
- every column of TABLE as written (`-` where the row left the flag out);
- `run_kind`, `engine`, `n_peers`, `git_sha`, `trials`: from the trace's root and
  the number of trials in its /summary;
- `config_<option>`: every resolved option the program recorded in /config (the
  prefix that --summary and load_summary give an option named like a column), so
  defaults the table did not spell out are there too;
- `<metric>_mean`, `<metric>_se`, `<metric>_n`: the mean over trials, its standard
  error (sample standard deviation / sqrt(n); empty for n < 2) and the number n of
  trials it is over, for every /summary column except trial, seed and complete,
  named as in the trace but for bytes_per_peer (the trace's bytes_sent, a total
  over all peers, divided by n_peers, as the programs' table and --summary give
  it): time (seconds), final_variance, final_error, rounds,
  rounds_to_<t> (capped, as in the trace) and reached_<t> (the share of trials that
  reached t) for averaging runs; final_gap, final_relative_gap, final_consensus,
  final_accuracy, steps, steps_to_<t>, diverged (the share of trials that
  diverged) for sgd runs. A trial that diverged is left out of every metric but
  `diverged`, and values that are not finite (a quadratic run's accuracy) are left
  out, so n can differ between metrics; a metric with n = 0 has empty cells.

Floats are written in Python's shortest round-trip form, so a value read back with
float() is the statistic computed from the trace in float64, to the last bit. Runs
of both kinds can share a table; columns a run does not have are left empty.

It fails (exit 1, one line per problem on stderr, no CSV written) when a trace is
missing, unreadable or incomplete (root `complete` != 1, or a trial with
`complete` = 0), or does not match its row (run_kind against program, n_peers
against peers). Bad arguments: one line naming the argument, exit 2.

Run with Debian's /usr/bin/python3, which sees python3-h5py.
"""

from __future__ import annotations

import argparse
import csv
import glob
import math
import os
import sys

# Appended: scripts/avbench platform must not hide the standard module.
from avbench import sweep_table  # the format every mode reads

# /summary columns that identify a trial rather than measure it.
NOT_METRICS = ("trial", "seed", "complete")
# /summary columns renamed with their unit (bytes_sent also becomes per peer).
UNIT_NAMES = {"bytes_sent": "bytes_per_peer"}
STATISTICS = ("_mean", "_se", "_n")
KIND_OF_PROGRAM = {"averaging_bench": "averaging", "sgd_bench": "sgd"}


def _text(v) -> str:
    """A CSV cell: ints as ints, floats in shortest round-trip form, strings as they are."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)  # nan, inf
    if hasattr(v, "item"):  # numpy scalar
        return _text(v.item())
    return str(v)


def read_trace(path: str, row: sweep_table.Row) -> tuple[dict, list[str]]:
    """The CSV fields of one trace, and its problems (empty when usable)."""
    import h5py  # here, so that `--help` works without h5py
    import numpy as np

    from avbench.schema import SUMMARY_SCALES

    where = f"row {row.index} ({row.name})"
    if not os.path.exists(path):
        leftovers = glob.glob(os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp.*"))
        hint = f"; {leftovers[0]} is left: the run was killed before it could save" if leftovers else ""
        return {}, [f"{where}: no trace {path}{hint}"]
    problems: list[str] = []
    fields: dict = {}
    try:
        with h5py.File(path, "r") as f:
            attrs = f.attrs
            complete = int(attrs.get("complete", 0))
            if complete != 1:
                problems.append(f"{where}: {path} is incomplete (complete = {complete}): the run was stopped; submit the sweep again to redo it")
            kind = _text(attrs.get("run_kind", "averaging"))  # schema v1 traces were all averaging runs
            want = KIND_OF_PROGRAM.get(row.program_name)
            if want is not None and kind != want:
                problems.append(f"{where}: {path} is a run_kind = {kind} trace, but the row runs {row.program_name}")
            n_peers = int(attrs.get("n_peers", -1))
            if row.peers is not None and n_peers != row.peers:
                problems.append(f"{where}: {path} has n_peers = {n_peers}, but the row asks for peers = {row.peers}")
            fields.update(run_kind=kind, engine=_text(attrs.get("engine", "")), n_peers=n_peers,
                          git_sha=_text(attrs.get("git_sha", "")))
            if "config" in f:
                for k, v in f["config"].attrs.items():
                    if k != "text":
                        fields[f"config_{k}"] = _text(v)
            if "summary" not in f:
                problems.append(f"{where}: {path} has no /summary")
                return fields, problems
            summary = f["summary"]
            # v9's /summary/targets lists the targets, one entry each: not a column over trials
            columns = {name: summary[name][()] for name in summary if name not in SUMMARY_SCALES}
            trials = len(columns.get("trial", []))
            fields["trials"] = trials
            if trials == 0:
                problems.append(f"{where}: {path} holds no trial")
            if "complete" in columns and trials and not np.all(columns["complete"] == 1):
                problems.append(f"{where}: {path} has trials cut short (summary/complete = 0)")
            if trials:
                fields.update(statistics(columns, n_peers))
    except OSError as e:
        problems.append(f"{where}: cannot read {path}: {e}")
    return fields, problems


def statistics(columns: dict, n_peers: int) -> dict:
    """<metric>_mean, _se and _n of every metric column of a /summary, over the
    trials that did not diverge (all of them for `diverged`) with finite values."""
    import numpy as np

    kept = np.ones(len(columns["trial"]), dtype=bool)
    if "diverged" in columns:
        kept = columns["diverged"] == 0
    out: dict = {}
    for name, values in columns.items():
        if name in NOT_METRICS:
            continue
        v = values.astype(np.float64)
        if name == "bytes_sent":
            v = v / n_peers
        v = v[(kept | (name == "diverged")) & np.isfinite(v)]
        metric = UNIT_NAMES.get(name, name)
        n = len(v)
        out[f"{metric}_mean"] = float(np.mean(v)) if n else ""
        out[f"{metric}_se"] = float(np.std(v, ddof=1) / np.sqrt(n)) if n > 1 else ""
        out[f"{metric}_n"] = n
    return out


def aggregate(table_path: str, out: str, csv_path: str) -> list[str]:
    """Writes the CSV and returns [] or, writing nothing, the problems."""
    table = sweep_table.parse(table_path)
    records: list[dict] = []
    problems: list[str] = []
    for row in table.rows:
        trace = os.path.join(out, f"{row.name}.h5")
        fields, bad = read_trace(trace, row)
        problems += bad
        # The table's cells, with the name resolved (a '-' or missing name is row<i>).
        records.append({"row": row.index, "trace": trace, **row.cells, "name": row.name, **fields})
    if problems:
        return problems

    # Columns: the table's, then the trace's, then its config, then its metrics,
    # each group in first-seen order (averaging and sgd runs have different ones).
    head = ["row", "name", "trace"] + [c for c in dict.fromkeys(table.columns) if c != "name"]
    rest: list[str] = []
    for r in records:
        rest += [k for k in r if k not in head and k not in rest]
    config = [k for k in rest if k.startswith("config_")]
    metrics = [k for k in rest if k.endswith(STATISTICS)]
    other = [k for k in rest if k not in config and k not in metrics]
    header = head + other + config + metrics

    # Written under a temporary name and renamed, so a CSV under the final name is
    # always whole.
    tmp = f"{csv_path}.tmp.{os.getpid()}"
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header, restval="")
        w.writeheader()
        for r in records:
            w.writerow({k: _text(v) for k, v in r.items()})
    os.replace(tmp, csv_path)
    return []


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="avbench aggregate", description="One CSV row per trace of a sweep.")
    p.add_argument("table", metavar="TABLE", help="the sweep's parameter table")
    p.add_argument("out", metavar="OUT", help="the sweep's output folder (traces OUT/<name>.h5)")
    p.add_argument("--csv", metavar="PATH", help="the CSV to write (default OUT/aggregate.csv)")
    args = p.parse_args(argv)
    if not os.path.isdir(args.out):
        print(f"avbench aggregate: error: OUT {args.out}: no such folder", file=sys.stderr)
        return 2
    csv_path = args.csv or os.path.join(args.out, "aggregate.csv")
    if not os.path.isdir(os.path.dirname(os.path.abspath(csv_path))):
        print(f"avbench aggregate: error: --csv {csv_path}: its folder does not exist", file=sys.stderr)
        return 2
    try:
        problems = aggregate(args.table, args.out, csv_path)
    except sweep_table.TableError as e:
        print(f"avbench aggregate: error: TABLE: {e}", file=sys.stderr)
        return 2
    if problems:
        for line in problems:
            print(f"avbench aggregate: error: {line}", file=sys.stderr)
        print(f"avbench aggregate: {len(problems)} problem(s): {csv_path} not written", file=sys.stderr)
        return 1
    print(f"avbench aggregate: wrote {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
