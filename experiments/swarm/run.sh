#!/usr/bin/env bash
# Swarm (SwarmSGD's asynchronous pairwise averaging) against moshpit, gossip and
# pairwise, on a cluster with lognormal host speeds: one run per cell, each leaving
# one trace $RESULTS/<kind>_<cell>_<platform>.h5 and the program's table and messages
# in the .log beside it. README.md says why the parameters are what they are.
#
#   experiments/swarm/run.sh                       # the whole study (22 cells), under SMPI
#   JOBS=2 experiments/swarm/run.sh                # two cells at a time
#   CELLS="avg_swarm avg_moshpit" RESULTS=/tmp/s experiments/swarm/run.sh
#   AVB_ENGINE=openmpi PEERS=4 DIM=10 SGD_DIM=10 ROUNDS=6 RING_ROUNDS=10 STEPS=20 \
#     TRIALS=2 SGD_TRIALS=1 RESULTS=/tmp/s experiments/swarm/run.sh
#
# Cells (CELLS picks some by name; default: all). kind avg = averaging_bench, one
# vector of DIM N(0, 1) values per peer; kind sgd = sgd_bench on the EPFL quadratic,
# H = 2 local steps per round.
#   avg_swarm avg_swarm-fp16 avg_swarm-uniform8   swarm, blocking, round clock, quantizer
#   avg_swarm-lattice16 avg_swarm-lattice10       lattice, q = 2^16 (eps 2.5e-4) and q = 2^10 (eps 0.016)
#   avg_swarm-poisson avg_swarm-nonblocking       poisson clock; non-blocking mode
#   avg_moshpit avg_pairwise avg_gossip-exp       moshpit on its default grid (8x8 at N = 64)
#   avg_gossip-ring avg_gossip-ring-fp16          gossip on the ring: RING_ROUNDS rounds
#   sgd_swarm-geo sgd_swarm-geo-fp16              swarm, geometric local steps (mean 2)
#   sgd_swarm-geo-lattice                         lattice q = 2^16, eps 2e-6
#   sgd_swarm-geo-lattice-tight                   lattice q = 2^16, eps 5e-7: too small on purpose
#   sgd_swarm-fixed                               swarm, exactly 2 local steps
#   sgd_moshpit sgd_gossip-ring sgd_gossip-exp
#   sgd_swarm-geo@0 sgd_moshpit@0                 the same on a homogeneous platform (sigma 0)
#
# Settings, as environment variables [default]:
#   PEERS        N                                        [64]
#   DIM          averaging: vector length d               [1000]
#   ROUNDS       averaging: rounds per trial              [40]
#   RING_ROUNDS  averaging: rounds of the ring-gossip cells   [2000]
#   TRIALS       averaging: trials per cell               [10]
#   SGD_DIM      sgd: model dimension d                   [100]
#   STEPS        sgd: SGD steps per trial                 [600]
#   SGD_TRIALS   sgd: trials per cell                     [5]
#   SIGMA        lognormal sigma of the host speeds (median 1 Gflop/s)   [0.5]
#   SPEED_SEED   seed of the host speeds                  [1]
#   SEED         --seed of every cell                     [1]
#   CELLS        cells to run                             [all of the above]
#   and experiments/sweep_common.sh's JOBS, RESULTS, AVB_ENGINE (smpi: scripts/smpirun.sh
#   --speed-sigma; openmpi: no simulated platform, SIGMA and --step-flops do nothing,
#   time is wall time), AVERAGING_BENCH, SGD_BENCH, PYTHON, SLURM.
#
# The platform part of a trace's name is s<sigma> under SMPI (s0 for the '@0' cells)
# and mpi under Open MPI; summarize.py reads it from there (the trace does not record
# the platform). This script only writes the cells as rows of $RESULTS/table.tsv;
# scripts/avbench sweep runs them: resumable (a complete trace is skipped, a stopped one
# redone), and each cell that ends normally appends "cell seconds" to walltime.tsv.
set -euo pipefail

# The study's cells were measured on SMPI; swarm's sequential form (docs/simulation.md,
# "Asynchronous protocols") is not wired into them yet.
avb_default_engine=smpi
source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh

ALL_CELLS="avg_swarm avg_swarm-fp16 avg_swarm-uniform8 avg_swarm-lattice16 avg_swarm-lattice10
  avg_swarm-poisson avg_swarm-nonblocking avg_moshpit avg_pairwise avg_gossip-exp avg_gossip-ring
  avg_gossip-ring-fp16 sgd_swarm-geo sgd_swarm-geo-fp16 sgd_swarm-geo-lattice sgd_swarm-geo-lattice-tight
  sgd_swarm-fixed sgd_moshpit sgd_gossip-ring sgd_gossip-exp sgd_swarm-geo@0 sgd_moshpit@0"
read -r -a cells <<<"$(echo ${CELLS:-$ALL_CELLS})"
n=${PEERS:-64} dim=${DIM:-1000} rounds=${ROUNDS:-40} ring_rounds=${RING_ROUNDS:-2000} trials=${TRIALS:-10}
sgd_dim=${SGD_DIM:-100} steps=${STEPS:-600} sgd_trials=${SGD_TRIALS:-5}
sigma=${SIGMA:-0.5} speed_seed=${SPEED_SEED:-1} seed=${SEED:-1}
for v in PEERS:$n DIM:$dim ROUNDS:$rounds RING_ROUNDS:$ring_rounds TRIALS:$trials SGD_DIM:$sgd_dim \
         STEPS:$steps SGD_TRIALS:$sgd_trials; do
  is_count "${v#*:}" || die "${v%%:*}='${v#*:}' is not a positive integer"
done
[ "$n" -ge 2 ] || die "PEERS='$n': swarm and pairwise need at least 2 peers"
case "$seed$speed_seed" in *[!0-9]*) die "SEED and SPEED_SEED must be non-negative integers" ;; esac
awk -v s="$sigma" 'BEGIN { exit !(s ~ /^[0-9.eE+-]+$/ && s + 0 >= 0) }' || die "SIGMA='$sigma' is not a number >= 0"
[ ${#cells[@]} -gt 0 ] || die "CELLS is empty"
for cell in "${cells[@]}"; do
  case " $(echo $ALL_CELLS) " in *" $cell "*) ;; *) die "CELLS: '$cell' is not one of: $(echo $ALL_CELLS)" ;; esac
done
if [ "$engine" = openmpi ]; then  # no simulated platform: the '@sigma' cells would repeat the others
  if [ -n "${CELLS:-}" ]; then
    for cell in "${cells[@]}"; do case "$cell" in *@*) die "CELLS: '$cell' needs AVB_ENGINE=smpi" ;; esac; done
  else
    kept=(); for cell in "${cells[@]}"; do case "$cell" in *@*) ;; *) kept+=("$cell") ;; esac; done
    cells=("${kept[@]}")
  fi
fi
# The platform of a cell: its sigma ('@S' suffix, else SIGMA), and the file-name tag.
cell_sigma() { case "$1" in *@*) echo "${1#*@}" ;; *) echo "$sigma" ;; esac; }
cell_file() {
  local base=${1%@*}
  if [ "$engine" = smpi ]; then echo "${base}_s$(cell_sigma "$1")"; else echo "${base}_mpi"; fi
}

avg_flags() {  # cell -> its flags, as column=value
  case "$1" in
    avg_swarm) echo "protocol=swarm" ;;   # blocking, round clock, complete graph: the defaults
    avg_swarm-fp16) echo "protocol=swarm quantizer=fp16" ;;
    avg_swarm-uniform8) echo "protocol=swarm quantizer=uniform8" ;;
    # q eps / 2 = 8.2 covers the largest coordinate gap between two peers at the
    # start (N(0, 1) values: about 6.5 at N = 64, d = 1000); README.md has the rule.
    avg_swarm-lattice16) echo "protocol=swarm quantizer=lattice lattice-q=65536 lattice-eps=2.5e-4" ;;
    avg_swarm-lattice10) echo "protocol=swarm quantizer=lattice lattice-q=1024 lattice-eps=0.016" ;;
    avg_swarm-poisson) echo "protocol=swarm clock=poisson" ;;
    avg_swarm-nonblocking) echo "protocol=swarm mode=non-blocking" ;;
    avg_moshpit) echo "protocol=moshpit" ;;             # default grid ceil(sqrt N)^2: 8x8 at 64
    avg_pairwise) echo "protocol=pairwise" ;;           # random matchings on the complete graph
    avg_gossip-exp) echo "protocol=gossip topology=exp" ;;
    avg_gossip-ring) echo "protocol=gossip topology=ring" ;;  # RING_ROUNDS rounds
    avg_gossip-ring-fp16) echo "protocol=gossip topology=ring quantizer=fp16" ;;
  esac
}

sgd_flags() {  # cell -> its flags, as column=value
  case "$1" in
    sgd_swarm-geo) echo "protocol=swarm local-steps-dist=geometric" ;;
    sgd_swarm-geo-fp16) echo "protocol=swarm local-steps-dist=geometric quantizer=fp16" ;;
    # The models differ by up to ~0.02-0.03 per coordinate between peers (eps 1e-6,
    # q eps / 2 = 0.033, is the smallest that decoded every message in a probe run):
    # 2e-6 leaves a factor 2; 5e-7 (0.016) is too small and shows what failures do.
    sgd_swarm-geo-lattice) echo "protocol=swarm local-steps-dist=geometric quantizer=lattice lattice-q=65536 lattice-eps=2e-6" ;;
    sgd_swarm-geo-lattice-tight) echo "protocol=swarm local-steps-dist=geometric quantizer=lattice lattice-q=65536 lattice-eps=5e-7" ;;
    sgd_swarm-fixed) echo "protocol=swarm" ;;
    sgd_moshpit) echo "protocol=moshpit" ;;
    sgd_gossip-ring) echo "protocol=gossip topology=ring" ;;
    sgd_gossip-exp) echo "protocol=gossip topology=exp" ;;
  esac
}

# The sgd_convex quadratic: noise scaled so that sigma = 0.01 at N = 64, d = 10.
noise=$(awk -v n="$n" -v d="$sgd_dim" 'BEGIN { printf "%.3g", 0.01 * sqrt(64 * d / (10 * n)) }')
lr=$(awk -v n="$n" 'BEGIN { printf "%.10g", 1 / n }')
for cell in "${cells[@]}"; do
  base=${cell%@*} r=$rounds platform=""
  case "$base" in avg_gossip-ring*) r=$ring_rounds ;; esac
  [ "$engine" != smpi ] || platform="launcher.speed-sigma=$(cell_sigma "$cell") launcher.speed-seed=$speed_seed"
  case "$base" in
    avg_*) flags="program=$avg_bench $(avg_flags "$base") dim=$dim rounds=$r trials=$trials
                  target=1e-2 target=1e-4 target=1e-6" ;;
    sgd_*) flags="program=$sgd_bench $(sgd_flags "$base") objective=quadratic preset=epfl zeta=1 sigma=$noise
                  batch=1 lr=$lr lr-schedule=inverse lr-decay-steps=6 local-steps=2 step-flops=1e7 dim=$sgd_dim
                  steps=$steps eval-every=10 trials=$sgd_trials target=1e-2 target=1e-3" ;;
  esac
  sweep_row "name=$(cell_file "$cell") peers=$n $platform" $flags "seed=$seed quiet=true"
done
sweep_run
