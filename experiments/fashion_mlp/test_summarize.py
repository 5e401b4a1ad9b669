#!/usr/bin/python3
"""Self-test of summarize.py on synthetic traces; exit 0 when it passes.

    PYTHONPATH=python /usr/bin/python3 experiments/fashion_mlp/test_summarize.py

Writes, in a temporary folder, sgd traces holding what summarize.py reads (root
n_peers, run_kind, engine; the config flags that name a method; /summary; each trial's
step, time, accuracy, relative_gap and bytes_sent; the other columns zeros:
selftest.finish_trials) with values chosen so that the expected table is known, plus an
averaging trace and a damaged file that must be skipped and a walltime.tsv; then runs
summarize.py and checks results.csv, table.md, the figures and the exit status. Every
check runs twice: on traces of schema v2 (a group per trial) and on the same traces
rewritten in v9's layout (avbench.layouts.to_v9), as sgd_bench writes them now.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import h5py
import numpy as np

from avbench.selftest import Layouts, finish_trials, table_row, write_root, write_summary

T = Layouts(Path(__file__).resolve().parent / "summarize.py", ("v2", "v9"))
check = T.check
STEPS = [0, 20, 40, 60, 80, 100]
METHODS = {  # the flags run.sh gives each method
    "allreduce": {"protocol": "allreduce", "local-steps": "1", "outer-optimizer": "none"},
    "diloco": {"protocol": "allreduce", "local-steps": "10", "outer-optimizer": "nesterov"},
    "noloco": {"protocol": "pairwise", "local-steps": "10", "outer-optimizer": "sgd"},
    "sgp": {"protocol": "pushsum", "local-steps": "1", "outer-optimizer": "none"},
    "moshpit-H1": {"protocol": "moshpit", "local-steps": "1", "outer-optimizer": "none"},
    "diloco-survivors": {"protocol": "allreduce", "local-steps": "10", "outer-optimizer": "nesterov",
                         "on-failure": "survivors"},
}


def write_trace(path: Path, n: int, method: str, p: str, trials: list[dict], split: str = "random") -> None:
    """trials[k]: acc (one accuracy per step of STEPS), bytes (the total sent by all
    peers), complete (default 1). Time is 0.1 s per step; relative gap 1 - accuracy."""
    config = {**METHODS[method], "objective": "mlp", "fail-rate": p, "split": split}
    with h5py.File(path, "w") as f:
        write_root(f, 2, "sgd", n, config)
        cols: dict[str, list] = {k: [] for k in ["trial", "steps", "final_relative_gap", "final_consensus",
                                                "final_accuracy", "bytes_sent", "time", "complete"]}
        for k, tr in enumerate(trials):
            g = f.create_group(f"trials/{k}")
            g["step"] = g["round"] = np.asarray(STEPS, dtype=np.int32)
            g["time"] = np.asarray(STEPS, dtype=float) * 0.1
            g["accuracy"] = np.asarray(tr["acc"], dtype=float)
            g["relative_gap"] = 1 - np.asarray(tr["acc"], dtype=float)
            g["bytes_sent"] = np.linspace(0, tr["bytes"], len(STEPS)).astype(np.uint64)
            g["targets"] = np.zeros(0)
            g.attrs["complete"] = np.int32(tr.get("complete", 1))
            for name, value in (("trial", k), ("steps", STEPS[-1]), ("final_relative_gap", 1 - tr["acc"][-1]),
                                ("final_consensus", 0.0), ("final_accuracy", tr["acc"][-1]),
                                ("bytes_sent", tr["bytes"]), ("time", STEPS[-1] * 0.1),
                                ("complete", tr.get("complete", 1))):
                cols[name].append(value)
        finish_trials(f, "sgd")
        write_summary(f, cols)
        f["summary/seed"] = np.arange(len(trials), dtype=np.uint64)  # v9 has the trials' seeds only here
    T.place(path)


def write_traces(d: Path) -> None:
    """The cells of the table, a trace to skip, a damaged file and walltime.tsv."""
    # allreduce, N = 64: 0.7 first at steps 40, 40, 60 (mean 46.7, 4.67 s); 0.8 by two
    # trials only, at 80 and 60 (mean 70, 7 s); final 0.83, 0.84, 0.79; 200 bytes per peer.
    write_trace(d / "N64_p0.01_allreduce.h5", 64, "allreduce", "0.01", [
        dict(acc=[0.1, 0.5, 0.72, 0.78, 0.81, 0.83], bytes=6400),
        dict(acc=[0.1, 0.6, 0.75, 0.81, 0.82, 0.84], bytes=12800),
        dict(acc=[0.1, 0.4, 0.65, 0.71, 0.79, 0.79], bytes=19200)])
    # diloco: the second trial was cut short and does not count.
    write_trace(d / "N64_p0.01_diloco.h5", 64, "diloco", "0.01", [
        dict(acc=[0.1, 0.7, 0.8, 0.85, 0.86, 0.87], bytes=640),
        dict(acc=[0.1, 0.9, 0.9, 0.9, 0.9, 0.9], bytes=640, complete=0)])
    write_trace(d / "N64_p0_moshpit-H1.h5", 64, "moshpit-H1", "0", [dict(acc=[0.1] * 6, bytes=0)])
    write_trace(d / "N64_p0.01_sgp_dirichlet.h5", 64, "sgp", "0.01", [dict(acc=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                                                                           bytes=64000)], split="dirichlet")
    write_trace(d / "N1024_p0.01_diloco-survivors.h5", 1024, "diloco-survivors", "0.01", [dict(acc=[0.1] * 6, bytes=0)])
    write_trace(d / "N1024_p0.01_noloco.h5", 1024, "noloco", "0.01", [dict(acc=[0.1, 0.2, 0.3, 0.4, 0.5, 0.65],
                                                                            bytes=2048e6)])
    with h5py.File(d / "averaging.h5", "w") as f:
        write_root(f, 2, "averaging", 4, {"protocol": "gossip"})
        finish_trials(f, "averaging")
        write_summary(f, {"trial": [], "rounds": [], "complete": []})  # no trials: v9 wants /summary
        f["summary/seed"] = np.zeros(0, dtype=np.uint64)
    T.place(d / "averaging.h5")
    (d / "broken.h5").write_bytes(b"not an HDF5 file")
    (d / "walltime.tsv").write_text("cell\tseconds\nN64_p0.01_allreduce\t30.0\nN64_p0.01_allreduce\t12.5\n")


def check_csv(rows: list[dict]) -> None:
    """The rows' order and the values of four of them."""
    order = [(r["N"], r["p"], r["split"], r["method"]) for r in rows]
    check(order == [("64", "0", "random", "moshpit-H1"), ("64", "0.01", "dirichlet", "sgp"),
                    ("64", "0.01", "random", "allreduce"), ("64", "0.01", "random", "diloco"),
                    ("1024", "0.01", "random", "diloco-survivors"), ("1024", "0.01", "random", "noloco")],
          f"rows by N, p, split, then method order; methods named from their flags: {order}")
    by = {(r["N"], r["method"]): r for r in rows}
    a = by[("64", "allreduce")]
    check(a["trials"] == "3" and a["steps"] == "100", f"allreduce: 3 trials of 100 steps: {a['trials']}, {a['steps']}")
    check(math.isclose(float(a["final_accuracy"]), 0.82, rel_tol=1e-5), f"allreduce: final accuracy 0.82: {a['final_accuracy']}")
    se = float(np.std([0.83, 0.84, 0.79], ddof=1) / math.sqrt(3))
    check(math.isclose(float(a["final_accuracy_se"]), se, rel_tol=1e-4), f"allreduce: se {se:.5f}: {a['final_accuracy_se']}")
    check(math.isclose(float(a["steps_to_0.7"]), 140 / 3, rel_tol=1e-5) and a["reached_0.7"] == "3",
          f"allreduce: steps to 0.7 = 46.67, 3 reached: {a['steps_to_0.7']}, {a['reached_0.7']}")
    check(math.isclose(float(a["time_to_0.7"]), 14 / 3, rel_tol=1e-5), f"allreduce: time to 0.7 = 4.67 s: {a['time_to_0.7']}")
    check(float(a["steps_to_0.8"]) == 70 and a["reached_0.8"] == "2" and math.isclose(float(a["time_to_0.8"]), 7.0),
          f"allreduce: 0.8 by 2 trials, at 70 steps, 7 s: {a['steps_to_0.8']}, {a['reached_0.8']}, {a['time_to_0.8']}")
    check(float(a["bytes_per_peer"]) == 200.0, f"allreduce: bytes per peer 12800/64 = 200: {a['bytes_per_peer']}")
    check(math.isclose(float(a["sim_time"]), 10.0) and float(a["wall_s"]) == 12.5,
          f"allreduce: 10 s simulated, wall 12.5 s (the last line): {a['sim_time']}, {a['wall_s']}")
    g = by[("64", "diloco")]
    check(g["trials"] == "1" and math.isclose(float(g["final_accuracy"]), 0.87) and g["final_accuracy_se"] == "",
          f"diloco: the cut-short trial left out, no se for one trial: {g['trials']}, {g['final_accuracy_se']}")
    check(float(g["steps_to_0.7"]) == 20 and float(g["steps_to_0.8"]) == 40, "diloco: 0.7 at 20, 0.8 at 40")
    e = by[("1024", "noloco")]
    check(e["reached_0.7"] == "0" and e["time_to_0.7"] == "" and e["wall_s"] == "",
          f"noloco: 0.7 never reached, no time, no wall time: {e['reached_0.7']}, {e['time_to_0.7']!r}")
    check(math.isclose(float(e["final_relative_gap"]), 0.35), f"noloco: final loss 1 - 0.65: {e['final_relative_gap']}")


def check_markdown(md: str) -> None:
    """The formatted cells of three rows of table.md."""
    r = table_row(md, "64", "0.01", "random", "allreduce")
    check(r[6:11] == ["0.8200 ± 0.0153", "47", "4.67 s", "70 (2/3)", "7.00 s (2/3)"],
          f"md allreduce: accuracy ± se, steps and times, '(2/3)' when only 2 of 3 got there: {r[6:11]}")
    check(r[12:] == ["200 B", "10.00 s", "12 s"], f"md allreduce: 200 B, 10.00 s, wall 12 s: {r[12:]}")
    r = table_row(md, "1024", "0.01", "random", "noloco")
    check(r[6:11] == ["0.6500", "—", "—", "—", "—"] and r[12] == "2.0 MB",
          f"md noloco: one trial (no se), '—' for targets never reached, 2.0 MB per peer: {r}")
    r = table_row(md, "64", "0", "random", "moshpit-H1")
    check(r[6] == "0.1000", f"md moshpit-H1 present: {r}")


def check_figures(d: Path) -> None:
    for name in ("fig_N64_p0.png", "fig_N64_p0.01.png", "fig_N64_p0.01_dirichlet.png", "fig_N1024_p0.01.png"):
        f = d / "figs" / name
        check(f.exists() and f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"figure {name} written as a PNG")
    check(len(list((d / "figs").glob("*.png"))) == 4, "one figure per (N, p, split), no more")


def check_layout(d: Path) -> None:
    """Every check, on traces of the layout at hand (T.layout) written in the empty folder d."""
    write_traces(d)
    T.check_rows(d / "N64_p0.01_allreduce.h5", "step", [6, 6, 6], "allreduce")
    rows, md, skipped = T.summarize(d, "--figures", str(d / "figs"))
    check("averaging.h5: not a training trace" in skipped and "broken.h5: cannot read" in skipped,
          f"averaging and broken traces reported and skipped: {skipped.strip()!r}")
    check_csv(rows)
    check_markdown(md)
    check_figures(d)
    T.check_folders("| N | p | split |", "no sgd traces", d)


def main() -> int:
    return T.each(check_layout)


if __name__ == "__main__":
    sys.exit(main())
