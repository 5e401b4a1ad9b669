#!/usr/bin/python3
"""Self-test of make_table.py on synthetic traces; exit 0 when it passes.

    PYTHONPATH=python /usr/bin/python3 experiments/moshpit_table/test_make_table.py

Writes, in a temporary folder, traces holding only what make_table.py reads
(root n_peers, config protocol and fail-rate, /summary, each trial's variance),
with values chosen so the expected table is known, then checks the printed table,
the CSV copy and the exit status of --strict: first for the default protocols,
then for the graph columns alone (gossip under the published Gossip, sgp-paper
under SGP, pushsum with nothing published), then for all six together. Every check
runs twice: on traces of schema v4, a group /trials/<k> per trial (as traces stored
before v9 are), and on the same traces rewritten in v9's layout, one table over
(trial, round) (avbench.layouts.to_v9), as the programs write them now.
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

from avbench.selftest import Layouts, finish_trials, write_root

# Every check runs on the traces write_trace leaves (v4) and on them rewritten as v9.
T = Layouts(Path(__file__).resolve().parent / "make_table.py", ("v4", "v9"))
check = T.check


def write_trace(path: Path, n: int, protocol: str, p: str, r9, r4, complete=None, variances=None):
    """One trace; variances[k] is trial k's variance column (trials without one get [1])."""
    complete = [1] * len(r9) if complete is None else complete
    with h5py.File(path, "w") as f:
        write_root(f, 4, "averaging", n, {"protocol": protocol, "fail-rate": p})
        s = f.create_group("summary")
        s["trial"] = np.arange(len(r9), dtype=np.int32)
        s["rounds_to_1e-4"] = np.asarray(r4, dtype=np.int32)
        s["rounds_to_1e-9"] = np.asarray(r9, dtype=np.int32)
        s["complete"] = np.asarray(complete, dtype=np.int32)
        s["seed"] = np.arange(len(r9), dtype=np.uint64)  # v9 has the trials' seeds only here
        s["rounds"] = np.asarray([len((variances or {}).get(k, [1.0])) - 1 for k in range(len(r9))],
                                 dtype=np.int32)  # v9: a trial has rounds + 1 rows
        for k in range(len(r9)):
            v = (variances or {}).get(k, [1.0])
            f[f"trials/{k}/variance"] = np.asarray(v, dtype=float)
            f[f"trials/{k}/round"] = np.arange(len(v), dtype=np.int32)
            f[f"trials/{k}"].attrs["complete"] = np.int32(complete[k])
        finish_trials(f, "averaging")
    T.place(path)


def from_ratios(ratios) -> list[float]:
    return list(np.cumprod([1.0] + list(ratios)))


def run(results: Path, *extra: str):
    return T.run("--results", str(results), *extra)


def cells_of(out: str, *first: str) -> list[str]:
    """The protocol cells of the table row whose (N, p) are `first`, in column order;
    ("N", "p") gives the column titles."""
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) > 1 and parts[0].split() == list(first):
            return [c.strip() for c in parts[1:]]
    return []


def titles_of(out: str) -> list[str]:
    """The column titles of the table, protocol columns only."""
    return cells_of(out, "N", "p")


def table_of(d: Path, what: str) -> tuple[str, dict]:
    """make_table.py on the traces in d: its printed table (its exit 0 checked, as
    `what`) and the CSV copy's rows by (N, p, protocol)."""
    res = run(d, "--csv", str(d / "table.csv"))
    print(res.stdout)
    check(res.returncode == 0, f"{what} (got {res.returncode}: {res.stderr.strip()})")
    rows = {(int(x["N"]), float(x["p"]), x["protocol"]): x for x in csv.DictReader(open(d / "table.csv"))}
    return res.stdout, rows


def main() -> int:
    return T.each(check_layout)


def check_layout(d: Path) -> None:
    """Every check, on traces of the layout at hand (T.layout), in the empty folder d and another."""
    check_default_protocols(d)
    with tempfile.TemporaryDirectory() as tmp:
        check_graph_columns(Path(tmp))
        check_all_six(Path(tmp))


def check_default_protocols(d: Path) -> None:
    """All-Reduce, random groups and moshpit: published values, theory, contraction."""
    # All-Reduce: equal to the published value; at p = 0.001 mean exactly 1.6.
    write_trace(d / "a.h5", 512, "allreduce", "0", [1] * 10, [1] * 10)
    r = [1] * 60 + [2] * 25 + [3] * 10 + [4] * 5
    write_trace(d / "b.h5", 512, "allreduce", "0.001", r, r)
    # Random groups: nine 6s and a 7 (mean 6.1 = published, se 0.1); an extra
    # incomplete trial (45 rounds, ratio 0.9) that must be left out; contraction
    # from trial 0's rounds 1..5 (its round 6, ratio 0.5, is beyond t = 5) and
    # trial 1's 3 rounds: 8 ratios.
    ratios0, ratios1 = [0.03] * 5 + [0.5], [0.028, 0.029, 0.030]
    write_trace(d / "c.h5", 512, "random-groups", "0", [6] * 9 + [7, 45], [3] * 10 + [40],
                complete=[1] * 10 + [0],
                variances={0: from_ratios(ratios0), 1: from_ratios(ratios1),
                           10: from_ratios([0.9] * 5)})
    T.check_rows(d / "c.h5", "round", [7, 4] + [1] * 8 + [6], "random-groups")
    # Moshpit: far from the published 8.8; and an N = 1024 cell (nothing published).
    write_trace(d / "d.h5", 512, "moshpit", "0.01", [30] * 10, [12] * 10)
    write_trace(d / "e.h5", 1024, "moshpit", "0", [2] * 10, [1] * 10)

    out, rows = table_of(d, "exit 0 without --strict")
    c = cells_of(out, "512", "0")
    check(len(c) == 3 and c[0].startswith("1.00 (1.00) ± 0.00") and "!" not in c[0],
          f"allreduce 512/0 equal to published, not flagged: {c[:1]}")
    check(len(c) == 3 and c[1].startswith("6.10 (3.00) ± 0.10 ") and "!" not in c[1],
          f"random-groups 512/0: 6.10 (3.00) ± 0.10, incomplete trial left out, not flagged: {c[1:2]}")
    check(rows[(512, 0.0, "random-groups")]["flag_pub"] == "0", "CSV: random-groups 512/0 flag_pub = 0")
    check_allreduce_theory(out, rows)

    c = cells_of(out, "512", "0.01")
    check(len(c) == 3 and c[2].startswith("30.00 (12.00) ± 0.00!"), f"moshpit 512/0.01 flagged: {c[2:]}")
    check("! N=512 p=0.01 moshpit" in out, "moshpit 512/0.01 listed under Flagged")
    check(len(c) == 3 and c[1].startswith("—"), f"missing trace shows —: {c[1:2]}")

    c = cells_of(out, "1024", "0")
    check(len(c) == 3 and c[2].startswith("2.00 (1.00) ± 0.00") and c[2].endswith("—")
          and "!" not in c[2], f"N=1024 row present, nothing published: {c[2:]}")
    check_contraction(out, rows, float(np.mean(ratios0[:5] + ratios1)))

    check(titles_of(out) == ["All-Reduce", "Random groups", "Moshpit"],
          f"columns: only the protocols with traces: {titles_of(out)}")
    check(run(d, "--strict").returncode == 1, "--strict exits 1 with a flagged cell")
    (d / "d.h5").unlink()
    res = run(d, "--strict")
    check(res.returncode == 0 and "Flagged: none." in res.stdout, "--strict exits 0 once nothing is flagged")


def check_allreduce_theory(out: str, rows: dict) -> None:
    """All-Reduce at p = 0.001 next to its theory, E[min(G, 50)]."""
    q = 0.999 ** 512
    theory = (1 - (1 - q) ** 50) / q
    c = cells_of(out, "512", "0.001")
    check(len(c) == 3 and c[0].split()[-1] == f"{theory:.3f}" and 1.668 < theory < 1.670,
          f"allreduce theory 512/0.001 printed {theory:.3f}: {c[:1]}")
    got = float(rows[(512, 0.001, "allreduce")]["theory"])
    check(math.isclose(got, theory, rel_tol=1e-12), f"CSV theory {got!r} == {theory!r}")
    check(rows[(512, 0.001, "allreduce")]["flag_pub"] == "0"
          and rows[(512, 0.001, "allreduce")]["flag_theory"] == "0",
          "allreduce 512/0.001 (mean 1.6) flagged neither against 1.6 nor against theory")


def check_contraction(out: str, rows: dict, expected: float) -> None:
    """Random groups at N = 512, p = 0: the measured variance ratio against (r - 1)/(N - 1)."""
    th = 15 / 511
    got = float(rows[(512, 0.0, "random-groups")]["contraction"])
    check(math.isclose(got, expected, rel_tol=1e-12), f"contraction {got!r} == {expected!r}")
    check(f"measured {expected:.5f}" in out and f"theory {th:.5f}" in out
          and f"{(expected - th) / th:+.1%}" in out, "contraction line: measured, theory, difference")
    check(rows[(512, 0.0, "random-groups")]["flag_contraction"] == "0", "contraction within 5%: not flagged")


def check_graph_columns(g: Path) -> None:
    """The graph columns alone (PROTOCOLS="gossip sgp-paper pushsum"): gossip is the
    published Gossip column, sgp-paper the published SGP, pushsum has nothing published."""
    write_trace(g / "g0.h5", 512, "gossip", "0", [50] * 20, [50] * 20)
    # Thirteen 50s, two 37s, five 46s: mean 47.7 against the published 47.6.
    sgp = [50] * 13 + [37] * 2 + [46] * 5
    write_trace(g / "s0.h5", 512, "sgp-paper", "0", sgp, [13] * 20)
    write_trace(g / "s1.h5", 512, "sgp-paper", "0.01", [30] * 20, [10] * 20)  # far from 47.8
    write_trace(g / "p0.h5", 512, "pushsum", "0", [9] * 20, [9] * 20)
    write_trace(g / "p1.h5", 1024, "pushsum", "0", [10] * 20, [10] * 20)
    out, rows = table_of(g, "graph columns alone: exit 0")
    titles = titles_of(out)
    check(titles == ["Gossip", "SGP", "Push-sum (not in the paper)"], f"graph columns: titles {titles}")
    c = cells_of(out, "512", "0")
    check(len(c) == 3 and c[0].startswith("50.00 (50.00) ± 0.00 ") and c[0].endswith("50.0 (50.0)")
          and "!" not in c[0], f"gossip 512/0: ours 50 next to the published Gossip 50.0: {c[:1]}")
    check(len(c) == 3 and c[1].startswith("47.70 (13.00) ± ") and c[1].endswith("47.6 (15.6)")
          and "!" not in c[1], f"sgp-paper 512/0: 47.70 next to the published SGP 47.6: {c[1:2]}")
    check(len(c) == 3 and c[2].startswith("9.00 (9.00) ± 0.00") and c[2].endswith("—")
          and "!" not in c[2], f"pushsum 512/0: no published value, not flagged: {c[2:]}")
    check(rows[(512, 0.0, "gossip")]["pub_1e-9"] == "50.0" and rows[(512, 0.0, "gossip")]["flag_pub"] == "0",
          "CSV: gossip 512/0 pub 50.0, flag_pub 0")
    check(rows[(512, 0.0, "sgp-paper")]["pub_1e-9"] == "47.6", "CSV: sgp-paper 512/0 pub 47.6")
    check(rows[(512, 0.0, "pushsum")]["pub_1e-9"] == "" and rows[(512, 0.0, "pushsum")]["flag_pub"] == "",
          "CSV: pushsum 512/0 has no published value and no flag")
    c = cells_of(out, "512", "0.01")
    check(len(c) == 3 and c[1].startswith("30.00 (10.00) ± 0.00!") and c[1].endswith("47.8 (15.6)"),
          f"sgp-paper 512/0.01 flagged against the published SGP: {c[1:2]}")
    check("! N=512 p=0.01 sgp-paper" in out, "sgp-paper 512/0.01 listed under Flagged")
    check(len(c) == 3 and c[0].startswith("—") and c[0].endswith("50.0 (50.0)"),
          f"missing gossip trace: — next to the published value: {c[:1]}")
    c = cells_of(out, "1024", "0")
    check(len(c) == 3 and c[2].startswith("10.00 (10.00)") and c[0].startswith("—"),
          f"N=1024 row from the pushsum trace alone: {c}")
    check(run(g, "--strict").returncode == 1, "graph columns: --strict exits 1 with a flagged cell")


def check_all_six(g: Path) -> None:
    """The graph columns' traces and the default protocols': the paper's column order,
    push-sum last."""
    write_trace(g / "a.h5", 512, "allreduce", "0", [1] * 10, [1] * 10)
    write_trace(g / "c.h5", 512, "random-groups", "0", [6] * 9 + [7], [3] * 10)
    write_trace(g / "d.h5", 512, "moshpit", "0", [8] * 10, [4] * 10)
    res = run(g)
    titles = titles_of(res.stdout)
    check(res.returncode == 0 and titles == ["All-Reduce", "Gossip", "SGP", "Random groups", "Moshpit",
                                             "Push-sum (not in the paper)"],
          f"all six protocols: columns in the paper's order, push-sum last: {titles}")
    c = cells_of(res.stdout, "512", "0")
    check(len(c) == 6 and c[3].startswith("6.10 (3.00)") and c[5].startswith("9.00 (9.00)"),
          f"all six protocols: cells under their titles: {c}")


if __name__ == "__main__":
    sys.exit(main())
