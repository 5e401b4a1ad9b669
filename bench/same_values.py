#!/usr/bin/python3
"""Whether a change kept every value: the same small runs on two builds, every
dataset of their traces compared byte for byte (issue 30's "values unchanged").

    same_values.py --before BUILD --after BUILD --out DIR

The runs are generated from the after build's catalog (--list-protocols,
--list-flags), never typed: averaging_bench on the sequential engine for every
protocol x failure semantics x failure kind (but trace, which needs a file),
on a cloud platform, once with --model-dim where the protocol takes it (so that
the time model's shared links matter) and once with a quantizer where it takes
one; and
sgd_bench for every protocol under transient failures. A run refused on both
sides with the same message counts as the same. Prints one line per differing
run and a last line "SAME n runs" or "DIFFERENT k of n runs" (with how many
were refused alike); exit 0, 1 on a
difference, 2 on bad input.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

CELL = ["--engine", "sequential", "--peers", "24", "--trials", "2", "--seed", "7", "--threads", "2", "--quiet"]
AVERAGING = ["--dim", "3", "--rounds", "6", "--fail-rate", "0.1", "--platform", "cloud"]
TRAINING = ["--objective", "logistic", "--steps", "20", "--fail-rate", "0.05"]


def table(build: Path, flag: str) -> list[list[str]]:
    out = subprocess.run([str(build / "apps" / "averaging_bench"), flag], capture_output=True, text=True, check=True)
    return [line.split("\t") for line in out.stdout.splitlines() if line and not line.startswith("#")]


def runs(build: Path):
    """(name, program, flags) of every run, from the catalog."""
    kinds = next(row[2] for row in table(build, "--list-flags") if row[0] == "--failure").split("|")
    for name, _, _, semantics, flags, _ in table(build, "--list-protocols"):
        takes = flags.split(",")
        # --model-dim charges unencoded messages only; the quantized run goes without it.
        quantized = [["--model-dim", "1000"] if "--model-dim" in takes else []] + (
            [["--quantizer", "uniform8"]] if "--quantizer" in takes else [])
        for on_failure in semantics.split(","):
            for kind in (k for k in kinds if k != "trace"):
                for q in quantized:
                    tag = "-".join([name, on_failure, kind, *(q[:1] and [q[0].lstrip("-")])])
                    yield tag, "averaging_bench", ["--protocol", name, "--on-failure", on_failure, "--failure", kind,
                                                   *AVERAGING, *q]
        yield f"sgd-{name}", "sgd_bench", ["--protocol", name, *TRAINING]


def run(build: Path, program: str, flags: list[str], trace: Path) -> tuple[int, str]:
    done = subprocess.run([str(build / "apps" / program), *CELL, *flags, "--out", str(trace), "--overwrite"],
                          capture_output=True, text=True)
    return done.returncode, done.stderr.strip().splitlines()[-1] if done.returncode else ""


def datasets(path: Path) -> dict[str, bytes]:
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, np.asarray(o[()]).tobytes())
                     if isinstance(o, h5py.Dataset) else None)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, type=Path, help="build directory of the code before the change")
    p.add_argument("--after", required=True, type=Path, help="build directory of the code after it")
    p.add_argument("--out", required=True, type=Path, help="folder for the traces")
    args = p.parse_args(argv)
    for build in (args.before, args.after):
        if not (build / "apps" / "averaging_bench").is_file():
            p.error(f"argument --before/--after: {build} holds no apps/averaging_bench")
    args.out.mkdir(parents=True, exist_ok=True)
    total = differing = refused = 0
    for tag, program, flags in runs(args.after):
        total += 1
        traces = [args.out / f"{tag}.{side}.h5" for side in ("before", "after")]
        results = [run(build, program, flags, t) for build, t in zip((args.before, args.after), traces)]
        if results[0] != results[1]:
            why = f"exit {results[0][0]} against {results[1][0]}: {results[0][1] or results[1][1]}"
        elif results[0][0] != 0:
            refused += 1  # refused alike
            continue
        else:
            before, after = (datasets(t) for t in traces)
            names = sorted(set(before) | set(after))
            why = next((f"/{n} differs" for n in names if before.get(n) != after.get(n)), None)
        if why:
            differing += 1
            print(f"{tag}: {why}", flush=True)
    print(f"DIFFERENT {differing} of {total} runs" if differing else f"SAME {total} runs",
          f"({refused} refused alike)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
