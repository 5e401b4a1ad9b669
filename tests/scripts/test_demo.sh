#!/usr/bin/env bash
# scripts/demo.sh's steps at 16 peers: every protocol family runs on the engine
# the demo names for it, and the comparison table shows each with numbers that are
# its trace's own.
#
#   tests/scripts/test_demo.sh MPI_AVERAGING_BENCH SMPI_AVERAGING_BENCH
#
# The demo runs as written, with its test overrides (AVB_DEMO_SETUP=0: no install,
# no build; AVB_DEMO_PEERS=16; AVB_DEMO_OUT and the two program folders). Checked:
# exit 0; one table line per family (allreduce, random-groups, moshpit, gossip on
# the exponential graph, pushsum, pairwise, swarm) naming its engine, 16 peers, 20
# trials (swarm 1), rounds to 1e-4 and to 1e-9 as "mean ± se" equal to the mean and standard
# error of the trace's /summary (every family reaches both targets at 16 peers),
# bytes per peer > 0 and the trace's mean, a time; the notes on the sequential
# engine's time and on swarm's round; each trace's engine attribute; demo.h5 a copy
# of the allreduce trace; demo.png a PNG image. About 30 s.
source "$(dirname "$0")/common.sh"

need_args 2 $# MPI_AVERAGING_BENCH SMPI_AVERAGING_BENCH
program_arg MPI_BIN "$1" "Open MPI averaging_bench" "cmake --preset default && cmake --build build"
program_arg SMPI_BIN "$2" "SMPI averaging_bench"
OUT=$SCRATCH/results

t0=$(now)
rc=0
AVB_DEMO_SETUP=0 AVB_DEMO_PEERS=16 AVB_DEMO_OUT=$OUT AVB_DEMO_BIN=$(dirname "$MPI_BIN") \
  AVB_DEMO_SMPI_BIN=$(dirname "$SMPI_BIN") timeout 240 bash "$AVB_REPO/scripts/demo.sh" \
  >"$SCRATCH/demo.out" 2>"$SCRATCH/demo.err" || rc=$?
if [ "$rc" -eq 0 ]; then
  ok "demo.sh at 16 peers: exit 0 in $(elapsed "$t0") s"
else
  cat "$SCRATCH/demo.out" "$SCRATCH/demo.err" >&2
  die "demo.sh at 16 peers exited $rc"
fi
sed 's/^/    /' "$SCRATCH/demo.out"

report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/demo.out" "$OUT" 2>&1 <<'PY'
import math, re, sys
import h5py
out_text, folder = open(sys.argv[1]).read(), sys.argv[2]
families = {"allreduce": "sequential", "random-groups": "sequential", "moshpit": "sequential", "gossip": "sequential",
            "pushsum": "sequential", "pairwise": "sequential", "swarm": "sequential"}
num = r"([0-9]+\.[0-9]+) ± ([0-9]+\.[0-9]+|–)"  # one trial has no standard error: "–"
problems = []
out_text, _, training_text = out_text.partition("\n== demo: training")
# The training half: one line per method, 10 trials each, steps to both targets,
# each from its trace.
methods = {"allreduce": "allreduce ", "moshpit-local": "moshpit, H=10 ", "diloco": "allreduce, H=10 + nesterov ",
           "streaming-diloco": "allreduce, H=5 + nesterov x2 ", "noloco": "pairwise (complete), H=10 + sgd ",
           "d-psgd": "gossip (exp) ",
           "tracking": "gossip (exp) + tracking ", "ad-psgd": "swarm (complete) "}
for name, label in methods.items():
    found = [l for l in training_text.splitlines() if re.match(re.escape(label.strip()) + r"\s+sequential\s", l)]
    m = re.search(rf"\ssequential\s+16\s+10\s+{num}\s+{num}\s+([0-9]+\.[0-9])\s+{num}\s*$", found[0]) if found else None
    if len(found) != 1 or not m:
        problems.append(f"training: {name}: want one line '{label}... sequential 16 10 steps steps bytes time', got {found}")
        continue
    with h5py.File(f"{folder}/demo-sgd-{name}.h5", "r") as f:
        steps = f["summary"]["steps_to_1e-1"][()].astype(float)
        if f.attrs["run_kind"] != "sgd" or abs(float(m.group(1)) - steps.mean()) > 0.006:
            problems.append(f"training: {name}: steps to 1e-1 printed {m.group(1)}, trace gives {steps.mean()}")
table_text, _, paired_text = out_text.partition("\npaired differences against allreduce")
lines = table_text.splitlines()
# The paired section: per family but the baseline, 2 targets x 3 metrics, each a
# difference with its interval and p-value; gossip on 16 peers needs significantly
# more rounds to 1e-9 than one all-reduce.
paired = [l for l in paired_text.splitlines()[2:] if re.search(r"\d ([a-z_]+) +\d+ .*\[", l)]
for p in families:
    if p == "allreduce":
        continue
    mine = [l for l in paired if l.startswith(("gossip (exp)" if p == "gossip" else p) + " ")]
    if len(mine) != 6 or not all(re.search(r"\[[-+0-9.e]+, [-+0-9.e]+\]\s+[0-9.e+-]+", l) for l in mine):
        problems.append(f"{p}: {len(mine)} paired lines, want 6 with an interval and p: {mine}")
if not any(l.startswith("gossip (exp)") and " 1e-09 rounds " in l and l.rstrip().endswith("significant")
           for l in paired):
    problems.append("the paired table does not call gossip's extra rounds to 1e-9 significant")
for p, engine in families.items():
    label = "gossip (exp)" if p == "gossip" else p
    found = [l for l in lines if re.match(re.escape(label) + r"(\s|$)", l) or re.match(re.escape(p) + r" \(", l)]
    if len(found) != 1:
        problems.append(f"{p}: {len(found)} table lines")
        continue
    m = re.search(rf"\s{engine}\s+16\s+20\s+{num}\s+{num}\s+([0-9]+\.[0-9])\s+{num}\s*$", found[0])
    if not m:
        problems.append(f"{p}: line not '<engine {engine}> 16 20 rounds rounds bytes time': {found[0]!r}")
        continue
    with h5py.File(f"{folder}/demo-{p}.h5", "r") as f:
        if f.attrs["engine"] != engine:
            problems.append(f"{p}: trace engine {f.attrs['engine']}, expected {engine}")
        s = f["summary"]
        for k, t in enumerate(("1e-4", "1e-9")):
            if not s[f"reached_{t}"][()].all():
                problems.append(f"{p}: not every trial reached {t} at 16 peers")
            r = s[f"rounds_to_{t}"][()].astype(float)
            want = (r.mean(), r.std(ddof=1) / math.sqrt(r.size) if r.size > 1 else math.nan)
            have = tuple(math.nan if g == "–" else float(g) for g in (m.group(1 + 2 * k), m.group(2 + 2 * k)))
            if any(not (abs(h - w) <= 0.006 or (math.isnan(h) and math.isnan(w))) for h, w in zip(have, want)):
                problems.append(f"{p}: rounds to {t} printed {have}, trace gives {want}")
        b = (s["bytes_sent"][()] / f.attrs["n_peers"]).mean()
        if not (b > 0 and abs(float(m.group(5)) - b) <= 0.051):
            problems.append(f"{p}: bytes/peer printed {m.group(5)}, trace gives {b}")
for note in ("time on sequential: ", "swarm's round", "speed of swarm: 20 trials on the sequential engine in "):
    if not any(l.startswith(note) for l in lines):
        problems.append(f"no note line starting {note!r}")
if open(f"{folder}/demo.h5", "rb").read() != open(f"{folder}/demo-allreduce.h5", "rb").read():
    problems.append("demo.h5 is not a copy of the allreduce trace")
if open(f"{folder}/demo.png", "rb").read(8) != b"\x89PNG\r\n\x1a\n":
    problems.append("demo.png is not a PNG")
print("\n".join(problems) if problems else f"{len(families)} families in the table, each with its trace's numbers, "
      f"{len(paired)} paired lines, and {len(methods)} training methods")
sys.exit(1 if problems else 0)
PY
) && ok "$report" || bad_with_report "the demo's table:" "$report"
finish
