#!/usr/bin/python3
"""python_engine: avbench.run in this process (the module avbench._engine).

    test_python_engine.py AVERAGING_BENCH

- sgd_bench in-process returns the typed command's Dataset, every variable equal to
  the bit (averaging_bench: python_api);
- print_table prints the table, a row per trial;
- a warning becomes one RunWarning, an error one RunError with the program's line,
  and nothing of either is printed;
- progress reaches the callback in shares that never go back and end at 1;
- the GIL is released while the engine runs: a Python thread keeps counting;
- SIGINT (Jupyter's interrupt) stops the run within a second, raises
  KeyboardInterrupt and leaves a valid trace marked complete = 0; the next run in
  the same process gives the values of a fresh one (the stop flag is cleared).
"""
import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import h5py

import avbench
from avbench.api import engine_module
from bitwise import same
from tally import Tally

T = Tally("python_engine")
check = T.check


def same_values(a, b):
    return a.sizes == b.sizes and all(same(a[v].values, b[v].values) for v in b.data_vars)


def typed_sgd(bench: Path, tmp: Path):
    sgd = bench.parent / "sgd_bench"
    args = ["--protocol", "gossip", "--objective", "logistic", "--steps", "40", "--trials", "3", "--fail-rate", "0.05"]
    ds = avbench.run("sgd_bench", peers=16, **{a[2:].replace("-", "_"): v for a, v in zip(args[::2], args[1::2])})
    subprocess.run([str(sgd), "--engine", "sequential", "--peers", "16", *args, "--quiet", "--out",
                    str(tmp / "sgd.h5")], check=True, capture_output=True)
    typed = avbench.load_trace(str(tmp / "sgd.h5"), as_xarray=True)
    check(same_values(ds, typed), f"sgd_bench in-process is the typed command's Dataset {dict(ds.sizes)}")


def reports(tmp: Path):
    saved = os.dup(2)
    with open(tmp / "stderr", "w") as err, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        os.dup2(err.fileno(), 2)  # what the engine would print on the process's stderr
        try:
            avbench.run(protocol="pairwise", peers=32, fail_rate=0.01, rounds=5, topology="exp", progress=False)
            avbench.run(protocol="moshpit", peers=32, fail_rate=0.01, rounds=5, progress=False)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    printed = (tmp / "stderr").read_text()
    check(printed == "", f"nothing printed on stderr: {printed!r}")
    lines = [str(w.message) for w in seen if issubclass(w.category, avbench.RunWarning)]
    check(len(lines) == 1 and "--detection-timeout: 0 s" in lines[0], f"one RunWarning, moshpit's: {lines}")
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        avbench.run(protocol="moshpit", peers=16, trials=3, rounds=3, progress=False, print_table=True)
    rows = [line for line in table.getvalue().splitlines() if line.strip() and not line.startswith("#")]
    check(len(rows) == 3, f"print_table=True (without progress) prints one row per trial: {len(rows)}")
    try:
        avbench.run(protocol="gossip", peers=8, fail_rate=2, progress=False)
        check(False, "--fail-rate 2 raises RunError")
    except avbench.RunError as e:
        check(str(e).startswith("averaging_bench: error: --fail-rate") and "\n" not in str(e), f"RunError: {e}")


def progress_and_gil():
    module = engine_module()
    shares, count, stop = [], [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1
    spinner = threading.Thread(target=spin)
    spinner.start()
    code, lines, table = module.run("averaging_bench", ["--engine", "sequential", "--peers", "4096", "--protocol",
                                                        "gossip", "--topology", "ring", "--rounds", "12000",
                                                        "--trials", "1"],
                                    lambda done, detail: shares.append(done))
    stop.set()
    spinner.join()
    check(code == 0 and "mean" in table, f"the run ended with 0 and its table ({code}, {len(table)} chars)")
    check(len(shares) >= 2 and shares == sorted(shares) and shares[-1] == 1.0,
          f"progress: {len(shares)} shares, never back, ending at 1 ({shares[:3]} ... {shares[-1:]})")
    check(count[0] > 1000, f"a Python thread ran while the engine did ({count[0]} spins)")


def interrupt(tmp: Path):
    fresh = avbench.run(protocol="gossip", peers=64, topology="exp", rounds=20, trials=2, progress=False)
    trace = tmp / "cut.h5"
    sent = []
    timer = threading.Timer(1.0, lambda: (sent.append(time.monotonic()), os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    try:
        avbench.run(protocol="gossip", peers=4096, rounds=1000000, trials=1, out=trace, progress=False)
        check(False, "SIGINT raises KeyboardInterrupt")
    except KeyboardInterrupt:
        waited = time.monotonic() - sent[0]
        check(waited < 1.0, f"KeyboardInterrupt {waited:.2f} s after SIGINT")
    with h5py.File(trace, "r") as f:
        check(int(f.attrs["complete"]) == 0 and "trials" in f, "the cut run's trace is closed, complete = 0")
    again = avbench.run(protocol="gossip", peers=64, topology="exp", rounds=20, trials=2, progress=False)
    check(same_values(again, fresh), "the run after the interrupt gives a fresh run's values")


def main():
    bench = Path(sys.argv[1])
    os.environ["AVB_BIN_DIR"] = str(bench.parent)
    warnings.simplefilter("ignore", avbench.RunWarning)  # reports() records them
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        typed_sgd(bench, tmp)
        reports(tmp)
        progress_and_gil()
        interrupt(tmp)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
