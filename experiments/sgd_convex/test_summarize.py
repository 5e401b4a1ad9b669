#!/usr/bin/python3
"""Self-test of summarize.py on synthetic traces; exit 0 when it passes.

    PYTHONPATH=python /usr/bin/python3 experiments/sgd_convex/test_summarize.py

Writes, in a temporary folder, sgd traces holding only what summarize.py reads (root
n_peers, run_kind, engine; config protocol, topology, on-failure, objective,
fail-rate; /summary; each trial's step and time; the other columns zeros, as
avbench's readers want every column: selftest.finish_trials), with values chosen so
that the expected table is known, plus an averaging trace and a damaged file that must be
skipped and a walltime.tsv; then runs summarize.py and checks results.csv, table.md
and the exit status, including on an empty and on a missing folder. Every check runs
twice: on traces of schema v2, a group /trials/<k> per trial (as traces stored before
v9 are), and on the same traces rewritten in v9's layout, one table over (trial,
step) (avbench.layouts.to_v9), as sgd_bench writes them now.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import h5py
import numpy as np

from avbench.selftest import Layouts, add_targets, finish_trials, table_row, write_root, write_summary

# Every check runs on the traces write_traces leaves (v2) and on them rewritten as v9.
T = Layouts(Path(__file__).resolve().parent / "summarize.py", ("v2", "v9"))
check, in_layout = T.check, T.place


def write_trace(path: Path, n: int, protocol: str, objective: str, p: str, trials: list[dict],
                topology: str | None = None, on_failure: str | None = None) -> None:
    """trials[k]: steps (evaluated steps), time (same length), to = {t: step or None},
    final_gap, consensus, accuracy, bytes, complete (default 1)."""
    targets = ["1e-2", "1e-4"]
    config = {"protocol": protocol, **({"topology": topology} if topology else {}),
              "on-failure": on_failure or ("abort" if protocol == "allreduce" else "survivors"),
              "objective": objective, "fail-rate": p}
    with h5py.File(path, "w") as f:
        write_root(f, 2, "sgd", n, config)
        cols: dict[str, list] = {k: [] for k in ["trial", "steps", "final_relative_gap", "final_consensus",
                                                "final_accuracy", "bytes_sent", "time", "complete"]}
        for t in targets:
            cols[f"steps_to_{t}"], cols[f"reached_{t}"] = [], []
        for k, tr in enumerate(trials):
            g = f.create_group(f"trials/{k}")
            steps = np.asarray(tr["steps"], dtype=np.int32)
            g["step"] = steps
            g["time"] = np.asarray(tr["time"], dtype=float)
            g["round"] = steps
            g["targets"] = np.asarray([float(t) for t in targets])
            g.attrs["complete"] = np.int32(tr.get("complete", 1))
            cols["trial"].append(k)
            cols["steps"].append(int(steps[-1]))
            add_targets(cols, "steps", tr["to"], int(steps[-1]))
            cols["final_relative_gap"].append(tr["final_gap"])
            cols["final_consensus"].append(tr["consensus"])
            cols["final_accuracy"].append(tr.get("accuracy", math.nan))
            cols["bytes_sent"].append(tr["bytes"])
            cols["time"].append(float(tr["time"][-1]))
            cols["complete"].append(tr.get("complete", 1))
        finish_trials(f, "sgd")
        write_summary(f, cols)
        f["summary/seed"] = np.arange(len(trials), dtype=np.uint64)  # v9 has the trials' seeds only here
    in_layout(path)


def write_traces(d: Path) -> None:
    """The cells of the table, a trace to skip, a damaged file and walltime.tsv."""
    steps = list(range(0, 101, 10))  # 0, 10, ..., 100
    time = [s * 0.01 for s in steps]  # 10 ms of simulated time per step
    # allreduce, N = 64: three trials, all reach 1e-2 (at 10, 20, 30: mean 20) and
    # 1e-4 (at 50, 60, 60: mean 56.7); bytes 640, 1280, 1920 in all: 20 per peer.
    write_trace(d / "N64_quadratic_p0_allreduce.h5", 64, "allreduce", "quadratic", "0", [
        dict(steps=steps, time=time, to={"1e-2": 10, "1e-4": 50}, final_gap=1e-6, consensus=0.0, bytes=640),
        dict(steps=steps, time=time, to={"1e-2": 20, "1e-4": 60}, final_gap=2e-6, consensus=0.0, bytes=1280),
        dict(steps=steps, time=time, to={"1e-2": 30, "1e-4": 60}, final_gap=3e-6, consensus=0.0, bytes=1920),
    ])
    # gossip on the ring: one of two complete trials reaches 1e-4 (at 90), the other
    # never (counts its cap 100); a third, incomplete trial must be left out.
    slow_time = [s * 0.002 for s in steps]
    write_trace(d / "N64_quadratic_p0_gossip-ring.h5", 64, "gossip", "quadratic", "0", [
        dict(steps=steps, time=slow_time, to={"1e-2": 40, "1e-4": 90}, final_gap=5e-5, consensus=1e-3,
             bytes=6400),
        dict(steps=steps, time=slow_time, to={"1e-2": 60, "1e-4": None}, final_gap=3e-4, consensus=3e-3,
             bytes=6400),
        dict(steps=steps[:4], time=slow_time[:4], to={"1e-2": None, "1e-4": None}, final_gap=0.5,
             consensus=1.0, bytes=100, complete=0),
    ], topology="ring")
    # exp gossip, logistic, N = 1024, p = 0.01: nobody reaches 1e-4; accuracy 0.8 and 0.9.
    write_trace(d / "N1024_logistic_p0.01_gossip-exp.h5", 1024, "gossip", "logistic", "0.01", [
        dict(steps=steps, time=time, to={"1e-2": 20, "1e-4": None}, final_gap=2e-3, consensus=1e-2,
             accuracy=0.8, bytes=2048 * 1000),
        dict(steps=steps, time=time, to={"1e-2": 30, "1e-4": None}, final_gap=4e-3, consensus=3e-2,
             accuracy=0.9, bytes=2048 * 3000),
    ], topology="exp")
    # Same problem at N = 1024, quadratic (sorts before logistic), survivors all-reduce.
    write_trace(d / "N1024_quadratic_p0.01_allreduce-survivors.h5", 1024, "allreduce", "quadratic",
                "0.01", [dict(steps=steps, time=time, to={"1e-2": 10, "1e-4": 40}, final_gap=1e-5,
                              consensus=1e-9, bytes=1024)], on_failure="survivors")
    # All-reduce that never completed a round: nothing sent, the clock at 5e-8 s.
    write_trace(d / "N1024_quadratic_p0.01_allreduce.h5", 1024, "allreduce", "quadratic", "0.01",
                [dict(steps=steps, time=[s * 5e-10 for s in steps], to={"1e-2": 10, "1e-4": None},
                      final_gap=1.5, consensus=1e-7, bytes=0)])
    # Not for us: an averaging trace and a file that is no HDF5 at all.
    with h5py.File(d / "averaging.h5", "w") as f:
        write_root(f, 2, "averaging", 8, {"protocol": "gossip"})
        finish_trials(f, "averaging")
        write_summary(f, {"trial": [], "rounds": [], "complete": []})  # no trials
        f["summary/seed"] = np.zeros(0, dtype=np.uint64)
    in_layout(d / "averaging.h5")
    (d / "broken.h5").write_text("not hdf5")
    (d / "walltime.tsv").write_text("cell\tN\tobjective\tp\tprotocol\tsteps\ttrials\tseconds\n"
                                    "N64_quadratic_p0_allreduce\t64\tquadratic\t0\tallreduce\t100\t3\t99.0\n"
                                    "N64_quadratic_p0_allreduce\t64\tquadratic\t0\tallreduce\t100\t3\t12.5\n")


def main() -> int:
    return T.each(check_layout)


def check_layout(d: Path) -> None:
    """Every check, on traces of the layout at hand (T.layout) written in the empty folder d."""
    write_traces(d)
    T.check_rows(d / "N64_quadratic_p0_gossip-ring.h5", "step", [11, 11, 4], "gossip-ring")
    rows, md, skipped = T.summarize(d)
    check("averaging.h5: not a training trace" in skipped and "broken.h5: cannot read" in skipped,
          f"averaging and broken traces reported and skipped: {skipped.strip()!r}")
    check_csv(rows)
    check_markdown(md)
    T.check_folders("| N | problem |", "no sgd traces", d)


def check_csv(rows: list[dict]) -> None:
    """The rows' order and the values of three of them."""
    order = [(r["N"], r["objective"], r["protocol"]) for r in rows]
    check(order == [("64", "quadratic", "allreduce"), ("64", "quadratic", "gossip-ring"),
                    ("1024", "quadratic", "allreduce"), ("1024", "quadratic", "allreduce-survivors"),
                    ("1024", "logistic", "gossip-exp")],
          f"rows by N, objective (quadratic first), protocol order; gossip named by topology: {order}")
    by = {r["protocol"]: r for r in rows if r["N"] == "64" or r["protocol"] != "allreduce"}
    check_allreduce(by["allreduce"])

    g = by["gossip-ring"]
    check(g["trials"] == "2", f"gossip-ring: the incomplete trial is left out: {g['trials']} trials")
    check(float(g["steps_to_1e-4"]) == 95 and g["reached_1e-4"] == "1",
          f"gossip-ring: 1e-4 mean (90 + cap 100)/2 = 95, 1 reached: {g['steps_to_1e-4']}, {g['reached_1e-4']}")
    check(math.isclose(float(g["time_to_1e-4"]), 0.18, rel_tol=1e-5),
          f"gossip-ring: time to 1e-4 over the trial that got there: 0.18 s: {g['time_to_1e-4']}")
    check(math.isclose(float(g["final_consensus"]), 2e-3, rel_tol=1e-5), "gossip-ring: final consensus 2e-3")
    check(g["wall_s"] == "", "gossip-ring: no wall time listed: empty")

    e = by["gossip-exp"]
    check(e["p"] == "0.01" and e["N"] == "1024", "gossip-exp: N 1024, p 0.01")
    check(e["reached_1e-4"] == "0" and e["time_to_1e-4"] == "", "gossip-exp: 1e-4 never reached, no time")
    check(math.isclose(float(e["final_accuracy"]), 0.85, rel_tol=1e-5), "gossip-exp: accuracy mean 0.85")
    check(float(e["bytes_per_peer"]) == 4000.0, f"gossip-exp: bytes per peer 4000: {e['bytes_per_peer']}")


def check_allreduce(a: dict) -> None:
    """The CSV row of the N = 64 all-reduce."""
    check(a["trials"] == "3" and a["steps"] == "100", f"allreduce: 3 trials of 100 steps: {a['trials']}, {a['steps']}")
    check(float(a["steps_to_1e-2"]) == 20 and a["reached_1e-2"] == "3", "allreduce: steps to 1e-2 mean 20, 3 reached")
    check(math.isclose(float(a["steps_to_1e-4"]), 170 / 3, rel_tol=1e-5), f"allreduce: steps to 1e-4 = 56.67: {a['steps_to_1e-4']}")
    check(math.isclose(float(a["time_to_1e-2"]), 0.2, rel_tol=1e-5), f"allreduce: time to 1e-2 = 0.2 s: {a['time_to_1e-2']}")
    check(math.isclose(float(a["final_relative_gap"]), 2e-6, rel_tol=1e-5), "allreduce: final relative gap mean 2e-6")
    check(float(a["bytes_per_peer"]) == 20.0, f"allreduce: bytes per peer 3840/3/64 = 20: {a['bytes_per_peer']}")
    check(math.isclose(float(a["sim_time"]), 1.0, rel_tol=1e-5), "allreduce: simulated time 1 s")
    check(a["final_accuracy"] == "", "quadratic: accuracy empty (NaN) in the CSV")
    check(float(a["wall_s"]) == 12.5, f"wall time: the last walltime.tsv line of the cell: {a['wall_s']}")


def check_markdown(md: str) -> None:
    """The formatted cells of four rows of table.md."""
    r = table_row(md, "64", "quadratic", "0", "allreduce")
    check(r[5:9] == ["20", "56.7", "200.0 ms", "566.7 ms"], f"md allreduce: steps and times to targets: {r[5:9]}")
    check(r[11] == "—" and r[12] == "20 B" and r[13] == "1.00 s" and r[14] == "12 s",
          f"md allreduce: no accuracy, 20 B per peer, 1.00 s, wall 12 s: {r[11:]}")
    r = table_row(md, "64", "quadratic", "0", "gossip-ring")
    check(r[5:7] == ["50", "95 (1/2)"], f"md gossip-ring: '95 (1/2)' for one of two: {r[5:7]}")
    r = table_row(md, "1024", "logistic", "0.01", "gossip-exp")
    check(r[5:7] == ["25", ">100"] and r[8] == "—" and r[11] == "0.8500" and r[12] == "4.0 kB",
          f"md gossip-exp: '>100' when none reached, accuracy 0.8500, 4.0 kB: {r}")
    r = table_row(md, "1024", "quadratic", "0.01", "allreduce")
    check(r[5:9] == ["10", ">100", "< 1 µs", "—"] and r[12:14] == ["0 B", "< 1 µs"],
          f"md allreduce that sent nothing: times '< 1 µs', 0 B: {r}")


if __name__ == "__main__":
    sys.exit(main())
