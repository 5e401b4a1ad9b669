#!/usr/bin/python3
"""pip_install: python/avbench installs with pip into a virtual environment, offline,
and works from outside the checkout.

    test_pip_install.py SOURCE_DIR AVERAGING_BENCH

Copies python/ to a temporary folder (the build writes build/ and *.egg-info next
to pyproject.toml), makes a venv that sees Debian's h5py, numpy and pandas
(--system-site-packages), installs with `pip --no-build-isolation --no-index`, then,
from that folder, imports avbench, checks it is the installed copy with the
project's version, loads a trace AVERAGING_BENCH writes there, runs the same in
its own process (avbench.run through the build's avbench._engine) for the same
values, and checks the trace with the installed `avbench check` command.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = r"""
import importlib.metadata, sys
import avbench
assert "site-packages" in avbench.__file__, avbench.__file__
version = importlib.metadata.version("avbench")
assert version == sys.argv[1], (version, sys.argv[1])
df = avbench.load_trace("run.h5")
assert len(df) == 2 * 4, len(df)  # 2 trials: round 0 (the initial state) and 3 rounds
assert sorted(set(df["trial"])) == [0, 1], set(df["trial"])
assert list(df[df["trial"] == 0]["round"]) == [0, 1, 2, 3], list(df["round"])
assert set(df["protocol"]) == {"pairwise"}, set(df["protocol"])
steps = df.groupby("trial")["variance"].diff().dropna()
assert len(steps) == 6 and (steps <= 0).all(), list(steps)  # pairwise averaging never adds variance
print("pip_install: avbench", version, "from", avbench.__file__, "read", len(df), "rows")
# The same run in this process, through the build's avbench._engine (AVB_BIN_DIR names its programs).
ds = avbench.run(protocol="pairwise", peers=8, rounds=3, trials=2, progress=False)
assert sys.modules["avbench._engine"].__file__.startswith(sys.argv[2]), sys.modules["avbench._engine"].__file__
typed = avbench.load_trace("run.h5", as_xarray=True)
assert (ds["variance"].values == typed["variance"].values).all(), (ds["variance"].values, typed["variance"].values)
print("pip_install: avbench.run in this process gives the typed run's variances")
"""


def run(cmd, extra=None, **kw):
    # Not the checkout's package: the installed one must be what imports.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | (extra or {})
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, cmd))} exited {done.returncode}\n{done.stdout}{done.stderr}")
    return done.stdout


def main() -> None:
    source, bench = Path(sys.argv[1]), sys.argv[2]
    version = re.search(r"project\(avbench VERSION (\S+)", (source / "CMakeLists.txt").read_text()).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copytree(source / "python", tmp / "python",
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", tmp / "venv"])
        run([tmp / "venv/bin/pip", "install", "--no-build-isolation", "--no-index", "--quiet", tmp / "python"])
        run([bench, "--engine", "sequential", "--peers", "8", "--protocol", "pairwise", "--rounds", "3",
             "--trials", "2", "--quiet", "--out", tmp / "run.h5"])
        build = Path(bench).resolve().parent.parent
        print(run([tmp / "venv/bin/python", "-c", CHECK, version, str(build / "python")], cwd=tmp,
                  extra={"AVB_BIN_DIR": str(Path(bench).resolve().parent)}), end="")
        # The console entry point: the installed `avbench` command, run from elsewhere.
        checked = run([tmp / "venv/bin/avbench", "check", tmp / "run.h5", "--peers", "8", "--trials", "2"], cwd=tmp)
        if "valid avbench averaging trace" not in checked:
            sys.exit(f"FAIL: the installed avbench check printed {checked!r}")
        print("pip_install: the installed command:", checked.strip())


if __name__ == "__main__":
    main()
