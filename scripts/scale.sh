#!/usr/bin/env bash
# Wall time and peak memory of averaging_bench on N simulated peers under SMPI
# (issue 8, item 4; docs/performance.md, "Scale"), one line per run:
#
#   scripts/scale.sh [--peers "256 1024 4096 16384"] [--dims "1 1000"] [--rounds 10]
#                    [--protocol moshpit] [--eager-limit BYTES] [--timeout S]
#                    [--build-smpi DIR]
#
# Each run is `scripts/smpirun.sh -n N [--eager-limit B] averaging_bench --protocol P
# --rounds R --trials 1 --dim D` under /usr/bin/time. Printed per run: wall seconds,
# peak resident memory of the simulating process, memory per peer, the growth of
# both over the previous N of the same dim (as an exponent: 1.0 is linear), and
# the simulated time of the trial. A run past --timeout (default 900 s) is stopped
# and reported as such. Exit status 0 when every run ended (in time or not) with a
# readable result line, 1 otherwise. Nothing is asserted about the numbers: they
# are measurements of this machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
peers="256 1024 4096 16384" dims="1 1000" rounds=10 protocol=moshpit eager=() limit=900
build_smpi=$root/build-smpi
while [ $# -gt 0 ]; do
  case "$1" in
    --peers) peers=$2; shift 2 ;;
    --dims) dims=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --protocol) protocol=$2; shift 2 ;;
    --eager-limit) eager=(--eager-limit "$2"); shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --build-smpi) build_smpi=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "scale.sh: error: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build_smpi/apps/averaging_bench
[ -f "$bin" ] || { echo "scale.sh: error: --build-smpi: no $bin (build the smpi preset first)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

printf '%-7s %-5s %9s %9s %9s %8s %8s %12s  %s\n' peers dim wall_s rss_MB KB/peer t_exp m_exp sim_s status
status=0
for d in $dims; do
  prev_n="" prev_wall="" prev_rss=""
  for n in $peers; do
    set +e
    /usr/bin/time -f '%e %M' -o "$scratch/time" timeout -k 10 "$limit" \
      "$here/smpirun.sh" -n "$n" "${eager[@]}" "$bin" --protocol "$protocol" --rounds "$rounds" \
      --trials 1 --dim "$d" >"$scratch/out" 2>"$scratch/err"
    rc=$?
    set -e
    read -r wall rss < <(tail -1 "$scratch/time")
    sim=$(awk '$1 == "#" && $2 == "mean" {print $NF}' "$scratch/out")
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      state="stopped at ${limit} s"
      # smpirun relays the stop to the simulation, which ends only after the
      # round in progress: do not wait for it.
      pkill -KILL -f "smpimain.*$bin" 2>/dev/null || true
    elif [ "$rc" -ne 0 ] || [ -z "$sim" ]; then
      state="failed (exit $rc): $(tail -1 "$scratch/err")"
      status=1
    else
      state=ok
    fi
    t_exp=- m_exp=-
    if [ "$state" = ok ] && [ -n "$prev_n" ]; then
      t_exp=$(awk -v a="$prev_wall" -v b="$wall" -v m="$prev_n" -v n="$n" 'BEGIN {printf "%.2f", log(b/a)/log(n/m)}')
      m_exp=$(awk -v a="$prev_rss" -v b="$rss" -v m="$prev_n" -v n="$n" 'BEGIN {printf "%.2f", log(b/a)/log(n/m)}')
    fi
    printf '%-7s %-5s %9s %9.0f %9.1f %8s %8s %12s  %s\n' "$n" "$d" "$wall" "$(awk -v k="$rss" 'BEGIN {print k/1024}')" \
      "$(awk -v k="$rss" -v n="$n" 'BEGIN {print k/n}')" "$t_exp" "$m_exp" "${sim:--}" "$state"
    if [ "$state" = ok ]; then prev_n=$n prev_wall=$wall prev_rss=$rss; else prev_n=""; fi
  done
done
exit $status
