#!/usr/bin/python3
"""The fashion_mlp table and figures: one row per cell (N, p, split, method) from the traces.

    summarize.py [--results DIR] [--csv FILE] [--md FILE] [--figures DIR]

Reads every sgd trace (*.h5, run_kind = sgd) in DIR (default: results/ beside this
script), writes results.csv and table.md beside this script (or where --csv and --md
say; '-' skips one) and one figure per (N, p, split), fig_N<N>_p<p>[_<split>].png, into
--figures (default: the folder of --md, none when that is '-'; '-': none); then prints
the markdown table.
Per cell, over the trials with complete = 1:

  final_accuracy, final_accuracy_se   mean and standard error over trials of the test
                     accuracy of the average model x̄ at the last evaluation (se: NaN for one trial)
  steps_to_<a>, time_to_<a>, reached_<a>   for each accuracy target a (ACCURACY_TARGETS):
                     the mean over the trials that got there of the first evaluated step
                     with accuracy >= a and of the simulated seconds then; how many did
  final_relative_gap the training loss f(x̄) / f(x0) (f* is taken as 0 for the MLP), mean
  bytes_per_peer     mean over trials of bytes_sent / N
  sim_time           mean simulated seconds of a whole trial
  wall_s             the cell's wall time from DIR/walltime.tsv, if listed there

Importable: load_cells(results) gives the table, load_curves(results) every evaluated
row of its traces' complete trials, figure(curves, n, p, split, path) draws one figure (the
notebook uses all three).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import avbench  # python/avbench: traces -> DataFrames
from avbench.tables import fmt_sci, fmt_time, fmt_wall, markdown_lines, trace_rows

HERE = Path(__file__).resolve().parent
METHOD_ORDER = ["allreduce", "allreduce-survivors", "moshpit", "sgp", "swarm", "diloco", "diloco-survivors",
                "noloco"]
COLORS = {"allreduce": "C0", "moshpit": "C1", "sgp": "C2", "swarm": "C3", "diloco": "C4", "noloco": "C5",
          "allreduce-survivors": "C9", "diloco-survivors": "C6"}
ACCURACY_TARGETS = ["0.7", "0.8"]
COLUMNS = ["step", "time", "accuracy", "relative_gap", "bytes_sent"]


def method_label(config: dict) -> str:
    """The study's name of a cell's method, from its flags (run.sh's method_flags)."""
    protocol = config.get("protocol", "?")
    outer = config.get("outer-optimizer", "none")
    h = int(config.get("local-steps", 1))
    if protocol == "allreduce":  # all-reduce cancels a round with a peer down, unless survivors
        cut = "-survivors" if config.get("on-failure") == "survivors" else ""
        if outer == "nesterov":
            return "diloco" + cut
        if h == 1:
            return "allreduce" + cut
    if protocol == "pairwise" and outer == "sgd":
        return "noloco"
    name = {"pushsum": "sgp"}.get(protocol, protocol)
    if outer != "none":
        name += f"+{outer}"
    default_h = 1 if protocol in ("allreduce", "pushsum") else 10  # run.sh's H of each method
    return name if h == default_h else f"{name}-H{h}"


def first_reached(rows: pd.DataFrame, target: float) -> pd.DataFrame:
    """Per trial, its first evaluated row with accuracy >= target (trials that never
    get there have none)."""
    hit = rows[rows["accuracy"] >= target].sort_values("step")
    return hit.groupby("trial", as_index=False).head(1)


def target_fields(rows: pd.DataFrame) -> dict:
    """steps_to_<a>, time_to_<a> and reached_<a> for every accuracy target a."""
    rec: dict = {}
    for a in ACCURACY_TARGETS:
        hit = first_reached(rows, float(a))
        rec[f"steps_to_{a}"] = float(hit["step"].mean()) if len(hit) else math.nan
        rec[f"time_to_{a}"] = float(hit["time"].mean()) if len(hit) else math.nan
        rec[f"reached_{a}"] = len(hit)
    return rec


def mean_se(values: pd.Series) -> tuple[float, float]:
    """Mean and standard error (NaN for fewer than two values)."""
    v = values.to_numpy(dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan


def cell_row(path: Path, config: dict, n: int, engine: str) -> dict:
    """The table row of the sgd trace at `path` (its /config, N and engine given)."""
    rows = avbench.load_trace(path, columns=COLUMNS)
    rows = rows[rows["complete"].astype(bool)]
    last = rows.sort_values("step").groupby("trial").tail(1)
    rec = {"N": n, "p": float(config.get("fail-rate", "nan")), "split": config.get("split", "random"),
           "method": method_label(config), "trials": int(rows["trial"].nunique()),
           "steps": int(rows["step"].max()) if len(rows) else 0}
    rec["final_accuracy"], rec["final_accuracy_se"] = mean_se(last["accuracy"])
    rec.update(target_fields(rows))
    rec["final_relative_gap"] = float(last["relative_gap"].mean()) if len(last) else math.nan
    rec["bytes_per_peer"] = float(last["bytes_sent"].mean()) / n if len(last) else math.nan
    rec["sim_time"] = float(last["time"].mean()) if len(last) else math.nan
    return {**rec, "engine": engine, "trace": path.name}


def summarize_trace(path: Path) -> dict | None:
    """cell_row of one trace, or None (with a message) if it is not a usable sgd trace."""
    try:
        attrs = avbench.read_summary(path).attrs  # identity and /config, even with no trial done
        if attrs["run_kind"] == "sgd":
            return cell_row(path, attrs["config"], int(attrs["peers"]), attrs["engine"])
        print(f"summarize.py: {path.name}: not a training trace, skipped", file=sys.stderr)
    except (OSError, KeyError, ValueError) as e:
        print(f"summarize.py: {path.name}: cannot read ({e}), skipped", file=sys.stderr)
    return None


def order_key(method: str) -> int:
    base = method.split("-H")[0]
    return METHOD_ORDER.index(base) if base in METHOD_ORDER else len(METHOD_ORDER)


def load_cells(results: Path) -> pd.DataFrame:
    """The table, one row per trace in `results`, by N, p, split, then METHOD_ORDER."""
    df = trace_rows(results, summarize_trace)
    if df.empty:
        return df
    df = df.assign(_m=df["method"].map(order_key))
    df = df.sort_values(["N", "p", "split", "_m", "method"]).drop(columns=["_m"])
    cols = ["N", "p", "split", "method", "trials", "steps", "final_accuracy", "final_accuracy_se"]
    for a in ACCURACY_TARGETS:
        cols += [f"steps_to_{a}", f"reached_{a}", f"time_to_{a}"]
    cols += ["final_relative_gap", "bytes_per_peer", "sim_time", "wall_s", "engine", "trace"]
    return df[cols].reset_index(drop=True)


def fmt_accuracy(mean: float, se: float) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:.4f}" if math.isnan(se) else f"{mean:.4f} ± {se:.4f}"


def fmt_reached(value: str, reached: int, trials: int) -> str:
    """A time or step to a target: '—' if no trial got there, 'v (k/n)' if only k did."""
    if reached == 0:
        return "—"
    return value if reached == trials else f"{value} ({reached}/{trials})"


def fmt_bytes(v: float) -> str:
    if math.isnan(v):
        return "—"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def row_cells(r: dict) -> list[str]:
    """One cell's line of the markdown table."""
    cells = [str(r["N"]), f"{r['p']:g}", r["split"], r["method"], str(r["trials"]), str(r["steps"]),
             fmt_accuracy(r["final_accuracy"], r["final_accuracy_se"])]
    for a in ACCURACY_TARGETS:
        cells.append(fmt_reached(f"{r[f'steps_to_{a}']:.0f}", r[f"reached_{a}"], r["trials"]))
        cells.append(fmt_reached(fmt_time(r[f"time_to_{a}"]), r[f"reached_{a}"], r["trials"]))
    return cells + [fmt_sci(r["final_relative_gap"]), fmt_bytes(r["bytes_per_peer"]),
                    fmt_time(r["sim_time"]), fmt_wall(r["wall_s"])]


def markdown(df: pd.DataFrame) -> str:
    """The table as markdown, one line per cell."""
    if df.empty:
        return "No sgd traces found.\n"
    head = ["N", "p", "split", "method", "trials", "steps", "final test accuracy"]
    for a in ACCURACY_TARGETS:
        head += [f"steps to {a}", f"sim. time to {a}"]
    head += ["final loss f(x̄)/f(x₀)", "bytes/peer", "sim. time", "wall"]
    lines = markdown_lines(head, [row_cells(r) for r in df.to_dict("records")])
    notes = ("final test accuracy: of the average model x̄ on the 10,000 t10k images, mean ± standard "
             "error over trials. steps / sim. time to a: mean over the trials that reached test accuracy "
             "a at an evaluation of the first such step and its simulated seconds; '(k/n)': only k of n "
             "trials did; '—': none. bytes/peer and sim. time: a whole trial, mean over trials.")
    return "\n".join(lines) + "\n\n" + notes + "\n"


def load_curves(results: Path, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every evaluated row of every complete trial of the cells of `table` (default:
    load_cells(results)), with the cell's N, p, split and method (avbench.load_sweep).
    Only the table's traces: a folder may also hold files summarize_trace skipped."""
    table = load_cells(results) if table is None else table
    df = avbench.load_sweep([Path(results) / t for t in table["trace"]], columns=COLUMNS)
    df = df[df["complete"].astype(bool)].copy()
    configs = df[["trace", "protocol", "local-steps", "outer-optimizer"]].drop_duplicates("trace")
    names = {r["trace"]: method_label(r) for r in configs.to_dict("records")}
    df["method"] = df["trace"].map(names)
    df["N"] = df["peers"].astype(int)
    df["p"] = df["fail-rate"].astype(float)
    if "split" not in df:
        df["split"] = "random"
    return df


def panel(ax, sub: pd.DataFrame, x: str) -> None:
    """Test accuracy of x̄ against `x` (time or step), one curve per method of `sub`."""
    for m in sorted(sub["method"].unique(), key=order_key):
        avbench.plot_metric(sub[sub["method"] == m], x=x, y="accuracy", by="method", ax=ax,
                            stat="mean", colors=COLORS, logx=x == "time", lw=1.6)
    # Linear accuracy (0.1 to 0.9: a log axis only squeezes the top); log time, as
    # all-reduce's steps cost several times a local method's (row 0, at time 0, is left out).
    ax.set_yscale("linear")
    for a in ACCURACY_TARGETS:
        ax.axhline(float(a), color="0.6", lw=0.8, ls=":")
    ax.set(ylabel="test accuracy of x̄", ylim=(0, 0.9), title=f"against {'simulated time' if x == 'time' else 'steps'}",
           xlabel="simulated time [s] (alpha-beta model, cluster platform)" if x == "time" else "local SGD step")
    # A method that sent nothing (every all-reduce cancelled) trained purely locally: say so.
    silent = set(sub.groupby("method")["bytes_sent"].max().loc[lambda b: b == 0].index)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, [f"{m} (sent nothing)" if m in silent else m for m in labels], fontsize=8, loc="lower right")


def figure(curves: pd.DataFrame, n: int, p: float, split: str, path: Path | None) -> plt.Figure:
    """Test accuracy of x̄ against simulated time (left) and steps (right), one curve
    per method (mean over trials at each evaluated step, ±1 standard error band:
    avbench.plot_metric), for one (N, p, split); saved to `path` when given."""
    sub = curves[(curves["N"] == n) & (curves["p"] == p) & (curves["split"] == split)]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    panel(axes[0], sub, "time")
    panel(axes[1], sub, "step")
    trials = sorted(sub.groupby("method")["trial"].nunique().unique())
    fig.suptitle(f"MLP on Fashion-MNIST, N = {n}, p = {p:g}, {split} split "
                 f"({'/'.join(map(str, trials))} trial{'s' if trials != [1] else ''} per method)", fontsize=11)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=90)
    return fig


def figure_name(n: int, p: float, split: str) -> str:
    return f"fig_N{n}_p{p:g}" + ("" if split == "random" else f"_{split}") + ".png"


def write_figures(a, df: pd.DataFrame) -> None:
    """One figure per (N, p, split) of the table, into a.figures, or beside the
    markdown table when not given ('-', or no markdown table: none)."""
    if a.figures is None:
        a.figures = "-" if a.md == "-" else str(Path(a.md).resolve().parent)
    if a.figures == "-":
        return
    plt.switch_backend("Agg")  # files only: the summarizer runs headless
    out = Path(a.figures)
    out.mkdir(parents=True, exist_ok=True)
    curves = load_curves(a.results, df)
    for (n, p, split), _ in df.groupby(["N", "p", "split"], sort=False):
        plt.close(figure(curves, int(n), float(p), split, out / figure_name(int(n), float(p), split)))


def main(argv: list[str]) -> int:
    ap = avbench.table_parser(__doc__, HERE)
    ap.add_argument("--figures", help="folder of the figures (default: beside --md; '-': none)")
    a = ap.parse_args(argv)
    return avbench.write_table(a, load_cells, markdown, "sgd traces", then=write_figures)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
