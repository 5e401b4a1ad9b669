"""What the experiments' summarizers (experiments/*/summarize.py) share: their command
line, writing the table as CSV and markdown, and the formats of its cells.

    a = avbench.table_parser(__doc__, HERE).parse_args(argv)
    return avbench.write_table(a, load_cells, markdown, "sgd traces")

where load_cells(results) starts from trace_rows(results, summarize_trace).

Cell formats turn NaN (nothing measured) into an em dash.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .traces import read_walltimes

MISSING = "—"


def table_parser(doc: str, here: Path) -> argparse.ArgumentParser:
    """--results (the traces, default here/results), --csv and --md (the outputs,
    default results.csv and table.md in `here`; '-' writes none)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--results", type=Path, default=here / "results", help="folder of the traces")
    ap.add_argument("--csv", default=str(here / "results.csv"), help="CSV output ('-': none)")
    ap.add_argument("--md", default=str(here / "table.md"), help="markdown output ('-': none)")
    return ap


def read_results(results: Path, load: Callable[[Path], pd.DataFrame], what: str,
                 prog: str) -> tuple[pd.DataFrame | None, int]:
    """(load(results), 0): the table of the traces in the folder `results`; or, after a
    line on stderr, (None, the exit status): 2 when it is no folder, 1 when it holds no
    `what` (e.g. "sgd traces"). PROG names the script in that line."""
    if not results.is_dir():
        print(f"{prog}: error: --results {results} is not a folder", file=sys.stderr)
        return None, 2
    df = load(results)
    if df.empty:
        print(f"{prog}: error: no {what} in {results}", file=sys.stderr)
        return None, 1
    return df, 0


def write_table(a: argparse.Namespace, load_cells: Callable[[Path], pd.DataFrame],
                markdown: Callable[[pd.DataFrame], str], what: str,
                then: Callable[[argparse.Namespace, pd.DataFrame], None] | None = None) -> int:
    """The summarizer's run: the table of a.results, written where a.csv and a.md say,
    `then` (more outputs), the markdown printed. Exit status: 2 for a missing folder,
    1 when it holds no `what` (e.g. "sgd traces"), else 0."""
    df, status = read_results(a.results, load_cells, what, "summarize.py")
    if df is None:
        return status
    text = markdown(df)
    if a.csv != "-":
        df.to_csv(a.csv, index=False, float_format="%.6g")
    if a.md != "-":
        Path(a.md).write_text(text)
    if then is not None:
        then(a, df)
    print(text, end="")
    return 0


def trace_rows(results: Path, summarize_trace: Callable[[Path], dict | None]) -> pd.DataFrame:
    """One row per trace in `results` that summarize_trace makes a row of (None: skipped),
    in file name order, each with wall_s, the cell's wall time from walltime.tsv (NaN
    when not listed); an empty frame when no trace gave a row."""
    walls = read_walltimes(results)
    records = []
    for path in sorted(results.glob("*.h5")):
        rec = summarize_trace(path)
        if rec is not None:
            rec["wall_s"] = walls.get(path.stem, math.nan)
            records.append(rec)
    return pd.DataFrame(records)


def markdown_lines(head: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table: the header, its rule, one line per row of cells."""
    rule = "|" + "|".join("---" for _ in head) + "|"
    return [_markdown_line(head), rule] + [_markdown_line(cells) for cells in rows]


def _markdown_line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def mean(values) -> float:
    """The mean, NaN for no values."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()) if v.size else math.nan


def isnan(v) -> bool:
    """True for None and a float NaN (a column another kind of row left empty)."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_sci(v) -> str:
    return MISSING if isnan(v) else f"{v:.2e}"


def fmt_time(v) -> str:
    """Seconds, as ms below 1 s."""
    if isnan(v):
        return MISSING
    if v < 1e-6:  # nothing was sent: SMPI's clock moves only by its 1e-8 s per MPI_Wtime call
        return "< 1 µs"
    return f"{v * 1e3:.1f} ms" if v < 1 else f"{v:.2f} s"


def fmt_wall(v) -> str:
    return MISSING if isnan(v) else (f"{v:.0f} s" if v >= 10 else f"{v:.1f} s")
