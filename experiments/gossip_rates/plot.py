#!/usr/bin/python3
"""Measured variance ratio against the predicted curve, one panel per graph.

    plot.py [--results DIR] [--out FILE ...]

Writes DIR/variance_curves.png and a tracked copy beside this script
(experiments/gossip_rates/variance_curves.png), unless --out names the files.
Per graph: each trial's variance / initial variance from the sequential engine (thin), their mean
(thick), the SMPI trace's rows where averaging_bench ran (dots),
the expected ratio sum_k |lambda_k|^2t / (N − 1) from graph_info (dashed; for
random-regular the mean over the trials' graphs), the slowest mode alone rho^2t
(dotted), and the target 1e-6. The x axis is linear in rounds: a straight line on
it is a constant rate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from make_table import RATIO, fmt, load, summarize  # noqa: E402

FLOOR = 1e-12  # bottom of the y axis: exact averages drop to ~1e-32


def mean_curve(trials: dict) -> tuple[np.ndarray, np.ndarray]:
    """Mean over trials of variance / initial variance, on the rounds every trial has."""
    common = None
    for rounds, _ in trials.values():
        common = set(rounds.tolist()) if common is None else common & set(rounds.tolist())
    t = np.array(sorted(common))
    ratios = []
    for rounds, var in trials.values():
        idx = np.searchsorted(rounds, t)
        ratios.append(var[idx] / var[0])
    return t, np.mean(ratios, axis=0)


def draw_panel(ax, r: dict) -> None:
    """One graph's panel: measured curves, their mean, the SMPI rows, the predictions."""
    s = summarize(r)
    # Curves from the sequential engine (every trial runs the whole budget); the SMPI rows,
    # equal to them to rounding, as dots on top.
    curves = r["sequential"] or r["measured"]
    for k, (rounds, var) in curves.items():
        ax.plot(rounds, np.maximum(var / var[0], FLOOR / 10), color="tab:blue", lw=0.6, alpha=0.35)
    t, m = mean_curve(curves)
    ax.plot(t, np.maximum(m, FLOOR / 10), color="tab:blue", lw=2,
            label=f"measured (sequential), mean of {len(curves)}" if r["sequential"] else
            f"measured ({r['source']}), mean of {len(curves)}")
    if r["smpi"] and r["sequential"]:
        for i, (rounds, var) in enumerate(r["smpi"].values()):
            ax.plot(rounds, np.maximum(var / var[0], FLOOR / 10), ls="none", marker=".", ms=2.5,
                    color="tab:orange", label=f"averaging_bench under SMPI ({len(r['smpi'])})" if i == 0 else None)
    # Expected curve: the mean over the trials' graphs (one graph unless random-regular).
    curves = [(p["curve_t"], p["curve"]) for p in r["preds"] if len(p["curve"])]
    if curves:
        length = min(len(c[1]) for c in curves)
        ct, cm = curves[0][0][:length], np.mean([c[1][:length] for c in curves], axis=0)
        ax.plot(ct, np.maximum(cm, FLOOR / 10), color="k", ls="--", lw=1.2,
                label="predicted E[ratio] (full spectrum)")
    xmax = max(t[-1], s["pred_spectrum"] * 1.1, 2)
    rho = s["rho"]
    if rho == rho and rho > 1e-12:
        tt = np.linspace(0, xmax, 400)
        ax.plot(tt, np.maximum(rho ** (2 * tt), FLOOR / 10), color="tab:red", ls=":", lw=1.2,
                label="rho^2t (slowest mode)")
    ax.axhline(RATIO, color="grey", lw=0.8)
    ax.axvline(s["pred_spectrum"], color="k", lw=0.6, alpha=0.5)
    ax.set_yscale("log")
    ax.set_ylim(FLOOR, 2)
    ax.set_xlim(0, xmax)
    ax.set_title(f"{r['graph']}: measured {fmt(s['measured_mean'], 4)}, predicted {fmt(s['pred_spectrum'], 4)}",
                 fontsize=9)
    ax.set_xlabel("round")
    ax.set_ylabel("variance / initial variance")
    ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
    ax.legend(fontsize=6.5, loc="lower left")


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=here / "results")
    ap.add_argument("--out", type=Path, action="append", help="PNG to write (repeatable)")
    a = ap.parse_args(argv)
    rows = load(a.results)
    if not rows:
        print(f"plot.py: error: nothing measured in {a.results} (run run.sh first)", file=sys.stderr)
        return 2
    outs = a.out or [a.results / "variance_curves.png", here / "variance_curves.png"]

    cols = 4
    nrows = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
    for ax, r in zip(axes.flat, rows):
        draw_panel(ax, r)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    fig.suptitle(f"Synchronous gossip, N = {rows[0]['preds'][0].get('n', '?')}, uniform weights, no failures: "
                 f"variance ratio per round (grey line: target {RATIO:g}; vertical: predicted round)",
                 fontsize=10)
    fig.tight_layout()
    for out in outs:
        fig.savefig(out, dpi=110)
        print(f"plot.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
