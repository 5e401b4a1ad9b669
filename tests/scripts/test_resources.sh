#!/usr/bin/env bash
# A run's resources are known before it starts, and no output is ever silently
# wrong (docs/reliability.md, "Resources and outputs"): each case is a bug that
# once ended with exit 0 and a wrong or missing result.
#
#   - outputs compared by file identity: --summary through a symlinked folder, a
#     hard link, --out onto the --config file;
#   - the sequential engine's simulated time and bytes counter: runs that would
#     reach inf or wrap 2^64 are refused naming the flag, whatever the protocol;
#   - memory: graphs and protocol state counted (pushsum at 2^20 peers,
#     random-regular:30000), ulimit -v honoured, --dry-run's estimate against the
#     peak memory measured for every protocol of the catalog;
#   - SIGTERM inside one long round (a complete graph), while a random graph of
#     2^22 peers is drawn, among many short traced
#     trials, under churn at 2^20 peers, inside a round simulated flow by flow and
#     during sgd_bench's set-up of a large problem ends the run within a second;
#   - the wall-time estimate counts each trial's trace group (many short trials);
#   - sgd_bench's problem (samples, pooled copy, Newton's Hessian) is in the
#     estimate: refused up front under ulimit -v, estimate against the peak;
#   - --summary keeps file names as text (--out 007).
#
#   tests/scripts/test_resources.sh AVERAGING_BENCH SGD_BENCH [sanitized]   (build/apps/...)
#
# sanitized: the binary is built with ASan, whose shadow memory rules out
# ulimit -v and whose allocator changes the peak memory: those checks are skipped.
source "$(dirname "$0")/common.sh"

need_args 2+ $# AVERAGING_BENCH SGD_BENCH [sanitized]
program_arg BIN "$1" "Open MPI build's averaging_bench"
program_arg SGD "$2" "Open MPI build's sgd_bench"
SANITIZED=${3:-}
cd "$SCRATCH"
SEQ=(--engine sequential)

# One line on stderr naming FLAG (a pattern), exit 2, nothing written
# (PROGRAM=sgd refused ... for sgd_bench).
refused() {
  local flag=$1 rc=0 program=$BIN
  shift
  [ "${PROGRAM:-}" = sgd ] && program=$SGD
  rm -f refused.h5
  local out=(--out refused.h5)
  [[ " $* " == *" --out "* ]] && out=()  # the case names its own
  timeout 60 "$program" "${out[@]}" "$@" >out 2>err || rc=$?
  local lines
  lines=$(grep -c . err || true)
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "error: $flag" err && [ ! -e refused.h5 ] &&
     [ ! -e real/a.h5 ]; then
    ok "refused $*: $(cat err)"
  else
    bad_with_report "$* should be refused with one line naming $flag and exit 2 (exit $rc, $lines lines):" "$(cat err)"
  fi
}

# ---- outputs by identity ---------------------------------------------------------
mkdir real && ln -s real alias
refused "--summary: 'alias/a.h5' is the same file as --out" \
  "${SEQ[@]}" --peers 8 --rounds 3 --trials 1 --out real/a.h5 --summary alias/a.h5 --overwrite
[ ! -e real/a.h5 ] && ok "nothing written at real/a.h5" || bad "real/a.h5 was written"
printf 'rounds = 3\n' >run.ini
cp run.ini keep.ini
refused "--out: './alias/../run.ini' is the same file as --config" \
  "${SEQ[@]}" --peers 8 --config run.ini --out ./alias/../run.ini --overwrite
cmp -s run.ini keep.ini && ok "the --config file is untouched" || bad "the --config file was replaced"
timeout 60 "$BIN" "${SEQ[@]}" --peers 8 --rounds 3 --trials 1 --out first.h5 --quiet >/dev/null
ln first.h5 hard.h5
refused "--summary: 'hard.h5' is the same file as --out" \
  "${SEQ[@]}" --peers 8 --rounds 3 --trials 1 --out first.h5 --summary hard.h5 --overwrite
check_trace first.h5

# ---- counters and time that cannot be represented ----------------------------------
for flag in "--link-latency 1e308" "--backbone-latency 1e308" "--link-bandwidth 1e-300" "--backbone-bandwidth 1e-300"; do
  # shellcheck disable=SC2086
  refused "${flag%% *}: " "${SEQ[@]}" --peers 8 --rounds 3 $flag
done
refused "--detection-timeout: 1e+308 would take" "${SEQ[@]}" --peers 64 --fail-rate 0.1 --detection-timeout 1e308
refused "--rounds: 50 would take the bytes_sent counter" \
  "${SEQ[@]}" --peers 16777216 --dim 1 --model-dim 134217728 --protocol allreduce --collective doubling --rounds 50
refused "--model-dim: one round would send" \
  "${SEQ[@]}" --peers 16777216 --model-dim 134217728 --protocol gossip --topology complete --rounds 1
# Every protocol of the catalog on the sequential engine: the time bound holds.
protocols=$("$BIN" --help | sed -n 's/.*--protocol {\([^}]*\)}.*/\1/p' | tr ',' ' ')
[ -n "$protocols" ] || die "no protocol list in --help"
for p in $protocols; do
  refused "--link-latency: " "${SEQ[@]}" --peers 16 --protocol "$p" --link-latency 1e300 --rounds 100
done

# ---- memory -----------------------------------------------------------------------
refused "--topology: the run needs about" "${SEQ[@]}" --peers 65536 --protocol gossip --topology random-regular:30000
# Checking the weights of a complete graph of 13 million peers once walked N^2
# edges (a --dry-run still running at 60 s, deaf to SIGTERM).
refused "--topology: the run needs about" "${SEQ[@]}" --peers 13369780 --protocol choco --topology complete \
  --weights metropolis --dim 5 --rounds 1
# --dry-run runs nothing and writes nothing.
timeout 60 "$BIN" "${SEQ[@]}" --peers 1024 --protocol moshpit --trials 100 --out dry.h5 --dry-run >dry 2>err
if [ ! -e dry.h5 ] && [ "$(grep -c '^# estimate: ' dry)" -eq 4 ] && [ ! -s err ]; then
  ok "--dry-run: four estimate lines, no trace"
else
  bad_with_report "--dry-run printed or wrote something else:" "$(cat dry err; ls)"
fi

# covers_peak LABEL PROGRAM ARGS...: --dry-run's memory estimate covers the peak
# resident memory GNU time measures (less the program itself: 14 MB at one
# peer) and stays within 4x of it.
covers_peak() {
  local label=$1 program=$2 est peak verdict
  shift 2
  est=$(timeout 60 "$program" "$@" --dry-run | sed -n 's/^# estimate: memory: about \([0-9.e+-]*\) GB.*/\1/p')
  peak=$( { /usr/bin/time -f '%M' timeout 120 "$program" "$@" --quiet >/dev/null; } 2>&1 | tail -1)
  verdict=$(awk -v e="$est" -v k="$peak" 'BEGIN {
    used = k * 1024 - 15e6;
    if (used <= e * 1e9 && e * 1e9 <= 4 * used + 32e6) print "ok"; else print "off" }')
  if [ "$verdict" = ok ]; then
    ok "$label: estimate $est GB, peak $((peak / 1024)) MB"
  else
    bad "$label: estimate $est GB against a measured peak of $((peak / 1024)) MB (want peak <= estimate <= 4x peak)"
  fi
}

if [ -z "$SANITIZED" ]; then
  # pushsum's graph and state at 2^20 peers: counted, and under a 1 GB address
  # space limit refused before anything is allocated (not std::bad_alloc).
  # (A subshell's verdicts are its own: its exit status carries them back.)
  ( ulimit -v 1000000; refused "--dim: the run needs about" "${SEQ[@]}" --peers 1048576 --protocol pushsum --dim 64
    exit "$AVB_FAILURES" ) || AVB_FAILURES=$((AVB_FAILURES + 1))
  # Checking the options builds nothing that grows with N: a computed graph at 14
  # million peers under 320 MB (the check once allocated a list per peer: exit 1,
  # std::bad_alloc, even for --dry-run).
  rc=0
  ( ulimit -v 324710; timeout 60 "$BIN" "${SEQ[@]}" --peers 13956791 --protocol pairwise --topology one-peer-exp \
      --rounds 1 --dry-run >dry 2>err ) || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(grep -c '^# estimate: ' dry)" -eq 4 ] && [ "$(grep -c . err)" -eq 1 ] &&
     grep -q "error: --peers: the run needs about" err; then
    ok "one-peer-exp at 13956791 peers under ulimit -v 324710: estimate and refusal"
  else
    bad_with_report "one-peer-exp at 13956791 peers under ulimit -v (exit $rc):" "$(cat dry err)"
  fi
  rc=0
  ( ulimit -v 1000000; timeout 60 "$BIN" "${SEQ[@]}" --peers 1048576 --protocol pushsum --dim 64 --dry-run >dry 2>err ) || rc=$?
  if [ "$rc" -eq 2 ] && grep -q "^# estimate: memory: about" dry && grep -q "error: --dim" err; then
    ok "--dry-run under ulimit -v prints the estimate and the refusal, exit 2"
  else
    bad_with_report "--dry-run under ulimit -v (exit $rc):" "$(cat dry err)"
  fi
  # The estimate against the measured peak for every protocol with a sequential
  # form, at a size where the program's own memory does not dominate.
  for p in $protocols; do
    [ "$p" = swarm ] && continue
    covers_peak "$p" "$BIN" "${SEQ[@]}" --peers 131072 --dim 4 --protocol "$p" --rounds 3 --trials 2 --threads 2
  done
  # What a run holds beyond the protocol's arrays (campaign seed 261204 found both
  # above their estimate): churn's spells per peer, and choco's last send to every
  # receiver of a time-varying graph, one more receiver a round up to its period.
  covers_peak "random-groups under churn" "$BIN" "${SEQ[@]}" --peers 1048576 --protocol random-groups --rounds 3 \
    --trials 2 --threads 2 --fail-rate 0.01 --failure churn --join-rate 0.1
  covers_peak "choco on one-peer-exp, 17 rounds" "$BIN" "${SEQ[@]}" --peers 131072 --protocol choco \
    --topology one-peer-exp --rounds 17 --trials 1
  # sgd_bench's problem on the sequential engine: every peer's samples, their
  # pooled copy and Newton's Hessian are in the estimate. 20000 peers x 100
  # samples x 200 features need about 6.5 GB: refused at once under a 2 GB
  # limit (it was accepted, then refused by the set-up after tens of seconds).
  ( ulimit -v 2000000; PROGRAM=sgd refused "--peers: the run needs about" "${SEQ[@]}" --objective logistic \
      --peers 20000 --samples-per-peer 100 --dim 200 --steps 10
    # The MLP's size is --hidden's (the images fix the rest; --dim does not apply).
    PROGRAM=sgd refused "--hidden: the run needs about" "${SEQ[@]}" --objective mlp --peers 4096 --steps 10 \
      --data /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    exit "$AVB_FAILURES" ) || AVB_FAILURES=$((AVB_FAILURES + 1))
  for a in "--objective logistic --peers 20000 --samples-per-peer 50 --dim 20" \
           "--objective logistic --peers 1000 --samples-per-peer 500 --dim 100" \
           "--objective quadratic --peers 200000 --dim 64 --protocol gossip"; do
    # shellcheck disable=SC2086
    covers_peak "sgd_bench $a" "$SGD" "${SEQ[@]}" $a --steps 20
  done
fi

# ---- SIGTERM inside a long round ----------------------------------------------------
# stop_bound RUNNING: the seconds a stop may take. A second on a quiet machine; the
# exit frees millions of lists, which takes longer when other jobs share the cores:
# the bound grows with the load, the larger of the last minute's average and
# RUNNING - 1, the processes running when the stop was asked for (running_now; the
# minute's average lags: mpi_np8 starting beside a stop puts eight busy ranks on the
# cores before it notices). ASan's allocator (quarantine, shadow memory) makes those
# frees several times slower.
stop_bound() {
  local factor=1
  [ -n "$SANITIZED" ] && factor=4
  awk -v c="$(nproc)" -v f="$factor" -v r="$1" \
    '{ l = $1; if (r - 1 > l) l = r - 1; printf "%.1f", f * (1 + l / c) }' /proc/loadavg
}
running_now() { cut -d' ' -f4 /proc/loadavg | cut -d/ -f1; }

# wait_tracing PID TRACE: returns once the run has begun writing TRACE (its hidden
# .TRACE.tmp.PID exists) and has run a second more, so that a stop lands inside the
# run, not in a set-up that a slow (sanitized, loaded) build is still in.
wait_tracing() {
  local pid=$1 trace=$2 waited=0
  while ! compgen -G ".$trace.tmp.*" >/dev/null && kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 600 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  sleep 1
}

# One round of gossip on the complete graph of 12000 peers takes seconds (N^2
# mixes); the stop must not wait for it.
timeout -k 60 120 "$BIN" "${SEQ[@]}" --peers 12000 --protocol gossip --topology complete --rounds 5 --trials 1 \
  --out long.h5 --quiet >long.out 2>long.err &
pid=$!
wait_tracing "$pid" long.h5
running=$(running_now)
started=$(now)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
took=$(elapsed "$started")
bound=$(stop_bound "$running")
if [ "$rc" -eq 143 ] && awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t < b) }'; then
  ok "SIGTERM mid-round: exit 143 after $took s (bound $bound s at this load)"
else
  bad_with_report "SIGTERM mid-round: exit $rc after $took s (want 143 within $bound s):" "$(cat long.err)"
fi
check_trace long.h5 --complete 0
if grep -q "warning: --topology complete on 12000 peers: each round walks N(N-1) = 1.44e+08 edges" long.err; then
  ok "the complete graph's N^2 cost is announced before the run"
else
  bad_with_report "no warning of the complete graph's cost:" "$(cat long.err)"
fi
# Swarm's peers draw one partner of the complete graph a tick: no N^2 to announce.
"$BIN" "${SEQ[@]}" --peers 12000 --protocol swarm --rounds 1 --trials 1 --quiet >swarm.out 2>swarm.err ||
  bad_with_report "swarm on 12000 peers failed:" "$(cat swarm.err)"
if grep -q "walks N(N-1)" swarm.err; then
  bad_with_report "swarm is warned of an N^2 cost it does not have:" "$(cat swarm.err)"
else
  ok "swarm on the complete graph of 12000 peers: no N^2 warning"
fi

# stopped_within NAME WANT_TRACE PROGRAM ARGS...: the run is sent SIGTERM (WANT_TRACE=1:
# a second into its trace; 0: after 2 s, in its set-up) and must end with exit 143
# within stop_bound, one line on stderr at most, and (WANT_TRACE=1) its trace at
# stop.h5 marked incomplete, or (0) nothing written.
stopped_within() {
  local name=$1 want_trace=$2 rc=0
  shift 2
  rm -f stop.h5
  # The SIGTERM below goes to timeout, which passes it on and kills the run -k
  # seconds later: longer than any stop_bound, so that a slow stop is measured
  # against the bound (a loaded machine's is several seconds), not killed.
  timeout -k 60 300 "$@" --out stop.h5 --quiet >stop.out 2>stop.err &
  local pid=$!
  if [ "$want_trace" = 1 ]; then wait_tracing "$pid" stop.h5; else sleep 2; fi
  local started running
  running=$(running_now)
  started=$(now)
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  local took
  took=$(elapsed "$started")
  local bound
  bound=$(stop_bound "$running")
  if [ "$rc" -eq 143 ] && awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t < b) }'; then
    ok "$name: SIGTERM, exit 143 after $took s (bound $bound s at this load)"
  else
    bad_with_report "$name: SIGTERM gave exit $rc after $took s (want 143 within $bound s):" "$(cat stop.err)"
  fi
  if [ "$want_trace" = 1 ]; then
    check_trace stop.h5 --complete 0
  elif [ -e stop.h5 ] || [ "$(grep -c . stop.err)" -ne 1 ] || ! grep -q "error: stopped by signal 15" stop.err; then
    bad_with_report "$name: want one line and nothing written:" "$(cat stop.err; ls)"
  else
    ok "$name: one line, nothing written: $(cat stop.err)"
  fi
}

# Churn at 2^20 peers: the joiners' donors are drawn in one pass a round (they
# were a scan of every peer per joiner: O(N^2) a round, minutes at this size).
# Not under the sanitizers: a stop there takes 0.3-0.6 s on a loaded machine, and
# ASan's allocator makes that several times longer than the bound.
[ -z "$SANITIZED" ] && stopped_within "churn at 2^20 peers" 1 "$BIN" "${SEQ[@]}" --peers 1048576 --protocol gossip --failure churn \
  --fail-rate 0.05 --join-rate 0.5 --rounds 100000 --trials 1
# A ring all-reduce of 256 peers at model size on cloud: its round is simulated
# flow by flow (130,560 messages, seconds), which polls the stop.
[ -z "$SANITIZED" ] && stopped_within "a round simulated flow by flow" 1 "$BIN" "${SEQ[@]}" --peers 256 --platform cloud \
  --protocol allreduce --model-dim 12800000 --rounds 1000 --trials 1
# A random regular graph of 2^22 peers takes tens of seconds to draw: the draw
# polls the stop (it did not: SIGTERM waited for the whole graph).
# (Not under the sanitizers, as the sgd_bench set-up below: the C++ that polls is
# the churn case's, and ASan's shadow of gigabytes only slows the run.)
[ -z "$SANITIZED" ] && stopped_within "random-regular:8 on 2^22 peers" 1 "$BIN" "${SEQ[@]}" --peers 4194304 \
  --protocol gossip --topology random-regular:8 --rounds 3 --trials 1
# Lognormal hosts of 2^24 peers take seconds to draw before the first trial: the
# draw polls the stop (it did not: SIGTERM waited for the whole platform).
[ -z "$SANITIZED" ] && stopped_within "cloud hosts of 2^24 peers" 1 "$BIN" "${SEQ[@]}" --peers 16777216 --platform cloud \
  --protocol random-groups --compute-flops 1e6 --rounds 3 --trials 1
# Metropolis weights on the complete graph: a peer's row once listed every
# neighbour's neighbours (N^2 a row, N^3 a round, deaf to SIGTERM for minutes).
stopped_within "metropolis on the complete graph of 20000 peers" 1 "$BIN" "${SEQ[@]}" --peers 20000 \
  --protocol gossip --topology complete --weights metropolis --rounds 50 --trials 1
# Many short traced trials: each writes its rows; the stop ends the run after the
# trials in flight. (100,000 of them took about a second on a fast machine, and
# ended before the signal: a million take ten.)
stopped_within "1000000 traced trials" 1 "$BIN" "${SEQ[@]}" --peers 4 --rounds 3 --trials 1000000
# sgd_bench's set-up of 50 million samples: the build polls the stop.
[ -z "$SANITIZED" ] && stopped_within "sgd_bench set-up" 0 "$SGD" "${SEQ[@]}" --objective logistic --peers 518399 --samples-per-peer 103 \
  --dim 8 --steps 10

# wall_estimate NAME MAX_RATIO ARGS...: the run's wall-time estimate is at least a
# quarter of what it takes, and at most MAX_RATIO times that (0: no upper check).
# The estimate is of a machine to itself: with more jobs than cores (a load of L
# on C cores, L > C) a run gets C/L of them, so the time it takes is divided by
# L/C before the lower check (on a quiet machine, by 1).
wall_estimate() {
  local name=$1 most=$2 est started took crowd
  shift 2
  est=$("$BIN" "$@" --dry-run | sed -n 's/^# estimate: wall time: about \([0-9.e+-]*\) s$/\1/p')
  started=$(now)
  timeout 120 "$BIN" "$@" >/dev/null
  took=$(elapsed "$started")
  crowd=$(awk -v c="$(nproc)" '{ f = $1 / c; printf "%.2f", (f > 1 ? f : 1) }' /proc/loadavg)
  if awk -v e="$est" -v t="$took" -v m="$most" -v f="$crowd" \
    'BEGIN { exit !(e != "" && 4 * e * f >= t && (m == 0 || e <= m * t)) }'; then
    ok "$name: estimated $est s, took $took s (load $crowd x the cores)"
  else
    bad "$name: estimated '$est' s, took $took s at a load of $crowd x the cores" \
      "(want at least a quarter of the time over that$([ "$most" = 0 ] || echo ", at most $most times the time"))"
  fi
}
# The wall-time estimate counts what each trial costs besides its rounds, its
# set-up and its rows in the trace: 20,000 short traced trials of 4 peers; the
# estimate must not fall below a quarter of what they take (it once said 0.02 s
# for 57,375 trials that ran for minutes). Not under a sanitizer, which slows
# each trial more than the estimate knows.
[ -n "$SANITIZED" ] || wall_estimate "20000 traced trials" 0 "${SEQ[@]}" --peers 4 --rounds 3 --trials 20000 \
  --out trials.h5 --quiet
# ... and the rounds simulated flow by flow: a 128-peer ring at model size on cloud
# takes about 0.7 s (the estimate once said 4e-5 s). Not under a sanitizer, which
# slows the simulation more than the estimate knows.
[ -n "$SANITIZED" ] || wall_estimate "a ring simulated flow by flow" 10 "${SEQ[@]}" --peers 128 --protocol allreduce \
  --collective ring --model-dim 1000000 --platform cloud --rounds 2 --trials 1 --quiet
# ... rounds whose flows repeat the first round's (recursive doubling of 1,024
# peers: once estimated at 3.9 s for 0.13 s, 1024^0.5 times a message's cost) ...
[ -n "$SANITIZED" ] || wall_estimate "rounds of recursive doubling simulated flow by flow" 10 "${SEQ[@]}" \
  --peers 1024 --protocol allreduce --collective doubling --dim 1000 --rounds 11 --trials 1 --quiet
# ... and a ring of 1,024 peers at model size, whose 2(N - 1) steps are one step
# simulated alone (once estimated at 201 s for 3 rounds of a millisecond each).
[ -n "$SANITIZED" ] || wall_estimate "a ring's repeated step simulated alone" 10 "${SEQ[@]}" --peers 1024 \
  --protocol allreduce --collective ring --model-dim 1000000 --rounds 200 --trials 1 --quiet

# ---- --summary keeps file names as text -------------------------------------------
timeout 60 "$BIN" "${SEQ[@]}" --peers 8 --rounds 3 --trials 1 --out 007 --summary s.json --quiet >/dev/null
if "$AVB_PYTHON" -c 'import json, sys; rows = json.load(open("s.json")); sys.exit(rows[0]["out"] != "007")'; then
  ok "--summary: --out 007 recorded as the text '007'"
else
  bad_with_report "--summary turned a file name into a number:" "$(head -c 600 s.json)"
fi

finish
