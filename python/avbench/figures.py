"""The standard figures of avbench traces, from a DataFrame of traces.load_sweep.

plot_metric draws one curve per value of a grouping column (by default `protocol`):
a metric (variance, relative gap, ...) on a log axis against rounds (steps for sgd
traces), simulated time or bytes sent per peer.

What a curve is, per group and per round (per step for sgd):

- the **geometric mean** over the group's trials of the metric (stat="gmean", the
  default: variances span many decades and a plain mean is the worst trial's value),
  with a band of ×/÷ exp(one standard error of ln y) — ±1 standard error in log
  space. Values ≤ 0 (exact agreement: variance 0) enter as `floor` (1e-30).
  stat="mean" gives the arithmetic mean ± 1 standard error instead (band clipped to
  positive values), band="minmax" the trials' range, band=None no band;
- only trials with `complete` (not cut short) and not `diverged` are used, unless include_incomplete;
- a trial that ended early (--stop-at-target, or targets reached) holds its last
  row's values from then on, so every round averages over the same trials;
- against time or bytes, each point is the trials' mean time (mean bytes per peer)
  at that round paired with the aggregated metric at that round (time differs per
  trial, so the aggregation is by round, not by time).

Nothing here prints or calls plt.show(); standard_figures closes its figures.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from avbench.schema import TIME_MODELS

DEFAULT_Y = {"averaging": "variance", "sgd": "relative_gap"}
INDEX = {"averaging": "round", "sgd": "step"}  # the column trials are aligned on
X_ALIASES = {"bytes_sent": "bytes_per_peer", "bytes": "bytes_per_peer", "rounds": "round", "steps": "step"}
LABELS = {
    "round": "round", "step": "SGD step", "time": "time [s]",
    "bytes_per_peer": "bytes sent per peer", "variance": "variance across peers",
    "relative_gap": "relative gap (f(x̄) − f*) / (f(x₀) − f*)", "error": "squared error to the initial mean",
    "consensus": "consensus (1/N) Σ‖xᵢ − x̄‖²", "gap": "gap f(x̄) − f*",
}
FLOOR = 1e-30


def _run_kind(df: pd.DataFrame) -> str:
    kinds = df["run_kind"].unique()
    if len(kinds) != 1:
        raise ValueError(f"plot one run kind at a time, not {sorted(kinds)}: filter on run_kind")
    return str(kinds[0])


def axis_label(df: pd.DataFrame, column: str) -> str:
    """The axis label of `column`; for time, what the engines of `df` measure
    (their traces' time_model)."""
    label = LABELS.get(column, column)
    if column == "time" and "engine" in df.columns:
        kinds = sorted({TIME_MODELS.get(str(e), str(e)) for e in df["engine"].unique()})
        label += f" ({'; '.join(kinds)})"
    return label


def _label(key) -> str:
    return ", ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def aggregate(df: pd.DataFrame, x: str = "round", y: str | None = None, stat: str = "gmean",
              band: str | None = "se", include_incomplete: bool = False, floor: float = FLOOR) -> pd.DataFrame:
    """One group's curve: per round (step), columns x, y (the statistic), lo, hi, trials.

    `df` holds the rows of the trials to aggregate (one group); see the module
    docstring for the statistic, the band and the alignment of trials."""
    kind = _run_kind(df)
    y = y or DEFAULT_Y[kind]
    x = X_ALIASES.get(x, x)
    index = INDEX[kind]
    # Trials cut short or diverged (NaN models) would bias or poison the statistic.
    kept = df["complete"].astype(bool)
    if "diverged" in df:
        kept &= ~df["diverged"].astype(bool)
    rows = df if include_incomplete else df[kept]
    if rows.empty:
        return pd.DataFrame(columns=[x, y, "lo", "hi", "trials"])
    # One column per trial, aligned on the round; later rounds of a trial that ended
    # early hold its last values (forward fill).
    key = ["trace", "trial"]
    wide_y = rows.pivot_table(index=index, columns=key, values=y, aggfunc="last").sort_index().ffill()
    vals = wide_y.to_numpy(dtype=float)
    n = np.sum(np.isfinite(vals), axis=1)
    if stat == "gmean":
        logs = np.log(np.maximum(vals, floor))
        mu = np.nanmean(logs, axis=1)
        se = np.nanstd(logs, axis=1, ddof=1) / np.sqrt(n) if vals.shape[1] > 1 else np.zeros(len(mu))
        centre = np.exp(mu)
        lo, hi = np.exp(mu - se), np.exp(mu + se)
    elif stat == "mean":
        centre = np.nanmean(vals, axis=1)
        se = np.nanstd(vals, axis=1, ddof=1) / np.sqrt(n) if vals.shape[1] > 1 else np.zeros(len(centre))
        lo, hi = centre - se, centre + se
        lo = np.where(lo > 0, lo, np.nan)  # a log axis cannot show the band below 0
    else:
        raise ValueError(f"stat={stat!r}: use 'gmean' or 'mean'")
    if band == "minmax":
        lo, hi = np.nanmin(vals, axis=1), np.nanmax(vals, axis=1)
    elif band is None:
        lo = hi = np.full(len(centre), np.nan)
    elif band != "se":
        raise ValueError(f"band={band!r}: use 'se', 'minmax' or None")
    out = pd.DataFrame({y: centre, "lo": lo, "hi": hi, "trials": n}, index=wide_y.index)
    if x == index:
        out.insert(0, x, wide_y.index.to_numpy())
    else:
        wide_x = rows.pivot_table(index=index, columns=key, values=x, aggfunc="last").sort_index().ffill()
        out.insert(0, x, wide_x.mean(axis=1).to_numpy(dtype=float))
    return out.reset_index(drop=True)


def plot_metric(df: pd.DataFrame, x: str = "round", y: str | None = None, by="protocol", ax=None,
                stat: str = "gmean", band: str | None = "se", include_incomplete: bool = False,
                logx: bool = False, floor: float = FLOOR, colors: dict | None = None, **line_kw):
    """Draw y (default: variance, or relative_gap for sgd traces) against x ('round' —
    'step' for sgd —, 'time' or 'bytes_sent', plotted per peer) on a log y axis, one
    curve per value of `by` (a column name or a list of them; None: one curve), each
    the aggregate of its trials with an error band (module docstring). `colors` maps
    a group's value to its colour, so that panels drawn one by one agree. Returns
    the Axes. Extra keywords go to Axes.plot."""
    kind = _run_kind(df)
    y = y or DEFAULT_Y[kind]
    if x in ("round", "rounds") and kind == "sgd":
        x = "round"  # allowed: rounds of averaging done, aligned on steps
    xcol = X_ALIASES.get(x, x)
    for col in (xcol, y):
        if col not in df.columns:
            raise KeyError(f"no column {col!r} in the DataFrame")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.2))
    groups = [(None, df)] if by is None else df.groupby(by, sort=True, dropna=False)
    for key, sub in groups:
        curve = aggregate(sub, xcol, y, stat, band, include_incomplete, floor)
        if curve.empty:
            continue
        if logx:  # row 0 (time 0, no bytes) cannot go on a log axis
            curve = curve[curve[xcol] > 0]
        ys = np.maximum(curve[y].to_numpy(dtype=float), floor) if stat == "gmean" else curve[y]
        label = None if key is None else _label(key)
        kw = dict(line_kw)
        if colors is not None and key in colors:
            kw["color"] = colors[key]
        (line,) = ax.plot(curve[xcol], ys, label=label, **kw)
        if band is not None and curve["trials"].max() > 1:
            ax.fill_between(curve[xcol], curve["lo"], curve["hi"], color=line.get_color(), alpha=0.2, lw=0)
    ax.set_yscale("log", nonpositive="mask")
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(axis_label(df, xcol))
    ax.set_ylabel(axis_label(df, y))
    what = {"gmean": "geometric mean", "mean": "mean"}[stat]
    spread = {"se": "±1 s.e.", "minmax": "min–max", None: "no band"}[band]
    ax.set_title(f"{y} vs {xcol.replace('_', ' ')} ({what}, {spread})", fontsize=10)
    if by is not None:
        ax.legend(fontsize=8, title=_label(tuple(by)) if isinstance(by, list) else by, title_fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def standard_figures(df: pd.DataFrame, out_dir, by="protocol", y: str | None = None, prefix: str = "",
                     dpi: int = 110, **kw) -> list[Path]:
    """Write the three standard figures as PNGs into out_dir (created if needed):
    y against rounds (steps for sgd), against time and against bytes sent per peer,
    named <prefix><y>_vs_<rounds|steps|time|bytes>.png. Returns their paths.
    Keywords go to plot_metric."""
    kind = _run_kind(df)
    y = y or DEFAULT_Y[kind]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for x, name in ((INDEX[kind], f"{INDEX[kind]}s"), ("time", "time"), ("bytes_sent", "bytes")):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        try:
            plot_metric(df, x=x, y=y, by=by, ax=ax, **kw)
            fig.tight_layout()
            path = out / f"{prefix}{y}_vs_{name}.png"
            fig.savefig(path, dpi=dpi)
        finally:
            plt.close(fig)
        paths.append(path)
    return paths


__all__ = ["aggregate", "plot_metric", "standard_figures"]
