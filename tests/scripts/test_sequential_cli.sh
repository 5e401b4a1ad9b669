#!/usr/bin/env bash
# averaging_bench --engine sequential as a user meets it: a run with no MPI
# launcher; refusals that are one line and exit 2 with nothing
# written; the same trace whatever --threads; SIGTERM mid-run (exit 143, a valid
# trace marked incomplete whose only cut-short trial is the last); a run of
# 2^20 peers.
#
#   tests/scripts/test_sequential_cli.sh BINARY      (build/apps/averaging_bench)
source "$(dirname "$0")/common.sh"

need_args 1 $# BINARY
program_arg BIN "$1" "Open MPI build's averaging_bench"

# One line on stderr naming FLAG, exit 2, no trace.
refused() {
  local flag=$1 rc=0
  shift
  timeout 60 "$BIN" --out "$SCRATCH/refused.h5" "$@" >"$SCRATCH/out" 2>"$SCRATCH/err" || rc=$?
  local lines
  lines=$(grep -c . "$SCRATCH/err" || true)
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "error: $flag" "$SCRATCH/err" && [ ! -e "$SCRATCH/refused.h5" ]; then
    ok "refused $*: $(cat "$SCRATCH/err")"
  else
    bad_with_report "$* should be refused with one line naming $flag and exit 2 (exit $rc, $lines lines):" \
      "$(cat "$SCRATCH/err")"
  fi
}

refused "--peers: required" --engine sequential
refused "--round-timeout" --engine sequential --peers 16 --round-timeout 10
# A typo gets the name it was probably meant to be.
refused "--protocl: unknown option (did you mean '--protocol'?)$" --engine sequential --peers 4 --protocl moshpit
refused "--protocol: 'mosphit' is not one of {.*} (did you mean 'moshpit'?)$" --engine sequential --peers 4 --protocol mosphit
refused "--topology: 'rng' is not one of .* (did you mean 'ring'?)$" --engine sequential --peers 4 --protocol gossip --topology rng
refused "--stop-at-target: a switch, which takes no value ('true' follows it)" --engine sequential --peers 4 --stop-at-target true
refused "--peers: applies" --peers 16
# The estimate's platform: sequential only (SMPI's comes from its platform file), > 0.
refused "--link-bandwidth: describes a simulated platform" --link-bandwidth 1e6
refused "--backbone-bandwidth: 0 is not a number > 0" --engine sequential --peers 16 --backbone-bandwidth 0
refused "--link-latency: 'soon' is not a number > 0" --engine sequential --peers 16 --link-latency soon
refused "--backbone-latency: inf is not a number > 0" --engine sequential --peers 16 --backbone-latency inf
refused "--host-speed: -1 is not a number > 0" --engine sequential --peers 16 --host-speed -1
refused "--host-speed: describes a simulated platform" --host-speed 2e9
# avbench platform's kinds it models; lognormal spreads in [0, 10]; links spread on cloud only.
refused "--platform: 'fat'" --engine sequential --peers 16 --platform fat
refused "--regions: 17 is not an integer in \[2, --peers\]" --engine sequential --peers 16 --platform geo --regions 17
refused "--regions: 1 is not an integer in \[2, --peers\]" --engine sequential --peers 16 --platform geo --regions 1
refused "--regions: applies to --platform geo only" --engine sequential --peers 16 --regions 4
refused "--wan-latency: applies to --platform geo only" --engine sequential --peers 16 --platform cloud --wan-latency 0.1
refused "--wan-bandwidth: 0 is not a number > 0" --engine sequential --peers 16 --platform geo --wan-bandwidth 0
refused "--speed-sigma: applies to --platform cluster or cloud" --engine sequential --peers 16 --platform geo --speed-sigma 0.5
refused "--regions: describes a simulated platform" --regions 4
refused "--wan-latency: describes a simulated platform" --wan-latency 0.1
refused "--platform: describes a simulated platform" --platform cloud
refused "--speed-sigma: 11 is not a number in \[0, 10\]" --engine sequential --peers 16 --speed-sigma 11
refused "--bw-sigma: applies to --platform cloud only" --engine sequential --peers 16 --bw-sigma 0.5
refused "--speed-seed" --engine sequential --peers 16 --platform cloud --speed-seed -1
refused "--engine: 'serial'" --engine serial --peers 16
refused "--peers" --engine sequential --peers 0
# No communicators in one process; the group protocols' sequential forms sum as the butterfly does.
refused "--groups comm: --engine sequential" --engine sequential --peers 16 --protocol moshpit --groups comm
refused "--groups comm: --engine sequential" --engine sequential --peers 16 --protocol allreduce --groups comm \
  --collective mpi
refused "--collective ring: --engine sequential" --engine sequential --peers 16 --protocol random-groups \
  --collective ring

# No launcher: the run starts no MPI and writes a valid trace.
common=(--engine sequential --peers 300 --protocol moshpit --fail-rate 0.05 --detection-timeout 0.5 --dim 3 --rounds 12
  --trials 7 --seed 5)
if timeout 60 "$BIN" "${common[@]}" --threads 1 --out "$SCRATCH/one.h5" --quiet >"$SCRATCH/one.log" 2>&1; then
  check_trace "$SCRATCH/one.h5" --peers 300 --trials 7 --complete 1 --rounds 12
else
  bad_with_report "a sequential run failed:" "$(cat "$SCRATCH/one.log")"
fi
timeout 60 "$BIN" "${common[@]}" --threads 3 --out "$SCRATCH/three.h5" --quiet >/dev/null 2>&1 ||
  bad "the run on 3 threads failed"
if report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/one.h5" "$SCRATCH/three.h5" "$AVB_TESTS_DIR" 2>&1 <<'PY'
import sys
import h5py
from bitwise import same
with h5py.File(sys.argv[1]) as a, h5py.File(sys.argv[2]) as b:
    # Every /trials dataset (each 2-D column holds all trials) and the targets.
    diff = [f"trials/{c}" for c in a["trials"] if c not in b["trials"] or not same(a["trials"][c][()], b["trials"][c][()])]
    diff += [] if same(a["summary/targets"][()], b["summary/targets"][()]) else ["summary/targets"]
    assert a.attrs["engine"] == "sequential" and a.attrs["time_model"] == "alpha-beta estimate", dict(a.attrs)
print("differ: " + ", ".join(diff) if diff else "every column of 7 trials has the same bits")
sys.exit(1 if diff else 0)
PY
); then ok "--threads 1 and 3: $report"; else bad_with_report "--threads 1 and 3 differ:" "$report"; fi

# Platform files (docs/simulation.md): avbench platform's cloud and cluster files read
# back as the kinds they were written from, to the bit (values, counters and time),
# and what the model cannot describe refused in one line.
plat=$SCRATCH/platforms
"$AVB_REPO/scripts/avbench" platform 64 "$plat" --kind cloud --seed 3 >/dev/null
"$AVB_REPO/scripts/avbench" platform 64 "$plat" >/dev/null
same_platform() {
  local file=$1
  shift
  local run=(--engine sequential --peers 64 --protocol random-groups --group-size 8 --compute-flops 1e7 --dim 100
             --straggler-sigma 0.5 --wait quorum --rounds 6 --trials 2 --quiet)
  if timeout 60 "$BIN" "${run[@]}" "$@" --out "$SCRATCH/kind.h5" >/dev/null 2>&1 &&
     timeout 60 "$BIN" "${run[@]}" --platform "$file" --out "$SCRATCH/file.h5" >/dev/null 2>&1 &&
     report=$("$AVB_PYTHON" "$AVB_TESTS_DIR/compare_sequential.py" "$SCRATCH/file.h5" "$SCRATCH/kind.h5" \
              --time-within 1e-12 2>&1); then
    ok "--platform $(basename "$file") is $*: $report"
  else
    bad_with_report "--platform $(basename "$file") differs from $*:" "${report:-a run failed}"
  fi
  rm -f "$SCRATCH/kind.h5" "$SCRATCH/file.h5"
}
same_platform "$plat/cloud-64-keyed-seed-3.xml" --platform cloud --speed-seed 3
same_platform "$plat/cluster-64.xml" --platform cluster
# Regions: avbench platform's geo file is --platform geo to the bit; a file of unequal
# regions (tests/platforms, the engines' agreement in smpi_time_estimate) runs.
"$AVB_REPO/scripts/avbench" platform 64 "$plat" --kind geo --regions 3 >/dev/null
same_platform "$plat/geo-64-regions-3.xml" --platform geo --regions 3
three=$AVB_REPO/tests/platforms/three-regions.xml
if out=$(timeout 60 "$BIN" --engine sequential --peers 64 --platform "$three" --protocol moshpit --grid 8x8 --dim 1000 \
           --rounds 2 --quiet 2>&1) && grep -q "regions=3" <<<"$out"; then
  ok "--platform three-regions.xml: 3 regions read"
else
  bad_with_report "--platform three-regions.xml:" "$out"
fi
# What the regions' model lacks: a pair without a route, a route through a host's
# link, a zone inside a cluster's zone.
sed '/<zoneRoute src="west" dst="edge"/d' "$three" >"$SCRATCH/unrouted.xml"
refused '--platform: .*unrouted.xml:[0-9]*: no <zoneRoute> between "west" and "edge"' --engine sequential --peers 64 \
  --platform "$SCRATCH/unrouted.xml"
sed 's/<link_ctn id="core"\/>/<link_ctn id="edge-0_link"\/>/' "$three" >"$SCRATCH/host-route.xml"
refused '--platform: .*host-route.xml:[0-9]*: <link_ctn> id="edge-0_link": not a SHARED <link>' --engine sequential \
  --peers 64 --platform "$SCRATCH/host-route.xml"
sed 's/<router id="edge-gw"\/>/<zone id="deep" routing="Cluster"><\/zone>/' "$three" >"$SCRATCH/deep.xml"
refused '--platform: .*deep.xml:[0-9]*: a <zone> of routing "Cluster" inside one of "Cluster"' --engine sequential \
  --peers 64 --platform "$SCRATCH/deep.xml"
refused "--platform: .*three-regions.xml: 64 hosts for 65 peers" --engine sequential --peers 65 --platform "$three"
# A route for each pair of regions: at most 1024 regions that hold peers.
{
  printf '<?xml version="1.0"?>\n<platform version="4.1"><zone id="world" routing="Full">\n'
  for k in $(seq 0 1024); do printf '<cluster id="c%d" prefix="c%d-" suffix="" radical="0" speed="1Gf" bw="1GBps" lat="1us"/>\n' "$k" "$k"; done
  printf '</zone></platform>\n'
} >"$SCRATCH/many.xml"
refused "--platform: .*many.xml:[0-9]*: 1025 clusters hold peers: the sequential engine models at most 1024" \
  --engine sequential --peers 1025 --platform "$SCRATCH/many.xml"
printf '<?xml version="1.0"?>\n<platform version="4.1">\n  <cluster id="c" prefix="h" suffix="" radical="0-7"\n' >"$SCRATCH/broken.xml"
printf '<?xml version="1.0"?>\n<platform version="4.1"><zone id="z" routing="Full">\n<router id="r"/>\n</zone></platform>\n' \
  >"$SCRATCH/router.xml"
refused "--platform: .*broken.xml:3: not well-formed XML" --engine sequential --peers 8 --platform "$SCRATCH/broken.xml"
refused "--platform: .*router.xml:3: <router>" --engine sequential --peers 8 --platform "$SCRATCH/router.xml"
sed 's/speed="1Gf"/speed="0Gf"/' "$plat/cluster-64.xml" >"$SCRATCH/zero.xml"
refused '--platform: .*zero.xml:[0-9]*: <cluster> speed: "0Gf" is not a number > 0' --engine sequential --peers 8 \
  --platform "$SCRATCH/zero.xml"
refused "--platform: .*cluster-64.xml: 64 hosts for 65 peers" --engine sequential --peers 65 --platform "$plat/cluster-64.xml"
refused "--speed-sigma: the platform file" --engine sequential --peers 8 --platform "$plat/cluster-64.xml" --speed-sigma 1
refused "--platform: 'mars' is not one of" --engine sequential --peers 8 --platform mars

# SIGTERM mid-run: trials run two at a time, the first one cut is the last written.
timeout 120 "$BIN" --engine sequential --peers 4096 --protocol gossip --rounds 100000 --trials 20 --threads 2 \
  --out "$SCRATCH/term.h5" --quiet >"$SCRATCH/term.log" 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
if [ "$rc" -eq 143 ]; then ok "SIGTERM: exit 143"; else bad_with_report "SIGTERM: exit $rc, expected 143:" "$(cat "$SCRATCH/term.log")"; fi
check_trace "$SCRATCH/term.h5" --peers 4096 --complete 0

# Settings that cannot do what they ask get one warning before the run (1024 peers):
# allreduce's abort at --fail-rate 0.01 ((1 - 0.01)^1024 = 3.4e-5 a round), and
# gossip on the ring, whose predicted variance after 100 rounds is checked against
# numpy's eigenvalues of the ring's mixing matrix. Their remedies (gossip's default graph
# among them) warn of nothing.
warnings_of() { timeout 60 "$BIN" --engine sequential --peers 1024 --trials 1 --rounds 100 --quiet "$@" 2>&1 >/dev/null |
  grep '^averaging_bench: warning: ' || true; }
w=$(warnings_of --protocol allreduce --fail-rate 0.01 --detection-timeout 0.1)
if [ "$(grep -c . <<<"$w")" -eq 1 ] && grep -q "abort.*= 3.4e-05, so any of the 100 rounds does with probability 0.0034" <<<"$w"; then
  ok "allreduce, abort, p = 0.01: $w"
else bad "allreduce, abort, p = 0.01: want one warning with (1 - p)^N = 3.4e-05, got: $w"; fi
w=$(warnings_of --protocol gossip --topology ring)
want=$("$AVB_PYTHON" -c '
import numpy as np
n, r = 1024, 100
w = np.zeros((n, n))
for i in range(n):
    for j in (i - 1, i, i + 1):
        w[i, j % n] = 1 / 3
lam = np.sort(np.abs(np.linalg.eigvalsh(w)))[:-1]
print(f"{np.sum(lam ** (2 * r)) / (n - 1):.2g}")')
if [ "$(grep -c . <<<"$w")" -eq 1 ] && grep -q -- "--topology ring: .* to about $want in 100 rounds" <<<"$w"; then
  ok "gossip on the ring: numpy predicts $want; $w"
else bad "gossip on the ring: want one warning with numpy's $want, got: $w"; fi
# Failures that cost no time: the default detection timeout (0) with failures, where
# a peer may wait on a failed partner (not swarm's or random-groups' survivors: their
# draws see the failures).
w=$(warnings_of --protocol gossip --topology exp --fail-rate 0.01)
if [ "$(grep -c . <<<"$w")" -eq 1 ] && grep -q -- "--detection-timeout: 0 s, so a failed peer costs no time" <<<"$w"; then
  ok "failures with --detection-timeout 0: $w"
else bad "failures with --detection-timeout 0: want one warning that they cost no time, got: $w"; fi
for remedy in "--protocol allreduce --fail-rate 0.01 --on-failure survivors --detection-timeout 0.1" \
  "--protocol gossip" "--protocol gossip --topology exp --fail-rate 0.01 --detection-timeout 0.1" \
  "--protocol swarm --fail-rate 0.01" "--protocol random-groups --fail-rate 0.01"; do
  # shellcheck disable=SC2086  # the remedy's flags
  w=$(warnings_of $remedy)
  if [ -z "$w" ]; then ok "$remedy: no warning"; else bad "$remedy: unexpected warning: $w"; fi
done

# Progress within a trial: one long trial reports the rounds it has run as it goes
# (before, nothing but 0% until the trial ended), climbing, never backwards.
timeout 120 "$BIN" --engine sequential --peers 131072 --protocol gossip --topology exp --rounds 30 --trials 1 \
  --progress-every 0 2>"$SCRATCH/progress.err" >/dev/null || true
mid=$(grep -cE '^\[[0-9]+s\] +[0-9.]+% ([1-9]|[12][0-9]) of 30 rounds run, ETA' "$SCRATCH/progress.err" || true)
shares=$(sed -n 's/^\[[0-9]*s\] *\([0-9.]*\)%.*/\1/p' "$SCRATCH/progress.err")
if [ "$mid" -ge 1 ] && [ "$(tail -1 <<<"$shares")" = 100.0 ] && sort -n -c <<<"$shares" 2>/dev/null; then
  ok "progress within one trial: $mid line(s) between 0 and 30 rounds, climbing to 100%"
else
  bad_with_report "progress within one trial: $mid mid-trial line(s):" "$(head -5 "$SCRATCH/progress.err")"
fi

# 2^20 peers, a few rounds: a million peers in one process.
if timeout 120 "$BIN" --engine sequential --peers 1048576 --protocol moshpit --rounds 3 --trials 1 \
    --out "$SCRATCH/million.h5" --quiet >"$SCRATCH/million.log" 2>&1; then
  check_trace "$SCRATCH/million.h5" --peers 1048576 --trials 1 --complete 1 --rounds 3
else
  bad_with_report "2^20 peers failed:" "$(cat "$SCRATCH/million.log")"
fi
finish
