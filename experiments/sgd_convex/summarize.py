#!/usr/bin/python3
"""The sgd_convex table: one row per cell (N, objective, p, protocol) from the traces.

    summarize.py [--results DIR] [--csv FILE] [--md FILE]

Reads every sgd trace (*.h5, run_kind = sgd) in DIR (default: results/ beside this
script) and writes results.csv and table.md beside this script (or where --csv and
--md say; '-' skips one), then prints the markdown table. Per cell, over the trials
with complete = 1:

  steps_to_<t>       mean of the trials' steps_to_<t> attribute (first evaluated step
                     with relative gap <= t; a trial that never gets there counts its
                     last step, the cap), and reached_<t>, how many trials got there
  time_to_<t>        mean simulated time (s) at that row, over the trials that got there
  final_relative_gap, final_consensus, final_accuracy   means of the last rows
                     (accuracy: logistic only, NaN for a quadratic)
  bytes_per_peer     mean over trials of bytes_sent / N
  sim_time           mean total time of a trial (s); simulated under SMPI
  wall_s             the cell's wall time from DIR/walltime.tsv, if listed there

Importable: load_cells(results) gives the table as a pandas DataFrame, load_rows(path)
the per-evaluation rows of one trace (the notebook uses both).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

import avbench  # python/avbench: traces -> DataFrames
from avbench.tables import fmt_sci, fmt_time, fmt_wall, markdown_lines, mean as _mean, trace_rows

HERE = Path(__file__).resolve().parent
# Display order of the protocols, then of the problems.
PROTOCOL_ORDER = ["allreduce", "allreduce-survivors", "moshpit", "gossip-ring", "gossip-exp", "pushsum"]
OBJECTIVE_ORDER = ["quadratic", "logistic"]


def protocol_label(config: dict) -> str:
    """The cell's protocol name as run.sh spells it (gossip-ring, gossip-exp, ...)."""
    name = config.get("protocol", "?")
    if name == "gossip":
        return f"gossip-{config.get('topology', 'ring')}"
    if name == "allreduce" and config.get("on-failure") == "survivors":
        return "allreduce-survivors"
    return name


def target_suffixes(summary: pd.DataFrame) -> list[str]:
    """The target suffixes ('1e-2', ...) of a trace's summary, largest target first."""
    found = [k[len("steps_to_"):] for k in summary.columns if k.startswith("steps_to_")]
    return sorted(found, key=lambda s: -float(s))


def load_rows(path: Path) -> pd.DataFrame:
    """Every evaluation row of every trial of one trace (avbench.load_trace)."""
    return avbench.load_trace(path)


def target_fields(path: Path, done: pd.DataFrame) -> dict:
    """Per target: mean steps to it, trials that reached it, mean simulated time then."""
    rec: dict = {}
    suffixes = target_suffixes(done)
    rows = avbench.load_trace(path, columns=["time"]) if suffixes and len(done) else None
    for t in suffixes:
        reached = done[done[f"reached_{t}"] == 1]
        rec[f"steps_to_{t}"] = _mean(done[f"steps_to_{t}"]) if len(done) else math.nan
        rec[f"reached_{t}"] = len(reached)
        times = [avbench.value_at(rows, k, "step", at, "time")
                 for k, at in zip(reached["trial"], reached[f"steps_to_{t}"])]
        rec[f"time_to_{t}"] = _mean([v for v in times if not math.isnan(v)]) if times else math.nan
    return rec


def summarize_trace(path: Path) -> dict | None:
    """One table row for one trace, or None (with a message) if it is not a usable sgd trace."""
    try:
        summary = avbench.read_summary(path)
        meta, config = summary.attrs, summary.attrs["config"]
        if meta["run_kind"] != "sgd":
            print(f"summarize.py: {path.name}: not a training trace, skipped", file=sys.stderr)
            return None
        done = summary[summary["complete"]] if "complete" in summary else summary.iloc[:0]
        n = meta["peers"]
        rec = {"N": n, "objective": config.get("objective", "?"), "p": float(config.get("fail-rate", "nan")),
               "protocol": protocol_label(config), "trials": len(done),
               "steps": int(done["steps"].max()) if len(done) else 0}
        rec.update(target_fields(path, done))
        for name in ("final_relative_gap", "final_consensus", "final_accuracy"):
            rec[name] = _mean(done[name])
        rec["bytes_per_peer"] = _mean(done["bytes_sent"]) / n
        rec["sim_time"] = _mean(done["time"])
        rec.update(engine=meta["engine"], trace=path.name)
        return rec
    except (OSError, KeyError, ValueError) as e:
        print(f"summarize.py: {path.name}: cannot read ({e}), skipped", file=sys.stderr)
        return None


def load_cells(results: Path) -> pd.DataFrame:
    """The table, one row per trace in `results`, in display order."""
    df = trace_rows(results, summarize_trace)
    if df.empty:
        return df
    order = {name: i for i, name in enumerate(PROTOCOL_ORDER)}
    objs = {name: i for i, name in enumerate(OBJECTIVE_ORDER)}
    df = df.assign(_o=df["objective"].map(lambda o: objs.get(o, len(objs))),
                   _p=df["protocol"].map(lambda p: order.get(p, len(order))))
    df = df.sort_values(["N", "_o", "objective", "p", "_p", "protocol"]).drop(columns=["_o", "_p"])
    # Columns in a fixed order: identification, per-target, finals, costs.
    suffixes = sorted({c[len("steps_to_"):] for c in df.columns if c.startswith("steps_to_")},
                      key=lambda s: -float(s))
    cols = ["N", "objective", "p", "protocol", "trials", "steps"]
    for t in suffixes:
        cols += [f"steps_to_{t}", f"reached_{t}", f"time_to_{t}"]
    cols += ["final_relative_gap", "final_consensus", "final_accuracy", "bytes_per_peer", "sim_time",
             "wall_s", "engine", "trace"]
    return df[cols].reset_index(drop=True)


def fmt_steps(mean: float, reached: int, trials: int, cap: int) -> str:
    """Steps to a target: the mean if every trial got there, '>cap' if none did."""
    if trials == 0 or math.isnan(mean):
        return "—"
    if reached == trials:
        return f"{mean:.0f}" if trials == 1 or mean == round(mean) else f"{mean:.1f}"
    if reached == 0:
        return f">{cap}"
    return f"{mean:.0f} ({reached}/{trials})"


def fmt_bytes(v: float) -> str:
    if math.isnan(v):
        return "—"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if v >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def row_cells(r: dict, suffixes: list[str]) -> list[str]:
    """One cell's line of the markdown table."""
    cells = [str(r["N"]), r["objective"], f"{r['p']:g}", r["protocol"], str(r["trials"])]
    cells += [fmt_steps(r[f"steps_to_{t}"], r[f"reached_{t}"], r["trials"], r["steps"]) for t in suffixes]
    cells += [fmt_time(r[f"time_to_{t}"]) for t in suffixes]
    acc = r["final_accuracy"]
    return cells + [fmt_sci(r["final_relative_gap"]), fmt_sci(r["final_consensus"]),
                    "—" if math.isnan(acc) else f"{acc:.4f}", fmt_bytes(r["bytes_per_peer"]),
                    fmt_time(r["sim_time"]), fmt_wall(r["wall_s"])]


def markdown(df: pd.DataFrame) -> str:
    """The table as markdown: one block of rows per (N, objective, p)."""
    if df.empty:
        return "No sgd traces found.\n"
    suffixes = [c[len("steps_to_"):] for c in df.columns if c.startswith("steps_to_")]
    head = ["N", "problem", "p", "protocol", "trials"]
    head += [f"steps to {t}" for t in suffixes] + [f"sim. time to {t}" for t in suffixes]
    head += ["final rel. gap", "final consensus", "accuracy", "bytes/peer", "sim. time", "wall"]
    # to_dict, not itertuples: itertuples renames 'steps_to_1e-2'
    lines = markdown_lines(head, [row_cells(r, suffixes) for r in df.to_dict("records")])
    notes = ("steps to t: mean over complete trials of the first evaluated step with relative gap <= t; "
             "'>S': no trial got there in S steps; 'm (k/n)': k of n trials did, the others count S. "
             "sim. time to t: simulated seconds at that step, over the trials that got there. "
             "Finals, bytes per peer and sim. time (the whole trial): means over trials.")
    return "\n".join(lines) + "\n\n" + notes + "\n"


def main(argv: list[str]) -> int:
    a = avbench.table_parser(__doc__, HERE).parse_args(argv)
    return avbench.write_table(a, load_cells, markdown, "sgd traces")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
