#!/usr/bin/env python3
"""scripts/smpi_filter.py on SimGrid output written out by hand (the lines SimGrid
3.32 prints), for the cases the SMPI runs of test_smpi_output.sh do not reach:
ranks blocked in different calls and in scattered ranks, SimGrid warnings that
must pass through unchanged, a stop by signal, a closed stderr.

    tests/scripts/test_smpi_filter.py
"""
import os
import subprocess
import sys
import tempfile

FILTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "smpi_filter.py")
OOPS = ("[0.5] ./src/kernel/EngineImpl.cpp:718: [ker_engine/CRITICAL] Oops! Deadlock detected, some activities "
        "are still around but will never complete. This usually happens when the user code is not perfectly clean.")
HEADER = ['[0.5] [ker_engine/INFO] 6 actors are still running, waiting for something.',
          '[0.5] [ker_engine/INFO] Legend of the following listing: "Actor <pid> (<name>@<host>): <status>"']
WARNING = "[peer-0:0:(1) 0.000000] ./src/smpi/x.cpp:1: [smpi/WARNING] something SimGrid wants said"


def actor(rank, status):
    return f"[0.5] [ker_engine/INFO] Actor {rank + 1} ({rank}@peer-{rank}){status}"


def returned(rank, status):
    return (f"[peer-{rank}:{rank}:({rank + 1}) 0.5] ./src/smpi/internals/smpi_global.cpp:308: "
            f"[smpi_kernel/WARNING] SMPI process did not return 0. Return value : {status}")


def run(lines, n=8, raw=None):
    args = [sys.executable, FILTER, "/build-smpi/apps/prog", str(n)] + ([raw] if raw else [])
    p = subprocess.run(args, input="".join(line + "\n" for line in lines).encode(), stdout=subprocess.PIPE,
                       timeout=60)
    return p.returncode, p.stdout.decode().splitlines()


def run_unread(lines):
    """The filter's exit status when nobody reads its output (a pager quit)."""
    p = subprocess.Popen([sys.executable, FILTER, "prog", "8"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdout.close()
    p.stdin.write("".join(line + "\n" for line in lines).encode())
    p.stdin.close()
    return p.wait(timeout=60)


def main():
    problems = []

    def check(name, got, want):
        if got != want:
            problems.append(f"{name}: got {got!r}, want {want!r}")
        else:
            print(f"test_smpi_filter: ok: {name}")

    comm = ": waiting for communication activity 0x1 () in state WAITING to finish"
    waitany = " simcall actor::ActivityWaitanySimcall"
    deadlock = [WARNING, OOPS] + HEADER + [actor(r, comm) for r in (0, 1, 2, 5)] + \
               [actor(r, waitany) for r in (3, 4)]
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "raw.log")
        check("deadlock: one line, ranks grouped by call and compacted", run(deadlock, raw=raw),
              (3, [WARNING, "smpirun.sh: error: SimGrid detected a deadlock: 6 ranks blocked; "
                            "4 on one message (MPI_Send/MPI_Recv/MPI_Wait): ranks 0-2, 5; "
                            "2 on several requests (MPI_Waitany/MPI_Waitall/a collective): ranks 3-4"]))
        check("raw log: every line", open(raw).read().splitlines(), deadlock)
    own = "prog: error: deadlock: rank 0 waits for rank 1"
    check("deadlock reported by the program: its line alone", run([OOPS] + HEADER + [actor(0, comm), own]),
          (3, [own]))
    bad = "prog: error: --dim: 'x' is not an integer"
    check("bad input: the program's line alone", run([bad] + [returned(r, 2) for r in range(8)]), (0, [bad]))
    check("stopped by SIGTERM: no line of the filter's", run([returned(r, 143) for r in range(8)]), (0, []))
    check("silent failure on some ranks", run([returned(1, 1), returned(2, 4)]),
          (0, ["smpirun.sh: error: prog exited with status 1 or 4 on 2 of 8 ranks"]))
    check("closed stderr: drains its input and still says deadlock", run_unread(deadlock * 2000), 3)
    if problems:
        sys.exit("test_smpi_filter: FAIL: " + "\ntest_smpi_filter: FAIL: ".join(problems))
    print("test_smpi_filter: all checks passed")


if __name__ == "__main__":
    main()
