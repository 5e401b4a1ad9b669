#!/usr/bin/python3
"""Read back the sample training trace written by the C++ writer and compare every value.

    AVB_TRACE_SAMPLE_SGD=sample_sgd.h5 unit_tests --gtest_filter=TraceSample.WriteTraining
    /usr/bin/python3 test_trace_roundtrip_sgd.py sample_sgd.h5

The expected values below are those of TEST(TraceSample, WriteTraining) in
tests/unit/test_trace.cpp; keep the two in sync. They are exact in binary, so
floats are compared exactly (NaN matching NaN: the sample is a quadratic run,
whose accuracy column is NaN). Types are part of the comparison: strings must
come back as str, attributes as the numpy scalar of their stored type.
check_trace.py separately checks that the file obeys the schema.
"""

import math
import sys

import h5py
import numpy as np

NAN = float("nan")

ROOT = {
    "schema_version": (np.int32, 5),
    "avbench_version": (str, "0.1.0-sample"),
    "git_sha": (str, "0123456789ab"),
    "command_line": (str, "sgd_bench --objective quadratic --protocol moshpit --steps 8 --local-steps 4 --eval-every 2"),
    "engine": (str, "openmpi"),
    "mpi_library": (str, "Open MPI v4.1.4 (sample)"),
    "n_peers": (np.int32, 4),
    "run_kind": (str, "sgd"),
    "complete": (np.int32, 0),
}

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

G = 2.0**-11
TRIALS = {
    "0": {
        "attrs": {
            "seed": (np.uint64, 7), "complete": (np.int32, 1), "diverged": (np.int32, 0),
            "steps_to_2.5e-1": (np.int32, 4), "steps_to_1e-3": (np.int32, 8), "steps_to_1e-6": (np.int32, 8),
            "reached_2.5e-1": (np.int32, 1), "reached_1e-3": (np.int32, 1), "reached_1e-6": (np.int32, 0),
        },
        "columns": {
            "step": ("int32", [0, 2, 4, 6, 8]),
            "round": ("int32", [0, 0, 1, 1, 2]),
            "loss": ("float64", [2.25, 1.25, 0.5, 0.375, 0.25 + G]),
            "gap": ("float64", [2.0, 1.0, 0.25, 0.125, G]),
            "relative_gap": ("float64", [1.0, 0.5, 0.125, 0.0625, G / 2]),
            "distance": ("float64", [1.25, 0.5, 0.125, 0.0625, 2.0**-10]),
            "consensus": ("float64", [0.0, 0.25, 0.0625, 0.125, 2.0**-8]),
            "accuracy": ("float64", [NAN] * 5),
            "alive": ("int32", [4, 4, 3, 3, 4]),
            "groups": ("int32", [0, 0, 2, 0, 2]),
            "failed_groups": ("int32", [0, 0, 1, 0, 0]),
            "decode_failures": ("int32", [0] * 5),
            "bytes_sent": ("uint64", [0, 0, 256, 256, 512]),
            "time": ("float64", [0.0, 0.25, 0.75, 1.0, 1.5]),
            "detection_time": ("float64", [0.0] * 5),
        },
    },
    "1": {
        "attrs": {
            "seed": (np.uint64, 8), "complete": (np.int32, 0), "diverged": (np.int32, 0),
            "steps_to_2.5e-1": (np.int32, 4), "steps_to_1e-3": (np.int32, 4), "steps_to_1e-6": (np.int32, 4),
            "reached_2.5e-1": (np.int32, 1), "reached_1e-3": (np.int32, 0), "reached_1e-6": (np.int32, 0),
        },
        "columns": {
            "step": ("int32", [0, 2, 4]),
            "round": ("int32", [0, 0, 1]),
            "loss": ("float64", [2.25, 1.75, 0.75]),
            "gap": ("float64", [2.0, 1.5, 0.5]),
            "relative_gap": ("float64", [1.0, 0.75, 0.25]),
            "distance": ("float64", [1.25, 0.75, 0.25]),
            "consensus": ("float64", [0.0, 0.5, 0.125]),
            "accuracy": ("float64", [NAN] * 3),
            "alive": ("int32", [4, 4, 2]),
            "groups": ("int32", [0, 0, 1]),
            "failed_groups": ("int32", [0, 0, 1]),
            "decode_failures": ("int32", [0] * 3),
            "bytes_sent": ("uint64", [0, 0, 64]),
            "time": ("float64", [0.0, 0.5, 1.25]),
            "detection_time": ("float64", [0.0] * 3),
        },
    },
}

SUMMARY = {
    "trial": ("int32", [0, 1]),
    "seed": ("uint64", [7, 8]),
    "steps_to_2.5e-1": ("int32", [4, 4]),
    "steps_to_1e-3": ("int32", [8, 4]),
    "steps_to_1e-6": ("int32", [8, 4]),
    "reached_2.5e-1": ("int32", [1, 1]),
    "reached_1e-3": ("int32", [1, 0]),
    "reached_1e-6": ("int32", [0, 0]),
    "final_gap": ("float64", [G, 0.5]),
    "final_relative_gap": ("float64", [G / 2, 0.25]),
    "final_consensus": ("float64", [2.0**-8, 0.125]),
    "final_accuracy": ("float64", [NAN, NAN]),
    "bytes_sent": ("uint64", [512, 64]),
    "time": ("float64", [1.5, 1.25]),
    "steps": ("int32", [8, 4]),
    "rounds": ("int32", [2, 1]),
    "complete": ("int32", [1, 0]),
    "diverged": ("int32", [0, 0]),
}


def same(got, want) -> bool:
    """Exact equality, NaN equal to NaN."""
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, (float, np.floating)) and math.isnan(got)
    return got == want


def check_attrs(obj, expected, problems):
    if list(obj.attrs) != list(expected):
        problems.append(f"{obj.name}: attributes {list(obj.attrs)}, expected {list(expected)}")
    for name, (typ, want) in expected.items():
        if name not in obj.attrs:
            problems.append(f"{obj.name} attribute {name}: missing")
            continue
        got = obj.attrs[name]
        if type(got) is not typ or not same(got, want):
            problems.append(f"{obj.name} attribute {name}: {got!r} ({type(got).__name__}), "
                            f"expected {want!r} ({typ.__name__})")


def check_columns(group, expected, problems):
    if list(group) != list(expected):
        problems.append(f"{group.name}: members {list(group)} (in this order), expected {list(expected)}")
    for name, (dtype, want) in expected.items():
        if name not in group:
            problems.append(f"{group.name}/{name}: missing")
            continue
        got = group[name][()]
        want = np.array(want, dtype=dtype)
        equal = got.dtype == want.dtype and got.shape == want.shape and \
            np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
        if not equal:
            problems.append(f"{group.name}/{name}: {got!r}, expected {want!r}")


def main(path):
    problems = []
    with h5py.File(path, "r") as f:
        # Root attributes in writing order (created_utc fourth), exact values
        # except the creation time, which only has to be a str.
        expected_order = list(ROOT)
        expected_order.insert(3, "created_utc")
        if list(f.attrs) != expected_order:
            problems.append(f"/: attributes {list(f.attrs)}, expected {expected_order}")
        for name, (typ, want) in ROOT.items():
            got = f.attrs.get(name)
            if type(got) is not typ or got != want:
                problems.append(f"/ attribute {name}: {got!r}, expected {want!r} ({typ.__name__})")
        if not isinstance(f.attrs.get("created_utc"), str):
            problems.append("/ attribute created_utc: not a str")
        if list(f) != ["config", "optimum", "summary", "trials"]:
            problems.append(f"/: members {list(f)}, expected config, optimum, summary, trials")

        config = f["config"]
        if list(config.attrs) != list(CONFIG):
            problems.append(f"/config: attributes {list(config.attrs)}, expected {list(CONFIG)}")
        for name, want in CONFIG.items():
            got = config.attrs.get(name)
            if type(got) is not str or got != want:
                problems.append(f"/config attribute {name}: {got!r}, expected {want!r}")

        optimum = f["optimum"]
        check_attrs(optimum, OPTIMUM_ATTRS, problems)
        check_columns(optimum, {"x": ("float64", OPTIMUM_X)}, problems)

        if list(f["trials"]) != list(TRIALS):
            problems.append(f"/trials: members {list(f['trials'])}, expected {list(TRIALS)}")
        for k, spec in TRIALS.items():
            g = f["trials"][k]
            check_attrs(g, spec["attrs"], problems)
            check_columns(g, {"targets": ("float64", TARGETS), **spec["columns"]}, problems)

        check_columns(f["summary"], SUMMARY, problems)

        # The documented way to load a training trace into pandas must work as shown
        # in docs/trace-format.md.
        try:
            import pandas as pd
        except ImportError:
            pd = None
        if pd is not None:
            summary = pd.DataFrame({name: ds[()] for name, ds in f["summary"].items()})
            rows = pd.concat(
                [pd.DataFrame({name: ds[()] for name, ds in g.items() if name != "targets"})
                   .assign(trial=int(k))
                 for k, g in f["trials"].items()],
                ignore_index=True)
            done = summary[summary["complete"] == 1]
            curves = rows.pivot(index="step", columns="trial", values="relative_gap")
            if list(summary.columns) != list(SUMMARY) or done["steps_to_1e-3"].tolist() != [8]:
                problems.append(f"pandas summary: unexpected frame\n{summary}")
            if len(rows) != 8 or curves.shape != (5, 2) or curves.loc[4, 1] != 0.25 or \
                    not math.isnan(curves.loc[6, 1]) or not rows["accuracy"].isna().all():
                problems.append(f"pandas rows: unexpected frame\n{rows}\n{curves}")

    for p in problems:
        print(f"{path}: {p}")
    if problems:
        return 1
    print(f"{path}: sample training trace reads back exactly")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: test_trace_roundtrip_sgd.py FILE", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
