#!/usr/bin/env python3
"""Compares a sequential-engine trace with a trace of the same run on an MPI engine.

    compare_sequential.py SEQUENTIAL.h5 OTHER.h5 [--tolerance T] [--time-within F]

Works on averaging and training (sgd_bench) traces alike, told apart by the root
attribute run_kind. Every trial's counters (round, alive, groups, failed_groups,
decode_failures, bytes_sent, detection_time; averaging: also late; training: also step) and rounds or
steps to each target (and a training trial's `diverged`) must be identical. The metrics (variance, error, mean_drift; or loss,
gap, relative_gap, distance, consensus, accuracy) must have the same bits, or,
with --tolerance T, differ by at most T times the scale (averaging: the trial's
initial variance; training: the column's largest magnitude in OTHER), NaN only
where OTHER has NaN (all-reduce: the MPI engines sum along a ring or a tree, the
sequential engine in peer order). With --time-within F, each
trial's final `time` (the sequential engine's alpha-beta estimate) must be within
F (relative) of the other trace's (SMPI's simulated time). Prints one line;
exits 1 with the problems when there are any.
"""
import argparse
import sys

import h5py
import numpy as np
from avbench.trials import all_trial_columns, all_trial_info, trial_targets

from bitwise import same

# What each run kind's trials hold: exact columns, exact attributes (by prefix), metrics.
KINDS = {
    "averaging": (["round", "alive", "groups", "failed_groups", "decode_failures", "bytes_sent", "detection_time", "late"],
                  ("rounds_to_", "reached_"), ["variance", "error", "mean_drift"]),
    "sgd": (["step", "round", "alive", "groups", "failed_groups", "decode_failures", "bytes_sent", "detection_time"],
            ("steps_to_", "reached_", "diverged"), ["loss", "gap", "relative_gap", "distance", "consensus", "accuracy"]),
}


def metric_scale(kind, b, column):
    if kind == "averaging":
        return float(b["variance"][0])
    y = np.abs(b[column][()])
    y = y[np.isfinite(y)]
    return float(y.max()) if y.size else 0.0


def within(x, y, bound):
    """x and y agree to `bound`, NaN and infinities only where both have the same."""
    if x.shape != y.shape:
        return False
    finite = np.isfinite(y)
    if not same(x[~finite], y[~finite]):
        return False
    return np.max(np.abs(x[finite] - y[finite]), initial=0.0) <= bound


def trials(f):
    """{trial index: (its row columns plus the run's `targets`, its trial_info)} in
    writing order (avbench.trials: v9's /trials table and /summary, or v8's groups)."""
    targets = trial_targets(f)
    return {info["trial"]: ({**columns, "targets": targets}, info)
            for info, columns in zip(all_trial_info(f), all_trial_columns(f), strict=True)}


def compare_trial(kind, name, a, b, tolerance, time_within, problems, ratios):
    """Trial `name` of each trace, a and b (each as `trials` gives it)."""
    (a, a_info), (b, b_info) = a, b
    counters, attributes, metrics = KINDS[kind]
    for column in counters + ["targets"]:
        if not same(a[column], b[column]):
            problems.append(f"trial {name} {column}: {a[column][:6]} vs {b[column][:6]}")
    for attribute in a_info:
        if attribute.startswith(attributes) and not same(a_info[attribute], b_info[attribute]):
            problems.append(f"trial {name} {attribute}: {a_info[attribute]} vs {b_info[attribute]}")
    for column in metrics:
        x, y = a[column], b[column]
        if tolerance is None:
            if not same(x, y):
                problems.append(f"trial {name} {column} differs in its bits")
        elif not within(x, y, tolerance * metric_scale(kind, b, column)):
            problems.append(f"trial {name} {column} differs by more than {tolerance} x "
                            f"{metric_scale(kind, b, column):.3g}")
    if time_within is not None:
        ratio = float(a["time"][-1]) / float(b["time"][-1])
        ratios.append(ratio)
        if abs(ratio - 1) > time_within:
            problems.append(f"trial {name} time: estimate {a['time'][-1]:.4g} s vs {b['time'][-1]:.4g} s "
                            f"(ratio {ratio:.3f}, allowed 1 +- {time_within})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sequential")
    p.add_argument("other")
    p.add_argument("--tolerance", type=float)
    p.add_argument("--time-within", type=float)
    a = p.parse_args()
    problems, ratios, rows = [], [], 0
    with h5py.File(a.sequential, "r") as s, h5py.File(a.other, "r") as o:
        if s.attrs["engine"] != "sequential" or s.attrs["time_model"] != "alpha-beta estimate":
            problems.append(f"engine {s.attrs['engine']!r}, time_model {s.attrs.get('time_model')!r}")
        kind = o.attrs.get("run_kind", "averaging")
        if s.attrs.get("run_kind", "averaging") != kind:
            problems.append(f"run_kind {s.attrs.get('run_kind')!r} vs {kind!r}")
        if int(s.attrs["n_peers"]) != int(o.attrs["n_peers"]):
            problems.append(f"n_peers {s.attrs['n_peers']} vs {o.attrs['n_peers']}")
        ts, to = trials(s), trials(o)
        if list(ts) != list(to):
            problems.append(f"trials {list(ts)} vs {list(to)}")
        for name in ts:
            if name in to:
                compare_trial(kind, name, ts[name], to[name], a.tolerance, a.time_within, problems, ratios)
                rows += len(ts[name][0]["round"])
    if problems:
        print("\n".join(problems[:8]))
        sys.exit(1)
    scale = "the initial variance" if kind == "averaging" else "each column's largest value"
    how = "same bits" if a.tolerance is None else f"within {a.tolerance} x {scale}"
    time = f"; time estimate / other: {min(ratios):.3f} .. {max(ratios):.3f}" if ratios else ""
    print(f"sequential engine agrees on {rows} rows ({how}){time}")


if __name__ == "__main__":
    main()
