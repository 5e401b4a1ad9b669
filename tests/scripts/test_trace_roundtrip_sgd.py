#!/usr/bin/python3
"""Read back the sample training trace written by the C++ writer and compare every value.

    AVB_TRACE_SAMPLE_SGD=sample_sgd.h5 unit_tests --gtest_filter=TraceSample.WriteTraining
    /usr/bin/python3 test_trace_roundtrip_sgd.py sample_sgd.h5

The expected values below are those of TEST(TraceSample, WriteTraining) in
tests/unit/test_trace.cpp; keep the two in sync. They are exact in binary, so
floats are compared exactly (NaN matching NaN: the sample is a quadratic run,
whose accuracy column is NaN). Types are part of the comparison: strings must
come back as str, attributes as the numpy scalar of their stored type.
avbench check separately checks that the file obeys the schema.
"""

import math
import sys

import h5py
import numpy as np
from avbench.trials import all_trial_columns

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from a test run
from sample_readback import (check_attrs, check_columns, check_config, check_root, check_trials,  # noqa: E402
                             expected_trial, from_trials, reach_names, run_on_file, sample_root, verdict)

NAN = float("nan")

ROOT = sample_root("sgd_bench --objective quadratic --protocol moshpit --steps 8 --local-steps 4 --eval-every 2",
                   "openmpi", "Open MPI v4.1.4 (sample)", 4, "sgd")

CONFIG = {
    "objective": "quadratic",
    "protocol": "moshpit",
    "peers": "4",
    "steps": "8",
    "local-steps": "4",
    "eval-every": "2",
    "target": "0.25,0.001,1e-06",
    "text": "objective = quadratic\nprotocol = moshpit\npeers = 4\nsteps = 8\nlocal-steps = 4\n"
            "eval-every = 2\ntarget = 0.25,0.001,1e-06\n",
}

OPTIMUM_ATTRS = {
    "loss": (np.float64, 0.25),
    "initial_loss": (np.float64, 2.25),
    "gradient_norm": (np.float64, 2.0**-40),
    "iterations": (np.int32, 0),
    "converged": (np.int32, 1),
    "method": (str, "ldlt"),
    "test_set": (str, ""),
}
OPTIMUM_X = [1.0, -0.5]

TARGETS = [0.25, 1e-3, 1e-6]
SUFFIXES = ["2.5e-1", "1e-3", "1e-6"]

G = 2.0**-11
TRIALS = {
    "0": expected_trial({"seed": (np.uint64, 7), "complete": (np.int32, 1), "diverged": (np.int32, 0)},
                        "steps", SUFFIXES, ([4, 8, 8], [1, 1, 0]), {
        "step": ("int32", [0, 2, 4, 6, 8]),
        "round": ("int32", [0, 0, 1, 1, 2]),
        "loss": ("float64", [2.25, 1.25, 0.5, 0.375, 0.25 + G]),
        "gap": ("float64", [2.0, 1.0, 0.25, 0.125, G]),
        "relative_gap": ("float64", [1.0, 0.5, 0.125, 0.0625, G / 2]),
        "distance": ("float64", [1.25, 0.5, 0.125, 0.0625, 2.0**-10]),
        "consensus": ("float64", [0.0, 0.25, 0.0625, 0.125, 2.0**-8]),
        "accuracy": ("float64", [NAN] * 5),
    }, alive=[4, 4, 3, 3, 4], groups=[0, 0, 2, 0, 2], failed_groups=[0, 0, 1, 0, 0],
       bytes_sent=[0, 0, 256, 256, 512], time=[0.0, 0.25, 0.75, 1.0, 1.5]),
    "1": expected_trial({"seed": (np.uint64, 8), "complete": (np.int32, 0), "diverged": (np.int32, 0)},
                        "steps", SUFFIXES, ([4, 4, 4], [1, 0, 0]), {
        "step": ("int32", [0, 2, 4]),
        "round": ("int32", [0, 0, 1]),
        "loss": ("float64", [2.25, 1.75, 0.75]),
        "gap": ("float64", [2.0, 1.5, 0.5]),
        "relative_gap": ("float64", [1.0, 0.75, 0.25]),
        "distance": ("float64", [1.25, 0.75, 0.25]),
        "consensus": ("float64", [0.0, 0.5, 0.125]),
        "accuracy": ("float64", [NAN] * 3),
    }, alive=[4, 4, 2], groups=[0, 0, 1], failed_groups=[0, 0, 1], bytes_sent=[0, 0, 64], time=[0.0, 0.5, 1.25]),
}

SUMMARY = {
    "trial": ("int32", [0, 1]),
    **from_trials(TRIALS, ["seed", *reach_names("steps", SUFFIXES)]),
    "final_gap": ("float64", [G, 0.5]),
    "final_relative_gap": ("float64", [G / 2, 0.25]),
    "final_consensus": ("float64", [2.0**-8, 0.125]),
    "final_accuracy": ("float64", [NAN, NAN]),
    "bytes_sent": ("uint64", [512, 64]),
    "time": ("float64", [1.5, 1.25]),
    "steps": ("int32", [8, 4]),
    "rounds": ("int32", [2, 1]),
    **from_trials(TRIALS, ["complete", "diverged"]),
    "targets": ("float64", TARGETS),
}


def check_pandas(f, problems):
    """The documented way to load a training trace into pandas (docs/trace-format.md)
    must work as shown."""
    try:
        import pandas as pd
    except ImportError:
        return
    summary = pd.DataFrame({name: ds[()] for name, ds in f["summary"].items() if name != "targets"})
    rows = pd.concat(
        [pd.DataFrame(columns).assign(trial=int(k))
         for k, columns in zip(f["trials"]["trial"][()], all_trial_columns(f), strict=True)],
        ignore_index=True)
    done = summary[summary["complete"] == 1]
    curves = rows.pivot(index="step", columns="trial", values="relative_gap")
    if list(summary.columns) != [c for c in SUMMARY if c != "targets"] or done["steps_to_1e-3"].tolist() != [8]:
        problems.append(f"pandas summary: unexpected frame\n{summary}")
    if len(rows) != 8 or curves.shape != (5, 2) or curves.loc[4, 1] != 0.25 or \
            not math.isnan(curves.loc[6, 1]) or not rows["accuracy"].isna().all():
        problems.append(f"pandas rows: unexpected frame\n{rows}\n{curves}")


def main(path):
    problems = []
    with h5py.File(path, "r") as f:
        check_root(f, ROOT, ["config", "optimum", "summary", "trials"], problems)
        check_config(f, CONFIG, problems)
        check_attrs(f["optimum"], OPTIMUM_ATTRS, problems)
        check_columns(f["optimum"], {"coordinate": ("int32", list(range(len(OPTIMUM_X)))),
                                     "x": ("float64", OPTIMUM_X)}, problems)
        check_trials(f, TRIALS, TARGETS, problems)
        check_columns(f["summary"], SUMMARY, problems)
        check_pandas(f, problems)
    return verdict(problems, f"{path}: ", f"{path}: sample training trace reads back exactly")


if __name__ == "__main__":
    run_on_file(main)
