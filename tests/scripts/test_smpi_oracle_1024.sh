#!/usr/bin/env bash
# Every protocol on 1024 simulated peers under SMPI against the sequential oracle,
# the cases of each protocol's table (tests/protocols/NAME/cases.txt, [oracle_1024]).
#
#   tests/scripts/test_smpi_oracle_1024.sh ORACLE_CLI SMPI_BINARY
#
# ORACLE_CLI (build/tests/oracle_cli) prints the rows the oracle predicts; the SMPI
# run's trace must agree: variance, error and mean_drift within 1e-12 of the initial
# variance, alive, groups, failed_groups, decode_failures and bytes_sent exactly.
# (GoogleTest cannot run on 1024 SMPI ranks: each privatized copy takes a pthread
# key, and there are only 1024.)
source "$(dirname "$0")/common.sh"

need_args 2 $# ORACLE_CLI SMPI_BINARY
program_arg ORACLE "$1" oracle "build the default preset: cmake --build build --target oracle_cli"
program_arg BIN "$2" "SMPI program"
PEERS=1024
common=(--dim 2 --rounds 8 --trials 2 --seed 77)

# Every protocol's [oracle_1024] cases (tests/protocols/NAME/cases.txt).
protocol_cases oracle_1024 "$AVB_SMPIRUN" -n 1 "$BIN"
configs=("${CASES[@]}")
for config in "${configs[@]}"; do
  read -r -a args <<<"$config"
  tag=$(printf '%s' "$config" | tr -c 'a-z0-9\n' '_')
  started=$(now)
  rc=0
  timeout -k 10 300 "$AVB_SMPIRUN" -n "$PEERS" "$BIN" --protocol "${args[@]}" "${common[@]}" \
    --out "$SCRATCH/$tag.h5" --quiet >"$SCRATCH/$tag.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -5 "$SCRATCH/$tag.log" >&2
    bad "$config: exit code $rc"
    continue
  fi
  if ! timeout 120 "$ORACLE" --peers "$PEERS" --protocol "${args[@]}" "${common[@]}" >"$SCRATCH/$tag.csv" \
      2>"$SCRATCH/$tag.oracle.err"; then
    bad "$config: the oracle failed: $(cat "$SCRATCH/$tag.oracle.err")"
    continue
  fi
  if report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/$tag.h5" "$SCRATCH/$tag.csv" 2>&1 <<'PY'
import csv, sys
import h5py
rows = list(csv.DictReader(open(sys.argv[2])))
problems = []
with h5py.File(sys.argv[1], "r") as f:
    for k, g in f["trials"].items():
        want = [r for r in rows if int(r["trial"]) == int(k)]
        if len(want) != len(g["round"]):
            problems.append(f"trial {k}: {len(g['round'])} rows, oracle {len(want)}")
            continue
        scale = float(want[0]["variance"])
        for i, w in enumerate(want):
            for name in ("variance", "error", "mean_drift"):
                got, exp = float(g[name][i]), float(w[name])
                if abs(got - exp) > 1e-12 * max(scale, abs(exp)):
                    problems.append(f"trial {k} round {i} {name}: {got!r} vs oracle {exp!r}")
            for name in ("alive", "groups", "failed_groups", "decode_failures", "bytes_sent"):
                if int(g[name][i]) != int(w[name]):
                    problems.append(f"trial {k} round {i} {name}: {int(g[name][i])} vs oracle {w[name]}")
    last = [float(r["variance"]) for r in rows][-1]
print("\n".join(problems[:5]) if problems else f"{len(rows)} rows agree (last variance {last:.3g})")
sys.exit(1 if problems else 0)
PY
  ); then
    ok "$config: $report ($(elapsed "$started") s)"
  else
    bad "$config: the trace differs from the oracle:"
    printf '%s\n' "$report" | sed 's/^/    /' >&2
  fi
done

# One-peer exponential graph, 1024 = 2^10 peers, no failures: gossip and push-sum
# hold the exact average after log2 N = 10 rounds, and not before.
for protocol in gossip pushsum; do
  rc=0
  timeout -k 10 300 "$AVB_SMPIRUN" -n "$PEERS" "$BIN" --protocol "$protocol" --topology one-peer-exp --trials 2 \
    --rounds 10 --seed 5 --out "$SCRATCH/exact-$protocol.h5" --quiet >"$SCRATCH/exact-$protocol.log" 2>&1 \
    </dev/null || rc=$?
  [ "$rc" -eq 0 ] || { bad "$protocol one-peer-exp: exit code $rc"; continue; }
  if report=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/exact-$protocol.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    v = [g["variance"][()] for g in f["trials"].values()]
print("variance after rounds 9 and 10:", [(f"{x[9]:.2g}", f"{x[10]:.2g}") for x in v])
sys.exit(0 if all(x[10] < 1e-25 and x[9] > 1e-6 for x in v) else 1)
PY
  ); then ok "$protocol, one-peer-exp: exact in 10 rounds: $report"; else bad "$protocol, one-peer-exp: $report"; fi
done
finish
