#!/usr/bin/env python3
"""Filters what SimGrid's smpirun writes on stderr, for scripts/smpirun.sh.

    smpi_filter.py PROGRAM N [RAW_LOG]   < smpirun's stderr   > the user's stderr

Passes every line through as it comes (SimGrid's warnings, the program's progress
and error lines), except what SimGrid repeats per rank or prints around a failure
that the program or this filter already reports in one line:

  - "SMPI process did not return 0. Return value : S", once per simulated rank:
    dropped. Unless the program printed an error line of its own ("PROGRAM:
    error...") or was stopped by a signal (status 129, 130, 143), one line sums
    them up ("smpirun.sh: error: PROGRAM exited with status S on K of N ranks").
  - "Oops! Deadlock detected" and the actor list that follows it (one line per
    blocked rank): dropped. Unless the program printed its own "PROGRAM: error:"
    line, one line says what was in flight, from the actor list.
  - "dlopen failed for PROGRAM: REASON" and SimGrid's backtrace after it: one line
    "smpirun.sh: error: cannot load PROGRAM: REASON".

Every line, dropped or not, is appended to RAW_LOG when one is given.

  - "MPI_Abort was called", once per aborting rank, the deadlock SimGrid then
    reports and "Process called exit when leaving": dropped; unless the program
    printed its own error line, one line "PROGRAM called MPI_Abort on rank R".

Exit status: 1 after an MPI_Abort (SimGrid 3.32 itself exits 0), else 3 if SimGrid
detected a deadlock, 126 if the program could not be loaded, 0 otherwise;
smpirun.sh exits with it when it is not 0.
"""
import os
import re
import signal
import sys

RANK_RETURN = re.compile(rb"SMPI process did not return 0\. Return value : (-?\d+)")
DEADLOCK = re.compile(rb"Oops! Deadlock detected")
DEADLOCK_HEADER = re.compile(rb"\[ker_engine/INFO\] (\d+ actors are still running|Legend of the following listing)")
# "Actor 3 (2@peer-2): waiting for communication activity 0x... () in state WAITING to finish"
# "Actor 1 (0@peer-0) simcall actor::ActivityWaitanySimcall"
ACTOR = re.compile(rb"\[ker_engine/INFO\] Actor \d+ \((.*)@[^@)]*\)(?:: waiting for (\w+) activity| simcall (\S+))")
# "[peer-1:1:(2) 0.000000] ... MPI_Abort was called, something went probably wrong ..."
ABORT = re.compile(rb"^\[[^:\]]*:(\d+):\(\d+\) [^\]]*\] .*MPI_Abort was called")
# Printed per rank that leaves by exit() (MPI_Abort, an exit in an error path).
EXIT_NOTE = re.compile(rb"\[ker_engine/WARNING\] Process called exit when leaving - Skipping cleanups")
DLOPEN = re.compile(rb"dlopen failed for .*?: (.*?)(?: \(errno: .*\))?$")
# SimGrid's backtrace after a fatal error, and the shell's word for the abort.
STOPPED = {129, 130, 143}
BACKTRACE = re.compile(rb"Backtrace \(displayed in actor |  -> +\d+# |$|Aborted( \(core dumped\))?$")

# What a blocked rank waits for, in words, from SimGrid's actor status.
WAITS = {"communication": "on one message (MPI_Send/MPI_Recv/MPI_Wait)",
         "actor::ActivityWaitSimcall": "on one message (MPI_Send/MPI_Recv/MPI_Wait)",
         "actor::ActivityWaitanySimcall": "on several requests (MPI_Waitany/MPI_Waitall/a collective)",
         "execution": "computing", "sleeping": "sleeping", "synchronization": "in a lock or barrier",
         "I/O": "in I/O"}


def ranks_text(names):
    """'ranks 0-3, 7' from actor names (the MPI rank), or the names as they are."""
    try:
        ranks = sorted(int(n) for n in names)
    except ValueError:
        return "actors " + ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
    spans, start = [], ranks[0]
    for prev, cur in zip(ranks, ranks[1:] + [None]):
        if cur != prev + 1:
            spans.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = cur
    shown = ", ".join(spans[:6]) + (", ..." if len(spans) > 6 else "")
    return ("rank " if len(ranks) == 1 else "ranks ") + shown


def deadlock_summary(blocked):
    """'16 ranks blocked; 12 on one message (...): ranks 0-11; 4 on several requests (...): ranks 12-15'"""
    kinds = {}
    for name, wait in blocked:
        kinds.setdefault(WAITS.get(wait, "in " + wait), []).append(name)
    parts = [f"{len(names)} {wait}: {ranks_text(names)}"
             for wait, names in sorted(kinds.items(), key=lambda kv: -len(kv[1]))]
    noun = "rank" if len(blocked) == 1 else "ranks"
    return "; ".join([f"{len(blocked)} {noun} blocked"] + parts) if blocked else "no blocked rank listed"


def write_or_drop(stream, data):
    """Writes and flushes data to stream; returns the stream, or None (write no more)
    once it is None or a write failed."""
    if stream is None:
        return None
    try:
        stream.write(data)
        stream.flush()
        return stream
    except OSError:
        return None


class Filter:
    """Sorts smpirun's stderr, line by line, into what the user sees and what is dropped."""

    def __init__(self, program, n, out, raw):
        self.program, self.n, self.out, self.raw = program, n, out, raw
        self.name = os.path.basename(program)
        # "PROGRAM: error: ..." and "PROGRAM: error on rank R: ..."
        self.own_error = (self.name + ": error").encode()
        self.returns, self.blocked = {}, []
        self.deadlock = self.program_error = False
        self.dlopen_reason = None
        self.aborted = []  # the ranks that called MPI_Abort

    def emit(self, data):
        # A closed stderr (a pager quit) must not stop the simulation, which still
        # has its trace to save: the filter then only drains its input.
        self.out = write_or_drop(self.out, data)

    def keep_raw(self, line):
        # A full disk must not stop the simulation's output either.
        self.raw = write_or_drop(self.raw, line)

    def feed(self, line):
        self.keep_raw(line)
        text = line.rstrip(b"\n")
        m = RANK_RETURN.search(text)
        if m:
            status = int(m.group(1))
            self.returns[status] = self.returns.get(status, 0) + 1
        elif ABORT.search(text):
            self.aborted.append(ABORT.search(text).group(1).decode())
        elif EXIT_NOTE.search(text):
            pass
        elif DEADLOCK.search(text):
            self.deadlock = True
        elif self.deadlock and DEADLOCK_HEADER.search(text):
            pass
        elif self.deadlock and ACTOR.search(text):
            m = ACTOR.search(text)
            self.blocked.append((m.group(1).decode(errors="replace"), (m.group(2) or m.group(3)).decode(errors="replace")))
        elif self.dlopen_reason is None and DLOPEN.search(text):
            reason = DLOPEN.search(text).group(1).decode(errors="replace")
            self.dlopen_reason = reason.removeprefix(self.program + ": ")
        elif self.dlopen_reason is not None and BACKTRACE.match(text):
            pass
        else:
            self.program_error = self.program_error or text.startswith(self.own_error)
            self.emit(line)

    def say(self, message):
        self.emit(f"smpirun.sh: error: {message}\n".encode())

    def finish(self):
        """Prints the one line the dropped lines stood for; returns the exit status."""
        if self.dlopen_reason is not None:
            self.say(f"cannot load {self.program}: {self.dlopen_reason} (an SMPI program is a shared object "
                     "built in build-smpi/, e.g. cmake --preset smpi && cmake --build build-smpi)")
            return 126
        # SimGrid 3.32 stops the other ranks after an MPI_Abort, reports that as a
        # deadlock, and exits 0: the abort is the error.
        if self.aborted:
            if not self.program_error:
                self.say(f"{self.name} called MPI_Abort on {ranks_text(self.aborted)}")
            return 1
        if self.deadlock:
            if not self.program_error:
                self.say(f"SimGrid detected a deadlock: {deadlock_summary(self.blocked)}")
            return 3
        # A stop asked for (SIGINT, SIGTERM, SIGHUP relayed by smpirun.sh) is no error.
        if self.returns and not self.program_error and not set(self.returns) <= STOPPED:
            statuses = " or ".join(str(s) for s in sorted(self.returns))
            self.say(f"{self.name} exited with status {statuses} on {sum(self.returns.values())} of {self.n} ranks")
        return 0


def main():
    # Ctrl-C and kill signals are for the simulation; smpirun.sh relays them. The
    # filter goes on until the simulation closes its stderr, so nothing is lost.
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    raw = open(sys.argv[3], "ab") if len(sys.argv) > 3 and sys.argv[3] else None
    f = Filter(sys.argv[1], sys.argv[2], sys.stdout.buffer, raw)
    for line in iter(sys.stdin.buffer.readline, b""):
        f.feed(line)
    return f.finish()


if __name__ == "__main__":
    sys.exit(main())
