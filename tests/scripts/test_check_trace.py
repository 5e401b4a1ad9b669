#!/usr/bin/python3
"""Test the checker itself: it must accept the sample traces and catch each kind of
damage the schema rules out.

    /usr/bin/python3 test_check_trace.py sample.h5 [sample_sgd.h5]

where sample.h5 comes from `AVB_TRACE_SAMPLE=sample.h5 unit_tests
--gtest_filter=TraceSample.Write` (averaging: 2 trials, 8 peers, run cut short, at
most 4 rounds) and sample_sgd.h5 from `AVB_TRACE_SAMPLE_SGD=sample_sgd.h5
unit_tests --gtest_filter=TraceSample.WriteTraining` (sgd: 2 trials, 4 peers, run
cut short, 8 steps, a round every 4 steps, a row every 2). Both are schema v9 (one
table over (trial, row) in /trials; an older sample is rewritten as v9 first).

Each file is tested with the cases of its run_kind, twice: CASES on a copy of the
sample (v9), and CASES_V8 on a copy rewritten in v8's layout (a group per trial,
avbench.layouts.to_v8), for the older versions and the faults only that layout can
have. Every case damages its copy with h5py and expects check_trace.check_file to
report a problem mentioning a given text; a few cases instead turn the sample into
another valid trace (an older version, a logistic run, a run stopped before its
first trial) and expect no problem at all. A checker that accepts everything would
pass the round-trip tests; it fails here. The damage helpers (cell, info, ...) work
on either layout, so that a case reads the same on both.

The readers (python/avbench: load_trace in both forms) are held to the checker on
the same copies: every valid one loads, and every damage named in READERS_REFUSE
(READERS_REFUSE_V8 for the v8 copies), the structural faults both apply
(python/avbench/schema.py), is refused by them as a TraceError naming the file and
that dataset or attribute.
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
from avbench.layouts import to_v8, to_v9  # noqa: E402
from sample_readback import verdict  # noqa: E402

EXPECT = dict(peers=8, trials=2, complete=0, rounds=4)
EXPECT_SGD = dict(kind="sgd", peers=4, trials=2, complete=0, steps=8, local_steps=4, eval_every=2)
STR = h5py.string_dtype()


# ---- damage, on either layout of /trials ---------------------------------------------

def is_table(f):
    """Whether /trials is v9's table (else v8's group per trial)."""
    return "trial" in f["trials"]


def replace_dataset(f, name, values, dtype=None):
    """NAME with new VALUES (and DTYPE), attached to the scales the old one had on
    each axis the new one has; a scale stays a scale of its name, but what was
    attached to it loses it. A v9 table stays extendible, with its fill value."""
    old = f[name]
    data = np.asarray(values, dtype=dtype if dtype is not None else old.dtype)
    scales = [list(old.dims[axis].values()) for axis in range(old.ndim)]
    scale_name = h5py.h5ds.get_scale_name(old.id) if h5py.h5ds.is_scale(old.id) else None
    fill = old.attrs.get("_FillValue")
    for axis, attached in enumerate(scales):
        for s in attached:
            old.dims[axis].detach_scale(s)
    del f[name]
    table = {} if fill is None else dict(maxshape=(None,) * data.ndim, chunks=True,
                                         fillvalue=np.asarray(fill).astype(data.dtype))
    new = f.create_dataset(name, data=data, **table)
    if fill is not None:
        new.attrs.create("_FillValue", fill, dtype=data.dtype)
    for axis, attached in enumerate(scales[:data.ndim]):
        for s in attached:
            new.dims[axis].attach_scale(s)
    if scale_name is not None:
        new.make_scale(scale_name.decode() if isinstance(scale_name, bytes) else scale_name)


def set_item(name, index, value):
    def damage(f):
        data = f[name][()]
        data[index] = value
        f[name][...] = data
    return damage


def summary_edits(*edits):
    """Cases that set row ROW of /summary/NAME to VALUE, which no longer repeats its
    trial, for each (name, row, value) of EDITS: caught at /summary/NAME."""
    return [(f"summary {name}", set_item(f"/summary/{name}", row, value), {}, f"/summary/{name}")
            for name, row, value in edits]


def cell(name, trial, row, value):
    """Row ROW of column NAME of the trial at position TRIAL: v9, a cell of the table
    /trials/NAME (an entry of the scale when NAME is the round or step scale); v8,
    /trials/<trial>/NAME."""
    def damage(f):
        if is_table(f):
            ds = f["trials"][name]
            ds[(trial, row) if ds.ndim == 2 else row] = value
        else:
            set_item(f"/trials/{trial}/{name}", row, value)(f)
    return damage


def cells(name, trial, values):
    """Column NAME of trial TRIAL set to VALUES (of the trial's length)."""
    return both(*(cell(name, trial, row, v) for row, v in enumerate(values)))


def info(name, trial, value, summary=True):
    """What trial TRIAL says of itself (seed, complete, diverged, <unit>s_to_<t>,
    reached_<t>): v9, its /summary row; v8, its group's attribute, and its /summary
    row unless SUMMARY is False."""
    def damage(f):
        if not is_table(f):
            f[f"/trials/{trial}"].attrs.modify(name, value)
        if is_table(f) or summary:
            set_item(f"/summary/{name}", trial, value)(f)
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


def rename(path, new):
    return lambda f: f.move(path, new)


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


def detach(column, scale, axis=0):
    """COLUMN's axis AXIS no longer has SCALE attached (both ends updated, as H5DSdetach_scale does)."""
    def damage(f):
        f[column].dims[axis].detach_scale(f[scale])
    return damage


def quantizer(name):
    """Records --quantizer in /config, as gossip, pairwise and swarm runs do."""
    return set_attr("/config", "quantizer", name, STR)


def detection_timeout(seconds):
    """Records --detection-timeout in /config."""
    return set_attr("/config", "detection-timeout", seconds, STR)


def half_second_detections(values):
    """A --detection-timeout of 0.5 s in /config, and trial 0's detection_time VALUES."""
    return both(detection_timeout("0.5"), cells("detection_time", 0, values))


def waits(damage):
    """DAMAGE in a run with a waiting policy (--wait quorum), where peers may be late."""
    return both(set_attr("/config", "wait", "quorum", STR), damage)


# ---- older versions (on the v8 copy) --------------------------------------------------

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
        f["summary"]["diverged"].dims[0].detach_scale(f["summary"]["trial"])
        del f["summary"]["diverged"]


def as_version(v):
    """Marks the v8 copy as of schema V; before v8 without late, before v6 without
    time_model and run_seconds, before v7 without /optimum/coordinate (the scales'
    attributes, which older versions lack, are left: nothing reads them there)."""
    marks = [set_attr("/", "schema_version", v, "int32")]
    if v < 8:
        marks.append(drop_late)
    if v < 6:
        marks += [delete("/", "time_model"), delete("/", "run_seconds")]
    if v < 7:
        marks.append(lambda f: f.__delitem__("/optimum/coordinate") if "/optimum/coordinate" in f else None)
    return both(*marks)


# Trial 0's detection_time column under a --detection-timeout of 0.5 s:
# (description, the column, text expected in a problem or None when valid).
HALF_SECOND_DETECTIONS = [
    ("detection times with a timeout are valid", [0, 0.5, 1.0, 1.0, 1.5], None),
    ("detection time not a multiple of the timeout", [0, 0.5, 0.75, 1.0, 1.5],
     "not a whole number of detection timeouts"),
    ("detection time decreasing", [0, 0.5, 1.0, 0.5, 1.0], "/trials/detection_time, trial 0: decreases at row 3"),
    ("more detections than rounds", [0, 1.0, 1.0, 1.0, 1.0], "charges 2 detection timeouts in 1 rounds"),
    ("detection time in row 0", [0.5, 0.5, 0.5, 0.5, 0.5], "/trials/detection_time, trial 0: row 0 is 0.5"),
]

# (description, damage function or None, check_file keyword overrides, text expected in a problem)
CASES = [
    ("wrong peer count expected", None, {"peers": 9}, "n_peers"),
    ("wrong trial count expected", None, {"trials": 3}, "expected 3"),
    ("wrong completion expected", None, {"complete": 1}, "complete"),
    ("fewer rounds expected", None, {"rounds": 3}, "/trials/rows, trial 0: ran 4 rounds, more than the expected 3"),
    ("root attribute missing", delete("/", "git_sha"), {}, "git_sha"),
    ("schema version", set_attr("/", "schema_version", 10, "int32"), {}, "schema_version"),
    ("late peers without a waiting policy", cell("late", 0, 2, 1), {}, "but /config's wait is all"),
    ("late peers with a waiting policy are valid", waits(cell("late", 0, 2, 1)), {}, None),
    ("more late peers than alive", waits(cell("late", 0, 2, 8)), {}, "/trials/late, trial 0: row 2: 8 late of 7 alive"),
    ("late peers in row 0", waits(cell("late", 0, 0, 1)), {}, "/trials/late, trial 0: row 0 is 1"),
    ("round not a dimension scale", delete("/trials/round", "CLASS"), {}, "/trials/round: not a dimension scale"),
    ("targets not a dimension scale", delete("/summary/targets", "CLASS"), {}, "/summary/targets: not a dimension"),
    ("a column without its scale", detach("/trials/variance", "/trials/round", 1), {},
     "/trials/variance: its axis 1 has 0 scales attached"),
    ("a column without its trial scale", detach("/trials/alive", "/trials/trial"), {},
     "/trials/alive: its axis 0 has 0 scales attached"),
    ("rows without its trial scale", detach("/trials/rows", "/trials/trial"), {},
     "/trials/rows: its axis has 0 scales"),
    ("trial not a dimension scale", delete("/trials/trial", "CLASS"), {}, "/trials/trial: not a dimension scale"),
    ("summary trial not a dimension scale", delete("/summary/trial", "CLASS"), {}, "/summary/trial: not a dimension"),
    ("a summary column without its scale", detach("/summary/final_error", "/summary/trial"), {},
     "/summary/final_error: its axis has 0 scales attached"),
    ("time_model missing", delete("/", "time_model"), {}, "time_model: missing"),
    ("time_model not the engine's", set_attr("/", "time_model", "wall clock", STR), {}, "'wall clock' on engine smpi"),
    ("a sequential-engine trace is valid", both(set_attr("/", "engine", "sequential", STR),
                                                set_attr("/", "time_model", "alpha-beta estimate", STR)), {}, None),
    ("run_seconds negative", set_attr("/", "run_seconds", -1.0, "float64"), {}, "run_seconds: must be"),
    ("detection_time missing", delete("/trials/detection_time"), {}, "/trials/detection_time: missing"),
    ("detection time without a timeout", cell("detection_time", 0, 2, 0.5), {}, "records detection-timeout 0"),
    *[(what, half_second_detections(times), {}, want) for what, times, want in HALF_SECOND_DETECTIONS],
    ("run_kind missing", delete("/", "run_kind"), {}, "run_kind: missing"),
    ("run_kind unknown", set_attr("/", "run_kind", "gossip", STR), {}, "run_kind"),
    ("training kind expected", None, {"kind": "sgd"}, "run_kind: is averaging, expected sgd"),
    ("steps expected of an averaging trace", None, {"steps": 4}, "applies to sgd traces"),
    ("averaging layout marked sgd", set_attr("/", "run_kind", "sgd", STR), {}, "/optimum: missing"),
    ("decode_failures missing", delete("/trials/decode_failures"), {}, "/trials/decode_failures: missing"),
    ("decode_failures of wrong type",
     lambda f: replace_dataset(f, "/trials/decode_failures", np.zeros((2, 5)), "int64"), {},
     "/trials/decode_failures: type"),
    ("decode failures without a quantizer", cell("decode_failures", 0, 2, 1), {},
     "row 2 counts 1 decode failures, but quantizer none never fails"),
    ("decode failures with uniform8", both(quantizer("uniform8"), cell("decode_failures", 1, 1, 2)), {},
     "quantizer uniform8 never fails to decode here"),
    ("decode failures with lattice are valid",
     both(quantizer("lattice"), cell("decode_failures", 0, 2, 3), cell("decode_failures", 1, 2, 1)), {}, None),
    ("negative decode failures", both(quantizer("lattice"), cell("decode_failures", 0, 3, -2)), {},
     "/trials/decode_failures, trial 0: negative at row 3"),
    ("decode failures in row 0", both(quantizer("lattice"), cell("decode_failures", 1, 0, 1)), {},
     "/trials/decode_failures, trial 1: row 0 is 1"),
    ("int attribute of wrong width", set_attr("/", "n_peers", 8, "int64"), {}, "n_peers"),
    ("string stored as fixed-length bytes", set_attr("/", "engine", np.bytes_(b"smpi"), "S4"), {}, "engine"),
    ("unknown engine", set_attr("/", "engine", "mpi", STR), {}, "engine"),
    ("bad timestamp", set_attr("/", "created_utc", "2026-11-30 12:00", STR), {}, "created_utc"),
    ("complete run with a cut trial", set_attr("/", "complete", 1, "int32"), {"complete": None}, "marked complete"),
    ("config missing", delete("/config"), {}, "/config"),
    ("config text missing", delete("/config", "text"), {}, "text"),
    ("row 0 not round 0", set_item("/trials/round", 0, 1), {}, "/trials/round: row 0 is round 1"),
    ("round skips", set_item("/trials/round", 3, 4), {}, "increase by 1"),
    ("round repeats", set_item("/trials/round", 2, 1), {}, "/trials/round: does not increase by 1 at row 2"),
    ("time decreases", cell("time", 0, 3, 0.1), {}, "/trials/time, trial 0: decreases"),
    ("bytes decrease", cell("bytes_sent", 1, 2, 100), {}, "/trials/bytes_sent, trial 1: decreases"),
    ("bytes not zero at round 0", cell("bytes_sent", 0, 0, 1), {}, "expected 0"),
    ("NaN variance", cell("variance", 1, 1, np.nan), {}, "/trials/variance, trial 1: row 1 is nan"),
    ("too many alive", cell("alive", 0, 1, 9), {}, "/trials/alive, trial 0: row 1 has 9 alive peers"),
    ("more failed groups than groups", cell("failed_groups", 0, 1, 5), {}, "/trials/failed_groups, trial 0"),
    ("column of wrong type", lambda f: replace_dataset(f, "/trials/alive", f["/trials/alive"][()], "int64"), {},
     "/trials/alive: type"),
    ("column missing", delete("/trials/error"), {}, "/trials/error: missing"),
    ("rounds_to disagrees with variance", info("rounds_to_5e-1", 0, 2), {},
     "/summary/rounds_to_5e-1, trial 0: variance is first below"),
    ("reached disagrees with variance", info("reached_2.5e-3", 0, 0), {}, "reached=0"),
    ("cap is not the rounds run", info("rounds_to_1e-9", 1, 50), {}, "the cap"),
    ("cut trial before a complete one", info("complete", 0, 0), {}, "/summary/complete, trial 0: 0, but it is not"),
    *summary_edits(("final_variance", 1, 0.5), ("bytes_sent", 0, 4095), ("rounds_to_2.5e-3", 1, 50)),
    ("summary too long", lambda f: replace_dataset(f, "/summary/time", [2.0, 0.75, 1.0]), {}, "3 rows for 2 trials"),
    ("summary lists another trial", set_item("/summary/trial", 1, 7), {}, "/summary/trial"),
    ("summary column missing", delete("/summary/rounds"), {}, "/summary/rounds: missing"),
    ("extra root member", lambda f: f.create_group("extra"), {}, "extra"),

    # The v9 table's own rules.
    ("rows beyond the table", set_item("/trials/rows", 1, 6), {}, "/trials/rows: entry 1 is 6, outside 1 .. 5"),
    ("a trial without rows", set_item("/trials/rows", 1, 0), {}, "/trials/rows: entry 1 is 0, outside 1 .. 5"),
    ("the longest trial shorter than the table", set_item("/trials/rows", 0, 4), {},
     "/trials/rows: the longest trial has 4 rows"),
    ("fill inside a trial's rows (float)", cell("variance", 1, 2, np.nan), {},
     "/trials/variance, trial 1: row 2 is nan"),
    ("fill inside a trial's rows (int)", cell("alive", 1, 2, -1), {}, "/trials/alive, trial 1: row 2 has -1 alive"),
    ("non-fill past a trial's rows (float)", cell("variance", 1, 3, 0.5), {},
     "/trials/variance: entry [1, 3], past the trial's 3 rows, is 0.5"),
    ("non-fill past a trial's rows (uint64)", cell("bytes_sent", 1, 4, 1000), {},
     "/trials/bytes_sent: entry [1, 4], past the trial's 3 rows"),
    ("fill value attribute", set_attr("/trials/alive", "_FillValue", 0, "int32"), {},
     "/trials/alive: attribute _FillValue is 0, expected -1"),
    ("fill value attribute missing", delete("/trials/time", "_FillValue"), {}, "/trials/time: no attribute _FillValue"),
    ("trial not summary's trial", set_item("/trials/trial", 1, 7), {}, "/summary/trial: lists trials [0, 1]"),
    ("trials in another order than summary's", set_item("/summary/trial", slice(None), [1, 0]), {},
     "/summary/trial: order [1, 0] differs"),
    ("a trial listed twice", set_item("/trials/trial", 1, 0), {}, "/trials/trial: trial 0 appears"),
    ("wrong 2-D shape", lambda f: replace_dataset(f, "/trials/alive", f["/trials/alive"][:, :4]), {},
     "/trials/alive: shape (2, 4), expected (2, 5)"),
    ("a 1-D column in the table", lambda f: replace_dataset(f, "/trials/error", f["/trials/error"][0]), {},
     "/trials/error: not 2-D"),
    ("rows of another length", lambda f: replace_dataset(f, "/trials/rows", [5, 3, 3]), {},
     "/trials/rows: shape (3,), expected (2,)"),
    ("rounds not rows - 1", set_item("/summary/rounds", 1, 3), {}, "/summary/rounds: row 1 (trial 1) is 3"),
    ("summary flag not 0 or 1", set_item("/summary/reached_5e-1", 0, 2), {},
     "/summary/reached_5e-1: row 0 is 2, must be 0 or 1"),
    ("summary targets missing", delete("/summary/targets"), {}, "/summary/targets: missing"),
    ("summary target column missing", delete("/summary/reached_1e-9"), {}, "/summary/reached_1e-9: missing"),
    ("table attributes on /trials", set_attr("/trials", "note", "x", STR), {}, "/trials: must hold datasets only"),
    ("a group in the table", lambda f: f["trials"].create_group("0"), {}, "/trials: unexpected members: 0"),
]

# On the sample rewritten in v8's layout, a group per trial (to_v8).
CASES_V8 = [
    ("a v8 file is valid", None, {}, None),
    ("a v7 file is valid", as_version(7), {}, None),
    ("late in a v7 file", set_attr("/", "schema_version", 7, "int32"), {}, "unexpected members: late"),
    ("a v6 file is valid", as_version(6), {}, None),
    ("a v5 file is valid", as_version(5), {}, None),
    ("time_model in a v5 file", set_attr("/", "schema_version", 5, "int32"), {}, "time_model: not part of schema v5"),
    ("a v3 file is valid", both(as_version(3), drop_detection_time), {}, None),
    ("detection_time in a v3 file", as_version(3), {}, "unexpected members: detection_time"),
    ("run_kind in a v1 file", set_attr("/", "schema_version", 1, "int32"), {}, "not part of schema v1"),
    ("a v1 file is valid", both(as_version(1), delete("/", "run_kind"), drop_decode_failures), {}, None),
    ("a v2 file is valid", both(as_version(2), drop_decode_failures), {}, None),
    ("decode_failures in a v2 file", as_version(2), {}, "unexpected members: decode_failures"),
    ("column too short", lambda f: replace_dataset(f, "/trials/1/alive", [8, 6]), {}, "differ in length"),
    ("targets differ between trials", set_item("/trials/1/targets", 0, 1e-8), {}, "targets"),
    ("trial group not numbered", rename("/trials/1", "/trials/01"), {}, "/trials/01"),
    # The group layout's structure, as its reader sees it.
    ("round not a dimension scale", delete("/trials/0/round", "CLASS"), {}, "/trials/0/round: not a dimension scale"),
    ("targets not a dimension scale", delete("/trials/1/targets", "CLASS"), {}, "/trials/1/targets: not a dimension"),
    ("a column without its scale", detach("/trials/1/variance", "/trials/1/round"), {},
     "/trials/1/variance: its axis has 0 scales attached"),
    ("column missing", delete("/trials/0/error"), {}, "/trials/0/error: missing"),
    ("column of wrong type", lambda f: replace_dataset(f, "/trials/0/alive", [8, 8, 7, 8, 8], "int64"), {}, "alive"),
    ("row 0 not round 0", cell("round", 0, 0, 1), {}, "/trials/0/round: row 0 is round 1"),
    ("NaN variance", cell("variance", 1, 1, np.nan), {}, "/trials/1/variance: row 1 is nan"),
    ("detection time in row 0", half_second_detections([0.5] * 5), {}, "/trials/0/detection_time: row 0 is 0.5"),
    ("rounds_to disagrees with variance", info("rounds_to_5e-1", 0, 2, summary=False), {},
     "/trials/0 attribute rounds_to_5e-1: variance is first below"),
    ("reached not a flag", info("reached_5e-1", 0, 2, summary=False), {},
     "/trials/0 attribute reached_5e-1: must be 0 or 1"),
    ("trial attribute unknown", set_attr("/trials/0", "note", 1, "int32"), {}, "/trials/0 attribute note: not part"),
    ("cut trial before a complete one", info("complete", 0, 0), {}, "/trials/0 attribute complete: 0, but it is not"),
    ("complete run with a cut trial", set_attr("/", "complete", 1, "int32"), {"complete": None},
     "/trials/1 attribute complete: 0 in a run marked complete"),
    ("summary final_variance", set_item("/summary/final_variance", 1, 0.5), {}, "/summary/final_variance: row 1"),
    ("summary seed", set_item("/summary/seed", 0, 1), {}, "/summary/seed: row 0 (trial 0) is 1, the trial says 42"),
]


# ---- the training sample (run_kind sgd) -------------------------------------------

SUMMARY_SUFFIXES = ("2.5e-1", "1e-3", "1e-6")


def trial_rows(f):
    """Each trial's number of rows, in either layout."""
    if is_table(f):
        return [int(n) for n in f["trials/rows"]]
    return [len(f[f"trials/{k}/step"]) for k in ("0", "1")]


def as_logistic(f):
    """The sample as a logistic run: Newton's optimum, a test set, accuracy measured."""
    opt = f["optimum"]
    opt.attrs.modify("method", "newton")
    opt.attrs.modify("iterations", 6)
    del opt.attrs["test_set"]
    opt.attrs.create("test_set", "synthetic-held-out", dtype=STR)
    finals = []
    for k, n in enumerate(trial_rows(f)):
        values = np.linspace(0.5, 0.875, n)
        cells("accuracy", k, values)(f)
        finals.append(values[-1])
    f["/summary/final_accuracy"][...] = finals


def empty_optimum(f):
    """/optimum as finish() leaves it when write_optimum was never called."""
    del f["/optimum/x"]
    del f["/optimum/coordinate"]
    for name in list(f["optimum"].attrs):
        del f["optimum"].attrs[name]


def stopped_before_any_trial(keep_optimum):
    """The sample as a run stopped before its first trial: every dataset of /trials
    and /summary empty (v9: the 2-D ones 0 x 0), /summary without target columns and
    with no targets, /optimum empty unless it had been written."""
    def damage(f):
        if not keep_optimum:
            empty_optimum(f)
        s = f["summary"]
        for name in [n for n in s if n.startswith(("steps_to_", "reached_"))]:
            s[name].dims[0].detach_scale(s["trial"])
            del s[name]
        del s["targets"]
        s.create_dataset("targets", data=np.zeros(0)).make_scale("targets")
        for ds in [*f["trials"].values(), *(s[n] for n in s if n != "targets")]:
            ds.resize((0,) * ds.ndim)
    return damage


def stopped_v8(f):
    """The v8 copy as a run stopped before its first trial: no trial group, an empty
    summary (no target columns)."""
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


def zero_initial_gap(f):
    """The sample as a run whose x* is x_0 = 0 (a quadratic with zeta = 0): the
    initial gap is 0, so relative_gap is 0 throughout and every target is met at
    step 0, while later rows may still have a gap (gradient noise moves x)."""
    f["/optimum/x"][...] = [0.0, 0.0]
    f["optimum"].attrs.modify("initial_loss", 0.25)
    for k, n in enumerate(trial_rows(f)):
        both(cell("loss", k, 0, 0.25), cell("gap", k, 0, 0.0), cell("distance", k, 0, 0.0),
             cells("relative_gap", k, np.zeros(n)))(f)
        for s in SUMMARY_SUFFIXES:
            both(info(f"steps_to_{s}", k, 0), info(f"reached_{s}", k, 1))(f)
    f["summary/final_relative_gap"][...] = [0.0, 0.0]


def diverged_unmarked(f):
    """The sample with trial 1's model overflowing at its last row (+inf, NaN),
    which the summary repeats; consensus becomes NaN; not marked as diverged."""
    for name, value in (("loss", np.inf), ("gap", np.inf), ("relative_gap", np.inf),
                        ("distance", np.nan), ("consensus", np.nan)):
        cell(name, 1, 2, value)(f)
    info("reached_2.5e-1", 1, 0)(f)
    f["summary/final_gap"][1] = np.inf
    f["summary/final_relative_gap"][1] = np.inf
    f["summary/final_consensus"][1] = np.nan


def diverged(f):
    """diverged_unmarked, marked as schema v5 marks it: the trial stopped at the
    first row that is not finite, diverged = 1 on the trial and in /summary."""
    diverged_unmarked(f)
    info("diverged", 1, 1)(f)


def far_row(trial, row):
    """Row `row` of `trial` finite and consistent (f* = 0.25, initial gap 2), its
    relative gap 2^21: above the 1e6 below which no training trial has diverged."""
    return both(*(cell(name, trial, row, value) for name, value in (
        ("loss", 0.25 + 2.0**22), ("gap", 2.0**22), ("relative_gap", 2.0**21), ("distance", 2.0**21))))


def far_unmarked(f):
    """The sample with trial 1's gap at its last row 2^21 times its start (finite),
    which the summary repeats; not marked as diverged."""
    far_row(1, 2)(f)
    info("reached_2.5e-1", 1, 0)(f)
    f["summary/final_gap"][1] = 2.0**22
    f["summary/final_relative_gap"][1] = 2.0**21


def far(f):
    """far_unmarked, marked diverged: the trial stopped at the first row past 1e6."""
    far_unmarked(f)
    info("diverged", 1, 1)(f)


def negative_gap(f):
    # Consistent columns (loss - f* = gap = relative_gap * 2) that go below f*.
    for name, value in (("loss", 0.25 - 0.125), ("gap", -0.125), ("relative_gap", -0.0625)):
        cell(name, 0, 4, value)(f)
    set_item("/summary/final_gap", 0, -0.125)(f)
    set_item("/summary/final_relative_gap", 0, -0.0625)(f)


SGD_CASES = [
    ("averaging expected", None, {"kind": "averaging", "steps": None, "local_steps": None, "eval_every": None},
     "run_kind: is sgd, expected averaging"),
    ("rounds expected of a training trace", None, {"rounds": 2}, "applies to averaging traces"),
    ("fewer steps expected", None, {"steps": 6}, "/trials/rows, trial 0: ran 8 steps, more than the expected 6"),
    ("more steps expected", None, {"steps": 10}, "complete trial ran 8 steps, expected 10"),
    ("other local steps expected", None, {"local_steps": 2}, "2 local steps per round"),
    ("other eval interval expected", None, {"eval_every": 4}, "every 4 steps"),
    ("wrong peer count expected", None, {"peers": 5}, "n_peers"),
    ("run_kind missing", delete("/", "run_kind"), {}, "run_kind: missing"),
    ("run_kind unknown", set_attr("/", "run_kind", "training", STR), {}, "'training' is not one of"),
    ("optimum missing", delete("/optimum"), {}, "/optimum: missing group"),
    ("optimum attribute missing", delete("/optimum", "initial_loss"), {}, "/optimum attribute initial_loss: missing"),
    ("optimum float stored as float32", set_attr("/optimum", "loss", 0.25, "float32"), {}, "/optimum attribute loss: type"),
    ("optimum string stored as bytes", set_attr("/optimum", "method", np.bytes_(b"ldlt"), "S4"), {}, "method"),
    ("optimum extra attribute", set_attr("/optimum", "condition", 1.0, "float64"), {}, "condition"),
    ("x* missing", delete("/optimum/x"), {}, "/optimum/x: missing"),
    ("coordinate missing", delete("/optimum/coordinate"), {}, "/optimum/coordinate: missing"),
    ("x* without its scale", detach("/optimum/x", "/optimum/coordinate"), {}, "/optimum/x: its axis has 0 scales"),
    ("coordinate not the index", set_item("/optimum/coordinate", 1, 5), {}, "/optimum/coordinate: is not 0, 1"),
    ("step not a dimension scale", delete("/trials/step", "CLASS"), {}, "/trials/step: not a dimension scale"),
    ("a training column without its scale", detach("/trials/gap", "/trials/step", 1), {},
     "/trials/gap: its axis 1 has 0 scales attached"),
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
    ("row 0 not step 0", set_item("/trials/step", 0, 1), {}, "/trials/step: row 0 is step 1"),
    ("step repeats", set_item("/trials/step", 2, 2), {}, "/trials/step: does not increase at row 2"),
    ("step scale decreasing", set_item("/trials/step", 4, 5), {}, "/trials/step: does not increase at row 4"),
    ("row 0 not round 0", cell("round", 0, 0, 1), {}, "/trials/round, trial 0: row 0 is round 1"),
    ("round decreases", cell("round", 0, 3, 0), {}, "/trials/round, trial 0: decreases at row 3"),
    ("more rounds than steps", cell("round", 1, 1, 3), {"local_steps": None}, "at most one round per step"),
    ("gap disagrees with loss", cell("gap", 0, 2, 0.375), {}, "/trials/gap, trial 0: row 2"),
    ("relative gap off the common factor", cell("relative_gap", 0, 3, 0.125), {}, "but gap / initial gap"),
    ("relative gap of row 0", cell("relative_gap", 1, 0, 0.5), {}, "row 0 is 0.5, expected 1"),
    ("relative gap 0 throughout", cells("relative_gap", 1, [0.0, 0.0, 0.0]), {}, "0 throughout"),
    ("gap below f*", negative_gap, {}, "/trials/gap, trial 0: negative at row 4"),
    ("loss not finite at the start", cell("loss", 1, 0, np.nan), {}, "/trials/loss, trial 1: row 0 is nan"),
    ("distance not finite at the start", cell("distance", 0, 0, np.inf), {}, "/trials/distance, trial 0: row 0 is inf"),
    ("gap -inf", cell("gap", 1, 1, -np.inf), {}, "/trials/gap, trial 1: row 1 is -inf"),
    ("time not finite", cell("time", 0, 4, np.inf), {}, "/trials/time, trial 0: row 4 is inf"),
    ("a diverged run is valid", diverged, {}, None),
    ("a diverged trial not marked", diverged_unmarked, {}, "/summary/diverged, trial 1: 0, but row 2 is not finite"),
    ("a finite trial marked diverged", info("diverged", 0, 1), {},
     "/summary/diverged, trial 0: 1, but the last row is finite"),
    ("a trial far above its start, marked diverged, is valid", far, {}, None),
    ("a trial far above its start, unmarked, is valid (its limit is not in the trace)", far_unmarked, {}, None),
    ("a trial marked diverged at a finite gap too low for any limit",
     both(far, cell("relative_gap", 1, 2, 1e6), cell("gap", 1, 2, 2e6), cell("loss", 1, 2, 2e6 + 0.25),
          set_item("/summary/final_gap", 1, 2e6), set_item("/summary/final_relative_gap", 1, 1e6)), {},
     "/summary/diverged, trial 1: 1, but the last row is finite with relative gap <= 1e+06"),
    ("diverged attribute missing", delete("/summary/diverged"), {}, "/summary/diverged: missing"),
    ("summary diverged disagrees", set_item("/summary/diverged", 0, 1), {}, "/summary/diverged"),
    ("training decode failures without a quantizer", cell("decode_failures", 0, 2, 1), {},
     "quantizer none never fails"),
    ("training decode failures with lattice are valid",
     both(quantizer("lattice"), cell("decode_failures", 0, 2, 2)), {}, None),
    ("uniform8 decode failures on finite models",
     both(quantizer("uniform8"), cell("decode_failures", 1, 1, 1)), {}, "fails only on non-finite models"),
    ("stochastic decode failures once diverged are valid",
     both(diverged, quantizer("stochastic:4"), cell("decode_failures", 1, 2, 4)), {}, None),
    ("fp16 decode failures once diverged", both(diverged, quantizer("fp16"), cell("decode_failures", 1, 2, 4)),
     {}, "quantizer fp16 never fails"),
    ("diverged, yet a target reached", both(diverged, info("reached_1e-6", 1, 1)), {}, "reached=1"),
    ("diverged, yet a finite row inconsistent", both(diverged, cell("gap", 1, 1, 1.0)), {},
     "/trials/gap, trial 1: row 1"),
    ("negative distance", cell("distance", 0, 3, -0.0625), {}, "/trials/distance, trial 0: negative"),
    ("negative consensus", cell("consensus", 1, 2, -0.125), {}, "/trials/consensus, trial 1: negative"),
    ("consensus at the start", cell("consensus", 0, 0, 0.25), {}, "starts at the same point"),
    ("accuracy outside [0, 1]", cell("accuracy", 0, 1, 1.5), {}, "outside [0, 1]"),
    ("accuracy in some rows only", cell("accuracy", 0, 1, 0.5), {}, "some rows only"),
    ("bytes sent without a round", cell("bytes_sent", 0, 1, 8), {}, "SGD steps send nothing"),
    # Under churn a joiner's load at step 0 (the first of round 1's steps) shows in row 1.
    ("churn: a joiner's load before its round is valid",
     both(set_attr("/config", "failure", "churn", STR), cell("bytes_sent", 0, 1, 8)), {}, None),
    ("churn: bytes with neither a round nor a load", both(set_attr("/config", "failure", "churn", STR),
                                                          set_attr("/config", "local-steps", "3", STR),
                                                          cell("bytes_sent", 0, 3, 300)),
     {"local_steps": None}, "churn loads none then"),
    ("groups without a round", cell("groups", 0, 3, 1), {}, "no round ran since the previous row"),
    ("groups in row 0", cell("groups", 0, 0, 1), {}, "no round yet"),
    ("peers down before the first round", cell("alive", 1, 1, 3), {}, "before any round"),
    ("too many alive", cell("alive", 0, 2, 5), {}, "outside 0..n_peers"),
    ("more failed groups than groups", cell("failed_groups", 1, 2, 2), {}, "2 failed of 1 groups"),
    ("time decreases", cell("time", 0, 3, 0.5), {}, "/trials/time, trial 0: decreases"),
    ("time not zero at step 0", cell("time", 1, 0, 0.125), {}, "cumulative since step 0"),
    ("bytes not zero at step 0", cell("bytes_sent", 0, 0, 1), {}, "/trials/bytes_sent, trial 0: row 0"),
    ("steps_to disagrees with relative_gap", info("steps_to_2.5e-1", 0, 6), {}, "relative_gap is first at or below"),
    ("target met with equality not counted", info("reached_2.5e-1", 1, 0), {}, "reached=0"),
    ("cap is not the steps run", info("steps_to_1e-6", 1, 8), {}, "the cap"),
    ("averaging attribute names", rename("/summary/steps_to_1e-3", "/summary/rounds_to_1e-3"), {}, "rounds_to_1e-3"),
    ("averaging column in a training trial", lambda f: f["/trials"].create_dataset("variance", data=np.zeros((2, 5))),
     {}, "unexpected members: variance"),
    ("column missing", delete("/trials/relative_gap"), {}, "/trials/relative_gap: missing"),
    ("column of wrong type", lambda f: replace_dataset(f, "/trials/step", [0, 2, 4, 6, 8], "int64"), {},
     "/trials/step: type"),
    ("wrong 2-D shape", lambda f: replace_dataset(f, "/trials/loss", f["/trials/loss"][:1]), {},
     "/trials/loss: shape (1, 5), expected (2, 5)"),
    ("cut trial before a complete one", info("complete", 0, 0), {}, "not the last trial"),
    # final_accuracy: 0.5 where the trial measured none (NaN)
    *summary_edits(("final_gap", 1, 0.25), ("final_relative_gap", 0, 0.0), ("final_consensus", 1, 0.5),
                   ("final_accuracy", 0, 0.5), ("rounds", 0, 8), ("steps_to_1e-3", 0, 6)),
    ("summary steps", set_item("/summary/steps", 1, 8), {}, "/summary/steps: row 1 (trial 1) is 8"),
    ("summary averaging column", rename("/summary/final_gap", "/summary/final_variance"), {}, "unexpected datasets"),
    ("summary too long", lambda f: replace_dataset(f, "/summary/steps", [8, 4, 4]), {}, "3 rows for 2 trials"),
    ("extra root member", lambda f: f.create_group("extra"), {}, "extra"),
    ("round past a trial's rows", cell("round", 1, 3, 1), {}, "/trials/round: entry [1, 3], past the trial's 3 rows"),
    ("accuracy past a trial's rows", cell("accuracy", 1, 4, 0.5), {}, "/trials/accuracy: entry [1, 4]"),

    # Other valid training traces, and damage that only they can show.
    ("a logistic run is valid", as_logistic, {}, None),
    ("logistic accuracy outside [0, 1]", both(as_logistic, cell("accuracy", 1, 2, 1.25)), {}, "outside [0, 1]"),
    ("logistic accuracy NaN", both(as_logistic, cell("accuracy", 1, 2, np.nan)), {}, "/trials/accuracy, trial 1"),
    ("logistic accuracy not measured", both(as_logistic, cells("accuracy", 0, np.full(5, np.nan))), {},
     "NaN, but /optimum says"),
    ("newton without a test set", both(as_logistic, set_attr("/optimum", "test_set", "", STR)), {},
     "method newton"),
    ("a run with no initial gap is valid", zero_initial_gap, {}, None),
    ("no initial gap, yet a relative gap", both(zero_initial_gap, cell("relative_gap", 1, 2, 0.25)), {},
     "not 0, but the initial gap"),
    ("a run stopped before its optimum is valid", stopped_before_any_trial(False), {"trials": 0}, None),
    ("a run stopped before its first trial is valid", stopped_before_any_trial(True), {"trials": 0}, None),
    ("a stopped run marked complete", both(stopped_before_any_trial(True), set_attr("/", "complete", 1, "int32")),
     {"trials": 0}, "/ attribute complete: is 1, expected 0"),
]

SGD_CASES_V8 = [
    ("a v8 training file is valid", None, {}, None),
    ("a v1 file cannot be a training trace", both(set_attr("/", "schema_version", 1, "int32"),
                                                   delete("/", "run_kind")), {}, "run_kind: is averaging"),
    ("a v6 training file is valid", as_version(6), {}, None),
    ("a v4 training file is valid", both(as_version(4), drop_diverged), {}, None),
    ("a v4 training file that diverged is valid", both(as_version(4), drop_diverged, diverged_unmarked), {}, None),
    ("diverged in a v4 file", as_version(4), {}, "diverged"),
    ("a v2 training file is valid", both(as_version(2), drop_decode_failures), {}, None),
    ("column too short", lambda f: replace_dataset(f, "/trials/1/loss", [2.25, 1.75]), {}, "differ in length"),
    ("targets differ between trials", set_item("/trials/1/targets", 1, 1e-4), {}, "differ from"),
    ("averaging attribute names", rename_attr("/trials/0", "steps_to_1e-3", "rounds_to_1e-3"), {},
     "rounds_to_1e-3"),
    ("averaging column in a training trial",
     lambda f: f["/trials/1"].create_dataset("variance", data=np.zeros(3)), {}, "unexpected members: variance"),
    ("step not a dimension scale", delete("/trials/1/step", "CLASS"), {}, "/trials/1/step: not a dimension scale"),
    ("a training column without its scale", detach("/trials/0/gap", "/trials/0/step"), {},
     "/trials/0/gap: its axis has 0 scales attached"),
    ("step repeats", cell("step", 0, 2, 2), {}, "/trials/0/step: does not increase at row 2"),
    ("a diverged trial not marked", diverged_unmarked, {}, "/trials/1 attribute diverged: 0, but row 2 is not finite"),
    ("diverged attribute missing", delete("/trials/0", "diverged"), {}, "/trials/0 attribute diverged: missing"),
    ("a run stopped before its first trial is valid", stopped_v8, {"trials": 0}, None),
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
    "complete run with a cut trial": "/summary/complete",
    "cut trial before a complete one": "/summary/complete",
    "diverged attribute missing": "/summary/diverged",
    "row 0 not round 0": "/trials/round",
    "round skips": "/trials/round",
    "round repeats": "/trials/round",
    "round decreases": "/trials/round",
    "row 0 not step 0": "/trials/step",
    "step repeats": "/trials/step",
    "step scale decreasing": "/trials/step",
    "column missing": {"averaging": "/trials/error", "sgd": "/trials/relative_gap"},
    "wrong 2-D shape": {"averaging": "/trials/alive", "sgd": "/trials/loss"},
    "column of wrong type": {"averaging": "/trials/alive", "sgd": "/trials/step"},
    "decode_failures missing": "/trials/decode_failures",
    "decode_failures of wrong type": "/trials/decode_failures",
    "detection_time missing": "/trials/detection_time",
    "NaN variance": "/trials/variance",
    "loss not finite at the start": "/trials/loss",
    "gap -inf": "/trials/gap",
    "time not finite": "/trials/time",
    "summary too long": {"averaging": "/summary/time", "sgd": "/summary/steps"},
    "rows beyond the table": "/trials/rows",
    "a trial without rows": "/trials/rows",
    "the longest trial shorter than the table": "/trials/rows",
    "fill inside a trial's rows (float)": "/trials/variance",
    "non-fill past a trial's rows (float)": "/trials/variance",
    "non-fill past a trial's rows (uint64)": "/trials/bytes_sent",
    "round past a trial's rows": "/trials/round",
    "accuracy past a trial's rows": "/trials/accuracy",
    "trial not summary's trial": "/summary/trial",
    "a trial listed twice": "/trials/trial",
    "a 1-D column in the table": "/trials/error",
    "rows of another length": "/trials/rows",
    "rounds not rows - 1": "/summary/rounds",
    "summary steps": "/summary/steps",
    "summary flag not 0 or 1": "/summary/reached_5e-1",
}

# The same for the v8 copies (CASES_V8, SGD_CASES_V8).
READERS_REFUSE_V8 = {
    "complete run with a cut trial": "/trials/1 attribute complete",
    "cut trial before a complete one": "/trials/0 attribute complete",
    "diverged attribute missing": "/trials/0 attribute diverged",
    "trial group not numbered": "/trials/01",
    "row 0 not round 0": "/trials/0/round",
    "step repeats": "/trials/0/step",
    "column missing": "/trials/0/error",
    "column too short": {"averaging": "/trials/1/alive", "sgd": "/trials/1/loss"},
    "column of wrong type": "/trials/0/alive",
    "NaN variance": "/trials/1/variance",
    "reached not a flag": "/trials/0 attribute reached_5e-1",
}


def check_readers(path, what, kind, valid, refuse, failures):
    """load_trace, as rows and as xarray, loads a valid copy and refuses the damage
    REFUSE names, naming the file and the place; other damage is the checker's
    alone (relations between values, /summary against the trials)."""
    where = refuse.get(what)
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


def run_cases(sample, cases, expect, refuse, tmp, failures):
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
            check_readers(path, what, expect.get("kind", "averaging"), needle is None, refuse, failures)
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


def run_layouts(sample, cases, cases_v8, expect, tmp, failures):
    """CASES on the v9 SAMPLE, CASES_V8 on its rewrite in v8's layout."""
    run_cases(sample, cases, expect, READERS_REFUSE, tmp, failures)
    old = os.path.join(tmp, "v8-" + os.path.basename(sample))
    to_v8(sample, old)
    run_cases(old, cases_v8, expect, READERS_REFUSE_V8, tmp, failures)


def main(samples):
    failures = []
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "avbench")
    counts = []
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            with h5py.File(sample, "r") as f:
                kind, version = f.attrs.get("run_kind"), int(f.attrs["schema_version"])
            if version < 9:  # a sample from before the table: as v9, the layout under test
                sample, old = os.path.join(tmp, "v9-" + os.path.basename(sample)), sample
                to_v9(old, sample)
            if kind == "averaging":
                run_layouts(sample, CASES, CASES_V8, EXPECT, tmp, failures)
                run_cli(tool, sample, ["--peers", "8", "--trials", "2", "--complete", "0", "--rounds", "4"],
                        ["--peers", "9", "--trials", "3"], 2, failures)
                counts.append(f"{len(CASES)} + {len(CASES_V8)} (v8) averaging")
            elif kind == "sgd":
                run_layouts(sample, SGD_CASES, SGD_CASES_V8, EXPECT_SGD, tmp, failures)
                run_cli(tool, sample, ["--kind", "sgd", "--peers", "4", "--trials", "2", "--complete", "0",
                                       "--steps", "8", "--local-steps", "4", "--eval-every", "2"],
                        ["--kind", "sgd", "--steps", "6", "--rounds", "4"], 2, failures)
                counts.append(f"{len(SGD_CASES)} + {len(SGD_CASES_V8)} (v8) sgd")
            else:
                failures.append(f"{sample}: run_kind {kind!r}: not a sample of either kind")

        # Not an HDF5 file at all: a message, not a traceback.
        junk = os.path.join(tmp, "junk.h5")
        with open(junk, "w") as out:
            out.write("not hdf5\n")
        problems = check_file(junk)
        if len(problems) != 1 or "cannot open" not in problems[0]:
            failures.append(f"junk file: {problems}")

    return verdict(failures, "FAIL ", f"avbench check caught all {' and '.join(counts)} kinds of damage, and the "
                                      f"readers the {len(READERS_REFUSE)} + {len(READERS_REFUSE_V8)} structural ones")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: test_check_trace.py SAMPLE_FILE [SAMPLE_FILE...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
