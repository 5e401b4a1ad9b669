#!/usr/bin/python3
"""Test the checker itself: it must accept the sample traces and catch each kind of
damage the schema rules out.

    /usr/bin/python3 test_check_trace.py sample.h5 [sample_sgd.h5]

where sample.h5 comes from `AVB_TRACE_SAMPLE=sample.h5 unit_tests
--gtest_filter=TraceSample.Write` (averaging: 2 trials, 8 peers, run cut short, at
most 4 rounds) and sample_sgd.h5 from `AVB_TRACE_SAMPLE_SGD=sample_sgd.h5
unit_tests --gtest_filter=TraceSample.WriteTraining` (sgd: 2 trials, 4 peers, run
cut short, 8 steps, a round every 4 steps, a row every 2). Each file is tested
with the cases of its run_kind. Every case copies the sample, damages the copy
with h5py, and expects check_trace.check_file to report a problem mentioning a
given text; a few cases instead turn the sample into another valid trace (a v1
file, a logistic run, a run stopped before its first trial) and expect no
problem at all. A checker that accepts everything would pass the round-trip
tests; it fails here.

The readers (python/avbench: load_trace in both forms) are held to the checker on
the same copies: every valid one loads, and every damage named in READERS_REFUSE,
the structural faults both apply (python/avbench/schema.py), is refused by them as
a TraceError naming the file and that dataset or attribute.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from a test run
import avbench  # noqa: E402  (python/avbench and tests/scripts: on PYTHONPATH, tests/CMakeLists.txt)
from avbench.check import check_file  # noqa: E402
from sample_readback import verdict  # noqa: E402

EXPECT = dict(peers=8, trials=2, complete=0, rounds=4)
EXPECT_SGD = dict(kind="sgd", peers=4, trials=2, complete=0, steps=8, local_steps=4, eval_every=2)


def replace_dataset(f, name, values, dtype=None):
    """NAME with new VALUES (and DTYPE), attached to the scale the old one had; a
    scale stays a scale of its name, but what was attached to it loses it."""
    old = f[name]
    data = np.asarray(values, dtype=dtype if dtype is not None else old.dtype)
    scales = list(old.dims[0].values())
    scale_name = h5py.h5ds.get_scale_name(old.id) if h5py.h5ds.is_scale(old.id) else None
    for s in scales:
        old.dims[0].detach_scale(s)
    del f[name]
    new = f.create_dataset(name, data=data)
    for s in scales:
        new.dims[0].attach_scale(s)
    if scale_name is not None:
        new.make_scale(scale_name.decode() if isinstance(scale_name, bytes) else scale_name)


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
            if name in target.attrs:
                del target.attrs[name]
            target.attrs.create(name, value, dtype=dtype)
    return damage


def rename_attr(obj, old, new):
    def damage(f):
        value = f[obj].attrs[old]
        del f[obj].attrs[old]
        f[obj].attrs[new] = value
    return damage


def both(*damages):
    def damage(f):
        for d in damages:
            d(f)
    return damage


def delete(path, attr=None):
    def damage(f):
        if attr is None:
            del f[path]
        else:
            del f[path].attrs[attr]
    return damage


def quantizer(name):
    """Records --quantizer in /config, as gossip, pairwise and swarm runs do."""
    return set_attr("/config", "quantizer", name, h5py.string_dtype())


def drop_decode_failures(f):
    """A file from before schema v3, which had no decode_failures column (nor v4's
    detection_time)."""
    for k in f["trials"]:
        del f["trials"][k]["decode_failures"]
    drop_detection_time(f)


def drop_detection_time(f):
    """A file from before schema v4, which had no detection_time column (nor v5's
    diverged)."""
    for k in f["trials"]:
        del f["trials"][k]["detection_time"]
    drop_diverged(f)


def drop_late(f):
    """A file from before schema v8: averaging trials had no late column (detached
    from its scale first, or the scale would keep a reference to nothing)."""
    for k in f["trials"]:
        g = f["trials"][k]
        if "late" in g:
            g["late"].dims[0].detach_scale(g["round"])
            del g["late"]


def drop_diverged(f):
    """A file from before schema v5: training trials had no diverged attribute and
    /summary no diverged column (averaging traces never had them)."""
    for k in f["trials"]:
        if "diverged" in f["trials"][k].attrs:
            del f["trials"][k].attrs["diverged"]
    if "diverged" in f["summary"]:
        del f["summary"]["diverged"]


def detection_timeout(seconds):
    """Records --detection-timeout in /config."""
    return set_attr("/config", "detection-timeout", seconds, h5py.string_dtype())


def detection_times(path, values):
    """Replaces a trial's detection_time column."""
    return lambda f: replace_dataset(f, path, values, "float64")


def half_second_detections(values):
    """A --detection-timeout of 0.5 s in /config, and trial 0's detection_time VALUES."""
    return both(detection_timeout("0.5"), detection_times("/trials/0/detection_time", values))


def as_version(v):
    """Marks the file as of schema V; before v6 without time_model and run_seconds,
    before v7 without /optimum/coordinate (the scales' attributes, which older
    versions lack, are left: nothing reads them there)."""
    marks = [set_attr("/", "schema_version", v, "int32")]
    if v < 8:
        marks.append(drop_late)
    if v < 6:
        marks += [delete("/", "time_model"), delete("/", "run_seconds")]
    if v < 7:
        marks.append(lambda f: f.__delitem__("/optimum/coordinate") if "/optimum/coordinate" in f else None)
    return both(*marks)


def detach(column, scale):
    """COLUMN no longer has SCALE attached (both ends updated, as H5DSdetach_scale does)."""
    def damage(f):
        f[column].dims[0].detach_scale(f[scale])
    return damage


# Trial 0's detection_time column under a --detection-timeout of 0.5 s:
# (description, the column, text expected in a problem or None when valid).
HALF_SECOND_DETECTIONS = [
    ("detection times with a timeout are valid", [0, 0.5, 1.0, 1.0, 1.5], None),
    ("detection time not a multiple of the timeout", [0, 0.5, 0.75, 1.0, 1.5],
     "not a whole number of detection timeouts"),
    ("detection time decreasing", [0, 0.5, 1.0, 0.5, 1.0], "detection_time: decreases at row 3"),
    ("more detections than rounds", [0, 1.0, 1.0, 1.0, 1.0], "charges 2 detection timeouts in 1 rounds"),
    ("detection time in row 0", [0.5, 0.5, 0.5, 0.5, 0.5], "/trials/0/detection_time: row 0 is 0.5"),
]

# (description, damage function or None, check_file keyword overrides, text expected in a problem)
CASES = [
    ("wrong peer count expected", None, {"peers": 9}, "n_peers"),
    ("wrong trial count expected", None, {"trials": 3}, "expected 3"),
    ("wrong completion expected", None, {"complete": 1}, "complete"),
    ("fewer rounds expected", None, {"rounds": 3}, "more than the expected 3"),
    ("root attribute missing", delete("/", "git_sha"), {}, "git_sha"),
    ("schema version", set_attr("/", "schema_version", 9, "int32"), {}, "schema_version"),
    ("a v7 file is valid", as_version(7), {}, None),
    ("late in a v7 file", set_attr("/", "schema_version", 7, "int32"), {}, "unexpected members: late"),
    ("late peers without a waiting policy", set_item("/trials/0/late", 2, 1), {}, "but /config's wait is all"),
    ("late peers with a waiting policy are valid",
     both(set_attr("/config", "wait", "quorum", h5py.string_dtype()), set_item("/trials/0/late", 2, 1)), {}, None),
    ("more late peers than alive", both(set_attr("/config", "wait", "quorum", h5py.string_dtype()),
                                        set_item("/trials/0/late", 2, 8)), {}, "/trials/0/late: row 2: 8 late of 7 alive"),
    ("late peers in row 0", both(set_attr("/config", "wait", "quorum", h5py.string_dtype()),
                                 set_item("/trials/0/late", 0, 1)), {}, "/trials/0/late: row 0 is 1"),
    ("a v6 file is valid", as_version(6), {}, None),
    ("round not a dimension scale", delete("/trials/0/round", "CLASS"), {}, "/trials/0/round: not a dimension scale"),
    ("targets not a dimension scale", delete("/trials/1/targets", "CLASS"), {}, "/trials/1/targets: not a dimension"),
    ("a column without its scale", detach("/trials/1/variance", "/trials/1/round"), {},
     "/trials/1/variance: its axis has 0 scales attached"),
    ("summary trial not a dimension scale", delete("/summary/trial", "CLASS"), {}, "/summary/trial: not a dimension"),
    ("a summary column without its scale", detach("/summary/final_error", "/summary/trial"), {},
     "/summary/final_error: its axis has 0 scales attached"),
    ("a v5 file is valid", as_version(5), {}, None),
    ("time_model in a v5 file", set_attr("/", "schema_version", 5, "int32"), {}, "time_model: not part of schema v5"),
    ("time_model missing", delete("/", "time_model"), {}, "time_model: missing"),
    ("time_model not the engine's", set_attr("/", "time_model", "wall clock", h5py.string_dtype()), {},
     "'wall clock' on engine smpi"),
    ("a sequential-engine trace is valid", both(set_attr("/", "engine", "sequential", h5py.string_dtype()),
                                                set_attr("/", "time_model", "alpha-beta estimate",
                                                         h5py.string_dtype())), {}, None),
    ("run_seconds negative", set_attr("/", "run_seconds", -1.0, "float64"), {}, "run_seconds: must be"),
    ("a v3 file is valid", both(as_version(3), drop_detection_time), {}, None),
    ("detection_time in a v3 file", as_version(3), {}, "unexpected members: detection_time"),
    ("detection_time missing", delete("/trials/1/detection_time"), {}, "/trials/1/detection_time: missing"),
    ("detection time without a timeout", set_item("/trials/0/detection_time", 2, 0.5), {},
     "records detection-timeout 0"),
    *[(what, half_second_detections(times), {}, want) for what, times, want in HALF_SECOND_DETECTIONS],
    ("run_kind missing", delete("/", "run_kind"), {}, "run_kind: missing"),
    ("run_kind unknown", set_attr("/", "run_kind", "gossip", h5py.string_dtype()), {}, "run_kind"),
    ("training kind expected", None, {"kind": "sgd"}, "run_kind: is averaging, expected sgd"),
    ("steps expected of an averaging trace", None, {"steps": 4}, "applies to sgd traces"),
    ("averaging layout marked sgd", set_attr("/", "run_kind", "sgd", h5py.string_dtype()), {}, "/optimum: missing"),
    ("run_kind in a v1 file", set_attr("/", "schema_version", 1, "int32"), {}, "not part of schema v1"),
    ("a v1 file is valid", both(as_version(1), delete("/", "run_kind"), drop_decode_failures), {}, None),
    ("a v2 file is valid", both(as_version(2), drop_decode_failures), {}, None),
    ("decode_failures in a v2 file", as_version(2), {}, "unexpected members: decode_failures"),
    ("decode_failures missing", delete("/trials/1/decode_failures"), {}, "/trials/1/decode_failures: missing"),
    ("decode_failures of wrong type",
     lambda f: replace_dataset(f, "/trials/0/decode_failures", [0, 0, 0, 0, 0], "int64"), {},
     "/trials/0/decode_failures: type"),
    ("decode failures without a quantizer", set_item("/trials/0/decode_failures", 2, 1), {},
     "row 2 counts 1 decode failures, but quantizer none never fails"),
    ("decode failures with uniform8", both(quantizer("uniform8"), set_item("/trials/1/decode_failures", 1, 2)), {},
     "quantizer uniform8 never fails to decode here"),
    ("decode failures with lattice are valid",
     both(quantizer("lattice"), set_item("/trials/0/decode_failures", 2, 3),
          set_item("/trials/1/decode_failures", 2, 1)), {}, None),
    ("negative decode failures", both(quantizer("lattice"), set_item("/trials/0/decode_failures", 3, -1)), {},
     "/trials/0/decode_failures: negative at row 3"),
    ("decode failures in row 0", both(quantizer("lattice"), set_item("/trials/1/decode_failures", 0, 1)), {},
     "/trials/1/decode_failures: row 0 is 1"),
    ("int attribute of wrong width", set_attr("/", "n_peers", 8, "int64"), {}, "n_peers"),
    ("string stored as fixed-length bytes", set_attr("/", "engine", np.bytes_(b"smpi"), "S4"), {}, "engine"),
    ("unknown engine", set_attr("/", "engine", "mpi", h5py.string_dtype()), {}, "engine"),
    ("bad timestamp", set_attr("/", "created_utc", "2026-11-30 12:00", h5py.string_dtype()), {}, "created_utc"),
    ("complete run with a cut trial", set_attr("/", "complete", 1, "int32"), {"complete": None}, "marked complete"),
    ("config missing", delete("/config"), {}, "/config"),
    ("config text missing", delete("/config", "text"), {}, "text"),
    ("row 0 not round 0", set_item("/trials/0/round", 0, 1), {}, "row 0 is round 1"),
    ("round skips", set_item("/trials/0/round", 3, 4), {}, "increase by 1"),
    ("round repeats", set_item("/trials/0/round", 2, 1), {}, "/trials/0/round: does not increase by 1 at row 2"),
    ("time decreases", set_item("/trials/0/time", 3, 0.1), {}, "/trials/0/time: decreases"),
    ("bytes decrease", set_item("/trials/1/bytes_sent", 2, 100), {}, "/trials/1/bytes_sent: decreases"),
    ("bytes not zero at round 0", set_item("/trials/0/bytes_sent", 0, 1), {}, "expected 0"),
    ("NaN variance", set_item("/trials/1/variance", 1, np.nan), {}, "not finite"),
    ("too many alive", set_item("/trials/0/alive", 1, 9), {}, "alive"),
    ("more failed groups than groups", set_item("/trials/0/failed_groups", 1, 5), {}, "failed_groups"),
    ("column too short", lambda f: replace_dataset(f, "/trials/1/alive", [8, 6]), {}, "differ in length"),
    ("column of wrong type", lambda f: replace_dataset(f, "/trials/0/alive", [8, 8, 7, 8, 8], "int64"), {}, "alive"),
    ("column missing", delete("/trials/0/error"), {}, "/trials/0/error: missing"),
    ("rounds_to disagrees with variance", set_attr("/trials/0", "rounds_to_5e-1", 2), {}, "variance is first below"),
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


# ---- the training sample (run_kind sgd) -------------------------------------------

STR = h5py.string_dtype()
SUMMARY_SUFFIXES = ("2.5e-1", "1e-3", "1e-6")


def as_logistic(f):
    """The sample as a logistic run: Newton's optimum, a test set, accuracy measured."""
    opt = f["optimum"]
    opt.attrs.modify("method", "newton")
    opt.attrs.modify("iterations", 6)
    del opt.attrs["test_set"]
    opt.attrs.create("test_set", "synthetic-held-out", dtype=STR)
    finals = []
    for k in ("0", "1"):
        acc = f[f"/trials/{k}/accuracy"]
        values = np.linspace(0.5, 0.875, len(acc))
        acc[...] = values
        finals.append(values[-1])
    f["/summary/final_accuracy"][...] = finals


def empty_optimum(f):
    """/optimum as finish() leaves it when write_optimum was never called."""
    del f["/optimum/x"]
    del f["/optimum/coordinate"]
    for name in list(f["optimum"].attrs):
        del f["optimum"].attrs[name]


def stopped_before_any_trial(keep_optimum):
    """The sample as a run stopped before its first trial: no trials, an empty
    summary (no target columns), /optimum empty unless it had been written."""
    def damage(f):
        if not keep_optimum:
            empty_optimum(f)
        for k in list(f["trials"]):
            del f["trials"][k]
        s = f["summary"]
        for name in list(s):
            dtype = s[name].dtype
            del s[name]
            if not name.startswith(("steps_to_", "reached_")):
                s.create_dataset(name, data=np.zeros(0, dtype=dtype))
        s["trial"].make_scale("trial")  # as the writer makes it
        for name in s:
            if name != "trial":
                s[name].dims[0].attach_scale(s["trial"])
    return damage


def zero_initial_gap(f):
    """The sample as a run whose x* is x_0 = 0 (a quadratic with zeta = 0): the
    initial gap is 0, so relative_gap is 0 throughout and every target is met at
    step 0, while later rows may still have a gap (gradient noise moves x)."""
    f["/optimum/x"][...] = [0.0, 0.0]
    f["optimum"].attrs.modify("initial_loss", 0.25)
    for k in ("0", "1"):
        g = f["trials"][k]
        for name, value in (("loss", 0.25), ("gap", 0.0), ("distance", 0.0)):
            g[name][0] = value
        g["relative_gap"][...] = np.zeros(len(g["relative_gap"]))
        for s in SUMMARY_SUFFIXES:
            g.attrs.modify(f"steps_to_{s}", 0)
            g.attrs.modify(f"reached_{s}", 1)
    s = f["summary"]
    for suffix in SUMMARY_SUFFIXES:
        s[f"steps_to_{suffix}"][...] = [0, 0]
        s[f"reached_{suffix}"][...] = [1, 1]
    s["final_relative_gap"][...] = [0.0, 0.0]


def diverged_unmarked(f):
    """The sample with trial 1's model overflowing at its last row (+inf, NaN),
    which the summary repeats; consensus becomes NaN; not marked as diverged."""
    for name, value in (("loss", np.inf), ("gap", np.inf), ("relative_gap", np.inf),
                        ("distance", np.nan), ("consensus", np.nan)):
        set_item(f"/trials/1/{name}", 2, value)(f)
    f["trials/1"].attrs.modify("reached_2.5e-1", 0)
    f["summary/reached_2.5e-1"][1] = 0
    f["summary/final_gap"][1] = np.inf
    f["summary/final_relative_gap"][1] = np.inf
    f["summary/final_consensus"][1] = np.nan


def diverged(f):
    """diverged_unmarked, marked as schema v5 marks it: the trial stopped at the
    first row that is not finite, diverged = 1 on the trial and in /summary."""
    diverged_unmarked(f)
    f["trials/1"].attrs.modify("diverged", 1)
    f["summary/diverged"][1] = 1


def far_row(trial, row):
    """Row `row` of `trial` finite and consistent (f* = 0.25, initial gap 2), its
    relative gap 2^21: above the 1e6 below which no training trial has diverged."""
    def damage(f):
        for name, value in (("loss", 0.25 + 2.0**22), ("gap", 2.0**22), ("relative_gap", 2.0**21),
                            ("distance", 2.0**21)):
            set_item(f"/trials/{trial}/{name}", row, value)(f)
    return damage


def far_unmarked(f):
    """The sample with trial 1's gap at its last row 2^21 times its start (finite),
    which the summary repeats; not marked as diverged."""
    far_row(1, 2)(f)
    f["trials/1"].attrs.modify("reached_2.5e-1", 0)
    f["summary/reached_2.5e-1"][1] = 0
    f["summary/final_gap"][1] = 2.0**22
    f["summary/final_relative_gap"][1] = 2.0**21


def far(f):
    """far_unmarked, marked diverged: the trial stopped at the first row past 1e6."""
    far_unmarked(f)
    f["trials/1"].attrs.modify("diverged", 1)
    f["summary/diverged"][1] = 1


def negative_gap(f):
    # Consistent columns (loss - f* = gap = relative_gap * 2) that go below f*.
    for name, value in (("loss", 0.25 - 0.125), ("gap", -0.125), ("relative_gap", -0.0625)):
        set_item(f"/trials/0/{name}", 4, value)(f)
    set_item("/summary/final_gap", 0, -0.125)(f)
    set_item("/summary/final_relative_gap", 0, -0.0625)(f)


SGD_CASES = [
    ("averaging expected", None, {"kind": "averaging", "steps": None, "local_steps": None, "eval_every": None},
     "run_kind: is sgd, expected averaging"),
    ("rounds expected of a training trace", None, {"rounds": 2}, "applies to averaging traces"),
    ("fewer steps expected", None, {"steps": 6}, "more than the expected 6"),
    ("more steps expected", None, {"steps": 10}, "complete trial ran 8 steps, expected 10"),
    ("other local steps expected", None, {"local_steps": 2}, "2 local steps per round"),
    ("other eval interval expected", None, {"eval_every": 4}, "every 4 steps"),
    ("wrong peer count expected", None, {"peers": 5}, "n_peers"),
    ("run_kind missing", delete("/", "run_kind"), {}, "run_kind: missing"),
    ("run_kind unknown", set_attr("/", "run_kind", "training", STR), {}, "'training' is not one of"),
    ("a v1 file cannot be a training trace", both(set_attr("/", "schema_version", 1, "int32"),
                                                   delete("/", "run_kind")), {}, "run_kind: is averaging"),
    ("optimum missing", delete("/optimum"), {}, "/optimum: missing group"),
    ("optimum attribute missing", delete("/optimum", "initial_loss"), {}, "/optimum attribute initial_loss: missing"),
    ("optimum float stored as float32", set_attr("/optimum", "loss", 0.25, "float32"), {}, "/optimum attribute loss: type"),
    ("optimum string stored as bytes", set_attr("/optimum", "method", np.bytes_(b"ldlt"), "S4"), {}, "method"),
    ("optimum extra attribute", set_attr("/optimum", "condition", 1.0, "float64"), {}, "condition"),
    ("x* missing", delete("/optimum/x"), {}, "/optimum/x: missing"),
    ("coordinate missing", delete("/optimum/coordinate"), {}, "/optimum/coordinate: missing"),
    ("x* without its scale", detach("/optimum/x", "/optimum/coordinate"), {}, "/optimum/x: its axis has 0 scales"),
    ("coordinate not the index", set_item("/optimum/coordinate", 1, 5), {}, "/optimum/coordinate: is not 0, 1"),
    ("step not a dimension scale", delete("/trials/1/step", "CLASS"), {}, "/trials/1/step: not a dimension scale"),
    ("a training column without its scale", detach("/trials/0/gap", "/trials/0/step"), {},
     "/trials/0/gap: its axis has 0 scales attached"),
    ("a v6 training file is valid", as_version(6), {}, None),
    ("x* not finite", set_item("/optimum/x", 1, np.inf), {}, "/optimum/x: not finite"),
    ("unknown method", set_attr("/optimum", "method", "cg", STR), {}, "'cg' is not one of"),
    ("direct solve with iterations", set_attr("/optimum", "iterations", 3), {}, "direct solve"),
    ("negative gradient norm", set_attr("/optimum", "gradient_norm", -1.0), {}, "gradient_norm: negative"),
    ("converged not a flag", set_attr("/optimum", "converged", 2), {}, "converged: must be 0 or 1"),
    ("initial loss below the minimum", set_attr("/optimum", "initial_loss", 0.125), {}, "below the minimum"),
    ("f* disagrees with loss and gap", set_attr("/optimum", "loss", 0.5), {}, "loss - f*"),
    ("f(x_0) disagrees with row 0", set_attr("/optimum", "initial_loss", 2.5), {}, "/optimum initial_loss"),
    ("x* disagrees with distance", set_item("/optimum/x", 0, 2.0), {}, "||x*||^2"),
    ("test set named for a quadratic", set_attr("/optimum", "test_set", "train", STR), {}, "ldlt (a quadratic)"),
    ("empty optimum in a run with trials", empty_optimum, {}, "only a run stopped before its first trial"),
    ("row 0 not step 0", set_item("/trials/0/step", 0, 1), {}, "row 0 is step 1"),
    ("step repeats", set_item("/trials/0/step", 2, 2), {}, "/trials/0/step: does not increase at row 2"),
    ("row 0 not round 0", set_item("/trials/0/round", 0, 1), {}, "row 0 is round 1"),
    ("round decreases", set_item("/trials/0/round", 3, 0), {}, "/trials/0/round: decreases at row 3"),
    ("more rounds than steps", set_item("/trials/1/round", 1, 3), {"local_steps": None},
     "at most one round per step"),
    ("gap disagrees with loss", set_item("/trials/0/gap", 2, 0.375), {}, "/trials/0/gap: row 2"),
    ("relative gap off the common factor", set_item("/trials/0/relative_gap", 3, 0.125), {},
     "but gap / initial gap"),
    ("relative gap of row 0", set_item("/trials/1/relative_gap", 0, 0.5), {}, "row 0 is 0.5, expected 1"),
    ("relative gap 0 throughout", lambda f: replace_dataset(f, "/trials/1/relative_gap", [0.0, 0.0, 0.0]), {},
     "0 throughout"),
    ("gap below f*", negative_gap, {}, "/trials/0/gap: negative at row 4"),
    ("loss not finite at the start", set_item("/trials/1/loss", 0, np.nan), {}, "/trials/1/loss: row 0 is nan"),
    ("distance not finite at the start", set_item("/trials/0/distance", 0, np.inf), {},
     "/trials/0/distance: row 0 is inf"),
    ("gap -inf", set_item("/trials/1/gap", 1, -np.inf), {}, "/trials/1/gap: -inf at row 1"),
    ("time not finite", set_item("/trials/0/time", 4, np.inf), {}, "/trials/0/time: not finite"),
    ("a diverged run is valid", diverged, {}, None),
    ("a diverged trial not marked", diverged_unmarked, {}, "/trials/1 attribute diverged: 0, but row 2 is not finite"),
    ("a finite trial marked diverged", set_attr("/trials/0", "diverged", 1), {},
     "/trials/0 attribute diverged: 1, but the last row is finite"),
    ("a trial far above its start, marked diverged, is valid", far, {}, None),
    ("a trial far above its start, unmarked, is valid (its limit is not in the trace)", far_unmarked, {}, None),
    ("a trial marked diverged at a finite gap too low for any limit",
     both(far, set_item("/trials/1/relative_gap", 2, 1e6), set_item("/trials/1/gap", 2, 2e6),
          set_item("/trials/1/loss", 2, 2e6 + 0.25), set_item("/summary/final_gap", 1, 2e6),
          set_item("/summary/final_relative_gap", 1, 1e6)), {},
     "/trials/1 attribute diverged: 1, but the last row is finite with relative gap <= 1e+06"),
    ("diverged attribute missing", delete("/trials/0", "diverged"), {}, "/trials/0 attribute diverged: missing"),
    ("summary diverged disagrees", set_item("/summary/diverged", 0, 1), {}, "/summary/diverged"),
    ("a v4 training file is valid", both(as_version(4), drop_diverged), {}, None),
    ("a v4 training file that diverged is valid", both(as_version(4), drop_diverged, diverged_unmarked), {}, None),
    ("diverged in a v4 file", as_version(4), {}, "diverged"),
    ("training decode failures without a quantizer", set_item("/trials/0/decode_failures", 2, 1), {},
     "quantizer none never fails"),
    ("training decode failures with lattice are valid",
     both(quantizer("lattice"), set_item("/trials/0/decode_failures", 2, 2)), {}, None),
    ("uniform8 decode failures on finite models",
     both(quantizer("uniform8"), set_item("/trials/1/decode_failures", 1, 1)), {}, "fails only on non-finite models"),
    ("stochastic decode failures once diverged are valid",
     both(diverged, quantizer("stochastic:4"), set_item("/trials/1/decode_failures", 2, 4)), {}, None),
    ("fp16 decode failures once diverged", both(diverged, quantizer("fp16"), set_item("/trials/1/decode_failures", 2, 4)),
     {}, "quantizer fp16 never fails"),
    ("a v2 training file is valid", both(as_version(2), drop_decode_failures), {}, None),
    ("diverged, yet a target reached", both(diverged, set_attr("/trials/1", "reached_1e-6", 1)), {}, "reached=1"),
    ("diverged, yet a finite row inconsistent", both(diverged, set_item("/trials/1/gap", 1, 1.0)), {},
     "/trials/1/gap: row 1"),
    ("negative distance", set_item("/trials/0/distance", 3, -0.0625), {}, "/trials/0/distance: negative"),
    ("negative consensus", set_item("/trials/1/consensus", 2, -0.125), {}, "/trials/1/consensus: negative"),
    ("consensus at the start", set_item("/trials/0/consensus", 0, 0.25), {}, "starts at the same point"),
    ("accuracy outside [0, 1]", set_item("/trials/0/accuracy", 1, 1.5), {}, "outside [0, 1]"),
    ("accuracy in some rows only", set_item("/trials/0/accuracy", 1, 0.5), {}, "some rows only"),
    ("bytes sent without a round", set_item("/trials/0/bytes_sent", 1, 8), {}, "SGD steps send nothing"),
    # Under churn a joiner's load at step 0 (the first of round 1's steps) shows in row 1.
    ("churn: a joiner's load before its round is valid",
     both(set_attr("/config", "failure", "churn", h5py.string_dtype()), set_item("/trials/0/bytes_sent", 1, 8)),
     {}, None),
    ("churn: bytes with neither a round nor a load", both(set_attr("/config", "failure", "churn", h5py.string_dtype()),
                                                          set_attr("/config", "local-steps", "3", h5py.string_dtype()),
                                                          set_item("/trials/0/bytes_sent", 3, 300)),
     {"local_steps": None}, "churn loads none then"),
    ("groups without a round", set_item("/trials/0/groups", 3, 1), {}, "no round ran since the previous row"),
    ("groups in row 0", set_item("/trials/0/groups", 0, 1), {}, "no round yet"),
    ("peers down before the first round", set_item("/trials/1/alive", 1, 3), {}, "before any round"),
    ("too many alive", set_item("/trials/0/alive", 2, 5), {}, "outside 0..n_peers"),
    ("more failed groups than groups", set_item("/trials/1/failed_groups", 2, 2), {}, "2 failed of 1 groups"),
    ("time decreases", set_item("/trials/0/time", 3, 0.5), {}, "/trials/0/time: decreases"),
    ("time not zero at step 0", set_item("/trials/1/time", 0, 0.125), {}, "cumulative since step 0"),
    ("bytes not zero at step 0", set_item("/trials/0/bytes_sent", 0, 1), {}, "/trials/0/bytes_sent: row 0"),
    ("steps_to disagrees with relative_gap", set_attr("/trials/0", "steps_to_2.5e-1", 6), {}, "relative_gap is first at or below"),
    ("target met with equality not counted", set_attr("/trials/1", "reached_2.5e-1", 0), {}, "reached=0"),
    ("cap is not the steps run", set_attr("/trials/1", "steps_to_1e-6", 8), {}, "the cap"),
    ("averaging attribute names", rename_attr("/trials/0", "steps_to_1e-3", "rounds_to_1e-3"), {},
     "rounds_to_1e-3"),
    ("averaging column in a training trial",
     lambda f: f["/trials/1"].create_dataset("variance", data=np.zeros(3)), {}, "unexpected members: variance"),
    ("column missing", delete("/trials/1/relative_gap"), {}, "/trials/1/relative_gap: missing"),
    ("column of wrong type", lambda f: replace_dataset(f, "/trials/0/step", [0, 2, 4, 6, 8], "int64"), {},
     "/trials/0/step: type"),
    ("column too short", lambda f: replace_dataset(f, "/trials/1/loss", [2.25, 1.75]), {}, "differ in length"),
    ("cut trial before a complete one", set_attr("/trials/0", "complete", 0), {}, "not the last trial"),
    ("targets differ between trials", set_item("/trials/1/targets", 1, 1e-4), {}, "differ from"),
    ("summary final_gap", set_item("/summary/final_gap", 1, 0.25), {}, "/summary/final_gap"),
    ("summary final_relative_gap", set_item("/summary/final_relative_gap", 0, 0.0), {}, "/summary/final_relative_gap"),
    ("summary final_consensus", set_item("/summary/final_consensus", 1, 0.5), {}, "/summary/final_consensus"),
    ("summary final_accuracy not NaN", set_item("/summary/final_accuracy", 0, 0.5), {}, "/summary/final_accuracy"),
    ("summary steps", set_item("/summary/steps", 1, 8), {}, "/summary/steps"),
    ("summary rounds", set_item("/summary/rounds", 0, 8), {}, "/summary/rounds"),
    ("summary steps_to", set_item("/summary/steps_to_1e-3", 0, 6), {}, "/summary/steps_to_1e-3"),
    ("summary averaging column", lambda f: f.move("/summary/final_gap", "/summary/final_variance"), {},
     "unexpected datasets"),
    ("summary too long", lambda f: replace_dataset(f, "/summary/steps", [8, 4, 4]), {}, "3 rows for 2 trials"),
    ("extra root member", lambda f: f.create_group("extra"), {}, "extra"),

    # Other valid training traces, and damage that only they can show.
    ("a logistic run is valid", as_logistic, {}, None),
    ("logistic accuracy outside [0, 1]", both(as_logistic, set_item("/trials/1/accuracy", 2, 1.25)), {},
     "outside [0, 1]"),
    ("logistic accuracy NaN", both(as_logistic, set_item("/trials/1/accuracy", 2, np.nan)), {}, "/trials/1/accuracy"),
    ("logistic accuracy not measured", both(as_logistic, lambda f: f["/trials/0/accuracy"].__setitem__(
        Ellipsis, np.full(5, np.nan))), {}, "NaN, but /optimum says"),
    ("newton without a test set", both(as_logistic, set_attr("/optimum", "test_set", "", STR)), {},
     "method newton"),
    ("a run with no initial gap is valid", zero_initial_gap, {}, None),
    ("no initial gap, yet a relative gap", both(zero_initial_gap, set_item("/trials/1/relative_gap", 2, 0.25)), {},
     "not 0, but the initial gap"),
    ("a run stopped before its optimum is valid", stopped_before_any_trial(False), {"trials": 0}, None),
    ("a run stopped before its first trial is valid", stopped_before_any_trial(True), {"trials": 0}, None),
    ("a stopped run marked complete", both(stopped_before_any_trial(True), set_attr("/", "complete", 1, "int32")),
     {"trials": 0}, "/ attribute complete: is 1, expected 0"),
]


# Damage (by case description, in CASES or SGD_CASES) that the readers refuse too,
# and where they must say the fault is: the structural rules of schema.py, which
# load_trace applies as avbench check does, and the value rules of the columns it reads.
READERS_REFUSE = {
    "schema version": "/ attribute schema_version",
    "run_kind missing": "/ attribute run_kind",
    "run_kind unknown": "/ attribute run_kind",
    "int attribute of wrong width": "/ attribute n_peers",
    "string stored as fixed-length bytes": "/ attribute engine",
    "config missing": "/config",
    "optimum missing": "/optimum",
    "complete run with a cut trial": "/trials/1 attribute complete",
    "cut trial before a complete one": "/trials/0 attribute complete",
    "diverged attribute missing": "/trials/0 attribute diverged",
    "trial group not numbered": "/trials/01",
    "row 0 not round 0": "/trials/0/round",
    "round skips": "/trials/0/round",
    "round repeats": "/trials/0/round",
    "round decreases": "/trials/0/round",
    "row 0 not step 0": "/trials/0/step",
    "step repeats": "/trials/0/step",
    "column missing": {"averaging": "/trials/0/error", "sgd": "/trials/1/relative_gap"},
    "column too short": {"averaging": "/trials/1/alive", "sgd": "/trials/1/loss"},
    "column of wrong type": {"averaging": "/trials/0/alive", "sgd": "/trials/0/step"},
    "decode_failures missing": "/trials/1/decode_failures",
    "decode_failures of wrong type": "/trials/0/decode_failures",
    "detection_time missing": "/trials/1/detection_time",
    "NaN variance": "/trials/1/variance",
    "loss not finite at the start": "/trials/1/loss",
    "gap -inf": "/trials/1/gap",
    "time not finite": "/trials/0/time",
    "summary too long": {"averaging": "/summary/time", "sgd": "/summary/steps"},
}


def check_readers(path, what, kind, valid, failures):
    """load_trace, as rows and as xarray, loads a valid copy and refuses the damage
    READERS_REFUSE names, naming the file and the place; other damage is the
    checker's alone (relations between values, /summary against the trials)."""
    where = READERS_REFUSE.get(what)
    where = where.get(kind) if isinstance(where, dict) else where
    if not valid and where is None:
        return
    for form in (False, True):
        name = "load_trace(as_xarray=True)" if form else "load_trace"
        try:
            avbench.load_trace(path, as_xarray=form)
            if not valid:
                failures.append(f"{what}: {name} loads what avbench check refuses (expected a TraceError at {where})")
        except avbench.TraceError as e:
            if valid:
                failures.append(f"{what}: {name} refuses a valid trace: {e}")
            elif (e.path, e.where) != (path, where) or not str(e).startswith(f"{path}: {where}: "):
                failures.append(f"{what}: {name} raised {e!r}, expected a TraceError at {path}: {where}")


def run_cases(sample, cases, expect, tmp, failures):
    ok = check_file(sample, **expect)
    if ok:
        failures.append(f"{sample}: the sample itself is reported invalid: {ok}")
    for i, (what, damage, overrides, needle) in enumerate(cases):
        path = os.path.join(tmp, f"case{i}.h5")
        shutil.copyfile(sample, path)
        if damage is not None:
            with h5py.File(path, "r+") as f:
                damage(f)
        problems = check_file(path, **{**expect, **overrides})
        if damage is not None:
            check_readers(path, what, expect.get("kind", "averaging"), needle is None, failures)
        if needle is None:
            if problems:
                failures.append(f"{what}: expected a valid trace, got {problems}")
        elif not any(needle in p for p in problems):
            failures.append(f"{what}: expected a problem mentioning {needle!r}, got {problems}")


def run_cli(tool, sample, good_args, bad_args, bad_lines, failures):
    """The command line: exit 0 and one line when valid, exit 1 and one line per problem."""
    good = subprocess.run([tool, "check", sample, *good_args], capture_output=True, text=True)
    if good.returncode != 0 or len(good.stdout.splitlines()) != 1 or good.stderr:
        failures.append(f"CLI on {sample}: exit {good.returncode}: {good.stdout}{good.stderr}")
    bad = subprocess.run([tool, "check", sample, *bad_args], capture_output=True, text=True)
    lines = bad.stdout.splitlines()
    if bad.returncode != 1 or len(lines) != bad_lines or bad.stderr:
        failures.append(f"CLI on {sample} with wrong expectations: exit {bad.returncode}, "
                        f"output {bad.stdout!r}{bad.stderr!r}")


def main(samples):
    failures = []
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "avbench")
    counts = []
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            with h5py.File(sample, "r") as f:
                kind = f.attrs.get("run_kind")
            if kind == "averaging":
                run_cases(sample, CASES, EXPECT, tmp, failures)
                run_cli(tool, sample, ["--peers", "8", "--trials", "2", "--complete", "0", "--rounds", "4"],
                        ["--peers", "9", "--trials", "3"], 2, failures)
                counts.append(f"{len(CASES)} averaging")
            elif kind == "sgd":
                run_cases(sample, SGD_CASES, EXPECT_SGD, tmp, failures)
                run_cli(tool, sample, ["--kind", "sgd", "--peers", "4", "--trials", "2", "--complete", "0",
                                         "--steps", "8", "--local-steps", "4", "--eval-every", "2"],
                        ["--kind", "sgd", "--steps", "6", "--rounds", "4"], 2, failures)
                counts.append(f"{len(SGD_CASES)} sgd")
            else:
                failures.append(f"{sample}: run_kind {kind!r}: not a sample of either kind")

        # Not an HDF5 file at all: a message, not a traceback.
        junk = os.path.join(tmp, "junk.h5")
        with open(junk, "w") as out:
            out.write("not hdf5\n")
        problems = check_file(junk)
        if len(problems) != 1 or "cannot open" not in problems[0]:
            failures.append(f"junk file: {problems}")

    return verdict(failures, "FAIL ", f"avbench check caught all {' and '.join(counts)} kinds of damage, "
                                      f"and the readers the {len(READERS_REFUSE)} structural ones")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: test_check_trace.py SAMPLE_FILE [SAMPLE_FILE...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
