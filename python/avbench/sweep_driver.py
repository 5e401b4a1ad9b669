#!/usr/bin/python3
"""Runs a sweep: a table of runs, one per row (docs/sweeps.md; the format is in
python/avbench/sweep_table.py), here with a pool of jobs or on Slurm as a job array.

    avbench sweep run [--jobs N] [--engine E] [--launcher L] [--peers N] [--bin-dir D] TABLE OUT
    avbench sweep submit [--nodes N] [--ntasks-per-node K] [--time T] [--throttle M] [--engine E]
                    [--launcher srun|mpirun] [--bin-dir D] [--dry-run] TABLE OUT [-- SBATCH_FLAGS]
    avbench sweep task TABLE OUT          (inside a Slurm array task: runs row $SLURM_ARRAY_TASK_ID)
    avbench sweep table ROWS > TABLE      (rows written as column=value ... -> a table)

Row <name> writes its trace to OUT/<name>.h5 through the program's own atomic
--out. Resumable: a row whose trace is complete (python/avbench trace_state) is
skipped, one stopped early is run again with --overwrite; a file that is not a
trace stops the sweep (exit 2) rather than being overwritten. Rows run in the
folder avbench sweep was started from, so relative paths in the table (a summary or
config cell, a program or --bin-dir) mean what they mean to the caller.

`run`: holds an exclusive lock on OUT (flock on OUT/.sweep.lock, which records its
pid) while it runs: a second `run` on the same OUT is refused (exit 2). At most
--jobs rows at a time, each in its own session with its output in OUT/<name>.log;
a row that ends normally appends "<name> <seconds>" to OUT/walltime.tsv. A row
whose hidden temporary trace (OUT/.<name>.h5.tmp.<pid>) belongs to a live process,
left running by an earlier sweep killed outright, is waited for as a running row
(it takes a --jobs slot), not started again; then kept if its trace is complete,
run if not. SIGINT/SIGTERM stop the running rows, which save what they have
(complete = 0, redone next time), and the sweep exits 130/143 without starting
more (rows of an earlier sweep are left to run). Exit status: 0 when every row has
a complete trace; 1 when some failed, with one last line naming each and its log;
2 for bad arguments, a bad table or an OUT in use.

`submit`: copies TABLE to OUT/table.tsv, submits scripts/slurm/sweep.sbatch as an
array with one task per Open MPI row (logs OUT/logs/sweep_<A>_<a>.out) and another
of one-task jobs for the SMPI and sequential rows, then
scripts/slurm/aggregate.sbatch behind them (afterok), which writes OUT/aggregate.csv.
Prints array_job=<id> (once per array) and aggregate_job=<id>. Submitting again
into the same OUT reruns only what is missing or incomplete.

Engines (--engine, or a row's engine cell; default openmpi, or the launcher's) and
their launchers (--launcher, or a row's launcher cell): openmpi by mpirun (build/apps)
or srun (srun --mpi=pmix inside an allocation, build/apps); smpi by smpi
(scripts/smpirun.sh, build-smpi/apps); sequential by sequential (build/apps/PROGRAM
--engine sequential --peers N: every peer in one process, no MPI launcher).
Run with /usr/bin/python3 (h5py).
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from avbench import sweep_table  # the table format, one parser for every mode
from avbench.cli import OneLineParser
from avbench.repo import ROOT

SELF = "avbench sweep"
LOCK_NAME = ".sweep.lock"  # hidden: never taken for a trace (avbench.trace_paths)


class SweepError(Exception):
    """Bad input, as one line naming it (exit 2)."""


# --- launchers: how a row's N ranks are started ---------------------------------------------


def _env_words(var: str) -> list[str]:
    return shlex.split(os.environ.get(var, ""))


# Open MPI 4 creates its session folder under a base that every mpirun of a user on
# a node shares, and two mpiruns starting at once can race on creating (or
# removing) it (open-mpi/ompi#8510: "mkdir failed" at session_dir.c): array tasks
# on one node, or rows of `sweep run --jobs N`. So each launch has a base of its
# own in /tmp (short: a Unix socket's path is at most 107 bytes), named by the
# user, the job, this process and a count. Open MPI leaves it empty; a pool's row
# removes it when it ends (Pool.finish).
_LAUNCHES = itertools.count()
SESSION_FLAG = "orte_tmpdir_base"


def _session_base() -> str:
    job = os.environ.get("SLURM_JOB_ID")
    return f"/tmp/avb-ompi.{os.getuid()}.{job + '.' if job else ''}{os.getpid()}.{next(_LAUNCHES)}"


def _mpirun(np: int, extra: list[str]) -> list[str]:
    session = ["--mca", SESSION_FLAG, _session_base()]
    if "SLURM_JOB_ID" not in os.environ:  # here: ranks may outnumber the cores
        return ["mpirun", "-n", str(np), "--oversubscribe", *session, *_env_words("AVB_MPIRUN_ARGS"), *extra]
    # In a job, SIGTERM comes from Slurm (the time limit, scancel) to mpirun alone,
    # which passes it on and kills the ranks after odls_base_sigkill_timeout, 1 s
    # by default: too short for rank 0 to save the trace of a long run. The price:
    # a failing rank takes about twice this long to end the others.
    grace = os.environ.get("AVB_MPIRUN_SIGKILL_TIMEOUT", "30")
    if not grace.isdigit():
        raise SweepError(f"AVB_MPIRUN_SIGKILL_TIMEOUT '{grace}' must be whole seconds")
    return ["mpirun", "-n", str(np), "--mca", "odls_base_sigkill_timeout", grace, *session,
            *_env_words("AVB_MPIRUN_ARGS"), *extra]


def _srun(np: int, extra: list[str]) -> list[str]:
    # --kill-on-bad-exit: one rank that dies must end the others, which would
    # otherwise wait for it in a collective until the time limit.
    return ["srun", "--mpi=pmix", f"--ntasks={np}", "--kill-on-bad-exit=1", *_env_words("AVB_SRUN_ARGS"), *extra]


def _smpi(np: int, extra: list[str]) -> list[str]:
    return [str(ROOT / "scripts" / "smpirun.sh"), "-n", str(np), *extra]


def _alone(np: int, extra: list[str]) -> list[str]:
    return [*extra]  # the program itself: every peer in one process


@dataclass(frozen=True)
class Launcher:
    prefix: Callable[[int, list[str]], list[str]]  # (ranks, launcher flags) -> what precedes the program
    bin_dir: str  # where the programs of this engine are built, under the repository
    # A single-process engine gets the peers as flags of the program instead.
    program_args: Callable[[int], list[str]] = lambda np: []


LAUNCH = {
    "mpirun": Launcher(_mpirun, "build/apps"),
    "srun": Launcher(_srun, "build/apps"),
    "smpi": Launcher(_smpi, "build-smpi/apps"),
    "sequential": Launcher(_alone, "build/apps", lambda np: ["--engine", "sequential", "--peers", str(np)]),
}
assert set(LAUNCH) == set(sweep_table.LAUNCHERS)


@dataclass
class Settings:
    launcher: str  # for Open MPI rows without a launcher cell
    peers: int | None  # for rows without a peers cell
    bin_dir: str | None  # None: each launcher's own
    engine: str = ""  # for rows without an engine or launcher cell ("": the launcher's)


def engine_and_launcher(row: sweep_table.Row, s: Settings) -> tuple[str, str]:
    """The row's engine (its cell, its launcher's, the sweep's, the sweep launcher's)
    and the launcher that starts it (its cell, the sweep's if it starts that engine,
    else the engine's first)."""
    engine = (row.engine or sweep_table.engine_of_launcher(row.launcher) or s.engine
              or sweep_table.engine_of_launcher(s.launcher) or sweep_table.DEFAULT_ENGINE)
    launchers = sweep_table.ENGINES[engine]
    return engine, row.launcher or (s.launcher if s.launcher in launchers else launchers[0])


def single_process(row: sweep_table.Row, s: Settings) -> bool:
    """Whether the row runs in one process (SMPI, sequential), not one per peer."""
    return engine_and_launcher(row, s)[0] != "openmpi"


def program_of(row: sweep_table.Row, launcher: str, s: Settings) -> str:
    program = row.program_name
    if "/" not in program:
        program = os.path.join(s.bin_dir or ROOT / LAUNCH[launcher].bin_dir, program)
    if not os.access(program, os.X_OK):
        raise SweepError(f"row {row.index} ({row.name}): program {program} is not an executable "
                         "(build it, or pass --bin-dir)")
    return str(program)


def command_of(row: sweep_table.Row, s: Settings, trace: Path, overwrite: bool) -> list[str]:
    """The whole command line that runs `row` into `trace`."""
    launcher = engine_and_launcher(row, s)[1]
    np = row.peers or s.peers
    if np is None:
        raise SweepError(f"row {row.index} ({row.name}): no peers cell and no --peers")
    entry = LAUNCH[launcher]
    return [*entry.prefix(np, row.launcher_args), program_of(row, launcher, s), *entry.program_args(np),
            *row.args, f"--out={trace}", *(["--overwrite"] if overwrite else [])]


# --- traces ------------------------------------------------------------------------------------


def trace_state(path: Path) -> str:
    """missing, complete or incomplete; SweepError when the file is not a trace."""
    if not path.exists():
        return "missing"
    try:
        import avbench  # here: h5py and pandas only once a trace exists
        return avbench.trace_state(path)
    except (ImportError, ValueError, OSError) as e:
        raise SweepError(f"cannot tell whether {path} is complete ({e}); move it away or fix PYTHON") from None


def lock_folder(out: Path):
    """An exclusive lock on OUT for this `run`, held by the open file returned until
    this process ends, however it ends: flock locks go with the open file, so a
    kill -9 frees it and a resume can start. The rows never hold it: Python opens
    files non-inheritable and Popen closes the others. SweepError naming the folder
    (and the pid that holds it, which the holder writes in the file) when taken."""
    fh = open(out / LOCK_NAME, "a+", encoding="utf-8")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip()
        fh.close()
        by = f"pid {holder}" if holder.isdigit() else "a process that has not written its pid yet"
        raise SweepError(f"OUT {out} is in use by another '{SELF} run' ({by}): wait for it to end, "
                         "or stop it and run again to resume") from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def _writing(pid: int, trace: Path) -> bool:
    """Whether process `pid` is alive and is the run writing `trace`: its command line
    names the trace, so that a pid reused by another program does not count."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        pass
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc: alive is all we can tell
        return True
    return trace.name.encode() in cmdline  # a zombie's is empty


def live_writer(trace: Path) -> int | None:
    """The pid of a live process writing `trace` under its hidden temporary name
    (.<name>.tmp.<pid>, docs/trace-format.md), e.g. a row of a sweep killed with
    SIGKILL, whose rows run on in their own sessions; None when there is none."""
    prefix = f".{trace.name}.tmp."
    for entry in os.listdir(trace.parent):
        pid = entry[len(prefix):]
        if entry.startswith(prefix) and pid.isdigit() and _writing(int(pid), trace):
            return int(pid)
    return None


def todo_of(table: sweep_table.Table, out: Path) -> tuple[list[tuple[sweep_table.Row, bool]],
                                                          list[tuple[sweep_table.Row, int]]]:
    """The rows still to run, each with whether its (incomplete) trace is replaced,
    and the rows a live process still runs, each with its pid."""
    todo, live = [], []
    for row in table.rows:
        trace = out / f"{row.name}.h5"
        state = trace_state(trace)
        pid = None if state == "complete" else live_writer(trace)
        if state == "complete":
            print(f"skip  {row.name} (trace complete)", flush=True)
        elif pid is not None:
            print(f"wait  {row.name} (pid {pid} still runs it, started by an earlier sweep)", flush=True)
            live.append((row, pid))
        elif state == "incomplete":
            print(f"redo  {row.name} (trace stopped early)", flush=True)
        if state != "complete" and pid is None:
            todo.append((row, state == "incomplete"))
    return todo, live


def log_walltime(out: Path, name: str, seconds: float) -> None:
    # Array tasks and pools may share the folder, possibly over NFS: take a lock.
    with open(out / "walltime.tsv", "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if fh.tell() == 0:
            fh.write("cell\tseconds\n")
        fh.write(f"{name}\t{seconds:.1f}\n")


# --- the local pool ----------------------------------------------------------------------------


@dataclass
class Cell:
    row: sweep_table.Row
    proc: subprocess.Popen | None  # None: a row an earlier sweep started, run by process `pid`
    start: float
    pid: int = 0
    session: str = ""  # mpirun's session base (_session_base), removed when the row ends

    def ended(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is not None
        return not _writing(self.pid, Path(f"{self.row.name}.h5"))


class Pool:
    """At most `jobs` rows at a time; stops cleanly on SIGINT/SIGTERM."""

    def __init__(self, out: Path, settings: Settings, jobs: int):
        self.out, self.settings, self.jobs = out, settings, jobs
        self.running: list[Cell] = []
        self.failed: list[str] = []
        self.started = 0  # rows this sweep started
        self.adopted = 0  # rows an earlier sweep's process completed while this one waited
        self.stop = 0
        signal.signal(signal.SIGTERM, lambda *_: self._request(143))
        signal.signal(signal.SIGINT, lambda *_: self._request(130))

    def _request(self, code: int) -> None:
        self.stop = self.stop or code

    def start(self, row: sweep_table.Row, overwrite: bool) -> None:
        trace = self.out / f"{row.name}.h5"
        cmd = command_of(row, self.settings, trace, overwrite)
        print(f"start {row.name}: {shlex.join(cmd)}", flush=True)
        with open(self.out / f"{row.name}.log", "w", encoding="utf-8") as log:
            # Its own session, so that a stop request reaches the whole row (the
            # launcher and the ranks under it) and we can wait for all of it.
            # In the caller's folder (no cwd=): a relative path in a cell is the caller's.
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        session = cmd[cmd.index(SESSION_FLAG) + 1] if SESSION_FLAG in cmd else ""
        self.running.append(Cell(row, proc, time.monotonic(), session=session))
        self.started += 1

    def finish_earlier(self, cell: Cell, queue: list) -> None:
        """A row an earlier sweep started has ended: kept when its trace is complete,
        queued to run (again) when not. Its log and wall time were that sweep's."""
        self.running.remove(cell)
        name = cell.row.name
        if self._complete(name):
            print(f"done  {name} (by pid {cell.pid}, started by an earlier sweep)", flush=True)
            self.adopted += 1
            return
        state = trace_state(self.out / f"{name}.h5")
        print(f"redo  {name} (pid {cell.pid} ended without a complete trace)", flush=True)
        queue.append((cell.row, state == "incomplete"))

    def finish(self, cell: Cell) -> None:
        rc = cell.proc.wait()
        name, seconds = cell.row.name, time.monotonic() - cell.start
        log = self.out / f"{name}.log"
        self.running.remove(cell)
        if cell.session:
            try:
                os.rmdir(cell.session)  # empty, unless mpirun was killed before it cleaned up
            except OSError:
                pass
        if rc == 0 and self._complete(name):
            log_walltime(self.out, name, seconds)
            print(f"done  {name} in {seconds:.1f} s", flush=True)
        elif self.stop:
            print(f"stop  {name} after {seconds:.1f} s (exit {rc}; trace kept with complete=0, redone next time)",
                  flush=True)
        else:
            why = f"exit {rc}" if rc else "exit 0 without a complete trace"
            self.failed.append(f"{name} ({why}; log {log})")
            print(f"FAIL  {name} ({why}; see {log})", file=sys.stderr, flush=True)

    def _complete(self, name: str) -> bool:
        try:
            return trace_state(self.out / f"{name}.h5") == "complete"
        except SweepError:  # a failure of this row, not a reason to abandon the others
            return False

    def run(self, todo: list[tuple[sweep_table.Row, bool]], live: list[tuple[sweep_table.Row, int]]) -> None:
        """Runs `todo`; the `live` rows, run by an earlier sweep's processes, count as
        running (each takes a --jobs slot) until their process ends."""
        queue = list(todo)
        self.running += [Cell(row, None, time.monotonic(), pid) for row, pid in live]
        while not self.stop and (queue or self.running):
            while not self.stop and queue and len(self.running) < self.jobs:
                self.start(*queue.pop(0))
            time.sleep(0.2)  # a signal cuts it short
            for cell in [c for c in self.running if c.ended()]:
                if cell.proc is None:
                    self.finish_earlier(cell, queue)
                else:
                    self.finish(cell)
        if self.stop:
            self.halt()

    def halt(self) -> None:
        """Stops the running rows and waits until the last process of each is gone:
        smpirun, for one, exits at once while the simulator still saves. Rows of an
        earlier sweep are not this one's to stop: they are left running, and named."""
        earlier = [c for c in self.running if c.proc is None]
        self.running = [c for c in self.running if c.proc is not None]
        print(f"{SELF}: stopping {len(self.running)} running cell(s)", file=sys.stderr, flush=True)
        if earlier:
            print(f"{SELF}: left running, started by an earlier sweep: "
                  f"{', '.join(f'{c.row.name} (pid {c.pid})' for c in earlier)}", file=sys.stderr, flush=True)
        for c in self.running:
            _signal_group(c.proc.pid, signal.SIGTERM)
        for c in list(self.running):
            # The leader reaped first: as a zombie it would keep the group alive.
            while c.proc.poll() is None or _signal_group(c.proc.pid, 0):
                time.sleep(0.2)
            self.finish(c)


def _signal_group(pgid: int, sig: int) -> bool:
    """Sends `sig` to a process group; False when none of it is left."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


def cmd_run(a: argparse.Namespace) -> int:
    table = sweep_table.parse(a.table)
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with lock_folder(out):  # held until the last row is done or stopped
        settings = Settings(a.launcher, a.peers, a.bin_dir, a.engine or "")
        todo, live = todo_of(table, out)
        for row, overwrite in todo:  # bad rows before anything starts
            command_of(row, settings, out / f"{row.name}.h5", overwrite)
        started = time.monotonic()
        pool = Pool(out, settings, a.jobs)
        pool.run(todo, live)
    if pool.stop:
        return pool.stop
    rows = len(todo) + len(live)
    if pool.failed:
        print(f"{SELF}: {len(pool.failed)} of {rows} cell(s) failed: {', '.join(pool.failed)}",
              file=sys.stderr, flush=True)
        return 1
    earlier = f", {pool.adopted} finished by an earlier sweep" if pool.adopted else ""
    print(f"{SELF}: {pool.started} cell(s) run in {time.monotonic() - started:.0f} s{earlier}, "
          f"{len(table.rows) - rows} skipped; traces in {out}", flush=True)
    return 0


# --- Slurm -------------------------------------------------------------------------------------


def job_size(a: argparse.Namespace, rows: list[sweep_table.Row]) -> list[str]:
    """--nodes and --ntasks-per-node of every array task of Open MPI rows: as given,
    or the rows' largest peers spread over the nodes. Always both: sweep.sbatch sets
    a default --ntasks-per-node, which would otherwise still apply beside an --ntasks."""
    if a.ntasks_per_node:
        return [f"--nodes={a.nodes}", f"--ntasks-per-node={a.ntasks_per_node}"]
    peers = [r.peers for r in rows if r.peers is not None]
    if not peers:
        raise SweepError("--ntasks-per-node missing: the table has no peers column to size the jobs by")
    if max(peers) < a.nodes:
        raise SweepError(f"--nodes {a.nodes} is more than the table's largest peers ({max(peers)})")
    return [f"--nodes={a.nodes}", f"--ntasks-per-node={-(-max(peers) // a.nodes)}"]


def _sbatch(cmd: list[str], what: str) -> str:
    """Submits; the job id (--parsable prints "<id>" or "<id>;<cluster>")."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(what)
    return done.stdout.strip().split(";")[0]


def check_programs(a: argparse.Namespace, table: sweep_table.Table, s: Settings) -> None:
    """Every engine the table uses by program name has its programs built (or --bin-dir has them)."""
    for launcher in dict.fromkeys(engine_and_launcher(r, s)[1] for r in table.rows if "/" not in r.program_name):
        bin_dir = Path(a.bin_dir or ROOT / LAUNCH[launcher].bin_dir)
        if not any(os.access(bin_dir / p, os.X_OK) for p in sweep_table.PROGRAMS):
            raise SweepError(f"{'--bin-dir ' if a.bin_dir else ''}{bin_dir} holds neither averaging_bench nor "
                             f"sgd_bench, which the {launcher} rows need (build them, or pass --bin-dir)")


def arrays_of(a: argparse.Namespace, table: sweep_table.Table, s: Settings) -> list[tuple[list[int], list[str]]]:
    """(row indices, job size) per array: Open MPI rows on the ranks they need, SMPI
    and sequential rows (one process whatever the peers) on one task each."""
    single = [r for r in table.rows if single_process(r, s)]
    multi = [r for r in table.rows if not single_process(r, s)]
    for r in single:
        if r.peers is None and s.peers is None:
            raise SweepError(f"row {r.index} ({r.name}): engine {engine_and_launcher(r, s)[0]} runs every peer in "
                             "one task, so the row needs a peers cell")
    arrays = [([r.index for r in multi], job_size(a, multi))] if multi else []
    return arrays + ([([r.index for r in single], ["--nodes=1", "--ntasks-per-node=1"])] if single else [])


def _ranges(indices: list[int]) -> str:
    """Sorted row indices as an --array list: [0, 1, 2, 5] -> "0-2,5"."""
    spans: list[list[int]] = []
    for i in indices:
        if spans and spans[-1][1] == i - 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ",".join(f"{lo}-{hi}" if hi > lo else f"{lo}" for lo, hi in spans)


def cmd_submit(a: argparse.Namespace) -> int:
    table = sweep_table.parse(a.table)
    settings = Settings(a.launcher, None, a.bin_dir, a.engine or "")
    check_programs(a, table, settings)
    arrays = arrays_of(a, table, settings)
    out = Path(os.path.abspath(a.out))  # absolute: the jobs may not start where we are
    copy = out / "table.tsv"
    if copy.exists() and copy.read_bytes() != Path(a.table).read_bytes():
        raise SweepError(f"OUT {out} already holds a different sweep ({copy}): choose another OUT")
    throttle = f"%{a.throttle}" if a.throttle else ""
    sweep_cmds = [["sbatch", "--parsable", f"--array={_ranges(rows)}{throttle}", *size, f"--time={a.time}",
                   f"--output={out}/logs/sweep_%A_%a.out", *a.sbatch, str(ROOT / "scripts/slurm/sweep.sbatch"), str(copy),
                   str(out)] for rows, size in arrays]
    # afterok on an array waits for all its tasks; --kill-on-invalid-dep cancels the
    # aggregation when one fails, instead of leaving it pending forever.
    agg_cmd = ["sbatch", "--parsable", "--kill-on-invalid-dep=yes", f"--output={out}/logs/aggregate_%j.out",
               *a.sbatch, str(ROOT / "scripts/slurm/aggregate.sbatch"), str(copy), str(out)]
    if a.dry_run:  # nothing created, nothing submitted
        for cmd in sweep_cmds:
            print(shlex.join(cmd))
        print(shlex.join(agg_cmd[:2] + ["--dependency=afterok:<array jobs>"] + agg_cmd[2:]))
        return 0
    (out / "logs").mkdir(parents=True, exist_ok=True)
    if not copy.exists():
        copy.write_bytes(Path(a.table).read_bytes())
    os.environ.update(AVB_ROOT=str(ROOT), AVB_LAUNCHER=a.launcher, AVB_ENGINE=a.engine or "")
    if a.bin_dir:
        os.environ["AVB_BIN_DIR"] = str(Path(a.bin_dir).resolve())
    else:  # each engine's own folder (avbench sweep task)
        os.environ.pop("AVB_BIN_DIR", None)
    return _submit_all(sweep_cmds, agg_cmd, len(table.rows), copy, out)


def _submit_all(sweep_cmds: list[list[str]], agg_cmd: list[str], rows: int, copy: Path, out: Path) -> int:
    ids = []
    try:
        for cmd in sweep_cmds:
            ids.append(_sbatch(cmd, "sbatch refused the array job" + (f" (array job(s) {', '.join(ids)} queued)" if ids else "")))
        agg_id = _sbatch(agg_cmd[:2] + [f"--dependency=afterok:{':'.join(ids)}"] + agg_cmd[2:],
                         f"array job(s) {', '.join(ids)} queued, but sbatch refused the aggregation job: run "
                         f"scripts/slurm/aggregate.sbatch {copy} {out} once they are done")
    except RuntimeError as e:
        print(f"{SELF}: {e}", file=sys.stderr)
        return 1
    print(f"{SELF}: {rows} row(s) as array job(s) {', '.join(ids)} (logs {out}/logs/sweep_<array>_<row>.out), "
          f"then aggregation job {agg_id} -> {out}/aggregate.csv", file=sys.stderr)
    print("".join(f"array_job={i}\n" for i in ids) + f"aggregate_job={agg_id}")
    return 0


def cmd_task(a: argparse.Namespace) -> int:
    """One array task: row $SLURM_ARRAY_TASK_ID, on the allocation's tasks; the
    launcher replaces this process, so Slurm's signals reach it directly."""
    i, ntasks = os.environ.get("SLURM_ARRAY_TASK_ID", ""), os.environ.get("SLURM_NTASKS", "")
    if not i.isdigit():
        raise SweepError("not an array task: submit with --array=0-<rows-1> (or use avbench sweep submit)")
    table = sweep_table.parse(a.table)
    if int(i) >= len(table.rows):
        raise SweepError(f"task {i}, but {table.path} has rows 0-{len(table.rows) - 1}")
    row = table.rows[int(i)]
    settings = Settings(os.environ.get("AVB_LAUNCHER", "srun"), int(ntasks) if ntasks.isdigit() else None,
                        os.environ.get("AVB_BIN_DIR"), os.environ.get("AVB_ENGINE", ""))
    if settings.launcher not in LAUNCH:
        raise SweepError(f"AVB_LAUNCHER '{settings.launcher}' must be one of {', '.join(LAUNCH)}")
    if settings.engine and settings.engine not in sweep_table.ENGINES:
        raise SweepError(f"AVB_ENGINE '{settings.engine}' must be one of {', '.join(sweep_table.ENGINES)}")
    engine = engine_and_launcher(row, settings)[0]
    if single_process(row, settings):
        settings.peers = None  # one task simulates them all: the row's peers cell says how many
    elif row.peers is not None and ntasks.isdigit() and row.peers > int(ntasks):
        raise SweepError(f"peers={row.peers}, but the job has only {ntasks} tasks "
                         "(sbatch --ntasks, or --nodes x --ntasks-per-node)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    trace = out / f"{row.name}.h5"
    print(f"{SELF}: task {i} of array job {os.environ.get('SLURM_ARRAY_JOB_ID', '?')} on "
          f"{os.environ.get('SLURM_JOB_NODELIST', '?')} ({ntasks or '?'} task(s)): row '{row.name}', "
          f"engine {engine}", flush=True)
    state = trace_state(trace)
    if state == "complete":
        print(f"{SELF}: {trace} is already complete: nothing to do", flush=True)
        return 0
    if state == "incomplete":
        print(f"{SELF}: {trace} exists but is not complete: running the row again", flush=True)
    cmd = command_of(row, settings, trace, state == "incomplete")
    print(f"{SELF}: {shlex.join(cmd)}", flush=True)
    os.execvp(cmd[0], cmd)


# --- the command line ----------------------------------------------------------------------------



def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be a whole number >= 1")
    return int(text)


def _slurm_time(text: str) -> str:
    if not text or text.strip("0123456789:-"):
        raise argparse.ArgumentTypeError(f"'{text}' must be a Slurm time such as 00:30:00 or 1-00:00:00")
    return text


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=SELF, description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = sub.add_parser("run", help="run the table here, --jobs rows at a time")
    run.add_argument("--jobs", type=_count, default=1, help="rows run at the same time (default 1)")
    run.add_argument("--engine", choices=list(sweep_table.ENGINES),
                     help="for rows without an engine or launcher cell (default: the launcher's)")
    run.add_argument("--launcher", choices=sorted(LAUNCH), default="mpirun",
                     help="for rows without a launcher cell (default mpirun)")
    run.add_argument("--peers", type=_count, help="ranks for rows without a peers cell")
    run.add_argument("--bin-dir", help="where the programs are (default: build/apps, build-smpi/apps for smpi)")
    submit = sub.add_parser("submit", help="submit the table to Slurm as a job array, then its aggregation")
    submit.add_argument("--nodes", type=_count, default=1, help="nodes per task (default 1)")
    submit.add_argument("--ntasks-per-node", type=_count, help="ranks per node (default: the largest peers / nodes)")
    submit.add_argument("--time", type=_slurm_time, default="01:00:00", help="limit per task (default 01:00:00)")
    submit.add_argument("--throttle", type=_count, help="at most M tasks at once")
    submit.add_argument("--engine", choices=list(sweep_table.ENGINES), default=os.environ.get("AVB_ENGINE") or None,
                        help="for rows without an engine or launcher cell (default openmpi)")
    submit.add_argument("--launcher", choices=list(sweep_table.ENGINES["openmpi"]),
                        default=os.environ.get("AVB_LAUNCHER", "srun"),
                        help="for Open MPI rows without a launcher cell (default srun)")
    submit.add_argument("--bin-dir", default=os.environ.get("AVB_BIN_DIR"),
                        help="default: build/apps, build-smpi/apps for smpi rows")
    submit.add_argument("--dry-run", action="store_true", help="print the two sbatch commands only")
    sub.add_parser("task", help="inside an array task: run row $SLURM_ARRAY_TASK_ID")
    for s in sub.choices.values():
        s.add_argument("table", metavar="TABLE")
        s.add_argument("out", metavar="OUT")
    sub.add_parser("table", help="write a table from rows given as column=value ...").add_argument(
        "rows", metavar="ROWS", help="one row a line; '-': standard input")
    return p


def cmd_table(a: argparse.Namespace) -> int:
    try:
        lines = (sys.stdin if a.rows == "-" else open(a.rows, encoding="utf-8")).read().splitlines()
    except OSError as e:
        raise SweepError(f"ROWS {a.rows}: {e.strerror}") from None
    sys.stdout.write(sweep_table.from_pairs(lines))
    return 0


def main(argv: list[str]) -> int:
    sbatch = argv[argv.index("--") + 1:] if "--" in argv else []
    a = parser().parse_args(argv[:len(argv) - len(sbatch) - (1 if "--" in argv else 0)])
    a.sbatch = sbatch
    try:
        return {"run": cmd_run, "submit": cmd_submit, "task": cmd_task, "table": cmd_table}[a.command](a)
    except (SweepError, sweep_table.TableError) as e:
        print(f"{SELF}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
