#!/usr/bin/python3
"""Randomized size campaign on the sequential engine (issue "Trust at scale").

Every run must end the way docs/reliability.md promises:
  - exit 0 and a whole, valid trace: avbench check accepts it with the run's
    peers, trials and rounds (steps), its root attribute complete is 1, no float
    in it is NaN or infinite (but what a diverged SGD trial may hold), and with
    --summary one row per trial, run_complete = 1;
  - exit 2, the bad-input contract: exactly one line on stderr, `PROGRAM: error:
    ...`, nothing on stdout (--dry-run: only its `# estimate:` lines), nothing
    written at --out or --summary or anywhere else;
  - exit 3 (or 1): progress and warning lines at most, then one error line, the
    last; the trace absent or valid and marked complete = 0.
Anything else is a failure: a signal, another exit code, stray text on stderr (a
traceback, a sanitizer report, std::bad_alloc outside the error line), two error
lines, a file left behind, a refusal where one is certain (swarm, which has no
sequential form; a flag the protocol does not take), a --dry-run that disagrees with
the run, or a run still going at --timeout seconds although its own --dry-run
estimated at most --skip-above seconds. A run estimated longer is not run and is
counted as skipped ("too long"). A failure prints one line: the case seed, what
happened, and the command (with its ulimit -v) that reproduces it.

  campaign_sizes.py --runs N --seed S [--bin B] [--sgd-bin B] [--jobs 2] [--log F]
  campaign_sizes.py --ci [--bin B] [--sgd-bin B]
  campaign_sizes.py --replay CASE_SEED [--keep] [--bin B] [--sgd-bin B]

Run i of campaign S draws its whole configuration from its case seed, a hash of
(S, i), with random.Random: program (averaging_bench mostly, some sgd_bench),
protocol (the catalog, read from --help's --protocol line), --peers log-uniform in
1..2^24, --dim, --model-dim up to 2^27, --trials (mostly small, some up to 2^30),
--threads 1..4, --rounds/--steps 0..200, --topology and the other flags a protocol
takes (read from the `[--protocol ...]` suffixes of --help), failures, detection
timeouts up to 1e308, the platform flags (sometimes 1e308 or 1e-300), --summary,
a LIBSVM --data file instead of synthetic logistic data (some with one stray index
whose Hessian cannot fit), and the ulimit -v (2 to 6 GB, or tight: 64 MB to 1 GB). A scenario weights the
draw toward feasible runs, very large populations, memory that cannot fit, time
or bytes that overflow, huge trial counts, dense graphs, and foreign flags.
--replay CASE_SEED runs one case (with the same binaries' catalog) and prints what
it did; --log FILE writes one JSON line per run. --ci runs a slice of about 60
cases of seed 2026, chosen to cover every protocol of both programs, every scenario
and the refusals (each case refused by its --dry-run or estimated under 0.5 s),
in well under a minute on 2 cores.

The last line is `N passed, M failed` (skipped runs are in neither); exit 1 on any
failure.
"""

import argparse
import concurrent.futures
import csv
import hashlib
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "scripts" / "avbench"
GIB_KB = 1 << 20  # ulimit -v counts KiB
CI_SEED = 2026
PROGRESS = re.compile(r"^\[\d+s\] ")
ESTIMATE_WALL = re.compile(r"^# estimate: wall time: about ([0-9.e+-]+|inf|nan) s", re.M)
ESTIMATE_MEMORY = re.compile(r"^# estimate: memory: about ([0-9.e+-]+) GB", re.M)
STRAY = re.compile(r"Traceback|AddressSanitizer|runtime error|terminate called|Segmentation|Aborted|core dumped")

SCENARIOS = [("feasible", 50), ("big", 9), ("memory", 7), ("tight-ulimit", 6), ("platform", 7),
             ("detection", 5), ("bytes", 5), ("trials", 4), ("graph", 5), ("foreign", 2)]
PLATFORM_VALUES = {
    "latency": (["1e308", "1e300", "1e30", "1e9", "1e-300", "0"], ["1e-6", "5e-5", "1e-3", "0.1"]),
    "bandwidth": (["1e-300", "1e-30", "1e-3", "1e308", "0"], ["1e6", "1.25e8", "1e10", "1e12"]),
}


def case_seed(campaign, index):
    """The seed of run `index` of campaign `campaign`: 48 bits of a hash, so every
    run is replayable alone (--replay) and independent of the others."""
    digest = hashlib.sha256(f"campaign_sizes/{campaign}/{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


# ---- the catalog, from --help ---------------------------------------------------------

def read_help(binary):
    """(protocols, scopes, words, defaults) of one program's --help: the --protocol
    list, for each flag the protocols its `[--protocol ...]` suffix names, the
    `{a,b}` words and the `=default` of each flag."""
    text = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60, check=True).stdout
    blocks, current = [], None
    for line in text.splitlines():
        head = re.match(r"^\s{2}(?:-\w,)?(--[\w-]+)\s*(.*)$", line)
        if head:
            current = [head.group(1), head.group(2)]
            blocks.append(current)
        elif current is not None and line.startswith(" " * 8):
            current[1] += " " + line.strip()
        else:
            current = None
    scopes, words, defaults = {}, {}, {}
    for flag, rest in blocks:
        scope = re.search(r"\[--protocol ([^\]]+)\]\s*$", rest)
        if scope:
            scopes[flag] = {p.strip() for p in scope.group(1).split(",")}
        word = re.match(r"\{([^}]*)\}", rest)
        if word:
            words[flag] = word.group(1).split(",")
        default = re.match(r"(?:\{[^}]*\}|[A-Za-z\[\]]+)=(\S+)", rest)
        if default:
            defaults[flag] = default.group(1)
    if "--protocol" not in words:
        raise SystemExit(f"campaign_sizes: no --protocol {{...}} line in {binary} --help")
    return {"protocols": words["--protocol"], "scopes": scopes, "words": words, "defaults": defaults,
            "flags": [flag for flag, _ in blocks]}


def read_catalog(opts):
    """Both programs' --help, and which protocols have a sequential form: each one's
    --dry-run on 4 peers, where a protocol without one is refused saying so."""
    catalog = {"averaging_bench": read_help(opts.bin), "sgd_bench": read_help(opts.sgd_bin)}
    sequential, other = [], []
    for protocol in catalog["averaging_bench"]["protocols"]:
        done = subprocess.run([opts.bin, "--engine", "sequential", "--peers", "4", "--protocol", protocol,
                               "--dry-run"], capture_output=True, text=True, timeout=60)
        (other if "no sequential form" in done.stderr else sequential).append(protocol)
    if not sequential:
        raise SystemExit(f"campaign_sizes: no protocol of {opts.bin} has a sequential form")
    catalog["sequential"], catalog["no_sequential"] = sequential, other
    return catalog


# ---- drawing a case -------------------------------------------------------------------

def log_uniform(rng, lo, hi):
    """An integer in [lo, hi], log-uniform."""
    lo, hi = max(1, int(lo)), max(1, int(hi))
    if hi <= lo:
        return lo
    return min(hi, max(lo, int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))))


def pick(rng, weighted):
    names, weights = zip(*weighted)
    return rng.choices(names, weights=weights)[0]


def draw_rounds(rng, cap):
    """--rounds / --steps: 0..200, mostly under 50, at most `cap` (but 0 stays 0)."""
    u = rng.random()
    rounds = 0 if u < 0.1 else log_uniform(rng, 1, 50) if u < 0.65 else rng.randint(0, 200)
    return int(min(rounds, max(1, cap)))


def draw_trials(rng, cap):
    if rng.random() < 0.1:
        return log_uniform(rng, 1, min(200, max(16, cap)))
    return log_uniform(rng, 1, min(16, max(1, cap)))


def draw_averaging_sizes(rng, case):
    """--peers, --dim, --model-dim, --rounds, --trials of averaging_bench."""
    s, o = case["scenario"], case["opts"]
    if s == "big":
        peers, dim, rounds, trials = log_uniform(rng, 1 << 18, 1 << 24), log_uniform(rng, 1, 8), rng.randint(0, 5), 1
    elif s == "memory":
        peers = log_uniform(rng, 1 << 8, 1 << 24)
        dim = log_uniform(rng, (1 << 31) // peers, 1 << 30)
        rounds, trials = rng.randint(0, 3), rng.randint(1, 2)
    elif s == "bytes":
        peers, dim = log_uniform(rng, 1 << 14, 1 << 24), log_uniform(rng, 1, 4)
        rounds, trials = rng.randint(0, 200), log_uniform(rng, 1, 4)
        o["--model-dim"] = str(log_uniform(rng, 1 << 20, 1 << 27))
    elif s == "trials":
        peers, dim, rounds = log_uniform(rng, 1, 64), log_uniform(rng, 1, 16), draw_rounds(rng, 20)
        trials = log_uniform(rng, 1 << 10, 1 << 30)
    elif s == "graph":
        peers, dim, rounds, trials = log_uniform(rng, 1 << 6, 1 << 20), log_uniform(rng, 1, 4), draw_rounds(rng, 10), 1
    else:
        budget = 2 ** rng.uniform(8, 25)  # peers x dim x rounds x trials, roughly
        peers = log_uniform(rng, 1, min(1 << 24, budget))
        dim = log_uniform(rng, 1, min(1 << 16, budget / peers))
        rounds = draw_rounds(rng, budget // (peers * dim))
        trials = draw_trials(rng, budget // (peers * dim * max(1, rounds)))
    if "--model-dim" not in o and rng.random() < 0.12:
        o["--model-dim"] = str(log_uniform(rng, max(1, dim // 2), 1 << 27))
    o.update({"--peers": str(peers), "--dim": str(dim), "--rounds": str(rounds), "--trials": str(trials)})


def draw_sgd_sizes(rng, case):
    """--peers, --dim, --steps, --trials and the training flags of sgd_bench."""
    s, o = case["scenario"], case["opts"]
    logistic = rng.random() < 0.3
    if logistic:
        o["--objective"] = "logistic"
        o["--samples-per-peer"] = str(log_uniform(rng, 1, 256))
    elif rng.random() < 0.2:
        o["--preset"] = "conditioned"
    if s == "big":
        peers, dim, steps, trials = log_uniform(rng, 1 << 16, 1 << 24), log_uniform(rng, 1, 8), rng.randint(0, 5), 1
    elif s == "memory":
        peers = log_uniform(rng, 1 << 8, 1 << 24)
        dim = log_uniform(rng, 1 << 14 if logistic else (1 << 31) // peers, 1 << 24)
        steps, trials = rng.randint(0, 3), 1
    elif s == "trials":
        peers, dim, steps = log_uniform(rng, 1, 64), log_uniform(rng, 1, 16), draw_rounds(rng, 20)
        trials = log_uniform(rng, 1 << 10, 1 << 30)
    elif s in ("bytes", "graph"):
        peers, dim = log_uniform(rng, 1 << 10, 1 << 20), log_uniform(rng, 1, 64)
        steps, trials = rng.randint(0, 200), 1
    else:
        budget = 2 ** rng.uniform(8, 23)
        per_peer = int(o.get("--samples-per-peer", 1))
        peers = log_uniform(rng, 1, min(1 << 24, budget / per_peer))
        dim = log_uniform(rng, 1, min(1 << 10 if logistic else 1 << 16, budget / (peers * per_peer)))
        steps = draw_rounds(rng, budget // (peers * dim * per_peer))
        trials = draw_trials(rng, budget // (peers * dim * per_peer * max(1, steps)))
    o.update({"--peers": str(peers), "--dim": str(dim), "--steps": str(steps), "--trials": str(trials)})
    if rng.random() < 0.5:
        o["--local-steps"] = str(log_uniform(rng, 1, 8))
    if rng.random() < 0.6:
        o["--eval-every"] = str(log_uniform(rng, 1, 50))
    if rng.random() < 0.3:
        o["--batch"] = str(log_uniform(rng, 1, 8))
    o["--lr"] = rng.choice(["0.01", "0.01", "0.05", "0.1"]) if rng.random() > 0.05 else "1000"


def draw_topology(rng, case, words):
    """A --topology word from --help's list (file:PATH aside), random-regular:K with
    K up to 40000; the complete graph on many peers mostly in the graph scenario."""
    peers = int(case["opts"]["--peers"])
    word = rng.choice([w for w in words if not w.startswith("file:")])
    if word == "complete" and peers > 8192 and case["scenario"] != "graph" and rng.random() < 0.8:
        word = rng.choice([w for w in words if w in ("ring", "exp")] or words[:1])
    if ":" in word:
        if case["scenario"] == "graph" or rng.random() < 0.2:
            k = log_uniform(rng, 1, 40000)
        else:
            k = log_uniform(rng, 1, min(64, max(1, peers - 1)))
        word = f"{word.split(':')[0]}:{k}"
    return word


def draw_word(rng, words):
    """A word of a `{...}` list, its placeholder (stochastic:B) filled in."""
    word = rng.choice(words)
    if word.endswith(":B"):
        word = f"{word[:-2]}:{rng.randint(1, 16)}"
    return word


def draw_protocol_flags(rng, case, program_help):
    """The flags the protocol takes (--help's `[--protocol ...]` suffixes), each
    sometimes, with a value from its word list or a plausible range."""
    o, protocol, words = case["opts"], case["protocol"], program_help["words"]
    takes = {flag for flag, scope in program_help["scopes"].items() if protocol in scope}
    if "--topology" in takes and (case["scenario"] == "graph" or rng.random() < 0.7):
        o["--topology"] = draw_topology(rng, case, words["--topology"])
    for flag, chance in (("--quantizer", 0.15), ("--collective", 0.25), ("--weights", 0.25),
                         ("--alive-weights", 0.1), ("--placement", 0.15), ("--key-update", 0.2),
                         ("--on-failure", 0.1)):
        if (flag in takes or flag == "--on-failure") and flag in words and rng.random() < chance:
            o[flag] = draw_word(rng, [w for w in words[flag] if w != "mpi"] or words[flag])
    if "--group-size" in takes and rng.random() < 0.3:
        o["--group-size"] = str(log_uniform(rng, 2, 4096))
    if "--min-group-size" in takes and rng.random() < 0.1:
        o["--min-group-size"] = str(log_uniform(rng, 2, 64))
    if "--grid" in takes and rng.random() < 0.1:
        o["--grid"] = "x".join(str(log_uniform(rng, 1, 256)) for _ in range(rng.randint(1, 3)))
    if "--gamma" in takes and rng.random() < 0.5:
        o["--gamma"] = rng.choice(["1", "0.5", "0.1", "0.01"])
    if "--lattice-eps" in takes and o.get("--quantizer") == "lattice" and rng.random() < 0.3:
        o["--lattice-eps"] = rng.choice(["1e-6", "0.01", "1"])


def draw_failures(rng, case, program_help):
    o, words = case["opts"], program_help["words"]
    if case["scenario"] == "detection" or rng.random() < 0.35:
        o["--fail-rate"] = rng.choice(["0.001", "0.01", "0.05", "0.2", "0.5", "1"])
        if rng.random() < 0.4:
            # trace needs an --availability file and no --fail-rate: test_availability.sh's
            o["--failure"] = rng.choice([w for w in words["--failure"] if w != "trace"])
            if o["--failure"] == "churn" and rng.random() < 0.8:
                o["--join-rate"] = rng.choice(["0.01", "0.1", "0.5", "1"])
    if case["scenario"] == "detection":
        o["--detection-timeout"] = rng.choice(["1e308", "1e300", "1e100", "1e9", "1e7", "1e5", "10", "0.001"])
        if rng.random() < 0.4:
            o["--trials"] = str(log_uniform(rng, 1, 400))
    elif rng.random() < 0.15:
        o["--detection-timeout"] = rng.choice(["0.001", "0.1", "1", "60"])


def draw_platform(rng, case, program_help):
    """The sequential engine's platform flags (--link-*, --backbone-* in --help):
    in the platform scenario one or two extreme, otherwise sometimes moderate."""
    flags = [f for f in program_help["flags"] if f.startswith(("--link-", "--backbone-"))]
    extreme = set(rng.sample(flags, rng.randint(1, 2))) if case["scenario"] == "platform" and flags else set()
    for flag in flags:
        kind = "latency" if flag.endswith("latency") else "bandwidth"
        if flag in extreme:
            case["opts"][flag] = rng.choice(PLATFORM_VALUES[kind][0])
        elif rng.random() < 0.1:
            case["opts"][flag] = rng.choice(PLATFORM_VALUES[kind][1])


def draw_run_flags(rng, case):
    """--threads, --seed, progress, --stop-at-target, --summary, and the ulimit -v."""
    o = case["opts"]
    if rng.random() < 0.85:
        o["--threads"] = str(rng.randint(1, 4))
    if rng.random() < 0.5:
        o["--seed"] = str(rng.randrange(1 << 64))
    rows = int(o["--trials"]) * (int(o.get("--rounds", o.get("--steps", "0"))) + 1)
    if rng.random() < 0.8:
        o["--quiet"] = None
    elif rows <= 2000 and rng.random() < 0.5:
        o["--progress-every"] = "0"
    if rng.random() < 0.05:
        o["--stop-at-target"] = None
    if rng.random() < 0.15:
        case["summary"] = rng.choice(["summary.csv", "summary.json"])
    if case["scenario"] == "tight-ulimit":
        case["ulimit_kb"] = log_uniform(rng, 64 << 10, GIB_KB)
    else:
        case["ulimit_kb"] = rng.choice([2, 3, 4, 4, 6]) * GIB_KB


def add_foreign_flag(rng, case, program_help):
    """A flag the protocol does not take, with a value other than its default:
    the run must be refused (exit 2)."""
    protocol, words = case["protocol"], program_help["words"]
    foreign = sorted(f for f, scope in program_help["scopes"].items() if protocol not in scope and f != "--clock")
    if not foreign:
        return
    flag = rng.choice(foreign)
    default = program_help["defaults"].get(flag)
    if flag in words:
        choices = [w for w in words[flag] if w != default and not w.startswith("file:") and w != "mpi"]
        value = draw_word(rng, choices) if choices else None
        if value and value.startswith("random-regular:"):
            value = "random-regular:2"
    elif flag == "--grid":
        value = "4x4"
    else:
        value = {"--group-size": "8", "--min-group-size": "3", "--gamma": "0.5", "--lattice-q": "1024",
                 "--lattice-eps": "0.01"}.get(flag)
    if value is not None:
        case["opts"][flag] = value
        case["expect_refusal"] = f"{flag} does not apply to --protocol {protocol}"


def draw_libsvm(case):
    """Half of the logistic sgd_bench cases train on a LIBSVM file instead of
    synthetic data. Its shape comes from a stream of the case seed's own, so that
    every other draw is as before: samples, features, nonzeros a row and, often in
    the memory scenario, one stray large index (a Hessian of features^2 entries that
    cannot fit); write_libsvm writes it beside the run's folder."""
    o = case["opts"]
    if case["program"] != "sgd_bench" or o.get("--objective") != "logistic" or case["scenario"] == "foreign":
        return
    rng = random.Random(case["seed"] ^ 0x5EED_DA7A)
    if rng.random() >= 0.5:
        return
    del o["--samples-per-peer"], o["--dim"]
    samples, dim, peers = log_uniform(rng, 1, 5000), log_uniform(rng, 1, 300), int(o["--peers"])
    if peers <= 5000 and rng.random() < 0.8:  # mostly a row for every peer (fewer are refused)
        samples = max(samples, peers)
    stray = log_uniform(rng, 10_000, 1_000_000) if rng.random() < (0.5 if case["scenario"] == "memory" else 0.05) else 0
    case["libsvm"] = {"samples": samples, "dim": dim, "nonzeros": min(dim, log_uniform(rng, 1, 40)), "stray": stray,
                      "seed": rng.randrange(1 << 32)}
    o["--data"] = "../data.svm"
    if rng.random() < 0.2:
        o["--data-limit"] = str(log_uniform(rng, 1, samples))


def write_libsvm(case, folder):
    """The case's LIBSVM file (draw_libsvm), if it has one, as folder/data.svm."""
    spec = case.get("libsvm")
    if spec is None:
        return
    rng = random.Random(spec["seed"])
    with open(os.path.join(folder, "data.svm"), "w", encoding="ascii") as f:
        for row in range(spec["samples"]):
            label = rng.choice((1, -1))
            columns = sorted(rng.sample(range(1, spec["dim"] + 1), spec["nonzeros"]))
            words = [f"{c}:{rng.gauss(0.5 * label, 1):.3g}" for c in columns]
            if row == 0 and spec["stray"] > spec["dim"]:
                words.append(f"{spec['stray']}:1")
            f.write(f"{label:+d} {' '.join(words)}\n")


def draw(seed, catalog):
    """Case `seed`: everything from random.Random(seed)."""
    rng = random.Random(seed)
    program = "sgd_bench" if rng.random() < 0.2 else "averaging_bench"
    scenario = pick(rng, SCENARIOS)
    refused_protocol = catalog["no_sequential"] and rng.random() < 0.025
    protocol = rng.choice(catalog["no_sequential"] if refused_protocol else catalog["sequential"])
    case = {"seed": seed, "program": program, "protocol": protocol, "scenario": scenario, "summary": None,
            "opts": {"--engine": "sequential", "--protocol": protocol}, "expect_refusal": None}
    if refused_protocol:
        case["expect_refusal"] = f"--protocol {protocol} has no sequential form"
    help_ = catalog[program]
    (draw_sgd_sizes if program == "sgd_bench" else draw_averaging_sizes)(rng, case)
    draw_protocol_flags(rng, case, help_)
    draw_failures(rng, case, help_)
    draw_platform(rng, case, help_)
    draw_run_flags(rng, case)
    if scenario == "foreign":
        add_foreign_flag(rng, case, help_)
    draw_libsvm(case)
    return case


def case_argv(case, opts, extra=()):
    binary = opts.sgd_bin if case["program"] == "sgd_bench" else opts.bin
    argv = [binary]
    for flag, value in case["opts"].items():
        argv += [flag] if value is None else [flag, value]
    argv += ["--out", "run.h5"] + (["--summary", case["summary"]] if case["summary"] else [])
    return argv + list(extra)


def command_text(case, opts):
    """The shell command that reproduces the case by hand; for a case with a --data
    file, the replay that writes it (and keeps it, beside the run's folder)."""
    if "libsvm" in case:
        return " ".join(shlex.quote(a) for a in (str(Path(__file__).resolve()), "--replay", str(case["seed"]),
                                                  "--keep", "--bin", opts.bin, "--sgd-bin", opts.sgd_bin))
    return (f"(ulimit -v {case['ulimit_kb']}; cd \"$(mktemp -d)\" && "
            f"{' '.join(shlex.quote(a) for a in case_argv(case, opts))})")


# ---- running a case -------------------------------------------------------------------

def launch(argv, cwd, logs, ulimit_kb, timeout, grace=10.0):
    """Runs argv under `ulimit -v`, in its own session, stdout and stderr to files.
    At `timeout` seconds it gets SIGTERM (a run stops after its round and saves
    what it has), `grace` seconds later SIGKILL. Returns the exit code (negative:
    the signal), stdout, stderr, wall seconds, peak resident KiB (as last seen
    while it ran: a lower bound) and whether it timed out."""
    wrapper = ["bash", "-c", 'ulimit -v "$1" || exit 125; shift; exec "$@"', "campaign_sizes", str(ulimit_kb)]
    out_path, err_path = logs + ".out", logs + ".err"
    started = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        child = subprocess.Popen(wrapper + argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
    status, timed_out, nap, peak_kb = None, False, 0.002, 0
    deadline, killed = started + timeout, False
    while status is None:
        peak_kb = max(peak_kb, high_water_kb(child.pid))
        pid, st, _ = os.wait4(child.pid, os.WNOHANG)
        if pid:
            status = st
            break
        now = time.monotonic()
        if now >= deadline and not timed_out:
            timed_out = True
            os.kill(child.pid, signal.SIGTERM)
            deadline = now + grace
        elif now >= deadline and not killed:
            killed = True
            os.kill(child.pid, signal.SIGKILL)
        time.sleep(nap)
        nap = min(0.05, nap * 1.5)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    read = lambda path: Path(path).read_bytes().decode("utf-8", errors="replace")
    return {"rc": child.returncode, "stdout": read(out_path), "stderr": read(err_path), "seconds": seconds,
            "rss_kb": peak_kb, "timed_out": timed_out, "killed": killed}


def high_water_kb(pid):
    """The process's peak resident memory so far (VmHWM, reset by exec; wait4's
    ru_maxrss would count the forked copy of this Python process), 0 once gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except (OSError, ValueError):
        return 0


def stderr_lines(program, text):
    """Each stderr line with its kind: error, warning, progress or other."""
    kinds = []
    for line in text.splitlines():
        if line.startswith(f"{program}: error: "):
            kinds.append(("error", line))
        elif line.startswith(f"{program}: warning: "):
            kinds.append(("warning", line))
        elif PROGRESS.match(line):
            kinds.append(("progress", line))
        else:
            kinds.append(("other", line))
    return kinds


def refusal_problems(program, run, dry):
    """Problems of an exit-2 run: one error line and nothing else on stderr, stdout
    empty (--dry-run: estimate lines only)."""
    problems = []
    lines = stderr_lines(program, run["stderr"])
    if len(lines) != 1 or lines[0][0] != "error":
        problems.append(f"exit 2 with {len(lines)} line(s) on stderr, not one error line: {first(run['stderr'])}")
    stdout = [line for line in run["stdout"].splitlines() if not (dry and line.startswith("# estimate: "))]
    if stdout:
        problems.append(f"exit 2 with output on stdout: {stdout[0][:200]}")
    return problems


def stopped_problems(program, run):
    """Problems of a run that stopped (exit 3 or 1): only progress and warning lines
    before one error line, the last."""
    lines = stderr_lines(program, run["stderr"])
    errors = [line for kind, line in lines if kind == "error"]
    others = [line for kind, line in lines if kind == "other"]
    problems = []
    if len(errors) != 1 or not lines or lines[-1][0] != "error":
        problems.append(f"exit {run['rc']} with {len(errors)} error line(s), not one error line last: "
                        f"{first(run['stderr'])}")
    if others:
        problems.append(f"exit {run['rc']} with other text on stderr: {others[0][:200]}")
    return problems


def first(text, limit=300):
    """The first lines of a text, joined with ' | ', at most `limit` characters."""
    joined = " | ".join(line for line in text.splitlines()[:4] if line.strip())
    return joined[:limit] + ("..." if len(joined) > limit else "")


def leftovers(rundir, allowed):
    return sorted(set(os.listdir(rundir)) - set(allowed))


def check_trace(case, rundir, complete, limit=1800):
    """avbench check on the run's trace, with what the run asked for when it is
    complete; then its own scan for non-finite numbers. A list of problems."""
    o, sgd = case["opts"], case["program"] == "sgd_bench"
    argv = [str(TOOLS), "check", "run.h5", "--kind", "sgd" if sgd else "averaging",
            "--peers", o["--peers"], "--complete", str(complete)]
    if complete:
        argv += ["--trials", o["--trials"]]
        if sgd:
            argv += ["--steps", o["--steps"], "--local-steps", o.get("--local-steps", "1"),
                     "--eval-every", o.get("--eval-every", "10")]
        else:
            argv += ["--rounds", o["--rounds"]]
    try:
        done = subprocess.run(argv, cwd=rundir, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return [f"avbench check took more than {limit} s"]
    if done.returncode != 0:
        return [f"avbench check (exit {done.returncode}): {first(done.stdout + done.stderr)}"]
    return nonfinite(os.path.join(rundir, "run.h5"), sgd) if complete else []


def nonfinite(path, sgd):
    """Floats of a complete trace that are NaN or infinite: the summary, the root's
    run_seconds and the first and last 20 trials. Training traces may hold them in
    the accuracy column (no test set) and in the model columns of a diverged trial."""
    import h5py  # here: only the trace checks need it
    import numpy as np
    from avbench.trials import trial_columns, trial_count, trial_info
    model = ("loss", "gap", "relative_gap", "distance", "consensus")
    with h5py.File(path, "r") as f:
        bad = [] if np.isfinite(f.attrs.get("run_seconds", 0.0)) else ["/ run_seconds"]
        count = trial_count(f) if "trials" in f else 0
        positions = [*range(min(count, 20)), *range(max(20, count - 20), count)]
        groups = [("summary", f["summary"], None)] if "summary" in f else []
        # A trial's rows only (v9's cells past them hold NaN by design), read one trial at a time.
        for k in positions:
            info = trial_info(f, k)
            groups.append((f"trials, trial {info['trial']}", trial_columns(f, k), info["diverged"]))
        diverged = f["summary"]["diverged"][()] if sgd and "summary" in f and "diverged" in f["summary"] else None
        for where, group, trial_diverged in groups:
            for name, data in group.items():
                if not isinstance(data, (h5py.Dataset, np.ndarray)) or data.dtype.kind != "f":
                    continue
                values, column = data[()], name.removeprefix("final_")
                if sgd and column == "accuracy" or (trial_diverged and column in model):
                    continue
                if where == "summary" and diverged is not None and column in model:
                    values = values[diverged == 0]
                if not np.all(np.isfinite(values)):
                    bad.append(f"{where}/{name}")
    return [f"non-finite numbers in a complete trace: {', '.join(bad[:5])}"] if bad else []


def check_summary(case, rundir, complete):
    """The --summary file: one row per trial, run_complete as the trace's."""
    path = os.path.join(rundir, case["summary"])
    try:
        with open(path, newline="") as f:
            rows = json.load(f) if path.endswith(".json") else list(csv.DictReader(f))
    except (OSError, ValueError) as e:
        return [f"--summary {case['summary']} unreadable: {e}"]
    problems = []
    if complete and len(rows) != int(case["opts"]["--trials"]):
        problems.append(f"--summary has {len(rows)} rows for {case['opts']['--trials']} trials")
    if any(str(row.get("run_complete")).lower() not in (str(complete), "true" if complete else "false")
           for row in rows):
        problems.append(f"--summary rows not all run_complete = {complete}")
    return problems


def refused_by(program, stderr):
    """The flag an error line names first (`PROGRAM: error: --flag ...`)."""
    match = re.search(rf"^{re.escape(program)}: error: (--[\w-]+)", stderr, re.M)
    return match.group(1) if match else None


def judge_dry(case, dry, rundir):
    """The --dry-run: exit 0 with four estimate lines, or a refusal; nothing written."""
    program, problems = case["program"], []
    wall = ESTIMATE_WALL.search(dry["stdout"])
    memory = ESTIMATE_MEMORY.search(dry["stdout"])
    seen = {"dry_rc": dry["rc"], "estimate_s": float(wall.group(1)) if wall else None,
            "estimate_gb": float(memory.group(1)) if memory else None}
    if dry["timed_out"]:
        problems.append(f"--dry-run still running after {dry['seconds']:.0f} s")
    elif dry["rc"] == 0:
        if dry["stdout"].count("# estimate: ") != 4 or wall is None:
            problems.append(f"--dry-run exit 0 without its four estimate lines: {first(dry['stdout'])}")
        strays = [line for kind, line in stderr_lines(program, dry["stderr"]) if kind != "warning"]
        if strays:
            problems.append(f"--dry-run exit 0 with text on stderr: {strays[0][:200]}")
        if case["expect_refusal"]:
            problems.append(f"--dry-run accepted the run (exit 0), though {case['expect_refusal']}")
    elif dry["rc"] == 2:
        problems += [f"--dry-run: {p}" for p in refusal_problems(program, dry, dry=True)]
        seen["dry_refused_by"] = refused_by(program, dry["stderr"])
    else:
        problems.append(f"--dry-run exit {dry['rc']}{signal_name(dry['rc'])}: {first(dry['stderr'])}")
    if leftovers(rundir, []):
        problems.append(f"--dry-run wrote {leftovers(rundir, [])}")
    return seen, problems


def signal_name(rc):
    if rc < 0:
        return f" ({signal.Signals(-rc).name})"
    if rc > 128 and rc - 128 in signal.valid_signals():
        return f" (128 + {signal.Signals(rc - 128).name})"
    return ""


def judge_timeout(case, run, rundir, seen, timeout):
    """A run still going at the timeout: a failure (its estimate said otherwise);
    says what SIGTERM then did (exit 143 and a trace marked incomplete, promised)."""
    est = seen.get("estimate_s")
    estimated = f"estimated {est:g} s" if est is not None else "printed no wall time"
    text = (f"timeout: still running after {timeout:.0f} s, though its --dry-run {estimated}; "
            f"SIGTERM then gave exit {run['rc']}{signal_name(run['rc'])}")
    problems = [text]
    if run["killed"]:
        problems.append("SIGTERM did not stop it within 10 s (SIGKILL)")
    elif run["rc"] != 143:
        problems.append(f"SIGTERM: exit {run['rc']}, not 143: {first(run['stderr'])}")
    elif os.path.exists(os.path.join(rundir, "run.h5")):
        problems += [f"after SIGTERM: {p}" for p in check_trace(case, rundir, 0, limit=120)]
    return problems


def judge_run(case, run, rundir, seen):
    """Problems of the run itself, by its exit code (see the module's docstring)."""
    program, rc, problems = case["program"], run["rc"], []
    outputs = ["run.h5"] + ([case["summary"]] if case["summary"] else [])
    trace = os.path.exists(os.path.join(rundir, "run.h5"))
    if STRAY.search(run["stderr"]):
        problems.append(f"stray text on stderr: {STRAY.search(run['stderr']).group(0)}")
    if rc == 0:
        lines = [(k, line) for k, line in stderr_lines(program, run["stderr"]) if k not in ("warning", "progress")]
        if lines:
            problems.append(f"exit 0 with {lines[0][0]} text on stderr: {lines[0][1][:200]}")
        if case["expect_refusal"]:
            problems.append(f"exit 0, though {case['expect_refusal']}")
        if seen["dry_rc"] == 2:
            problems.append("exit 0, though its --dry-run refused it")
        problems += check_trace(case, rundir, 1) if trace else ["exit 0 without a trace at --out"]
        if case["summary"]:
            problems += check_summary(case, rundir, 1)
    elif rc == 2:
        problems += refusal_problems(program, run, dry=False)
        if seen["dry_rc"] == 0:
            problems.append("refused, though its --dry-run accepted it (exit 0)")
        outputs = []
    elif rc in (1, 3):
        problems += stopped_problems(program, run)
        if rc == 1 and re.search(r"bad_alloc|out of memory", run["stderr"]):
            problems.append("exit 1 for running out of memory (promised: exit 3)")
        if seen["dry_rc"] == 2:
            problems.append(f"exit {rc}, though its --dry-run refused it")
        problems += check_trace(case, rundir, 0) if trace else []
        if case["summary"] and os.path.exists(os.path.join(rundir, case["summary"])):
            problems += check_summary(case, rundir, 0)
    else:
        problems.append(f"exit {rc}{signal_name(rc)}: {first(run['stderr'])}")
    if leftovers(rundir, outputs):
        problems.append(f"left behind: {', '.join(leftovers(rundir, outputs))}")
    return problems


def describe(case, opts):
    o = case["opts"]
    return {"seed": case["seed"], "program": case["program"], "protocol": case["protocol"],
            "scenario": case["scenario"], "peers": int(o["--peers"]),
            "dim": case["libsvm"]["dim"] if "libsvm" in case else int(o["--dim"]),
            "model_dim": int(o.get("--model-dim", 0)), "trials": int(o["--trials"]),
            "rounds": int(o.get("--rounds", o.get("--steps", 0))), "threads": int(o.get("--threads", 0)),
            "topology": o.get("--topology"), "ulimit_kb": case["ulimit_kb"], "command": command_text(case, opts)}


def run_case(case, opts, keep=False):
    """Case: its --dry-run, then (unless estimated too long) the run and its checks.
    Returns a dict: outcome (exit 0, refused, exit 3, exit 1, skipped, failed),
    problems, notes and what was measured."""
    scratch = tempfile.mkdtemp(prefix="avb-sizes-")
    rundir = os.path.join(scratch, "run")
    os.mkdir(rundir)
    write_libsvm(case, scratch)
    result = describe(case, opts)
    try:
        dry = launch(case_argv(case, opts, ["--dry-run"]), rundir, os.path.join(scratch, "dry"),
                     case["ulimit_kb"], 60)
        seen, problems = judge_dry(case, dry, rundir)
        result.update(seen)
        if not problems and dry["rc"] == 0 and seen["estimate_s"] > opts.skip_above:
            result.update(outcome="skipped", problems=[], notes=[])
            return result
        timeout = opts.timeout if dry["rc"] == 0 else min(opts.timeout, 30)
        run = launch(case_argv(case, opts), rundir, os.path.join(scratch, "run"), case["ulimit_kb"], timeout)
        result.update(rc=run["rc"], seconds=round(run["seconds"], 3), rss_mb=round(run["rss_kb"] / 1024, 1),
                      error=next((l for k, l in stderr_lines(case["program"], run["stderr"]) if k == "error"), None))
        if run["rc"] == 2:
            result["refused_by"] = refused_by(case["program"], run["stderr"])
        problems += (judge_timeout(case, run, rundir, seen, timeout) if run["timed_out"]
                     else judge_run(case, run, rundir, seen))
        result["timed_out"] = run["timed_out"]
        outcome = {0: "exit 0", 2: "refused", 3: "exit 3", 1: "exit 1"}.get(run["rc"], "failed")
        result.update(outcome="failed" if problems else outcome, problems=problems, notes=notes(result))
        if keep:
            result["stdout"], result["stderr"] = run["stdout"], run["stderr"]
        return result
    finally:
        if keep:
            result["scratch"] = scratch
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def notes(result):
    """What passed but is worth a look: a wall time far beyond the estimate, a peak
    resident memory above it, a run that ran out of memory under its ulimit."""
    found = []
    est, seconds = result.get("estimate_s"), result.get("seconds", 0)
    if result.get("rc") == 0 and est is not None and seconds > 4 * est + 2:
        found.append(f"wall time {seconds:.1f} s against an estimate of {est:g} s")
    gb = result.get("estimate_gb")
    if result.get("rc") == 0 and gb is not None and result["rss_mb"] > 100 and result["rss_mb"] * 1.048576e6 > gb * 1e9 + 50e6:
        found.append(f"peak resident memory {result['rss_mb']:.0f} MB above the estimate of {gb:g} GB")
    named = result.get("refused_by")
    if result.get("rc") == 2 and result.get("dry_rc") == 2 and named != result.get("dry_refused_by"):
        found.append(f"refused naming {named}, its --dry-run naming {result.get('dry_refused_by')}")
    if result.get("rc") == 3 and re.search(r"out of memory|bad_alloc", result.get("error") or ""):
        found.append(f"out of memory under ulimit -v {result['ulimit_kb']} KiB, estimate {gb} GB")
    return found


# ---- campaigns ------------------------------------------------------------------------

def failure_line(result):
    return (f"FAIL case {result['seed']} ({result['program']} {result['protocol']}, {result['scenario']}): "
            f"{'; '.join(result['problems'])} :: {result['command']}")


def run_all(cases, opts, log):
    """Runs the cases, opts.jobs at a time; prints each failure when found. A run
    that timed out within ten times its estimate is run again alone at the end (a
    busy machine, not the program?): if it then passes, that one counts, with a note."""
    results, started = [], time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for n, result in enumerate(pool.map(lambda c: run_case(c, opts), cases), 1):
            results.append(result)
            if result["outcome"] == "failed" and not result.get("timed_out"):
                print(failure_line(result), flush=True)
            if log:
                log.write(json.dumps(result) + "\n")
                log.flush()
            if opts.progress and n % opts.progress == 0:
                failed = sum(r["outcome"] == "failed" for r in results)
                print(f"campaign_sizes: {n}/{len(cases)} runs, {failed} failed so far, "
                      f"{time.monotonic() - started:.0f} s", flush=True)
    by_seed = {case["seed"]: case for case in cases}
    for i, result in enumerate(results):
        if result["outcome"] == "failed" and result.get("timed_out") and result["estimate_s"] < opts.timeout / 10:
            print(failure_line(result), flush=True)  # ten times its estimate: not the load
        elif result["outcome"] == "failed" and result.get("timed_out"):
            again = run_case(by_seed[result["seed"]], opts)
            if again["outcome"] != "failed":
                again["notes"] = again.get("notes", []) + [
                    f"timed out beside another run ({result['problems'][0]}); alone: {again['outcome']} "
                    f"in {again.get('seconds', 0):.1f} s"]
            else:
                again["problems"].append("the same when run again alone")
                print(failure_line(again), flush=True)
            results[i] = again
            if log:
                log.write(json.dumps(dict(again, replayed_alone=True)) + "\n")
    return results


def case_keys(case):
    """What a case covers, for the CI slice: its protocol and scenario per program,
    its topology word, failure kind, summary format and LIBSVM file."""
    o, program = case["opts"], case["program"]
    keys = {("protocol", program, case["protocol"]), ("scenario", program, case["scenario"])}
    if "--topology" in o:
        keys.add(("topology", o["--topology"].split(":")[0]))
    if "--failure" in o:
        keys.add(("failure", o["--failure"]))
    if case["summary"]:
        keys.add(("summary", case["summary"]))
    if "libsvm" in case:
        keys.add(("data", "libsvm", "stray index" if case["libsvm"]["stray"] else "plain"))
    return keys


def ci_cases(catalog, opts, want=60, scan=400):
    """About `want` cases of seed CI_SEED that cover every key of case_keys and every
    flag a refusal named, each refused by its --dry-run or estimated at most 0.5 s
    (and at most 200 trials: the estimate does not count writing the trace)."""
    chosen, covered, small = [], set(), []
    with tempfile.TemporaryDirectory(prefix="avb-sizes-ci-") as scratch:
        rundir = os.path.join(scratch, "run")
        os.mkdir(rundir)
        for i in range(scan):
            case = draw(case_seed(CI_SEED, i), catalog)
            keys = case_keys(case) - covered
            if not keys and case["scenario"] == "feasible" and len(small) >= want:
                continue
            write_libsvm(case, scratch)
            dry = launch(case_argv(case, opts, ["--dry-run"]), rundir, os.path.join(scratch, "log"),
                         case["ulimit_kb"], 60)
            for name in os.listdir(rundir):
                os.remove(os.path.join(rundir, name))
            if dry["rc"] == 2:
                keys |= {("refused", case["program"], refused_by(case["program"], dry["stderr"]))} - covered
            else:
                wall = ESTIMATE_WALL.search(dry["stdout"])
                if dry["rc"] != 0 or not wall or float(wall.group(1)) > 0.5 or int(case["opts"]["--trials"]) > 200:
                    continue
                if "libsvm" in case:  # one that trains on its file, beside those refused
                    keys |= {("data", "libsvm", "runs")} - covered
            if keys and len(chosen) < want:
                chosen.append(case)
                covered |= keys
            else:
                small.append(case)
    return chosen + small[:max(0, want - len(chosen))]


def summarize(results, opts, seconds):
    count = lambda outcome: sum(r["outcome"] == outcome for r in results)
    by_dry = sum(r["outcome"] == "refused" and r.get("dry_rc") == 2 for r in results)
    print(f"campaign_sizes: seed {opts.seed if not opts.ci else CI_SEED}{' (--ci)' if opts.ci else ''}, "
          f"{len(results)} runs in {seconds:.0f} s: {count('exit 0')} exit 0, {count('refused')} refused "
          f"(exit 2; {by_dry} by --dry-run too), {count('exit 3')} exit 3, {count('exit 1')} exit 1, "
          f"{count('skipped')} skipped (estimated over {opts.skip_above:g} s), {count('failed')} failed")
    noted = [r for r in results if r.get("notes")]
    for r in noted[:opts.show_notes]:
        print(f"note: case {r['seed']}: {'; '.join(r['notes'])} :: {r['command']}")
    if len(noted) > opts.show_notes:
        print(f"note: {len(noted) - opts.show_notes} more notes (--log has them all)")
    failed = count("failed")
    print(f"{len(results) - failed - count('skipped')} passed, {failed} failed")
    return 1 if failed else 0


def replay(catalog, opts):
    case = draw(opts.replay, catalog)
    print(f"campaign_sizes: case {opts.replay}: {case['program']} {case['protocol']}, scenario {case['scenario']}")
    print(command_text(case, opts))
    result = run_case(case, opts, keep=opts.keep)
    for key in ("dry_rc", "estimate_s", "estimate_gb", "rc", "seconds", "rss_mb", "error", "scratch"):
        if result.get(key) is not None:
            print(f"  {key}: {result[key]}")
    for label in ("stderr", "stdout"):
        if result.get(label):
            print(f"  {label}: {first(result[label], 2000)}")
    for note in result.get("notes", []):
        print(f"  note: {note}")
    if result["outcome"] == "failed":
        print(failure_line(result))
    print(f"  outcome: {result['outcome']}")
    ok = result["outcome"] != "failed"
    print(f"{int(ok and result['outcome'] != 'skipped')} passed, {int(not ok)} failed")
    return 0 if ok else 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=str(REPO / "build" / "apps" / "averaging_bench"), help="averaging_bench")
    p.add_argument("--sgd-bin", default=str(REPO / "build" / "apps" / "sgd_bench"), help="sgd_bench")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--ci", action="store_true", help="the CI slice (about 60 runs)")
    mode.add_argument("--replay", type=int, metavar="CASE_SEED", help="run one case")
    p.add_argument("--runs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    p.add_argument("--timeout", type=float, default=60, help="seconds a run may take (default 60)")
    p.add_argument("--skip-above", type=float, help="skip runs estimated longer (default: timeout / 4)")
    p.add_argument("--log", help="one JSON line per run")
    p.add_argument("--progress", type=int, default=0, help="a progress line every N runs")
    p.add_argument("--show-notes", type=int, default=20, help="notes printed at the end")
    p.add_argument("--keep", action="store_true", help="--replay: keep the scratch folder")
    opts = p.parse_args()
    opts.bin, opts.sgd_bin = os.path.abspath(opts.bin), os.path.abspath(opts.sgd_bin)
    for binary in (opts.bin, opts.sgd_bin):
        if not os.access(binary, os.X_OK):
            p.error(f"no program at {binary} (build it, or pass --bin / --sgd-bin)")
    if opts.skip_above is None:
        opts.skip_above = opts.timeout / 4
    return opts


def main():
    opts = parse_args()
    catalog = read_catalog(opts)
    if opts.replay is not None:
        return replay(catalog, opts)
    started = time.monotonic()
    if opts.ci:
        cases = ci_cases(catalog, opts)
    else:
        cases = [draw(case_seed(opts.seed, i), catalog) for i in range(opts.runs)]
    print(f"campaign_sizes: {'--ci' if opts.ci else f'--seed {opts.seed}'}, {len(cases)} runs, {opts.jobs} at a "
          f"time, timeout {opts.timeout:g} s (replay one: --replay CASE_SEED)", flush=True)
    log = open(opts.log, "w") if opts.log else None
    try:
        results = run_all(cases, opts, log)
    finally:
        if log:
            log.close()
    return summarize(results, opts, time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main())
