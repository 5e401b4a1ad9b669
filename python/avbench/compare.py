#!/usr/bin/python3
"""One line per avbench trace: rounds to each variance target, bytes, time; then
the paired differences of every trace against the first.

    avbench compare [--baseline K] [--confidence C] [--csv FILE] [--unpaired] TRACE.h5 [TRACE.h5 ...]

Reads /summary of each trace (docs/trace-format.md) and prints, per trace, the
protocol (with its graph, for the protocols that take --topology), the engine, and
the mean ± standard error over trials of the rounds to each target, the bytes each
peer sent, and the time per trial: simulated seconds under SMPI, the α–β estimate of
them on the sequential engine, wall seconds under Open MPI. A '*' marks a mean that
includes trials which never reached the target (counted at the rounds they ran);
"none by round R" says that no trial reached it within the cap R (--rounds). Only
trials that ran to the end are used; a run cut short says so. Notes under the table
say what the time of each engine present is, and what a round is for swarm.

With two traces or more, the paired comparison follows (avbench/paired.py): the
traces share their trial seeds and failures (the same --seed and failure
settings), so each trial of a trace is paired with the trial of the same seed in
the baseline, and the differences of rounds, bytes per peer and time to each
target get a confidence interval and a paired t-test. Traces that cannot be
paired (other seeds, failures, peers or engine) are refused with exit 2, unless
--unpaired asks for the table alone.

Run it with Debian's /usr/bin/python3, which sees python3-h5py.
"""

from __future__ import annotations

import math
import sys

import h5py
import numpy as np

# What the time column holds, per trace engine attribute.
TIME_OF_ENGINE = {
    "smpi": "simulated seconds (SimGrid)",
    "sequential": "alpha-beta estimate of SMPI's simulated seconds (docs/architecture.md, Engines)",
    "openmpi": "wall-clock seconds",
    "mpich": "wall-clock seconds",
}
# Protocols whose round is not a synchronous round of the others, and what it is.
ROUND_NOTES = {
    "swarm": "swarm's round (--clock round): every alive peer starts one asynchronous interaction "
             "with a random neighbour, then all settle before the measurement; "
             "about N pairwise averages, against N/2 in pairwise's matching",
}


def mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else math.nan  # one trial has none (printed "–")
    return float(v.mean()), float(se)


def targets_of(summary, counter: str = "rounds") -> list[str]:
    """Target suffixes ("1e-4", "1e-9"), loosest first; `counter`: rounds (averaging) or steps (sgd)."""
    prefix = f"{counter}_to_"
    names = [k[len(prefix):] for k in summary if k.startswith(prefix)]
    return sorted(names, key=float, reverse=True)


def label_of(config) -> str:
    """The protocol, with its graph when it takes one ("gossip (exp)"), then what a
    training run does around it: ", H=10" (--local-steps), "+ tracking"
    (--gradient-tracking), "+ nesterov" (--outer-optimizer, "x4" with --fragments 4)."""
    a = config.attrs
    protocol = str(a.get("protocol", "?"))
    topology = a.get("topology")
    label = f"{protocol} ({topology})" if topology is not None else protocol
    steps = int(a.get("local-steps", 1))
    if steps > 1:
        label += f", H={steps}"
    if str(a.get("gradient-tracking", "false")) == "true":
        label += " + tracking"
    outer = str(a.get("outer-optimizer", "none"))
    if outer != "none":
        fragments = int(a.get("fragments", 1))
        label += f" + {outer}" + (f" x{fragments}" if fragments > 1 else "")
    return label


def row(path: str) -> dict:
    with h5py.File(path, "r") as f:
        s = f["summary"]
        done = s["complete"][()] == 1
        peers = int(f.attrs["n_peers"])
        counter = "steps" if str(f.attrs.get("run_kind", "averaging")) == "sgd" else "rounds"
        r = {
            "counter": counter,
            "protocol": str(f["config"].attrs.get("protocol", "?")),
            "label": label_of(f["config"]),
            "engine": str(f.attrs["engine"]),
            "peers": peers,
            "trials": int(done.sum()),
            "cap": int(f["config"].attrs.get(counter, -1)),
            "complete": int(f.attrs["complete"]),
            "targets": {},
            "bytes": mean_se(s["bytes_sent"][()][done] / peers),
            "time": mean_se(s["time"][()][done]),
        }
        for t in targets_of(s, counter):
            rounds = s[f"{counter}_to_{t}"][()][done]
            reached = s[f"reached_{t}"][()][done]
            r["targets"][t] = (*mean_se(rounds), int((reached != 0).sum()))
        return r


def plus_minus(mean: float, se: float, digits: int) -> str:
    """mean ± se; one trial has no standard error: "–" in its place."""
    return f"{mean:.{digits}f} ± " + ("–" if math.isnan(se) else f"{se:.{digits}f}")


def rounds_cell(r: dict, t: str) -> str:
    if t not in r["targets"]:
        return "-"
    m, se, reached = r["targets"][t]
    if reached == 0 and r["trials"] > 0:
        return f"none by {r['counter'][:-1]} {r['cap']}"
    return plus_minus(m, se, 2) + ("*" if reached < r["trials"] else " ")


def print_table(rows: list[dict]) -> None:
    targets = []
    for r in rows:
        targets += [t for t in r["targets"] if t not in targets]
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    time_kind = "simulated" if engines == ["smpi"] else "time"
    width = max([len("protocol")] + [len(r["label"]) for r in rows])
    header = f"{'protocol':<{width}} {'engine':<10} {'peers':>6} {'trials':>6}"
    counters = {r["counter"] for r in rows}
    unit = counters.pop() if len(counters) == 1 else "rounds (steps)"
    counted = "to " if unit == "rounds (steps)" else f"{unit} to "
    for t in targets:
        header += f" {counted + t:>20}"
    header += f" {'bytes/peer':>12} {time_kind + ' s/trial':>20}"
    print(header)
    for r in rows:
        line = f"{r['label']:<{width}} {r['engine']:<10} {r['peers']:>6} {r['trials']:>6}"
        for t in targets:
            line += f" {rounds_cell(r, t):>20}"
        bm, _ = r["bytes"]
        tm, tse = r["time"]
        line += f" {bm:>12.1f} {plus_minus(tm, tse, 4):>20}"
        if not r["complete"]:
            line += "  (run cut short)"
        print(line)
    if any(0 < reached < r["trials"] for r in rows for (_, _, reached) in r["targets"].values()):
        print(f"* some trials never reached the target; they count as the {unit} they ran (the cap)")
    if engines != ["smpi"]:
        for e in engines:
            print(f"time on {e}: {TIME_OF_ENGINE.get(e, 'as the engine measures it')}")
    for p in dict.fromkeys(r["protocol"] for r in rows if r["counter"] == "rounds"):
        if p in ROUND_NOTES:
            print(ROUND_NOTES[p])


def print_paired(df, confidence: float) -> None:
    """The paired differences, one line per trace, target and metric."""
    if df.empty:
        return
    level = f"{100 * confidence:g}%"
    first = df.iloc[0]
    print(f"\npaired differences against {first['baseline_label']} ({first['baseline']}), over the trials with "
          f"the same seeds: trace - baseline, mean [{level} CI], paired t-test")
    width = max(len("protocol"), *(len(x) for x in df["label"]))
    print(f"{'protocol':<{width}} {'target':>7} {'metric':<15} {'pairs':>5} {'baseline':>11} "
          f"{'difference [' + level + ' CI]':>36} {'p':>9}")
    for _, r in df.iterrows():
        interval = f"{r['mean_difference']:+.4g} [{r['ci_low']:+.4g}, {r['ci_high']:+.4g}]"
        verdict = "significant" if r["significant"] else ""
        bound = f"  ({r['unreached']} pair(s) unreached: a bound)" if r["unreached"] else ""
        print(f"{r['label']:<{width}} {r['target']:>7.0e} {r['metric']:<15} {r['pairs']:>5} "
              f"{r['baseline_mean']:>11.4g} {interval:>36} {r['p_value']:>9.2g} {verdict}{bound}")


def parser():
    import argparse

    from avbench.cli import OneLineParser
    p = OneLineParser(prog="avbench compare", description=__doc__.split("\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1])
    p.add_argument("traces", nargs="+", metavar="TRACE.h5")
    p.add_argument("--baseline", type=int, default=0, help="the trace the others are paired with, by position [0]")
    p.add_argument("--confidence", type=float, default=0.95, help="of the intervals, in (0, 1) [0.95]")
    p.add_argument("--csv", help="also write the paired differences to this CSV file")
    p.add_argument("--unpaired", action="store_true", help="only the per-trace table (traces that share no seeds)")
    return p


def main(argv: list[str]) -> int:
    a = parser().parse_args(argv)
    rows = []
    for path in a.traces:
        try:
            rows.append(row(path))
        except (OSError, KeyError) as e:
            print(f"avbench compare: error: {path}: {e}", file=sys.stderr)
            return 1
    print_table(rows)
    if a.unpaired or len(a.traces) < 2:
        return 0
    from avbench.paired import PairingError, paired
    try:
        df = paired(a.traces, a.baseline, a.confidence)
    except (PairingError, ValueError) as e:
        print(f"avbench compare: error: {e} (--unpaired: the table alone)", file=sys.stderr)
        return 2
    print_paired(df, a.confidence)
    if a.csv:
        df.to_csv(a.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
