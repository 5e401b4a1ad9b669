#!/usr/bin/env bash
# The sweep driver, scripts/avbench sweep run, on real Open MPI ranks:
#   1. a table of two good rows and a bad one, two at a time: the good traces are
#      written complete (one wall time each), the run exits 1, and its last line
#      names the bad row and its log, and no other row;
#   2. the good rows again: both skipped (resume), nothing started, exit 0;
#   3. a trace marked incomplete (complete = 0, as a stopped run leaves it) is redone
#      and complete again, the other still skipped;
#   4. SIGTERM during a long row: exit 143, the row saved what it had (complete = 0)
#      and none of its processes is left;
#   5. refusals, one line and exit 2 each: a bad table, a file in a trace's place
#      that is not a trace, --jobs 0;
#   6. one sweep per folder: a second run on an OUT in use is refused (exit 2, one
#      line naming OUT and the pid holding it); after kill -9 of the driver, its row
#      runs on, and a resume waits for it and keeps its complete trace, neither
#      starting it again nor calling it failed;
#   7. rows run in the caller's folder: a relative summary cell is written there,
#      not in the repository.
#
#   tests/scripts/test_sweep.sh AVERAGING_BENCH
source "$(dirname "$0")/common.sh"

[ $# -eq 1 ] && [ -x "$1" ] || die "usage: test_sweep.sh AVERAGING_BENCH (built)"
BIN_DIR=$(dirname "$(realpath "$1")")
SWEEP=("$AVB_TOOLS" sweep)
OUT=$SCRATCH/out
sweep() { timeout 60 "${SWEEP[@]}" run --jobs 2 --bin-dir "$BIN_DIR" "$@"; }
state() { "$AVB_PYTHON" -c 'import sys, avbench; print(avbench.trace_state(sys.argv[1]))' "$1"; }

cat >"$SCRATCH/good.tsv" <<'EOF'
name  peers  protocol  rounds  trials  seed  quiet
a     2      moshpit   4       2       1     true
b     3      gossip    4       2       1     true
EOF
{ cat "$SCRATCH/good.tsv"; echo "bad   2      no-such   4       1       1     true"; } >"$SCRATCH/all.tsv"

# 1. Two good rows, one bad.
rc=0
sweep "$SCRATCH/all.tsv" "$OUT" >"$SCRATCH/1.out" 2>"$SCRATCH/1.err" || rc=$?
last=$(tail -n 1 "$SCRATCH/1.err")
[ "$rc" -eq 1 ] && ok "a failed row: exit 1" || bad "a failed row: exit $rc, expected 1"
if grep -qF "1 of 3 cell(s) failed: bad (exit 2; log $OUT/bad.log)" <<<"$last" && ! grep -qE '\b(a|b) \(' <<<"$last"; then
  ok "last line names the failed row and its log: $last"
else
  bad "last line does not name exactly the bad row: $last"
fi
grep -q "no-such" "$OUT/bad.log" && ok "bad.log holds the program's error" || bad "bad.log lacks the program's error"
check_trace "$OUT/a.h5" --kind averaging --peers 2 --trials 2 --complete 1 --rounds 4
check_trace "$OUT/b.h5" --kind averaging --peers 3 --trials 2 --complete 1 --rounds 4
[ "$(cut -f1 "$OUT/walltime.tsv" | tail -n +2 | sort | tr '\n' ' ')" = "a b " ] &&
  ok "walltime.tsv: one line for a, one for b" || bad "walltime.tsv: $(cat "$OUT/walltime.tsv")"

# 2. Resume: nothing left to do.
rc=0
sweep "$SCRATCH/good.tsv" "$OUT" >"$SCRATCH/2.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c '^skip ' "$SCRATCH/2.out")" -eq 2 ] && ! grep -q '^start ' "$SCRATCH/2.out"; then
  ok "rerun: both rows skipped, exit 0"
else
  bad "rerun (exit $rc) did not skip both rows: $(cat "$SCRATCH/2.out")"
fi

# 3. An incomplete trace is redone.
"$AVB_PYTHON" -c 'import sys, h5py; h5py.File(sys.argv[1], "r+").attrs.modify("complete", 0)' "$OUT/b.h5"  # keeps its int32
rc=0
sweep "$SCRATCH/good.tsv" "$OUT" >"$SCRATCH/3.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && grep -q '^redo  b ' "$SCRATCH/3.out" && grep -q '^skip  a ' "$SCRATCH/3.out" &&
   grep -q '^done  b ' "$SCRATCH/3.out" && [ "$(state "$OUT/b.h5")" = complete ]; then
  ok "incomplete b redone and complete again, a skipped"
else
  bad "incomplete trace (exit $rc): $(cat "$SCRATCH/3.out")"
fi

# 4. SIGTERM stops the pool cleanly.
printf 'name peers protocol rounds trials dim seed quiet\nlong 2 gossip 1000000 1 100000 1 true\n' >"$SCRATCH/long.tsv"
"${SWEEP[@]}" run --bin-dir "$BIN_DIR" "$SCRATCH/long.tsv" "$OUT" >"$SCRATCH/4.out" 2>&1 &
driver=$!
for _ in $(seq 100); do [ -e "$OUT/long.log" ] && grep -q '^start long' "$SCRATCH/4.out" && break; sleep 0.1; done
sleep 3  # a few trials in
kill -TERM "$driver"
rc=0
wait "$driver" || rc=$?
left=$(pgrep -f "$OUT/long.h5" || true)
if [ "$rc" -eq 143 ] && grep -q '^stop  long ' "$SCRATCH/4.out" && [ -z "$left" ] &&
   [ "$(state "$OUT/long.h5")" = incomplete ]; then
  ok "SIGTERM: exit 143, the row's trace saved with complete = 0, no process left"
else
  bad "SIGTERM: exit $rc, processes left: '$left', output: $(cat "$SCRATCH/4.out")"
fi

# 5. Refusals.
refuses() {  # TEXT command...: exit 2 and one stderr line containing TEXT
  local text=$1 rc=0 err
  shift
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -qF -- "$text" <<<"$err"; then
    ok "refused: $err"
  else
    bad "expected exit 2 and one line with '$text', got $rc: $err"
  fi
}
printf 'name protocol\nx moshpit extra\n' >"$SCRATCH/ragged.tsv"
refuses "ragged.tsv:2: 3 fields, but the header names 2 columns" sweep "$SCRATCH/ragged.tsv" "$OUT"
echo "not a trace" >"$SCRATCH/junk.h5"
printf 'name peers protocol\njunk 2 moshpit\n' >"$SCRATCH/junk.tsv"
refuses "cannot tell whether $SCRATCH/junk.h5 is complete" sweep "$SCRATCH/junk.tsv" "$SCRATCH"
refuses "--jobs: '0' must be a whole number >= 1" "${SWEEP[@]}" run --jobs 0 "$SCRATCH/good.tsv" "$OUT"

# 6. The folder's lock, and a resume after kill -9 while a row still runs (a row of
# about 3.5 s: one of 1 s once ended before the resume looked).
LIVE=$SCRATCH/live
printf 'name engine peers protocol rounds trials dim seed quiet
slow sequential 2 gossip 6000 1 100000 1 true
' \
  >"$SCRATCH/slow.tsv"
"${SWEEP[@]}" run --bin-dir "$BIN_DIR" "$SCRATCH/slow.tsv" "$LIVE" >"$SCRATCH/6.out" 2>&1 &
driver=$!
for _ in $(seq 100); do compgen -G "$LIVE/.slow.h5.tmp.*" >/dev/null && break; sleep 0.1; done
refuses "OUT $LIVE is in use by another 'avbench sweep run' (pid $driver)" sweep "$SCRATCH/slow.tsv" "$LIVE"
kill -KILL "$driver"
wait "$driver" 2>/dev/null || true
rc=0
sweep "$SCRATCH/slow.tsv" "$LIVE" >"$SCRATCH/6b.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && grep -q '^wait  slow (pid [0-9]* still runs it' "$SCRATCH/6b.out" &&
   grep -q '^done  slow (by pid ' "$SCRATCH/6b.out" && ! grep -qE '^start |FAIL' "$SCRATCH/6b.out" &&
   [ "$(state "$LIVE/slow.h5")" = complete ]; then
  ok "resume after kill -9: the row still running was waited for, not run again nor failed"
else
  bad "resume after kill -9 (exit $rc): $(cat "$SCRATCH/6b.out")"
fi

# 7. The caller's folder: a relative path in a cell is the caller's, not the repository's.
mkdir "$SCRATCH/caller"
rel=avb-sweep-cwd-$$.csv
remove_stray() { rm -f "$AVB_REPO/$rel"; }  # where a driver running rows in the repository would put it
avb_cleanup_hooks+=(remove_stray)
printf 'name engine peers protocol rounds trials seed quiet summary
rel sequential 2 gossip 3 1 1 true %s
' "$rel" \
  >"$SCRATCH/rel.tsv"
rc=0
(cd "$SCRATCH/caller" && sweep "$SCRATCH/rel.tsv" out) >"$SCRATCH/7.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && [ -s "$SCRATCH/caller/$rel" ] && [ -s "$SCRATCH/caller/out/rel.h5" ] && [ ! -e "$AVB_REPO/$rel" ]; then
  ok "a relative summary cell written in the caller's folder"
else
  bad "relative summary cell (exit $rc): in the caller's folder: $(ls "$SCRATCH/caller"), in the repository: $(ls "$AVB_REPO/$rel" 2>&1)"
fi
finish
