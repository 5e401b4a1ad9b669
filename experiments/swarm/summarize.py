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

import argparse
import csv
import math
import re
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

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


def target_suffixes(summary, prefix: str) -> list[str]:
    """The target suffixes ('1e-2', ...) of a summary group, largest target first."""
    found = [k[len(prefix):] for k in summary.keys() if k.startswith(prefix)]
    return sorted(found, key=lambda s: -float(s))


def load_rows(path: Path) -> pd.DataFrame:
    """Every row of every trial of one trace, with `trial`, `complete` and `bits`
    (bits per coordinate per peer sent so far) columns."""
    frames = []
    with h5py.File(path, "r") as f:
        n = int(f.attrs["n_peers"])
        d = int(f["config"].attrs["dim"])
        for k, g in f["trials"].items():
            cols = {name: ds[()] for name, ds in g.items() if name != "targets"}
            frames.append(pd.DataFrame(cols).assign(trial=int(k), complete=int(g.attrs["complete"])))
    if not frames:
        return pd.DataFrame()
    rows = pd.concat(frames, ignore_index=True)
    rows["bits"] = rows["bytes_sent"].astype(float) * 8.0 / (d * n)
    return rows


def read_walltimes(results: Path) -> dict[str, float]:
    """trace name (without .h5) -> seconds, the last line of walltime.tsv for it."""
    out: dict[str, float] = {}
    path = results / "walltime.tsv"
    if path.exists():
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                try:
                    out[row["cell"]] = float(row["seconds"])
                except (KeyError, TypeError, ValueError):
                    pass
    return out


def summarize_trace(path: Path) -> dict | None:
    """One table row for one trace, or None (with a message) if it is not usable."""
    named = parse_name(path.stem)
    if named is None:
        print(f"summarize.py: {path.name}: not named <avg|sgd>_<cell>_<s<sigma>|mpi>.h5, skipped", file=sys.stderr)
        return None
    kind, cell, sigma = named
    try:
        with h5py.File(path, "r") as f:
            run_kind = f.attrs.get("run_kind", "averaging")
            if run_kind != kind:
                print(f"summarize.py: {path.name}: a {run_kind} trace under an {kind} name, skipped",
                      file=sys.stderr)
                return None
            n = int(f.attrs["n_peers"])
            config = {k: str(v) for k, v in f["config"].attrs.items() if k != "text"}
            d = int(config["dim"])
            s = f["summary"]
            columns = {name: ds[()] for name, ds in s.items()}
            done = np.asarray(columns.get("complete", []), dtype=int) == 1
            trial_ids = np.asarray(columns.get("trial", []))[done]
            bits_of = 8.0 / (d * n)
            x_name, count = ("round", "rounds") if kind == "averaging" else ("step", "steps")
            rec = {"kind": kind, "cell": cell, "sigma": sigma, "engine": str(f.attrs.get("engine", "")), "N": n,
                   "d": d, "protocol": config.get("protocol", "?"), "quantizer": config.get("quantizer", "none"),
                   "trials": int(done.sum()),
                   count: int(np.max(columns[count][done])) if done.any() else 0}
            rows = {int(k): g for k, g in f["trials"].items()}
            for t in target_suffixes(s, f"{count}_to_"):
                first = np.asarray(columns[f"{count}_to_{t}"])[done]
                reached = np.asarray(columns[f"reached_{t}"])[done] == 1
                rec[f"{count}_to_{t}"] = float(first.mean()) if done.any() else math.nan
                rec[f"reached_{t}"] = int(reached.sum())
                bits, times = [], []
                for k, at_x, ok in zip(trial_ids, first, reached):
                    if not ok:
                        continue
                    g = rows[int(k)]
                    at = np.flatnonzero(g[x_name][()] == at_x)
                    if at.size:
                        bits.append(float(g["bytes_sent"][()][at[0]]) * bits_of)
                        times.append(float(g["time"][()][at[0]]))
                rec[f"bits_to_{t}"] = float(np.mean(bits)) if bits else math.nan
                rec[f"time_to_{t}"] = float(np.mean(times)) if times else math.nan
            finals = ["final_variance", "final_error"] if kind == "averaging" else [
                "final_relative_gap", "final_consensus"]
            for name in finals:
                vals = np.asarray(columns[name], dtype=float)[done]
                rec[name] = float(vals.mean()) if vals.size else math.nan
            if kind == "sgd":
                failures = [int(np.sum(rows[int(k)]["decode_failures"][()])) for k in trial_ids
                            if "decode_failures" in rows[int(k)]]
                rec["decode_failures"] = float(np.mean(failures)) if failures else math.nan
            total_bits = np.asarray(columns["bytes_sent"], dtype=float)[done] * bits_of
            sim = np.asarray(columns["time"], dtype=float)[done]
            rec["bits_total"] = float(total_bits.mean()) if total_bits.size else math.nan
            rec["sim_time"] = float(sim.mean()) if sim.size else math.nan
            per = rec[count] if rec[count] > 0 else math.nan
            rec[f"bits_per_{x_name}"] = rec["bits_total"] / per
            rec[f"time_per_{x_name}"] = rec["sim_time"] / per
            rec["trace"] = path.name
            return rec
    except (OSError, KeyError, ValueError) as e:
        print(f"summarize.py: {path.name}: cannot read ({e!r}), skipped", file=sys.stderr)
        return None


def load_cells(results: Path) -> pd.DataFrame:
    """The table, one row per trace in `results`: averaging cells first, then sgd, each
    in CELL_ORDER, then by platform sigma."""
    walls = read_walltimes(results)
    records = []
    for path in sorted(results.glob("*.h5")):
        rec = summarize_trace(path)
        if rec is not None:
            rec["wall_s"] = walls.get(path.stem, math.nan)
            records.append(rec)
    if not records:
        return pd.DataFrame()
    df = pd.DataFrame(records)
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

def isnan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


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


def fmt_sci(v) -> str:
    return "—" if isnan(v) else f"{v:.2e}"


def fmt_bits(v) -> str:
    if isnan(v):
        return "—"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def fmt_time(v) -> str:
    if isnan(v):
        return "—"
    if v < 1e-6:
        return "< 1 µs"
    return f"{v * 1e3:.1f} ms" if v < 1 else f"{v:.2f} s"


def fmt_wall(v) -> str:
    return "—" if isnan(v) else (f"{v:.0f} s" if v >= 10 else f"{v:.1f} s")


def fmt_sigma(v) -> str:
    return "mpi" if isnan(v) else f"{v:g}"


def markdown(df: pd.DataFrame) -> str:
    """The two tables (averaging, sgd) as markdown, with a note under each."""
    if df.empty:
        return "No traces found.\n"
    out = []
    avg = df[df["kind"] == "averaging"]
    if not avg.empty:
        ts = suffixes(avg, "rounds")
        head = ["cell", "quantizer", "σ", "trials"] + [f"rounds to {t}" for t in ts]
        head += [f"bits/coord to {t}" for t in ts] + [f"sim. time to {t}" for t in ts]
        head += ["final variance", "final error", "bits/coord per round", "time per round", "wall"]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for r in avg.to_dict("records"):
            cells = [r["cell"], r["quantizer"], fmt_sigma(r["sigma"]), str(r["trials"])]
            cells += [fmt_count(r[f"rounds_to_{t}"], r[f"reached_{t}"], r["trials"], r["rounds"]) for t in ts]
            cells += [fmt_bits(r[f"bits_to_{t}"]) for t in ts] + [fmt_time(r[f"time_to_{t}"]) for t in ts]
            cells += [fmt_sci(r["final_variance"]), fmt_sci(r["final_error"]), fmt_bits(r["bits_per_round"]),
                      fmt_time(r["time_per_round"]), fmt_wall(r["wall_s"])]
            lines.append("| " + " | ".join(cells) + " |")
        n, d = sorted(set(avg["N"])), sorted(set(avg["d"]))
        out.append(f"### Averaging (N = {'/'.join(map(str, n))}, d = {'/'.join(map(str, d))})\n\n"
                   + "\n".join(lines) + "\n\n"
                   "rounds to t: mean over complete trials of the first round with variance < t; '>R': no "
                   "trial got there in R rounds; 'm (k/n)': k of n trials did, the others count R. bits/coord: "
                   "bits sent per coordinate per peer (bytes_sent · 8 / (d N)) up to that round, and sim. "
                   "time the simulated seconds, both over the trials that got there. final error: mean "
                   "squared distance to the initial mean. Per round: whole trial divided by its rounds.\n")
    sgd = df[df["kind"] == "sgd"]
    if not sgd.empty:
        ts = suffixes(sgd, "steps")
        head = ["cell", "quantizer", "σ", "trials"] + [f"steps to {t}" for t in ts]
        head += [f"sim. time to {t}" for t in ts] + [f"bits/coord to {t}" for t in ts]
        head += ["final rel. gap", "final consensus", "decode failures", "bits/coord", "time per step",
                 "sim. time", "wall"]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for r in sgd.to_dict("records"):
            cells = [r["cell"], r["quantizer"], fmt_sigma(r["sigma"]), str(r["trials"])]
            cells += [fmt_count(r[f"steps_to_{t}"], r[f"reached_{t}"], r["trials"], r["steps"]) for t in ts]
            cells += [fmt_time(r[f"time_to_{t}"]) for t in ts] + [fmt_bits(r[f"bits_to_{t}"]) for t in ts]
            dec = r.get("decode_failures", math.nan)
            cells += [fmt_sci(r["final_relative_gap"]), fmt_sci(r["final_consensus"]),
                      "—" if isnan(dec) else f"{dec:.0f}", fmt_bits(r["bits_total"]),
                      fmt_time(r["time_per_step"]), fmt_time(r["sim_time"]), fmt_wall(r["wall_s"])]
            lines.append("| " + " | ".join(cells) + " |")
        n, d = sorted(set(sgd["N"])), sorted(set(sgd["d"]))
        out.append(f"### SGD on the quadratic (N = {'/'.join(map(str, n))}, d = {'/'.join(map(str, d))})\n\n"
                   + "\n".join(lines) + "\n\n"
                   "steps to t: mean over complete trials of the first evaluated step with relative gap "
                   "<= t (same notation as above); sim. time and bits/coord at that step, over the trials "
                   "that got there. decode failures: lattice messages that could not be decoded, per trial. "
                   "bits/coord, sim. time: the whole trial.\n")
    return "\n".join(out)


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
    for ax in axes:
        ax.set_yscale("log")
        for t in (1e-2, 1e-4, 1e-6):
            ax.axhline(t, color="0.7", lw=0.7, ls=":")
    if math.isfinite(floor):
        axes[0].set_ylim(bottom=max(floor / 3, 1e-16))
    axes[0].set_xlim(0, min(int(avg["rounds"].min()) * 1.0, 40) if len(avg) else None)
    axes[1].set_xscale("log")
    axes[2].set_xscale("log")
    axes[0].set(xlabel="round", ylabel="variance across peers (per coordinate)", title="variance vs rounds")
    axes[1].set(xlabel="bits per coordinate per peer (cumulative)", title="variance vs communication")
    axes[2].set(xlabel="simulated time [s]", title="variance vs simulated time")
    axes[0].legend(fontsize=7, ncol=2)
    n, d = int(avg["N"].iloc[0]), int(avg["d"].iloc[0])
    fig.suptitle(f"Averaging, N = {n}, d = {d}: mean over trials (moshpit reaches exactly 0 and leaves the axis)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    if show:
        plt.show()
    plt.close(fig)
    return path


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
    for ax in axes:
        ax.set_yscale("log")
        for t in (1e-2, 1e-3):
            ax.axhline(t, color="0.7", lw=0.7, ls=":")
    axes[2].set_xscale("log")
    axes[0].set(xlabel="SGD step", ylabel="relative gap of the average model", title="gap vs steps")
    axes[1].set(xlabel="simulated time [s]", title="gap vs simulated time")
    axes[2].set(xlabel="bits per coordinate per peer (cumulative)", title="gap vs communication")
    axes[0].legend(fontsize=7, ncol=2)
    n, d = int(sgd["N"].iloc[0]), int(sgd["d"].iloc[0])
    fig.suptitle(f"Local SGD (H = 2) on the EPFL quadratic, N = {n}, d = {d}: mean over trials")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    if show:
        plt.show()
    plt.close(fig)
    return path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=HERE / "results", help="folder of the traces")
    ap.add_argument("--csv", default=str(HERE / "results.csv"), help="CSV output ('-': none)")
    ap.add_argument("--md", default=str(HERE / "table.md"), help="markdown output ('-': none)")
    ap.add_argument("--figures", type=Path, default=None, help="folder for fig_averaging.png and fig_sgd.png")
    a = ap.parse_args(argv)
    if not a.results.is_dir():
        print(f"summarize.py: error: {a.results} is not a folder", file=sys.stderr)
        return 2
    df = load_cells(a.results)
    if df.empty:
        print(f"summarize.py: error: no traces in {a.results}", file=sys.stderr)
        return 1
    text = markdown(df)
    if a.csv != "-":
        df.to_csv(a.csv, index=False, float_format="%.6g")
    if a.md != "-":
        Path(a.md).write_text(text)
    if a.figures is not None:
        import matplotlib
        matplotlib.use("Agg")
        a.figures.mkdir(parents=True, exist_ok=True)
        plot_averaging(df, a.results, a.figures / "fig_averaging.png")
        plot_sgd(df, a.results, a.figures / "fig_sgd.png")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
