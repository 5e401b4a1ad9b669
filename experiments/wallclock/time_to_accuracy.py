#!/usr/bin/python3
"""The wall-clock study's time-to-accuracy part: relative gap against simulated time.

    time_to_accuracy.py [--results DIR] [--figure PNG] [--gap G]

Reads the tta_<protocol>_n<N>_<kind>[_seq].h5 traces run.sh's PARTS=tta wrote
(sgd_bench, logistic regression on Fashion-MNIST 7 against 9, one evaluation every
10 steps) and prints one markdown table, a line per protocol: its trials, simulated
seconds per step, the relative gap (f(x̄) - f*) / (f(x0) - f*) and test accuracy
after the last step, and the simulated seconds until the relative gap first fell
below G (default 0.15), each mean ± standard error over trials. With --figure it
draws the relative gap against simulated seconds, one curve per protocol: at each
evaluation the mean over trials of both, with a band of ± one standard error of the
gap. Exit status 1 when DIR holds no such trace.

Importable: load_curves(results), markdown_lines_tta(curves, gap), plot(curves, path)
(summarize.py adds the table to table.md and the figure beside the others).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import avbench
from avbench.tables import fmt_time, markdown_lines, read_results

HERE = Path(__file__).resolve().parent
NAME = re.compile(r"^tta_([a-z-]+)_n(\d+)_(cluster|fat|cloud|geo|daint)(_seq)?$")
PROTOCOLS = ["allreduce", "moshpit", "random-groups", "sgp", "gossip", "swarm", "swarm-nb"]
GAP = 0.15
COLUMNS = ["step", "time", "relative_gap", "accuracy"]


def load_curves(results: Path) -> pd.DataFrame:
    """Every evaluation of every complete trial of the tta traces in `results`: the
    cell's protocol (the study's name), N, platform and engine, the trial, and COLUMNS."""
    frames = []
    for path in sorted(results.glob("tta_*.h5")):
        m = NAME.match(path.stem)
        if m is None:
            print(f"time_to_accuracy.py: {path.name}: not a tta cell name, skipped", file=sys.stderr)
            continue
        try:
            rows = avbench.load_trace(path, columns=COLUMNS)
        except (OSError, KeyError, ValueError) as e:
            print(f"time_to_accuracy.py: {path.name}: cannot read ({e!r}), skipped", file=sys.stderr)
            continue
        rows = rows[rows["complete"].astype(bool)]
        frames.append(pd.DataFrame({"study_protocol": m.group(1), "N": int(m.group(2)), "kind": m.group(3),
                                    "engine": "sequential" if m.group(4) else "smpi", "trial": rows["trial"],
                                    **{c: rows[c] for c in COLUMNS}}))
    if not frames:
        return pd.DataFrame(columns=["study_protocol", "N", "kind", "engine", "trial"] + COLUMNS)
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    df = pd.concat(frames, ignore_index=True)
    df["_p"] = df["study_protocol"].map(lambda p: order.get(p, len(order)))
    return df.sort_values(["kind", "N", "_p", "trial", "step"]).drop(columns="_p").reset_index(drop=True)


def _mean_se(values) -> tuple[float, float]:
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def _pm(mean: float, se: float, fmt) -> str:
    return "—" if math.isnan(mean) else f"{fmt(mean)} ± {fmt(se)}"


def first_below(trial: pd.DataFrame, gap: float) -> float:
    """Simulated seconds at the trial's first evaluation with relative gap < gap, NaN if none."""
    hit = trial[trial["relative_gap"] < gap]
    return float(hit["time"].iloc[0]) if len(hit) else math.nan


def markdown_lines_tta(curves: pd.DataFrame, gap: float = GAP) -> list[str]:
    if curves.empty:
        return []
    head = ["platform", "N", "protocol", "trials", "s/step", "relative gap at the end", "test accuracy",
            f"s to gap < {gap:g} (reached)"]
    lines = []
    for (kind, n, p, engine), g in curves.groupby(["kind", "N", "study_protocol", "engine"], sort=False):
        trials = [t for _, t in g.groupby("trial")]
        last = [t.iloc[-1] for t in trials]
        per_step = _mean_se(r["time"] / max(r["step"], 1) for r in last)
        final = _mean_se(r["relative_gap"] for r in last)
        accuracy = _mean_se(r["accuracy"] for r in last)
        hits = [x for x in (first_below(t, gap) for t in trials) if not math.isnan(x)]
        reach = _mean_se(hits)
        mark = " †" if engine == "sequential" else ""
        lines.append([kind, str(n), p + mark, str(len(trials)), _pm(*per_step, fmt_time),
                      _pm(*final, lambda v: f"{v:.3g}"), _pm(*accuracy, lambda v: f"{v:.4f}"),
                      f"{_pm(*reach, fmt_time)} ({len(hits)}/{len(trials)})"])
    return (["### Time to accuracy: logistic regression on Fashion-MNIST (7 against 9)", "",
             "Relative gap (f(x̄) − f*) / (f(x0) − f*) of the peers' mean model; mean ± standard error over "
             "trials; † the sequential engine's."] + [""] + markdown_lines(head, lines) + [""])


def plot(curves: pd.DataFrame, path: Path) -> None:
    """Relative gap against simulated seconds, a curve per protocol with a ± se band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if curves.empty:
        return
    cells = list(curves.groupby(["kind", "N"], sort=False))
    fig, axes = plt.subplots(1, len(cells), figsize=(6 * len(cells), 4.2), squeeze=False)
    for ax, ((kind, n), part) in zip(axes[0], cells):
        for p, g in part.groupby("study_protocol", sort=False):
            at = g.groupby("step").agg(time=("time", "mean"), gap=("relative_gap", "mean"),
                                       se=("relative_gap", "sem")).reset_index()
            line, = ax.plot(at["time"], at["gap"], label=p)
            low = (at["gap"] - at["se"].fillna(0)).clip(lower=at["gap"] * 1e-3)
            ax.fill_between(at["time"], low, at["gap"] + at["se"].fillna(0), color=line.get_color(), alpha=0.25)
        ax.set_yscale("log")
        ax.set_xlabel("simulated seconds")
        ax.set_ylabel("relative gap of the mean model")
        ax.set_title(f"logistic, Fashion-MNIST 7 vs 9, N = {n}, {kind}", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=HERE / "results", help="folder of the traces")
    ap.add_argument("--figure", type=Path, help="where to draw the figure (PNG)")
    ap.add_argument("--gap", type=float, default=GAP, help="relative gap whose first crossing is timed")
    a = ap.parse_args(argv)
    if not (0 < a.gap < 1):
        print(f"time_to_accuracy.py: error: --gap {a.gap}: a relative gap in (0, 1)", file=sys.stderr)
        return 2
    curves, status = read_results(a.results, load_curves, "tta traces", "time_to_accuracy.py")
    if curves is None:
        return status
    if a.figure is not None:
        plot(curves, a.figure)
    print("\n".join(markdown_lines_tta(curves, a.gap)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
