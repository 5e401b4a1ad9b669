#!/usr/bin/env python3
"""The test suite's budget: each test's time and share, from ctest's own records.

    scripts/test_budget.py [BUILD_DIR...] [--log FILE] [--top N] [--csv] [--write-costs FILE]

For each folder (default: build-suite, which scripts/test.sh writes to run build/'s
and build-smpi/'s tests in one ctest, and build-asan; or build, build-smpi and
build-asan when build-suite has no run; of those, the ones with a run), reads the last ctest run's
Testing/Temporary/LastTest.log (or the tests so far of a run going on) and each
test's TIMEOUT and tree (from the
CTestTestfile.cmake files ctest reads), and prints one line per test, slowest
first: its build tree, its seconds, its share of all the tests' seconds, its
timeout and how close it came (time / timeout; "NEAR" from one half up: docs/testing.md asks for at least
2x headroom on a quiet machine). Given scripts/test.sh's output (--log), it also
prints the stages' seconds and their share of the whole run (builds included).
With --write-costs, it writes FILE (tests/test_costs.tsv) instead: each test's
build kind, name and whole seconds, from which CMake sets the tests' COST, so that
ctest -j2 starts the costliest first (cmake/test_costs.cmake).
Exit 0, or 2 on bad input (a folder without a ctest run, an unreadable log).
"""
import argparse
import pathlib
import re
import sys

SUITE_DIRS = ["build-suite", "build-asan"]
TREE_DIRS = ["build", "build-smpi", "build-asan"]
NEAR = 0.5  # time / timeout from which a test is within 2x of its timeout


def records(build):
    """The logs of the build's ctest runs, newest first: the run going on (ctest
    writes LastTest.log.tmp while it runs and renames it at the end), then the last
    one that ended."""
    folder = build / "Testing" / "Temporary"
    done, live = folder / "LastTest.log", folder / "LastTest.log.tmp"
    found = [log for log in (live, done) if log.is_file()]
    return sorted(found, key=lambda log: -log.stat().st_mtime)


def last_record(build):
    """The newest of records(build), or None."""
    found = records(build)
    return found[0] if found else None


def parse_record(log):
    """{name: (seconds, status)} of the tests LOG records as finished."""
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


def test_times(build):
    """{name: (seconds, status)} of the last ctest run in `build` that has finished
    a test: the run going on, or the one before it while the new one has finished none."""
    found = records(build)
    if not found:
        raise OSError(f"{build}: no ctest run recorded (no Testing/Temporary/LastTest.log)")
    for log in found:
        times = parse_record(log)
        if times:
            return times
    return {}


def test_properties(build):
    """{name: (timeout seconds, build tree)}, read from the CTestTestfile.cmake files
    that ctest reads (not from ctest --show-only, which starts a new LastTest.log:
    the record of a run that may still be going on)."""
    found = {}
    for tree in build_trees(build):
        pending = [tree / "CTestTestfile.cmake"]
        while pending:
            path = pending.pop()
            if not path.is_file():
                continue
            text = path.read_text(errors="replace")
            for args in re.findall(r"^subdirs\(([^)]*)\)", text, re.M):
                pending += [(path.parent / d) / "CTestTestfile.cmake" for d in re.findall(r'"([^"]+)"', args)]
            for name, props in re.findall(r"^set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES (.*)\)$", text, re.M):
                timeout = re.search(r'\bTIMEOUT "([0-9.]+)"', props)
                found[name] = (float(timeout.group(1)) if timeout else 1500.0, tree)
    return found


def build_trees(build):
    """The build trees whose tests `build` runs: itself, or those its CTestTestfile.cmake
    includes (build-suite/ includes build/ and build-smpi/)."""
    if (build / "CMakeCache.txt").is_file():
        return [build.resolve()]
    text = (build / "CTestTestfile.cmake").read_text(errors="replace")
    return [(build / d).resolve() for args in re.findall(r"^subdirs\(([^)]*)\)", text, re.M)
            for d in re.findall(r'"([^"]+)"', args)]


def default_builds(repo):
    """The folders read when none is named: build-suite and build-asan when
    build-suite has a run, else build, build-smpi and build-asan; of those, the
    ones with a run recorded (or going on), since a single ctest (one tree's, or
    the suite's while build-asan waits for its turn) leaves the others without."""
    dirs = SUITE_DIRS if last_record(repo / "build-suite") is not None else TREE_DIRS
    return [repo / d for d in dirs if last_record(repo / d) is not None]


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
        times, props = test_times(b), test_properties(b)
        rows += [(build_kind(props[name][1] if name in props else b), name, round(seconds))
                 for name, (seconds, _) in times.items()]
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
    builds = [pathlib.Path(b) for b in args.builds] or default_builds(repo)
    if not builds:
        print(f"test_budget.py: no ctest run recorded in any of {', '.join(dict.fromkeys(SUITE_DIRS + TREE_DIRS))} "
              f"(run scripts/test.sh, or ctest in one of them, first)", file=sys.stderr)
        return 2
    rows = []
    try:
        if args.write_costs:
            write_costs(args.write_costs, builds)
            return 0
        for build in builds:
            times, props = test_times(build), test_properties(build)
            for name, (seconds, status) in times.items():
                timeout, tree = props.get(name, (1500.0, build))
                rows.append((name, tree.name, seconds, timeout, status))
        stages = stage_times(args.log) if args.log else []
    except OSError as e:
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
        wide = max(len("stage of scripts/test.sh"), *(len(stage) for stage, _ in stages))
        print(f"\n{'stage of scripts/test.sh':<{wide}} {'seconds':>8} {'share':>6}")
        for stage, seconds in stages:
            print(f"{stage:<{wide}} {seconds:8d} {seconds / whole:6.1%}")
        print(f"{'all stages':<{wide}} {whole:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
