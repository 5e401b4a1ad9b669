"""What the read-back tests of the sample traces share (test_trace_roundtrip.py,
test_trace_roundtrip_sgd.py): comparing what h5py reads against expected values,
types included, and reporting the differences.

Every check appends a line per difference to `problems` rather than stopping at
the first, so one run shows everything the writer got wrong.
"""

import math
import os
import sys

import numpy as np


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
        "schema_version": (np.int32, 8),
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


def check_columns(group, expected, problems):
    """GROUP's members are exactly EXPECTED ({name: (dtype, values)}), in that order."""
    if list(group) != list(expected):
        problems.append(f"{group.name}: members {list(group)} (in this order), expected {list(expected)}")
    for name, (dtype, want) in expected.items():
        if name not in group:
            problems.append(f"{group.name}/{name}: missing")
            continue
        got = group[name][()]
        want = np.array(want, dtype=dtype)
        equal = got.dtype == want.dtype and got.shape == want.shape and \
            np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
        if not equal:
            problems.append(f"{group.name}/{name}: {got!r}, expected {want!r}")


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


def check_trials(f, trials, targets, problems):
    """/trials holds exactly TRIALS ({k: {"attrs": ..., "columns": ...}}), each
    trial's targets column TARGETS."""
    if list(f["trials"]) != list(trials):
        problems.append(f"/trials: members {list(f['trials'])}, expected {list(trials)}")
    for k, spec in trials.items():
        g = f["trials"][k]
        check_attrs(g, spec["attrs"], problems)
        check_columns(g, {"targets": ("float64", targets), **spec["columns"]}, problems)


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
