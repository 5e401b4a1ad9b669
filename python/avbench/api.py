"""Runs from Python: a run of averaging_bench or sgd_bench as a function call that
returns the run's xarray Dataset (the one load_trace(as_xarray=True) gives for
its trace), and a sweep as a loop over a grid.

    import avbench
    ds = avbench.run(protocol="moshpit", peers=1024, fail_rate=0.01, trials=20, out="moshpit.h5")
    runs = avbench.sweep({"protocol": ["allreduce", "moshpit"], "fail_rate": [0.0, 0.01]}, peers=256,
                         out="results/{protocol}_p{fail_rate}.h5")

Options are the programs' flags with `_` for `-` (fail_rate=0.01 is --fail-rate
0.01); True turns a switch on, False leaves it off, a list gives a flag several
values (target=[1e-4, 1e-9]). `engine` picks the engine: "sequential" (the
default: every peer in this Python process, through the module avbench._engine
of the checkout's build, with the GIL released while it runs), "smpi"
(scripts/smpirun.sh -n N on the SMPI build) or "openmpi" (mpirun -n N). The
programs (and build/python/_engine*.so) are those of the checkout (avbench/repo.py)
unless `bin_dir` (or the environment's AVB_BIN_DIR, AVB_SMPI_BIN_DIR for SMPI)
names the folder of others; in_process=False runs the sequential engine as a
program too. In-process, a progress bar shows while the run lasts (tqdm; off
with progress=False), the program's warnings are Python warnings (RunWarning),
print_table=True prints its table, and Ctrl-C stops the run after its round,
closes its trace (complete = 0) and raises KeyboardInterrupt. A run that fails
raises RunError with the program's own error line; the trace is written to `out`,
or to a temporary file that is removed once read.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from avbench.repo import ROOT
from avbench.sweep_driver import LAUNCH
from avbench.sweep_table import ENGINES


class RunError(RuntimeError):
    """A run that ended with a non-zero exit; the message is the program's error line."""


class RunWarning(UserWarning):
    """A program's warning line, from a run in this process."""


def flags(options: dict) -> list[str]:
    """The command-line flags of keyword options (fail_rate=0.01 -> --fail-rate 0.01)."""
    out = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            out += [flag, *map(str, value)]
        else:
            out += [flag, str(value)]
    return out


def command(program: str, engine: str, peers: int, options: dict, bin_dir=None) -> list[str]:
    """The command that runs `program` on `peers` peers of `engine` with `options`."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not one of {', '.join(ENGINES)}")
    launch = LAUNCH[ENGINES[engine][0]]  # the sweep driver's launcher of the engine (mpirun for openmpi)
    bin_dir = bin_dir or os.environ.get("AVB_SMPI_BIN_DIR" if engine == "smpi" else "AVB_BIN_DIR")
    binary = str(Path(bin_dir) / program if bin_dir else ROOT / launch.bin_dir / program)
    return [*launch.prefix(peers, []), binary, *launch.program_args(peers), *flags(options)]


def run(program: str = "averaging_bench", *, peers: int, engine: str = "sequential", out=None, bin_dir=None,
        in_process: bool = True, progress: bool = True, print_table: bool = False, **options):
    """Runs `program` and returns its trace as load_trace(as_xarray=True) reads it."""
    from avbench.traces import load_trace
    if program not in ("averaging_bench", "sgd_bench"):
        raise ValueError(f"program {program!r} is not averaging_bench or sgd_bench")
    with tempfile.TemporaryDirectory(prefix="avbench-run-") as tmp:
        trace = Path(out) if out is not None else Path(tmp) / "run.h5"
        if out is not None:
            trace.parent.mkdir(parents=True, exist_ok=True)
        options = {**options, "out": str(trace), "overwrite": True}
        if engine == "sequential" and in_process:
            run_in_process(program, peers, options, bin_dir, progress, print_table)
        else:
            run_program(program, engine, peers, options, bin_dir)
        return load_trace(str(trace), as_xarray=True).load()


def run_program(program: str, engine: str, peers: int, options: dict, bin_dir=None) -> None:
    """Runs `program` as a process; RunError with its error line when it fails."""
    done = subprocess.run(command(program, engine, peers, {**options, "quiet": True}, bin_dir), capture_output=True,
                          text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
        raise RunError(lines[-1] if lines else f"{program} exited {done.returncode}")


_ENGINES = {}  # the folder of an _engine module -> the module, imported once


def engine_module(bin_dir=None):
    """avbench._engine of the build whose programs are in `bin_dir` (its python/ folder)."""
    bin_dir = bin_dir or os.environ.get("AVB_BIN_DIR")
    folder = (Path(bin_dir).parent if bin_dir else ROOT / "build") / "python"
    if folder not in _ENGINES:
        found = sorted(folder.glob("_engine*.so"))
        if not found:
            raise RunError(f"avbench._engine is not built in {folder}: build the checkout (cmake --build build), "
                           "or pass in_process=False to start the program instead")
        spec = importlib.util.spec_from_file_location("avbench._engine", found[0])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _ENGINES[folder] = module
    return _ENGINES[folder]


def run_in_process(program: str, peers: int, options: dict, bin_dir=None, progress=True, print_table=False):
    """Runs `program` on the sequential engine in this process (avbench._engine)."""
    module = engine_module(bin_dir)
    # Never --quiet: it would drop the table's rows (print_table); the host's progress is cheap either way.
    args = ["--engine", "sequential", "--peers", str(peers), *flags(options)]
    bar = ProgressBar(program) if progress else None
    try:
        code, lines, table = module.run(program, args, bar.show if bar else None)
    finally:
        if bar:
            bar.close()
    for kind, line in lines:
        if kind == "warning":
            warnings.warn(f"{program}: {line}", RunWarning, stacklevel=3)
    if print_table:
        sys.stdout.write(table)
    if code != 0:
        errors = [line for kind, line in lines if kind == "error"]
        raise RunError(f"{program}: error: {errors[-1]}" if errors else f"{program} exited {code}")


class ProgressBar:
    """A tqdm bar over a run's share of work done: the notebook's widget in Jupyter
    when ipywidgets is installed, else a text bar on stderr (which Jupyter shows
    too); nothing without tqdm. (Debian's python3-ipywidgets 6 and nbclient 0.7
    disagree on the widget's messages: a notebook run headless by nbconvert fails,
    hence not in scripts/install-deps.sh.)"""

    def __init__(self, program: str):
        self.bar = None
        try:
            from tqdm import std
            from tqdm.auto import tqdm
        except ImportError:
            return
        shape = dict(total=1000, desc=program, leave=False,
                     bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}{postfix}")
        try:
            self.bar = tqdm(**shape)
        except ImportError:  # Jupyter without ipywidgets: the notebook's bar cannot be drawn
            self.bar = std.tqdm(**shape)

    def show(self, done: float, detail: str) -> None:
        if self.bar is not None:
            self.bar.update(max(0, round(1000 * done) - self.bar.n))
            self.bar.set_postfix_str(detail, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def grid_points(grid: dict) -> list[dict]:
    """Every combination of the grid's values, in the order the grid lists them."""
    names = list(grid)
    values = [v if isinstance(v, (list, tuple)) else [v] for v in grid.values()]
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def sweep(grid: dict, *, out: str | None = None, **common) -> list[tuple[dict, object]]:
    """run() at every point of `grid` (name -> list of values) with the `common`
    options: a list of (point, Dataset). `out` is a file name pattern formatted with
    each point (out="results/{protocol}.h5"), which keeps the traces."""
    results = []
    for point in grid_points(grid):
        path = out.format(**point) if out is not None else None
        if path is not None:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        results.append((point, run(**common, **point, out=path)))
    return results
