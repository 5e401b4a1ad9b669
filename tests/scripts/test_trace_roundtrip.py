#!/usr/bin/python3
"""Read back the sample averaging trace written by the C++ writer and compare every value.

    AVB_TRACE_SAMPLE=sample.h5 test_trace --gtest_filter=TraceSample.*
    /usr/bin/python3 test_trace_roundtrip.py sample.h5

The expected values below are those of TEST(TraceSample, Write) in
tests/unit/test_trace.cpp; keep the two in sync. They are exact in binary, so
floats are compared with ==. This test pins what a Python reader sees (types
included: strings must come back as str, not bytes); avbench check separately
checks that the file obeys the schema. test_trace_roundtrip_sgd.py does the
same for the training sample.
"""

import sys

import h5py
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from a test run
from sample_readback import (check_columns, check_config, check_root, check_trials, expected_trial,  # noqa: E402
                             from_trials, reach_names, run_on_file, sample_root, verdict)

ROOT = sample_root("averaging_bench --protocol moshpit --note 'café σ'", "smpi", "SimGrid SMPI (sample)", 8,
                   "averaging")

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
    "0": expected_trial({"seed": (np.uint64, 42), "complete": (np.int32, 1)}, "rounds", SUFFIXES,
                        ([3, 2, 1], [1, 1, 1]), {
        "round": ("int32", [0, 1, 2, 3, 4]),
        "variance": ("float64", [1.0, 0.25, 2.0**-10, 2.0**-40, 0.0]),
        "error": ("float64", [1.0, 0.25, 2.0**-10, 2.0**-40, 0.0]),
        "mean_drift": ("float64", [0.0] * 5),
        "late": ("int32", [0] * 5),
    }, alive=[8, 8, 7, 8, 8], groups=[0, 4, 4, 4, 4], failed_groups=[0, 0, 1, 0, 0],
       bytes_sent=[0, 1024, 2048, 3072, 4096], time=[0.0, 0.5, 1.0, 1.5, 2.0]),
    "1": expected_trial({"seed": (np.uint64, 43), "complete": (np.int32, 0)}, "rounds", SUFFIXES,
                        ([2, 2, 1], [0, 0, 1]), {
        "round": ("int32", [0, 1, 2]),
        "variance": ("float64", [2.0, 0.375, 0.0625]),
        "error": ("float64", [2.0, 0.5, 0.3125]),
        "mean_drift": ("float64", [0.0, 0.125, 0.25]),
        "late": ("int32", [0, 0, 0]),
    }, alive=[8, 6, 5], groups=[0, 3, 3], failed_groups=[0, 1, 2], bytes_sent=[0, 512, 1000], time=[0.0, 0.25, 0.75]),
}

SUMMARY = {
    "trial": ("int32", [0, 1]),
    **from_trials(TRIALS, ["seed", *reach_names("rounds", SUFFIXES)]),
    "final_variance": ("float64", [0.0, 0.0625]),
    "final_error": ("float64", [0.0, 0.3125]),
    "bytes_sent": ("uint64", [4096, 1000]),
    "time": ("float64", [2.0, 0.75]),
    "rounds": ("int32", [4, 2]),
    **from_trials(TRIALS, ["complete"]),
    "targets": ("float64", TARGETS),
}


def main(path):
    problems = []
    with h5py.File(path, "r") as f:
        check_root(f, ROOT, ["config", "summary", "trials"], problems)  # no /optimum
        check_config(f, CONFIG, problems)
        check_trials(f, TRIALS, TARGETS, problems)
        check_columns(f["summary"], SUMMARY, problems)

        # The documented way to load the summary into pandas must work as shown.
        try:
            import pandas as pd
            # /summary/targets runs over the targets, not the trials: not a column of the frame.
            df = pd.DataFrame({name: ds[()] for name, ds in f["summary"].items() if name != "targets"})
            if list(df.columns) != [c for c in SUMMARY if c != "targets"] or len(df) != 2 or \
                    df["rounds_to_1e-9"].tolist() != [3, 2]:
                problems.append(f"pandas summary: unexpected frame\n{df}")
        except ImportError:
            pass
    return verdict(problems, f"{path}: ", f"{path}: sample trace reads back exactly")


if __name__ == "__main__":
    run_on_file(main)
