"""What the experiments' self-tests on synthetic traces share (test_summarize.py,
test_make_table.py): the checks and their tally, running the script under test, reading
its markdown table, writing the parts of a trace every summarizer reads, and making
the trials whole as avbench's readers check them (finish_trials).

    from avbench.selftest import Checks
    t = Checks(Path(__file__).resolve().parent / "summarize.py")
    t.check(ok, "what was checked")
    return t.finish()
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

from avbench import schema  # the column types, by schema version
from avbench.layouts import to_v9


class Checks:
    """The script under test and the tally of failed checks."""

    def __init__(self, script: Path, timeout: float = 60):
        self.script, self.timeout = script, timeout
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            self.failures.append(what)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(self.script), *args], capture_output=True, text=True,
                              timeout=self.timeout)

    def finish(self) -> int:
        """The exit status of the self-test, after a line saying how it went."""
        print(f"{len(self.failures)} failure(s)" if self.failures else "all passed")
        return 1 if self.failures else 0

    def check_folders(self, header: str, no_traces: str, d: Path) -> None:
        """A summarizer's runs beside the table: '-' for both outputs still prints the
        table (its header line starts with `header`); an empty folder exits 1 saying
        `no_traces`; a missing one exits 2."""
        res = self.run("--results", str(d), "--csv", "-", "--md", "-")
        self.check(res.returncode == 0 and header in res.stdout, "'-' writes no file, still prints")
        with tempfile.TemporaryDirectory() as tmp:
            res = self.run("--results", tmp, "--csv", "-", "--md", "-")
            self.check(res.returncode == 1 and no_traces in res.stderr, f"empty folder: exit 1 ({res.returncode})")
            res = self.run("--results", str(Path(tmp) / "missing"))
            self.check(res.returncode == 2, f"missing folder: exit 2 ({res.returncode})")


class Layouts(Checks):
    """Checks run once on traces of each layout in `layouts`: the first, the one the
    self-test writes (a group per trial), then v9's, the same traces rewritten
    (avbench.layouts.to_v9) as the programs write them now. Each check's line names
    the layout at hand, `layout`."""

    def __init__(self, script: Path, layouts: tuple[str, str], timeout: float = 60):
        super().__init__(script, timeout)
        self.layouts, self.layout = layouts, layouts[0]

    def check(self, ok: bool, what: str) -> None:
        super().check(ok, f"{what} [{self.layout}]")

    def place(self, path: Path) -> None:
        """The trace just written at `path`, rewritten in v9's layout when that is the one at hand."""
        if self.layout == "v9":
            old = path.with_name(f".{path.name}.{self.layouts[0]}")  # hidden: the scripts' globs skip it
            path.rename(old)
            to_v9(old, path)
            old.unlink()

    def check_rows(self, path: Path, index: str, expected: list[int], what: str) -> None:
        """That the trace at `path` is in the layout at hand and its trials have `expected`
        rows (`index`: the row column, round or step, which gives a trial's length before v9)."""
        with h5py.File(path, "r") as f:
            t, v9, version = f["trials"], self.layout == "v9", int(f.attrs["schema_version"])
            got = list(t["rows"][()]) if v9 else [len(t[k][index]) for k in t]
            self.check(version == int(self.layout[1:]) and ("rows" in t) == v9 and got == expected,
                       f"{what} trace in layout {self.layout}, trials of {expected} rows: {got}")

    def summarize(self, d: Path, *extra: str) -> tuple[list[dict], str, str]:
        """Runs the script on the traces in `d`, writing out.csv and out.md there (and
        `extra` arguments): exit 0, and the table printed is out.md's. Returns (the CSV
        rows, the markdown, what it said on stderr: the traces it skipped)."""
        res = self.run("--results", str(d), "--csv", str(d / "out.csv"), "--md", str(d / "out.md"), *extra)
        print(res.stdout)
        self.check(res.returncode == 0, f"exit 0 (got {res.returncode}: {res.stderr.strip()})")
        md = (d / "out.md").read_text()
        self.check(md == res.stdout, "table.md is what was printed")
        with open(d / "out.csv") as f:
            return list(csv.DictReader(f)), md, res.stderr

    def each(self, check_layout) -> int:
        """Runs check_layout(d) once per layout, d a new empty folder; the self-test's exit status."""
        for self.layout in self.layouts:
            print(f"== traces of layout {self.layout}")
            with tempfile.TemporaryDirectory() as tmp:
                check_layout(Path(tmp))
        return self.finish()


def table_row(md: str, *first: str) -> list[str]:
    """The cells of the first markdown row whose leading cells are `first`."""
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:len(first)] == list(first):
            return cells
    return []


def write_root(f: h5py.File, schema: int, kind: str, n: int, config: dict[str, str]) -> None:
    """The root attributes of a complete trace run by SMPI, and its /config."""
    f.attrs["schema_version"] = np.int32(schema)
    f.attrs["run_kind"] = kind
    f.attrs["engine"] = "smpi"
    f.attrs["n_peers"] = np.int32(n)
    f.attrs["complete"] = np.int32(1)
    c = f.create_group("config")
    for key, value in {**config, "text": "(synthetic)"}.items():
        c.attrs[key] = value
    f.create_group("trials", track_order=True)  # listed in writing order, as the writer's


def finish_trials(f: h5py.File, kind: str) -> None:
    """The trials written so far made whole as the readers check them (avbench's
    schema.py, which avbench check applies too): every column of the schema
    version, zeros where the test wrote none, of the trial's length (its round or
    step column's) and type; targets, seed, and diverged (sgd, v5 on) when absent;
    the root complete = 0 when a trial is cut short; /trials, /summary, and /optimum
    for sgd. The columns the test wrote are kept as they are. For the group-per-trial
    layout of v1..v8 only (write_root's `schema` below schema.TABLE_SINCE);
    avbench.layouts.to_v9 rewrites such a trace as v9."""
    version = int(f.attrs["schema_version"])
    spec = schema.columns_of(schema.ROW_SPECS[kind], version)
    index = next(iter(spec))
    for name, g in f.require_group("trials").items():
        rows = len(g[index])
        for col, dtype in spec.items():
            if col not in g:
                g[col] = np.zeros(rows, dtype=dtype)
        if "targets" not in g:
            g["targets"] = np.zeros(0)
        if "seed" not in g.attrs:
            g.attrs["seed"] = np.uint64(int(name))
        if kind == "sgd" and version >= schema.DIVERGED_SINCE and "diverged" not in g.attrs:
            g.attrs["diverged"] = np.int32(0)
        if g.attrs["complete"] == 0:
            f.attrs["complete"] = np.int32(0)
    for group in schema.ROOT_GROUPS[kind]:
        f.require_group(group)


def add_targets(cols: dict[str, list], count: str, to: dict, cap: int) -> None:
    """A trial's <count>_to_<t> and reached_<t> for every target t in `cols`: its
    rounds or steps to t (`to[t]`, None when it never got there and counts `cap`)."""
    for t in [c[len(count) + 4:] for c in cols if c.startswith(f"{count}_to_")]:
        hit = to.get(t)
        cols[f"{count}_to_{t}"].append(cap if hit is None else hit)
        cols[f"reached_{t}"].append(0 if hit is None else 1)


def write_summary(f: h5py.File, cols: dict[str, list]) -> None:
    """/summary from its columns, typed as the writer types them."""
    s = f.require_group("summary")
    for name, values in cols.items():
        dtype = np.uint64 if name == "bytes_sent" else (
            float if name.startswith("final") or name == "time" else np.int32)
        s[name] = np.asarray(values, dtype=dtype)
