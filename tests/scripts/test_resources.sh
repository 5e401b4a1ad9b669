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
#   - SIGTERM inside one long round (a complete graph) ends the run within a second;
#   - --summary keeps file names as text (--out 007).
#
#   tests/scripts/test_resources.sh BINARY [sanitized]   (build/apps/averaging_bench)
#
# sanitized: the binary is built with ASan, whose shadow memory rules out
# ulimit -v and whose allocator changes the peak memory: those checks are skipped.
source "$(dirname "$0")/common.sh"

need_args 1+ $# BINARY [sanitized]
program_arg BIN "$1" "Open MPI build's averaging_bench"
SANITIZED=${2:-}
cd "$SCRATCH"
SEQ=(--engine sequential)

# One line on stderr naming FLAG (a pattern), exit 2, nothing written.
refused() {
  local flag=$1 rc=0
  shift
  rm -f refused.h5
  local out=(--out refused.h5)
  [[ " $* " == *" --out "* ]] && out=()  # the case names its own
  timeout 60 "$BIN" "${out[@]}" "$@" >out 2>err || rc=$?
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
  [ "$p" = swarm ] && continue  # no sequential form
  refused "--link-latency: " "${SEQ[@]}" --peers 16 --protocol "$p" --link-latency 1e300 --rounds 100
done

# ---- memory -----------------------------------------------------------------------
refused "--topology: the run needs about" "${SEQ[@]}" --peers 65536 --protocol gossip --topology random-regular:30000
# --dry-run runs nothing and writes nothing.
timeout 60 "$BIN" "${SEQ[@]}" --peers 1024 --protocol moshpit --trials 100 --out dry.h5 --dry-run >dry 2>err
if [ ! -e dry.h5 ] && [ "$(grep -c '^# estimate: ' dry)" -eq 4 ] && [ ! -s err ]; then
  ok "--dry-run: four estimate lines, no trace"
else
  bad_with_report "--dry-run printed or wrote something else:" "$(cat dry err; ls)"
fi

if [ -z "$SANITIZED" ]; then
  # pushsum's graph and state at 2^20 peers: counted, and under a 1 GB address
  # space limit refused before anything is allocated (not std::bad_alloc).
  # (A subshell's verdicts are its own: its exit status carries them back.)
  ( ulimit -v 1000000; refused "--dim: the run needs about" "${SEQ[@]}" --peers 1048576 --protocol pushsum --dim 64
    exit "$AVB_FAILURES" ) || AVB_FAILURES=$((AVB_FAILURES + 1))
  rc=0
  ( ulimit -v 1000000; timeout 60 "$BIN" "${SEQ[@]}" --peers 1048576 --protocol pushsum --dim 64 --dry-run >dry 2>err ) || rc=$?
  if [ "$rc" -eq 2 ] && grep -q "^# estimate: memory: about" dry && grep -q "error: --dim" err; then
    ok "--dry-run under ulimit -v prints the estimate and the refusal, exit 2"
  else
    bad_with_report "--dry-run under ulimit -v (exit $rc):" "$(cat dry err)"
  fi
  # The estimate against the measured peak (GNU time's maximum resident set) for every
  # protocol with a sequential form, at a size where the program's own memory does
  # not dominate: the estimate must cover the peak and stay within 4x of it.
  for p in $protocols; do
    [ "$p" = swarm ] && continue
    args=("${SEQ[@]}" --peers 131072 --dim 4 --protocol "$p" --rounds 3 --trials 2 --threads 2)
    est=$(timeout 60 "$BIN" "${args[@]}" --dry-run | sed -n 's/^# estimate: memory: about \([0-9.e+-]*\) GB.*/\1/p')
    peak=$( { /usr/bin/time -f '%M' timeout 120 "$BIN" "${args[@]}" --quiet >/dev/null; } 2>&1 | tail -1)
    verdict=$(awk -v e="$est" -v k="$peak" 'BEGIN {
      used = k * 1024 - 15e6;  # less the program itself (measured: 14 MB at one peer)
      if (used <= e * 1e9 && e * 1e9 <= 4 * used + 32e6) print "ok"; else print "off" }')
    if [ "$verdict" = ok ]; then
      ok "$p: estimate $est GB, peak $((peak / 1024)) MB"
    else
      bad "$p: estimate $est GB against a measured peak of $((peak / 1024)) MB (want peak <= estimate <= 4x peak)"
    fi
  done
fi

# ---- SIGTERM inside a long round ----------------------------------------------------
# One round of gossip on the complete graph of 12000 peers takes seconds (N^2
# mixes); the stop must not wait for it.
timeout -k 5 120 "$BIN" "${SEQ[@]}" --peers 12000 --protocol gossip --topology complete --rounds 5 --trials 1 \
  --out long.h5 --quiet >long.out 2>long.err &
pid=$!
sleep 2
started=$(now)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
took=$(elapsed "$started")
if [ "$rc" -eq 143 ] && awk -v t="$took" 'BEGIN { exit !(t < 1.0) }'; then
  ok "SIGTERM mid-round: exit 143 after $took s"
else
  bad_with_report "SIGTERM mid-round: exit $rc after $took s (want 143 within 1 s):" "$(cat long.err)"
fi
check_trace long.h5 --complete 0
if grep -q "warning: --topology complete on 12000 peers: each round walks N(N-1) = 1.44e+08 edges" long.err; then
  ok "the complete graph's N^2 cost is announced before the run"
else
  bad_with_report "no warning of the complete graph's cost:" "$(cat long.err)"
fi

# ---- --summary keeps file names as text -------------------------------------------
timeout 60 "$BIN" "${SEQ[@]}" --peers 8 --rounds 3 --trials 1 --out 007 --summary s.json --quiet >/dev/null
if "$AVB_PYTHON" -c 'import json, sys; rows = json.load(open("s.json")); sys.exit(rows[0]["out"] != "007")'; then
  ok "--summary: --out 007 recorded as the text '007'"
else
  bad_with_report "--summary turned a file name into a number:" "$(head -c 600 s.json)"
fi

finish
