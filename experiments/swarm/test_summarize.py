#!/usr/bin/python3
"""Self-test of summarize.py on synthetic traces; exit 0 when it passes.

    PYTHONPATH=python /usr/bin/python3 experiments/swarm/test_summarize.py

Writes, in a temporary folder, averaging and sgd traces holding only what summarize.py
reads (root n_peers, run_kind, engine; config protocol, quantizer, dim; /summary;
each trial's round or step, variance or relative_gap, bytes_sent, time,
decode_failures; the other columns zeros, as avbench's readers want every column:
selftest.finish_trials), with values chosen so that the expected table is known, plus
files that must be skipped (a name summarize.py cannot parse, a trace under the
wrong kind's name, a file that is not HDF5) and a walltime.tsv; then runs
summarize.py and checks results.csv, table.md, the figures and the exit status,
including on an empty and on a missing folder. Every check runs twice: on traces of
schema v3, a group /trials/<k> per trial (as traces stored before v9 are), and on the
same traces rewritten in v9's layout, one table over (trial, round|step)
(avbench.layouts.to_v9), as the programs write them now.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import h5py
import numpy as np

from avbench.selftest import Layouts, add_targets, finish_trials, table_row, write_root, write_summary

# Every check runs on the traces write_traces leaves (v3) and on them rewritten as v9.
T = Layouts(Path(__file__).resolve().parent / "summarize.py", ("v3", "v9"), timeout=120)
check = T.check


def write_trace(path: Path, kind: str, n: int, d: int, protocol: str, quantizer: str | None,
                trials: list[dict], targets: list[str]) -> None:
    """trials[k]: x (rounds or evaluated steps, from 0), y (variance or relative gap),
    bytes (cumulative, all peers), time, to = {t: x or None}, final (dict of final_*),
    decode (sgd: per row), complete (default 1)."""
    x_name, count, y_name = (("round", "rounds", "variance") if kind == "averaging"
                             else ("step", "steps", "relative_gap"))
    config = {"protocol": protocol, **({} if quantizer is None else {"quantizer": quantizer}), "dim": str(d)}
    with h5py.File(path, "w") as f:
        write_root(f, 3, kind, n, config)
        cols: dict[str, list] = {k: [] for k in ["trial", count, "bytes_sent", "time", "complete"]}
        for t in targets:
            cols[f"{count}_to_{t}"], cols[f"reached_{t}"] = [], []
        for k, tr in enumerate(trials):
            g = f.create_group(f"trials/{k}")
            xs = np.asarray(tr["x"], dtype=np.int32)
            g[x_name] = xs
            if x_name == "step":
                g["round"] = xs
            g[y_name] = np.asarray(tr["y"], dtype=float)
            g["bytes_sent"] = np.asarray(tr["bytes"], dtype=np.uint64)
            g["time"] = np.asarray(tr["time"], dtype=float)
            g["decode_failures"] = np.asarray(tr.get("decode", [0] * len(xs)), dtype=np.int32)
            g["targets"] = np.asarray([float(t) for t in targets])
            g.attrs["complete"] = np.int32(tr.get("complete", 1))
            cols["trial"].append(k)
            cols[count].append(int(xs[-1]))
            add_targets(cols, count, tr["to"], int(xs[-1]))
            for name, v in tr["final"].items():
                cols.setdefault(name, []).append(v)
            cols["bytes_sent"].append(int(tr["bytes"][-1]))
            cols["time"].append(float(tr["time"][-1]))
            cols["complete"].append(tr.get("complete", 1))
        finish_trials(f, kind)
        write_summary(f, cols)
        f["summary/seed"] = np.arange(len(trials), dtype=np.uint64)  # v9 has the trials' seeds only here
    T.place(path)


def write_traces(d: Path) -> None:
    """The cells of both tables, three files to skip and walltime.tsv."""
    avg_t, sgd_t = ["1e-2", "1e-4"], ["1e-2", "1e-3"]
    avg_final = dict(final_variance=1e-8, final_error=3e-8)
    # N = 4, d = 10: one byte per peer and coordinate is 8 / 1 bit... bits = bytes * 8 / 40.
    rounds = [0, 1, 2, 3, 4]
    write_trace(d / "avg_swarm_s0.5.h5", "averaging", 4, 10, "swarm", "none", [
        dict(x=rounds, y=[1, 0.1, 5e-3, 1e-3, 5e-5], bytes=[0, 80, 160, 240, 320],
             time=[0, 0.1, 0.2, 0.3, 0.4], to={"1e-2": 2, "1e-4": 4}, final=avg_final),
        dict(x=rounds, y=[1, 0.1, 5e-3, 1e-3, 5e-4], bytes=[0, 100, 200, 300, 400],
             time=[0, 0.2, 0.4, 0.6, 0.8], to={"1e-2": 2, "1e-4": None},
             final=dict(final_variance=3e-8, final_error=5e-8)),
    ], avg_t)
    # The incomplete trial is left out; exact agreement (variance 0) is drawable.
    write_trace(d / "avg_moshpit_s0.5.h5", "averaging", 4, 10, "moshpit", None, [
        dict(x=rounds, y=[1, 1e-3, 0, 0, 0], bytes=[0, 40, 80, 120, 160], time=[0, 1, 2, 3, 4],
             to={"1e-2": 1, "1e-4": 2}, final=dict(final_variance=0.0, final_error=0.0)),
        dict(x=[0, 1], y=[1, 0.5], bytes=[0, 999], time=[0, 9], to={"1e-2": None, "1e-4": None},
             final=dict(final_variance=0.5, final_error=0.5), complete=0),
    ], avg_t)
    steps = [0, 10, 20, 30]
    sgd_final = dict(final_relative_gap=5e-4, final_consensus=1e-6)
    for sigma, t_scale in (("0.5", 1.0), ("0", 0.5)):
        write_trace(d / f"sgd_swarm-geo_s{sigma}.h5", "sgd", 8, 100, "swarm", "lattice", [
            dict(x=steps, y=[1, 2e-2, 5e-3, 5e-4], bytes=[0, 8000, 16000, 24000],
                 time=[0, t_scale, 2 * t_scale, 3 * t_scale], to={"1e-2": 20, "1e-3": 30},
                 final=sgd_final, decode=[0, 3, 1, 0]),
            dict(x=steps, y=[1, 2e-2, 2e-2, 2e-2], bytes=[0, 8000, 16000, 24000],
                 time=[0, t_scale, 2 * t_scale, 3 * t_scale], to={"1e-2": None, "1e-3": None},
                 final=dict(final_relative_gap=2e-2, final_consensus=3e-6), decode=[0, 0, 0, 0]),
        ], sgd_t)
    write_trace(d / "sgd_gossip-ring_mpi.h5", "sgd", 8, 100, "gossip", "none", [
        dict(x=steps, y=[1, 1e-2, 1e-3, 1e-4], bytes=[0, 1000, 2000, 3000], time=[0, 1, 2, 3],
             to={"1e-2": 10, "1e-3": 20}, final=sgd_final)], sgd_t)
    # Not for us: a name without kind and platform, an sgd trace under an averaging
    # name, and a file that is no HDF5 at all.
    write_trace(d / "stray.h5", "sgd", 8, 100, "gossip", "none", [
        dict(x=steps, y=[1, 1, 1, 1], bytes=[0, 1, 2, 3], time=[0, 1, 2, 3], to={}, final=sgd_final)], sgd_t)
    write_trace(d / "avg_wrong_s0.5.h5", "sgd", 8, 100, "gossip", "none", [
        dict(x=steps, y=[1, 1, 1, 1], bytes=[0, 1, 2, 3], time=[0, 1, 2, 3], to={}, final=sgd_final)], sgd_t)
    (d / "avg_broken_s0.5.h5").write_text("not hdf5")
    (d / "walltime.tsv").write_text("cell\tseconds\navg_swarm_s0.5\t99\navg_swarm_s0.5\t12.5\n"
                                    "sgd_swarm-geo_s0\t3.25\n")


def main() -> int:
    return T.each(check_layout)


def check_layout(d: Path) -> None:
    """Every check, on traces of the layout at hand (T.layout) written in the empty folder d."""
    write_traces(d)
    T.check_rows(d / "avg_moshpit_s0.5.h5", "round", [5, 2], "moshpit")
    rows, md, skipped = T.summarize(d, "--figures", str(d / "figs"))
    check("stray.h5: not named" in skipped and "avg_wrong_s0.5.h5: a sgd trace" in skipped
          and "avg_broken_s0.5.h5: cannot read" in skipped,
          f"misnamed, mislabelled and broken traces reported and skipped: {skipped.strip()!r}")
    check_csv(rows)
    check_markdown(md)
    for fig in ("fig_averaging.png", "fig_sgd.png"):
        p = d / "figs" / fig
        check(p.exists() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"--figures wrote {fig} as a PNG")
    T.check_folders("| cell | quantizer |", "no traces", d)


def check_csv(rows: list[dict]) -> None:
    """The rows' order and the values of four of them."""
    order = [(r["kind"], r["cell"], r["sigma"]) for r in rows]
    check(order == [("averaging", "swarm", "0.5"), ("averaging", "moshpit", "0.5"), ("sgd", "swarm-geo", "0.5"),
                    ("sgd", "swarm-geo", "0"), ("sgd", "gossip-ring", "")],
          f"averaging first, cells in CELL_ORDER, larger sigma first, mpi sigma empty: {order}")
    by = {(r["kind"], r["cell"], r["sigma"]): r for r in rows}
    check_averaging(by[("averaging", "swarm", "0.5")])

    m = by[("averaging", "moshpit", "0.5")]
    check(m["trials"] == "1" and m["quantizer"] == "none", f"moshpit: incomplete trial left out, quantizer none: {m}")
    check(math.isclose(float(m["bits_to_1e-4"]), 16.0), f"moshpit: 80 bytes -> 16 bits/coord: {m['bits_to_1e-4']}")

    s = by[("sgd", "swarm-geo", "0.5")]
    check(s["quantizer"] == "lattice" and s["steps"] == "30", "sgd swarm-geo: lattice, 30 steps")
    check(float(s["steps_to_1e-3"]) == 30 and s["reached_1e-3"] == "1", "sgd: 1e-3 (30 + cap 30)/2, one reached")
    # N = 8, d = 100: bits = bytes * 8 / 800 = bytes / 100.
    check(math.isclose(float(s["bits_to_1e-2"]), 160.0) and math.isclose(float(s["time_to_1e-3"]), 3.0),
          f"sgd: 160 bits/coord to 1e-2, 3 s to 1e-3: {s['bits_to_1e-2']} {s['time_to_1e-3']}")
    check(math.isclose(float(s["decode_failures"]), 2.0), f"sgd: decode failures (4 + 0)/2 per trial: {s['decode_failures']}")
    check(math.isclose(float(s["time_per_step"]), 0.1), f"sgd: 0.1 s per step: {s['time_per_step']}")
    s0 = by[("sgd", "swarm-geo", "0")]
    check(math.isclose(float(s0["time_to_1e-2"]), 1.0) and float(s0["wall_s"]) == 3.25,
          f"sgd sigma 0: its own trace and wall time: {s0['time_to_1e-2']} {s0['wall_s']}")


def check_averaging(a: dict) -> None:
    """The CSV row of the averaging swarm cell."""
    check(a["trials"] == "2" and a["rounds"] == "4" and a["N"] == "4" and a["d"] == "10",
          f"swarm: 2 trials of 4 rounds, N 4, d 10: {a['trials']} {a['rounds']} {a['N']} {a['d']}")
    check(float(a["rounds_to_1e-2"]) == 2 and a["reached_1e-2"] == "2", "swarm: 1e-2 in 2 rounds, both")
    # bits/coord per peer = bytes * 8 / (d N) = bytes / 5: 160 -> 32, 200 -> 40.
    check(math.isclose(float(a["bits_to_1e-2"]), 36.0), f"swarm: bits/coord to 1e-2 (32 + 40)/2: {a['bits_to_1e-2']}")
    check(math.isclose(float(a["time_to_1e-2"]), 0.3), f"swarm: time to 1e-2 (0.2 + 0.4)/2: {a['time_to_1e-2']}")
    check(float(a["rounds_to_1e-4"]) == 4 and a["reached_1e-4"] == "1", "swarm: 1e-4 mean (4 + cap 4)/2, 1 reached")
    check(math.isclose(float(a["bits_to_1e-4"]), 64.0), f"swarm: bits to 1e-4 over the trial that got there: {a['bits_to_1e-4']}")
    check(math.isclose(float(a["bits_total"]), 72.0) and math.isclose(float(a["bits_per_round"]), 18.0),
          f"swarm: 72 bits/coord per trial, 18 per round: {a['bits_total']} {a['bits_per_round']}")
    check(math.isclose(float(a["time_per_round"]), 0.15), f"swarm: 0.15 s per round: {a['time_per_round']}")
    check(math.isclose(float(a["final_error"]), 4e-8), "swarm: final error mean 4e-8")
    check(float(a["wall_s"]) == 12.5, f"wall time: the last walltime.tsv line of the cell: {a['wall_s']}")


def check_markdown(md: str) -> None:
    """Both tables' titles and the formatted cells of three rows."""
    check("### Averaging (N = 4, d = 10)" in md and "### SGD on the quadratic (N = 8, d = 100)" in md,
          "two tables, with N and d in their titles")
    r = table_row(md, "swarm", "none", "0.5")
    check(r[3:6] == ["2", "2", "4 (1/2)"] and r[6:8] == ["36.0", "64.0"] and r[8:10] == ["300.0 ms", "400.0 ms"],
          f"md swarm: '4 (1/2)', bits and times to targets: {r}")
    check(r[10:15] == ["2.00e-08", "4.00e-08", "18.0", "150.0 ms", "12 s"], f"md swarm: finals, per round, wall: {r[10:]}")
    r = table_row(md, "swarm-geo", "lattice", "0")
    check(r[3:6] == ["2", "25 (1/2)", "30 (1/2)"] and r[12] == "2", f"md sgd sigma 0: partial reach, 2 failures: {r}")
    r = table_row(md, "gossip-ring", "none", "mpi")
    check(r[4:6] == ["10", "20"] and r[12] == "0", f"md gossip on real MPI: sigma 'mpi', 0 failures: {r}")


if __name__ == "__main__":
    sys.exit(main())
