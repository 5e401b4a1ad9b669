"""avbench check's reading of /trials, in either layout (a group per trial up to v8,
one 2-D dataset per column over (trial, row) since v9), by schema.py's rules, into
Trials for check_values; and of /summary, which a v9 trial's INFO comes from."""

from __future__ import annotations

from decimal import Decimal

import h5py
import numpy as np

from avbench import schema

# What /summary repeats of a trial's last row: its column -> the row column, whose type it has.
LAST_ROW = {kind: {**finals, "bytes_sent": "bytes_sent", "time": "time", "rounds": "round"} for kind, finals in (
    ("averaging", {"final_variance": "variance", "final_error": "error"}),
    ("sgd", {"final_gap": "gap", "final_relative_gap": "relative_gap", "final_consensus": "consensus",
             "final_accuracy": "accuracy", "steps": "step"}))}


class Trial:
    """A trial's COLS over its rows; INFO, its seed, flags, <unit>s_to_<t> and
    reached_<t> (None where unusable); TARGETS, (value, name suffix) pairs; where to
    report a column (AT), an INFO value (INFO_AT) and the trial's length, to C."""

    def __init__(self, c, k, cols, info, targets, at, info_at, length_at):
        self.c, self.k, self.cols, self.info, self.targets = c, k, cols, info, targets
        self.at, self.info_at, self.length_at = at, info_at, length_at

    def say(self, name: str, what) -> None:
        self.c.problem(self.at(name), what)

    def bad(self, name: str, mask, describe) -> bool:
        """Reports the first row I where MASK holds as describe(I), or as the template DESCRIBE
        filled with i, the row's columns by name and v, column NAME's; True if any."""
        return self.c.first_bad(self.at(name), mask, describe if callable(describe) else lambda i: describe.format(
            i=i, v=self.cols[name][i], **{col: values[i] for col, values in self.cols.items()}))


class Checker(list):
    """The problems found, as "<where>: <what>"; what it reads is None when unusable (reported)."""

    def problem(self, where: str, what) -> None:
        """Records WHAT is wrong at WHERE; a false WHAT (None from schema.py's rules, or
        False from `bad and why`) records nothing."""
        if what:
            self.append(f"{where}: {what}")

    def attrs(self, obj, spec: dict, stray: str | None = None) -> dict:
        """The attributes SPEC declares, name -> kind ("str", "flag": an int32 0 or 1, or
        a schema.KINDS name) or (kind, rule, ...), each rule saying what is wrong with a
        value of that kind (false if nothing) or the tuple of the values allowed; None
        where unusable (reported). Any other attribute is STRAY (none if STRAY is None)."""
        for name in (n for n in obj.attrs if n not in spec):
            self.problem(f"{obj.name} attribute {name}", stray)
        values = {}
        for name, (kind, *rules) in ((n, (s,) if isinstance(s, str) else s) for n, s in spec.items()):
            value, why = schema.flag(obj, name) if kind == "flag" else schema.attribute(obj, name, kind)
            for what in [why] if why is not None else [rule(value) if callable(rule) else value not in rule and
                                                        f"{value!r} is not one of {', '.join(rule)}" for rule in rules]:
                self.problem(f"{obj.name} attribute {name}", what)
            values[name] = value
        return values

    def column(self, group, name: str, kind: str, ndim: int = 1, read: bool = True):
        """GROUP/NAME's values (its Dataset if not READ), or None when it is unusable (reported)."""
        ds = group.get(name)
        why = "missing" if ds is None else "not a dataset" if not isinstance(ds, h5py.Dataset) else \
            schema.dataset_problem(ds, kind, ndim)
        self.problem(f"{group.name}/{name}", why)
        return None if why is not None else ds[()] if read else ds

    def members(self, group, expected=None, what: str = "members", only: str = "") -> None:
        """No member of GROUP but the EXPECTED (None: any); no attribute where it holds ONLY members."""
        self.problem(group.name, only and len(group.attrs) and f"must hold {only} only, has attributes: "
                     + ", ".join(group.attrs))
        extra = [k for k in group if expected is not None and k not in expected]
        self.problem(group.name, extra and f"unexpected {what}: {', '.join(extra)}")

    def first_bad(self, where: str, bad, describe) -> bool:
        """Reports the first row where BAD holds, as describe(row); True if any."""
        rows = np.nonzero(bad)[0]
        self.problem(where, rows.size and describe(int(rows[0])))
        return bool(rows.size)

    def scale(self, group, name: str, attached, axis: int = 0) -> None:
        """group/name is the dimension scale NAME and the one scale of axis AXIS of each
        ATTACHED dataset, recorded at both ends (DIMENSION_LIST, REFERENCE_LIST)."""
        ds = group.get(name)
        if not isinstance(ds, h5py.Dataset):
            return  # reported as missing or mistyped
        if not h5py.h5ds.is_scale(ds.id):
            return self.problem(ds.name, "not a dimension scale (no CLASS = DIMENSION_SCALE)")
        label = h5py.h5ds.get_scale_name(ds.id)
        label = label.decode("utf-8", "replace") if isinstance(label, bytes) else label
        self.problem(ds.name, label != name and f"dimension scale named {label!r}, expected {name!r}")
        for member in (group[n] for n in attached if isinstance(group.get(n), h5py.Dataset) and group[n].ndim > axis):
            try:  # a dataset deleted while attached leaves references HDF5 cannot follow
                count = h5py.h5ds.get_num_scales(member.id, axis)
                ok = count == 1 and h5py.h5ds.is_attached(member.id, ds.id, axis)
            except Exception as e:
                self.problem(member.name, f"its dimension scale is unreadable: {e}")
                continue
            self.problem(member.name, not ok and f"its axis {f'{axis} ' if member.ndim > 1 else ''}has {count} "
                                                 f"scales attached, expected exactly the scale {name}")


def read_targets(c, where: str, values):
    """(value, name suffix) per target, or None (reported) when one is unusable. The
    suffix is the shortest decimal that reads back as the same double, the exponent
    without '+' or leading zeros: 2.5e-3, 1e-9 (avb::target_attribute_name)."""
    if values is None:
        return None
    bad = [float(t) for t in values if not (np.isfinite(t) and t > 0)]
    pairs = []
    for t in values if not bad else []:
        _, digits, exponent = Decimal(repr(float(t))).normalize().as_tuple()
        mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
        pairs.append((t, f"{mantissa}e{exponent + len(digits) - 1}"))
    if bad or len({s for _, s in pairs}) != len(pairs):
        return c.problem(where, f"target must be positive and finite, got {bad[0]!r}" if bad else
                         "a target appears twice")
    return pairs


def info_kinds(kind: str, version: int, targets) -> dict:
    """What a trial says of itself (v1..v8 its attributes, v9 /summary only): name -> kind."""
    to = "rounds_to" if kind == "averaging" else "steps_to"
    diverged = {"diverged": "flag"} if kind == "sgd" and version >= schema.DIVERGED_SINCE else {}
    return {"seed": "uint64", "complete": "flag", **diverged, **{f"{to}_{s}": "int32" for _, s in targets},
            **{f"reached_{s}": "flag" for _, s in targets}}


def read_summary(c, f, kind, version, order, targets):
    """(/summary's usable columns, each a row per trial of ORDER, or None; the targets,
    in v9 its own). Its columns: the trial, what the trials say of themselves (a flag
    as int32) and what they repeat of their last row."""
    s, table = f.get("summary"), schema.is_table(version)
    if not isinstance(s, h5py.Group):
        return c.problem("/summary", "missing group"), targets
    c.members(s, None, only="datasets")
    if table:
        targets = read_targets(c, "/summary/targets", c.column(s, "targets", schema.SUMMARY_SCALES["targets"]))
        c.scale(s, "targets", [])
    kinds = info_kinds(kind, version, targets or [])
    spec = {"trial": "int32", **{n: "int32" if k == "flag" else k for n, k in kinds.items()},
            **{n: schema.ROW_SPECS[kind][col] for n, col in LAST_ROW[kind].items()}}
    c.members(s, [*spec, *(schema.SUMMARY_SCALES if table else ())], "datasets (or no matching target in the trials)")
    if version >= schema.SCALES_SINCE:
        c.scale(s, "trial", [name for name in s if name not in ("trial", *schema.SUMMARY_SCALES)])
    cols = {}
    for name, k in spec.items():
        v = c.column(s, name, k)
        why = None if v is None else schema.summary_length_problem(len(v), len(order))
        if why is None and v is not None:
            cols[name] = v
            why = schema.flags_problem(v) if kinds.get(name) == "flag" else None
        c.problem(f"/summary/{name}", why)
    trial = [int(x) for x in cols.get("trial", order)]
    if sorted(trial) != sorted(order) or len(set(trial)) != len(trial):
        c.problem("/summary/trial", f"lists trials {trial}, but /trials holds {order}")
        del cols["trial"]
    elif trial != order:
        c.problem("/summary/trial", f"order {trial} differs from the order trials were written {order}")
    return cols, targets


def read_groups(c, f, kind, version):
    """The trials of a v1..v8 file, a group /trials/<k> each: (their indices in
    writing order, the usable Trials, /summary's columns)."""
    group, index, spec = f["trials"], schema.ROW_SCALE[kind], schema.columns_of(schema.ROW_SPECS[kind], version)
    c.members(group, None, only="groups")
    order, trials = [], []
    for name, g in group.items():
        if not schema.TRIAL_NAME.fullmatch(name) or not isinstance(g, h5py.Group):
            c.problem(f"/trials/{name}", "not a trial (a group named by a decimal index)")
            continue
        order.append(int(name))
        targets = read_targets(c, f"{g.name}/targets", c.column(g, "targets", "float64"))
        if targets is None:
            continue
        kinds = info_kinds(kind, version, targets)
        info = c.attrs(g, kinds, "not part of the schema (or no matching entry in targets)")
        c.members(g, ["targets", *spec])
        if version >= schema.SCALES_SINCE:
            c.scale(g, "targets", [])
            c.scale(g, index, [n for n in spec if n != index])
        cols = {n: c.column(g, n, k) for n, k in spec.items()}
        usable = all(v is not None for v in cols.values())
        lengths = schema.length_problems({n: len(v) for n, v in cols.items()}) if usable else []
        for n, why in lengths:
            c.problem(f"{g.name}/{n}", why)
        if not usable or lengths:
            continue
        mine, first = [v for v, _ in targets], [v for v, _ in (trials[0].targets if trials else targets)]
        c.problem(f"{g.name}/targets", mine != first and f"{mine} differ from {first}")
        trials.append(Trial(c, int(name), cols, info, targets, lambda n, w=g.name: f"{w}/{n}",
                            lambda n, w=g.name: f"{w} attribute {n}", f"{g.name}/{index}"))
    return order, trials, read_summary(c, f, kind, version, order, trials[0].targets if trials else None)[0]


def read_table(c, f, kind, version):
    """The trials of a v9 file, one 2-D dataset per column over (trial, row):
    (their indices in writing order, the usable Trials, /summary's columns)."""
    g, index = f["trials"], schema.ROW_SCALE[kind]
    tables, vectors = schema.table_columns(kind, version), {**schema.TABLE_VECTORS, index: "int32"}
    c.members(g, [*vectors, *tables], only="datasets")
    found = {n: c.column(g, n, k, 2 if n in tables else 1, read=False) for n, k in {**vectors, **tables}.items()}
    found = {n: ds for n, ds in found.items() if ds is not None}
    for name, why in schema.table_shape_problems(kind, {n: ds.shape for n, ds in found.items()}) \
            if "trial" in found and index in found else []:
        c.problem(f"/trials/{name}", why)
        del found[name]
    c.scale(g, "trial", ["rows", *tables])
    c.scale(g, index, list(tables), axis=1)
    v = {n: ds[()] for n, ds in found.items()}
    order = [int(k) for k in v.get("trial", [])]
    for name, why in (("trial", schema.trial_index_problem(order)),
                      ("rows", schema.rows_problem(v["rows"], len(v[index])) if "rows" in v and index in v else None)):
        if why is not None:
            c.problem(f"/trials/{name}", why)
            del v[name]
    for name, kind_of in tables.items():
        why = schema.fill_problem(found[name], kind_of) if name in found else None
        if why is None and name in v and "rows" in v:
            why = schema.padding_problem(v[name], v["rows"], kind_of)
        c.problem(f"/trials/{name}", why)
    summary, targets = read_summary(c, f, kind, version, order, None)
    kinds, trials = info_kinds(kind, version, targets or []), []
    for t, k in enumerate(order if len(v) == len(vectors) + len(tables) else []):  # every dataset usable
        n = v["rows"][t]
        cols = {name: v[name][:n] if name == index else v[name][t, :n] for name in schema.ROW_SPECS[kind]}
        info = {name: summary[name][t] if name in (summary or {}) else None for name in kinds}
        info = {name: None if kinds[name] == "flag" and x not in (0, 1) else x for name, x in info.items()}
        trials.append(Trial(c, k, cols, info, targets or [], lambda name, k=k: f"/trials/{name}" + (
            "" if name == index else f", trial {k}"), lambda name, k=k: f"/summary/{name}, trial {k}",
                            f"/trials/rows, trial {k}"))
    return order, trials, summary
