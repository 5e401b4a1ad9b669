# Shared by run.sbatch and sweep.sbatch; sourced, not run.
# shellcheck shell=bash disable=SC2034  # AVB_LAUNCH, AVB_PROGRAM, AVB_ENGINE_ARGS: for the caller
#
# Finds the repository and the programs, and builds the command that starts one
# run inside the allocation, on one of three engines (the names of
# python/avbench/sweep_table.py ENGINES, which avbench sweep uses):
#
#   openmpi     one rank per Slurm task, started by either launcher:
#     srun      srun --mpi=pmix: Slurm starts the ranks itself and Open MPI wires up
#               through PMIx (Debian's Open MPI works with pmix, not with pmi2 or none)
#     mpirun    Open MPI's own launcher: it reads the allocation from Slurm's
#               environment and, on more than one node, starts its daemons with srun
#   smpi        scripts/smpirun.sh -n AVB_PEERS, programs from build-smpi/apps: every
#               peer simulated in one process, so the job needs one task
#   sequential  PROGRAM --engine sequential --peers AVB_PEERS: every peer in one
#               process, no launcher; one task (its --threads default to the cores)
#
# Environment (sbatch passes the submitting shell's environment to the job):
#   AVB_ROOT         the avbench checkout (default: the folder sbatch was run from)
#   AVB_ENGINE       openmpi [default], smpi or sequential
#   AVB_PEERS        smpi and sequential: the number of peers (required there)
#   AVB_BIN_DIR      where averaging_bench and sgd_bench are (default
#                    AVB_ROOT/build/apps, AVB_ROOT/build-smpi/apps for smpi)
#   AVB_LAUNCHER     openmpi: srun [default] or mpirun
#   AVB_SRUN_ARGS    extra srun flags, split on spaces (e.g. "--cpu-bind=cores")
#   AVB_MPIRUN_ARGS  extra mpirun flags, split on spaces (e.g. "--bind-to none")
#   AVB_MPIRUN_SIGKILL_TIMEOUT  seconds mpirun gives the ranks to save their trace
#                    after SIGTERM before it kills them (default 30)
#   AVB_PYTHON       a Python 3 with h5py (default /usr/bin/python3, Debian's)

# The caller names itself in messages.
avb_die() {
  echo "$AVB_SELF: error: $*" >&2
  exit 2
}

# Slurm runs a copy of the batch script from its spool folder, so the repository
# cannot be found from the script's own path: it is the folder the job was
# submitted from, unless AVB_ROOT says otherwise.
AVB_ROOT=${AVB_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
[ -f "$AVB_ROOT/scripts/slurm/launch.sh" ] ||
  avb_die "AVB_ROOT=$AVB_ROOT is not an avbench checkout: submit from the repository root or set AVB_ROOT"
AVB_ENGINE=${AVB_ENGINE:-openmpi}
case "$AVB_ENGINE" in
  openmpi | sequential) AVB_BIN_DIR=${AVB_BIN_DIR:-$AVB_ROOT/build/apps} ;;
  smpi) AVB_BIN_DIR=${AVB_BIN_DIR:-$AVB_ROOT/build-smpi/apps} ;;
  *) avb_die "AVB_ENGINE '$AVB_ENGINE' must be openmpi, smpi or sequential" ;;
esac
[ "$AVB_ENGINE" = openmpi ] || [ -n "${AVB_PEERS:-}" ] ||
  avb_die "AVB_ENGINE=$AVB_ENGINE runs every peer in one process: set AVB_PEERS to their number"
AVB_PYTHON=${AVB_PYTHON:-/usr/bin/python3}
AVB_LAUNCHER=${AVB_LAUNCHER:-srun}
[ -n "${SLURM_JOB_ID:-}" ] || avb_die "not inside a Slurm job: submit this file with sbatch"

# Resolves a program given as averaging_bench / sgd_bench (looked up in
# AVB_BIN_DIR) or as a path; sets AVB_PROGRAM.
avb_find_program() {
  local p=$1
  case "$p" in
    */*) AVB_PROGRAM=$p ;;
    averaging_bench | sgd_bench) AVB_PROGRAM=$AVB_BIN_DIR/$p ;;
    *) avb_die "program '$p' must be averaging_bench, sgd_bench or a path" ;;
  esac
  [ -x "$AVB_PROGRAM" ] || avb_die "program $AVB_PROGRAM is not an executable (build it, or set AVB_BIN_DIR)"
}

# Sets the array AVB_LAUNCH to what precedes the program and AVB_ENGINE_ARGS to
# what follows it, to run NP peers on AVB_ENGINE (with LAUNCHER, for openmpi).
avb_launch_cmd() {
  local launcher=$1 np=$2
  local -a extra
  AVB_ENGINE_ARGS=()
  case "$np" in '' | *[!0-9]* | 0) avb_die "peers '$np' must be a whole number of ranks, at least 1" ;; esac
  case "$AVB_ENGINE" in
    smpi)
      AVB_LAUNCH=("$AVB_ROOT/scripts/smpirun.sh" -n "$np")
      return
      ;;
    sequential)
      AVB_LAUNCH=()
      AVB_ENGINE_ARGS=(--engine sequential --peers "$np")
      return
      ;;
  esac
  if [ -n "${SLURM_NTASKS:-}" ] && [ "$np" -gt "$SLURM_NTASKS" ]; then
    avb_die "peers=$np, but the job has only $SLURM_NTASKS tasks (sbatch --ntasks, or --nodes x --ntasks-per-node)"
  fi
  case "$launcher" in
    srun)
      read -r -a extra <<<"${AVB_SRUN_ARGS:-}"
      # --kill-on-bad-exit: one rank that dies must end the others, which would
      # otherwise wait for it in a collective until the time limit.
      AVB_LAUNCH=(srun --mpi=pmix --ntasks="$np" --kill-on-bad-exit=1 "${extra[@]}")
      ;;
    mpirun)
      read -r -a extra <<<"${AVB_MPIRUN_ARGS:-}"
      # On SIGTERM (Slurm's warning before the time limit, scancel) mpirun passes
      # the signal on and kills the ranks after odls_base_sigkill_timeout, 1 s by
      # default: too short for rank 0 to save the trace of a long run. The price:
      # when a rank fails, mpirun takes about twice this long to end the others.
      local grace=${AVB_MPIRUN_SIGKILL_TIMEOUT:-30}
      case "$grace" in '' | *[!0-9]*) avb_die "AVB_MPIRUN_SIGKILL_TIMEOUT '$grace' must be whole seconds" ;; esac
      # A session folder base of the job's own: Open MPI 4's mpiruns on a node share
      # one otherwise, and two starting at once can fail to create it
      # (python/avbench/sweep_driver.py, _mpirun). Open MPI leaves it empty.
      AVB_LAUNCH=(mpirun -n "$np" --mca odls_base_sigkill_timeout "$grace"
        --mca orte_tmpdir_base "/tmp/avb-ompi.$(id -u).${SLURM_JOB_ID:-$$}" "${extra[@]}")
      ;;
    *) avb_die "launcher '$launcher' must be srun or mpirun (AVB_LAUNCHER or the table's launcher column)" ;;
  esac
}
