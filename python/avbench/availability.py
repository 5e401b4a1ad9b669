#!/usr/bin/env python3
"""Writes availability traces for `--availability FILE` (docs/failures.md).

    scripts/avbench availability churn OUT --peers N --rounds R --fail-rate P [--join-rate Q] [--seed S] [--trial K]
    scripts/avbench availability diurnal OUT --peers N --rounds R --round-seconds T [--seed S]
                            [--online-hours H] [--online-sigma G] [--day-seconds D]
    scripts/avbench availability seconds IN OUT --round-seconds T

A trace is CSV, one down spell a line, in rounds: `peer,down,up` means the peer is
down in rounds down..up-1 and a new peer takes its slot in round up (empty: never).
OUT (or IN) may be - for standard output (input).

  churn    the schedule of `--failure churn --fail-rate P --join-rate Q --seed S`
           in trial K (default 0), drawn from the project's keyed stream exactly as
           the programs draw it: a run on this trace and the keyed run agree bit
           for bit (tests/scripts/test_availability.sh checks it).
  diurnal  a day-night pattern in the manner of FedScale's client traces: each peer
           is online for one window a day (devices idle and charging), starting at
           its own time of day, uniform over the day, and lasting a lognormal
           number of hours (median --online-hours, default 8, log-sd
           --online-sigma, default 0.5, at most a day), drawn from the keyed stream
           with --seed. Rounds last --round-seconds: a peer is down in round t when
           it is offline at the round's start, (t - 1) * T seconds.
  seconds  turns a trace measured in seconds (`peer,down,up` with down and up in
           seconds, up empty for never) into rounds by the same rule.
"""
import argparse
import math
import sys

from avbench import keyed_stream

HEADER = "peer,down,up"
MAX_ROUND = 2**31 - 1          # rounds are C++ ints
NEVER = 2**63 - 1              # FailureModel's "never"


def fail(message):
    print(f"avbench availability: error: {message}", file=sys.stderr)
    sys.exit(2)


def geometric(u, p):
    """sim/failures.cpp's geometric(): a count >= 1 with success probability p."""
    if p <= 0.0:
        return NEVER
    if p >= 1.0:
        return 1
    k = math.floor(math.log(u) / math.log1p(-p))
    return NEVER if k >= 9.0e18 else 1 + int(k)


def add_rounds(a, b):
    return NEVER if a == NEVER or b == NEVER or a > NEVER - b else a + b


def churn_spells(a):
    """Per peer, FailureModel::switches of a keyed churn trial, up to round --rounds."""
    seed = keyed_stream.trial_seed(a.seed, a.trial)
    for peer in range(a.peers):
        start, k = 0, 0
        while True:
            fails = add_rounds(start, geometric(keyed_stream.uniform_open0(seed, keyed_stream.CHURN, k, peer, 0),
                                                a.fail_rate))
            if fails > a.rounds:
                break
            joins = add_rounds(fails, geometric(keyed_stream.uniform_open0(seed, keyed_stream.CHURN, k, peer, 1),
                                                a.join_rate))
            yield peer, fails, joins
            if joins > a.rounds:
                break
            start, k = joins, k + 1


def to_rounds(peer, spells, round_seconds, rounds):
    """Down spells in seconds [a, b) (b may be inf) to spells in rounds: down in
    round t >= 1 when offline at (t - 1) * round_seconds. Spells that miss every
    round start vanish; spells one online stretch apart with no round start in it
    merge (a joiner is up for at least its round)."""
    out = []
    for a, b in sorted(spells):
        down = max(1, math.ceil(a / round_seconds) + 1)
        up = NEVER if math.isinf(b) else math.ceil(b / round_seconds) + 1
        if up <= down or down > rounds:
            continue
        if out and down <= out[-1][2]:
            out[-1] = (peer, out[-1][1], max(out[-1][2], up))
        else:
            out.append((peer, down, up))
    return out


def diurnal_spells(a):
    day, horizon = a.day_seconds, a.rounds * a.round_seconds
    for peer in range(a.peers):
        phase = day * keyed_stream.uniform(a.seed, keyed_stream.AVAILABILITY, 0, peer, 0)
        online = min(day, a.online_hours * 3600.0 * math.exp(
            a.online_sigma * keyed_stream.normal(a.seed, keyed_stream.AVAILABILITY, 0, peer, 1)))
        if online >= day:
            continue
        # Online in [phase + k day, phase + k day + online); offline in between.
        offline, k = [], -1
        while phase + k * day + online <= horizon:
            offline.append((phase + k * day + online, phase + (k + 1) * day))
            k += 1
        yield from to_rounds(peer, offline, a.round_seconds, a.rounds)


def read_seconds(path, round_seconds, rounds):
    by_peer = {}
    source = sys.stdin if path == "-" else open(path, encoding="utf-8")
    with source:
        lines = [line.rstrip("\r\n") for line in source]
    body = [(n, t) for n, t in enumerate(lines, 1) if t and not t.startswith("#")]
    if not body or body[0][1] != HEADER:
        fail(f"{path}: the first line must be the header '{HEADER}'")
    for n, text in body[1:]:
        fields = text.split(",")
        try:
            if len(fields) != 3:
                raise ValueError
            peer, a = int(fields[0]), float(fields[1])
            b = math.inf if fields[2] == "" else float(fields[2])
        except ValueError:
            fail(f"{path}:{n}: expected peer,down,up (an integer, seconds, seconds or empty)")
        if peer < 0 or not (0 <= a < b) or math.isnan(b):
            fail(f"{path}:{n}: needs peer >= 0 and 0 <= down < up (seconds)")
        by_peer.setdefault(peer, []).append((a, b))
    for peer in sorted(by_peer):
        spells = sorted(by_peer[peer])
        for (a0, b0), (a1, _) in zip(spells, spells[1:]):
            if a1 < b0:
                fail(f"{path}: peer {peer}'s spells [{a0}, {b0}) and [{a1}, ...) overlap")
        yield from to_rounds(peer, spells, round_seconds, rounds)


def write(out, spells, command):
    target = sys.stdout if out == "-" else open(out, "w", encoding="utf-8")
    with target:
        target.write(f"# {command}\n{HEADER}\n")
        for peer, down, up in spells:
            target.write(f"{peer},{down},{'' if up > MAX_ROUND else up}\n")


class Parser(argparse.ArgumentParser):
    """Bad input is one line and exit 2, without the usage block."""

    def error(self, message):
        fail(message)


def positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number")
        if not value > 0 or (kind is float and math.isinf(value)):
            raise argparse.ArgumentTypeError(f"'{text}' is not a finite number > 0")
        return value
    return parse


def probability(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number in [0, 1]")
    return value


def main(argv: list[str]) -> int:
    parser = Parser(prog="avbench availability", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True, parser_class=Parser)
    churn = sub.add_parser("churn", help="the keyed churn schedule of one trial")
    diurnal = sub.add_parser("diurnal", help="a day-night pattern, one online window a day per peer")
    seconds = sub.add_parser("seconds", help="a trace in seconds to rounds")
    seconds.add_argument("input")
    for p in (churn, diurnal, seconds):
        p.add_argument("out")
    for p in (churn, diurnal):
        p.add_argument("--peers", type=positive(int), required=True)
        p.add_argument("--seed", type=int, default=0)
    for p in (churn, diurnal, seconds):
        p.add_argument("--rounds", type=positive(int), required=p is not seconds, default=MAX_ROUND)
    churn.add_argument("--fail-rate", type=probability, required=True)
    churn.add_argument("--join-rate", type=probability, default=0.0)
    churn.add_argument("--trial", type=int, default=0)
    for p in (diurnal, seconds):
        p.add_argument("--round-seconds", type=positive(float), required=True)
    diurnal.add_argument("--online-hours", type=positive(float), default=8.0)
    diurnal.add_argument("--online-sigma", type=float, default=0.5)
    diurnal.add_argument("--day-seconds", type=positive(float), default=86400.0)
    a = parser.parse_args(argv)
    if getattr(a, "seed", 0) < 0 or getattr(a, "seed", 0) >= 2**64:
        fail("--seed: must be an integer in [0, 2^64)")
    if getattr(a, "trial", 0) < 0:
        fail("--trial: must be an integer >= 0")
    if a.kind == "diurnal" and not 0.0 <= a.online_sigma <= 10.0:
        fail("--online-sigma: must be a number in [0, 10]")
    command = "avbench availability " + " ".join(argv)
    spells = {"churn": churn_spells, "diurnal": diurnal_spells,
              "seconds": lambda a: read_seconds(a.input, a.round_seconds, a.rounds)}[a.kind](a)
    try:
        write(a.out, list(spells), command)
    except OSError as e:
        fail(f"{a.out}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
