#!/usr/bin/env bash
# averaging_bench's command line on 2 peers: bad input is refused with one clear
# line and exit code 2, without creating or touching any file; good input (flags,
# --config files, --help) works and writes a valid trace.
#
#   tests/scripts/test_cli.sh BINARY ENGINE [sample]
#     ENGINE: mpi (mpirun) or smpi (smpirun.sh)
#     sample: the refusals whose C++ code another kept case runs (SLICE_REPEATS
#     below) are left to the full run (build/, Open MPI), which checks each flag's
#     message; every other case runs
#
# What a refusal must look like is checked by bad_case (cli_common.sh, shared with
# test_sgd_cli.sh): exit code 2, one "averaging_bench: error: --flag: ..." line on
# stderr naming what is accepted, no run header, and the working folder unchanged
# (a pre-existing trace keeps its SHA-256).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/cli_common.sh"

[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = sample ]; } || die "usage: test_cli.sh BINARY mpi|smpi [sample]"
cli_init averaging_bench "$1" "$2"
# The sample slice (the sanitizer build, SMPI): left out are the refusals whose
# C++ code another kept case runs: an integer flag's bad value (parse_integer,
# which also checks the range; dim_zero stays), a range refused by src's shared
# require() (fail_rate stays), a name not in a word list (the shared word-list
# option; failure stays), a flag refused by refuse_foreign_flags (foreign_grid
# stays). The ranges checked by code of their own, the flags with a parser of
# their own, every combination, topology file, --out and --config case run.
SLICE_REPEATS="trials group_size min_group_size lattice_q
  compute_flops_negative detection_timeout_negative
  placement key_update weights failure_kind swarm_mode swarm_clock
  foreign_topology foreign_collective foreign_lattice_q foreign_clock foreign_quantizer pushsum_quantizer"
if [ "${3:-}" = sample ]; then
  CLI_LEFT_OUT=$(echo $SLICE_REPEATS)
  say "sample: $(echo $SLICE_REPEATS | wc -w) refusals that repeat another case's C++ code left to the full run"
fi

# run_traced TAG TRACE ROUNDS ARGS...: a run of 2 trials of ROUNDS rounds with ARGS,
# writing $work/TRACE, must succeed and leave a valid trace of 2 complete trials;
# returns non-zero (the failure recorded) when the run fails.
run_traced() {
  local tag=$1 trace=$2 rounds=$3
  shift 3
  run_app "$tag" "$@" --trials 2 --rounds "$rounds" --out "$trace" --overwrite --quiet
  if [ "$RC" -ne 0 ]; then
    bad "$tag: averaging_bench $*: exit code $RC"
    show_logs
    return 1
  fi
  check_trace "$work/$trace" --peers 2 --trials 2 --complete 1 --rounds "$rounds"
}

# The refusals that also run through mpirun (cli_common.sh: the others run on the
# sequential engine, the same parsing code): one of each kind.
LAUNCHED="fail_rate foreign_grid wait_without_work config_bad_value out_exists unknown_flag"

# ---- --help ------------------------------------------------------------------
check_help --config --protocol --fail-rate --failure --join-rate --stragglers --straggler-slowdown --straggler-sigma \
  --wait --quorum --deadline-k --deadline-floor --detection-timeout \
  --compute-flops --on-failure --collective --grid --placement \
  --key-update --group-size --min-group-size --topology --weights --alive-weights --mode --clock --quantizer \
  --lattice-q --lattice-eps --dim --rounds --trials --seed \
  --target --stop-at-target --out --overwrite --quiet

# ---- a good run; its trace is then the pre-existing file the bad cases must keep
run_app good --fail-rate 0.05 --trials 2 --rounds 10 --dim 3 --out existing.h5 --quiet
if [ "$RC" -ne 0 ]; then
  bad "good run: exit code $RC"
  show_logs
  die "no trace to protect; stopping"
fi
ok "good run (--fail-rate 0.05 --trials 2 --rounds 10 --dim 3): exit 0"
check_trace "$work/existing.h5" --peers 2 --trials 2 --complete 1 --rounds 10
no_temp_files

# ---- bad input ---------------------------------------------------------------------
# Every case but the --out ones also asks to overwrite the existing trace: a valid
# --out and --overwrite must not lead the app to touch it before refusing.
keep=(--out existing.h5 --overwrite)
bad_case fail_rate '--fail-rate' '[0, 1]' -- --fail-rate 1.5 "${keep[@]}"
bad_case protocol '--protocol' 'nope|allreduce' -- --protocol nope "${keep[@]}"
bad_case dim_zero '--dim' '[1, ' -- --dim 0 "${keep[@]}"
bad_case dim_text '--dim' 'abc|[1, ' -- --dim abc "${keep[@]}"
bad_case failure '--failure' 'sometimes|transient|permanent' -- --failure sometimes "${keep[@]}"
bad_case on_failure '--on-failure' 'partial|abort|survivors' -- --on-failure partial "${keep[@]}"
bad_case trials '--trials' '[1, ' -- --trials 0 "${keep[@]}"
bad_case grid_shape '--grid' '3y3|32x32' -- --protocol moshpit --grid 3y3 "${keep[@]}"
bad_case grid_small '--grid' '1x1|1 cell|2 peers' -- --protocol moshpit --grid 1x1 "${keep[@]}"
bad_case placement '--placement' 'diagonal|random|rank' -- --protocol moshpit --placement diagonal "${keep[@]}"
bad_case key_update '--key-update' 'sideways|axis|chunk' -- --protocol moshpit --key-update sideways "${keep[@]}"
bad_case group_size '--group-size' '[2, ' -- --protocol random-groups --group-size 1 "${keep[@]}"
bad_case min_group_size '--min-group-size' '[2, ' -- --protocol moshpit --min-group-size 0 "${keep[@]}"
bad_case foreign_grid '--grid' 'allreduce|--collective' -- --protocol allreduce --grid 2x2 "${keep[@]}"
bad_case topology '--topology' 'star|ring|random-regular:K|file:PATH' -- --protocol gossip --topology star "${keep[@]}"
bad_case topology_shape '--topology' 'random-regular:5|below the number of peers' -- --protocol gossip --topology random-regular:5 "${keep[@]}"
bad_case topology_file '--topology' 'no-such.edges' -- --protocol gossip --topology file:no-such.edges "${keep[@]}"
bad_case weights '--weights' 'max|uniform|metropolis' -- --protocol gossip --weights max "${keep[@]}"
bad_case alive_weights '--alive-weights' '--weights metropolis' -- --protocol gossip --alive-weights metropolis "${keep[@]}"
bad_case directed_metropolis '--weights' 'undirected' -- --protocol gossip --topology exp --weights metropolis "${keep[@]}"
bad_case foreign_topology '--topology' 'moshpit' -- --protocol moshpit --topology ring "${keep[@]}"
bad_case foreign_collective '--collective' 'gossip|--topology' -- --protocol gossip --collective ring "${keep[@]}"
bad_case unknown_flag '--bogus' '--help' -- --bogus 3 "${keep[@]}"
bad_case out_missing_dir '--out' 'no-such-dir' -- --out no-such-dir/run.h5
bad_case out_exists '--out' 'existing.h5|--overwrite' -- --out existing.h5

# --config files: one missing, three with a bad line, one good.
bad_case config_missing '--config' 'missing.ini' -- --config "$conf/missing.ini" "${keep[@]}"
bad_config config_bad_value '--fail-rate' '[0, 1]' 'fail-rate = 1.5\n'
bad_config config_bad_type '--dim' 'abc|[1, ' 'dim = abc\n'
# A misspelt key must not be ignored silently: the run would use the default.
bad_config config_unknown_key '--config|--fail_rat' 'fail_rat' 'fail_rat = 0.01\n'

# ---- good --config -------------------------------------------------------------------
printf '# a comment\nfail-rate = 0.01\nrounds = 5\ntrials = 2\ndim = 2\n' >"$conf/good.ini"
run_app config_good --config "$conf/good.ini" --out config.h5  # not --quiet: the replay compares its rows
if [ "$RC" -ne 0 ]; then
  bad "--config good.ini: exit code $RC"
  show_logs
else
  check_trace "$work/config.h5" --peers 2 --trials 2 --complete 1 --rounds 5
  got=$(timeout 60 "$AVB_PYTHON" -c '
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(f["config"].attrs["fail-rate"], f["config"].attrs["dim"])
' "$work/config.h5")
  if [ "$got" = "0.01 2" ]; then
    ok "--config good.ini: fail-rate 0.01 and dim 2 taken from the file"
  else
    bad "--config good.ini: the trace records fail-rate, dim = '$got', expected '0.01 2'"
  fi

  # The config text recorded in a trace replays the run: same results.
  replay_config config_replay "$work/config.h5" "$logs/config_good.out"
fi

# ---- every protocol runs, with every failure semantics it supports ----------------
printf '# two peers, one edge\n0 1\n' >"$conf/pair.edges"
printf '0 1\n1 x\n' >"$conf/bad.edges"
bad_case topology_bad_line '--topology' 'line 2|1 x' -- --protocol gossip --topology "file:$conf/bad.edges" "${keep[@]}"
# Each protocol's [cli] cases (tests/protocols/NAME/cases.txt), then a graph from a file.
protocol_cases cli "${LAUNCH[@]}" "$BIN"
for spec in "${CASES[@]}" "gossip --topology file:$conf/pair.edges"; do
  read -r -a args <<<"$spec"
  run_traced protocol_run proto.h5 6 --protocol "${args[@]}" --fail-rate 0.2 --dim 3 || :
done

# ---- quantized gossip and pairwise (--quantizer) ------------------------------------
bad_case quantizer_value '--quantizer' 'int4|none|fp16|uniform8|stochastic:B|lattice' -- --protocol gossip \
  --quantizer int4 "${keep[@]}"
bad_case quantizer_bits '--quantizer' 'stochastic:17|1..16' -- --protocol pairwise --quantizer stochastic:17 "${keep[@]}"
bad_case lattice_q '--lattice-q' '[2, 4294967295]' -- --protocol gossip --quantizer lattice --lattice-q 1 "${keep[@]}"
bad_case lattice_eps '--lattice-eps' '> 0' -- --protocol pairwise --quantizer lattice --lattice-eps -1 "${keep[@]}"
bad_case foreign_quantizer '--quantizer' 'pushsum|--topology' -- --protocol pushsum --quantizer fp16 "${keep[@]}"
bad_case pushsum_quantizer '--quantizer' 'pushsum|--topology' -- --protocol pushsum --quantizer fp16 "${keep[@]}"
bad_case foreign_lattice_q '--lattice-q' 'moshpit|--grid' -- --protocol moshpit --lattice-q 16 "${keep[@]}"

# ---- stragglers and simulated work ---------------------------------------------------
bad_case stragglers_big '--stragglers' '2|[0, 1]' -- --stragglers 2 "${keep[@]}"
bad_case straggler_slowdown_small '--straggler-slowdown' '0.5|>= 1' -- --straggler-slowdown 0.5 "${keep[@]}"
bad_case compute_flops_negative '--compute-flops' '>= 0' -- --compute-flops -1 "${keep[@]}"
bad_case straggler_sigma_big '--straggler-sigma' '5|[0, 4]' -- --straggler-sigma 5 "${keep[@]}"
# Waiting policies (docs/failures.md): the group protocols' own flags, with work to wait for.
bad_case wait_policy '--wait' "'some'|{all, quorum, deadline}" -- --wait some "${keep[@]}"
bad_case quorum_zero '--quorum' '0|(0, 1]' -- --wait quorum --quorum 0 --compute-flops 1e6 "${keep[@]}"
bad_case quorum_big '--quorum' '1.5|(0, 1]' -- --wait quorum --quorum 1.5 --compute-flops 1e6 "${keep[@]}"
bad_case deadline_k_negative '--deadline-k' '>= 0' -- --wait deadline --deadline-k -1 --compute-flops 1e6 "${keep[@]}"
bad_case deadline_floor_negative '--deadline-floor' '>= 0' -- --wait deadline --deadline-floor -1 --compute-flops 1e6 \
  "${keep[@]}"
bad_case wait_without_work '--wait' 'there is none|--compute-flops > 0' -- --wait quorum "${keep[@]}"
bad_case wait_gossip '--wait' 'gossip|--topology' -- --protocol gossip --wait quorum --compute-flops 1e6 "${keep[@]}"
bad_case failure_kind '--failure' "'flaky'|{transient, permanent, churn, trace}" -- --failure flaky "${keep[@]}"
bad_case join_rate_without_churn '--join-rate' 'churn only' -- --join-rate 0.5 "${keep[@]}"
bad_case join_rate_big '--join-rate' '[0, 1]' -- --failure churn --fail-rate 0.1 --join-rate 2 "${keep[@]}"
bad_case churn_pushsum '--failure churn' 'pushsum' -- --protocol pushsum --failure churn --fail-rate 0.1 "${keep[@]}"
bad_case detection_timeout_negative '--detection-timeout' '>= 0' -- --detection-timeout -0.5 "${keep[@]}"
bad_case detection_timeout_text '--detection-timeout' "'soon'|>= 0" -- --detection-timeout soon "${keep[@]}"

# Churn with every time-realism option at once: a valid trace whose alive column
# goes back up (new peers join), and /config records the join rate.
if run_traced churn churn.h5 8 --protocol moshpit --failure churn --fail-rate 0.3 --join-rate 0.5 \
  --detection-timeout 0.1 --stragglers 0.5 --compute-flops 1e6 --dim 3 --seed 9; then
  got=$(h5_eval "$work/churn.h5" '(f["config"].attrs["failure"], f["config"].attrs["join-rate"], any((g["alive"][1:] > g["alive"][:-1]).any() for g in all_trial_columns(f, ["alive"])))')
  if [ "$got" = "('churn', '0.5', True)" ]; then
    ok "churn: /config records it and peers rejoin"
  else
    bad "churn: (failure, join-rate, some slot rejoined) = $got"
  fi
fi

# ---- swarm (--mode, --clock) -------------------------------------------------------
bad_case swarm_mode '--mode' "'async'|{blocking, non-blocking}" -- --protocol swarm --mode async "${keep[@]}"
bad_case swarm_clock '--clock' "'wall'|{round, poisson}" -- --protocol swarm --clock wall "${keep[@]}"
bad_case foreign_clock '--clock' 'gossip|--topology' -- --protocol gossip --clock poisson "${keep[@]}"
# Every mode and clock, quantized or not, with failures: valid traces; blocking
# without a quantizer keeps the mean (check_trace's mean_drift bound applies).
for cfg in "blocking round none" "blocking poisson lattice" "non-blocking poisson fp16" "non-blocking round uniform8"; do
  read -r mode clock q <<<"$cfg"
  if run_traced "swarm_${mode}_${clock}" "swarm-$mode-$clock.h5" 5 --protocol swarm --mode "$mode" --clock "$clock" \
    --quantizer "$q" --fail-rate 0.2 --dim 3 --seed 4; then
    got=$(h5_eval "$work/swarm-$mode-$clock.h5" '(f["config"].attrs["mode"], f["config"].attrs["clock"])')
    if [ "$got" = "('$mode', '$clock')" ]; then
      ok "swarm $cfg: /config records mode and clock"
    else
      bad "swarm $cfg: /config has (mode, clock) = $got"
    fi
  fi
done

# A lattice this small (q = 4, eps = 0.1: decodable within about 0.2 of the
# receiver's value) cannot carry N(0, 1) differences: decode failures are certain.
# The trace counts them, and the /config text replays the run bit for bit (the
# dither and the failures are keyed, not timed).
run_app quantized_lattice --protocol gossip --topology complete --quantizer lattice --lattice-q 4 \
  --lattice-eps 0.1 --trials 2 --rounds 6 --dim 3 --seed 3 --out lattice.h5
if [ "$RC" -eq 0 ]; then
  check_trace "$work/lattice.h5" --peers 2 --trials 2 --complete 1 --rounds 6
  got=$(h5_eval "$work/lattice.h5" \
    'f["config"].attrs["quantizer"], f["config"].attrs["lattice-q"], sum(int(g["decode_failures"].sum()) > 0 for g in all_trial_columns(f, ["decode_failures"]))')
  if [ "$got" = "('lattice', '4', 2)" ]; then
    ok "gossip --quantizer lattice --lattice-q 4: /config records it, both trials count decode failures"
  else
    bad "gossip --quantizer lattice --lattice-q 4: (quantizer, lattice-q, trials with decode failures) = $got"
  fi
  # Failures within the last 10 rounds (here every round): one warning line, rank 0.
  warned=$(grep -c '^averaging_bench: warning: decode failures persisted: ' "$ERR" || true)
  if [ "$warned" = 1 ]; then ok "gossip --quantizer lattice --lattice-q 4: one warning line"
  else bad "gossip --quantizer lattice --lattice-q 4: $warned warning lines, expected 1"; show_logs; fi
  replay_config quantized_replay "$work/lattice.h5" "$logs/quantized_lattice.out"
else
  bad "gossip --quantizer lattice: exit code $RC"
  show_logs
fi

# Bytes on the wire are the encoded size. With --dim 4 a message of doubles is 32
# bytes, fp16's is 8 and stochastic:4's 16 + 2 (a two-double header, 4 bits a
# value); the same seed gives the same pairs, so the messages are the same.
for q in none fp16 stochastic:4; do
  run_traced "pairwise_$q" "pairwise-${q%%:*}.h5" 6 --protocol pairwise --quantizer "$q" --fail-rate 0.2 --dim 4 \
    --seed 5 || :
done
bytes() { h5_eval "$work/$1" 'list(f["summary"]["bytes_sent"][()])'; }
b_none=$(bytes pairwise-none.h5)
b_fp16=$(bytes pairwise-fp16.h5)
b_st4=$(bytes pairwise-stochastic.h5)
want=$(timeout 60 "$AVB_PYTHON" -c '
import sys
none = eval(sys.argv[1])
print([b // 32 * 8 for b in none], [b // 32 * (16 + 2) for b in none])' "$b_none")
if [ "$want" = "$b_fp16 $b_st4" ] && [ "$b_none" != "[0, 0]" ]; then
  ok "pairwise bytes_sent is the encoded size: none $b_none, fp16 $b_fp16, stochastic:4 $b_st4"
else
  bad "pairwise bytes_sent: none $b_none, fp16 $b_fp16, stochastic:4 $b_st4; expected $want from none's messages"
fi

# ---- accepted, with one warning line (docs/reliability.md, "Meaningless combinations") --
small=(--rounds 2 --trials 1 --dim 2)
if [ "$ENGINE" = smpi ]; then
  warn_case warn_stragglers '--stragglers: has no effect without --compute-flops' -- --stragglers 0.5 "${small[@]}"
else
  warn_case warn_smpi_only '--compute-flops, --stragglers: act only under SMPI' -- --compute-flops 1e6 \
    --stragglers 0.5 "${small[@]}"
  warn_case warn_detection '--detection-timeout: on this engine no peer waits' -- --detection-timeout 0.5 \
    --fail-rate 0.3 "${small[@]}"
fi
warn_case warn_grid '--grid: 32x32 has 1024 cells for 2 peers' -- --protocol moshpit --grid 32x32 "${small[@]}"
warn_case warn_lattice_range '--lattice-q, --lattice-eps' -- --protocol gossip --quantizer lattice --lattice-q 4 \
  --rounds 2 --trials 1 --dim 100
warn_case warn_lattice_eps '--lattice-eps: 2 is of the order' -- --protocol gossip --quantizer lattice \
  --lattice-eps 2 "${small[@]}"

# ---- a --config key given on the command line too: the command line wins -------------
printf 'rounds = 3\ndim = 2\n' >"$conf/rounds3.ini"
run_app config_and_flag --config "$conf/rounds3.ini" --rounds 4 --out config_flag.h5 --quiet
if [ "$RC" -eq 0 ] && [ "$(h5_eval "$work/config_flag.h5" 'f["config"].attrs["rounds"], f["config"].attrs["dim"]')" = "('4', '2')" ]; then
  ok "config_and_flag: --rounds 4 on the command line overrides rounds = 3 in the file, dim = 2 is kept"
else
  bad "config_and_flag: exit code $RC, or the trace does not record rounds 4 and dim 2"
  show_logs
fi

# ---- a host with many more ranks than cores: one warning before the run -----------
# (mpirun only: the simulated engines have no such host.) 8 ranks a core is the limit.
if [ "$ENGINE" = mpi ]; then
  cores=$(getconf _NPROCESSORS_ONLN)
  saved_launch=("${LAUNCH[@]}")
  set_launcher mpi $((8 * cores + 1))
  warn_case crowded_host "ranks share a host of $cores cores" -- --protocol moshpit --rounds 1 --trials 1
  LAUNCH=("${saved_launch[@]}")
fi

# ---- --overwrite replaces an existing trace -------------------------------------
overwrite_case --trials 1 --rounds 3 -- --peers 2 --trials 1 --complete 1 --rounds 3
no_temp_files

launched_check
finish
