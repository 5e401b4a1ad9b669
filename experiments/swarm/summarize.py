#!/usr/bin/python3
"""The swarm study's table and figures, from the traces run.sh wrote.

    summarize.py [--results DIR] [--csv FILE] [--md FILE] [--figures DIR]

Reads every trace (*.h5) in DIR (default: results/ beside this script), averaging and
sgd runs alike, and writes results.csv and table.md beside this script (or where --csv
and --md say; '-' skips one), then prints the markdown tables. With --figures DIR it
also draws fig_averaging.png and fig_sgd.png there (the notebook draws the same).

The cell and its platform come from the file name, <kind>_<cell>_<platform>.h5, the
platform being s<sigma> (SMPI, lognormal host speeds) or mpi (real Open MPI): a trace
does not record the platform it ran on. Everything else comes from the trace.

Communication is counted in bits per coordinate per peer: bytes_sent (all peers,
cumulative; docs/trace-format.md) * 8 / (d * N). Per cell, over the trials with
complete = 1:

  averaging: rounds_to_<t> (mean of the trials' attribute: first round with variance
             < t, the cap when never), reached_<t> (how many got there), bits_to_<t> and
             time_to_<t> (bits/coordinate and simulated seconds at that round, over the
             trials that got there), final_variance, final_error (distance to the initial
             mean: a quantizer may move the mean), bits_per_round, time_per_round
  sgd:       steps_to_<t>, reached_<t>, bits_to_<t>, time_to_<t> (the same, at the
             evaluated step where the relative gap first is <= t), final_relative_gap,
             final_consensus, decode_failures (per trial), time_per_step
  both:      bits_total (per trial), sim_time (per trial), wall_s (walltime.tsv)

Importable: load_cells(results), load_rows(path), markdown(df), plot_averaging(...),
plot_sgd(...) (the notebook uses them).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pandas as pd

import avbench  # python/avbench: traces -> DataFrames
from avbench.tables import (
    fmt_sci, fmt_time, fmt_wall, isnan, markdown_lines, mean as _mean, trace_rows)

HERE = Path(__file__).resolve().parent
# Display order; cells not listed come after, by name.
CELL_ORDER = ["swarm", "swarm-fp16", "swarm-uniform8", "swarm-lattice16", "swarm-lattice10", "swarm-poisson",
              "swarm-nonblocking", "swarm-geo", "swarm-geo-fp16", "swarm-geo-lattice",
              "swarm-geo-lattice-tight", "swarm-fixed", "moshpit", "pairwise", "gossip-exp", "gossip-ring",
              "gossip-ring-fp16"]
NAME = re.compile(r"^(avg|sgd)_(.+)_(s[0-9.eE+-]+|mpi)$")


def parse_name(stem: str) -> tuple[str, str, float] | None:
    """(kind, cell, sigma) from a trace's file name; sigma NaN for a real-MPI run."""
    m = NAME.match(stem)
    if not m:
        return None
    kind = "averaging" if m.group(1) == "avg" else "sgd"
    platform = m.group(3)
    try:
        sigma = math.nan if platform == "mpi" else float(platform[1:])
    except ValueError:
        return None
    return kind, m.group(2), sigma


def target_suffixes(summary: pd.DataFrame, prefix: str) -> list[str]:
    """The target suffixes ('1e-2', ...) of a trace's summary, largest target first."""
    found = [k[len(prefix):] for k in summary.columns if k.startswith(prefix)]
    return sorted(found, key=lambda s: -float(s))


# The per-row columns read (avbench.load_trace), by run kind.
ROW_COLUMNS = {"averaging": ["variance", "bytes_sent", "time"],
               "sgd": ["relative_gap", "bytes_sent", "time", "decode_failures"]}


def load_rows(path: Path, kind: str | None = None) -> pd.DataFrame:
    """Every row of every trial of one trace (avbench.load_trace), with `bits`: bits
    per coordinate per peer sent so far."""
    kind = kind or avbench.read_summary(path).attrs["run_kind"]
    rows = avbench.load_trace(path, columns=ROW_COLUMNS[kind])
    if rows.empty:
        return rows
    rows["bits"] = rows["bytes_sent"].astype(float) * 8.0 / (int(rows["dim"].iat[0]) * int(rows["peers"].iat[0]))
    return rows


def target_fields(rows: pd.DataFrame, done: pd.DataFrame, count: str, x_name: str, bits_of: float) -> dict:
    """Per target: mean rounds (steps) to it, trials that reached it, and the mean
    bits per coordinate and simulated time at that row."""
    rec: dict = {}
    for t in target_suffixes(done, f"{count}_to_"):
        reached = done[done[f"reached_{t}"] == 1]
        rec[f"{count}_to_{t}"] = _mean(done[f"{count}_to_{t}"]) if len(done) else math.nan
        rec[f"reached_{t}"] = len(reached)
        at = list(zip(reached["trial"], reached[f"{count}_to_{t}"]))
        bits = [avbench.value_at(rows, k, x_name, x, "bytes_sent") * bits_of for k, x in at]
        times = [avbench.value_at(rows, k, x_name, x, "time") for k, x in at]
        rec[f"bits_to_{t}"] = _mean([b for b in bits if not math.isnan(b)]) if bits else math.nan
        rec[f"time_to_{t}"] = _mean([v for v in times if not math.isnan(v)]) if times else math.nan
    return rec


def trace_fields(path: Path, kind: str, summary: pd.DataFrame) -> dict:
    """The measured columns of one trace's row of the table."""
    meta, config = summary.attrs, summary.attrs["config"]
    done = summary[summary["complete"]] if "complete" in summary else summary.iloc[:0]
    n, d = meta["peers"], int(config["dim"])
    bits_of = 8.0 / (d * n)
    x_name, count = ("round", "rounds") if kind == "averaging" else ("step", "steps")
    rows = load_rows(path, kind)
    rec = {"engine": meta["engine"], "N": n, "d": d, "protocol": config.get("protocol", "?"),
           "quantizer": config.get("quantizer", "none"), "trials": len(done),
           count: int(done[count].max()) if len(done) else 0}
    rec.update(target_fields(rows, done, count, x_name, bits_of))
    finals = ["final_variance", "final_error"] if kind == "averaging" else ["final_relative_gap", "final_consensus"]
    for name in finals:
        rec[name] = _mean(done[name])
    if kind == "sgd":
        kept = rows[rows["trial"].isin(done["trial"])]
        rec["decode_failures"] = _mean(kept.groupby("trial")["decode_failures"].sum()) if len(kept) else math.nan
    rec["bits_total"] = _mean(done["bytes_sent"]) * bits_of
    rec["sim_time"] = _mean(done["time"])
    per = rec[count] if rec[count] > 0 else math.nan
    rec[f"bits_per_{x_name}"] = rec["bits_total"] / per
    rec[f"time_per_{x_name}"] = rec["sim_time"] / per
    return rec


def summarize_trace(path: Path) -> dict | None:
    """One table row for one trace, or None (with a message) if it is not usable."""
    named = parse_name(path.stem)
    if named is None:
        print(f"summarize.py: {path.name}: not named <avg|sgd>_<cell>_<s<sigma>|mpi>.h5, skipped", file=sys.stderr)
        return None
    kind, cell, sigma = named
    try:
        summary = avbench.read_summary(path)
        if summary.attrs["run_kind"] != kind:
            print(f"summarize.py: {path.name}: a {summary.attrs['run_kind']} trace under an {kind} name, skipped",
                  file=sys.stderr)
            return None
        return {"kind": kind, "cell": cell, "sigma": sigma, **trace_fields(path, kind, summary), "trace": path.name}
    except (OSError, KeyError, ValueError) as e:
        print(f"summarize.py: {path.name}: cannot read ({e!r}), skipped", file=sys.stderr)
        return None


def load_cells(results: Path) -> pd.DataFrame:
    """The table, one row per trace in `results`: averaging cells first, then sgd, each
    in CELL_ORDER, then by platform sigma."""
    df = trace_rows(results, summarize_trace)
    if df.empty:
        return df
    order = {name: i for i, name in enumerate(CELL_ORDER)}
    df = df.assign(_k=df["kind"].map({"averaging": 0, "sgd": 1}),
                   _c=df["cell"].map(lambda c: order.get(c, len(order))),
                   _s=-df["sigma"].fillna(-1.0))
    df = df.sort_values(["_k", "_c", "cell", "_s"]).drop(columns=["_k", "_c", "_s"])
    return df.reset_index(drop=True)


def suffixes(df: pd.DataFrame, count: str) -> list[str]:
    found = {c[len(count) + 4:] for c in df.columns if c.startswith(f"{count}_to_")}
    return sorted(found, key=lambda s: -float(s))


# ---------------------------------------------------------------------------- formats

def fmt_count(mean: float, reached: int, trials: int, cap: int) -> str:
    """Rounds or steps to a target: the mean if every trial got there, '>cap' if none."""
    if trials == 0 or isnan(mean) or isnan(reached):
        return "—"
    reached = int(reached)  # a float when another kind's rows left the column with NaN
    if reached == trials:
        return f"{mean:.0f}" if mean == round(mean) else f"{mean:.1f}"
    if reached == 0:
        return f">{int(cap)}"
    return f"{mean:.0f} ({reached}/{trials})"


def fmt_bits(v) -> str:
    if isnan(v):
        return "—"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def fmt_sigma(v) -> str:
    return "mpi" if isnan(v) else f"{v:g}"


def _dims(part: pd.DataFrame) -> str:
    """'N = .., d = ..' of a table's title, every value present."""
    n, d = sorted(set(part["N"])), sorted(set(part["d"]))
    return f"N = {'/'.join(map(str, n))}, d = {'/'.join(map(str, d))}"


def _averaging_cells(r: dict, ts: list[str]) -> list[str]:
    cells = [r["cell"], r["quantizer"], fmt_sigma(r["sigma"]), str(r["trials"])]
    cells += [fmt_count(r[f"rounds_to_{t}"], r[f"reached_{t}"], r["trials"], r["rounds"]) for t in ts]
    cells += [fmt_bits(r[f"bits_to_{t}"]) for t in ts] + [fmt_time(r[f"time_to_{t}"]) for t in ts]
    return cells + [fmt_sci(r["final_variance"]), fmt_sci(r["final_error"]), fmt_bits(r["bits_per_round"]),
                    fmt_time(r["time_per_round"]), fmt_wall(r["wall_s"])]


def averaging_markdown(avg: pd.DataFrame) -> str:
    """The averaging table, titled, with its note."""
    ts = suffixes(avg, "rounds")
    head = ["cell", "quantizer", "σ", "trials"] + [f"rounds to {t}" for t in ts]
    head += [f"bits/coord to {t}" for t in ts] + [f"sim. time to {t}" for t in ts]
    head += ["final variance", "final error", "bits/coord per round", "time per round", "wall"]
    lines = markdown_lines(head, [_averaging_cells(r, ts) for r in avg.to_dict("records")])
    return (f"### Averaging ({_dims(avg)})\n\n" + "\n".join(lines) + "\n\n"
            "rounds to t: mean over complete trials of the first round with variance < t; '>R': no "
            "trial got there in R rounds; 'm (k/n)': k of n trials did, the others count R. bits/coord: "
            "bits sent per coordinate per peer (bytes_sent · 8 / (d N)) up to that round, and sim. "
            "time the simulated seconds, both over the trials that got there. final error: mean "
            "squared distance to the initial mean. Per round: whole trial divided by its rounds.\n")


def _sgd_cells(r: dict, ts: list[str]) -> list[str]:
    cells = [r["cell"], r["quantizer"], fmt_sigma(r["sigma"]), str(r["trials"])]
    cells += [fmt_count(r[f"steps_to_{t}"], r[f"reached_{t}"], r["trials"], r["steps"]) for t in ts]
    cells += [fmt_time(r[f"time_to_{t}"]) for t in ts] + [fmt_bits(r[f"bits_to_{t}"]) for t in ts]
    dec = r.get("decode_failures", math.nan)
    return cells + [fmt_sci(r["final_relative_gap"]), fmt_sci(r["final_consensus"]),
                    "—" if isnan(dec) else f"{dec:.0f}", fmt_bits(r["bits_total"]),
                    fmt_time(r["time_per_step"]), fmt_time(r["sim_time"]), fmt_wall(r["wall_s"])]


def sgd_markdown(sgd: pd.DataFrame) -> str:
    """The sgd table, titled, with its note."""
    ts = suffixes(sgd, "steps")
    head = ["cell", "quantizer", "σ", "trials"] + [f"steps to {t}" for t in ts]
    head += [f"sim. time to {t}" for t in ts] + [f"bits/coord to {t}" for t in ts]
    head += ["final rel. gap", "final consensus", "decode failures", "bits/coord", "time per step",
             "sim. time", "wall"]
    lines = markdown_lines(head, [_sgd_cells(r, ts) for r in sgd.to_dict("records")])
    return (f"### SGD on the quadratic ({_dims(sgd)})\n\n" + "\n".join(lines) + "\n\n"
            "steps to t: mean over complete trials of the first evaluated step with relative gap "
            "<= t (same notation as above); sim. time and bits/coord at that step, over the trials "
            "that got there. decode failures: lattice messages that could not be decoded, per trial. "
            "bits/coord, sim. time: the whole trial.\n")


def markdown(df: pd.DataFrame) -> str:
    """The two tables (averaging, sgd) as markdown, with a note under each."""
    if df.empty:
        return "No traces found.\n"
    parts = [(df[df["kind"] == "averaging"], averaging_markdown), (df[df["kind"] == "sgd"], sgd_markdown)]
    return "\n".join(table(part) for part, table in parts if not part.empty)


# ---------------------------------------------------------------------------- figures

def _colors(cells: list[str]) -> dict[str, str]:
    return {c: f"C{i % 10}" for i, c in enumerate(cells)}


def _style(cell: str) -> str:
    return "-" if cell.startswith("swarm") else "--"


def mean_curve(rows: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Per `x` (round or step): mean of y, bits and time over the complete trials
    that have that row."""
    done = rows[rows["complete"] == 1]
    g = done.groupby(x)
    c = pd.DataFrame({"y": g[y].mean(), "bits": g["bits"].mean(), "time": g["time"].mean(), "n": g[y].count()})
    return c[c["n"] == c["n"].max()]


def _label(r: dict) -> str:
    return r["cell"] + ("" if isnan(r["sigma"]) or r["sigma"] == 0.5 else f" (σ {r['sigma']:g})")


def _log_axes(axes, levels: tuple[float, ...]) -> None:
    """Log y axes, with a faint line at each target level."""
    for ax in axes:
        ax.set_yscale("log")
        for t in levels:
            ax.axhline(t, color="0.7", lw=0.7, ls=":")


def _save(fig, axes, labels: list[dict], title: str, path: Path, show: bool) -> Path:
    """Labels each axis, titles and writes the figure (shown first when `show`)."""
    import matplotlib.pyplot as plt
    for ax, kw in zip(axes, labels):
        ax.set(**kw)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    if show:
        plt.show()
    plt.close(fig)
    return path


def plot_averaging(df: pd.DataFrame, results: Path, path: Path, show: bool = False):
    """Variance against rounds, bits/coordinate and simulated time: one curve per cell."""
    import matplotlib.pyplot as plt
    avg = df[df["kind"] == "averaging"]
    if avg.empty:
        return None
    colors = _colors(list(avg["cell"]))
    fig, axes = plt.subplots(1, 3, figsize=(17, 5), sharey=True)
    floor = math.inf
    for r in avg.to_dict("records"):
        c = mean_curve(load_rows(results / r["trace"]), "round", "variance")
        c = c[c["y"] > 0]  # exact agreement (moshpit's full grid) has no place on a log axis
        if c.empty:
            continue
        floor = min(floor, float(c["y"].min()))
        kw = dict(color=colors[r["cell"]], ls=_style(r["cell"]), lw=1.5, label=_label(r))
        axes[0].plot(c.index, c["y"], **kw)
        axes[1].plot(c["bits"].iloc[1:], c["y"].iloc[1:], **kw)
        t = c[c["time"] > 0]
        axes[2].plot(t["time"], t["y"], **kw)
    _log_axes(axes, (1e-2, 1e-4, 1e-6))
    if math.isfinite(floor):
        axes[0].set_ylim(bottom=max(floor / 3, 1e-16))
    axes[0].set_xlim(0, min(int(avg["rounds"].min()) * 1.0, 40) if len(avg) else None)
    axes[1].set_xscale("log")
    axes[2].set_xscale("log")
    labels = [dict(xlabel="round", ylabel="variance across peers (per coordinate)", title="variance vs rounds"),
              dict(xlabel="bits per coordinate per peer (cumulative)", title="variance vs communication"),
              dict(xlabel="simulated time [s]", title="variance vs simulated time")]
    n, d = int(avg["N"].iloc[0]), int(avg["d"].iloc[0])
    return _save(fig, axes, labels, f"Averaging, N = {n}, d = {d}: mean over trials "
                 "(moshpit reaches exactly 0 and leaves the axis)", path, show)


def plot_sgd(df: pd.DataFrame, results: Path, path: Path, show: bool = False):
    """Relative gap against steps, simulated time and bits/coordinate."""
    import matplotlib.pyplot as plt
    sgd = df[df["kind"] == "sgd"]
    if sgd.empty:
        return None
    colors = _colors(list(dict.fromkeys(sgd["cell"])))
    fig, axes = plt.subplots(1, 3, figsize=(17, 5), sharey=True)
    for r in sgd.to_dict("records"):
        c = mean_curve(load_rows(results / r["trace"]), "step", "relative_gap")
        ls = ":" if r["sigma"] == 0 else _style(r["cell"])
        kw = dict(color=colors[r["cell"]], ls=ls, lw=1.5, label=_label(r))
        axes[0].plot(c.index, c["y"], **kw)
        t = c[c["time"] > 0]
        axes[1].plot(t["time"], t["y"], **kw)
        b = c[c["bits"] > 0]
        axes[2].plot(b["bits"], b["y"], **kw)
    _log_axes(axes, (1e-2, 1e-3))
    axes[2].set_xscale("log")
    labels = [dict(xlabel="SGD step", ylabel="relative gap of the average model", title="gap vs steps"),
              dict(xlabel="simulated time [s]", title="gap vs simulated time"),
              dict(xlabel="bits per coordinate per peer (cumulative)", title="gap vs communication")]
    n, d = int(sgd["N"].iloc[0]), int(sgd["d"].iloc[0])
    return _save(fig, axes, labels, f"Local SGD (H = 2) on the EPFL quadratic, N = {n}, d = {d}: mean over trials",
                 path, show)


def write_figures(a, df: pd.DataFrame) -> None:
    """fig_averaging.png and fig_sgd.png in a.figures, when given."""
    if a.figures is None:
        return
    import matplotlib
    matplotlib.use("Agg")
    a.figures.mkdir(parents=True, exist_ok=True)
    plot_averaging(df, a.results, a.figures / "fig_averaging.png")
    plot_sgd(df, a.results, a.figures / "fig_sgd.png")


def main(argv: list[str]) -> int:
    ap = avbench.table_parser(__doc__, HERE)
    ap.add_argument("--figures", type=Path, default=None, help="folder for fig_averaging.png and fig_sgd.png")
    return avbench.write_table(ap.parse_args(argv), load_cells, markdown, "traces", then=write_figures)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
