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
default: every peer in one process, `--engine sequential --peers N`), "smpi"
(scripts/smpirun.sh -n N on the SMPI build) or "openmpi" (mpirun -n N). The
programs are those of the checkout (avbench/repo.py: build/apps, build-smpi/apps)
unless `bin_dir` (or the environment's AVB_BIN_DIR, AVB_SMPI_BIN_DIR for SMPI)
names others. A run that fails raises RunError with the
program's own error line; the trace is written to `out`, or to a temporary file
that is removed once read.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
from pathlib import Path

from avbench.repo import ROOT
from avbench.sweep_driver import LAUNCH
from avbench.sweep_table import ENGINES


class RunError(RuntimeError):
    """A run that ended with a non-zero exit; the message is the program's error line."""


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
        **options):
    """Runs `program` and returns its trace as load_trace(as_xarray=True) reads it."""
    from avbench.traces import load_trace
    if program not in ("averaging_bench", "sgd_bench"):
        raise ValueError(f"program {program!r} is not averaging_bench or sgd_bench")
    with tempfile.TemporaryDirectory(prefix="avbench-run-") as tmp:
        trace = Path(out) if out is not None else Path(tmp) / "run.h5"
        if out is not None:
            trace.parent.mkdir(parents=True, exist_ok=True)
        cmd = command(program, engine, peers, {**options, "out": str(trace), "overwrite": True, "quiet": True},
                      bin_dir)
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
            raise RunError(lines[-1] if lines else f"{program} exited {done.returncode}")
        return load_trace(str(trace), as_xarray=True).load()


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
