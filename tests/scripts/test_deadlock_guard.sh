#!/usr/bin/env bash
# Under SMPI, a run in which no simulated peer can move (SimGrid's "deadlock
# detected") must end with status 3 and one line of ours saying what each peer
# was blocked in, after rank 0 saved what it had — never SimGrid's status 0.
#
#   tests/scripts/test_deadlock_guard.sh DEADLOCK_PROBE     (built in build-smpi/tests/)
source "$(dirname "$0")/common.sh"

[ $# -eq 1 ] || die "usage: test_deadlock_guard.sh DEADLOCK_PROBE"
PROBE=$(realpath "$1")

for np in 2 16; do
  rc=0
  timeout -k 5 60 "$AVB_SMPIRUN" -n "$np" "$PROBE" "$SCRATCH/saved$np" >"$SCRATCH/out$np" 2>"$SCRATCH/err$np" || rc=$?
  [ "$rc" -eq 3 ] || bad "$np peers: exit $rc, expected 3"
  line=$(grep '^deadlock_probe: error: deadlock: ' "$SCRATCH/err$np" || true)
  [ "$(printf '%s\n' "$line" | grep -c .)" -eq 1 ] || { bad "$np peers: not one deadlock line"; cat "$SCRATCH/err$np" >&2; }
  printf '%s\n' "$line" | grep -q "$np peers blocked (trial 0, round 1)" ||
    bad "$np peers: the line does not count the blocked peers: $line"
  printf '%s\n' "$line" | grep -q 'peer(s) 0 waits in MPI_Recv on peer 1' || bad "$np peers: rank 0's wait not named: $line"
  printf '%s\n' "$line" | grep -q 'peer(s) 1 waits in MPI_Recv on peer 0' || bad "$np peers: rank 1's wait not named: $line"
  if [ "$np" -gt 2 ]; then
    printf '%s\n' "$line" | grep -q "peer(s) 2, 3, .* waits in MPI_Barrier" || bad "$np peers: the barrier's peers not named: $line"
  fi
  [ "$(cat "$SCRATCH/saved$np" 2>/dev/null)" = saved ] || bad "$np peers: the save step did not run"
  ok "$np peers: exit 3, $line"
done
finish
