#!/usr/bin/python3
"""quickstart_notebook: docs/quickstart.ipynb, executed headless as a user would run it
(64 peers and 5 trials instead of 1,024 and 20, traces in a scratch folder).

    test_quickstart.py AVERAGING_BENCH

Checks that every cell ran without an error, that the four runs wrote their traces,
that the paired table names the three protocols paired with all-reduce, each with
its interval and a significance verdict, that the figure was drawn, and that the
tracked notebook holds no outputs.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from tally import Tally  # beside this file (tests/scripts, on PYTHONPATH)

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "quickstart.ipynb"
T = Tally("quickstart_notebook")
check = T.check


def main():
    bench = sys.argv[1]
    tracked = nbformat.read(NOTEBOOK, as_version=4)
    check(all(not c.get("outputs") and c.get("execution_count") is None for c in tracked.cells if c.cell_type == "code"),
          "the tracked notebook holds no outputs")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QUICKSTART_PEERS="64", QUICKSTART_TRIALS="5", QUICKSTART_OUT=tmp,
                   AVB_BIN_DIR=str(Path(bench).parent), PYDEVD_DISABLE_FILE_VALIDATION="1")
        done = subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", str(NOTEBOOK),
                               "--ExecutePreprocessor.timeout=200", "--output-dir", tmp, "--output", "executed.ipynb"],
                              env=env, cwd=tmp, capture_output=True, text=True, timeout=280)
        check(done.returncode == 0, f"nbconvert --execute: exit {done.returncode} {done.stderr.strip()[-300:]}")
        if done.returncode != 0:
            return 1
        nb = nbformat.read(Path(tmp) / "executed.ipynb", as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        check(not [o for o in outputs if o.output_type == "error"], "every cell ran without an error")
        traces = sorted(p.name for p in Path(tmp).glob("*.h5"))
        check(traces == ["allreduce.h5", "gossip.h5", "moshpit.h5", "pairwise.h5"], f"the four traces: {traces}")
        texts = [o.get("data", {}).get("text/plain", "") for o in outputs if o.output_type == "execute_result"]
        paired = next((t for t in texts if "mean_difference" in t), "")
        check(all(p in paired for p in ("moshpit", "gossip (exp)", "pairwise", "ci_low", "significant")),
              "the paired table: moshpit, gossip (exp) and pairwise against all-reduce, intervals, verdicts")
        check(any("image/png" in o.get("data", {}) for o in outputs), "the figure is drawn")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
