#!/usr/bin/python3
"""--summary FILE (docs/analysis.md, "Summary files"), the progress lines and
scripts/avbench aggregate's statistics, on real runs.

    test_summary.py AVERAGING_BENCH SGD_BENCH MODE

MODE `mpi` runs the programs on 4 Open MPI ranks (mpirun from PATH) and on the
sequential engine; `smpi` runs them under scripts/smpirun.sh on 4 simulated peers
(the summaries and refusals only).
Checks: every summary row equals its trial in the trace's /summary (read with h5py),
the run's identity equals /config; CSV and JSON agree; pandas.read_csv gives
numeric columns, NaN for a target not reached; a diverged sgd trial (model not
finite, or gap above its limit) has diverged = 1 and empty values where they
are not finite, and the mean rows of a run of such trials show –; a run stopped
by SIGTERM marks its rows run_complete = 0; refusals (exit 2, one line naming
--summary, nothing written); progress lines climb to 100%, rewritten in place on
a terminal;
avbench aggregate's mean, standard error and n against an independent computation.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import pandas as pd

from avbench.traces import parse_value  # /config values and summary cells, typed as python/avbench types them

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AVERAGING, SGD, MODE = sys.argv[1:4]
FAILURES: list[str] = []
# The SMPI build's programs run under smpirun only; the sequential engine and the
# checks that use it (SIGTERM, progress, avbench aggregate) run in the Open MPI build's test.
ENGINES = ("sequential", "mpi") if MODE == "mpi" else ("smpi",)


def check(ok: bool, what: str) -> None:
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def launch(engine: str, program: str, args: list[str], peers: int = 6) -> list[str]:
    if engine == "sequential":
        return [program, "--engine", "sequential", "--peers", str(peers), *args]
    if engine == "smpi":
        return [os.path.join(ROOT, "scripts/smpirun.sh"), "-n", "4", program, *args]
    return ["mpirun", "--oversubscribe", "-n", "4", program, *args]


def run(cmd: list[str], cwd: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def expected_rows(trace: str) -> tuple[list[dict], dict]:
    """The trace's trials as summary rows (None: empty cell), and its identity."""
    with h5py.File(trace, "r") as f:
        s = {k: f["summary"][k][()] for k in f["summary"] if k != "targets"}
        peers = int(f.attrs["n_peers"])
        sgd = f.attrs["run_kind"] == "sgd"
        identity = {"engine": f.attrs["engine"], "peers": peers}
        for k, v in f["config"].attrs.items():
            if k not in ("text", "engine", "peers"):
                identity[k] = parse_value(v)
    prefix = "steps_to_" if sgd else "rounds_to_"
    rows = []
    for i in range(len(s["trial"])):
        r = {"trial": int(s["trial"][i]), "seed": int(s["seed"][i])}
        for k in s:
            if k.startswith(prefix):
                r[k] = int(s[k][i])
        for k in s:
            if k.startswith("reached_"):
                r[k] = int(s[k][i])
        fin = lambda v: float(v) if math.isfinite(v) else None  # noqa: E731
        if sgd:
            r.update(final_relative_gap=fin(s["final_relative_gap"][i]), final_consensus=fin(s["final_consensus"][i]),
                     final_accuracy=fin(s["final_accuracy"][i]))
        else:
            r["final_variance"] = fin(s["final_variance"][i])
        r.update(bytes_per_peer=float(s["bytes_sent"][i]) / peers, time=float(s["time"][i]))
        if sgd:
            r["steps"] = int(s["steps"][i])
        r.update(rounds=int(s["rounds"][i]), complete=int(s["complete"][i]))
        if sgd:
            r["diverged"] = int(s["diverged"][i])
        rows.append(r)
    return rows, identity


def csv_rows(path: str) -> list[dict]:
    """The CSV as typed values: empty cells None, numbers as int or float."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: (None if v == "" else parse_value(v)) for k, v in r.items()} for r in csv.DictReader(fh)]


def agree(rows: list[dict], want: list[dict], identity: dict, what: str, complete: int = 1) -> None:
    check(len(rows) == len(want) and len(want) > 0, f"{what}: {len(rows)} rows for {len(want)} trials")
    bad = []
    for got, exp in zip(rows, want):
        for k, v in exp.items():
            if got.get(k) != v:
                bad.append(f"trial {exp['trial']} {k}: {got.get(k)!r} != trace {v!r}")
        for k, v in identity.items():
            name = k if k not in exp and k != "run_complete" else "config_" + k
            if got.get(name) != v:
                bad.append(f"{name}: {got.get(name)!r} != /config {v!r}")
        if got.get("run_complete") != complete:
            bad.append(f"run_complete {got.get('run_complete')!r}")
    check(not bad, f"{what}: rows equal the trace's /summary and /config" + ("; " + "; ".join(bad[:4]) if bad else ""))


def summaries(work: str, engine: str) -> None:
    for program, extra in ((AVERAGING, ["--protocol", "gossip", "--rounds", "12", "--fail-rate", "0.05"]),
                           (SGD, ["--protocol", "gossip", "--steps", "40", "--objective", "logistic"])):
        name = f"{os.path.basename(program)}-{engine}"
        args = ["--trials", "3", "--target", "1e-2", "--target", "1e-30", "--quiet", *extra]
        for ext in ("csv", "json"):
            p = run(launch(engine, program, [*args, "--out", f"{name}-{ext}.h5", "--summary", f"{name}.{ext}"]), work)
            check(p.returncode == 0, f"{name}: --summary {name}.{ext} exit {p.returncode} {p.stderr.strip()[:200]}")
        want, identity = expected_rows(os.path.join(work, f"{name}-csv.h5"))
        got_csv = csv_rows(os.path.join(work, f"{name}.csv"))
        agree(got_csv, want, dict(identity, summary=f"{name}.csv", out=f"{name}-csv.h5"), f"{name}.csv")
        want_json, _ = expected_rows(os.path.join(work, f"{name}-json.h5"))
        with open(os.path.join(work, f"{name}.json"), encoding="utf-8") as fh:
            got_json = json.load(fh)
        agree(got_json, want_json, dict(identity, summary=f"{name}.json", out=f"{name}-json.h5"), f"{name}.json")
        if engine == "sequential":  # time is an estimate, so both runs give the same bits
            same = [{k: v for k, v in r.items() if k not in ("summary", "out")} for r in got_csv]
            other = [{k: v for k, v in r.items() if k not in ("summary", "out")} for r in got_json]
            check(same == other, f"{name}: CSV and JSON hold the same rows")
        # --summary -: the CSV on stdout (rank 0's only), the table on stderr, no file named "-".
        p = run(launch(engine, program, [*args, "--out", f"{name}-stdout.h5", "--summary", "-"]), work)
        got = [{k: (None if v == "" else parse_value(v)) for k, v in r.items()}
               for r in csv.DictReader(io.StringIO(p.stdout))] if p.returncode == 0 else []
        want_stdout, _ = expected_rows(os.path.join(work, f"{name}-stdout.h5")) if p.returncode == 0 else ([], {})
        agree(got, want_stdout, dict(identity, summary="-", out=f"{name}-stdout.h5"), f"{name}: --summary -")
        check("# wall time" in p.stderr and not os.path.exists(os.path.join(work, "-")),
              f"{name}: --summary - prints the table on stderr and writes no file named -")
        df = pd.read_csv(os.path.join(work, f"{name}.csv"))
        numeric = [c for c in want[0] if df[c].dtype.kind not in "iuf"]
        check(not numeric, f"{name}: pandas reads every per-trial column as a number (not: {numeric})")
        to = "rounds_to_1e-30" if program == AVERAGING else "steps_to_1e-30"
        cap = df["rounds" if program == AVERAGING else "steps"]
        check(bool((df["reached_1e-30"] == 0).all() and (df[to] == cap).all()),
              f"{name}: a target not reached is reached_<t> = 0 and the cap, as in the trace")


def diverged_run(work: str) -> None:
    """Diverged sgd trials: diverged = 1, their values that are not finite empty
    (a model that overflowed between evaluations), or kept (a finite model whose
    gap passed its limit, a relative gap of 1e6 or more); the table's mean and
    ± se rows, with no trial to average, show – (not 0, which reads as
    convergence at step 0)."""
    for tag, args, finite in (("div", ["--lr", "1e3", "--eval-every", "100"], False),
                              ("div-gap", ["--lr", "0.7", "--protocol", "gossip", "--topology", "ring"], True)):
        p = run(launch("sequential", SGD, ["--trials", "2", "--steps", "200", *args, "--out", f"{tag}.h5",
                                           "--summary", f"{tag}.csv"]), work)
        want, identity = expected_rows(os.path.join(work, f"{tag}.h5"))
        gap_ok = (lambda g: g is not None and g > 1e6) if finite else (lambda g: g is None)
        check(p.returncode == 0 and all(r["diverged"] == 1 and gap_ok(r["final_relative_gap"]) and r["steps"] < 200
                                        for r in want),
              f"{tag}: exit {p.returncode}, every trial diverged before step 200, final relative gap "
              + ("> 1e6" if finite else "empty"))
        agree(csv_rows(os.path.join(work, f"{tag}.csv")), want,
              dict(identity, out=f"{tag}.h5", summary=f"{tag}.csv"), tag)
        means = [line for line in p.stdout.splitlines() if re.match(r"^# +(mean|± se) ", line)]
        cells = [re.sub(r"^# +(mean|± se) ", "", line).split() for line in means]
        check(len(means) == 2 and all(c == ["–"] * 7 for c in cells), f"{tag}: mean and ± se rows all –: {means}")


def stopped_run(work: str) -> None:
    """SIGTERM mid-run: the summary holds the trials recorded, run_complete = 0."""
    cmd = launch("sequential", AVERAGING, ["--dim", "64", "--protocol", "gossip", "--rounds", "400", "--trials", "50",
                                           "--threads", "1", "--quiet", "--out", "stop.h5", "--summary", "stop.csv"],
                 peers=4096)
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    check(proc.returncode == 128 + signal.SIGTERM, f"stopped run: exit {proc.returncode} {err.strip()[:200]}")
    want, identity = expected_rows(os.path.join(work, "stop.h5"))
    agree(csv_rows(os.path.join(work, "stop.csv")), want, dict(identity, out="stop.h5", summary="stop.csv"),
          "stopped run", complete=0)


def refusals(work: str) -> None:
    short = ["--trials", "1", "--rounds", "2"]
    with open(os.path.join(work, "kept.csv"), "w") as fh:
        fh.write("earlier\n")
    ro = os.path.join(work, "ro")
    os.makedirs(ro + "-src")
    os.makedirs(ro)
    if os.geteuid() != 0:
        os.chmod(ro, 0o555)
    elif subprocess.run(["mount", "--bind", ro + "-src", ro]).returncode != 0 or \
            subprocess.run(["mount", "-o", "remount,bind,ro", ro]).returncode != 0:
        print("skip  read-only folder: cannot bind-mount one", flush=True)
        ro = None
    cases = [("existing file", ["--summary", "kept.csv"], "already exists"),
             ("missing folder", ["--summary", "nope/s.csv"], "does not exist"),
             ("same path as --out", ["--summary", "r.h5"], "--out")]
    if ro:
        cases.append(("read-only folder", ["--summary", "ro/s.csv"], "not writable"))
    try:
        for engine in ENGINES:
            for what, args, text in cases:
                p = run(launch(engine, AVERAGING, [*short, "--out", "r.h5", *args]), work)
                lines = [line for line in p.stderr.splitlines() if "error" in line]
                ok = p.returncode == 2 and len(lines) == 1 and "--summary" in lines[0] and text in lines[0]
                check(ok, f"{engine} {what}: exit {p.returncode}, {lines}")
                check(not os.path.exists(os.path.join(work, "r.h5")), f"{engine} {what}: no trace written")
        with open(os.path.join(work, "kept.csv")) as fh:
            check(fh.read() == "earlier\n", "the existing file is kept")
        p = run(launch(ENGINES[0], AVERAGING, [*short, "--summary", "kept.csv", "--overwrite"]), work)
        check(p.returncode == 0 and csv_rows(os.path.join(work, "kept.csv"))[0]["trial"] == 0,
              "--overwrite replaces it")
        check(not [f for f in os.listdir(work) if ".tmp." in f], "no temporary file is left")
    finally:
        if ro and os.geteuid() == 0:
            subprocess.run(["umount", ro])


def progress(work: str) -> None:
    """Non-terminal stderr: plain lines, their percentage climbing to 100."""
    # --progress-every 0: a line every round, so the check does not depend on the machine's speed.
    cmd = launch("sequential", AVERAGING, ["--dim", "64", "--protocol", "gossip", "--topology", "exp", "--rounds", "100",
                                           "--trials", "3",
                                           "--threads", "1", "--progress-every", "0"], peers=1024)
    p = subprocess.run(cmd, cwd=work, capture_output=True, timeout=180)
    err = p.stderr.decode("utf-8", "replace")  # bytes: text mode would turn \r into \n
    shares = [float(m.group(1)) for m in re.finditer(r"^\[\d+s\] +([0-9.]+)% .*ETA (?:\d+s|\?)$", err, re.M)]
    check(p.returncode == 0 and len(shares) >= 2 and "\r" not in err and "\x1b" not in err,
          f"progress: {len(shares)} plain lines with a percentage and an ETA")
    check(shares == sorted(shares) and shares[-1] == 100.0 and shares[0] < 100.0,
          f"progress: the percentage climbs to 100 ({shares})")
    q = run(cmd + ["--quiet"], work, timeout=180)
    check(q.stderr == "", "--quiet: no progress line")
    # On a terminal (script(1) gives the program one): one line rewritten in place.
    shell = " ".join(cmd) + " >/dev/null"
    t = subprocess.run(["script", "-qefc", shell, "/dev/null"], cwd=work, capture_output=True, timeout=180)
    screen = t.stdout.decode("utf-8", "replace")  # bytes: text mode would turn \r into \n
    updates = re.findall(r"\r\[\d+s\] +([0-9.]+)% [^\r\n]*ETA (?:\d+s|\?)\x1b\[K", screen)
    check(t.returncode == 0 and len(updates) >= 2 and updates[-1] == "100.0" and screen.count("\n") == 1,
          f"progress on a terminal: {len(updates)} in-place updates ending at {updates[-1:]}, one line")
    # The table on the same terminal: each trial's row starts on a line of its own,
    # the progress line wiped before it (\r, then erase to the end of the line).
    t = subprocess.run(["script", "-qefc", " ".join(cmd), "/dev/null"], cwd=work, capture_output=True, timeout=180)
    screen = t.stdout.decode("utf-8", "replace")
    rows = re.findall(r"(.{0,4})  +[0-2] +\d{15,20} ", screen)
    # (A progress line ends in "ETA ...s" + erase: a row after it would follow "s\x1b[K".)
    check(t.returncode == 0 and len(rows) == 3 and all(r.endswith(("\r\x1b[K", "\n")) for r in rows),
          f"table and progress on one terminal: {len(rows)} rows, each on a clean line ({[r[-3:] for r in rows]})")


def aggregate(work: str) -> None:
    """avbench aggregate's statistics against statistics.fmean/stdev on the traces."""
    table = os.path.join(work, "table.tsv")
    with open(table, "w") as fh:
        fh.write("name launcher peers program protocol fail-rate steps trials quiet\n"
                 "avg sequential 16 - gossip 0.1 - 5 true\nsgd sequential 8 sgd_bench gossip 0 30 4 true\n")
    out = os.path.join(work, "sweep")
    bins = os.path.dirname(AVERAGING)
    p = run([os.path.join(ROOT, "scripts/avbench"), "sweep", "run", "--bin-dir", bins, table, out], work)
    check(p.returncode == 0, f"avbench sweep run: exit {p.returncode} {p.stderr.strip()[-200:]}")
    p = run([os.path.join(ROOT, "scripts/avbench"), "aggregate", table, out], work)
    check(p.returncode == 0, f"avbench aggregate: exit {p.returncode} {p.stderr.strip()[-200:]}")
    df = pd.read_csv(os.path.join(out, "aggregate.csv"))
    bad = []
    for _, rec in df.iterrows():
        with h5py.File(os.path.join(out, rec["name"] + ".h5"), "r") as f:
            # one value per trial; `targets` (v9) is the run's list, not a statistic
            s = {k: [float(x) for x in f["summary"][k][()]] for k in f["summary"] if k != "targets"}
            peers = int(f.attrs["n_peers"])
        s["bytes_per_peer"] = [b / peers for b in s.pop("bytes_sent")]
        for k, v in s.items():
            if k in ("trial", "seed", "complete"):
                continue
            v = [x for x in v if math.isfinite(x)]
            if rec[f"{k}_n"] != len(v):
                bad.append(f"{rec['name']} {k}_n {rec[f'{k}_n']} != {len(v)}")
            if v and not math.isclose(rec[f"{k}_mean"], statistics.fmean(v), rel_tol=1e-12, abs_tol=1e-300):
                bad.append(f"{rec['name']} {k}_mean {rec[f'{k}_mean']} != {statistics.fmean(v)}")
            se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else math.nan
            if not (math.isclose(rec[f"{k}_se"], se, rel_tol=1e-9, abs_tol=1e-15) or
                    (math.isnan(se) and math.isnan(rec[f"{k}_se"]))):
                bad.append(f"{rec['name']} {k}_se {rec[f'{k}_se']} != {se}")
    check(not bad and len(df) == 2, "avbench aggregate: mean, standard error and n per metric" +
          ("; " + "; ".join(bad[:4]) if bad else ""))
    check("bytes_sent_mean" not in df and df["bytes_per_peer_mean"].notna().all(),
          "avbench aggregate: bytes per peer, not the total over peers")


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="avb-summary-") as work:
        for engine in ENGINES:
            summaries(work, engine)
        refusals(work)
        if MODE == "mpi":
            diverged_run(work)
            stopped_run(work)
            progress(work)
            aggregate(work)
    print(f"{len(FAILURES)} failure(s) in {time.monotonic() - started:.0f} s")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
