#!/usr/bin/python3
"""Runs every command the documentation shows, so the docs cannot drift from the code.

    test_docs.py --source REPO --build BUILD --build-smpi BUILD_SMPI [--only FILE ...] [--list] [--jobs N]

Which text is run (README.md and docs/*.md of REPO):

1. Code blocks are fenced blocks (``` ... ```) and indented blocks (lines indented
   by 4 or more spaces after a blank line, outside fenced blocks).
2. A block's kind: a fenced block whose info string is `sh`, `bash`, `shell` or
   `console` is shell; `python` is Python; any other info string (`text`, `tsv`,
   `ini`, ...) is not a command and is not run. Fenced blocks without an info
   string and indented blocks are shell, unless their marker says otherwise.
3. A marker is an HTML comment starting with `test:` on the first non-blank line
   after the block, e.g. `<!-- test: -n 1024 -> -n 16; --rounds 50 -> --rounds 3 -->`.
   It holds directives separated by `;`:
     OLD -> NEW      replace the text OLD by NEW in the block before running it (each
                     must occur in the block: a substitution that no longer matches
                     is reported, so markers cannot go stale silently);
     exit N          every command of the block is expected to exit with status N;
     text            the block is not a command (output, a listing, pseudocode, a
                     synopsis);
     skip: REASON    a command that the test does not run, and why (a cluster, a
                     run of minutes, a separate build). Keep these few. The rest
                     of the marker is the reason, `;` included, so it comes last.
4. A shell block runs one logical line at a time (a trailing `\\` continues the
   line; blank and comment-only lines are dropped) with `bash -c`; a Python block
   runs as one script with /usr/bin/python3.
5. Each document gets one scratch folder, in which its blocks run in document
   order (a later block may read what an earlier one wrote). In it, build/,
   build-smpi/ name the given builds and scripts/, python/, tests/ the source
   tree's. Open MPI may run as root and oversubscribe (OMPI_ALLOW_RUN_AS_ROOT=1,
   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, OMPI_MCA_rmaps_base_oversubscribe=1 are set);
   smpirun.sh's generated platforms go to a private AVB_PLATFORM_DIR. Documents run
   --jobs at a time (default 2), each one's report printed whole when it ends.
   Each command must exit 0 (or its `exit N`) within --timeout seconds.
6. Every HDF5 file (*.h5) the commands leave in a scratch folder must carry the
   code's schema version and pass scripts/avbench check.
7. The schema version: kTraceSchemaVersion (src/trace/trace.hpp) must equal the
   version docs/trace-format.md states ("describes **schema version N**", once),
   the last row of its Versions table, avbench.KNOWN_SCHEMA_VERSIONS' newest and
   avbench check's SCHEMA_VERSION.
8. The rows' columns: the writer's tables (src/trace/columns.hpp, after the
   scale its TableSpec in trace.cpp names), the readers' and checker's (python/avbench/schema.py: TRIAL_COLUMNS, TRAINING_COLUMNS) and
   docs/trace-format.md's two row tables ("| dataset | type | unit | meaning |",
   averaging then training) name the same columns in the same order, and the
   docs the schema's types.

Prints one line per command run (file:line, seconds, status) and one per problem,
FAIL lines naming file and line; exits 1 if anything failed, else 0.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SHELL_INFO = {"sh", "bash", "shell", "console"}
MARKER = re.compile(r"^\s*<!--\s*test:(.*?)-->\s*$")
LINKED = ("scripts", "python", "tests", "bench")  # from the source tree; build dirs from the arguments


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the block's first line of code
    kind: str  # "shell", "python" or "text"
    text: str
    subs: list[tuple[str, str]] = field(default_factory=list)
    exit: int = 0
    skip: str = ""
    marker_line: int = 0
    errors: list[str] = field(default_factory=list)


def code_blocks(doc: Path) -> list[Block]:
    """Rules 1-3: the document's code blocks with their markers applied."""
    lines = doc.read_text(encoding="utf-8").split("\n")
    blocks: list[tuple[int, int, str, str]] = []  # (first line index, end index, kind, text)
    i = 0
    prev_blank = True
    while i < len(lines):
        s = lines[i]
        fence = re.match(r"^(\s*)(```+|~~~+)\s*([^`\s]*)", s)
        if fence:
            ticks, info = fence.group(2), fence.group(3).lower()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(ticks):
                j += 1
            kind = "python" if info == "python" else "shell" if info in SHELL_INFO or not info else "text"
            blocks.append((i + 1, j + 1, kind, "\n".join(lines[i + 1:j])))
            i, prev_blank = j + 1, False
            continue
        if prev_blank and s.startswith("    ") and s.strip():
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            while not lines[j - 1].strip():  # trailing blank lines are not part of it
                j -= 1
            blocks.append((i, j, "shell", "\n".join(l[4:] for l in lines[i:j])))
            i, prev_blank = j, False
            continue
        prev_blank = not s.strip()
        i += 1
    out = []
    for first, end, kind, text in blocks:
        b = Block(doc, first + 1, kind, text)
        k = end
        while k < len(lines) and not lines[k].strip():
            k += 1
        m = MARKER.match(lines[k]) if k < len(lines) else None
        if m:
            b.marker_line = k + 1
            body, _, reason = m.group(1).partition("skip:")
            b.skip = reason.strip()
            if _ and not b.skip:
                b.errors.append("marker directive skip: gives no reason")
            for d in (d.strip() for d in body.split(";")):
                if not d:
                    continue
                if d == "text":
                    b.kind = "text"
                elif re.fullmatch(r"exit \d+", d):
                    b.exit = int(d.split()[1])
                elif "->" in d:
                    old, new = (x.strip() for x in d.split("->", 1))
                    if old not in b.text:
                        b.errors.append(f"marker substitution {old!r} -> {new!r} matches nothing in the block")
                    b.subs.append((old, new))
                else:
                    b.errors.append(f"marker directive {d!r} is none of: OLD -> NEW, exit N, text, skip: REASON")
        out.append(b)
    return out


def shell_commands(b: Block) -> list[tuple[int, str]]:
    """Rule 4: (line, command) per logical line, substitutions applied."""
    text = b.text
    for old, new in b.subs:
        text = text.replace(old, new)
    cmds, cur, start = [], "", 0
    for n, line in enumerate(text.split("\n")):
        if not cur:
            start = b.line + n
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cmds.append((start, cur + line))
        cur = ""
    if cur:
        cmds.append((start, cur))
    return cmds


def scratch_for(doc: Path, args, root: Path) -> Path:
    d = root / doc.stem
    d.mkdir()
    for name in LINKED:
        (d / name).symlink_to(args.source / name)
    (d / "build").symlink_to(args.build)
    (d / "build-smpi").symlink_to(args.build_smpi)
    return d


class PerThreadOutput:
    """sys.stdout for documents run at once: a thread with a buffer writes there."""

    def __init__(self, real):
        self.real = real
        self.local = threading.local()

    def write(self, text: str) -> int:
        return (getattr(self.local, "buffer", None) or self.real).write(text)

    def flush(self) -> None:
        self.real.flush()


def run(cmd: list[str], cwd: Path, timeout: float, stdin_text: str | None = None):
    # smpirun.sh's generated platforms go beside the document's scratch folder: not
    # shared with other runs, nor with the documents run at the same time.
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", MPLBACKEND="Agg",
               AVB_PLATFORM_DIR=str(cwd.parent / f"{cwd.name}.platforms"))
    t0 = time.monotonic()
    try:
        # Its own session, so that a timeout ends the command's whole process tree.
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin_text else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        out, _ = p.communicate(stdin_text, timeout=timeout)
        status = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, _ = p.communicate()
        status = None
    return status, out, time.monotonic() - t0


def schema_problems(args) -> list[str]:
    """Rule 7."""
    src = (args.source / "src/trace/trace.hpp").read_text()
    m = re.search(r"kTraceSchemaVersion\s*=\s*(\d+)", src)
    if not m:
        return ["src/trace/trace.hpp: no kTraceSchemaVersion"]
    code = int(m.group(1))
    fmt = (args.source / "docs/trace-format.md").read_text()
    problems = []
    stated = re.findall(r"describes \*\*schema version (\d+)\*\*", fmt)
    if len(stated) != 1:
        problems.append(f"docs/trace-format.md: states the schema version {len(stated)} times "
                        f"(\"describes **schema version N**\"), expected once")
    rows = re.findall(r"^\| (\d+) \|", fmt.split("## Versions", 1)[-1], re.M)
    import avbench  # python/avbench, on PYTHONPATH (tests/CMakeLists.txt)
    import avbench.check as check_trace
    for what, v in (("docs/trace-format.md: the stated version", stated[0] if stated else None),
                    ("docs/trace-format.md: the Versions table's last row", rows[-1] if rows else None),
                    ("python/avbench: KNOWN_SCHEMA_VERSIONS' newest", avbench.KNOWN_SCHEMA_VERSIONS[-1]),
                    ("python/avbench/check.py: SCHEMA_VERSION", check_trace.SCHEMA_VERSION)):
        if v is None or int(v) != code:
            problems.append(f"{what} is {v}, the code writes {code} (kTraceSchemaVersion)")
    args.code_version = code
    return problems


def column_problems(args) -> list[str]:
    """Rule 8."""
    import avbench.schema as schema
    src = (args.source / "src/trace/columns.hpp").read_text()

    def table(name):
        body = src.split(f"{name}", 1)[1].split(";", 1)[0]
        names = re.findall(r'row_field<[^>]*>\("(\w+)"\)', body)
        return names + (table("kActivityColumns") if "kActivityColumns" in body else [])

    doc = (args.source / "docs/trace-format.md").read_text()
    doc_tables = re.findall(r"^\| dataset \| type \| unit \| meaning \|\n\|[-|]+\|\n((?:\|.*\n)+)", doc, re.M)
    problems = []
    for kind, cpp, py, doc_rows in (("averaging", "kRoundColumns", schema.TRIAL_COLUMNS, doc_tables[0:1]),
                                    ("sgd", "kTrainingColumns", schema.TRAINING_COLUMNS, doc_tables[1:2])):
        # The row's index (round, step) is the table's scale, named in trace.cpp's TableSpec.
        index = next(iter(py))
        spec = re.search(rf'"{index}", "{index}s_to_"', (args.source / "src/trace/trace.cpp").read_text())
        written = ([index] if spec else []) + table(f"{cpp} =")
        if written != list(py):
            problems.append(f"src/trace/columns.hpp {cpp} {written} != python/avbench/schema.py's {list(py)}")
        if not doc_rows:
            problems.append(f"docs/trace-format.md: no row table for {kind} (| dataset | type | unit | meaning |)")
            continue
        documented = re.findall(r"^\| `(\w+)` \| (\w+) \|", doc_rows[0], re.M)
        if documented != list(py.items()):
            problems.append(f"docs/trace-format.md's {kind} row table {documented} != "
                            f"python/avbench/schema.py's {list(py.items())}")
    return problems


def trace_problems(scratch: Path, code_version: int) -> list[str]:
    """Rule 6."""
    import h5py
    import avbench.check as check_trace
    problems = []
    for p in sorted(scratch.rglob("*.h5")):
        if any(part in LINKED or part.startswith("build") for part in p.relative_to(scratch).parts[:1]):
            continue
        with h5py.File(p, "r") as f:
            v = f.attrs.get("schema_version")
        if v != code_version:
            problems.append(f"{p.relative_to(scratch.parent)}: schema_version {v}, the code's is {code_version}")
        problems += [f"{p.relative_to(scratch.parent)}: {q}" for q in check_trace.check_file(str(p))]
    return problems


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--build", type=Path, required=True)
    ap.add_argument("--build-smpi", type=Path, required=True)
    ap.add_argument("--only", nargs="*", help="documents to run (default: README.md and docs/*.md)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command")
    ap.add_argument("--list", action="store_true", help="print the commands and markers, run nothing")
    ap.add_argument("--jobs", type=int, default=2, help="documents run at once (default 2)")
    args = ap.parse_args()
    args.source, args.build, args.build_smpi = (p.resolve() for p in (args.source, args.build, args.build_smpi))
    return args


def runnable(b, rel, failures, counts) -> bool:
    """Records block B's marker errors, and counts it when it is text or skipped;
    whether its commands are to run."""
    for e in b.errors:
        failures.append(f"{rel}:{b.marker_line}: {e}")
        print("FAIL", failures[-1])
    if b.kind == "text":
        counts["text"] += 1
        return False
    if b.skip:
        n = len(shell_commands(b)) if b.kind == "shell" else 1
        counts["skipped"] += n
        print(f"skip {rel}:{b.line}: {n} command(s): {b.skip}")
        return False
    return True


def block_jobs(b):
    """The commands of a runnable block B: (line, what to show, argv, stdin)."""
    if b.kind == "python":
        code = b.text
        for old, new in b.subs:
            code = code.replace(old, new)
        return [(b.line, "<python block>", ["/usr/bin/python3", "-"], code)]
    return [(line, c, ["bash", "-c", c], None) for line, c in shell_commands(b)]


def run_job(job, b, rel, scratch, args, failures):
    """Runs one command of block B in SCRATCH; a failure when it does not end with
    the exit code B expects."""
    line, shown, cmd, stdin_text = job
    status, out, secs = run(cmd, scratch, args.timeout, stdin_text)
    ok = status == b.exit
    print(f"{'ok  ' if ok else 'FAIL'} {rel}:{line} ({secs:.1f} s, exit "
          f"{'timeout' if status is None else status}): {shown}")
    if not ok:
        want = f"exit {b.exit}" if status is not None else f"an end within {args.timeout:g} s"
        hint = " (not a command? mark the block <!-- test: text -->)" if status in (126, 127) else ""
        failures.append(f"{rel}:{line}: expected {want}{hint}: {shown}")
        print("     | " + "\n     | ".join(out.rstrip().split("\n")[-15:]))


def run_doc(doc, args, root, failures, counts):
    """Runs (or with --list, prints) every command of DOC in one scratch folder,
    then checks the traces they left there."""
    rel = doc.relative_to(args.source)
    scratch = None
    for b in code_blocks(doc):
        if not runnable(b, rel, failures, counts):
            continue
        scratch = scratch or scratch_for(doc, args, root)
        for job in block_jobs(b):
            if args.list:
                print(f"{rel}:{job[0]}: {job[1]}" + (f"  [exit {b.exit}]" if b.exit else ""))
                continue
            counts["ran"] += 1
            run_job(job, b, rel, scratch, args, failures)
    if scratch is not None and not args.list:
        for p in trace_problems(scratch, args.code_version):
            failures.append(p)
            print("FAIL", p)


def main() -> int:
    args = parse_args()
    docs = [args.source / d for d in args.only] if args.only else \
        [args.source / "README.md", *sorted((args.source / "docs").glob("*.md"))]
    failures = schema_problems(args)
    failures += column_problems(args)
    for p in failures:
        print("FAIL", p)
    counts = {"ran": 0, "skipped": 0, "text": 0}
    t_all = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="avb-docs-"))
    # Documents are independent (rule 5): --jobs of them run at once, the longest
    # texts first, each one's lines printed together when it ends.
    sys.stdout = per_thread = PerThreadOutput(sys.stdout)

    def one(doc: Path):
        per_thread.local.buffer = io.StringIO()
        mine = dict.fromkeys(counts, 0)
        try:
            run_doc(doc, args, root, failures, mine)
        finally:
            text, per_thread.local.buffer = per_thread.local.buffer.getvalue(), None
        return text, mine

    texts = []
    try:
        order = sorted(docs, key=lambda d: -d.stat().st_size)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for text, mine in pool.map(one, order):
                texts.append(text)
                for k, v in mine.items():
                    counts[k] += v
    finally:
        sys.stdout = per_thread.real
        shutil.rmtree(root, ignore_errors=True)
    # The problems first, then each document's lines (its failing ones first):
    # a log that keeps only the head of a failed test's output (CI's) shows them.
    summary = (f"docs: {counts['ran']} commands run, {counts['skipped']} skipped, {counts['text']} blocks not "
               f"commands, {time.monotonic() - t_all:.0f} s; {len(failures)} problem(s)")
    print(summary)
    for f in failures:
        print("FAIL", f)
    for text in sorted(texts, key=lambda t: "\nFAIL" not in "\n" + t):
        sys.stdout.write(text)
    if failures:
        print(summary)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
