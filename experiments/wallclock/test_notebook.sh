#!/usr/bin/env bash
# End to end under SMPI: a tiny slice of the study with run.sh (4 peers on the cluster
# platform, no failures: allreduce and moshpit at fp32 and fp16, and the training
# slice of both), summarize.py on it, then the notebook executed headless.
# Checks real outcomes, not only that files exist:
#   - allreduce's simulated seconds per round, at fp32 (25.6M x 4 bytes) and fp16
#     (x 2 bytes), at or above the alpha-beta bound of a ring all-reduce on the
#     cluster's links as SMPI models them (summarize.ring_allreduce_seconds) and less
#     than 8% above it (the 512 KiB segments' latencies, which the bound leaves out),
#     and fp32 / fp16 between 1.9 and 2 (bytes halve, latencies stay);
#   - moshpit on its 2x2 grid reaches variance 1e-4 in exactly 2 rounds (exact mean);
#   - the training cell's round is its compute (0.36 s at 1 Gflop/s) plus the same
#     all-reduce, within 1%;
#   - the averaging cells again on the sequential engine (AVB_ENGINE=sequential
#     run.sh, and a `fat` cell with failures and the detection timeout): the table
#     keeps SMPI's values for the cells SMPI ran, marks the estimate-only cell, and
#     its comparison puts each estimate within 2% of SMPI's time;
#   - the time-to-accuracy part (PARTS=tta, 16 peers, 2 trials of 30 steps of
#     allreduce and swarm on Fashion-MNIST 7 against 9): both cells' relative gap
#     falls by a tenth in every trial, its time grows step by step, and
#     its table has a line per protocol;
#   - every notebook cell ran, and its four figures were written.
#
#   experiments/wallclock/test_notebook.sh [AVERAGING_BENCH [SEQUENTIAL_BENCH]]
#     defaults: build-smpi/apps/averaging_bench, build/apps/averaging_bench
#
# Needs the SMPI build of averaging_bench, the Open MPI build's (for the sequential
# engine), SimGrid's smpirun, Debian's python3 with h5py, pandas, matplotlib and
# jupyter nbconvert. Nothing in the repository is written.
set -euo pipefail

# shellcheck source=../notebook_test.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/../notebook_test.sh"
nb_init wallclock_notebook
avg_bench=${1:-$root/build-smpi/apps/averaging_bench}
seq_bench=${2:-$root/build/apps/averaging_bench}
[ -f "$avg_bench" ] || die "$avg_bench is missing (the SMPI build: cmake --preset smpi && cmake --build build-smpi)"
[ -f "$seq_bench" ] || die "$seq_bench is missing (the Open MPI build: cmake --preset default && cmake --build build)"

# 1. The sweep.
cells=(avg_allreduce_fp32_n4_cluster_f0 avg_moshpit_fp32_n4_cluster_f0 avg_allreduce_fp16_n4_cluster_f0
       avg_moshpit_fp16_n4_cluster_f0 sgd_allreduce_fp32_h1_n4_cluster)
sweep() {
  AVB_ENGINE=smpi AVERAGING_BENCH="$avg_bench" PROTOCOLS="allreduce moshpit" PEERS_LIST=4 KINDS=cluster FAILS=0 \
    PRECISIONS="fp32 fp16" ROUNDS=3 TRIALS=1 SGD_PEERS=4 SGD_KINDS=cluster SGD_ROUNDS=2 \
    RESULTS="$scratch/results" timeout "$1" "$here/run.sh"
}
nb_run_sweep "" "${cells[@]}" sgd_moshpit_fp32_h1_n4_cluster

# The same averaging cells on the sequential engine, and a fat one with failures
# (estimate only), into the same folder.
seq_sweep() {
  AVB_ENGINE=sequential AVERAGING_BENCH="$seq_bench" PROTOCOLS="${PROTOCOLS:-allreduce moshpit}" PEERS_LIST=4 PARTS=avg \
    ROUNDS=3 TRIALS=1 RESULTS="$scratch/results" timeout 60 "$here/run.sh" "$@"
}
if KINDS=cluster FAILS=0 PRECISIONS="fp32 fp16" seq_sweep >"$scratch/seq.log" 2>&1 &&
   KINDS=fat FAILS=0.2 PRECISIONS=fp32 PROTOCOLS=moshpit seq_sweep >>"$scratch/seq.log" 2>&1; then
  ok "run.sh on the sequential engine: $(grep -c '^done ' "$scratch/seq.log") cells"
else
  bad "run.sh on the sequential engine failed: $(tail -5 "$scratch/seq.log")"
fi

# Time to accuracy, small: 16 peers, 30 steps, 2 trials.
if AVB_ENGINE=sequential SGD_BENCH="${seq_bench%/*}/sgd_bench" PROTOCOLS="allreduce swarm" PARTS=tta TTA_PEERS=16 \
     TTA_STEPS=30 TTA_TRIALS=2 RESULTS="$scratch/results" timeout 120 "$here/run.sh" >"$scratch/tta.log" 2>&1; then
  ok "run.sh PARTS=tta: $(grep -c '^done ' "$scratch/tta.log") cells"
else
  bad "run.sh PARTS=tta failed: $(tail -5 "$scratch/tta.log")"
fi
if report=$("$python" - "$here" "$scratch/results" <<'PY'
import sys
from pathlib import Path
import time_to_accuracy as t
curves = t.load_curves(Path(sys.argv[2]))
bad, out = [], []
for p in ("allreduce", "swarm"):
    c = curves[curves["study_protocol"] == p]
    trials = sorted(set(c["trial"]))
    if trials != [0, 1]:
        bad.append(f"{p}: trials {trials}, not [0, 1]")
    for k, g in c.groupby("trial"):
        first, last = g["relative_gap"].iloc[0], g["relative_gap"].iloc[-1]
        out.append(f"{p} trial {k}: gap {first:.3g} -> {last:.3g} at {g['time'].iloc[-1]:.3g} s")
        if not (last < 0.9 * first and g["time"].is_monotonic_increasing and g["time"].iloc[-1] > 0):
            bad.append(f"{p} trial {k}: relative gap {first:.3g} -> {last:.3g}, time {list(g['time'])}")
lines = t.markdown_lines_tta(curves)
if sum(line.startswith("| cluster | 16 |") for line in lines) != 2:
    bad.append("the tta table has not one line per protocol: " + " / ".join(lines))
print("; ".join(bad or out))
sys.exit(1 if bad else 0)
PY
); then ok "time to accuracy: $report"; else bad "time to accuracy: $report"; fi

# 2. The table, and the numbers against the alpha-beta model.
nb_check_summary 11 '^| 4 | 0 | moshpit | 2 |' "moshpit N = 4" '^| 4 | 0.2 | moshpit | .* † |' "fat estimate"
if report=$("$python" - "$here" "$scratch/results.csv" <<'PY'
import sys
import pandas as pd
import summarize as s
df = pd.read_csv(sys.argv[2])
def one(part, protocol, precision, engine="smpi"):
    row = df[(df["part"] == part) & (df["study_protocol"] == protocol) & (df["precision"] == precision)
             & (df["engine"] == engine) & (df["kind"] == "cluster")]
    assert len(row) == 1, (part, protocol, precision, len(row))
    return row.iloc[0]
bad, out = [], []
t = {}
for prec, doubles in (("fp32", 12_800_000), ("fp16", 6_400_000)):
    r = one("avg", "allreduce", prec)
    t[prec] = r["time_per_round"]
    model = s.ring_allreduce_seconds(4, doubles * 8)
    out.append(f"allreduce {prec}: {t[prec]:.4f} s/round, alpha-beta {model:.4f} s")
    if not 1.0 <= t[prec] / model <= 1.08:
        bad.append(f"allreduce {prec} {t[prec]:.4f} s/round is not 1 to 1.08 times the bound {model:.4f}")
ratio = t["fp32"] / t["fp16"]
out.append(f"fp32/fp16 {ratio:.3f}")
if not 1.9 <= ratio <= 2.0:
    bad.append(f"fp32/fp16 = {ratio:.3f}, not in [1.9, 2]")
m = one("avg", "moshpit", "fp32")
if not (m["reached"] == 1 and m["rounds_to"] == 2):
    bad.append(f"moshpit: rounds to 1e-4 {m['rounds_to']}, reached {m['reached']}, not 2 and 1")
g = one("sgd", "allreduce", "fp32")
extra = g["time_per_round"] - g["compute_flops"] / 1e9
out.append(f"training round {g['time_per_round']:.4f} s = compute {g['compute_flops'] / 1e9:.2f} s + {extra:.4f} s")
if abs(extra / t["fp32"] - 1) > 0.01:
    bad.append(f"training round minus compute {extra:.4f} s is not the all-reduce's {t['fp32']:.4f} s")
for protocol in ("allreduce", "moshpit"):
    for prec in ("fp32", "fp16"):
        a, e = one("avg", protocol, prec), one("avg", protocol, prec, "sequential")
        r = e["t0_time_per_round"] / a["t0_time_per_round"]
        out.append(f"{protocol} {prec} estimate/SMPI {r:.4f}")
        if abs(r - 1) > 0.02:
            bad.append(f"{protocol} {prec}: estimate {e['t0_time_per_round']:.4f} s/round vs SMPI "
                       f"{a['t0_time_per_round']:.4f} s")
picked = s.chosen(df)
if not (picked[picked["kind"] == "cluster"]["engine"] == "smpi").all() or len(picked) != 7:
    bad.append(f"chosen(): {len(picked)} cells, engines {list(picked['engine'])}; want 7, SMPI's on cluster")
fat = picked[picked["kind"] == "fat"]
if not (len(fat) == 1 and fat.iloc[0]["detection_s"] > 0):
    bad.append(f"the fat cell with failures charged no detection time: {fat[['detection_s']].to_dict()}")
print("; ".join(bad or out))
sys.exit(1 if bad else 0)
PY
); then ok "alpha-beta and the estimate: $report"; else bad "alpha-beta and the estimate: $report"; fi

# 3. The notebook, headless, on the tiny sweep; figures to the scratch folder.
nb_execute wallclock.ipynb WALLCLOCK_RESULTS="$scratch/results" WALLCLOCK_FIGURES="$scratch/figures"
expected=(fig_round_time.png fig_time_to_consensus.png fig_sync_share.png fig_time_to_accuracy.png)
nb_check_figures "${expected[@]}"
nb_check_executed "${#expected[@]}"
nb_check_tracked wallclock.ipynb
nb_finish
