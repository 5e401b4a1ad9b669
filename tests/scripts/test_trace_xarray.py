#!/usr/bin/python3
"""Traces as xarray sees them (schema v7's dimension scales, v9's table of trials,
docs/trace-format.md).

    test_trace_xarray.py AVERAGING_BENCH SGD_BENCH

On the sequential engine, one trace of each program whose trials end at different
rows (--stop-at-target under failures). For each:

- check_trace accepts it; with one scale missing, or one column detached from its
  scale, it is refused;
- xarray.open_dataset(engine="h5netcdf") of /trials (every trial as one Dataset
  over (trial, round) or (trial, step)), /summary and /optimum gives the named
  dimensions (round or step, targets, trial, coordinate), no phony_dim_*, and,
  undecoded, values and types equal to h5py's; decoded, /trials' cells past a
  trial's rows (its _FillValue) are NaN and the others h5py's values;
- avbench.load_trace(as_xarray=True) equals the pandas loader's values, padded by
  NaN exactly as xarray pads the pandas rows itself, and agrees with the
  open_dataset view of /trials where both have values;
- the same trace rewritten as schema v6 (a group per trial, no scales) passes
  check_trace as v6 and loads as_xarray to the same values;
- the readers are as strict as the checker: with a round (step) repeated, an unknown
  schema version or a truncated column, check_trace refuses the copy, and
  load_trace in both forms raises a TraceError naming the file and the dataset
  (read_summary and trace_state too for the version, the root they read), where
  the xarray form used to hand out uninitialised cells for the repeated round.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import xarray as xr

sys.dont_write_bytecode = True
import avbench  # noqa: E402
from avbench.check import check_file  # noqa: E402
from avbench.layouts import to_v8  # noqa: E402

SCALE_ATTRS = ("CLASS", "NAME", "REFERENCE_LIST", "DIMENSION_LIST")
problems = []


def expect(ok, what):
    if not ok:
        problems.append(what)


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def run(args, path):
    subprocess.run([*args, "--engine", "sequential", "--threads", "1", "--out", path], check=True,
                   stdout=subprocess.DEVNULL)
    with h5py.File(path, "r") as f:
        lengths = set(f["trials"]["rows"][()].tolist())
    expect(len(lengths) > 1, f"{path}: trials all have {lengths} rows; the test needs unequal ones")


def check_group(path, group, dims):
    """open_dataset of `group`, undecoded (mask_and_scale=False), has exactly `dims`
    ({variable: its dims}) and h5py's values and types."""
    with xr.open_dataset(path, engine="h5netcdf", group=group, mask_and_scale=False) as ds, \
            h5py.File(path, "r") as f:
        got = {name: ds[name].dims for name in ds.variables}
        expect(got == dims, f"{path}:{group}: dims {got}, expected {dims}")
        for name in ds.variables:
            expect(same(ds[name].values, f[group][name][()]), f"{path}:{group}/{name}: differs from h5py's")


def check_masked_trials(path, dim):
    """open_dataset of /trials as xarray decodes it by default: the 2-D columns' cells
    past each trial's rows (their _FillValue) NaN, the trial's own cells h5py's values;
    the 1-D variables (trial, the scale, rows) h5py's values and types."""
    with xr.open_dataset(path, engine="h5netcdf", group="trials") as ds, h5py.File(path, "r") as f:
        t = f["trials"]
        rows = t["rows"][()]
        expect(list(ds.dims) == ["trial", dim] and dict(ds.sizes) == {"trial": len(rows), dim: max(rows)},
               f"{path}:trials: dims {dict(ds.sizes)}, expected trial {len(rows)}, {dim} {max(rows)}")
        inside = np.arange(max(rows))[None, :] < rows[:, None]  # a trial's own cells
        expect(not inside.all(), f"{path}:trials: no cell past a trial's rows to test")
        for name in ds.variables:
            raw = t[name][()]
            got = ds[name].values
            if raw.ndim == 1:
                expect(same(got, raw), f"{path}:trials/{name}: differs from h5py's")
                continue
            fill = t[name].attrs.get("_FillValue")
            expect(fill is not None and same(np.asarray(t[name].fillvalue), np.asarray(fill)),
                   f"{path}:trials/{name}: _FillValue {fill!r}, HDF5 fill value {t[name].fillvalue!r}")
            expect(np.array_equal(raw[~inside], np.full((~inside).sum(), fill, raw.dtype), equal_nan=True),
                   f"{path}:trials/{name}: cells past a trial's rows are not its _FillValue {fill!r}")
            expect(got.dtype.kind == "f" and got.shape == raw.shape and np.isnan(got[~inside]).all(),
                   f"{path}:trials/{name}: cells past a trial's rows not masked as NaN ({got.dtype})")
            expect(np.array_equal(got[inside], raw[inside].astype(got.dtype), equal_nan=True),
                   f"{path}:trials/{name}: a trial's cells differ from h5py's")


def check_netcdf_view(path, dim):
    with h5py.File(path, "r") as f:
        trials, summary = f["trials"], list(f["summary"])
        kind = f.attrs["run_kind"]
        columns = [c for c in trials if trials[c].ndim == 2]
        expect(list(trials) == ["trial", dim, "rows", *columns], f"{path}: /trials holds {list(trials)}")
    check_group(path, "trials", {"trial": ("trial",), dim: (dim,), "rows": ("trial",),
                                 **{c: ("trial", dim) for c in columns}})
    check_masked_trials(path, dim)
    check_group(path, "summary", {c: ("targets",) if c == "targets" else ("trial",) for c in summary})
    if kind == "sgd":
        check_group(path, "optimum", {"coordinate": ("coordinate",), "x": ("coordinate",)})


def check_loader(path, dim):
    """load_trace(as_xarray=True) against the pandas rows, pivoted by xarray itself."""
    ds = avbench.load_trace(path, as_xarray=True)
    df = avbench.load_trace(path)
    expect(ds[dim].dims == (dim,) and list(ds.dims) == ["trial", dim], f"{path}: dims {dict(ds.dims)}")
    rows = [c for c in ds.data_vars if ds[c].dims == ("trial", dim)]
    expect(len(rows) >= 10, f"{path}: only {rows} over (trial, {dim})")
    oracle = df.set_index(["trial", dim])[rows].to_xarray()
    for c in rows:
        expect(same(ds[c].values, oracle[c].values), f"{path}: {c} differs from the pandas rows")
    expect(same(ds[dim].values, oracle[dim].values.astype(ds[dim].dtype)), f"{path}: {dim} coordinate differs")
    last = avbench.per_trial(df).set_index("trial")
    for c in [c for c in ds.data_vars if ds[c].dims == ("trial",)]:
        expect(np.array_equal(ds[c].values, last.loc[ds["trial"].values, c].to_numpy()), f"{path}: {c} differs")
    for k, v in ds.attrs.items():
        want = df[k].iat[0]
        expect(v == want, f"{path}: attribute {k} = {v!r}, the rows say {want!r}")
    expect(any(np.isnan(ds[rows[0]].values).ravel()), f"{path}: no padding to test")
    check_loader_view(path, dim, ds)
    return ds


def check_loader_view(path, dim, ds):
    """load_trace(as_xarray=True) (`ds`) against open_dataset of /trials: the same
    trials and rows, and the same values where both have one."""
    with xr.open_dataset(path, engine="h5netcdf", group="trials") as view:
        for axis in ("trial", dim):
            expect(np.array_equal(ds[axis].values, view[axis].values), f"{path}: {axis} differs from the view's")
        shared = [c for c in view.data_vars if view[c].dims == ("trial", dim) and c in ds.data_vars]
        expect(len(shared) >= 10, f"{path}: only {shared} in both")
        for c in shared:
            a, b = ds[c].values, view[c].values
            both = ~np.isnan(a) & ~np.isnan(b)
            expect(a.shape == b.shape and np.array_equal(a[both], b[both].astype(a.dtype)),
                   f"{path}: {c} differs from open_dataset's where both have values")
        total = int(view["rows"].sum())
        for c in ("time", "bytes_sent"):  # never NaN in a trial's rows
            counts = int((~np.isnan(ds[c].values)).sum()), int((~np.isnan(view[c].values)).sum())
            expect(counts == (total, total), f"{path}: {c} has {counts} values, expected {total} (the rows)")


def downgrade(path, old):
    """`path` rewritten as a schema v6 trace: v8's group per trial (layouts.to_v8), then
    no scales, no /optimum/coordinate, no late column."""
    v8 = old + ".v8.h5"
    to_v8(path, v8)
    with h5py.File(v8, "r") as src, h5py.File(old, "w", track_order=True) as dst:
        def copy(name, obj):
            if isinstance(obj, h5py.Group):
                g = dst.create_group(name, track_order=True)
            elif name != "optimum/coordinate" and not (name.startswith("trials/") and name.endswith("/late")):
                g = dst.create_dataset(name, data=obj[()])
            else:
                return
            for k, v in obj.attrs.items():
                if k not in SCALE_ATTRS:
                    g.attrs.create(k, v, dtype=obj.attrs.get_id(k).dtype)
        for k, v in src.attrs.items():
            dst.attrs.create(k, v, dtype=src.attrs.get_id(k).dtype)
        src.visititems(copy)
        dst.attrs["schema_version"] = np.int32(6)
    os.remove(v8)


def damaged(path, tmp, damage):
    bad = os.path.join(tmp, "bad.h5")
    shutil.copy(path, bad)
    with h5py.File(bad, "r+") as f:
        damage(f)
    return check_file(bad)


def check_trace_file(path, dim, tmp):
    expect(check_file(path) == [], f"{path}: {check_file(path)}")
    found = damaged(path, tmp, lambda f: f[f"trials/{dim}"].attrs.__delitem__("CLASS"))
    expect(any(f"/trials/{dim}: not a dimension scale" in p for p in found), f"missing scale: {found}")
    found = damaged(path, tmp, lambda f: f["summary/time"].dims[0].detach_scale(f["summary/trial"]))
    expect(any("/summary/time: its axis has 0 scales" in p for p in found), f"detached column: {found}")
    old = os.path.join(tmp, "v6.h5")
    downgrade(path, old)
    expect(check_file(old) == [], f"v6 copy of {path}: {check_file(old)}")
    return old


def truncate(name, rows, axis=1):
    """Damage: the 2-D dataset NAME cut to its first ROWS rows (axis 1) or trials
    (axis 0), still attached to its scales, its fill value kept."""
    def damage(f):
        old = f[name]
        data = old[:, :rows] if axis == 1 else old[:rows]
        scales = [list(d.values()) for d in old.dims]
        fill = old.attrs["_FillValue"]
        for d, attached in zip(old.dims, scales):
            for scale in attached:
                d.detach_scale(scale)
        del f[name]
        new = f.create_dataset(name, data=data, maxshape=(None, None), chunks=True, fillvalue=fill)
        new.attrs["_FillValue"] = fill
        for d, attached in zip(new.dims, scales):
            for scale in attached:
                d.attach_scale(scale)
    return damage


def repeat_row(name, row):
    """Damage: row ROW of dataset NAME set to the value of the row before."""
    def damage(f):
        data = f[name][()]
        data[row] = data[row - 1]
        f[name][...] = data
    return damage


def check_readers_refuse(path, dim, tmp):
    """Each damage is refused by check_trace and by every reader that reads the part
    damaged, as a TraceError whose message starts with the file and the dataset."""
    version_at = "/ attribute schema_version"
    cases = [  # (what, damage, where the readers must say the fault is, the readers that read it)
        (f"{dim} repeated", repeat_row(f"trials/{dim}", 2), f"/trials/{dim}", ("pandas", "xarray")),
        ("unknown schema version", lambda f: f.attrs.modify("schema_version", np.int32(99)), version_at,
         ("pandas", "xarray", "read_summary", "trace_state")),
        ("truncated column", truncate("trials/time", 2), "/trials/time", ("pandas", "xarray")),
        ("column of too few trials", truncate("trials/time", 2, axis=0), "/trials/time", ("pandas", "xarray")),
    ]
    readers = {"pandas": avbench.load_trace, "xarray": lambda p: avbench.load_trace(p, as_xarray=True),
               "read_summary": avbench.read_summary, "trace_state": avbench.trace_state}
    for what, damage, where, names in cases:
        bad = os.path.join(tmp, f"bad-{dim}-{len(what)}.h5")
        found = damaged(path, tmp, damage)
        shutil.move(os.path.join(tmp, "bad.h5"), bad)
        expect(any(p.startswith(where) for p in found), f"{path}, {what}: check_trace says {found}, not {where}")
        for name in names:
            try:
                got = readers[name](bad)
                expect(False, f"{path}, {what}: {name} returned {type(got).__name__}, not a TraceError")
            except avbench.TraceError as e:
                expect(str(e).startswith(f"{bad}: {where}: ") and (e.path, e.where) == (bad, where),
                       f"{path}, {what}: {name} raised {e!r}, expected the file and {where}")


def main(averaging_bench, sgd_bench):
    with tempfile.TemporaryDirectory() as tmp:
        avg, sgd = os.path.join(tmp, "avg.h5"), os.path.join(tmp, "sgd.h5")
        run([averaging_bench, "--peers", "32", "--protocol", "pairwise", "--fail-rate", "0.05", "--trials", "5",
             "--rounds", "200", "--target", "1e-3", "--stop-at-target"], avg)
        run([sgd_bench, "--peers", "8", "--protocol", "gossip", "--topology", "ring", "--fail-rate", "0.1",
             "--trials", "5", "--steps", "300", "--eval-every", "3", "--stop-at-target", "--target", "0.05", "--lr", "0.05"], sgd)
        for path, dim in ((avg, "round"), (sgd, "step")):
            check_netcdf_view(path, dim)
            ds = check_loader(path, dim)
            old = check_trace_file(path, dim, tmp)
            ds_old = avbench.load_trace(old, as_xarray=True)
            expect(ds_old.equals(ds), f"{path}: v6 copy loads differently")
            ds.to_netcdf(os.path.join(tmp, "copy.nc"), engine="h5netcdf")
            check_readers_refuse(path, dim, tmp)
    for p in problems:
        print("FAIL", p)
    print(f"test_trace_xarray: {'FAILED' if problems else 'passed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
