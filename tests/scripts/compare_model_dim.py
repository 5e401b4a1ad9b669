#!/usr/bin/env python3
"""Checks a --model-dim run against the runs it stands for (docs/simulation.md).

    compare_model_dim.py MODEL.h5 DIRECT.h5 SAME_DIM.h5 [--time-within F] [--timing-dependent]

MODEL ran with --dim d --model-dim D, DIRECT with --dim D, SAME_DIM with --dim d,
all else equal. MODEL's /config must record model-dim D (and DIRECT's dim D);
every trial's bytes_sent column must equal DIRECT's (messages are charged as D
coordinates), its final time be within F (relative, default 0.02) of DIRECT's,
and its values (variance, error, mean_drift) and counters (round, alive, groups,
failed_groups) have the same bits as SAME_DIM's (--model-dim never touches values).
--timing-dependent (swarm): only row 1's values are compared, since an
asynchronous protocol's later interactions follow the simulated time, which is
the model's (DIRECT's), not SAME_DIM's.
Prints one line; exits 1 with the problems when there are any.
"""
import argparse
import sys

import h5py
from avbench.trials import all_trial_columns, all_trial_info

from bitwise import same

VALUES = ["round", "alive", "groups", "failed_groups", "variance", "error", "mean_drift"]


def trials(f):
    """{trial index: its columns checked here}, in writing order (avbench.trials)."""
    columns = all_trial_columns(f, [*VALUES, "bytes_sent", "time"])
    return {info["trial"]: c for info, c in zip(all_trial_info(f), columns, strict=True)}


def check_trial(name, model, direct, same_dim, time_within, rows, problems):
    if not same(model["bytes_sent"][()], direct["bytes_sent"][()]):
        problems.append(f"trial {name}: bytes_sent {model['bytes_sent'][()][:4]} vs direct "
                        f"{direct['bytes_sent'][()][:4]}")
    t_model, t_direct = float(model["time"][-1]), float(direct["time"][-1])
    ratio = t_model / t_direct if t_direct > 0 else float("inf")
    if abs(ratio - 1) > time_within:
        problems.append(f"trial {name}: time {t_model:.6g} s vs direct {t_direct:.6g} s (ratio {ratio:.4f})")
    for column in VALUES:
        if not same(model[column][:rows], same_dim[column][:rows]):
            problems.append(f"trial {name}: {column} differs from the run with the same --dim")
    return ratio


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("direct")
    p.add_argument("same_dim")
    p.add_argument("--time-within", type=float, default=0.02)
    p.add_argument("--timing-dependent", action="store_true")
    a = p.parse_args()
    problems, ratios = [], []
    with h5py.File(a.model, "r") as m, h5py.File(a.direct, "r") as d, h5py.File(a.same_dim, "r") as s:
        model_dim = m["config"].attrs.get("model-dim")
        if model_dim is None or model_dim != d["config"].attrs["dim"]:
            problems.append(f"/config model-dim is {model_dim}, the direct run's dim {d['config'].attrs['dim']}")
        tm, td, ts = trials(m), trials(d), trials(s)
        names = sorted(tm)
        if names != sorted(td) or names != sorted(ts):
            problems.append("the traces hold different trials")
        else:
            for name in names:
                ratios.append(check_trial(name, tm[name], td[name], ts[name],
                                          a.time_within, 2 if a.timing_dependent else None, problems))
    if problems:
        print("\n".join(problems))
        return 1
    print(f"{len(ratios)} trial(s): bytes_sent equal, values equal, time ratio "
          + ", ".join(f"{r:.4f}" for r in ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
