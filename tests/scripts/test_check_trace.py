#!/usr/bin/python3
"""Test the checker itself: it must accept the sample trace and catch each kind of
damage the schema rules out.

    /usr/bin/python3 test_check_trace.py sample.h5

where sample.h5 comes from `AVB_TRACE_SAMPLE=sample.h5 test_trace
--gtest_filter=TraceSample.*` (2 trials, 8 peers, run cut short, at most 4 rounds).
Every case copies the sample, damages the copy with h5py, and expects
check_trace.check_file to report a problem mentioning a given text. A checker that
accepts everything would pass test_trace_roundtrip.py; it fails here.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from a test run
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_trace import check_file  # noqa: E402

EXPECT = dict(peers=8, trials=2, complete=0, rounds=4)


def replace_dataset(f, name, values, dtype=None):
    data = np.asarray(values, dtype=dtype if dtype is not None else f[name].dtype)
    del f[name]
    f.create_dataset(name, data=data)


def set_item(name, index, value):
    def damage(f):
        data = f[name][()]
        data[index] = value
        f[name][...] = data
    return damage


def set_attr(obj, name, value, dtype=None):
    def damage(f):
        target = f[obj]
        if dtype is None:
            target.attrs.modify(name, value)
        else:
            del target.attrs[name]
            target.attrs.create(name, value, dtype=dtype)
    return damage


def delete(path, attr=None):
    def damage(f):
        if attr is None:
            del f[path]
        else:
            del f[path].attrs[attr]
    return damage


# (description, damage function or None, check_file keyword overrides, text expected in a problem)
CASES = [
    ("wrong peer count expected", None, {"peers": 9}, "n_peers"),
    ("wrong trial count expected", None, {"trials": 3}, "expected 3"),
    ("wrong completion expected", None, {"complete": 1}, "complete"),
    ("fewer rounds expected", None, {"rounds": 3}, "more than the expected 3"),
    ("root attribute missing", delete("/", "git_sha"), {}, "git_sha"),
    ("schema version", set_attr("/", "schema_version", 2, "int32"), {}, "schema_version"),
    ("int attribute of wrong width", set_attr("/", "n_peers", 8, "int64"), {}, "n_peers"),
    ("string stored as fixed-length bytes", set_attr("/", "engine", np.bytes_(b"smpi"), "S4"), {}, "engine"),
    ("unknown engine", set_attr("/", "engine", "mpi", h5py.string_dtype()), {}, "engine"),
    ("bad timestamp", set_attr("/", "created_utc", "2026-11-30 12:00", h5py.string_dtype()), {}, "created_utc"),
    ("complete run with a cut trial", set_attr("/", "complete", 1, "int32"), {"complete": None}, "marked complete"),
    ("config missing", delete("/config"), {}, "/config"),
    ("config text missing", delete("/config", "text"), {}, "text"),
    ("row 0 not round 0", set_item("/trials/0/round", 0, 1), {}, "row 0 is round 1"),
    ("round skips", set_item("/trials/0/round", 3, 4), {}, "increase by 1"),
    ("time decreases", set_item("/trials/0/time", 3, 0.1), {}, "/trials/0/time: decreases"),
    ("bytes decrease", set_item("/trials/1/bytes_sent", 2, 100), {}, "/trials/1/bytes_sent: decreases"),
    ("bytes not zero at round 0", set_item("/trials/0/bytes_sent", 0, 1), {}, "expected 0"),
    ("NaN variance", set_item("/trials/1/variance", 1, np.nan), {}, "not finite"),
    ("too many alive", set_item("/trials/0/alive", 1, 9), {}, "alive"),
    ("more failed groups than groups", set_item("/trials/0/failed_groups", 1, 5), {}, "failed_groups"),
    ("column too short", lambda f: replace_dataset(f, "/trials/1/alive", [8, 6]), {}, "differ in length"),
    ("column of wrong type", lambda f: replace_dataset(f, "/trials/0/alive", [8, 8, 7, 8, 8], "int64"), {}, "alive"),
    ("column missing", delete("/trials/0/error"), {}, "/trials/0/error: missing"),
    ("rounds_to disagrees with variance", set_attr("/trials/0", "rounds_to_5e-1", 2), {}, "first falls below"),
    ("reached disagrees with variance", set_attr("/trials/0", "reached_2.5e-3", 0), {}, "reached=0"),
    ("cap is not the rounds run", set_attr("/trials/1", "rounds_to_1e-9", 50), {}, "the cap"),
    ("cut trial before a complete one", set_attr("/trials/0", "complete", 0), {}, "not the last trial"),
    ("targets differ between trials", set_item("/trials/1/targets", 0, 1e-8), {}, "targets"),
    ("summary final_variance", set_item("/summary/final_variance", 1, 0.5), {}, "final_variance"),
    ("summary bytes", set_item("/summary/bytes_sent", 0, 4095), {}, "/summary/bytes_sent"),
    ("summary rounds_to", set_item("/summary/rounds_to_2.5e-3", 1, 50), {}, "rounds_to_2.5e-3"),
    ("summary too long", lambda f: replace_dataset(f, "/summary/time", [2.0, 0.75, 1.0]), {}, "3 rows for 2 trials"),
    ("summary lists another trial", set_item("/summary/trial", 1, 7), {}, "/summary/trial"),
    ("summary column missing", delete("/summary/rounds"), {}, "/summary/rounds: missing"),
    ("trial group not numbered", lambda f: f.move("/trials/1", "/trials/01"), {}, "/trials/01"),
    ("extra root member", lambda f: f.create_group("extra"), {}, "extra"),
]


def main(sample):
    failures = []
    ok = check_file(sample, **EXPECT)
    if ok:
        failures.append(f"the sample itself is reported invalid: {ok}")

    with tempfile.TemporaryDirectory() as tmp:
        for i, (what, damage, overrides, needle) in enumerate(CASES):
            path = os.path.join(tmp, f"case{i}.h5")
            shutil.copyfile(sample, path)
            if damage is not None:
                with h5py.File(path, "r+") as f:
                    damage(f)
            kwargs = {**EXPECT, **overrides}
            problems = check_file(path, **kwargs)
            if not any(needle in p for p in problems):
                failures.append(f"{what}: expected a problem mentioning {needle!r}, got {problems}")

        # Not an HDF5 file at all: a message, not a traceback.
        junk = os.path.join(tmp, "junk.h5")
        with open(junk, "w") as out:
            out.write("not hdf5\n")
        problems = check_file(junk)
        if len(problems) != 1 or "cannot open" not in problems[0]:
            failures.append(f"junk file: {problems}")

        # The command line: exit codes and one line per problem.
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_trace.py")
        good = subprocess.run([sys.executable, script, sample, "--peers", "8", "--trials", "2",
                               "--complete", "0", "--rounds", "4"], capture_output=True, text=True)
        if good.returncode != 0:
            failures.append(f"CLI on the sample: exit {good.returncode}: {good.stdout}{good.stderr}")
        bad = subprocess.run([sys.executable, script, sample, "--peers", "9", "--trials", "3"],
                             capture_output=True, text=True)
        lines = bad.stdout.splitlines()
        if bad.returncode != 1 or len(lines) != 2 or bad.stderr:
            failures.append(f"CLI with wrong expectations: exit {bad.returncode}, output {bad.stdout!r}{bad.stderr!r}")

    for f in failures:
        print(f"FAIL {f}")
    if failures:
        return 1
    print(f"check_trace.py caught all {len(CASES)} kinds of damage")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: test_check_trace.py SAMPLE_FILE", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
