#!/usr/bin/python3
"""Unit tests of schema v9's layout of /trials in python/avbench (one set of 2-D
datasets over (trial, row) instead of v8's group per trial).

    test_avbench_layouts.py

With synthetic traces written in v8's layout and rewritten by avbench.layouts.to_v9
(synthetic_traces.py), in a temporary folder:

- the same run reads the same in both layouts, to the type and the bit: load_trace
  (all columns and a subset), its xarray form, read_summary, the trial accessor
  (avbench.trials), compare's and aggregate's rows, paired; with trials of unequal
  length (v9 pads them), a trial cut short, no trial at all, older versions (v1,
  v3, v4) rewritten as v9, and v9 -> v8 -> v9 round trips;
- the accessor on its own: positions, IndexError, a path or an open file, v8
  groups whose order is not tracked, rows taken from `rows` and not from the fill;
- damaged v9 traces, which load_trace (both forms) refuses with a TraceError naming
  the file and the dataset: a missing or mistyped dataset, wrong shapes, trial
  indices, rows out of range, scales and `round` breaking the index rules, /summary
  disagreeing with /trials, complete flags, values and padding.

test_avbench_analysis.py reads the programs' own v9 traces. Run with Debian's
/usr/bin/python3 (ctest: avbench_layouts).
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
import unittest
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

import avbench
from avbench import compare, schema
from avbench.layouts import to_v8, to_v9
from avbench.trials import all_trial_columns, trial_columns, trial_count, trial_info, trial_targets
from synthetic_traces import assert_same_run, write_averaging, write_sgd  # beside this file


class Folder(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="avb-layouts-"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def both(self, write, name="t", **kw):
        """(v8 path, v9 path) of one synthetic run written by `write`."""
        v8, v9 = self.dir / f"{name}8.h5", self.dir / f"{name}9.h5"
        write(v8, version=8, **kw)
        write(v9, version=9, **kw)
        return v8, v9


class SameRun(Folder):
    def test_averaging(self):
        assert_same_run(*self.both(write_averaging))

    def test_unequal_trials_and_a_trial_cut_short(self):
        v8, v9 = self.both(write_averaging, rounds_of=[4, 2, 3], complete=0, last_trial_complete=0)
        assert_same_run(v8, v9)
        assert_same_run(v8, v9, columns=["variance", "bytes_sent"])
        ds = avbench.load_trace(v9, as_xarray=True)
        self.assertEqual(ds["alive"].dtype, np.float64)  # padded: NaN past a trial's rows
        self.assertTrue(np.isnan(ds["variance"].values[1, 3:]).all())
        self.assertEqual(avbench.load_trace(v9).groupby("trial")["complete"].first().tolist(), [True, True, False])

    def test_sgd(self):
        assert_same_run(*self.both(write_sgd))
        v8, v9 = self.both(write_sgd, name="u", trials=3, steps_of=[6, 2, 4])
        assert_same_run(v8, v9)
        with h5py.File(v9) as f:
            np.testing.assert_array_equal(f["trials/step"][()], [0, 2, 4, 6])
            np.testing.assert_array_equal(f["trials/rows"][()], [4, 2, 3])

    def test_no_trials(self):
        for write in (write_averaging, write_sgd):
            v8, v9 = self.both(write, name=write.__name__, trials=0)
            assert_same_run(v8, v9)
            self.assertEqual(len(avbench.load_trace(v9)), 0)

    def test_older_versions_and_round_trips(self):
        for version, write in ((1, write_averaging), (4, write_averaging), (3, write_sgd)):
            with self.subTest(version=version, kind=write.__name__):
                old, new, back = (self.dir / f"{n}.h5" for n in ("old", "new", "back"))
                write(old, version=version)
                to_v9(old, new)
                a, b = avbench.load_trace(old), avbench.load_trace(new)
                self.assertEqual(set(b["schema_version"]), {9})
                # The columns and attributes the old version lacks read as zeros in both.
                pd.testing.assert_frame_equal(a.drop(columns=["trace", "schema_version"]),
                                              b.drop(columns=["trace", "schema_version"]), check_exact=True)
                to_v8(new, back)
                assert_same_run(new, back)
        with self.assertRaises(ValueError):
            to_v9(new, self.dir / "again.h5")
        with self.assertRaises(ValueError):
            to_v8(back, self.dir / "again.h5")

    def test_tools_read_the_summary_alike(self):
        """compare's table row, aggregate's fields, paired differences: v9's
        /summary/targets is not a column over trials."""
        v8, v9 = self.both(write_averaging, rounds_of=[4, 2, 3])
        self.assertEqual(compare.row(str(v8)), compare.row(str(v9)))
        aggregate = importlib.import_module("avbench.aggregate")  # (avbench.aggregate is figures')
        sweep_table = importlib.import_module("avbench.sweep_table")
        row = sweep_table.Row(index=0, line=2, name="t", program="", engine="", launcher="", peers=8)
        f8, f9 = (aggregate.read_trace(str(p), row) for p in (v8, v9))
        self.assertEqual(f8, f9)
        self.assertFalse(any(k.startswith("targets") for k in f9[0]))
        g8, g9 = self.both(write_averaging, name="g", rate=0.25)
        a = avbench.paired([str(v8), str(g8)])
        b = avbench.paired([str(v9), str(g9)])
        ids = ["trace", "baseline"]
        self.assertEqual(a.drop(columns=ids).to_dict(), b.drop(columns=ids).to_dict())
        self.assertEqual(len(avbench.paired([str(v8), str(v9)])), 3)  # the run against itself, across layouts


class Accessor(Folder):
    def test_positions_paths_and_files(self):
        v8, v9 = self.both(write_averaging, rounds_of=[4, 2, 3], seed0=500)
        for p in (v8, v9):
            self.assertEqual(trial_count(p), 3)
            cols = trial_columns(p, 1)
            self.assertEqual(list(cols)[:3], ["round", "variance", "error"])
            np.testing.assert_array_equal(cols["round"], [0, 1, 2])
            self.assertEqual(cols["round"].dtype, np.int32)
            self.assertEqual(list(trial_columns(p, 2, ["variance", "round"])), ["round", "variance"])
            self.assertEqual(trial_info(p, 2), {"trial": 2, "seed": 502, "complete": 1, "diverged": 0,
                                                "rounds_to_1e-4": 3, "reached_1e-4": 0})
            np.testing.assert_array_equal(trial_targets(p), [1e-4])
            with h5py.File(p) as f:
                self.assertEqual([len(c["variance"]) for c in all_trial_columns(f)], [5, 3, 4])
                for k in (-1, 3):
                    with self.assertRaises(IndexError):
                        trial_columns(f, k)
                    with self.assertRaises(IndexError):
                        trial_info(f, k)

    def test_rows_not_fill(self):
        """A training run's accuracy is NaN by design: a trial's rows are `rows`."""
        _, v9 = self.both(write_sgd, trials=2, steps_of=[2, 6])
        cols = trial_columns(v9, 0)
        self.assertEqual(len(cols["accuracy"]), 2)
        self.assertTrue(np.isnan(cols["accuracy"]).all())
        np.testing.assert_array_equal(cols["step"], [0, 2])
        self.assertEqual(trial_info(v9, 1)["diverged"], 0)

    def test_v8_groups_without_tracked_order(self):
        p = self.dir / "untracked.h5"
        with h5py.File(p, "w") as f:
            f.attrs["schema_version"] = np.int32(8)
            for k in (10, 2, 1):
                f.create_dataset(f"trials/{k}/round", data=np.arange(k + 1, dtype=np.int32))
        self.assertEqual([len(c["round"]) for c in all_trial_columns(p)], [2, 3, 11])


def edit(path, name, change):
    """Applies `change` to the values of dataset `name` and writes them back in place."""
    with h5py.File(path, "a") as f:
        v = f[name][()]
        change(v)
        f[name][...] = v


def replace(path, name, data):
    with h5py.File(path, "a") as f:
        del f[name]
        f[name] = data


class Damaged(Folder):
    """v9 traces that break the layout: load_trace refuses each, in both forms."""

    def setUp(self):
        super().setUp()
        self.avg, self.sgd = self.dir / "a.h5", self.dir / "s.h5"
        self.fresh()

    def fresh(self):
        write_averaging(self.avg, version=9, rounds_of=[4, 2, 3])
        write_sgd(self.sgd, version=9, trials=3, steps_of=[6, 2, 4])

    def refused(self, path, where, *words):
        for as_xarray in (False, True):
            with self.assertRaises(avbench.TraceError) as cm:
                avbench.load_trace(path, as_xarray=as_xarray)
            msg = str(cm.exception)
            self.assertEqual((cm.exception.path, cm.exception.where), (str(path), where), msg)
            for w in words:
                self.assertIn(w, msg)
        self.fresh()

    def cells(self, *cases):
        """Each case (trace: "avg" or "sgd", dataset, index, value, words...): that cell
        set to the value, refused at the dataset with the words in the message."""
        for trace, name, index, value, *words in cases:
            edit(getattr(self, trace), name, lambda v: v.__setitem__(index, value))
            self.refused(getattr(self, trace), f"/{name}", *words)

    def test_good_ones_load(self):
        self.assertEqual(len(avbench.load_trace(self.avg)), 5 + 3 + 4)
        self.assertEqual(len(avbench.load_trace(self.sgd)), 4 + 2 + 3)
        self.assertEqual(avbench.trace_state(self.avg), "complete")

    def test_datasets(self):
        with h5py.File(self.avg, "a") as f:
            del f["trials/detection_time"]
        self.refused(self.avg, "/trials/detection_time", "missing")
        replace(self.avg, "trials/alive", np.full((3, 5), 8.0))
        self.refused(self.avg, "/trials/alive", "type float64, expected int32")
        replace(self.avg, "trials/variance", np.zeros(3))
        self.refused(self.avg, "/trials/variance", "not 2-D")
        replace(self.avg, "trials/error", np.zeros((3, 6)))
        self.refused(self.avg, "/trials/error", "shape (3, 6), expected (3, 5)")
        replace(self.avg, "trials/rows", np.array([5, 3], np.int32))
        self.refused(self.avg, "/trials/rows", "expected (3,)")
        with h5py.File(self.avg, "a") as f:
            del f["summary/targets"]
        self.refused(self.avg, "/summary/targets", "missing")
        replace(self.avg, "summary/seed", np.arange(3, dtype=np.int64))
        self.refused(self.avg, "/summary/seed", "expected uint64")
        replace(self.avg, "summary/seed", np.arange(2, dtype=np.uint64))
        self.refused(self.avg, "/summary/seed", "2 rows for 3 trials")

    def test_trials_and_rows(self):
        self.cells(("avg", "trials/trial", 1, 0, "more than once"),
                   ("avg", "trials/rows", 1, 0, "entry 1 is 0"),
                   ("avg", "trials/rows", 1, 6, "outside 1 .. 5"),
                   ("avg", "trials/rows", 0, 4, "longest trial has 4 rows"),
                   ("avg", "summary/trial", 2, 7, "row 2 is trial 7"),
                   ("avg", "summary/rounds", 1, 3, "row 1 (trial 1) is 3"),
                   ("sgd", "summary/steps", 2, 6, "step 4"))

    def test_index_rules(self):
        self.cells(("avg", "trials/round", 2, 1, "row 2", "1 -> 1"),
                   ("sgd", "trials/step", 0, 1, "row 0 is step 1"),
                   ("sgd", "trials/step", 2, 2, "does not increase at row 2"),
                   ("sgd", "trials/round", (2, 2), 0, "trial 2: decreases at row 2"),
                   ("sgd", "trials/round", (1, 0), 1, "trial 1: row 0 is round 1"))

    def test_flags(self):
        self.cells(("avg", "summary/complete", 0, 0, "row 0 (trial 0)", "not the last trial written"),
                   ("avg", "summary/complete", 2, 0, "0 in a run marked complete"),
                   ("avg", "summary/reached_1e-4", 1, 2, "must be 0 or 1"))

    def test_values_and_padding(self):
        self.cells(("avg", "trials/variance", (2, 3), np.nan, "trial 2, row 3", "finite"),
                   ("avg", "trials/variance", (2, 4), 0.5, "past the trial's 4 rows", "fill value nan"),
                   ("avg", "trials/alive", (1, 4), 8, "fill value -1"),
                   ("sgd", "trials/loss", (1, 0), np.nan, "trial 1, row 0"))
        edit(self.sgd, "trials/loss", lambda v: v.__setitem__((0, 2), np.inf))  # a diverged model: allowed
        self.assertEqual(len(avbench.load_trace(self.sgd)), 9)
        # columns= reads less, but the others' metadata is still checked
        replace(self.avg, "trials/alive", np.full((3, 5), 8, np.int64))
        with self.assertRaises(avbench.TraceError) as cm:
            avbench.load_trace(self.avg, columns=["variance"])
        self.assertEqual(cm.exception.where, "/trials/alive")

    def test_read_summary(self):
        df = avbench.read_summary(self.avg)
        self.assertNotIn("targets", df.columns)
        self.assertEqual(len(df), 3)
        replace(self.avg, "summary/time", np.zeros(4))
        with self.assertRaises(avbench.TraceError) as cm:
            avbench.read_summary(self.avg)
        self.assertEqual(cm.exception.where, "/summary/time")


class Rules(unittest.TestCase):
    """schema.py's v9 rules, which avbench check shares, on their own."""

    def test_fill_values_and_checks(self):
        self.assertEqual(schema.FILL["uint64"], 2**64 - 1)
        self.assertEqual(schema.TABLE_SINCE, 9)
        self.assertTrue(schema.is_table(9) and not schema.is_table(8))
        self.assertIsNone(schema.rows_problem([], 0))
        self.assertIn("hold 2", schema.rows_problem([], 2))
        self.assertIsNone(schema.padding_problem(np.array([[1, -1], [1, 2]], np.int32), [1, 2], "int32"))
        with tempfile.TemporaryDirectory() as d:
            with h5py.File(Path(d) / "f.h5", "w") as f:
                ds = f.create_dataset("x", shape=(1, 1), dtype="f8", fillvalue=np.nan)
                self.assertIn("_FillValue", schema.fill_problem(ds, "float64"))
                ds.attrs["_FillValue"] = np.float64(np.nan)
                self.assertIsNone(schema.fill_problem(ds, "float64"))
                self.assertIn("HDF5 fill value", schema.fill_problem(ds, "int32") or "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
