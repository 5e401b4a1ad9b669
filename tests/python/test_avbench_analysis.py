#!/usr/bin/python3
"""Unit tests of the analysis package python/avbench (docs/analysis.md).

    test_avbench_analysis.py [AVERAGING_BENCH [MPIEXEC]]

Builds small synthetic traces with h5py in a temporary folder, in the layout of
docs/trace-format.md (schema v1, v3 and v4 averaging and sgd, a trace stopped
early, one with no trial: synthetic_traces.py), and checks the DataFrames load_trace/load_sweep make
(shape, columns, types, values) and that the figures are drawn and written; and
damaged traces (NaN where the format promises finite values, string or float
columns where numbers or integers belong, a type other than the format's, trial
groups like "01" or "-1", missing attributes, a repeated or skipped round or step,
ragged columns, complete flags that contradict each other, a file that is not
HDF5), which load_trace must refuse with a TraceError naming the file and the
dataset, and read_summary and trace_state too for an unknown schema version. Given the Open
MPI build of averaging_bench (ctest passes it), it also runs it on 2 real ranks (and
sgd_bench beside it on the sequential engine) and loads the real traces, of today's
schema (v9, one table over (trial, row)), so the synthetic layout cannot drift from
the writer's unnoticed; each rewritten in v8's layout (avbench.layouts.to_v8) must
read the same. test_avbench_layouts.py tests the v9 layout itself.
Run with Debian's /usr/bin/python3.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import avbench  # noqa: E402
from avbench import figures, schema, traces  # noqa: E402
from avbench.trials import trial_columns, trial_count, trial_info  # noqa: E402
from synthetic_traces import (assert_same_run, other_layout, replace_dataset, str_attr,  # noqa: E402
                              write_averaging, write_sgd)  # (beside this file)

BENCH = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AVB_AVERAGING_BENCH", "")
MPIEXEC = sys.argv[2] if len(sys.argv) > 2 else shutil.which("mpiexec") or "mpiexec"
SGD_BENCH = str(Path(BENCH).with_name("sgd_bench")) if BENCH else ""  # built beside it
del sys.argv[1:]  # unittest parses the rest

class InFolder(unittest.TestCase):
    """A test with a temporary folder of its own, self.dir (named PREFIX...), removed after it."""
    prefix = "avb-analysis-"

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix=self.prefix))
        self.addCleanup(shutil.rmtree, self.dir)


class Loading(InFolder):

    def test_averaging_v3_shape_columns_values(self):
        p = self.dir / "a.h5"
        write_averaging(p, trials=3, rounds=4, peers=8)
        df = avbench.load_trace(p)
        self.assertEqual(df.shape[0], 3 * 5)  # trials x (rounds + 1)
        for col in (*traces.ID_COLUMNS, *traces.ROW_COLUMNS["averaging"], "bytes_per_peer", "rounds_to_1e-4",
                    "reached_1e-4", "protocol", "fail-rate", "grid", "config_seed", "stop-at-target"):
            self.assertIn(col, df.columns)
        self.assertNotIn("text", df.columns)
        self.assertEqual(list(df.columns[:len(traces.ID_COLUMNS)]), list(traces.ID_COLUMNS))
        self.assertEqual(set(df["run_kind"]), {"averaging"})
        self.assertEqual(set(df["peers"]), {8})
        self.assertEqual(set(df["trace"]), {str(p)})
        # Config typed: numbers as numbers, booleans as bools, the rest as text.
        self.assertEqual(df["fail-rate"].iat[0], 0.01)
        self.assertEqual(df["dim"].iat[0], 1)
        self.assertIs(bool(df["stop-at-target"].iat[0]), False)
        self.assertEqual(df["grid"].iat[0], "32x32")
        self.assertEqual(df["target"].iat[0], "0.0001,1e-09")
        self.assertEqual(df["config_seed"].iat[0], 7)
        self.assertEqual(df["seed"].dtype, np.uint64)
        self.assertEqual(list(df[df["trial"] == 1]["seed"].unique()), [101])
        t2 = df[df["trial"] == 2]
        np.testing.assert_allclose(t2["variance"], 0.5 ** np.arange(5) * 3.0)
        np.testing.assert_array_equal(t2["round"], np.arange(5))
        np.testing.assert_allclose(t2["bytes_per_peer"], np.arange(5) * 16.0)
        self.assertTrue(df["complete"].all() and df["trace_complete"].all())

    def test_v1_has_no_run_kind_nor_decode_failures(self):
        p = self.dir / "v1.h5"
        write_averaging(p, version=1, trials=2, rounds=3)
        df = avbench.load_trace(p)
        self.assertEqual(df.shape[0], 8)
        self.assertEqual(set(df["schema_version"]), {1})
        self.assertEqual(set(df["run_kind"]), {"averaging"})
        self.assertTrue((df["decode_failures"] == 0).all())

    def test_unknown_version_refused(self):
        p = self.dir / "v10.h5"
        write_averaging(p, version=3)
        with h5py.File(p, "a") as f:
            f.attrs["schema_version"] = np.int32(10)
        with self.assertRaises(ValueError):
            avbench.load_trace(p)

    def test_incomplete_kept_and_flagged(self):
        p = self.dir / "cut.h5"
        write_averaging(p, trials=2, rounds=3, complete=0, last_trial_complete=0)
        df = avbench.load_trace(p)
        self.assertEqual(df.shape[0], 8)
        self.assertFalse(df["trace_complete"].any())
        self.assertEqual(df.groupby("trial")["complete"].first().tolist(), [True, False])

    def test_no_trials(self):
        p = self.dir / "empty.h5"
        write_averaging(p, trials=0, complete=0)
        df = avbench.load_trace(p)
        self.assertEqual(len(df), 0)
        self.assertIn("variance", df.columns)
        self.assertIn("protocol", df.columns)

    def test_sgd(self):
        p = self.dir / "s.h5"
        write_sgd(p, trials=2, steps=6, every=2)
        df = avbench.load_trace(p)
        self.assertEqual(df.shape[0], 2 * 4)
        for col in (*traces.ROW_COLUMNS["sgd"], "steps_to_1e-2", "objective", "lr", "local-steps"):
            self.assertIn(col, df.columns)
        self.assertEqual(df["lr"].iat[0], 0.1)
        np.testing.assert_array_equal(df[df["trial"] == 0]["step"], [0, 2, 4, 6])
        self.assertEqual(set(df["engine"]), {"openmpi"})

    def test_sweep_folder_glob_list_and_kind(self):
        write_averaging(self.dir / "N8_moshpit.h5", protocol="moshpit", trials=2, rounds=3)
        write_averaging(self.dir / "N8_gossip.h5", protocol="gossip", trials=3, rounds=3,
                        extra_config={"topology": "ring"})
        write_sgd(self.dir / "sgd.h5")
        (self.dir / ".N8_x.h5.tmp.42").write_bytes(b"not a trace")  # a run in progress: never matched
        both = avbench.load_sweep(self.dir)
        self.assertEqual(len(both["trace"].unique()), 3)
        avg = avbench.load_sweep(self.dir, run_kind="averaging")
        self.assertEqual(avg.shape[0], (2 + 3) * 4)
        self.assertEqual(sorted(avg["protocol"].unique()), ["gossip", "moshpit"])
        # A config option only gossip has is NaN for moshpit's rows.
        self.assertTrue(avg[avg["protocol"] == "moshpit"]["topology"].isna().all())
        self.assertEqual(avbench.load_sweep(str(self.dir / "N8_*.h5")).shape, avg.shape)
        one = avbench.load_sweep([self.dir / "N8_gossip.h5"])
        self.assertEqual(one.shape[0], 12)
        self.assertEqual(avbench.per_trial(avg).shape[0], 5)
        self.assertEqual(avbench.load_sweep(self.dir, run_kind="sgd").shape[0], 8)
        with self.assertRaises(FileNotFoundError):
            avbench.load_sweep(self.dir / "nothing")
        with self.assertRaises(FileNotFoundError):
            avbench.load_sweep(str(self.dir / "none_*.h5"))

    def test_columns_subset(self):
        p = self.dir / "a.h5"
        write_averaging(p)
        df = avbench.load_trace(p, columns=["variance"])
        self.assertIn("round", df.columns)
        self.assertNotIn("error", df.columns)


class Damaged(InFolder):
    """Traces that break a promise of docs/trace-format.md: load_trace refuses each with
    one TraceError (a ValueError) whose message names the file and what is at fault."""
    prefix = "avb-damaged-"

    def setUp(self):
        super().setUp()
        self.avg = self.dir / "a.h5"
        write_averaging(self.avg, version=4, trials=3, rounds=4)
        self.sgd = self.dir / "s.h5"
        write_sgd(self.sgd, version=4, trials=2)

    def refused(self, path, where, *words):
        with self.assertRaises(avbench.TraceError) as cm:
            avbench.load_trace(path)
        msg = str(cm.exception)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertTrue(msg.startswith(f"{path}: {where}"), msg)
        for w in words:
            self.assertIn(w, msg)
        self.assertEqual((cm.exception.path, cm.exception.where), (str(path), where))
        return msg

    def test_good_v4_traces_load(self):
        self.assertEqual(len(avbench.load_trace(self.avg)), 15)
        self.assertEqual(len(avbench.load_trace(self.sgd)), 8)

    def test_nan_and_inf_where_finite_promised(self):
        for col, bad in (("variance", np.nan), ("time", np.inf), ("error", -np.inf), ("detection_time", np.nan)):
            with self.subTest(col=col):
                write_averaging(self.avg, version=4, trials=3, rounds=4)
                v = 0.5 ** np.arange(5)
                v[3] = bad
                replace_dataset(self.avg, f"trials/1/{col}", v)
                self.refused(self.avg, f"/trials/1/{col}", "row 3", "finite")

    def test_string_and_float_columns_refused(self):
        replace_dataset(self.avg, "trials/0/variance", np.array([b"1", b"0.5", b"0.25", b"0.1", b"0"]))
        self.refused(self.avg, "/trials/0/variance", "expected float64")
        write_averaging(self.avg, version=4, trials=3, rounds=4)
        replace_dataset(self.avg, "trials/2/alive", np.full(5, 8.0))
        self.refused(self.avg, "/trials/2/alive", "type float64, expected int32")
        write_averaging(self.avg, version=4, trials=3, rounds=4)
        replace_dataset(self.avg, "trials/2/round", np.zeros((5, 2), np.int32))
        self.refused(self.avg, "/trials/2/round", "1-D")

    def test_trial_names(self):
        for bad in ("01", "-1", "x", "1.0", " 2"):
            with self.subTest(name=bad):
                write_averaging(self.avg, version=4, trials=3, rounds=4)
                with h5py.File(self.avg, "a") as f:
                    f.copy(f["trials/1"], f["trials"], name=bad)  # "01" would merge with "1"
                self.refused(self.avg, f"/trials/{bad}", "not a trial")

    def test_attributes(self):
        with h5py.File(self.avg, "a") as f:
            del f.attrs["n_peers"]
        self.refused(self.avg, "/ attribute n_peers", "missing")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            str_attr(f, "n_peers", "8")
        self.refused(self.avg, "/ attribute n_peers", "expected int32")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            f["trials/2"].attrs["seed"] = 1.5
        self.refused(self.avg, "/trials/2 attribute seed", "expected uint64")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            str_attr(f["trials/0"], "rounds_to_1e-4", "three")
        self.refused(self.avg, "/trials/0 attribute rounds_to_1e-4", "expected int32")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            f.attrs["n_peers"] = np.int64(8)  # the right value, but not the format's int32
        self.refused(self.avg, "/ attribute n_peers", "type int64")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            f.attrs["schema_version"] = np.int32(99)
        self.refused(self.avg, "/ attribute schema_version", "99")

    def test_missing_and_ragged_columns(self):
        with h5py.File(self.avg, "a") as f:
            del f["trials/1/detection_time"]
        self.refused(self.avg, "/trials/1/detection_time", "missing")
        write_averaging(self.avg, version=4)
        replace_dataset(self.avg, "trials/1/groups", np.zeros(3, np.int32))
        self.refused(self.avg, "/trials/1/groups", "3 rows")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            del f["trials/2/targets"]
        self.refused(self.avg, "/trials/2/targets", "missing")

    def test_complete_flags(self):
        """Only the last trial written may be cut short, and none in a complete run."""
        write_averaging(self.avg, version=4, trials=3, complete=1, last_trial_complete=0)
        self.refused(self.avg, "/trials/2 attribute complete", "0 in a run marked complete")
        write_averaging(self.avg, version=4, trials=3, complete=0)
        with h5py.File(self.avg, "a") as f:
            f["trials/0"].attrs["complete"] = np.int32(0)
        self.refused(self.avg, "/trials/0 attribute complete", "not the last trial written")
        write_averaging(self.avg, version=4, complete=2)
        self.refused(self.avg, "/ attribute complete", "must be 0 or 1")
        write_averaging(self.avg, version=4)
        with h5py.File(self.avg, "a") as f:
            del f["trials/1"].attrs["complete"]
        self.refused(self.avg, "/trials/1 attribute complete", "missing")

    def test_index_columns(self):
        """round 0, 1, 2, ... (averaging); step from 0 and increasing, round never
        decreasing (sgd): in both forms of load_trace, as avbench check says."""
        for path, col, data, words in (
                (self.avg, "trials/1/round", np.array([0, 1, 1, 3, 4], np.int32), ("row 2", "1 -> 1")),
                (self.avg, "trials/0/round", np.array([1, 2, 3, 4, 5], np.int32), ("row 0 is round 1",)),
                (self.sgd, "trials/1/step", np.array([0, 2, 2, 6], np.int32), ("does not increase at row 2",)),
                (self.sgd, "trials/0/round", np.array([0, 1, 0, 3], np.int32), ("decreases at row 2",))):
            with self.subTest(col=col, data=data):
                write_averaging(self.avg, version=4, trials=3, rounds=4)
                write_sgd(self.sgd, version=4, trials=2)
                replace_dataset(path, col, data)
                self.refused(path, f"/{col}", *words)
                with self.assertRaises(avbench.TraceError) as cm:
                    avbench.load_trace(path, as_xarray=True)
                self.assertTrue(str(cm.exception).startswith(f"{path}: /{col}: "), cm.exception)

    def test_columns_subset_still_checks_structure(self):
        """columns= reads less, but every column is still checked from its metadata."""
        replace_dataset(self.avg, "trials/1/alive", np.full(5, 8, np.int64))
        with self.assertRaises(avbench.TraceError) as cm:
            avbench.load_trace(self.avg, columns=["variance"])
        self.assertEqual(cm.exception.where, "/trials/1/alive")

    def test_summary_and_state_check_the_version(self):
        """read_summary and trace_state refuse what load_trace refuses at the root."""
        for value, words in ((np.int32(10), "is 10"), (np.int64(7), "type int64"), (None, "missing")):
            with self.subTest(value=value):
                write_averaging(self.avg, version=4)
                with h5py.File(self.avg, "a") as f:
                    del f.attrs["schema_version"]
                    if value is not None:
                        f.attrs["schema_version"] = value
                for read in (avbench.load_trace, avbench.read_summary, avbench.trace_state):
                    with self.assertRaises(avbench.TraceError) as cm:
                        read(self.avg)
                    self.assertEqual((cm.exception.path, cm.exception.where),
                                     (str(self.avg), "/ attribute schema_version"), read.__name__)
                    self.assertIn(words, str(cm.exception))
        write_averaging(self.avg, version=4, trials=2)
        replace_dataset(self.avg, "summary/rounds", np.array([4, 4, 4], np.int32))
        with self.assertRaises(avbench.TraceError) as cm:
            avbench.read_summary(self.avg)
        self.assertEqual(cm.exception.where, "/summary/rounds")

    def test_not_hdf5(self):
        bad = self.dir / "junk.h5"
        bad.write_bytes(b"not a trace at all")
        self.refused(bad, "/", "HDF5")
        with self.assertRaises(FileNotFoundError):
            avbench.load_trace(self.dir / "absent.h5")

    def test_sgd_model_columns_may_diverge_but_not_start_so(self):
        loss = 1.0 + 0.5 ** np.arange(4)
        loss[2:] = [np.inf, np.nan]  # a diverged run: allowed after row 0
        replace_dataset(self.sgd, "trials/0/loss", loss)
        self.assertEqual(len(avbench.load_trace(self.sgd)), 8)
        loss[0] = np.nan
        replace_dataset(self.sgd, "trials/0/loss", loss)
        self.refused(self.sgd, "/trials/0/loss", "row 0")
        write_sgd(self.sgd, version=4)
        replace_dataset(self.sgd, "trials/1/gap", np.array([1.0, 0.5, -np.inf, 0.1]))
        self.refused(self.sgd, "/trials/1/gap", "row 2")
        write_sgd(self.sgd, version=4)
        replace_dataset(self.sgd, "trials/1/accuracy", np.array([0.5, np.inf, 0.5, 0.5]))
        self.refused(self.sgd, "/trials/1/accuracy", "row 1")
        write_sgd(self.sgd, version=4)
        replace_dataset(self.sgd, "trials/1/time", np.array([0.0, np.nan, 0.2, 0.3]))
        self.refused(self.sgd, "/trials/1/time", "row 1")

    def test_sweep_names_the_bad_file(self):
        write_averaging(self.dir / "b.h5", version=4)
        replace_dataset(self.dir / "b.h5", "trials/0/variance", np.full(5, np.nan))
        with self.assertRaises(avbench.TraceError) as cm:
            avbench.load_sweep(self.dir)
        self.assertIn(str(self.dir / "b.h5"), str(cm.exception))


class Figures(InFolder):
    def setUp(self):
        super().setUp()
        write_averaging(self.dir / "m.h5", protocol="moshpit", trials=3, rounds=4, rate=0.1)
        write_averaging(self.dir / "g.h5", protocol="gossip", trials=3, rounds=4, rate=0.5,
                        complete=0, last_trial_complete=0)
        self.df = avbench.load_sweep(self.dir)

    def tearDown(self):
        plt.close("all")

    def test_aggregate_geometric_mean_and_band(self):
        sub = self.df[self.df["protocol"] == "moshpit"]
        c = figures.aggregate(sub, "round", "variance")
        self.assertEqual(len(c), 5)
        # Trials scale by 1, 2, 3: geometric mean 6^(1/3) times 0.1^r.
        np.testing.assert_allclose(c["variance"], 6 ** (1 / 3) * 0.1 ** np.arange(5))
        logs = np.log([1.0, 2.0, 3.0])
        se = logs.std(ddof=1) / np.sqrt(3)
        np.testing.assert_allclose(c["hi"] / c["variance"], np.exp(se))
        np.testing.assert_allclose(c["lo"] / c["variance"], np.exp(-se))
        self.assertEqual(set(c["trials"]), {3})
        m = figures.aggregate(sub, "time", "variance", stat="mean", band="minmax")
        np.testing.assert_allclose(m["variance"], 2.0 * 0.1 ** np.arange(5))
        np.testing.assert_allclose(m["time"], np.arange(5) * 0.5 * 2.0)  # mean over trials
        np.testing.assert_allclose(m["hi"], 3.0 * 0.1 ** np.arange(5))

    def test_incomplete_trials_left_out_unless_asked(self):
        sub = self.df[self.df["protocol"] == "gossip"]
        self.assertEqual(set(figures.aggregate(sub)["trials"]), {2})
        self.assertEqual(set(figures.aggregate(sub, include_incomplete=True)["trials"]), {3})

    def test_trial_that_stopped_early_holds_its_last_value(self):
        sub = self.df[self.df["protocol"] == "moshpit"]
        sub = sub[~((sub["trial"] == 0) & (sub["round"] > 2))]  # trial 0 stopped after round 2
        c = figures.aggregate(sub, "round", "variance")
        self.assertEqual(set(c["trials"]), {3})
        np.testing.assert_allclose(c["variance"].iat[4], (1 * 0.1 ** 2 * 2 * 0.1 ** 4 * 3 * 0.1 ** 4) ** (1 / 3))

    def test_zero_variance_is_floored(self):
        sub = self.df[self.df["protocol"] == "moshpit"].copy()
        sub.loc[sub["round"] == 4, "variance"] = 0.0
        c = figures.aggregate(sub)
        self.assertAlmostEqual(c["variance"].iat[4], figures.FLOOR)

    def test_plot_metric_one_line_per_protocol(self):
        ax = avbench.plot_metric(self.df, x="bytes_sent", by="protocol")
        self.assertEqual(len(ax.get_lines()), 2)
        self.assertEqual(ax.get_yscale(), "log")
        self.assertEqual(sorted(t.get_text() for t in ax.get_legend().get_texts()), ["gossip", "moshpit"])
        np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), np.arange(5) * 16.0)
        ax2 = avbench.plot_metric(self.df, x="time", by=["protocol", "peers"])
        self.assertEqual(len(ax2.get_lines()), 2)
        with self.assertRaises(KeyError):
            avbench.plot_metric(self.df, y="no_such_column")

    def test_standard_figures_written(self):
        out = self.dir / "figs"
        paths = avbench.standard_figures(self.df, out)
        self.assertEqual([p.name for p in paths],
                         ["variance_vs_rounds.png", "variance_vs_time.png", "variance_vs_bytes.png"])
        for p in paths:
            self.assertGreater(p.stat().st_size, 1000)
            self.assertEqual(p.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")

    def test_sgd_figures_and_mixed_kinds_refused(self):
        write_sgd(self.dir / "s.h5")
        both = avbench.load_sweep(self.dir)
        with self.assertRaises(ValueError):
            avbench.plot_metric(both)
        paths = avbench.standard_figures(both[both["run_kind"] == "sgd"], self.dir / "sgd", prefix="q_")
        self.assertEqual([p.name for p in paths],
                         ["q_relative_gap_vs_steps.png", "q_relative_gap_vs_time.png", "q_relative_gap_vs_bytes.png"])
        self.assertTrue(all(p.stat().st_size > 1000 for p in paths))


@unittest.skipUnless(BENCH and os.access(BENCH, os.X_OK), "no averaging_bench given")
class RealTrace(InFolder):
    """The writer's own traces (schema.SCHEMA_VERSION, v9's table): what the synthetic
    ones imitate; and the same run rewritten in v8's layout (avbench.layouts.to_v8),
    which must read the same."""

    def test_real_trace(self):
        out = self.dir / "real.h5"
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        subprocess.run([MPIEXEC, "-n", "2", "--oversubscribe", BENCH, "--protocol", "gossip", "--trials", "3",
                        "--rounds", "4", "--dim", "4", "--fail-rate", "0.1", "--out", str(out), "--quiet"],
                       check=True, env=env, timeout=120, capture_output=True)
        df = avbench.load_trace(out)
        self.assertEqual(df.shape[0], 3 * 5)
        self.assertEqual(set(df["schema_version"]), {schema.SCHEMA_VERSION})
        self.assertEqual(set(df["run_kind"]), {"averaging"})
        self.assertEqual(set(df["peers"]), {2})
        self.assertEqual(set(df["engine"]), {"openmpi"})
        self.assertEqual(df["protocol"].iat[0], "gossip")
        self.assertEqual(df["dim"].iat[0], 4)
        self.assertEqual(df["fail-rate"].iat[0], 0.1)
        self.assertIn("config_seed", df.columns)
        with h5py.File(out) as f:
            self.assertEqual(trial_count(f), 3)
            np.testing.assert_array_equal(df[df["trial"] == 1]["variance"], trial_columns(f, 1)["variance"])
            self.assertEqual(int(df[df["trial"] == 2]["seed"].iat[0]), trial_info(f, 2)["seed"])
        self.assertEqual(other_layout(out, self.dir / "v8.h5"), 8)
        assert_same_run(out, self.dir / "v8.h5")
        paths = avbench.standard_figures(df, self.dir / "figs")
        self.assertTrue(all(p.stat().st_size > 1000 for p in paths))

    @unittest.skipUnless(os.access(SGD_BENCH, os.X_OK), "no sgd_bench beside averaging_bench")
    def test_real_sgd_trace_stopped_at_target(self):
        """Trials of unequal length (--stop-at-target): v9 pads them, and reads as v8."""
        out = self.dir / "sgd.h5"
        subprocess.run([SGD_BENCH, "--engine", "sequential", "--peers", "8", "--protocol", "gossip", "--objective",
                        "logistic", "--steps", "400", "--eval-every", "5", "--trials", "4", "--fail-rate", "0.1",
                        "--target", "0.2", "--stop-at-target", "--out", str(out), "--quiet"],
                       check=True, timeout=120, capture_output=True)
        with h5py.File(out) as f:
            self.assertEqual(int(f.attrs["schema_version"]), schema.SCHEMA_VERSION)
            rows = [len(trial_columns(f, k)["step"]) for k in range(trial_count(f))]
        self.assertEqual(len(avbench.load_trace(out)), sum(rows))
        self.assertGreater(len(set(rows)), 1, "the trials should stop at different steps")
        self.assertEqual(other_layout(out, self.dir / "v8.h5"), 8)
        assert_same_run(out, self.dir / "v8.h5")
        assert_same_run(out, self.dir / "v8.h5", columns=["relative_gap"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
