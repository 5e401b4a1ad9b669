#!/usr/bin/env python3
"""The test suite's budget: each test's time and share, from ctest's own records.

    scripts/test_budget.py [BUILD_DIR...] [--log FILE] [--top N] [--csv] [--write-costs FILE]

For each build folder (default: build, build-smpi, build-asan and build-fuzz, those
that exist), reads the last ctest run's Testing/Temporary/LastTest.log and each
test's TIMEOUT (ctest --show-only=json-v1), and prints one line per test, slowest
first: its seconds, its share of all the tests' seconds, its timeout and how close
it came (time / timeout; "NEAR" from one half up: docs/testing.md asks for at least
2x headroom on a quiet machine). Given scripts/test.sh's output (--log), it also
prints the stages' seconds and their share of the whole run (builds included).
With --write-costs, it writes FILE (tests/test_costs.tsv) instead: each test's
build kind, name and whole seconds, from which CMake sets the tests' COST, so that
ctest -j2 starts the costliest first (cmake/test_costs.cmake).
Exit 0, or 2 on bad input (a folder without a ctest run, an unreadable log).
"""
import argparse
import contextlib
import fcntl
import json
import pathlib
import re
import subprocess
import sys

DEFAULT_DIRS = ["build", "build-smpi", "build-asan"]
NEAR = 0.5  # time / timeout from which a test is within 2x of its timeout


def test_times(build):
    """{name: (seconds, status)} of the last ctest run in `build`."""
    log = build / "Testing" / "Temporary" / "LastTest.log"
    if not log.is_file():
        raise OSError(f"{build}: no ctest run recorded ({log} is missing)")
    times, name = {}, None
    for line in log.read_text(errors="replace").splitlines():
        m = re.match(r"^\d+/\d+ Test: (\S+)$", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"^Test time =\s*([0-9.]+) sec", line)
        if m and name is not None:
            times[name] = [float(m.group(1)), "?"]
            continue
        if name in times and line.startswith("Test ") and line.rstrip().endswith("."):
            times[name][1] = "passed" if line.startswith("Test Passed") else "FAILED"
            name = None
    return {k: tuple(v) for k, v in times.items()}


@contextlib.contextmanager
def records_held(build):
    """Holds the build's ctest records against another test_budget.py (an flock)."""
    folder = build / "Testing" / "Temporary"
    if not folder.is_dir():
        raise OSError(f"{build}: no ctest run recorded ({folder} is missing)")
    with open(folder / "test_budget.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def test_timeouts(build):
    """{name: timeout seconds} from ctest's description of the tests."""
    # ctest --show-only starts a new, empty LastTest.log: the record read above is
    # put back, so that the times stay readable (by the next call too). Two calls
    # at once would each put back what they read, the second an empty log: the
    # caller holds records_held(build) around both reads.
    log = build / "Testing" / "Temporary" / "LastTest.log"
    record = log.read_bytes()
    try:
        out = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"], capture_output=True,
                             text=True, timeout=120, check=True).stdout
    finally:
        log.write_bytes(record)
    timeouts = {}
    for test in json.loads(out).get("tests", []):
        for prop in test.get("properties", []):
            if prop.get("name") == "TIMEOUT":
                timeouts[test["name"]] = float(prop["value"])
    return timeouts


def build_kind(build):
    """The kind of build (cmake/test_costs.cmake): asan, smpi or default."""
    cache = (build / "CMakeCache.txt").read_text(errors="replace")
    for kind, option in (("asan", "AVB_SANITIZE"), ("smpi", "AVB_SMPI")):
        if re.search(rf"^{option}:BOOL=(ON|1|TRUE|YES)$", cache, re.M | re.I):
            return kind
    return "default"


def write_costs(path, builds):
    """Writes the tests' costs (--write-costs)."""
    rows = []
    for b in builds:
        with records_held(b):
            rows += [(build_kind(b), name, round(seconds)) for name, (seconds, _) in test_times(b).items()]
    rows.sort()
    with open(path, "w") as f:
        f.write("# build kind, test, seconds of a measured run: the order in which ctest -j2 starts tests\n"
                "# (cmake/test_costs.cmake). Written by scripts/test_budget.py --write-costs FILE BUILD_DIR...\n")
        for kind, name, seconds in rows:
            f.write(f"{kind}\t{name}\t{seconds}\n")


def stage_times(log):
    """[(stage, seconds)] from scripts/test.sh's '== test.sh: STAGE: ok (N s)' lines."""
    stages = []
    for line in pathlib.Path(log).read_text(errors="replace").splitlines():
        m = re.match(r"^== test\.sh: (.+): ok \((\d+) s\)$", line)
        if m:
            stages.append((m.group(1), int(m.group(2))))
    return stages


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="*", help="build folders (default: those of scripts/test.sh that exist)")
    parser.add_argument("--log", help="scripts/test.sh's output, for the stages' times")
    parser.add_argument("--top", type=int, default=0, help="print only the N slowest tests (default: all)")
    parser.add_argument("--csv", action="store_true", help="comma-separated, with a header")
    parser.add_argument("--write-costs", metavar="FILE", help="write the tests' costs to FILE (tests/test_costs.tsv)")
    args = parser.parse_args()
    repo = pathlib.Path(__file__).resolve().parent.parent
    builds = [pathlib.Path(b) for b in args.builds] or [repo / d for d in DEFAULT_DIRS if (repo / d).is_dir()]
    rows = []
    try:
        if args.write_costs:
            write_costs(args.write_costs, builds)
            return 0
        for build in builds:
            with records_held(build):
                times, timeouts = test_times(build), test_timeouts(build)
            for name, (seconds, status) in times.items():
                rows.append((name, build.name, seconds, timeouts.get(name, 1500.0), status))
        stages = stage_times(args.log) if args.log else []
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        print(f"test_budget.py: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("test_budget.py: no test times found", file=sys.stderr)
        return 2
    total = sum(r[2] for r in rows)
    rows.sort(key=lambda r: -r[2])
    shown = rows[:args.top] if args.top else rows
    if args.csv:
        print("test,build,seconds,share,timeout,of_timeout,status")
        for name, build, seconds, timeout, status in shown:
            print(f"{name},{build},{seconds:.1f},{seconds / total:.4f},{timeout:.0f},{seconds / timeout:.3f},{status}")
        return 0
    width = max(len(r[0]) for r in shown)
    print(f"{'test':<{width}}  {'build':<11} {'seconds':>8} {'share':>6} {'timeout':>8} {'of it':>6}")
    for name, build, seconds, timeout, status in shown:
        flag = "  NEAR" if seconds / timeout >= NEAR else ""
        flag += "  FAILED" if status == "FAILED" else ""
        print(f"{name:<{width}}  {build:<11} {seconds:8.1f} {seconds / total:6.1%} {timeout:8.0f} "
              f"{seconds / timeout:6.0%}{flag}")
    print(f"{len(rows)} tests, {total:.0f} s of test time in {', '.join(b.name for b in builds)} "
          f"(ctest -j2 runs two at a time); {sum(1 for r in rows if r[2] / r[3] >= NEAR)} within 2x of their timeout")
    if stages:
        whole = sum(s for _, s in stages)
        print(f"\n{'stage of scripts/test.sh':<48} {'seconds':>8} {'share':>6}")
        for stage, seconds in stages:
            print(f"{stage:<48} {seconds:8d} {seconds / whole:6.1%}")
        print(f"{'all stages':<48} {whole:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
