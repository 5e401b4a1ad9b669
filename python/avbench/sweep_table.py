#!/usr/bin/python3
"""The table of a sweep, one run per row: its reader, shared by scripts/avbench sweep
(every mode) and scripts/avbench aggregate. The format is documented once, in
docs/sweeps.md ("The table"): a header of flag names, one row per run, `-` for
"leave the flag out", the reserved columns name, program, engine, launcher and peers, and
`launcher.<flag>` columns. A bad table raises TableError: one line naming the
file, line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Columns that say how to run a row rather than naming a flag of the program.
RESERVED = ("name", "program", "engine", "launcher", "peers")
PROGRAMS = ("averaging_bench", "sgd_bench")
# The engines and the launchers that start each (scripts/avbench sweep LAUNCH says how):
# Open MPI's N processes by mpirun or srun; SMPI's one simulating process by
# scripts/smpirun.sh; the sequential engine by nothing (the program itself).
ENGINES = {"openmpi": ("mpirun", "srun"), "smpi": ("smpi",), "sequential": ("sequential",)}
DEFAULT_ENGINE = "openmpi"  # of a row without an engine cell (tables older than the column)
LAUNCHERS = tuple(launcher for launchers in ENGINES.values() for launcher in launchers)


def engine_of_launcher(launcher: str) -> str:
    """The engine a launcher starts ("" for "")."""
    return next((e for e, launchers in ENGINES.items() if launcher in launchers), "")
OMIT = "-"  # a cell that leaves its flag out (or, in a reserved column, means "default")

FLAG_RE = re.compile(r"^(launcher\.)?[A-Za-z][A-Za-z0-9_-]*$")
LAUNCHER_FLAG = "launcher."
# Names become file names: no slashes, no leading dot (hidden files), no spaces.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class TableError(Exception):
    """A problem with the table, as one line a user can act on."""


@dataclass
class Row:
    index: int  # 0-based among data rows: the array task that runs it
    line: int  # 1-based line number in the file, for messages
    name: str
    program: str  # "" = averaging_bench
    engine: str  # "" = the launcher's, else the sweep's default
    launcher: str  # "" = the job's default
    peers: int | None  # None = every task of the job
    cells: dict[str, str] = field(default_factory=dict)  # every column as written
    args: list[str] = field(default_factory=list)  # the program's flags, in column order
    launcher_args: list[str] = field(default_factory=list)  # the launcher's, from launcher.<flag> columns

    @property
    def program_name(self) -> str:
        return self.program or PROGRAMS[0]


@dataclass
class Table:
    path: str
    columns: list[str]  # as named in the header, leading dashes removed
    rows: list[Row]


def _fields(line: str) -> list[str]:
    return line.split()


def parse(path: str) -> Table:
    """Reads and checks the whole table; raises TableError on the first problem."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise TableError(f"{path}: cannot read the table: {e.strerror}") from None
    except UnicodeDecodeError:
        raise TableError(f"{path}: not UTF-8 text") from None

    columns: list[str] | None = None
    rows: list[Row] = []
    for lineno, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        cells = _fields(text)
        where = f"{path}:{lineno}"
        if columns is None:
            columns = []
            for c in cells:
                name = c[2:] if c.startswith("--") else c
                if not FLAG_RE.match(name):
                    raise TableError(f"{where}: column '{c}' is not a flag name (letters, digits, '-' and '_')")
                if name == "out":
                    raise TableError(f"{where}: column 'out' is not allowed: the sweep names each trace OUT/<name>.h5")
                if name in columns and (name in RESERVED or name.startswith(LAUNCHER_FLAG)):
                    raise TableError(f"{where}: column '{name}' appears twice")
                columns.append(name)
            continue
        if len(cells) != len(columns):
            raise TableError(f"{where}: {len(cells)} fields, but the header names {len(columns)} columns")
        rows.append(_row(len(rows), lineno, where, list(zip(columns, cells))))

    if columns is None:
        raise TableError(f"{path}: no header line (the table is empty)")
    if not rows:
        raise TableError(f"{path}: the table has a header but no rows")
    seen: dict[str, int] = {}
    for r in rows:
        if r.name in seen:
            raise TableError(f"{path}:{r.line}: name '{r.name}' is used by line {seen[r.name]} too: traces would collide")
        seen[r.name] = r.line
    return Table(path, columns, rows)


def _row(index: int, lineno: int, where: str, pairs: list[tuple[str, str]]) -> Row:
    # A repeated flag's cells, joined for display (avbench aggregate's CSV columns).
    cells = {col: ",".join(v for c, v in pairs if c == col) for col, _ in pairs}

    def reserved(col: str) -> str:
        v = cells.get(col, OMIT)
        return "" if v == OMIT else v

    name = reserved("name") or f"row{index}"
    if not NAME_RE.match(name):
        raise TableError(f"{where}: name '{name}' must be letters, digits, '.', '_' or '-' (it names the trace file)")
    program = reserved("program")
    if program and program not in PROGRAMS and "/" not in program:
        raise TableError(f"{where}: program '{program}' must be one of {', '.join(PROGRAMS)} or a path")
    engine = reserved("engine")
    if engine and engine not in ENGINES:
        raise TableError(f"{where}: engine '{engine}' must be one of {', '.join(ENGINES)} (or '-' for the sweep's default)")
    launcher = reserved("launcher")
    if launcher and launcher not in LAUNCHERS:
        raise TableError(f"{where}: launcher '{launcher}' must be one of {', '.join(LAUNCHERS)} (or '-' for the sweep's default)")
    if engine and launcher and launcher not in ENGINES[engine]:
        raise TableError(f"{where}: launcher '{launcher}' does not start engine {engine}, which takes "
                         f"{' or '.join(ENGINES[engine])} (or '-')")
    peers_text = reserved("peers")
    peers = None
    if peers_text:
        if not re.fullmatch(r"[0-9]+", peers_text) or int(peers_text) < 1:
            raise TableError(f"{where}: peers '{peers_text}' must be a whole number of ranks, at least 1")
        peers = int(peers_text)
    given = [(col, v) for col, v in pairs if col not in RESERVED and v != OMIT]
    args = [f"--{col}={v}" for col, v in given if not col.startswith(LAUNCHER_FLAG)]
    launcher_args = [a for col, v in given if col.startswith(LAUNCHER_FLAG)
                     for a in (f"--{col[len(LAUNCHER_FLAG):]}", v)]
    return Row(index, lineno, name, program, engine, launcher, peers, cells, args, launcher_args)


def from_pairs(lines: list[str]) -> str:
    """A table from rows written as `column=value ...` (one row a line, a column
    named twice for a repeated flag): the union of the columns, in first-seen order,
    with `-` where a row lacks one. What experiments/*/run.sh generate."""
    rows: list[list[tuple[str, str]]] = []
    for number, line in enumerate(lines, start=1):
        pairs = [tuple(tok.split("=", 1)) for tok in line.split()]
        if any(len(p) != 2 or not p[0] for p in pairs):
            raise TableError(f"row line {number}: '{line.strip()}' is not column=value ...")
        if pairs:
            rows.append(pairs)
    columns: list[str] = []  # a repeated flag as often as one row repeats it
    for pairs in rows:
        for col in dict.fromkeys(c for c, _ in pairs):
            extra = sum(c == col for c, _ in pairs) - columns.count(col)
            columns += [col] * max(0, extra)
    table = [columns]
    for pairs in rows:
        values = {c: [v for k, v in pairs if k == c] for c, _ in pairs}
        table.append([values.get(c, []).pop(0) if values.get(c) else OMIT for c in columns])
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    return "".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n" for r in table)
