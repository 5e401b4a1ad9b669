#!/usr/bin/env bash
# scripts/avbench platform and scripts/smpirun.sh: the three kinds of simulated platform.
#
#   tests/scripts/test_platforms.sh AVERAGING_BENCH   (built in build-smpi/)
#
# 0. SimGrid accepts every platform avbench platform writes: cluster (SimGrid's <cluster>
#    element, and a zone of hosts when --speed-sigma is set), cloud, and geo with 1,
#    2, 3, 4, 8 and 16 regions (16 regions of one host each). Each file is loaded by
#    simgrid-graphicator (libsimgrid-dev), which parses it with SimGrid's own XML
#    parser, generated from simgrid.dtd: it refuses, naming the line, any element
#    the DTD does not allow where it stands (as a <link> after a <zoneRoute>, which
#    geo with 3 or more regions used to write), then builds every route to draw the
#    graph. (Debian ships no simgrid.dtd file for xmllint; the parser is its
#    executable form.) Then geo runs: averaging_bench, all-reduce, on 12 peers in 3
#    and in 4 regions, completes with a whole trace, and every round crosses a 40 ms
#    WAN link at least once (each trial's simulated time >= rounds x 40 ms).
# 1. Files: N hosts named peer-0 .. peer-N-1 in rank order; cloud is seeded (same
#    seed, same file; another seed, another file) and heterogeneous in speed and
#    bandwidth; geo splits the ranks into contiguous regions.
# 2. Simulated time against the alpha model: one all-reduce of one double between two
#    peers is two messages each way of latency 2*lat + bb_lat = 0.6 ms on the
#    cluster (1.2 ms), plus the 40 ms WAN link between two regions (81.2 ms).
# 3. Bad settings: one line naming the option, non-zero exit.
# 4. Stragglers: 16 peers, --compute-flops 1e7 (10 ms a round on a 1 Gflop/s host),
#    3 rounds of all-reduce. With --stragglers 0.25 --straggler-slowdown 4 a trial
#    that has a straggler takes exactly 3 x 30 ms longer than without (the all-reduce
#    waits for the slowest), one without takes the same time; with 16 peers nearly
#    every trial has one (P(none) = 0.75^16 = 1%), so some trial must show it.
# 5. Detection timeout: all-reduce on 8 peers at failure rate 0.3 with
#    --detection-timeout 0.05: every round with a failure (and someone alive) takes
#    exactly 50 ms longer than without, since every alive peer waits out the
#    timeout; detection_time, the most any one peer was charged, is a whole number
#    of timeouts, at most that total.
# 6. smpirun.sh --eager-limit: Moshpit on 64 peers, --dim 1000, with smpirun.sh's
#    default (0: every message completes only once received) and with SimGrid's
#    (--eager-limit 65536: messages below 64 KiB eager): every value column of the
#    trace is bit for bit the same and simulated time within 2% (docs/performance.md,
#    "Scale"). A limit that is not a number is refused with one line.
source "$(dirname "$0")/common.sh"

[ $# -eq 1 ] || die "usage: test_platforms.sh AVERAGING_BENCH"
BIN=$(realpath "$1")
GEN=("$AVB_TOOLS" platform)
export AVB_PLATFORM_DIR=$SCRATCH/platforms

# 0. Every platform parses; geo runs on 3 and 4 regions.
command -v simgrid-graphicator >/dev/null || die "simgrid-graphicator not found (Debian package libsimgrid-dev)"
parses() {  # parses REGIONS PLATFORM.PY-OPTIONS...: avbench platform writes it for 16 peers, SimGrid loads it
  local regions=$1 files xml rc=0 log wan_routes
  shift
  if ! files=$(timeout 60 "${GEN[@]}" 16 "$SCRATCH/parse" "$@" 2>&1); then
    bad "avbench platform 16 $*: $files"
    return
  fi
  xml=$(head -1 <<<"$files")
  log=$(cd "$SCRATCH" && timeout 60 simgrid-graphicator "$xml" "$SCRATCH/parse.dot" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] || ! grep -q -- '"peer-15" -- ' "$SCRATCH/parse.dot"; then
    bad "SimGrid refuses avbench platform 16 $* (exit $rc): $(grep -m1 -i 'error' <<<"$log" || head -1 <<<"$log")"
    return
  fi
  # Geo: each pair of regions joined through its WAN link, gateway to gateway.
  wan_routes=$(grep -Ec '^ *"region-[0-9]+-gateway" -- "wan-[0-9]+-[0-9]+";$' "$SCRATCH/parse.dot" || true)
  if [ "$wan_routes" -eq $((regions * (regions - 1) / 2)) ]; then
    ok "SimGrid loads $(basename "$xml"): every route built, $wan_routes WAN link(s) between gateways"
  else
    bad "avbench platform 16 $*: $wan_routes WAN routes in SimGrid's graph, want $((regions * (regions - 1) / 2))"
  fi
}
parses 0
parses 0 --speed-sigma 0.5
parses 0 --kind cloud
parses 0 --kind cloud --speed-sigma 0 --bw-sigma 0
for r in 1 2 3 4 8 16; do parses "$r" --kind geo --regions "$r"; done
parses 3 --kind geo --regions 3 --wan-lat 5ms --wan-bw 100MBps

for r in 3 4; do
  timeout -k 10 120 "$AVB_SMPIRUN" -n 12 --kind geo --regions "$r" -- "$BIN" --protocol allreduce --dim 4 --rounds 3 \
    --trials 2 --out "$SCRATCH/geo-$r.h5" --quiet >"$SCRATCH/geo-$r.log" 2>&1 </dev/null ||
    { sed 's/^/    /' "$SCRATCH/geo-$r.log" >&2; bad "geo, $r regions: the run failed"; continue; }
  check_trace "$SCRATCH/geo-$r.h5" --peers 12 --trials 2 --complete 1 --rounds 3
  report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/geo-$r.h5" <<'PY'
import sys
from avbench.trials import all_trial_columns
times = [float(t["time"][-1]) for t in all_trial_columns(sys.argv[1], ["time"])]
if not all(t >= 3 * 0.04 for t in times):
    sys.exit(f"simulated time per trial {times} s: under 3 rounds x 40 ms, no WAN link crossed")
print("simulated time per trial " + ", ".join(f"{t:.4f}" for t in times) + " s (>= 3 x 40 ms WAN)")
PY
  ) && ok "geo, $r regions: $report" || bad "geo, $r regions: $report"
done

# 1. Files.
report=$(timeout 60 "$AVB_PYTHON" - "$AVB_TOOLS" "$SCRATCH/files" <<'PY'
import subprocess, sys
import xml.etree.ElementTree as ET

gen, out = sys.argv[1], sys.argv[2]  # scripts/avbench

def make(*args):
    xml, hosts = subprocess.run([gen, "platform", *args], check=True, capture_output=True, text=True).stdout.split()
    return xml, open(hosts).read().split()

def hosts_of(xml):
    return {h.get("id"): h for h in ET.parse(xml).getroot().iter("host")}

problems = []
xml, order = make("16", out, "--kind", "cloud", "--seed", "3")
if order != [f"peer-{i}" for i in range(16)]:
    problems.append(f"cloud hostfile order {order}")
hosts = hosts_of(xml)
speeds = {h.get("speed") for h in hosts.values()}
links = {l.get("bandwidth") for l in ET.parse(xml).getroot().iter("link")}
if len(hosts) != 16 or len(speeds) < 16 or len(links) < 16:
    problems.append(f"cloud: {len(hosts)} hosts, {len(speeds)} speeds, {len(links)} bandwidths (want 16 distinct each)")
again, _ = make("16", out + "/again", "--kind", "cloud", "--seed", "3")
other, _ = make("16", out + "/other", "--kind", "cloud", "--seed", "4")
if open(xml).read() != open(again).read():
    problems.append("cloud: the same seed gave another platform")
if open(xml).read() == open(other).read():
    problems.append("cloud: another seed gave the same platform")
# The draws are the keyed stream the sequential engine draws (--platform cloud):
# the same numbers tests/unit/test_sequential.cpp (Hosts.*) pins on the C++ side.
four, _ = make("4", out + "/four", "--kind", "cloud")
root = ET.parse(four).getroot()
pinned = ([h.get("speed") for h in root.iter("host")][:2], [l.get("bandwidth") for l in root.iter("link")][::3][:2])
if pinned != (["890242075.6668112f", "396549894.5493077f"], ["133287540.6445245Bps", "166803629.38763258Bps"]):
    problems.append(f"cloud: hosts 0, 1 and links 0, 3 are {pinned}, not the keyed draws the sequential engine makes")
geo, order = make("10", out, "--kind", "geo", "--regions", "3")
clusters = [(c.get("id"), c.get("radical")) for c in ET.parse(geo).getroot().iter("cluster")]
if clusters != [("region-0", "0-2"), ("region-1", "3-5"), ("region-2", "6-9")] or len(order) != 10:
    problems.append(f"geo regions {clusters}")
if problems:
    sys.exit("; ".join(problems))
print("cloud seeded and heterogeneous (16 speeds, 16 bandwidths); geo regions", clusters)
PY
) && ok "platform files: $report" || bad "platform files: $report"

# 2. Simulated time of a two-peer all-reduce.
exchange() {  # exchange NAME SMPIRUN-OPTIONS...: prints the trial's simulated time
  local name=$1
  shift
  timeout -k 10 120 "$AVB_SMPIRUN" -n 2 "$@" -- "$BIN" --protocol allreduce --dim 1 --rounds 1 --trials 1 \
    --out "$SCRATCH/$name.h5" --quiet >"$SCRATCH/$name.log" 2>&1 </dev/null ||
    { sed 's/^/    /' "$SCRATCH/$name.log" >&2; die "$name: the run failed"; }
  timeout 60 "$AVB_PYTHON" -c 'import sys; from avbench.trials import trial_columns; print(trial_columns(sys.argv[1], 0, ["time"])["time"][-1])' "$SCRATCH/$name.h5"
}
near() {  # near NAME GOT WANT TOLERANCE
  if "$AVB_PYTHON" -c 'import sys; g, w, t = map(float, sys.argv[1:]); sys.exit(abs(g - w) > t * w)' "$2" "$3" "$4"; then
    ok "$1: simulated time $2 s (alpha model $3 s)"
  else
    bad "$1: simulated time $2 s, alpha model $3 s (tolerance $4)"
  fi
}
near cluster "$(exchange cluster)" 0.0012 0.05
near cloud "$(exchange cloud --kind cloud)" 0.0012 0.05  # latency is not drawn, only bandwidth
near geo "$(exchange geo --kind geo --regions 2)" 0.0812 0.05

# 3. Bad settings.
refused() {  # refused WANT ARGS...: avbench platform ARGS fails with one line containing WANT
  local out rc=0
  out=$(timeout 60 "${GEN[@]}" 8 "$SCRATCH/bad" "${@:2}" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"$1"* ]]; then
    ok "refused ${*:2}: $out"
  else
    bad "avbench platform ${*:2}: exit $rc, output '$out' (want one line with '$1')"
  fi
}
refused "--regions" --kind geo --regions 0
refused "--bw-sigma" --bw-sigma 0.5
refused "--speed-sigma" --speed-sigma -1
refused "--bw" --bw fast
refused "--wan-lat" --kind geo --wan-lat 40

# 4. Stragglers.
for s in 0 0.25; do
  timeout -k 10 120 "$AVB_SMPIRUN" -n 16 "$BIN" --protocol allreduce --compute-flops 1e7 --stragglers "$s" \
    --rounds 3 --trials 6 --out "$SCRATCH/stragglers-$s.h5" --quiet >"$SCRATCH/stragglers-$s.log" 2>&1 </dev/null ||
    { sed 's/^/    /' "$SCRATCH/stragglers-$s.log" >&2; die "stragglers $s: the run failed"; }
done
report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/stragglers-0.h5" "$SCRATCH/stragglers-0.25.h5" <<'PY'
import sys
import h5py
from avbench.trials import all_trial_columns
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
ta, tb = all_trial_columns(a, ["time"]), all_trial_columns(b, ["time"])
if len(ta) != len(tb):
    sys.exit(f"{len(ta)} trials vs {len(tb)}")
extra = [float(y["time"][-1] - x["time"][-1]) for x, y in zip(ta, tb)]
slow = [abs(e - 0.09) < 1e-9 for e in extra]
if not all(s or abs(e) < 1e-9 for s, e in zip(slow, extra)) or not any(slow):
    sys.exit(f"extra simulated time per trial {extra} (expected 0 or 0.09 s, some 0.09)")
if b["config"].attrs["stragglers"] != "0.25" or b["config"].attrs["straggler-slowdown"] != "4":
    sys.exit("/config does not record the stragglers")
print(f"{sum(slow)} of {len(slow)} trials with a straggler took 90 ms longer, the others the same")
PY
) && ok "stragglers: $report" || bad "stragglers: $report"

# 5. Detection timeout.
for T in 0 0.05; do
  timeout -k 10 120 "$AVB_SMPIRUN" -n 8 "$BIN" --protocol allreduce --fail-rate 0.3 --detection-timeout "$T" \
    --rounds 6 --trials 3 --out "$SCRATCH/detect-$T.h5" --quiet >"$SCRATCH/detect-$T.log" 2>&1 </dev/null ||
    { sed 's/^/    /' "$SCRATCH/detect-$T.log" >&2; die "detection timeout $T: the run failed"; }
  check_trace "$SCRATCH/detect-$T.h5" --peers 8 --trials 3 --complete 1 --rounds 6
done
report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/detect-0.h5" "$SCRATCH/detect-0.05.h5" <<'PY'
import sys
import h5py
import numpy as np
from avbench.trials import all_trial_columns
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
charged = 0
columns_a, columns_b = all_trial_columns(a), all_trial_columns(b)
if len(columns_a) != len(columns_b):
    sys.exit(f"{len(columns_a)} trials vs {len(columns_b)}")
for k, (ta, tb) in enumerate(zip(columns_a, columns_b)):
    alive = tb["alive"][1:]
    waits = (alive < 8) & (alive > 0)
    extra = np.diff(tb["time"]) - np.diff(ta["time"])
    if not np.allclose(extra, 0.05 * waits, rtol=0, atol=1e-9):
        sys.exit(f"trial {k}: extra time per round {extra}, expected 0.05 where a peer failed {waits}")
    d = tb["detection_time"]
    if not (d[-1] <= 0.05 * waits.sum() + 1e-12 and abs(d[-1] / 0.05 - round(d[-1] / 0.05)) < 1e-9):
        sys.exit(f"trial {k}: detection_time {d} against {waits.sum()} rounds with failures")
    if ta["detection_time"][-1] != 0:
        sys.exit("detection_time is not 0 without a timeout")
    charged += int(waits.sum())
if charged == 0:
    sys.exit("no round had a failure: the check proved nothing")
print(f"{charged} rounds with a failure took 50 ms longer each; detection_time consistent")
PY
) && ok "detection timeout: $report" || bad "detection timeout: $report"
# 6. --eager-limit.
for e in default 65536; do
  limit=()
  [ "$e" = default ] || limit=(--eager-limit "$e")
  timeout -k 10 120 "$AVB_SMPIRUN" -n 64 "${limit[@]}" "$BIN" --protocol moshpit --dim 1000 --fail-rate 0.05 \
    --rounds 3 --trials 2 --out "$SCRATCH/eager-$e.h5" --quiet >"$SCRATCH/eager-$e.log" 2>&1 </dev/null ||
    { sed 's/^/    /' "$SCRATCH/eager-$e.log" >&2; die "eager limit $e: the run failed"; }
done
report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/eager-default.h5" "$SCRATCH/eager-65536.h5" "$AVB_REPO/tests/scripts" <<'PY'
import sys
import h5py
from avbench.trials import all_trial_columns, trial_targets
from bitwise import same
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
ratios = []
columns_a, columns_b = all_trial_columns(a), all_trial_columns(b)
if len(columns_a) != len(columns_b):
    sys.exit(f"{len(columns_a)} trials vs {len(columns_b)} with --eager-limit 65536")
if not same(trial_targets(a), trial_targets(b)):
    sys.exit("the targets differ with --eager-limit 65536")
for k, (ta, tb) in enumerate(zip(columns_a, columns_b)):
    for column in ta:
        if column != "time" and not same(ta[column], tb.get(column)):
            sys.exit(f"trial {k}: column {column} differs with --eager-limit 65536")
    ratios.append(float(ta["time"][-1] / tb["time"][-1]))
if not all(abs(r - 1.0) < 0.02 for r in ratios):
    sys.exit(f"simulated time with eager limit 0 over 65536: {ratios} (want within 2%)")
print("values bit for bit equal; simulated time with limit 0 over 65536: " + ", ".join(f"{r:.4f}" for r in ratios))
PY
) && ok "eager limit: $report" || bad "eager limit: $report"
rc=0
out=$(timeout 60 "$AVB_SMPIRUN" -n 2 --eager-limit lots "$BIN" --dim 1 2>&1) || rc=$?
if [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"--eager-limit"* ]]; then
  ok "refused --eager-limit lots: $out"
else
  bad "smpirun.sh --eager-limit lots: exit $rc, output '$out' (want exit 2 and one line naming --eager-limit)"
fi
# 6. One platform, named once: the program's own platform flags (the sequential
#    engine's) make smpirun.sh build the same platform as its --kind and
#    --speed-seed (the same simulated time, bit for bit), and /config records it;
#    the platform given twice, or a platform the flags do not describe (given in a
#    --config file, which smpirun.sh does not read), is one line and exit 2.
run_named() {
  local out=$1
  shift
  timeout -k 10 120 "$AVB_SMPIRUN" "$@" --protocol moshpit --grid 4x4 --dim 1000 --rounds 2 --trials 1 \
    --out "$SCRATCH/$out.h5" --quiet >"$SCRATCH/$out.log" 2>&1 </dev/null
}
if run_named named-flags -n 16 -- "$BIN" --platform cloud --speed-seed 3 &&
   run_named named-kind -n 16 --kind cloud --speed-seed 3 -- "$BIN"; then
  if report=$("$AVB_PYTHON" - "$SCRATCH/named-flags.h5" "$SCRATCH/named-kind.h5" <<'PY' 2>&1
import sys
import h5py
from avbench.trials import trial_columns
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    ta, tb = trial_columns(a, 0, ["time"])["time"], trial_columns(b, 0, ["time"])["time"]
    assert (ta == tb).all(), f"times differ: {ta} vs {tb}"
    config = a["config"].attrs
    assert config["platform"] == "cloud" and config["speed-seed"] == "3", dict(config)
    assert "platform" not in b["config"].attrs, "smpirun.sh's --kind is not the program's to record"
print(f"the same {ta[-1]:.6g} s; /config says platform cloud, speed-seed 3")
PY
  ); then ok "--platform cloud --speed-seed 3 on the program = smpirun.sh --kind cloud --speed-seed 3: $report"
  else bad_with_report "the program's platform flags under SMPI:" "$report"; fi
else
  bad_with_report "a run with the program's platform flags failed:" "$(cat "$SCRATCH"/named-*.log)"
fi
printf 'platform = "cloud"\nspeed-seed = 5\n' >"$SCRATCH/cloud.ini"
for case in "twice|smpirun.sh: error: the platform is given twice|-n 4 --kind cloud -- $BIN --platform cloud" \
            "config|averaging_bench: error: --platform: the simulated hosts are not|-n 4 -- $BIN --config $SCRATCH/cloud.ini"; do
  IFS='|' read -r tag want args <<<"$case"
  rc=0
  # shellcheck disable=SC2086 # the arguments are words
  out=$(timeout -k 10 120 "$AVB_SMPIRUN" $args --rounds 1 --out "$SCRATCH/$tag.h5" 2>&1 >/dev/null </dev/null) || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(grep -c . <<<"$out")" -eq 1 ] && grep -q "^$want" <<<"$out" && [ ! -e "$SCRATCH/$tag.h5" ]; then
    ok "platform $tag: $out"
  else
    bad_with_report "platform $tag: exit $rc (want 2 and one line starting '$want'):" "$out"
  fi
done
finish
