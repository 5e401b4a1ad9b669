#!/usr/bin/python3
"""Gossip rounds to relative error 1e-3, measured against the spectral predictions.

    make_table.py [--results DIR] [--csv FILE]

Reads what run.sh left in DIR (default: results/ beside this script) and prints one
row per graph:

    rho, lambda2     graph_info: second-largest |eigenvalue| of W; the Laplacian's
                     algebraic connectivity
    asymptotic       log(1e-3) / log(rho): the slowest mode alone
    spectrum         first t with sum_k |lambda_k|^2t / (N − 1) < 1e-6, the expected
                     variance ratio for i.i.d. initial values
    measured         mean ± standard error over trials of the first round whose
                     variance / initial variance is below 1e-6
    meas/spec, meas/asym   the ratios of the means
    measured by      smpi (averaging_bench under SMPI) or sequential (the sequential engine); when
                     SMPI ran only some trials, they are compared with the sequential engine's

For random-regular graphs every trial has its own graph: rho, lambda2 and the
predictions are means over the trials' graphs. one-peer-exp is time-varying (no
single W): the prediction is the exact average after log2 N rounds, with expected
ratio (N/2^t − 1)/(N − 1) before. Also writes DIR/rates.csv (or --csv FILE).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path

import numpy as np

import avbench  # python/avbench: traces -> DataFrames

RATIO = 1e-6  # variance ratio for relative error 1e-3
NOISE = 1e-20  # variance ratios below this are rounding noise (exact averages give ~1e-32)
GRAPHS = ["ring", "torus", "hypercube", "exp", "one-peer-exp", "random-regular:8", "complete"]


def slug(graph: str) -> str:
    return graph.replace(":", "-")


def crossing(rounds, variance) -> int | None:
    """First round whose variance / variance at round 0 is below RATIO (None: never)."""
    v = np.asarray(variance, dtype=float)
    below = np.nonzero(v / v[0] < RATIO)[0]
    return int(np.asarray(rounds)[below[0]]) if below.size else None


def read_prediction(path: Path) -> dict:
    p = {"curve_t": [], "curve": []}
    for line in path.read_text().splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "curve":
            p["curve_t"].append(int(f[1]))
            p["curve"].append(float(f[2]))
        elif f[0] in ("rho", "lambda2", "asymptotic_rounds_to_1e-3", "spectrum_rounds_to_1e-3", "budget"):
            p[f[0]] = float(f[1])
        if f[0] == "peers":
            p["n"] = int(f[1])
        if "time-varying" in line:
            p["period"] = int(re.search(r"after (\d+) rounds", line).group(1))
    if "period" in p:  # one-peer-exp: node i holds the mean of 2^t consecutive values
        n, k = p["n"], p["period"]
        p["curve_t"] = list(range(k + 1))
        p["curve"] = [(n / 2 ** t - 1) / (n - 1) if t < k else 0.0 for t in range(k + 1)]
        p["spectrum_rounds_to_1e-3"] = float(k)
    p["curve_t"], p["curve"] = np.asarray(p["curve_t"]), np.asarray(p["curve"])
    return p


def read_sequential(path: Path) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """trial -> (rounds, variance), from thin_curves.py's thinned CSV."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    out = {}
    for k in np.unique(data[:, 0]).astype(int):
        rows = data[data[:, 0] == k]
        out[int(k)] = (rows[:, 1].astype(int), rows[:, 2])
    return out


def read_smpi(path: Path) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Trial -> (rounds, variances) of the complete trials of an SMPI trace."""
    if avbench.trace_state(path) != "complete":
        raise ValueError(f"{path}: trace not complete (run cut short): run run.sh again to redo it")
    rows = avbench.load_trace(path, columns=["variance"])
    done = rows[rows["complete"]]
    return {int(k): (g["round"].to_numpy(), g["variance"].to_numpy()) for k, g in done.groupby("trial")}


def load(results: Path) -> list[dict]:
    """One record per graph that has predictions and measurements in results."""
    rows = []
    for graph in GRAPHS:
        s = slug(graph)
        pred_files = sorted(results.glob(f"predict_{s}_*.txt"),
                            key=lambda p: int(p.stem.rsplit("_", 1)[1])) \
            or sorted(results.glob(f"predict_{s}.txt"))
        sequential_file, smpi_file = results / f"sequential_{s}.csv", results / f"smpi_{s}.h5"
        if not pred_files or not (sequential_file.exists() or smpi_file.exists()):
            continue
        preds = [read_prediction(p) for p in pred_files]
        sequential = read_sequential(sequential_file) if sequential_file.exists() else {}
        smpi = read_smpi(smpi_file) if smpi_file.exists() else {}
        use_smpi = bool(smpi) and len(smpi) >= len(sequential)
        measured = smpi if use_smpi else sequential
        r = {"graph": graph, "preds": preds, "sequential": sequential, "smpi": smpi,
             "source": "smpi" if use_smpi else "sequential", "measured": measured}
        r["trials"] = {k: crossing(*measured[k]) for k in sorted(measured)}
        r["budget"] = {k: int(measured[k][0][-1]) for k in measured}
        # SMPI against the sequential engine, trial by trial, on the rounds both have.
        if smpi and sequential:
            rel, same = 0.0, True
            for k, (rs, vs) in smpi.items():
                if k not in sequential:
                    continue
                ro, vo = sequential[k]
                common, i_s, i_o = np.intersect1d(rs, ro, return_indices=True)
                # Rows above the rounding floor: once the average is exact (one-peer-exp,
                # complete) the variance is ~1e-32 of noise and relative differences mean nothing.
                a, b = vs[i_s], vo[i_o]
                keep = b > NOISE * vo[0]
                d = np.abs(a[keep] - b[keep]) / b[keep]
                rel = max(rel, float(d.max()) if d.size else 0.0)
                same &= crossing(rs, vs) == crossing(ro, vo)
            r["check"] = {"trials": len(smpi), "max_rel_diff": rel, "same_rounds": same}
        rows.append(r)
    return rows


def summarize(r: dict) -> dict:
    preds = r["preds"]
    got = [v for v in r["trials"].values() if v is not None]
    missing = len(r["trials"]) - len(got)
    mean = float(np.mean(got)) if got else math.nan
    se = float(np.std(got, ddof=1) / math.sqrt(len(got))) if len(got) > 1 else math.nan

    def avg(key):
        vals = [p[key] for p in preds if key in p]
        return float(np.mean(vals)) if vals else math.nan

    spec, asym = avg("spectrum_rounds_to_1e-3"), avg("asymptotic_rounds_to_1e-3")
    c = r.get("check")
    if r["source"] == "smpi":
        by = f"smpi ({len(got)})"
        if c and len(r["sequential"]) >= len(r["smpi"]):
            by += ", = sequential" if c["same_rounds"] else ", ≠ sequential!"
    else:
        by = f"sequential ({len(r['trials'])})"
        if c:
            by += (f"; smpi {c['trials']} trial{'s' if c['trials'] > 1 else ''} "
                   + ("same rounds" if c["same_rounds"] else "DIFFERENT rounds!"))
    return {
        "graph": r["graph"], "rho": avg("rho"), "lambda2": avg("lambda2"),
        "rho_min": min((p["rho"] for p in preds if "rho" in p), default=math.nan),
        "rho_max": max((p["rho"] for p in preds if "rho" in p), default=math.nan),
        "graphs": len(preds), "pred_asymptotic": asym, "pred_spectrum": spec,
        "pred_spectrum_trials": ";".join(f"{p['spectrum_rounds_to_1e-3']:g}" for p in preds),
        "measured_mean": mean, "measured_se": se, "trials": len(r["trials"]), "not_reached": missing,
        "measured_trials": ";".join("never" if v is None else str(v) for v in r["trials"].values()),
        "meas_over_spectrum": mean / spec if spec else math.nan,
        "meas_over_asymptotic": mean / asym if asym == asym and asym > 0 else math.nan,
        "source": r["source"], "measured_by": by,
        "smpi_trials": c["trials"] if c else len(r["smpi"]),
        "smpi_max_rel_diff": c["max_rel_diff"] if c else math.nan,
        "smpi_same_rounds": (int(c["same_rounds"]) if c else ""),
    }


def fmt(x: float, digits: int = 3) -> str:
    if x != x:
        return "—"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def table_row(s: dict) -> list[str]:
    """One graph's cells in the printed table."""
    rho = fmt(s["rho"], 6)
    if s["graphs"] > 1 and s["rho"] == s["rho"]:
        rho += f" ({s['graphs']} graphs)"
    if s["graph"] == "one-peer-exp":
        spec = f"{s['pred_spectrum']:.0f} (exact)"
    else:
        spec = fmt(s["pred_spectrum"], 4)
    meas = f"{fmt(s['measured_mean'], 4)} ± {fmt(s['measured_se'], 2)}"
    if s["not_reached"]:
        meas += f" ({s['not_reached']} never!)"
    asym, over_asym = fmt(s["pred_asymptotic"], 4), s["meas_over_asymptotic"]
    if s["rho"] < 1e-12:  # complete: W = J/N, rho is 0 up to rounding
        asym, over_asym = "0 (rho = 0)", math.nan
    return [s["graph"], rho, fmt(s["lambda2"], 4), asym, spec, meas, f"{s['meas_over_spectrum']:.3f}",
            "—" if over_asym != over_asym else f"{over_asym:.3f}", s["measured_by"]]


CSV_COLUMNS = ["graph", "rho", "lambda2", "graphs", "rho_min", "rho_max", "pred_asymptotic", "pred_spectrum",
               "pred_spectrum_trials", "measured_mean", "measured_se", "trials", "not_reached", "measured_trials",
               "meas_over_spectrum", "meas_over_asymptotic", "source", "measured_by", "smpi_trials",
               "smpi_max_rel_diff", "smpi_same_rounds"]


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for s in rows:
            w.writerow({k: ("" if isinstance(v, float) and v != v else v) for k, v in s.items() if k in CSV_COLUMNS})


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    ap.add_argument("--csv", type=Path, help="CSV copy of the table [RESULTS/rates.csv]")
    a = ap.parse_args(argv)
    try:
        rows = [summarize(r) for r in load(a.results)]
    except (OSError, KeyError, ValueError) as e:
        print(f"make_table.py: error: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"make_table.py: error: nothing measured in {a.results} (run run.sh first)", file=sys.stderr)
        return 2

    head = ["graph", "rho", "lambda2", "pred asym", "pred spectrum", "measured", "meas/spec",
            "meas/asym", "measured by"]
    table = [table_row(s) for s in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = ["Synchronous gossip, uniform weights, no failures: rounds until variance / initial "
           f"variance < {RATIO:g} (relative error 1e-3).", "",
           line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(t) for t in table]
    out += ["", "measured: mean ± standard error over trials; per trial: "
            + "; ".join(f"{s['graph']} {s['measured_trials'].replace(';', ' ')}" for s in rows)]
    rr = [s for s in rows if s["graphs"] > 1]
    for s in rr:
        out.append(f"{s['graph']}: one graph per trial; rho {s['rho_min']:.6f}..{s['rho_max']:.6f}, "
                   f"predicted (spectrum) per trial {s['pred_spectrum_trials'].replace(';', ' ')}")
    checks = [s for s in rows if s["smpi_trials"] and s["smpi_max_rel_diff"] == s["smpi_max_rel_diff"]]
    if checks:
        out.append(f"smpi vs sequential, same trials: max relative difference of the variance per round (ratio > {NOISE:g}): "
                   + ", ".join(f"{s['graph']} {s['smpi_max_rel_diff']:.1e}" for s in checks))
    print("\n".join(out))

    write_csv(a.csv or a.results / "rates.csv", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
