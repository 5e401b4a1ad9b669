"""Small synthetic traces for the tests of python/avbench (test_avbench_analysis.py,
test_avbench_layouts.py), written with h5py in the layout of docs/trace-format.md.

write_averaging and write_sgd write a trace of schema `version`: v1..v8 as one group
per trial with a /summary that repeats them, v9 by writing the v8 trace and
rewriting it with avbench.layouts.to_v9 (its table over (trial, row)), so that both
layouts hold the same values. `rounds_of` / `steps_of` give each trial its own
length (trials of unequal length are what v9 pads).
"""

from __future__ import annotations

import os
import tempfile

import h5py
import numpy as np

from avbench.layouts import to_v9

STR = h5py.string_dtype("utf-8")


def str_attr(obj, name, value):
    obj.attrs.create(name, value, dtype=STR)


def replace_dataset(path, name, data):
    with h5py.File(path, "a") as f:
        del f[name]
        f[name] = data


def _root(f, version, kind, peers, complete, command, engine, library):
    f.attrs.create("schema_version", min(version, 8), dtype="int32")
    for k, v in (("avbench_version", "0.1.0"), ("git_sha", "abc"), ("created_utc", "2026-11-30T12:00:00Z"),
                 ("command_line", command), ("engine", engine), ("mpi_library", library)):
        str_attr(f, k, v)
    f.attrs.create("n_peers", peers, dtype="int32")
    if version >= 2:
        str_attr(f, "run_kind", kind)
    f.attrs.create("complete", complete, dtype="int32")


def _summary(f, kind, version):
    """/summary from the trial groups, as the writer makes it: one row per trial, every
    column there (empty without trials, and then no target columns)."""
    counter = "rounds" if kind == "averaging" else "steps"
    names = list(f["trials"])
    finals = ("variance", "error") if kind == "averaging" else ("gap", "relative_gap", "consensus", "accuracy")
    cols: dict[str, list] = {"trial": [int(n) for n in names], "seed": []}
    cols.update({f"final_{c}": [] for c in finals})
    cols.update({"bytes_sent": [], "time": [], **({"steps": []} if kind == "sgd" else {}), "rounds": [],
                 "complete": [], **({"diverged": []} if kind == "sgd" and version >= 5 else {})})
    for n in names:
        g = f["trials"][n]
        for a in g.attrs:
            if a == "seed" or a.startswith((f"{counter}_to_", "reached_")):
                cols.setdefault(a, []).append(g.attrs[a])
        last = {c: g[c][-1] for c in g if c != "targets"}
        for c in finals:
            cols.setdefault(f"final_{c}", []).append(last[c])
        cols.setdefault("bytes_sent", []).append(last["bytes_sent"])
        cols.setdefault("time", []).append(last["time"])
        if kind == "sgd":
            cols.setdefault("steps", []).append(last["step"])
        cols.setdefault("rounds", []).append(last["round"])
        for a in ("complete", "diverged"):
            if a in g.attrs:
                cols.setdefault(a, []).append(g.attrs[a])
    types = {"seed": np.uint64, "bytes_sent": np.uint64, "time": np.float64}
    targets = [c for c in cols if c.startswith((f"{counter}_to_", "reached_"))]
    order = ["trial", "seed", *targets, *(c for c in cols if c not in targets and c not in ("trial", "seed"))]
    s = f.create_group("summary", track_order=True)
    for name in order:
        dtype = types.get(name, np.float64 if name.startswith("final_") else np.int32)
        s.create_dataset(name, data=np.asarray(cols.get(name, []), dtype=dtype))


def _finish(path, version, fill):
    """Writes the trace `fill` makes at `path`, rewritten as v9 when `version` is 9."""
    if version < 9:
        with h5py.File(path, "w") as f:
            fill(f)
        return
    fd, v8 = tempfile.mkstemp(suffix=".h5", dir=os.path.dirname(os.fspath(path)) or ".")
    os.close(fd)
    try:
        with h5py.File(v8, "w") as f:
            fill(f)
        to_v9(v8, path)
    finally:
        os.remove(v8)


def write_averaging(path, *, version=3, protocol="moshpit", peers=8, trials=3, rounds=4, complete=1,
                    last_trial_complete=1, rate=0.5, extra_config=None, seed0=100, rounds_of=None):
    """An averaging trace: variance of trial k in round r is (rate ** r) * (k + 1);
    trial k runs rounds_of[k] rounds (`rounds` each without it)."""
    def fill(f):
        _root(f, version, "averaging", peers, complete, "averaging_bench", "smpi", "SMPI")
        cfg = f.create_group("config")
        config = {"protocol": protocol, "fail-rate": "0.01", "dim": "1", "rounds": str(rounds),
                  "trials": str(trials), "seed": "7", "grid": "32x32", "stop-at-target": "false",
                  "target": "0.0001,1e-09", **(extra_config or {})}
        for k, v in config.items():
            str_attr(cfg, k, v)
        str_attr(cfg, "text", "\n".join(f"{k} = {v}" for k, v in config.items()))
        tr = f.create_group("trials", track_order=True)
        for k in range(trials):
            n = rounds if rounds_of is None else rounds_of[k]
            g = tr.create_group(str(k), track_order=True)
            g.attrs.create("seed", np.uint64(seed0 + k), dtype="uint64")
            g.attrs.create("complete", last_trial_complete if k == trials - 1 else 1, dtype="int32")
            g.attrs.create("rounds_to_1e-4", n, dtype="int32")
            g.attrs.create("reached_1e-4", 0, dtype="int32")
            r = np.arange(n + 1, dtype=np.int32)
            var = rate ** r * (k + 1.0)
            g.create_dataset("targets", data=np.array([1e-4]))
            cols = {"round": r, "variance": var, "error": var, "mean_drift": np.zeros(n + 1)}
            if version >= 8:
                cols["late"] = np.zeros(n + 1, np.int32)
            cols.update({"alive": np.full(n + 1, peers, np.int32), "groups": np.full(n + 1, 2, np.int32),
                         "failed_groups": np.zeros(n + 1, np.int32)})
            if version >= 3:
                cols["decode_failures"] = np.zeros(n + 1, np.int32)
            cols["bytes_sent"] = (r * 16 * peers).astype(np.uint64)
            cols["time"] = r * 0.5 * (k + 1)
            if version >= 4:
                cols["detection_time"] = np.zeros(n + 1)
            for name, data in cols.items():
                g.create_dataset(name, data=data)
        _summary(f, "averaging", version)
    _finish(path, version, fill)


def write_sgd(path, *, peers=4, trials=2, steps=6, every=2, protocol="gossip", version=3, steps_of=None):
    """A training trace: relative gap 0.5 ** step; trial k runs steps_of[k] steps."""
    def fill(f):
        _root(f, version, "sgd", peers, 1, "sgd_bench", "openmpi", "Open MPI")
        cfg = f.create_group("config")
        for k, v in {"protocol": protocol, "objective": "quadratic", "lr": "0.1", "local-steps": "2"}.items():
            str_attr(cfg, k, v)
        str_attr(cfg, "text", "")
        f.create_group("optimum")
        tr = f.create_group("trials", track_order=True)
        for k in range(trials):
            last = steps if steps_of is None else steps_of[k]
            step = np.arange(0, last + 1, every, dtype=np.int32)
            g = tr.create_group(str(k), track_order=True)
            g.attrs.create("seed", np.uint64(k), dtype="uint64")
            g.attrs.create("complete", 1, dtype="int32")
            if version >= 5:
                g.attrs.create("diverged", 0, dtype="int32")
            g.attrs.create("steps_to_1e-2", int(step[-1]), dtype="int32")
            g.attrs.create("reached_1e-2", 0, dtype="int32")
            g.create_dataset("targets", data=np.array([1e-2]))
            n = len(step)
            rel = 0.5 ** step
            cols = {"step": step, "round": step // 2, "loss": rel + 1, "gap": rel, "relative_gap": rel,
                    "distance": rel, "consensus": rel, "accuracy": np.full(n, np.nan),
                    "alive": np.full(n, peers, np.int32), "groups": np.zeros(n, np.int32),
                    "failed_groups": np.zeros(n, np.int32), "decode_failures": np.zeros(n, np.int32),
                    "bytes_sent": (step * 100).astype(np.uint64), "time": step * 0.1}
            if version >= 4:
                cols["detection_time"] = np.zeros(n)
            for name, data in cols.items():
                g.create_dataset(name, data=data)
        _summary(f, "sgd", version)
    _finish(path, version, fill)


def other_layout(path, out) -> int:
    """`path` rewritten at `out` in the layout it does not have (avbench.layouts): v8
    for a v9 trace, v9 for an older one. Returns the version written."""
    from avbench.layouts import to_v8
    with h5py.File(path, "r") as f:
        table = int(f.attrs["schema_version"]) >= 9
    (to_v8 if table else to_v9)(path, out)
    return 8 if table else 9


def assert_same_run(a, b, columns=None):
    """The two traces `a` and `b` (one run in two layouts) read the same: load_trace
    (`columns` passed on) and its xarray form, read_summary, and the trial accessor,
    to the type and the bit; only `trace` and `schema_version` may differ."""
    import pandas as pd

    import avbench
    from avbench.trials import all_trial_columns, all_trial_info, trial_columns, trial_count, trial_info, trial_targets
    frames = [avbench.load_trace(p, columns).drop(columns=["trace", "schema_version"]) for p in (a, b)]
    pd.testing.assert_frame_equal(*frames, check_exact=True)
    sets = [avbench.load_trace(p, columns, as_xarray=True) for p in (a, b)]
    for ds in sets:
        del ds.attrs["trace"], ds.attrs["schema_version"]
    if not sets[0].identical(sets[1]):
        raise AssertionError(f"xarray forms differ:\n{sets[0]}\n{sets[1]}")
    pd.testing.assert_frame_equal(*(avbench.read_summary(p).drop(columns=["trace"]) for p in (a, b)), check_exact=True)
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        assert trial_count(fa) == trial_count(fb)
        np.testing.assert_array_equal(trial_targets(fa), trial_targets(fb))
        for k in range(trial_count(fa)):
            _same_columns(trial_columns(fa, k, columns), trial_columns(fb, k, columns))
            assert trial_info(fa, k) == trial_info(fb, k), (trial_info(fa, k), trial_info(fb, k))
        for x, y in zip(all_trial_columns(fa, columns), all_trial_columns(fb, columns)):
            _same_columns(x, y)
        assert all_trial_info(fa) == all_trial_info(fb)


def _same_columns(x: dict, y: dict) -> None:
    assert list(x) == list(y), (list(x), list(y))
    for name in x:
        assert x[name].dtype == y[name].dtype, (name, x[name].dtype, y[name].dtype)
        np.testing.assert_array_equal(x[name], y[name], err_msg=name)
