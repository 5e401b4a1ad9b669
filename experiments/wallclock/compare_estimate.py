#!/usr/bin/python3
"""The sequential engine's time per round against the SMPI cells of results.csv.

    compare_estimate.py RESULTS_DIR [--kind KIND] [--csv FILE] [--markdown FILE]

RESULTS_DIR holds sequential cells run now (AVB_ENGINE=sequential run.sh with
RESULTS=RESULTS_DIR); each is matched with results.csv's SMPI cell of the same
protocol, precision, N, platform and failure rate, and trial 0's simulated time per
round compared (the estimate over SMPI's). Prints one row per cell, worst last, and
how many are within 2% and 10%. --kind keeps one platform (cluster, fat, cloud,
geo); --csv reads another results.csv; --markdown also writes the rows, in the
study's order, as a Markdown table (estimate_vs_smpi.md). Cloud's SMPI cells in results.csv were run
on avbench platform's earlier draws (README.md), so compare cloud against cells run anew.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
import summarize  # this folder's (a script's folder is on its path)

KEY = ["study_protocol", "precision", "N", "kind", "fail"]


def compare(results: Path, smpi_csv: Path, kind: str | None) -> pd.DataFrame:
    seq = summarize.load_cells(results)
    seq = seq[seq.engine == "sequential"]
    smpi = pd.read_csv(smpi_csv)
    smpi = smpi[(smpi.engine == "smpi") & (smpi.part == "avg")]
    if kind:
        smpi = smpi[smpi.kind == kind]
    m = smpi.merge(seq, on=KEY, suffixes=("_smpi", "_seq"))
    m["ratio"] = m.t0_time_per_round_seq / m.t0_time_per_round_smpi
    m["off"] = (m.ratio - 1).abs()
    return m.sort_values("off")[KEY + ["t0_time_per_round_smpi", "t0_time_per_round_seq", "ratio"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="folder of sequential cells (run.sh's RESULTS)")
    ap.add_argument("--kind", choices=["cluster", "fat", "cloud", "geo"], help="one platform only")
    ap.add_argument("--csv", type=Path, default=HERE / "results.csv", help="the SMPI cells [results.csv]")
    ap.add_argument("--markdown", type=Path, help="also write the comparison there as a Markdown table")
    a = ap.parse_args()
    if not a.results.is_dir() or not any(a.results.glob("*_seq.h5")):
        print(f"compare_estimate.py: error: RESULTS_DIR: {a.results}: no sequential cells (*_seq.h5) there", file=sys.stderr)
        sys.exit(2)
    m = compare(a.results, a.csv, a.kind)
    if m.empty:
        print("compare_estimate.py: error: RESULTS_DIR: no cell there has an SMPI cell in the CSV", file=sys.stderr)
        sys.exit(2)
    pd.set_option("display.width", 200)
    print(m.to_string(index=False))
    off = (m.ratio - 1).abs()
    verdict = f"{len(m)} cells: {(off <= 0.02).sum()} within 2%, {(off <= 0.10).sum()} within 10%"
    print(verdict)
    if a.markdown:
        write_markdown(m, verdict, a.markdown)


def write_markdown(m: pd.DataFrame, verdict: str, path: Path) -> None:
    """The comparison as a Markdown table, one row per cell in the study's order."""
    rows = m.sort_values(KEY)
    lines = ["| protocol | precision | N | platform | p | SMPI s/round | estimate s/round | estimate / SMPI |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows.itertuples(index=False):
        lines.append(f"| {r.study_protocol} | {r.precision} | {int(r.N)} | {r.kind} | {r.fail:g} | "
                     f"{r.t0_time_per_round_smpi:.6g} | {r.t0_time_per_round_seq:.6g} | {r.ratio:.6f} |")
    lines.append("")
    lines.append(verdict + ".")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
