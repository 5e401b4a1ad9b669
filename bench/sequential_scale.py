#!/usr/bin/python3
"""How the sequential engine grows with the peer count: wall time and peak memory
of averaging_bench --engine sequential, per run and per peer.

    sequential_scale.py --build DIR [--peers "1024 16384 ..."] [--smoke]
    sequential_scale.py --build DIR --every-protocol [--smoke]

The first form runs Moshpit on its default square grid, one trial, no early stop,
at dimension 1 (50 rounds) for every --peers value, then the two large cells of the
goals: 16,777,216 peers for 20 rounds and 16,384 peers at dimension 1000 for 10
rounds. The second runs every protocol with a sequential form (the catalog, read
from --help and each protocol's --dry-run), each with its own defaults, at dimension
1 for 20 rounds on 2^18 and 2^20 peers, printing how time and memory grew over the
4x (4 is linear), then on 16,777,216 peers (--smoke: 2^12 and 2^14, no large cell).

Wall time is what the program prints ("# wall time": the run, without process
start-up); memory is the process's peak resident set (wait4). Prints one line per run,
    SCALE protocol=P peers=N dim=D rounds=R seconds=S peak_mb=M ns_per_peer_round=T bytes_per_peer=B goal=...
a verdict per goal and, with --every-protocol, one line per protocol,
    GROWTH protocol=P peers=N..4N time_ratio=X memory_ratio=Y (4 is linear)
Exit 0 when every run ran (missed goals do not fail: timings on a shared machine
are not assertions), 1 when one did not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# (peers, dim, rounds) -> (seconds, peak MB) goals of the issue.
GOALS = {(1 << 20, 1, 50): (10.0, 1024.0), (1 << 24, 1, 20): (120.0, 8192.0), (16384, 1000, 10): (10.0, None)}
DEFAULT_PEERS = "1024 4096 16384 65536 262144 1048576"


def sequential_protocols(program: Path):
    """The catalog's protocols (--help's --protocol line) that have a sequential form."""
    text = subprocess.run([str(program), "--help"], capture_output=True, text=True, timeout=60, check=True).stdout
    listed = re.search(r"--protocol \{([^}]*)\}", text)
    if not listed:
        raise RuntimeError(f"no --protocol {{...}} line in {program} --help")
    found = []
    for protocol in listed.group(1).split(","):
        probe = subprocess.run([str(program), "--engine", "sequential", "--peers", "4", "--protocol", protocol,
                                "--dry-run"], capture_output=True, text=True, timeout=60)
        if "no sequential form" not in probe.stderr:
            found.append(protocol)
    return found


def run(program: Path, peers: int, dim: int, rounds: int, protocol: str = "moshpit"):
    """(printed wall seconds, peak resident MB) of one run; RuntimeError when it fails."""
    command = [str(program), "--engine", "sequential", "--peers", str(peers), "--protocol", protocol,
               "--dim", str(dim), "--rounds", str(rounds), "--trials", "1", "--quiet"]
    # wait4, not communicate(): the child's own peak memory comes with its exit.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        out, err = out.read(), err.read()
    if code != 0:
        last = (err.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"--protocol {protocol} --peers {peers} --dim {dim}: exit {code}: {last}")
    printed = re.search(r"^# wall time: ([0-9.e+-]+) s$", out, re.MULTILINE)
    if not printed:
        raise RuntimeError(f"--peers {peers}: no '# wall time' line")
    return float(printed.group(1)), usage.ru_maxrss / 1024.0


def report(protocol, peers, dim, rounds, seconds, peak_mb):
    goal = GOALS.get((peers, dim, rounds))
    verdict = ""
    if goal is not None:
        time_ok = seconds < goal[0]
        memory_ok = goal[1] is None or peak_mb < goal[1]
        limit = f"<{goal[0]:g}s" + (f",<{goal[1]:g}MB" if goal[1] is not None else "")
        verdict = f" goal={limit} {'pass' if time_ok and memory_ok else 'miss'}"
    per_round = seconds / (peers * max(rounds, 1)) * 1e9
    print(f"SCALE protocol={protocol} peers={peers} dim={dim} rounds={rounds} seconds={seconds:.4g} peak_mb={peak_mb:.1f} "
          f"ns_per_peer_round={per_round:.1f} bytes_per_peer={peak_mb * 2**20 / peers:.0f}{verdict}", flush=True)


def every_protocol(program: Path, smoke: bool) -> int:
    """Growth over 4x peers and the 2^24-peer cell, per protocol; 1 when a run failed."""
    small = 1 << (12 if smoke else 18)
    failed = 0
    for protocol in sequential_protocols(program):
        measured = {}
        for peers in [small, 4 * small] + ([] if smoke else [1 << 24]):
            try:
                measured[peers] = run(program, peers, 1, 20, protocol)
            except RuntimeError as e:
                print(f"sequential_scale.py: {e}", file=sys.stderr)
                failed = 1
                continue
            report(protocol, peers, 1, 20, *measured[peers])
        if small in measured and 4 * small in measured:
            (t1, m1), (t4, m4) = measured[small], measured[4 * small]
            print(f"GROWTH protocol={protocol} peers={small}..{4 * small} time_ratio={t4 / max(t1, 1e-9):.2f} "
                  f"memory_ratio={m4 / max(m1, 1e-9):.2f} (4 is linear)", flush=True)
    return failed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, type=Path, help="build directory holding apps/averaging_bench")
    p.add_argument("--peers", default=DEFAULT_PEERS, help=f"peer counts at dimension 1 [{DEFAULT_PEERS}]")
    p.add_argument("--smoke", action="store_true", help="small runs only (1024 and 4096 peers), no large cells")
    p.add_argument("--every-protocol", action="store_true",
                   help="every protocol with a sequential form: growth over 4x peers, then 2^24 peers")
    a = p.parse_args(argv)
    try:
        counts = [int(x) for x in a.peers.split()]
    except ValueError:
        p.error(f"argument --peers: '{a.peers}' is not a list of integers")
    program = a.build / "apps" / "averaging_bench"
    if not os.access(program, os.X_OK):
        print(f"sequential_scale.py: error: {program} is not an executable (build it first)", file=sys.stderr)
        return 1
    if a.every_protocol:
        return every_protocol(program, a.smoke)
    cells = [(n, 1, 50) for n in ([1024, 4096] if a.smoke else counts)]
    if not a.smoke:
        cells += [(1 << 24, 1, 20), (16384, 1000, 10)]
    failed = 0
    for peers, dim, rounds in cells:
        try:
            report("moshpit", peers, dim, rounds, *run(program, peers, dim, rounds))
        except RuntimeError as e:
            print(f"sequential_scale.py: {e}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
