"""What the read-back tests of the sample traces share (test_trace_roundtrip.py,
test_trace_roundtrip_sgd.py): comparing what h5py reads against expected values,
types included, and reporting the differences.

Every check appends a line per difference to `problems` rather than stopping at
the first, so one run shows everything the writer got wrong.
"""

import math
import os
import sys

import h5py
import numpy as np

from avbench.trials import trial_columns, trial_info, trial_targets

# The value of a 2-D /trials column's cells past a trial's rows (schema v9): its
# HDF5 fill value and its attribute _FillValue, by dtype.
FILL = {"float64": math.nan, "int32": -1, "uint64": 2**64 - 1}


def same(got, want) -> bool:
    """Exact equality, NaN equal to NaN."""
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, (float, np.floating)) and math.isnan(got)
    return got == want


def sample_root(command_line, engine, mpi_library, n_peers, run_kind):
    """The expected root attributes of a sample (but created_utc), as
    tests/unit/test_trace.cpp's sample_info describes the run; both samples are
    written by the same version at the same commit, and cut short."""
    return {
        "schema_version": (np.int32, 9),
        "avbench_version": (str, "0.1.0-sample"),
        "git_sha": (str, "0123456789ab"),
        "command_line": (str, command_line),
        "engine": (str, engine),
        "time_model": (str, "simulated" if engine == "smpi" else "wall clock"),
        "mpi_library": (str, mpi_library),
        "n_peers": (np.int32, n_peers),
        "run_kind": (str, run_kind),
        "complete": (np.int32, 0),
    }


def counter_columns(alive, groups, failed_groups, bytes_sent, time):
    """The expected counters that end a trial's rows in either kind of trace; the
    samples have no quantizer and no detection timeout, so those columns are 0."""
    rows = len(alive)
    return {
        "alive": ("int32", alive),
        "groups": ("int32", groups),
        "failed_groups": ("int32", failed_groups),
        "decode_failures": ("int32", [0] * rows),
        "bytes_sent": ("uint64", bytes_sent),
        "time": ("float64", time),
        "detection_time": ("float64", [0.0] * rows),
    }


def reach_names(counter, suffixes):
    """The attributes that say when a trial reached its targets, in writing order:
    <counter>_to_<suffix> for each target, then reached_<suffix>."""
    return [f"{counter}_to_{s}" for s in suffixes] + [f"reached_{s}" for s in suffixes]


def reach_attrs(head, counter, suffixes, counts, reached):
    """A trial's expected attributes in writing order: HEAD ({name: (type, value)}),
    then the reach_names with the values COUNTS and REACHED."""
    values = [*counts, *reached]
    return {**head, **{name: (np.int32, v) for name, v in zip(reach_names(counter, suffixes), values, strict=True)}}


def expected_trial(head, counter, suffixes, reach, columns, **counters):
    """A trial as a sample holds it: its attributes (reach_attrs, REACH its counts and
    reached flags) and its columns, COLUMNS ({name: (type, values)}) then the counters
    (counter_columns)."""
    return {"attrs": reach_attrs(head, counter, suffixes, *reach),
            "columns": {**columns, **counter_columns(**counters)}}


def from_trials(trials, names):
    """/summary columns that repeat the trials' attributes NAMES, a row a trial."""
    attrs = [spec["attrs"] for spec in trials.values()]
    return {name: (np.dtype(attrs[0][name][0]).name, [a[name][1] for a in attrs]) for name in names}


def check_attrs(obj, expected, problems):
    """OBJ's attributes are exactly EXPECTED ({name: (type, value)}), in that order."""
    if list(obj.attrs) != list(expected):
        problems.append(f"{obj.name}: attributes {list(obj.attrs)}, expected {list(expected)}")
    for name, (typ, want) in expected.items():
        if name not in obj.attrs:
            problems.append(f"{obj.name} attribute {name}: missing")
            continue
        got = obj.attrs[name]
        if type(got) is not typ or not same(got, want):
            problems.append(f"{obj.name} attribute {name}: {got!r} ({type(got).__name__}), "
                            f"expected {want!r} ({typ.__name__})")


def check_columns(group, expected, problems, label=None):
    """GROUP's members (an h5py group, or a dict of arrays named LABEL) are exactly
    EXPECTED ({name: (dtype, values)}), in that order."""
    label = group.name if label is None else label
    if list(group) != list(expected):
        problems.append(f"{label}: members {list(group)} (in this order), expected {list(expected)}")
    for name, (dtype, want) in expected.items():
        if name not in group:
            problems.append(f"{label}/{name}: missing")
            continue
        got = np.asarray(group[name][()])
        want = np.array(want, dtype=dtype)
        equal = got.dtype == want.dtype and got.shape == want.shape and \
            np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
        if not equal:
            problems.append(f"{label}/{name}: {got!r}, expected {want!r}")


def check_root(f, root, members, problems):
    """The file's members are MEMBERS; its attributes are ROOT in writing order with
    created_utc fourth and run_seconds last, exact but for those two, which only have
    to be a str and a number >= 0."""
    if list(f) != members:
        problems.append(f"/: members {list(f)}, expected {', '.join(members)}")
    expected_order = list(root)
    expected_order.insert(3, "created_utc")
    expected_order.append("run_seconds")
    seconds = f.attrs.get("run_seconds")
    if not (isinstance(seconds, np.float64) and seconds >= 0):
        problems.append(f"/ attribute run_seconds: {seconds!r}, expected a float64 >= 0")
    if list(f.attrs) != expected_order:
        problems.append(f"/: attributes {list(f.attrs)}, expected {expected_order}")
    for name, (typ, want) in root.items():
        got = f.attrs.get(name)
        if type(got) is not typ or got != want:
            problems.append(f"/ attribute {name}: {got!r}, expected {want!r} ({typ.__name__})")
    if not isinstance(f.attrs.get("created_utc"), str):
        problems.append("/ attribute created_utc: not a str")


def check_config(f, config, problems):
    """/config holds exactly the str attributes CONFIG, in that order."""
    attrs = f["config"].attrs
    if list(attrs) != list(config):
        problems.append(f"/config: attributes {list(attrs)}, expected {list(config)}")
    for name, want in config.items():
        got = attrs.get(name)
        if type(got) is not str or got != want:
            problems.append(f"/config attribute {name}: {got!r}, expected {want!r}")


def check_scale(ds, name, problems):
    """DS is a dimension scale named NAME."""
    if not h5py.h5ds.is_scale(ds.id) or ds.attrs.get("NAME") != name.encode():
        problems.append(f"{ds.name}: not the dimension scale {name!r} (NAME {ds.attrs.get('NAME')!r})")


def check_trials(f, trials, targets, problems):
    """/trials is the table (schema v9) of exactly TRIALS ({k: {"attrs": ..., "columns":
    ...}}, in writing order, whose columns start with the row scale, round or step):
    the scales trial and round/step, rows, then each 2-D column over (trial, row)
    whose cells past a trial's rows hold the column's fill value, which is also its
    attribute _FillValue. Each trial's attributes of v8 are its /summary row (as
    trial_info reads them), its columns of v8 what trial_columns reads, and the
    run's targets (/summary/targets) TARGETS."""
    specs = list(trials.values())
    scale = next(iter(specs[0]["columns"]))
    scales = [spec["columns"][scale][1] for spec in specs]
    longest = max(scales, key=len)
    if any(list(s) != list(longest[:len(s)]) for s in scales):
        problems.append(f"the expected {scale} columns {scales} are not prefixes of the longest")
    rows = [len(s) for s in scales]
    width = max(rows)
    table = {"trial": ("int32", [int(k) for k in trials]), scale: ("int32", longest), "rows": ("int32", rows)}
    for name, (dtype, _) in specs[0]["columns"].items():
        if name != scale:
            table[name] = (dtype, [list(spec["columns"][name][1]) + [FILL[dtype]] * (width - n)
                                   for spec, n in zip(specs, rows, strict=True)])
    t = f["trials"]
    check_columns(t, table, problems)
    for name in ("trial", scale):
        if name in t:
            check_scale(t[name], name, problems)
    for name, (dtype, _) in table.items():
        if name in ("trial", scale, "rows") or name not in t:
            continue
        ds = t[name]
        if sorted(ds.attrs) != ["DIMENSION_LIST", "_FillValue"]:
            problems.append(f"{ds.name}: attributes {list(ds.attrs)}, expected DIMENSION_LIST and _FillValue")
        fill = ds.attrs.get("_FillValue")
        for what, got in (("attribute _FillValue", fill), ("HDF5 fill value", ds.fillvalue)):
            if type(got) is not np.dtype(dtype).type or not same(got, FILL[dtype]):
                problems.append(f"{ds.name} {what}: {got!r} ({type(got).__name__}), expected {FILL[dtype]!r} ({dtype})")
        dims = [[s.name for s in d.values()] for d in ds.dims]
        if dims != [["/trials/trial"], [f"/trials/{scale}"]]:
            problems.append(f"{ds.name}: dimension scales {dims}, expected /trials/trial and /trials/{scale}")
    # The trials' facts through the accessor, as v8's groups held them.
    for position, (k, spec) in enumerate(trials.items()):
        info = trial_info(f, position)
        attrs = {name: want for name, (_, want) in spec["attrs"].items()}
        want = {"trial": int(k), "seed": attrs["seed"], "complete": attrs["complete"],
                "diverged": attrs.get("diverged", 0),
                **{n: v for n, v in attrs.items() if n not in ("seed", "complete", "diverged")}}
        if list(info.items()) != list(want.items()) or any(type(v) is not int for v in info.values()):
            problems.append(f"trial_info(f, {position}): {info}, expected {want} (Python ints)")
        check_columns(trial_columns(f, position), spec["columns"], problems, label=f"trial_columns(f, {position})")
    if "targets" in f["summary"]:
        check_scale(f["summary"]["targets"], "targets", problems)
    got = trial_targets(f)
    if got.dtype != np.float64 or got.tolist() != list(targets):
        problems.append(f"trial_targets: {got!r}, expected {targets}")


def verdict(problems, prefix, success) -> int:
    """Prints each problem after PREFIX, or SUCCESS when there is none; the exit code."""
    for p in problems:
        print(f"{prefix}{p}")
    if problems:
        return 1
    print(success)
    return 0


def run_on_file(main):
    """The command line of a read-back test: one FILE, handed to MAIN."""
    if len(sys.argv) != 2:
        print(f"usage: {os.path.basename(sys.argv[0])} FILE", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
