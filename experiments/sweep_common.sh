# shellcheck shell=bash
# Shared by experiments/<name>/run*.sh, which source it with their name
# (`source "$(dirname "${BASH_SOURCE[0]}")/../sweep_common.sh" run.sh`): the settings every experiment's sweep has, and the hand-over
# of its rows to scripts/avbench sweep (docs/sweeps.md), which runs them with a job
# pool, skips complete traces, redoes stopped ones and stops cleanly on a signal.
# Each script only turns its own settings into rows:
#
#   (sourcing it)         # settings below -> here, root, engine, launcher, avg_bench, sgd_bench, results, python
#   sweep_row name=CELL peers=N program="$avg_bench" protocol=gossip target=1e-4 target=1e-9 ...
#   sweep_run             # writes $RESULTS/table.tsv and runs it (or submits it: SLURM=1)
#
# Settings, as environment variables [default]:
#   JOBS         rows run at the same time     [1]  (an SMPI row uses one core)
#   RESULTS      output folder                 [<experiment>/results]
#   AVB_ENGINE   sequential: build/ programs with --engine sequential --peers N, every
#                peer in one process (the same values; time an alpha-beta estimate);
#                smpi: build-smpi/ programs under scripts/smpirun.sh (simulated time);
#                openmpi: build/ programs under `mpirun -n N --oversubscribe`
#                [sequential; smpi for the studies that need a network simulation,
#                which set avb_default_engine=smpi before sourcing this file]
#   AVERAGING_BENCH, SGD_BENCH   the programs  [build-smpi/apps/... or build/apps/...]
#   PYTHON       interpreter with h5py         [/usr/bin/python3]
#   SLURM        1: submit the rows to Slurm as a job array instead (openmpi only;
#                `scripts/avbench sweep submit`); SLURM_ARGS are its options, e.g.
#                SLURM_ARGS="--time 02:00:00 -- --partition=long"
# Exit status: scripts/avbench sweep's (0 all done, 1 some row failed, 2 bad settings,
# 130/143 stopped).

die() {
  echo "$self: error: $*" >&2
  exit 2
}

is_count() { case "$1" in '' | *[!0-9]*) return 1 ;; *) [ "$1" -ge 1 ] ;; esac; }

sweep_init() {
  self=$1
  root=$(cd "$here/../.." && pwd)
  engine=${AVB_ENGINE:-${avb_default_engine:-sequential}} python=${PYTHON:-/usr/bin/python3} jobs=${JOBS:-1}
  case "$engine" in
    sequential) launcher=sequential bin=$root/build/apps ;;
    smpi) launcher=smpi bin=$root/build-smpi/apps ;;
    openmpi) launcher=mpirun bin=$root/build/apps ;;
    *) die "AVB_ENGINE='$engine' is not sequential, smpi or openmpi" ;;
  esac
  [ "${SLURM:-0}" != 1 ] || [ "$engine" = openmpi ] || die "SLURM=1 runs the Open MPI build: set AVB_ENGINE=openmpi"
  avg_bench=$(realpath -m "${AVERAGING_BENCH:-$bin/averaging_bench}")
  sgd_bench=$(realpath -m "${SGD_BENCH:-$bin/sgd_bench}")
  results=$(realpath -m "${RESULTS:-$here/results}")
  mkdir -p "$results" || die "RESULTS=$results: cannot create the folder"
  rows=$(mktemp "${TMPDIR:-/tmp}/avb-rows.XXXXXX")
  trap 'rm -f "$rows"' EXIT
}

# per_n SPEC N NAME: the value for N in "default N:value ..." (a per-N setting such as
# STEPS="1000 1024:200"), a positive integer; dies naming NAME otherwise.
per_n() {
  local spec=$1 n=$2 name=$3 value="" tok
  for tok in $spec; do case "$tok" in *:*) ;; *) value=$tok ;; esac; done  # the bare default
  for tok in $spec; do case "$tok" in "$n":*) value=${tok#*:} ;; esac; done  # N's own, if any
  [ -n "$value" ] || die "$name='$spec' has no value for N = $n (add a bare default or $n:VALUE)"
  is_count "$value" || die "$name='$spec': '$value' (N = $n) is not a positive integer"
  echo "$value"
}

sweep_row() { echo "$*" >>"$rows"; }

sweep_run() {
  local table=$results/table.tsv
  AVB_PYTHON=$python "$root/scripts/avbench" sweep table "$rows" >"$table.new" || exit 2
  mv "$table.new" "$table"
  rm -f "$rows"
  # exec: signals sent to the experiment's script reach the driver itself.
  if [ "${SLURM:-0}" = 1 ]; then
    # shellcheck disable=SC2086  # SLURM_ARGS: options, split on spaces
    AVB_PYTHON=$python exec "$root/scripts/avbench" sweep submit "$table" "$results" ${SLURM_ARGS:-}
  fi
  AVB_PYTHON=$python exec "$root/scripts/avbench" sweep run --jobs "$jobs" --launcher "$launcher" "$table" "$results"
}

# The experiment's folder: where the script that sources this file lives.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
sweep_init "$1"
