#!/usr/bin/python3
"""The wall-clock study's table and figures, from the traces run.sh wrote.

    summarize.py [--results DIR] [--csv FILE] [--md FILE] [--figures DIR]

Reads every trace (*.h5) in DIR (default: results/ beside this script) and writes
results.csv and table.md beside this script (or where --csv and --md say; '-' skips
one), then prints the markdown tables. With --figures DIR it also draws
fig_round_time.png and fig_time_to_consensus.png there (the notebook draws the same).

A cell's protocol (the study's name), precision, platform and failure rate come from
its file name, avg_<protocol>_<fp32|fp16>_n<N>_<kind>_f<rate>[_seq].h5 or
sgd_<protocol>_n<N>_<kind>.h5: a trace does not record the platform. `_seq` marks the
sequential engine's cells (AVB_ENGINE=sequential run.sh), whose time is the α–β
estimate; the tables take SMPI's cell where there is one and the estimate (marked †)
elsewhere, and compare the two where both exist. The rest comes from the trace. Per
cell, over the trials with complete = 1:

  rounds          mean rounds run (a trial stops at variance < 1e-4, else at the cap)
  time_per_round  mean over trials of (simulated time of the trial) / (its rounds)
  rounds_to       mean rounds to variance < 1e-4 (the cap for a trial that never got
                  there); reached: how many trials got there
  time_to         mean simulated seconds at that round, over the trials that got there
  gb_per_round    bytes sent per peer per round, GB
  detection_s     mean detection time charged per trial (inside time under SMPI)

Importable: load_cells(results), chosen(df), markdown(df), ring_allreduce_seconds(...),
plot_round_time(df, path), plot_time_to(df, path) (the notebook and the test use them).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import avbench  # noqa: E402  (python/avbench: traces -> DataFrames)
from avbench.tables import fmt_time, markdown_lines, mean as _mean, trace_rows  # noqa: E402

HERE = Path(__file__).resolve().parent
PROTOCOLS = ["allreduce", "moshpit", "random-groups", "sgp", "gossip", "swarm"]
KINDS = ["cluster", "fat", "cloud", "geo"]
TARGET = "1e-4"
AVG = re.compile(r"^avg_([a-z-]+)_(fp32|fp16)_n(\d+)_(cluster|fat|cloud|geo)_f([0-9.eE+-]+?)(_seq)?$")
CELL = ["part", "kind", "N", "fail", "precision", "study_protocol"]  # a cell's coordinates
ESTIMATE = " †"  # after a value from the sequential engine's estimate
SGD = re.compile(r"^sgd_([a-z-]+)_n(\d+)_(cluster|fat|cloud|geo)$")

# The cluster platform (scripts/platform.py defaults) as SMPI's network model sees a
# large message (docs/performance.md, "the bounds"): private links of 125 MB/s times
# smpi/bw-factor 0.940694, and a latency of 2 x 50 us + 500 us times smpi/lat-factor
# 11.6436.
LINK_BW = 125e6 * 0.940694
ALPHA = (2 * 50e-6 + 500e-6) * 11.6436


def ring_allreduce_seconds(n: int, vector_bytes: float, bw: float = LINK_BW, alpha: float = ALPHA) -> float:
    """The alpha-beta bound of a ring all-reduce of `vector_bytes` on n peers whose
    links are the bottleneck: 2 (n - 1) steps, each one latency and one chunk (the
    pipelined segments of a chunk add latencies the bound leaves out)."""
    return 2 * (n - 1) * (alpha + vector_bytes / n / bw)


def parse_name(stem: str) -> dict | None:
    """The cell's coordinates from a trace's file name, or None."""
    m = AVG.match(stem)
    if m:
        return {"part": "avg", "study_protocol": m.group(1), "precision": m.group(2), "N": int(m.group(3)),
                "kind": m.group(4), "fail": float(m.group(5)), "engine": "sequential" if m.group(6) else "smpi"}
    m = SGD.match(stem)
    if m:
        return {"part": "sgd", "study_protocol": m.group(1), "precision": "fp32", "N": int(m.group(2)),
                "kind": m.group(3), "fail": 0.0, "engine": "smpi"}
    return None


def trace_fields(path: Path, summary: pd.DataFrame) -> dict:
    """The measured columns of one trace's row of the table."""
    config = summary.attrs["config"]
    done = summary[summary["complete"].astype(bool)]
    rec = {"protocol": config.get("protocol", "?"), "model_dim": int(config.get("model-dim", config["dim"])),
           "compute_flops": float(config.get("compute-flops", 0.0)), "trials": len(done),
           "rounds": _mean(done["rounds"])}
    rec["time_per_round"] = _mean(done["time"] / done["rounds"].clip(lower=1))
    rec["gb_per_round"] = _mean(done["bytes_sent"] / done["rounds"].clip(lower=1)) / summary.attrs["peers"] / 1e9
    rows = avbench.load_trace(path, columns=["time", "detection_time"])
    rows = rows[rows["trial"].isin(done["trial"])]
    last = rows.groupby("trial")["detection_time"].max()
    rec["detection_s"] = _mean(last) if len(last) else math.nan
    if f"rounds_to_{TARGET}" in done:
        reached = done[done[f"reached_{TARGET}"] == 1]
        rec["rounds_to"] = _mean(done[f"rounds_to_{TARGET}"])
        rec["reached"] = len(reached)
        times = [avbench.value_at(rows, k, "round", r, "time")
                 for k, r in zip(reached["trial"], reached[f"rounds_to_{TARGET}"])]
        rec["time_to"] = _mean(times) if times else math.nan
        # Trial 0 alone: the same seed, hence the same failures, on every engine.
        first = reached[reached["trial"] == 0]
        rec["t0_time_to"] = (avbench.value_at(rows, 0, "round", first[f"rounds_to_{TARGET}"].iloc[0], "time")
                             if len(first) else math.nan)
    t0 = done[done["trial"] == 0]
    rec["t0_time_per_round"] = float(t0["time"].iloc[0] / max(t0["rounds"].iloc[0], 1)) if len(t0) else math.nan
    return rec


def summarize_trace(path: Path) -> dict | None:
    """One table row for one trace, or None (with a message) if it is not usable."""
    named = parse_name(path.stem)
    if named is None:
        print(f"summarize.py: {path.name}: not a wall-clock cell name, skipped", file=sys.stderr)
        return None
    try:
        summary = avbench.read_summary(path)
        return {**named, **trace_fields(path, summary), "trace": path.name}
    except (OSError, KeyError, ValueError) as e:
        print(f"summarize.py: {path.name}: cannot read ({e!r}), skipped", file=sys.stderr)
        return None


def load_cells(results: Path) -> pd.DataFrame:
    """The table, one row per trace: averaging cells then sgd, by platform, N, failure
    rate, precision and protocol (in PROTOCOLS order)."""
    df = trace_rows(results, summarize_trace)
    if df.empty:
        return df
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    df = df.assign(_p=df["study_protocol"].map(lambda p: order.get(p, len(order))),
                   _k=df["kind"].map(lambda k: KINDS.index(k)), _q=df["precision"] == "fp16")
    df = df.sort_values(["part", "_k", "N", "fail", "_q", "_p"]).drop(columns=["_p", "_k", "_q"])
    return df.reset_index(drop=True)


def chosen(df: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: SMPI's where it ran, else the sequential engine's estimate."""
    if df.empty:
        return df
    rank = (df["engine"] != "smpi").astype(int)
    picked = df.assign(_e=rank).sort_values("_e", kind="stable").drop_duplicates(CELL).drop(columns="_e")
    return picked.sort_index()


def fmt_rounds(rec) -> str:
    if rec["trials"] == 0 or math.isnan(rec.get("rounds_to", math.nan)):
        return "—"
    if rec["reached"] == rec["trials"]:
        return f"{rec['rounds_to']:.3g}"
    if rec["reached"] == 0:
        return f">{rec['rounds']:.0f}"
    return f"{rec['rounds_to']:.3g} ({rec['reached']}/{rec['trials']})"


def fmt_seconds(v) -> str:
    return fmt_time(v) if not (isinstance(v, float) and math.isnan(v)) else "—"


def avg_table(df: pd.DataFrame, kind: str) -> list[str]:
    """One platform's averaging table: a line per (N, failure rate, protocol), fp32 and
    fp16 side by side."""
    part = chosen(df)
    part = part[(part["part"] == "avg") & (part["kind"] == kind)]
    head = ["N", "p", "protocol", "rounds to 1e-4", "s/round fp32", "s/round fp16", "to 1e-4 fp32",
            "to 1e-4 fp16", "GB/peer/round fp32"]
    lines = []
    for (n, f, p), g in part.groupby(["N", "fail", "study_protocol"], sort=False):
        by = {r["precision"]: r for _, r in g.iterrows()}
        r32, r16 = by.get("fp32"), by.get("fp16")
        any_rec = r32 if r32 is not None else r16

        def cell(r, c):
            if r is None:
                return "—"
            text = fmt_seconds(r[c])
            return text + ESTIMATE if r["engine"] == "sequential" and text != "—" else text
        lines.append([str(n), f"{f:g}", p, fmt_rounds(any_rec), cell(r32, "time_per_round"),
                      cell(r16, "time_per_round"), cell(r32, "time_to"), cell(r16, "time_to"),
                      f"{r32['gb_per_round']:.3f}" if r32 is not None else "—"])
    return [f"### Averaging on `{kind}`", ""] + markdown_lines(head, lines) + [""] if lines else []


def estimate_table(df: pd.DataFrame) -> list[str]:
    """The sequential engine's estimate against SMPI, in the cells run on both."""
    avg = df[df["part"] == "avg"]
    smpi = avg[avg["engine"] == "smpi"].set_index(CELL)
    est = avg[avg["engine"] == "sequential"].set_index(CELL)
    both = smpi.index.intersection(est.index)
    head = ["platform", "N", "p", "protocol", "precision", "s/round SMPI", "estimate / SMPI", "to 1e-4 SMPI",
            "estimate / SMPI"]
    lines = []
    for key in sorted(both, key=lambda k: (KINDS.index(k[1]), k[2], k[3], k[4], PROTOCOLS.index(k[5]))):
        a, b = smpi.loc[key], est.loc[key]
        ratio = lambda c: f"{b[c] / a[c]:.3f}" if a[c] > 0 and not math.isnan(b[c] / a[c]) else "—"  # noqa: E731
        lines.append([key[1], str(key[2]), f"{key[3]:g}", key[5], key[4], fmt_seconds(a["t0_time_per_round"]),
                      ratio("t0_time_per_round"), fmt_seconds(a["t0_time_to"]), ratio("t0_time_to")])
    if not lines:
        return []
    return (["### The sequential engine's estimate against SMPI", "",
             "Cells run on both engines, trial 0 of each (the same seed, so the same failures and groups)."]
            + [""] + markdown_lines(head, lines) + [""])


def sgd_table(df: pd.DataFrame) -> list[str]:
    """The training slice: time per round with the local steps' compute, and the part
    of it that is not compute at the median host speed (1 Gflop/s)."""
    part = df[df["part"] == "sgd"]
    head = ["platform", "N", "protocol", "s/round (compute + averaging)", "of which compute at median speed",
            "rest"]
    lines = [[r["kind"], str(r["N"]), r["study_protocol"], fmt_seconds(r["time_per_round"]),
              fmt_seconds(r["compute_flops"] / 1e9), fmt_seconds(r["time_per_round"] - r["compute_flops"] / 1e9)]
             for _, r in part.iterrows()]
    return ["### Training slice (fp32, no failures)", ""] + markdown_lines(head, lines) + [""] if lines else []


def markdown(df: pd.DataFrame) -> str:
    lines: list[str] = []
    if (df["engine"] == "sequential").any():
        lines += [f"Values marked{ESTIMATE} are the sequential engine's estimate (no SMPI run of that cell).", ""]
    for kind in KINDS:
        lines += avg_table(df, kind)
    lines += estimate_table(df)
    lines += sgd_table(df)
    return "\n".join(lines) + "\n"


def _curves(ax, part: pd.DataFrame, column: str, title: str) -> None:
    for p in PROTOCOLS:
        g = part[part["study_protocol"] == p].sort_values("N")
        if len(g):
            line, = ax.plot(g["N"], g[column], marker="o", label=p)
            est = g[g["engine"] == "sequential"]  # hollow: the estimate
            ax.plot(est["N"], est[column], marker="o", linestyle="none", markerfacecolor="white",
                    color=line.get_color())
    ax.set_title(title, fontsize=9)
    if not part[column].gt(0).any():  # no cell of this platform and rate: log axes would fail
        ax.text(0.5, 0.5, "no cells", ha="center", va="center", transform=ax.transAxes)
        return
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("peers N")


def _grid(df: pd.DataFrame, column: str, ylabel: str, path: Path, fails: list[float]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    avg = chosen(df)
    avg = avg[(avg["part"] == "avg") & (avg["precision"] == "fp32")]
    kinds = [k for k in KINDS if (avg["kind"] == k).any()] or KINDS[:1]
    fig, axes = plt.subplots(len(fails), len(kinds), figsize=(4 * len(kinds), 3.6 * len(fails)), squeeze=False)
    for i, f in enumerate(fails):
        for j, kind in enumerate(kinds):
            part = avg[(avg["kind"] == kind) & (avg["fail"] == f)]
            _curves(axes[i][j], part, column, f"{kind}, p = {f:g}, fp32 (25.6M params)")
            axes[i][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_round_time(df: pd.DataFrame, path: Path) -> None:
    """Simulated seconds per averaging round against N, per platform (fp32, p = 0)."""
    _grid(df, "time_per_round", "simulated s per round", path, [0.0])


def plot_time_to(df: pd.DataFrame, path: Path) -> None:
    """Simulated seconds to variance 1e-4 against N, per platform and failure rate."""
    fails = sorted(set(df.loc[df["part"] == "avg", "fail"]))
    _grid(df, "time_to", "simulated s to 1e-4", path, fails or [0.0])


def main(argv: list[str]) -> int:
    ap = avbench.table_parser(__doc__, HERE)
    ap.add_argument("--figures", type=Path, help="folder for the figures (none by default)")
    a = ap.parse_args(argv)

    def figures(a, df):
        if a.figures is not None:
            a.figures.mkdir(parents=True, exist_ok=True)
            plot_round_time(df, a.figures / "fig_round_time.png")
            plot_time_to(df, a.figures / "fig_time_to_consensus.png")
    return avbench.write_table(a, load_cells, markdown, "wall-clock traces", figures)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
