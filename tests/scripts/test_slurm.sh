#!/usr/bin/env bash
# The Slurm templates of scripts/slurm/ on a real, private, single-node Slurm.
#
#   tests/scripts/test_slurm.sh AVERAGING_BENCH [SGD_BENCH [SMPI_AVERAGING_BENCH]]
#
# Starts munged, slurmctld and slurmd by hand (there is no systemd here), with
# every file -- config, key, state, sockets, logs -- in the test's scratch folder
# and free ports, so it touches no system Slurm and runs beside another copy of
# itself. Then, all with the programs given:
#   1. scripts/avbench sweep submit: a job array over a 2-peer table whose rows use both
#      launchers (srun --mpi=pmix and mpirun), a one-task array for its rows on the
#      sequential engine and, given SMPI_AVERAGING_BENCH, on SMPI, and the dependent
#      aggregation job; waits for them, checks every trace with avbench check, the
#      %A_%a logs (each row on its engine, with the tasks it needs), and that the
#      CSV has a row per table row whose values are the traces' own (and that the
#      same row under srun, mpirun, SMPI and the sequential engine gave the same
#      bits, time aside);
#   2. run.sbatch once with each launcher, and once on each single-process engine;
#   3. the same sweep submitted again: every task finds its trace complete and
#      does nothing, the aggregate is written again;
#   4. a sweep with a failing row: that task fails, and the aggregation job is
#      cancelled by Slurm (afterok never satisfied) instead of pending forever;
#   5. avbench aggregate refuses a missing and an incomplete trace, and the scripts
#      refuse bad arguments, each with one line naming it.
# 30-100 s. Every Slurm command and every wait has a timeout. On exit the jobs
# still known to this cluster are cancelled, and the three daemons are stopped by
# the PIDs this script started (never by name).
#
# The Slurm packages (slurm-wlm, munge; scripts/install-deps.sh installs them) are
# required: without them the test fails, it does not skip.
source "$(dirname "$0")/common.sh"

[ $# -ge 1 ] && [ $# -le 3 ] || die "usage: test_slurm.sh AVERAGING_BENCH [SGD_BENCH [SMPI_AVERAGING_BENCH]]"
[ -x "$1" ] || die "AVERAGING_BENCH: no program at $1 (build it first)"
AVG_BIN=$(realpath "$1")
SGD_BIN=""
if [ $# -ge 2 ]; then
  [ -x "$2" ] || die "SGD_BENCH: no program at $2 (build it first)"
  SGD_BIN=$(realpath "$2")
fi
SMPI_BIN=""
if [ $# -eq 3 ]; then
  [ -x "$3" ] || die "SMPI_AVERAGING_BENCH: no program at $3 (build the smpi preset: cmake --preset smpi && cmake --build build-smpi)"
  SMPI_BIN=$(realpath "$3")
fi
SLURM_DIR=$AVB_REPO/scripts/slurm
SWEEP=("$AVB_TOOLS" sweep)   # the sweep driver, for submit
BIN_DIR=$(dirname "$AVG_BIN")   # rows whose program is '-' run averaging_bench from here

# --- Slurm and munge are required ---------------------------------------------------
for cmd in munged slurmctld slurmd sbatch srun scontrol squeue scancel; do
  command -v "$cmd" >/dev/null ||
    die "'$cmd' not found: the Slurm packages are missing (scripts/install-deps.sh installs slurm-wlm and munge)"
done

# A Slurm job of an outer allocation (CI on a cluster) must not leak into ours.
for var in $(compgen -e); do
  case "$var" in SLURM_* | SBATCH_* | SRUN_* | SALLOC_*) unset "$var" ;; esac
done

# --- a private cluster --------------------------------------------------------------
# Its files are in the scratch folder, reached through a short link in /tmp: a Unix
# socket's path has at most 107 bytes, and the scratch folder may be deep in a build
# tree (ctest's per-test TMPDIR); slurmstepd's sockets add a name and a job id to it.
mkdir -p "$SCRATCH/cluster"
C=$(mktemp -u /tmp/avb-slurm.XXXXXX)
ln -s "$SCRATCH/cluster" "$C"
remove_cluster_link() { rm -f "$C"; }
mkdir -p "$C/state" "$C/spool" "$C/log" "$C/pmix"
chmod 700 "$C"   # munged refuses a key or socket in a folder others may write to
HOST=$(hostname -s)
# Two free TCP ports for slurmctld and slurmd (the defaults may belong to a real
# Slurm, or to another run of this test).
read -r CTLD_PORT SLURMD_PORT < <("$AVB_PYTHON" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
# Every process of this cluster, and of its jobs, carries this variable in its
# environment: the daemons get it at start (slurmstepd inherits slurmd's), the jobs
# through sbatch. Clean-up uses it to find what outlived the daemons.
TAG=AVB_TEST_SLURM_TAG=$SCRATCH
# Job ids start at a random value: Slurm's PMIx plugin and Open MPI name some
# files by job id, so two test clusters on one machine should not share ids.
FIRST_JOB=$((1000 + RANDOM * 10))

dd if=/dev/urandom of="$C/munge.key" bs=1024 count=1 status=none
chmod 400 "$C/munge.key"

cat >"$C/slurm.conf" <<EOF
# Written by tests/scripts/test_slurm.sh for one test run.
ClusterName=avbtest
# The address in brackets: the host name need not resolve (else start-up stalls).
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
# Our munged, not the system's socket.
AuthInfo=socket=$C/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd.log
FirstJobId=$FIRST_JOB
# linuxproc tracks a job's processes by parentage, so scancel reaches mpirun's
# ranks too (with pgid they survive it). No cgroups: nothing is mounted for them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Schedule every second, not every minute: the test waits on it.
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Advertise more CPUs than the machine has (config_overrides: slurmd believes the
# config), so that several 2-rank jobs run at once instead of pending.
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=00:10:00 State=UP
EOF
# PMIx's per-step folders go under our scratch, not /tmp/spmix_appdir_<uid>_<job>.
echo "PMIxCliTmpDirBase=$C/pmix" >"$C/mpi.conf"
export SLURM_CONF=$C/slurm.conf

DAEMON_PIDS=()   # in start order; stopped in reverse
# Starts a daemon in the foreground of its own session (setsid: a signal to this
# test's process group does not reach it); $! is the daemon itself, since setsid
# does not fork when its caller is not a process group leader.
start_daemon() {
  local name=$1
  shift
  env "$TAG" setsid "$@" </dev/null >"$C/log/$name.out" 2>&1 &
  DAEMON_PIDS+=("$!")
  say "started $name (pid $!)"
}

# Clean-up (runs on every exit): cancel our jobs, wait for them, stop the daemons.
stop_cluster() {
  if [ ${#DAEMON_PIDS[@]} -ge 2 ] && kill -0 "${DAEMON_PIDS[1]}" 2>/dev/null; then
    local jobs
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ') || jobs=""
    if [ -n "${jobs// /}" ]; then
      say "cleanup: cancelling jobs $jobs"
      # shellcheck disable=SC2086
      timeout 10 scancel $jobs 2>/dev/null || true
      local until=$((SECONDS + 15))
      while [ $SECONDS -lt $until ] && [ -n "$(timeout 5 squeue -h -o %A 2>/dev/null)" ]; do
        sleep 0.5
      done
    fi
  fi
  local i pid t
  for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${DAEMON_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    t=0
    while kill -0 "$pid" 2>/dev/null && [ $t -lt 50 ]; do
      sleep 0.2
      t=$((t + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # Whatever outlived them (a slurmstepd, a rank of a job that would not cancel)
  # carries our tag; nothing else on the machine does.
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" != $$ ] || continue
    if grep -qzxF "$TAG" "/proc/$p/environ" 2>/dev/null; then
      say "cleanup: killing leftover pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-80))"
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
}
avb_cleanup_hooks+=(stop_cluster)

# A watchdog: after WATCHDOG seconds it sends SIGTERM to this script, which then
# fails and cleans up (the EXIT trap). It ends well before ctest's TIMEOUT, which
# would kill the script without clean-up and leave the daemons running. In its own
# process group (setsid), so that clean-up stops it and its sleep together.
WATCHDOG=200
trap 'die "not done after $WATCHDOG s (watchdog)"' TERM
setsid bash -c "sleep $WATCHDOG && kill -TERM $$" </dev/null >/dev/null 2>&1 &
WATCHDOG_PID=$!
stop_watchdog() { kill -TERM -- "-$WATCHDOG_PID" 2>/dev/null || true; }
avb_cleanup_hooks+=(stop_watchdog)
avb_cleanup_hooks+=(remove_cluster_link)   # last: stopping the cluster uses it
# The mpirun session bases this test's jobs left in /tmp (sweep_driver.py's
# _mpirun: Open MPI empties them, an array task cannot remove its own): the empty
# ones made since the test began.
touch "$SCRATCH/started"
remove_session_bases() {
  find /tmp -maxdepth 1 -name "avb-ompi.$(id -u).*" -type d -empty -newer "$SCRATCH/started" -delete 2>/dev/null || true
}
avb_cleanup_hooks+=(remove_session_bases)

# Prints a daemon's log and ends the test.
daemon_failed() {
  local f
  for f in "$C"/log/*; do
    echo "---- $f" >&2
    tail -n 20 "$f" >&2
  done
  die "$*"
}

t_start=$(now)
start_daemon munged munged --foreground --force --socket="$C/munge.sock" --key-file="$C/munge.key" \
  --pid-file="$C/munged.pid" --seed-file="$C/munge.seed" --log-file="$C/log/munged.log"
for _ in $(seq 50); do [ -S "$C/munge.sock" ] && break; sleep 0.1; done
[ -S "$C/munge.sock" ] || daemon_failed "munged did not create its socket in 5 s"
start_daemon slurmctld slurmctld -D
start_daemon slurmd slurmd -D
# Up when the node is idle; a daemon that died says why in its log.
up=0
for _ in $(seq 100); do
  for pid in "${DAEMON_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || daemon_failed "a daemon (pid $pid) exited at start"; done
  if timeout 5 scontrol -o show node "$HOST" 2>/dev/null | grep -q 'State=IDLE'; then up=1; break; fi
  sleep 0.2
done
[ "$up" -eq 1 ] || daemon_failed "the node did not become idle in 20 s"
ok "single-node Slurm up in $(elapsed "$t_start") s (slurmctld port $CTLD_PORT, slurmd port $SLURMD_PORT)"
timeout 10 srun --mpi=list 2>&1 | grep -qw pmix ||
  die "srun --mpi=list does not offer pmix: the Slurm PMIx plugin or libpmix is missing (scripts/install-deps.sh)"

# --- waiting for jobs -----------------------------------------------------------------
TERMINAL='COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE'
# Prints "<job id> <state>" per job (per task of an array), sorted by job id.
job_states() {
  timeout 10 scontrol -o show job "$1" 2>/dev/null |
    sed -n 's/^JobId=\([0-9]*\) .*JobState=\([A-Z_]*\).*/\1 \2/p' | sort -n
}
# Waits until every job in ID (a job, or an array with all its tasks) has ended,
# polling scontrol (sbatch --wait polls slowly, and returns 0 for a cancelled job).
wait_job() {
  local id=$1 limit=$2 states t0=$SECONDS
  while :; do
    states=$(job_states "$id")
    if [ -n "$states" ] && ! grep -qvE " ($TERMINAL)\$" <<<"$states"; then
      return 0
    fi
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      bad "job $id not done after $limit s:"
      printf '%s\n' "$states" | sed 's/^/    /' >&2
      timeout 10 squeue >&2 || true
      return 1
    fi
    sleep 0.5
  done
}
# Fails unless every job (or array task) of ID ended in STATE.
expect_state() {
  local id=$1 want=$2 what=$3 states
  states=$(job_states "$id")
  if [ -n "$states" ] && ! grep -qv " $want\$" <<<"$states"; then
    ok "$what: $(wc -l <<<"$states") job(s) $want"
  else
    bad "$what: expected every job $want, got: $(tr '\n' ' ' <<<"$states")"
  fi
}
# Runs a submission helper with the tag in its (and its jobs') environment.
tagged() { env "$TAG" "$@"; }

# --- 1. a sweep over both launchers ----------------------------------------------------
ROUNDS=6
TRIALS=2
TABLE=$SCRATCH/table.tsv
{
  echo "# 2 peers; each config runs under both launchers (and gossip on every engine)"
  echo "name               engine      launcher  peers  program    protocol   fail-rate  rounds   trials   seed  quiet"
  echo "moshpit-srun       openmpi     srun      2      $AVG_BIN   moshpit    0          $ROUNDS  $TRIALS  3     true"
  echo "moshpit-mpirun     -           mpirun    2      $AVG_BIN   moshpit    0          $ROUNDS  $TRIALS  3     true"
  echo "gossip-srun        -           srun      2      $AVG_BIN   gossip     0.1        $ROUNDS  $TRIALS  5     true"
  # '-': the job's defaults (engine openmpi, launcher from --launcher mpirun, peers
  # = its tasks, program = averaging_bench from --bin-dir).
  echo "gossip-mpirun      -           -         -      -          gossip     0.1        $ROUNDS  $TRIALS  5     true"
  # One process for both peers, in a one-task job of its own array.
  echo "gossip-sequential  sequential  -         2      $AVG_BIN   gossip     0.1        $ROUNDS  $TRIALS  5     true"
  if [ -n "$SMPI_BIN" ]; then
    echo "gossip-smpi        smpi        -         2      $SMPI_BIN  gossip     0.1        $ROUNDS  $TRIALS  5     true"
  fi
  if [ -n "$SGD_BIN" ]; then
    # sgd_bench has no --rounds: '-' leaves it out (its default 1000 steps take a second).
    echo "sgd-srun           -           srun      2      $SGD_BIN   moshpit    0          -        $TRIALS  7     true"
    echo "sgd-mpirun         -           mpirun    2      $SGD_BIN   moshpit    0          -        $TRIALS  7     true"
  fi
} >"$TABLE"
ROWS=$(grep -cvE '^\s*(#|$)' "$TABLE")
ROWS=$((ROWS - 1))   # the header
OUT=$SCRATCH/sweep
t0=$(now)
if ! sub=$(tagged timeout 30 "${SWEEP[@]}" submit --ntasks-per-node 2 --time 00:05:00 --launcher mpirun \
  --bin-dir "$BIN_DIR" "$TABLE" "$OUT" 2>"$SCRATCH/submit.err"); then
  cat "$SCRATCH/submit.err" >&2
  die "avbench sweep submit failed"
fi
# Two arrays: the Open MPI rows on 2 tasks each, the single-process rows on 1.
mapfile -t ids < <(sed -n 's/^array_job=//p' <<<"$sub")
ARRAY=${ids[0]:-} ARRAY1=${ids[1]:-}
AGG=$(sed -n 's/^aggregate_job=//p' <<<"$sub")
[ -n "$ARRAY" ] && [ -n "$ARRAY1" ] && [ -n "$AGG" ] || die "avbench sweep submit printed not two arrays and an aggregation: $sub"
ok "avbench sweep submit: array jobs $ARRAY and $ARRAY1 ($ROWS rows), aggregation job $AGG"

# 2. meanwhile, one single run per launcher (the node has CPUs for all of them).
RUN_IDS=()
for launcher in srun mpirun; do
  # AVB_ROOT: the job would otherwise look for the checkout in the folder sbatch
  # runs from, which under ctest is the build folder.
  id=$(AVB_ROOT=$AVB_REPO AVB_LAUNCHER=$launcher AVB_OUT=$SCRATCH/single tagged timeout 30 sbatch --parsable --ntasks-per-node=2 \
    --time=00:05:00 --output="$SCRATCH/single-$launcher.out" --chdir="$SCRATCH" \
    "$SLURM_DIR/run.sbatch" "$AVG_BIN" --protocol moshpit --rounds "$ROUNDS" --trials "$TRIALS" --seed 3 --quiet) ||
    die "sbatch run.sbatch ($launcher) refused"
  RUN_IDS+=("${id%%;*}")
done
# And one per single-process engine: one task runs both peers.
SINGLE=(sequential:"$AVG_BIN")
[ -z "$SMPI_BIN" ] || SINGLE+=(smpi:"$SMPI_BIN")
for engine_bin in "${SINGLE[@]}"; do
  engine=${engine_bin%%:*}
  id=$(AVB_ROOT=$AVB_REPO AVB_ENGINE=$engine AVB_PEERS=2 AVB_OUT=$SCRATCH/single tagged timeout 30 sbatch --parsable \
    --ntasks-per-node=1 --time=00:05:00 --output="$SCRATCH/single-$engine.out" --chdir="$SCRATCH" \
    "$SLURM_DIR/run.sbatch" "${engine_bin#*:}" --protocol moshpit --rounds "$ROUNDS" --trials "$TRIALS" --seed 3 --quiet) ||
    die "sbatch run.sbatch ($engine) refused"
  RUN_IDS+=("${id%%;*}")
done

wait_job "$ARRAY" 90 && wait_job "$ARRAY1" 60 && wait_job "$AGG" 30 || true
say "sweep and aggregation done in $(elapsed "$t0") s"
expect_state "$ARRAY" COMPLETED "array job $ARRAY"
expect_state "$ARRAY1" COMPLETED "array job $ARRAY1 (one task each)"
expect_state "$AGG" COMPLETED "aggregation job $AGG"
if ! grep -q ' COMPLETED$' <<<"$(job_states "$AGG")"; then
  for f in "$OUT"/logs/*; do
    echo "---- $f" >&2
    tail -n 15 "$f" >&2
  done
fi

# Logs: one per task, named by %A_%a, each showing the launcher or engine its row
# asked for (the rows' names end in it) and the tasks of its job.
names=$(awk '!/^[[:space:]]*(#|$)/ && n++ { print $1 }' "$TABLE")
i=0
for name in $names; do
  how=${name##*-}
  case "$how" in
    srun | mpirun) array=$ARRAY tasks=2 engine=openmpi cmd="^avbench sweep: $how " ;;
    sequential) array=$ARRAY1 tasks=1 engine=$how cmd="averaging_bench --engine sequential --peers 2 " ;;
    smpi) array=$ARRAY1 tasks=1 engine=$how cmd="smpirun.sh -n 2 " ;;
  esac
  log=$OUT/logs/sweep_${array}_$i.out
  if [ ! -f "$log" ]; then
    bad "no log $log for row $i"
  elif grep -q -- "$cmd" "$log" && grep -qF "($tasks task(s)): row '$name', engine $engine" "$log"; then
    ok "log sweep_${array}_$i.out: row $i ($name) ran on $engine via $how in a $tasks-task job"
  else
    bad "log sweep_${array}_$i.out: row $i ($name) does not show '$cmd' and $tasks task(s) on $engine"
  fi
  i=$((i + 1))
done

# Traces: valid and complete.
for name in moshpit-srun moshpit-mpirun gossip-srun gossip-mpirun gossip-sequential ${SMPI_BIN:+gossip-smpi}; do
  check_trace "$OUT/$name.h5" --kind averaging --peers 2 --trials "$TRIALS" --complete 1 --rounds "$ROUNDS"
done
if [ -n "$SGD_BIN" ]; then
  for name in sgd-srun sgd-mpirun; do
    check_trace "$OUT/$name.h5" --kind sgd --peers 2 --trials "$TRIALS" --complete 1
  done
fi

# The aggregate: one row per table row, in order, each holding its trace's values.
check_aggregate() {
  local csv=$1 report
  if report=$(timeout 60 "$AVB_PYTHON" - "$TABLE" "$OUT" "$csv" 2>&1 <<'PY'
import csv, math, sys
import h5py, numpy as np
table, out, path = sys.argv[1:]
rows = [l.split() for l in open(table) if l.strip() and not l.lstrip().startswith("#")]
header, rows = rows[0], rows[1:]
got = list(csv.DictReader(open(path)))
problems = []
if len(got) != len(rows):
    problems.append(f"{len(got)} CSV rows for {len(rows)} table rows")
for i, (cells, rec) in enumerate(zip(rows, got)):
    cells = dict(zip(header, cells))
    if rec["row"] != str(i) or rec["name"] != cells["name"]:
        problems.append(f"CSV row {i} is {rec['row']}/{rec['name']}, expected {i}/{cells['name']}")
    for k, v in cells.items():
        if k == "engine" and v == "-":
            v = "openmpi"  # the CSV's engine is the trace's
        if rec.get(k) != v:
            problems.append(f"{cells['name']}: column {k} = {rec.get(k)!r}, table says {v!r}")
    with h5py.File(f"{out}/{cells['name']}.h5", "r") as f:
        if rec["config_protocol"] != f["config"].attrs["protocol"]:
            problems.append(f"{cells['name']}: config_protocol {rec['config_protocol']}")
        if rec["n_peers"] != str(f.attrs["n_peers"]) or rec["run_kind"] != f.attrs["run_kind"]:
            problems.append(f"{cells['name']}: n_peers/run_kind {rec['n_peers']}/{rec['run_kind']}")
        s = f["summary"]
        if rec["trials"] != str(len(s["trial"])):
            problems.append(f"{cells['name']}: trials {rec['trials']}")
        metrics = [c for c in s if c not in ("trial", "seed", "complete", "diverged", "targets")]
        for c in metrics:
            v = s[c][()].astype(np.float64)
            if c == "bytes_sent":  # the CSV's bytes are per peer, as the programs print them
                v = v / f.attrs["n_peers"]
            v = v[np.isfinite(v)]  # no trial diverges here
            name = {"bytes_sent": "bytes_per_peer"}.get(c, c)
            if rec[f"{name}_n"] != str(len(v)):
                problems.append(f"{cells['name']}: {name}_n = {rec[f'{name}_n']}, trace has {len(v)} values")
            if not len(v):
                continue
            want = float(np.mean(v))
            have = float(rec[f"{name}_mean"])
            if have != want:
                problems.append(f"{cells['name']}: {name}_mean = {have!r}, trace gives {want!r}")
        if not metrics:
            problems.append(f"{cells['name']}: no metric columns")
# One config under both launchers and on every engine: the results must be the
# same bits (not time).
by_name = {r["name"]: r for r in got}
for a, b in [("moshpit-srun", "moshpit-mpirun"), ("gossip-srun", "gossip-mpirun"), ("sgd-srun", "sgd-mpirun"),
             ("gossip-srun", "gossip-sequential"), ("gossip-srun", "gossip-smpi")]:
    if a in by_name and b in by_name:
        for c in by_name[a]:
            if c.endswith(("_mean", "_se", "_n")) and not c.startswith("time_") and by_name[a][c] != by_name[b][c]:
                problems.append(f"{a} and {b} differ in {c}: {by_name[a][c]} vs {by_name[b][c]}")
print("\n".join(problems) if problems else f"{len(got)} rows match their traces")
sys.exit(1 if problems else 0)
PY
  ); then
    ok "aggregate $(basename "$csv"): $report"
  else
    bad "aggregate $(basename "$csv"):"
    printf '%s\n' "$report" | sed 's/^/    /' >&2
  fi
}
if [ -f "$OUT/aggregate.csv" ]; then check_aggregate "$OUT/aggregate.csv"; else bad "no $OUT/aggregate.csv"; fi

# The single runs: the same values on every engine and launcher.
for id in "${RUN_IDS[@]}"; do
  wait_job "$id" 30 || true
  expect_state "$id" COMPLETED "run.sbatch job $id"
  check_trace "$SCRATCH/single/run_$id.h5" --kind averaging --peers 2 --trials "$TRIALS" --complete 1 --rounds "$ROUNDS"
done
for launcher in srun mpirun; do
  grep -q "^run.sbatch: $launcher " "$SCRATCH/single-$launcher.out" && ok "run.sbatch log shows $launcher" ||
    bad "run.sbatch log $SCRATCH/single-$launcher.out does not show $launcher"
done
grep -q "^run.sbatch: $AVG_BIN --engine sequential --peers 2 " "$SCRATCH/single-sequential.out" &&
  ok "run.sbatch log shows the sequential engine" || bad "run.sbatch log single-sequential.out does not show --engine sequential"
[ -z "$SMPI_BIN" ] || { grep -q "^run.sbatch: .*smpirun.sh -n 2 $SMPI_BIN " "$SCRATCH/single-smpi.out" &&
  ok "run.sbatch log shows smpirun.sh" || bad "run.sbatch log single-smpi.out does not show smpirun.sh -n 2"; }
same=$(timeout 60 "$AVB_PYTHON" - "$SCRATCH/single" "${RUN_IDS[@]}" 2>&1 <<'PY'
import sys
import h5py, numpy as np
folder, ids = sys.argv[1], sys.argv[2:]
def values(i):
    with h5py.File(f"{folder}/run_{i}.h5", "r") as f:
        s = f["summary"]
        return f.attrs["engine"], {c: s[c][()] for c in s if c != "time"}
ref_engine, ref = values(ids[0])
for i in ids[1:]:
    engine, got = values(i)
    diff = [c for c in ref if not np.array_equal(ref[c], got[c])]
    if diff:
        print(f"run_{i} ({engine}) differs from run_{ids[0]} ({ref_engine}) in {', '.join(diff)}")
        sys.exit(1)
print(f"{len(ids)} runs on {', '.join(sorted({values(i)[0] for i in ids}))}: the same /summary bits, time aside")
PY
) && ok "run.sbatch: $same" || bad "run.sbatch: $same"

# --- 3. the same sweep again: nothing to redo -----------------------------------------
mv "$OUT/aggregate.csv" "$SCRATCH/aggregate.first.csv"
sub=$(tagged timeout 30 "${SWEEP[@]}" submit --ntasks-per-node 2 --time 00:05:00 --launcher mpirun \
  --bin-dir "$BIN_DIR" "$TABLE" "$OUT" 2>/dev/null) || die "avbench sweep submit (again) failed"
mapfile -t ids < <(sed -n 's/^array_job=//p' <<<"$sub")
ARRAY2=${ids[0]:-} ARRAY21=${ids[1]:-}
AGG2=$(sed -n 's/^aggregate_job=//p' <<<"$sub")
wait_job "$ARRAY2" 60 && wait_job "$ARRAY21" 60 && wait_job "$AGG2" 30 || true
expect_state "$ARRAY2" COMPLETED "resubmitted array job $ARRAY2"
expect_state "$ARRAY21" COMPLETED "resubmitted array job $ARRAY21"
expect_state "$AGG2" COMPLETED "resubmitted aggregation job $AGG2"
skipped=$(grep -l 'is already complete: nothing to do' "$OUT"/logs/sweep_"${ARRAY2}"_*.out \
  "$OUT"/logs/sweep_"${ARRAY21}"_*.out 2>/dev/null | wc -l)
[ "$skipped" -eq "$ROWS" ] && ok "resubmission: all $ROWS tasks found their trace complete" ||
  bad "resubmission: $skipped of $ROWS tasks skipped their complete trace"
cmp -s "$OUT/aggregate.csv" "$SCRATCH/aggregate.first.csv" && ok "resubmission: the same aggregate.csv" ||
  bad "resubmission: aggregate.csv changed"

# --- 4. a failing row: the aggregation never runs ---------------------------------------
BAD_TABLE=$SCRATCH/bad.tsv
# The broken row runs under srun: mpirun would take a minute to give up on it
# (AVB_MPIRUN_SIGKILL_TIMEOUT, scripts/slurm/launch.sh).
printf 'name launcher protocol rounds trials\nfine mpirun allreduce 2 1\nbroken srun no-such-protocol 2 1\n' >"$BAD_TABLE"
sub=$(tagged timeout 30 "${SWEEP[@]}" submit --ntasks-per-node 2 --time 00:05:00 \
  --bin-dir "$BIN_DIR" "$BAD_TABLE" "$SCRATCH/bad" 2>/dev/null) || die "avbench sweep submit (bad row) failed"
ARRAY3=$(sed -n 's/^array_job=//p' <<<"$sub")
AGG3=$(sed -n 's/^aggregate_job=//p' <<<"$sub")
wait_job "$ARRAY3" 60 && wait_job "$AGG3" 30 || true
states=$(job_states "$ARRAY3" | awk '{print $2}' | sort | tr '\n' ' ')
[ "$states" = "COMPLETED FAILED " ] && ok "failing row: its task FAILED, the other COMPLETED" ||
  bad "failing row: task states $states"
expect_state "$AGG3" CANCELLED "aggregation after a failed task"
[ ! -e "$SCRATCH/bad/aggregate.csv" ] && ok "failing row: no aggregate.csv" || bad "failing row: aggregate.csv was written"
grep -q "no-such-protocol" "$SCRATCH/bad/logs/sweep_${ARRAY3}_1.out" 2>/dev/null &&
  ok "failing row: its log names the bad value" || bad "failing row: log sweep_${ARRAY3}_1.out does not name the bad value"

# --- 5. refusals, without Slurm ----------------------------------------------------------
# Expects a command to exit with CODE and print one stderr line containing TEXT.
refuses() {
  local code=$1 text=$2 rc=0 err
  shift 2
  err=$(timeout 30 "$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq "$code" ] && grep -qF -- "$text" <<<"$err"; then
    ok "refused ($rc): $(head -n 1 <<<"$err")"
  else
    bad "expected exit $code and '$text' from: $* -- got $rc: $err"
  fi
}
AGG=("$AVB_TOOLS" aggregate)
cp -r "$OUT" "$SCRATCH/damaged"
rm "$SCRATCH/damaged/aggregate.csv" "$SCRATCH/damaged/gossip-srun.h5"
refuses 1 "row 2 (gossip-srun): no trace" "${AGG[@]}" "$TABLE" "$SCRATCH/damaged"
[ ! -e "$SCRATCH/damaged/aggregate.csv" ] && ok "missing trace: no CSV written" || bad "missing trace: a CSV was written"
cp "$OUT/gossip-srun.h5" "$SCRATCH/damaged/"
"$AVB_PYTHON" -c 'import sys, h5py; h5py.File(sys.argv[1], "r+").attrs["complete"] = 0' "$SCRATCH/damaged/moshpit-mpirun.h5"
refuses 1 "row 1 (moshpit-mpirun)" "${AGG[@]}" "$TABLE" "$SCRATCH/damaged"
refuses 2 "TABLE" "${AGG[@]}" "$SCRATCH/no-such.tsv" "$OUT"
printf 'name protocol\na moshpit extra\n' >"$SCRATCH/ragged.tsv"
refuses 2 "ragged.tsv:2: 3 fields, but the header names 2 columns" \
  "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --ntasks-per-node 2 "$SCRATCH/ragged.tsv" "$SCRATCH/x"
printf 'name out\na b.h5\n' >"$SCRATCH/out.tsv"
refuses 2 "column 'out' is not allowed" "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --ntasks-per-node 2 "$SCRATCH/out.tsv" "$SCRATCH/x"
printf 'name launcher\na ssh\n' >"$SCRATCH/launcher.tsv"
refuses 2 "launcher 'ssh'" "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --ntasks-per-node 2 "$SCRATCH/launcher.tsv" "$SCRATCH/x"
printf 'name engine\na smpy\n' >"$SCRATCH/engine.tsv"
refuses 2 "engine 'smpy' must be one of openmpi, smpi, sequential" \
  "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --ntasks-per-node 2 "$SCRATCH/engine.tsv" "$SCRATCH/x"
printf 'name engine launcher peers\na smpi srun 4\n' >"$SCRATCH/mismatch.tsv"
refuses 2 "launcher 'srun' does not start engine smpi" \
  "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" "$SCRATCH/mismatch.tsv" "$SCRATCH/x"
printf 'name engine peers\na sequential -\n' >"$SCRATCH/nopeers.tsv"
refuses 2 "engine sequential runs every peer in one task, so the row needs a peers cell" \
  "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --ntasks-per-node 2 "$SCRATCH/nopeers.tsv" "$SCRATCH/x"
refuses 2 "AVB_PEERS" env SLURM_JOB_ID=1 AVB_ENGINE=smpi AVB_ROOT="$AVB_REPO" bash "$SLURM_DIR/run.sbatch" averaging_bench
refuses 2 "AVB_ENGINE 'mpich' must be openmpi, smpi or sequential" \
  env SLURM_JOB_ID=1 AVB_ENGINE=mpich AVB_ROOT="$AVB_REPO" bash "$SLURM_DIR/run.sbatch" averaging_bench
refuses 2 "--launcher: invalid choice: 'ssh'" "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --launcher ssh "$TABLE" "$SCRATCH/x"
refuses 2 "--ntasks-per-node missing" "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" "$BAD_TABLE" "$SCRATCH/x"
refuses 2 "$SCRATCH/nope.tsv: cannot read the table" "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" "$SCRATCH/nope.tsv" "$SCRATCH/x"
refuses 2 "already holds a different sweep" "${SWEEP[@]}" submit --bin-dir "$BIN_DIR" --ntasks-per-node 2 "$BAD_TABLE" "$OUT"
refuses 2 "not inside a Slurm job" env -u SLURM_JOB_ID AVB_ROOT="$AVB_REPO" bash "$SLURM_DIR/run.sbatch" averaging_bench

say "total $(elapsed "$t_start") s with the cluster up"
finish
