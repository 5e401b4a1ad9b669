#!/usr/bin/env bash
# Submits a sweep: a Slurm job array with one task per row of a parameter table
# (scripts/slurm/sweep.sbatch), then the aggregation job (aggregate.sbatch), which
# starts once every task succeeded (--dependency=afterok) and writes
# OUT/aggregate.csv. Prints both job ids.
#
#   scripts/slurm/submit_sweep.sh [OPTIONS] TABLE OUT [-- SBATCH_FLAGS...]
#
#   scripts/slurm/submit_sweep.sh --ntasks-per-node 8 --time 00:20:00 \
#       scripts/slurm/example_sweep.tsv results/sweep1 -- --partition=short
#
# TABLE  the parameter table: a header naming flags, one run per row (format in
#        scripts/slurm/table.py and docs/slurm.md; example: example_sweep.tsv).
#        It is copied to OUT/table.tsv, and the jobs read that copy, so the
#        original may be edited while the sweep waits in the queue.
# OUT    the output folder, created if missing:
#          OUT/table.tsv                  the table the jobs run
#          OUT/traces/<row name>.h5       one trace per row
#          OUT/logs/sweep_<A>_<a>.out     one log per array task (A = array job, a = row)
#          OUT/logs/aggregate_<j>.out     the aggregation job's log
#          OUT/aggregate.csv              one line per row, once all rows succeeded
#        Submitting again into the same OUT with the same table reruns only the
#        rows whose trace is missing or incomplete.
#
# Options (the knobs of every array task):
#   --nodes N             nodes per task (default 1)
#   --ntasks-per-node K   MPI ranks per node per task. Default: the table's largest
#                         `peers` cell spread over --nodes (rounded up); needed
#                         when the table has no peers column
#   --time T              wall-time limit per task, HH:MM:SS (default 01:00:00)
#   --throttle M          run at most M tasks at once (--array=0-<rows-1>%M)
#   --launcher L          srun (default: srun --mpi=pmix) or mpirun, for rows without
#                         a launcher cell (sets AVB_LAUNCHER)
#   --bin-dir D           where averaging_bench and sgd_bench are (default: build/apps
#                         of this checkout; sets AVB_BIN_DIR)
#   --dry-run             print the two sbatch commands instead of submitting
# SBATCH_FLAGS, after `--`, go to both sbatch commands: --partition, --account,
# --qos, --constraint, ... . The environment reaches the jobs (sbatch exports it):
# AVB_SRUN_ARGS and AVB_MPIRUN_ARGS add launcher flags; as root, mpirun also wants
# OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
#
# Output on stdout, two lines for scripts:  array_job=<id>  aggregate_job=<id>
# Exit code 0 when both were submitted; 2 for bad arguments or a bad table (one
# line on stderr names the argument); 1 when sbatch refused.
set -euo pipefail

self=submit_sweep.sh
die() {
  echo "$self: error: $*" >&2
  exit 2
}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${AVB_PYTHON:-/usr/bin/python3}

nodes=1 ntasks_per_node="" time_limit=01:00:00 throttle="" launcher=${AVB_LAUNCHER:-srun}
bin_dir=${AVB_BIN_DIR:-$root/build/apps} dry_run=0
positional=()
extra=()
need() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi; }
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) need "$@"; nodes=$2; shift 2 ;;
    --ntasks-per-node) need "$@"; ntasks_per_node=$2; shift 2 ;;
    --time) need "$@"; time_limit=$2; shift 2 ;;
    --throttle) need "$@"; throttle=$2; shift 2 ;;
    --launcher) need "$@"; launcher=$2; shift 2 ;;
    --bin-dir) need "$@"; bin_dir=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help; sbatch flags go after --)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ ${#positional[@]} -eq 2 ] || die "TABLE and OUT expected, got ${#positional[@]} argument(s): $self [OPTIONS] TABLE OUT [-- SBATCH_FLAGS]"
table=${positional[0]}
out=${positional[1]}

is_count() { case "$1" in '' | *[!0-9]* | 0*) return 1 ;; esac; }
is_count "$nodes" || die "--nodes '$nodes' must be a whole number >= 1"
[ -z "$ntasks_per_node" ] || is_count "$ntasks_per_node" || die "--ntasks-per-node '$ntasks_per_node' must be a whole number >= 1"
[ -z "$throttle" ] || is_count "$throttle" || die "--throttle '$throttle' must be a whole number >= 1"
case "$launcher" in srun | mpirun) ;; *) die "--launcher '$launcher' must be srun or mpirun" ;; esac
[[ "$time_limit" =~ ^[0-9:-]+$ ]] || die "--time '$time_limit' must be a Slurm time such as 00:30:00 or 1-00:00:00"
[ -f "$table" ] || die "TABLE $table: no such file"
[ -x "$bin_dir/averaging_bench" ] || [ -x "$bin_dir/sgd_bench" ] ||
  die "--bin-dir $bin_dir holds neither averaging_bench nor sgd_bench (build them, or pass --bin-dir)"
command -v sbatch >/dev/null || [ "$dry_run" -eq 1 ] || die "sbatch not found: is this a Slurm login node?"

# One parser for the submission, every task and the aggregation (table.py).
info=$("$python" "$here/table.py" info "$table") || exit 2
rows="" max_peers=""
eval "$info"   # rows, max_peers
if [ -n "$ntasks_per_node" ]; then
  size=(--nodes="$nodes" --ntasks-per-node="$ntasks_per_node")
elif [ -n "$max_peers" ]; then
  [ "$max_peers" -ge "$nodes" ] || die "--nodes $nodes is more than the table's largest peers ($max_peers)"
  # Always nodes x tasks per node: sweep.sbatch sets a default --ntasks-per-node,
  # which would otherwise still apply beside an --ntasks given here.
  size=(--nodes="$nodes" --ntasks-per-node=$(((max_peers + nodes - 1) / nodes)))
else
  die "--ntasks-per-node missing: the table has no peers column to size the jobs by"
fi

out=$(realpath -m -- "$out")   # absolute: the jobs may not start where we are
copy=$out/table.tsv
if [ -e "$copy" ] && ! cmp -s "$table" "$copy"; then
  die "OUT $out already holds a different sweep ($copy): choose another OUT"
fi

array=0-$((rows - 1))${throttle:+%$throttle}
export AVB_ROOT=$root AVB_BIN_DIR=$bin_dir AVB_LAUNCHER=$launcher
sweep_cmd=(sbatch --parsable --array="$array" "${size[@]}" --time="$time_limit"
  --output="$out/logs/sweep_%A_%a.out" "${extra[@]}" "$here/sweep.sbatch" "$copy" "$out")
# afterok on an array job waits for all its tasks; --kill-on-invalid-dep cancels the
# aggregation when one fails, instead of leaving it pending forever.
agg_cmd=(sbatch --parsable --kill-on-invalid-dep=yes --output="$out/logs/aggregate_%j.out"
  "${extra[@]}" "$here/aggregate.sbatch" "$copy" "$out")
if [ "$dry_run" -eq 1 ]; then   # nothing created, nothing submitted
  echo "${sweep_cmd[*]}"
  echo "${agg_cmd[*]:0:2} --dependency=afterok:<array job> ${agg_cmd[*]:2}"
  exit 0
fi
mkdir -p "$out/traces" "$out/logs" || die "OUT $out: cannot create the folder"
[ "$table" -ef "$copy" ] || cp "$table" "$copy"

# --parsable prints "<id>" or "<id>;<cluster>".
array_id=$("${sweep_cmd[@]}") || { echo "$self: sbatch refused the array job" >&2; exit 1; }
array_id=${array_id%%;*}
agg_id=$("${agg_cmd[@]:0:2}" --dependency=afterok:"$array_id" "${agg_cmd[@]:2}") || {
  echo "$self: array job $array_id is queued, but sbatch refused the aggregation job: run" \
    "scripts/slurm/aggregate.sbatch $copy $out once it is done" >&2
  exit 1
}
agg_id=${agg_id%%;*}
echo "$self: $rows row(s) as array job $array_id (logs $out/logs/sweep_${array_id}_<row>.out)," \
  "then aggregation job $agg_id -> $out/aggregate.csv" >&2
echo "array_job=$array_id"
echo "aggregate_job=$agg_id"
