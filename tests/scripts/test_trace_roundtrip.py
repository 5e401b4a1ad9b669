#!/usr/bin/python3
"""Read back the sample averaging trace written by the C++ writer and compare every value.

    AVB_TRACE_SAMPLE=sample.h5 test_trace --gtest_filter=TraceSample.*
    /usr/bin/python3 test_trace_roundtrip.py sample.h5

The expected values below are those of TEST(TraceSample, Write) in
tests/unit/test_trace.cpp; keep the two in sync. They are exact in binary, so
floats are compared with ==. This test pins what a Python reader sees (types
included: strings must come back as str, not bytes); check_trace.py separately
checks that the file obeys the schema. test_trace_roundtrip_sgd.py does the
same for the training sample.
"""

import sys

import h5py
import numpy as np

ROOT = {
    "schema_version": (np.int32, 5),
    "avbench_version": (str, "0.1.0-sample"),
    "git_sha": (str, "0123456789ab"),
    "command_line": (str, "averaging_bench --protocol moshpit --note 'café σ'"),
    "engine": (str, "smpi"),
    "mpi_library": (str, "SimGrid SMPI (sample)"),
    "n_peers": (np.int32, 8),
    "run_kind": (str, "averaging"),
    "complete": (np.int32, 0),
}

CONFIG = {
    "protocol": "moshpit",
    "peers": "8",
    "fail-rate": "0.01",
    "rounds": "4",
    "text": "protocol = moshpit\npeers = 8\nfail-rate = 0.01\nrounds = 4\n",
}

TARGETS = [1e-9, 2.5e-3, 0.5]
SUFFIXES = ["1e-9", "2.5e-3", "5e-1"]

TRIALS = {
    "0": {
        "attrs": {
            "seed": (np.uint64, 42), "complete": (np.int32, 1),
            "rounds_to_1e-9": (np.int32, 3), "rounds_to_2.5e-3": (np.int32, 2), "rounds_to_5e-1": (np.int32, 1),
            "reached_1e-9": (np.int32, 1), "reached_2.5e-3": (np.int32, 1), "reached_5e-1": (np.int32, 1),
        },
        "columns": {
            "round": ("int32", [0, 1, 2, 3, 4]),
            "variance": ("float64", [1.0, 0.25, 2.0**-10, 2.0**-40, 0.0]),
            "error": ("float64", [1.0, 0.25, 2.0**-10, 2.0**-40, 0.0]),
            "mean_drift": ("float64", [0.0] * 5),
            "alive": ("int32", [8, 8, 7, 8, 8]),
            "groups": ("int32", [0, 4, 4, 4, 4]),
            "failed_groups": ("int32", [0, 0, 1, 0, 0]),
            "decode_failures": ("int32", [0] * 5),
            "bytes_sent": ("uint64", [0, 1024, 2048, 3072, 4096]),
            "time": ("float64", [0.0, 0.5, 1.0, 1.5, 2.0]),
            "detection_time": ("float64", [0.0] * 5),
        },
    },
    "1": {
        "attrs": {
            "seed": (np.uint64, 43), "complete": (np.int32, 0),
            "rounds_to_1e-9": (np.int32, 2), "rounds_to_2.5e-3": (np.int32, 2), "rounds_to_5e-1": (np.int32, 1),
            "reached_1e-9": (np.int32, 0), "reached_2.5e-3": (np.int32, 0), "reached_5e-1": (np.int32, 1),
        },
        "columns": {
            "round": ("int32", [0, 1, 2]),
            "variance": ("float64", [2.0, 0.375, 0.0625]),
            "error": ("float64", [2.0, 0.5, 0.3125]),
            "mean_drift": ("float64", [0.0, 0.125, 0.25]),
            "alive": ("int32", [8, 6, 5]),
            "groups": ("int32", [0, 3, 3]),
            "failed_groups": ("int32", [0, 1, 2]),
            "decode_failures": ("int32", [0] * 3),
            "bytes_sent": ("uint64", [0, 512, 1000]),
            "time": ("float64", [0.0, 0.25, 0.75]),
            "detection_time": ("float64", [0.0] * 3),
        },
    },
}

SUMMARY = {
    "trial": ("int32", [0, 1]),
    "seed": ("uint64", [42, 43]),
    "rounds_to_1e-9": ("int32", [3, 2]),
    "rounds_to_2.5e-3": ("int32", [2, 2]),
    "rounds_to_5e-1": ("int32", [1, 1]),
    "reached_1e-9": ("int32", [1, 0]),
    "reached_2.5e-3": ("int32", [1, 0]),
    "reached_5e-1": ("int32", [1, 1]),
    "final_variance": ("float64", [0.0, 0.0625]),
    "final_error": ("float64", [0.0, 0.3125]),
    "bytes_sent": ("uint64", [4096, 1000]),
    "time": ("float64", [2.0, 0.75]),
    "rounds": ("int32", [4, 2]),
    "complete": ("int32", [1, 0]),
}


def check_attrs(obj, expected, problems):
    if list(obj.attrs) != list(expected):
        problems.append(f"{obj.name}: attributes {list(obj.attrs)}, expected {list(expected)}")
    for name, (typ, want) in expected.items():
        if name not in obj.attrs:
            problems.append(f"{obj.name} attribute {name}: missing")
            continue
        got = obj.attrs[name]
        if type(got) is not typ or got != want:
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
        if got.dtype != np.dtype(dtype) or got.shape != (len(want),) or not np.array_equal(got, np.array(want, dtype=dtype)):
            problems.append(f"{group.name}/{name}: {got!r}, expected {want} as {dtype}")


def main(path):
    problems = []
    with h5py.File(path, "r") as f:
        # Root attributes: exact order (created_utc fourth) and exact values,
        # except the creation time, which only has to be a str.
        expected_order = list(ROOT)
        expected_order.insert(3, "created_utc")
        if list(f) != ["config", "summary", "trials"]:
            problems.append(f"/: members {list(f)}, expected config, summary, trials (no /optimum)")
        if list(f.attrs) != expected_order:
            problems.append(f"/: attributes {list(f.attrs)}, expected {expected_order}")
        for name, (typ, want) in ROOT.items():
            got = f.attrs.get(name)
            if type(got) is not typ or got != want:
                problems.append(f"/ attribute {name}: {got!r}, expected {want!r} ({typ.__name__})")
        if not isinstance(f.attrs.get("created_utc"), str):
            problems.append("/ attribute created_utc: not a str")

        config = f["config"]
        for name, want in CONFIG.items():
            got = config.attrs.get(name)
            if type(got) is not str or got != want:
                problems.append(f"/config attribute {name}: {got!r}, expected {want!r}")
        if list(config.attrs) != list(CONFIG):
            problems.append(f"/config: attributes {list(config.attrs)}, expected {list(CONFIG)}")

        if list(f["trials"]) != list(TRIALS):
            problems.append(f"/trials: members {list(f['trials'])}, expected {list(TRIALS)}")
        for k, spec in TRIALS.items():
            g = f["trials"][k]
            check_attrs(g, spec["attrs"], problems)
            columns = {"targets": ("float64", TARGETS), **spec["columns"]}
            check_columns(g, columns, problems)

        check_columns(f["summary"], SUMMARY, problems)

        # The documented way to load the summary into pandas must work as shown.
        try:
            import pandas as pd
            df = pd.DataFrame({name: ds[()] for name, ds in f["summary"].items()})
            if list(df.columns) != list(SUMMARY) or len(df) != 2 or df["rounds_to_1e-9"].tolist() != [3, 2]:
                problems.append(f"pandas summary: unexpected frame\n{df}")
        except ImportError:
            pass

    for p in problems:
        print(f"{path}: {p}")
    if problems:
        return 1
    print(f"{path}: sample trace reads back exactly")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: test_trace_roundtrip.py FILE", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
