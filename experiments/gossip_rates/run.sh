#!/usr/bin/env bash
# Synchronous gossip (uniform weights, no failures) on every topology at N = 1024:
# rounds to relative error 1e-3 (variance / initial variance < 1e-6), measured,
# against graph_info's spectral predictions. Writes $RESULTS (see README.md):
#
#   predict_<graph>[_<k>].txt   graph_info output with the expected curve
#                               (random-regular: one per trial, its graph is the trial's)
#   sequential_<graph>.csv      the sequential engine, every trial, thinned by thin_curves.py
#   smpi_<graph>.h5             averaging_bench under SMPI (where feasible), a trace,
#                               and its .log: run by scripts/avbench sweep from table.tsv
#   steps.tsv                   step, graph, engine, trials, rounds, seconds (graph_info, sequential)
#   walltime.tsv                cell, seconds (the SMPI runs)
#
#   experiments/gossip_rates/run.sh                 # everything, ~12 min here
#   GRAPHS="torus hypercube" experiments/gossip_rates/run.sh
#
# Settings, as environment variables [default]:
#   PEERS    N                                   [1024]
#   GRAPHS   topologies                          [ring torus hypercube exp one-peer-exp random-regular:8 complete]
#   TRIALS   trials per graph (sequential)       [5]
#   SMPI     graphs also run under SMPI, as graph or graph=trials (trials: the first
#            ones of the sequential engine's)  [torus=2 hypercube exp one-peer-exp random-regular:8]
#            (SMPI costs ~0.03-0.05 s of wall time per 1,000 messages here: the torus, 4,096
#            messages a round, ~75 s per trial of ~530 rounds, so 2 trials; complete
#            sends 1M messages a round and did not finish 2 rounds in 12 min; the
#            ring needs ~300,000 rounds. Those two are measured by the sequential engine only.)
#   SEED     seed                                [1]
#   FORCE    1: redo steps whose output exists   [0]
#   and experiments/sweep_common.sh's JOBS (SMPI runs at the same time), RESULTS,
#   AVERAGING_BENCH, PYTHON (AVB_ENGINE stays smpi: the sequential engine is the Open MPI-free check).
#
# Every run gets a round budget of min(asymptotic + 1, 1.5 × full-spectrum prediction),
# at least full-spectrum + 10. The asymptotic count alone could not be missed (for a
# normal W the ratio is at most rho^2t), but is ~2x longer than needed for the ring;
# a trial that does not get there is reported as "never" by make_table.py. SMPI runs
# stop at a target 1e-6 × the smallest initial variance of their trials (from the
# sequential engine's round 0, the same values bit for bit), so each trial stops at or a few
# rounds after its own crossing.
# The SMPI runs are rows of $RESULTS/table.tsv, run last by scripts/avbench sweep (a job
# pool, resumable: a complete trace is skipped, a stopped one redone). The sequential
# engine's runs (build/apps/averaging_bench, whose traces are thinned to CSV) are a
# step of this script. Resumable: a step whose output exists is skipped. Then:
#   PYTHONPATH=python /usr/bin/python3 experiments/gossip_rates/make_table.py
#   PYTHONPATH=python /usr/bin/python3 experiments/gossip_rates/plot.py
set -euo pipefail

# Its runs measure SMPI itself (the sequential engine gives the values).
avb_default_engine=smpi
source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh
[ "$engine" = smpi ] || die "AVB_ENGINE='$engine': this study's runs are SMPI ones"
n=${PEERS:-1024} trials=${TRIALS:-5} seed=${SEED:-1} force=${FORCE:-0}
read -r -a graphs <<<"${GRAPHS:-ring torus hypercube exp one-peer-exp random-regular:8 complete}"
read -r -a smpi <<<"${SMPI-torus=2 hypercube exp one-peer-exp random-regular:8}"
for p in build/apps/graph_info build/apps/averaging_bench; do
  [ -x "$root/$p" ] || die "$root/$p is missing (build/: cmake --preset default && cmake --build build --target graph_info averaging_bench)"
done
cd "$root"

slug() { echo "${1//:/-}"; }
smpi_trials() {  # graph -> trials to run under SMPI (0: none)
  local s
  for s in "${smpi[@]}"; do
    case "$s" in "$1") echo "$trials"; return ;; "$1="*) echo "${s#*=}"; return ;; esac
  done
  echo 0
}
field() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
log_walltime() {  # step graph engine trials rounds seconds
  [ -s "$results/steps.tsv" ] || printf 'step\tgraph\tengine\ttrials\trounds\tseconds\n' >"$results/steps.tsv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results/steps.tsv"
}
timed() {  # step graph engine trials rounds -- command...: run it, log its wall time
  local step=$1 graph=$2 engine=$3 t=$4 r=$5 start end
  shift 6
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  local s; s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  log_walltime "$step" "$graph" "$engine" "$t" "$r" "$s"
  echo "      $step $graph: ${s} s"
}
sequential() {  # graph rounds out
  build/apps/averaging_bench --engine sequential --peers "$n" --protocol gossip --topology "$1" --rounds "$2" \
    --trials "$trials" --seed "$seed" --quiet --out "$3.h5" >/dev/null
  PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$here/thin_curves.py" "$3.h5" >"$3.tmp"
  rm -f "$3.h5"
  mv "$3.tmp" "$3"
}
curve() {  # graph seed rounds out: graph_info with the expected curve, then the budget
  { build/apps/graph_info --peers "$n" --topology "$1" --seed "$2" --curve "$3"; echo "budget $3"; } >"$4.tmp"
  mv "$4.tmp" "$4"
}
smpi_rows=0
for graph in "${graphs[@]}"; do
  s=$(slug "$graph")
  echo "== $graph"
  # 1. Predictions and the round budget.
  budget=0
  case "$graph" in
    random-regular:*) seeds=(); for ((k = 0; k < trials; k++)); do seeds+=("$(build/apps/graph_info --trial-of "$seed" "$k")"); done ;;
    *) seeds=("$seed") ;;
  esac
  for ((k = 0; k < ${#seeds[@]}; k++)); do
    if [ ${#seeds[@]} -gt 1 ]; then out=$results/predict_${s}_$k.txt; else out=$results/predict_$s.txt; fi
    if [ "$force" = 1 ] || [ ! -s "$out" ]; then
      info=$(build/apps/graph_info --peers "$n" --topology "$graph" --seed "${seeds[k]}")
      if grep -q time-varying <<<"$info"; then  # exact after the period: budget period + 2
        b=$(awk '{ for (i = 1; i < NF; i++) if ($i == "after") print $(i + 1) + 2 }' <<<"$info")
        printf '%s\nbudget %s\n' "$info" "$b" >"$out"
      else
        b=$(awk '$1 == "asymptotic_rounds_to_1e-3" { a = $2 } $1 == "spectrum_rounds_to_1e-3" { s = $2 }
                 END { c = int(a) + 2; h = int(1.5 * s + 0.999); b = (c < h ? c : h); if (b < s + 10) b = s + 10; print b }' <<<"$info")
        timed predict "$graph" graph_info 1 "$b" -- curve "$graph" "${seeds[k]}" "$b" "$out"
      fi
    fi
    b=$(field budget "$out")
    [ "$b" -gt "$budget" ] && budget=$b
    echo "   predicted: $(grep -E '^(rho|asymptotic|spectrum)|time-varying' "$out" | tr '\n' ' ')"
  done

  # 2. The sequential engine: every trial, every graph (the ring only here).
  out=$results/sequential_$s.csv
  if [ "$force" = 1 ] || [ ! -s "$out" ]; then
    echo "   sequential engine: $trials trials of $budget rounds"
    timed measure "$graph" sequential "$trials" "$budget" -- sequential "$graph" "$budget" "$out"
  fi

  # 3. averaging_bench under SMPI, the first t trials: a row for scripts/avbench sweep.
  t=$(smpi_trials "$graph")
  if [ "$t" -gt 0 ]; then
    [ "$force" != 1 ] || rm -f "$results/smpi_$s.h5"
    target=$(awk -F, -v t="$t" 'NR > 1 && $2 == 0 && $1 < t { v = $3 + 0; if (m == "" || v < m) m = v }
                                 END { printf "%.17g", m * 1e-6 }' "$results/sequential_$s.csv")
    sweep_row "name=smpi_$s peers=$n program=$avg_bench protocol=gossip topology=$graph trials=$t" \
      "rounds=$budget seed=$seed target=$target stop-at-target=true quiet=true"
    smpi_rows=$((smpi_rows + 1))
  fi
done
echo "run.sh: predictions and sequential runs done; table: PYTHONPATH=$root/python $python $here/make_table.py --results $results; plot: PYTHONPATH=$root/python $python $here/plot.py --results $results"
[ "$smpi_rows" -eq 0 ] || sweep_run
