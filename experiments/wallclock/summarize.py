#!/usr/bin/python3
"""The wall-clock study's table and figures, from the traces run.sh wrote.

    summarize.py [--results DIR] [--csv FILE] [--md FILE] [--figures DIR] [--keep CSV]

Reads every trace (*.h5) in DIR (default: results/ beside this script) and writes
results.csv and table.md beside this script (or where --csv and --md say; '-' skips
one), then prints the markdown tables, the time-to-accuracy part's last
(time_to_accuracy.py, from the tta_ traces). With --figures DIR it also draws
fig_round_time.png, fig_time_to_consensus.png, fig_sync_share.png and
fig_time_to_accuracy.png there (the notebook draws the same). With --keep CSV, an earlier results.csv's SMPI rows stay
in the table where results/ has no trace of that cell.

A cell's protocol (the study's name), precision, platform and failure rate come from
its file name, avg_<protocol>_<fp32|fp16|q8>_n<N>_<kind>_f<rate>[_seq].h5 or
sgd_<protocol>_<precision>_h<H>_n<N>_<kind>[_seq].h5: a trace does not record the
platform. `_seq` marks the sequential engine's cells (AVB_ENGINE=sequential run.sh);
the tables take SMPI's cell where there is one and the sequential engine's (marked †)
elsewhere, and compare the two where both exist. The rest comes from the trace. Per
cell, over the trials with complete = 1:

  rounds          mean rounds run (a trial stops at variance < 1e-4, else at the cap)
  time_per_round  mean over trials of (simulated time of the trial) / (its rounds)
  rounds_to       mean rounds to variance < 1e-4 (the cap for a trial that never got
                  there); reached: how many trials got there
  time_to         mean simulated seconds at that round, over the trials that got there
  gb_per_round    bytes sent per peer per round, GB
  detection_s     mean detection time charged per trial (inside time under SMPI)
  sync_share      training slice: (time_per_round - compute) / compute, compute being
                  the round's flops at the median host's 1 Gflop/s

Importable: load_cells(results, keep), chosen(df), markdown(df),
ring_allreduce_seconds(...), plot_round_time(df, path), plot_time_to(df, path),
plot_sync_share(df, path) (the notebook and the test use them).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pandas as pd

import avbench  # python/avbench: traces -> DataFrames
from avbench.tables import fmt_time, markdown_lines, mean as _mean, trace_rows

import time_to_accuracy  # noqa: E402  (beside this file)

HERE = Path(__file__).resolve().parent
PROTOCOLS = ["allreduce", "moshpit", "random-groups", "sgp", "gossip", "swarm", "swarm-nb"]
KINDS = ["cluster", "fat", "cloud", "geo", "daint"]
PRECISIONS = ["fp32", "fp16", "q8"]
TARGET = "1e-4"
_KIND = "(cluster|fat|cloud|geo|daint)"
AVG = re.compile(r"^avg_([a-z-]+)_(fp32|fp16|q8)_n(\d+)_" + _KIND + r"_f([0-9.eE+-]+?)(_seq)?$")
CELL = ["part", "kind", "N", "fail", "precision", "h", "study_protocol"]  # a cell's coordinates
ESTIMATE = " †"  # after a value from the sequential engine (no SMPI run of that cell)
SGD = re.compile(r"^sgd_([a-z-]+)_(fp32|fp16|q8)_h(\d+)_n(\d+)_" + _KIND + r"(_seq)?$")
SGD_V1 = re.compile(r"^sgd_([a-z-]+)_n(\d+)_" + _KIND + "$")  # before H and precision were named
HOST_SPEED = 1e9  # flop/s of every platform's (median) host: compute = flops / HOST_SPEED

# The cluster platform (scripts/avbench platform defaults) as SMPI's network model sees a
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
                "kind": m.group(4), "fail": float(m.group(5)), "h": 0,
                "engine": "sequential" if m.group(6) else "smpi"}
    m = SGD.match(stem)
    if m:
        return {"part": "sgd", "study_protocol": m.group(1), "precision": m.group(2), "h": int(m.group(3)),
                "N": int(m.group(4)), "kind": m.group(5), "fail": 0.0,
                "engine": "sequential" if m.group(6) else "smpi"}
    m = SGD_V1.match(stem)
    if m:
        return {"part": "sgd", "study_protocol": m.group(1), "precision": "fp32", "h": 1, "N": int(m.group(2)),
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
    if named is None and path.stem.startswith("tta_"):
        return None  # time_to_accuracy.py's
    if named is None:
        print(f"summarize.py: {path.name}: not a wall-clock cell name, skipped", file=sys.stderr)
        return None
    try:
        summary = avbench.read_summary(path)
        return {**named, **trace_fields(path, summary), "trace": path.name}
    except (OSError, KeyError, ValueError) as e:
        print(f"summarize.py: {path.name}: cannot read ({e!r}), skipped", file=sys.stderr)
        return None


def load_cells(results: Path, keep: Path | None = None) -> pd.DataFrame:
    """The table, one row per trace: averaging cells then sgd, by platform, N, failure
    rate, precision and protocol (in PROTOCOLS order). `keep`: an earlier results.csv
    whose SMPI rows stay in the table unless a trace of the same cell and engine is
    in `results` (SMPI's traces at model size cost hours, so a rerun of the grid on
    the sequential engine keeps them)."""
    df = trace_rows(results, summarize_trace)
    if keep is not None:
        old = pd.read_csv(keep)
        old = old[old["engine"] == "smpi"].copy()
        if "h" not in old:
            old["h"] = (old["part"] == "sgd").astype(int)
        if not df.empty:
            have = set(map(tuple, df[CELL + ["engine"]].itertuples(index=False)))
            old = old[[tuple(r) not in have for r in old[CELL + ["engine"]].itertuples(index=False)]]
        df = pd.concat([df, old], ignore_index=True) if not df.empty else old.reset_index(drop=True)
    if df.empty:
        return df
    compute = df["compute_flops"] / HOST_SPEED
    df["sync_share"] = ((df["time_per_round"] - compute) / compute).where(compute > 0)
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    df = df.assign(_p=df["study_protocol"].map(lambda p: order.get(p, len(order))),
                   _k=df["kind"].map(lambda k: KINDS.index(k)), _q=df["precision"].map(PRECISIONS.index))
    df = df.sort_values(["part", "_k", "N", "fail", "h", "_q", "_p", "engine"])
    return df.drop(columns=["_p", "_k", "_q"]).reset_index(drop=True)


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
    """The sequential engine against SMPI, in the cells run on both: the mean over
    trials, and trial 0 alone (the same seed, hence the same failures and groups:
    equal for the synchronous protocols; swarm's events follow simulated time, so
    its trials agree only in distribution, docs/simulation.md)."""
    avg = df[df["part"] == "avg"]
    smpi = avg[avg["engine"] == "smpi"].set_index(CELL)
    est = avg[avg["engine"] == "sequential"].set_index(CELL)
    both = smpi.index.intersection(est.index)
    head = ["platform", "N", "p", "protocol", "precision", "trials SMPI / seq", "s/round SMPI", "seq / SMPI",
            "trial 0: seq / SMPI", "to 1e-4 SMPI", "seq / SMPI", "trial 0: seq / SMPI"]
    lines = []
    for key in sorted(both, key=lambda k: (KINDS.index(k[1]), k[2], k[3], k[4], PROTOCOLS.index(k[6]))):
        a, b = smpi.loc[key], est.loc[key]
        ratio = lambda c: f"{b[c] / a[c]:.3f}" if a[c] > 0 and not math.isnan(b[c] / a[c]) else "—"  # noqa: E731
        lines.append([key[1], str(key[2]), f"{key[3]:g}", key[6], key[4], f"{a['trials']:.0f} / {b['trials']:.0f}",
                      fmt_seconds(a["time_per_round"]), ratio("time_per_round"), ratio("t0_time_per_round"),
                      fmt_seconds(a["time_to"]), ratio("time_to"), ratio("t0_time_to")])
    if not lines:
        return []
    return (["### The sequential engine against SMPI", "",
             "Cells run on both engines: means over each engine's trials, and trial 0 alone (the same seed, so "
             "the same failures and groups; swarm's trials agree in distribution only)."]
            + [""] + markdown_lines(head, lines) + [""])


def sgd_table(df: pd.DataFrame) -> list[str]:
    """The training slice: seconds per round (H local steps of compute, then one
    averaging round), and in brackets synchronisation as a share of compute: (round
    - compute at the median host's speed) / compute. One line per platform,
    precision, H and protocol, one column per N."""
    part = chosen(df)
    part = part[part["part"] == "sgd"]
    if part.empty:
        return []
    ns = sorted(set(part["N"]))
    head = ["platform", "precision", "H", "protocol"] + [f"N = {n}" for n in ns]
    lines = []
    for (kind, prec, h, p), g in part.groupby(["kind", "precision", "h", "study_protocol"], sort=False):
        by = {r["N"]: r for _, r in g.iterrows()}

        def cell(n):
            r = by.get(n)
            if r is None or math.isnan(r["time_per_round"]):
                return "—"
            mark = ESTIMATE if r["engine"] == "sequential" else ""
            return f"{fmt_seconds(r['time_per_round'])} ({r['sync_share']:.0%}){mark}"
        lines.append([kind, prec, str(h), p] + [cell(n) for n in ns])
    return (["### Training slice (no failures): s/round (synchronisation / compute)", ""]
            + markdown_lines(head, lines) + [""])


def markdown(df: pd.DataFrame) -> str:
    lines: list[str] = []
    if (df["engine"] == "sequential").any():
        lines += [f"Values marked{ESTIMATE} are the sequential engine's (no SMPI run of that cell).", ""]
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


def plot_sync_share(df: pd.DataFrame, path: Path) -> None:
    """The training slice: synchronisation / compute against N, per platform, one
    panel row per precision (H = the smallest run), with SwarmSGD's 10% line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    part = chosen(df)
    part = part[(part["part"] == "sgd") & part["sync_share"].gt(0)]
    if part.empty:
        return
    part = part[part["h"] == part["h"].min()]
    kinds = [k for k in KINDS if (part["kind"] == k).any()]
    precs = [q for q in PRECISIONS if (part["precision"] == q).any()]
    fig, axes = plt.subplots(len(precs), len(kinds), figsize=(4 * len(kinds), 3.6 * len(precs)), squeeze=False)
    for i, q in enumerate(precs):
        for j, kind in enumerate(kinds):
            ax = axes[i][j]
            sub = part[(part["kind"] == kind) & (part["precision"] == q)]
            _curves(ax, sub, "sync_share", f"{kind}, {q}, H = {part['h'].min()}")
            ax.axhline(0.1, color="gray", linestyle=":", linewidth=1)
        axes[i][0].set_ylabel("synchronisation / compute")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str]) -> int:
    ap = avbench.table_parser(__doc__, HERE)
    ap.add_argument("--figures", type=Path, help="folder for the figures (none by default)")
    ap.add_argument("--keep", type=Path, help="an earlier results.csv whose SMPI rows stay in the table")
    a = ap.parse_args(argv)
    if a.keep is not None and not a.keep.is_file():
        print(f"summarize.py: error: --keep {a.keep}: no such file", file=sys.stderr)
        return 2

    curves = time_to_accuracy.load_curves(a.results) if a.results.is_dir() else None

    def figures(a, df):
        if a.figures is not None:
            a.figures.mkdir(parents=True, exist_ok=True)
            plot_round_time(df, a.figures / "fig_round_time.png")
            plot_time_to(df, a.figures / "fig_time_to_consensus.png")
            plot_sync_share(df, a.figures / "fig_sync_share.png")
            time_to_accuracy.plot(curves, a.figures / "fig_time_to_accuracy.png")

    def text(df):
        return markdown(df) + "\n".join(time_to_accuracy.markdown_lines_tta(curves))
    return avbench.write_table(a, lambda results: load_cells(results, a.keep), text, "wall-clock traces",
                               figures)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
