#!/usr/bin/env bash
# sgd_bench's command line on 2 peers, as test_cli.sh checks averaging_bench's: bad
# input is refused with one clear line and exit code 2, without creating or
# touching any file; good input (flags, --config files, LIBSVM files, --help) works
# and writes a valid training trace whose /config text replays the run.
#
#   tests/scripts/test_sgd_cli.sh BINARY ENGINE [sample]
#     ENGINE: mpi (mpirun) or smpi (smpirun.sh)
#     sample: the refusals whose C++ code another kept case runs (SLICE_REPEATS
#     below) are left to the full run (build/, Open MPI), which checks each flag's
#     message; every other case runs
#
# What a refusal must look like is checked by bad_case (cli_common.sh): exit code
# 2, exactly one "sgd_bench: error: --flag: ..." line on stderr naming what is
# accepted, no run header on stdout, and the working folder unchanged, its own
# modification time and a pre-existing trace's SHA-256 included. A bad LIBSVM file
# is bad input like any other: it must be refused before the trace's temporary
# file is created beside --out.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/cli_common.sh"

[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = sample ]; } || die "usage: test_sgd_cli.sh BINARY mpi|smpi [sample]"
cli_init sgd_bench "$1" "$2"
# The sample slice (the sanitizer build, SMPI): left out are the refusals whose
# C++ code another kept case runs: an integer flag's bad value (parse_integer,
# which also checks the range), a number that is not one (parse_real), a range
# refused by src's shared require(), a name not in a word list (the shared
# word-list option), a flag refused by the same foreign-flag table
# (refuse_foreign_problem_flags, refuse_foreign_flags). Every other case runs:
# each conversion and kind of value once, the ranges checked by code of their own,
# --seed, the --target list, every combination check, the flags with a parser of
# their own (--protocol, --on-failure, --topology), every LIBSVM, --out and
# --config case.
SLICE_REPEATS="local_steps_zero batch_text lr_decay_steps_zero eval_every_zero dim_text samples_per_peer_zero
  data_dim_negative trials_text
  join_rate_text step_flops_text lr_text lr_decay_factor_text separation_text
  lr_zero lr_decay_factor_big momentum_one fail_rate_big
  preset split lr_schedule failure
  foreign_zeta foreign_sigma foreign_condition foreign_data foreign_data_dim foreign_split foreign_split_quadratic
  foreign_samples foreign_separation foreign_label_skew foreign_decay_steps foreign_decay_factor foreign_topology
  foreign_group_size"
if [ "${3:-}" = sample ]; then
  CLI_LEFT_OUT=$(echo $SLICE_REPEATS)
  say "sample: $(echo $SLICE_REPEATS | wc -w) refusals that repeat another case's C++ code left to the full run"
fi

# ---- LIBSVM files, outside the watched folder ------------------------------------
data=$SCRATCH/data
mkdir -p "$data/a-folder"
# 12 samples of 4 features: +1/-1 and 1/0 labels, a '+' sign, a comment, a blank
# line, a sample with no features; 5 negatives, 7 positives.
cat >"$data/train.svm" <<'EOF'
# a small training set
+1 1:0.8 2:0.1 4:1
-1 2:0.9 3:0.4
1 1:1.2 3:-0.2   # trailing comment
0 2:1.1 4:-0.5

-1 1:-0.3 2:0.7 3:0.9 4:-1
+1 1:0.5 4:0.8
-1 3:1.3
1 1:0.9 2:-0.4 3:0.1 4:0.3
1 1:1.5
-1 2:1.2 4:-0.2
+1 1:0.4 3:-0.6 4:0.6
1
EOF
cat >"$data/test.svm" <<'EOF'
+1 1:1 4:0.5
-1 2:1 3:0.2
+1 1:0.7 2:0.2
-1 2:0.8 4:-0.7
EOF
printf '+1 1:0.5 3:1\n-1 2:1\n+1 1:x\n' >"$data/malformed.svm"
printf '+1 1:0.5 3:1\n-1 3:1 2:1\n' >"$data/unordered.svm"
printf '+1 1:0.5\n-1 0:1\n' >"$data/index0.svm"
printf '+1 1:0.5\nyes 2:1\n' >"$data/label.svm"
printf '# nothing but a comment\n\n' >"$data/empty.svm"
printf '+1 1:0.5 3:1\n' >"$data/one-sample.svm"
printf '+1 1:0.5\n-1 2:1\n+1 9:1\n' >"$data/wide.svm"   # index 9 > the 4 features of train.svm
# Small to read, but Newton's Hessian of 1000000 features is 24 TB: refused before the run.
printf '+1 1:0.5 1000000:1\n-1 2:1\n+1 3:1\n-1 4:1\n' >"$data/hessian.svm"

# good_run TAG "CHECK_TRACE ARGS" -- ARGS...: runs the app with ARGS --out TAG.h5
# (its rows on stdout), which must succeed and write a trace that avbench check accepts with
# --kind sgd --peers 2 CHECK_TRACE ARGS; its stdout stays in $logs/TAG.out.
good_run() {
  local tag=$1 expect=$2
  shift 3
  rm -f "$work/$tag.h5"
  run_app "$tag" "$@" --out "$tag.h5"  # not --quiet: its rows are checked, and replayed
  if [ "$RC" -ne 0 ]; then
    bad "$tag: sgd_bench $*: exit code $RC"
    show_logs
    return 1
  fi
  ok "$tag: sgd_bench $*: exit 0"
  read -r -a expect_args <<<"$expect"
  check_trace "$work/$tag.h5" --kind sgd --peers 2 "${expect_args[@]}"
  if ! grep -q '^# sgd_bench' "$OUT"; then bad "$tag: no run header on stdout"; fi
  if [ -z "$(table_rows "$OUT")" ]; then bad "$tag: no table rows on stdout"; fi
}

# attr_is TAG EXPR WANT: the Python expression EXPR of the trace $work/TAG.h5 (open
# as f) prints WANT.
attr_is() {
  local got
  got=$(h5_eval "$work/$1.h5" "$2" 2>&1) || true
  if [ "$got" = "$3" ]; then
    ok "$1: $2 = $3"
  else
    bad "$1: $2 is '$got', expected '$3'"
  fi
}

# ---- --help ------------------------------------------------------------------------
check_help --config --protocol --fail-rate --failure --join-rate --stragglers --straggler-slowdown --detection-timeout --on-failure --collective --grid --placement --key-update \
  --group-size --min-group-size --topology --weights --alive-weights --objective --dim --preset --condition --zeta \
  --sigma --data --data-limit --l2 --data-dim --split --test-data --samples-per-peer --separation --label-skew --steps --local-steps \
  --local-steps-dist --step-flops --batch --lr --lr-schedule --lr-decay-steps --lr-decay-factor --momentum --eval-every --trials --seed --target \
  --stop-at-target --out --overwrite --quiet

# The refusals that also run through mpirun (cli_common.sh: the others run on the
# sequential engine, the same parsing code): one of each kind, and the estimate
# of a --data file, which only rank 0 reads.
LAUNCHED="lr_zero foreign_zeta config_bad_value out_exists unknown_flag data_malformed data_hessian"

# ---- a good run; its trace is then the pre-existing file the bad cases must keep ----
run_app good --steps 40 --eval-every 5 --trials 2 --dim 3 --out existing.h5 --quiet
if [ "$RC" -ne 0 ]; then
  bad "good run: exit code $RC"
  show_logs
  die "no trace to protect; stopping"
fi
ok "good run (--steps 40 --eval-every 5 --trials 2 --dim 3): exit 0"
check_trace "$work/existing.h5" --kind sgd --peers 2 --trials 2 --complete 1 --steps 40 --local-steps 1 --eval-every 5
no_temp_files

# ---- bad input -----------------------------------------------------------------------
# Every case but the --out ones also asks to overwrite the existing trace: a valid
# --out and --overwrite must not lead the app to touch it (or its folder) before
# refusing.
keep=(--out existing.h5 --overwrite)
logistic=(--objective logistic)
file=(--objective logistic --data "$data/train.svm")
int='is not an integer in [' # every integer flag names its range

# Numbers out of range, and words that are not numbers: every numeric flag, one
# way or the other (both read their text the same way).
bad_case steps_negative '--steps' "$int|[0, " -- --steps -1 "${keep[@]}"
bad_case steps_text '--steps' "'abc'|[0, " -- --steps abc "${keep[@]}"
bad_case steps_big '--steps' "3000000000|[0, 2147483647]" -- --steps 3000000000 "${keep[@]}"
bad_case local_steps_zero '--local-steps' "$int|[1, " -- --local-steps 0 "${keep[@]}"
bad_case local_steps_real '--local-steps' "'1.5'|[1, " -- --local-steps 1.5 "${keep[@]}"
bad_case batch_text '--batch' "'many'|[1, " -- --batch many "${keep[@]}"
bad_case local_steps_dist_word '--local-steps-dist' "'poisson'|{fixed, geometric}" -- --local-steps-dist poisson \
  "${keep[@]}"
bad_case local_steps_dist_sync '--local-steps-dist' 'needs --protocol swarm' -- --local-steps-dist geometric \
  --protocol moshpit "${keep[@]}"
bad_case step_flops_negative '--step-flops' '>= 0' -- --step-flops -1 "${keep[@]}"
bad_case stragglers_text '--stragglers' "'some'|[0, 1]" -- --stragglers some "${keep[@]}"
bad_case churn_swarm '--failure churn' 'swarm' -- --protocol swarm --failure churn --fail-rate 0.1 "${keep[@]}"
bad_case join_rate_text '--join-rate' "'half'|[0, 1]" -- --failure churn --join-rate half "${keep[@]}"
bad_case detection_timeout_inf '--detection-timeout' 'inf|>= 0' -- --detection-timeout inf "${keep[@]}"
bad_case sgd_wait '--wait' "sgd_bench|averaging_bench" -- --wait quorum "${keep[@]}"
bad_case sgd_straggler_sigma '--straggler-sigma' 'averaging_bench only' -- --straggler-sigma 0.5 "${keep[@]}"
bad_case step_flops_text '--step-flops' "'lots'|>= 0" -- --step-flops lots "${keep[@]}"
bad_case clock_in_sgd '--clock' 'averaging_bench only' -- --protocol swarm --clock poisson "${keep[@]}"
bad_case lr_zero '--lr' '> 0' -- --lr 0 "${keep[@]}"
bad_case lr_text '--lr' "'fast'|> 0" -- --lr fast "${keep[@]}"
bad_case lr_inf '--lr' 'inf|> 0' -- --lr 1e999 "${keep[@]}"
bad_case lr_decay_steps_zero '--lr-decay-steps' "$int|[1, " -- --lr-schedule inverse --lr-decay-steps 0 "${keep[@]}"
bad_case lr_decay_factor_big '--lr-decay-factor' '(0, 1]' -- --lr-schedule step --lr-decay-factor 1.5 "${keep[@]}"
bad_case lr_decay_factor_text '--lr-decay-factor' "'half'|(0, 1]" -- --lr-schedule step --lr-decay-factor half "${keep[@]}"
bad_case momentum_one '--momentum' '[0, 1)' -- --momentum 1 "${keep[@]}"
bad_case momentum_nan '--momentum' "'nan'|[0, 1)" -- --momentum nan "${keep[@]}"
# --gradient-tracking needs rounds that keep the sum, one step each, no momentum.
bad_case tracking_protocol '--gradient-tracking' "moshpit|allreduce, gossip" -- --gradient-tracking \
  --protocol moshpit "${keep[@]}"
bad_case tracking_momentum '--gradient-tracking' "--momentum 0" -- --gradient-tracking --protocol gossip \
  --momentum 0.5 "${keep[@]}"
bad_case tracking_local_steps '--gradient-tracking' "--local-steps 1" -- --gradient-tracking --protocol gossip \
  --local-steps 2 "${keep[@]}"
bad_case tracking_graph '--gradient-tracking' "epidemic|doubly stochastic" -- --gradient-tracking --protocol gossip \
  --topology epidemic:1 "${keep[@]}"
bad_case tracking_lossy '--gradient-tracking' "fp16|sum" -- --gradient-tracking --protocol allreduce --quantizer fp16 \
  "${keep[@]}"
# --outer-optimizer needs local steps to make a pseudo-gradient of, and collective rounds.
bad_case outer_name '--outer-optimizer' "adam|none, sgd, nesterov" -- --outer-optimizer adam "${keep[@]}"
bad_case outer_no_local_steps '--outer-optimizer' "--local-steps >= 2" -- --outer-optimizer nesterov "${keep[@]}"
bad_case outer_async '--outer-optimizer' "swarm|asynchronous" -- --outer-optimizer sgd --local-steps 4 \
  --protocol swarm "${keep[@]}"
bad_case outer_tracking '--outer-optimizer' "--gradient-tracking" -- --outer-optimizer sgd --local-steps 2 \
  --gradient-tracking --protocol gossip "${keep[@]}"
bad_case outer_lr_zero '--outer-lr' "> 0" -- --outer-optimizer sgd --local-steps 2 --outer-lr 0 "${keep[@]}"
bad_case outer_momentum_one '--outer-momentum' "[0, 1)" -- --outer-optimizer sgd --local-steps 2 \
  --outer-momentum 1 "${keep[@]}"
bad_case outer_lr_alone '--outer-lr' "--outer-optimizer" -- --outer-lr 0.5 "${keep[@]}"
bad_case fragments_alone '--fragments' "--outer-optimizer" -- --fragments 2 "${keep[@]}"
bad_case fragments_zero '--fragments' "$int|[1, " -- --outer-optimizer sgd --local-steps 2 --fragments 0 "${keep[@]}"
bad_case fragments_above_dim '--fragments' "more than the model's 3 parameters" -- --outer-optimizer sgd \
  --local-steps 2 --dim 3 --fragments 4 "${keep[@]}"
bad_case eval_every_zero '--eval-every' "$int|[1, " -- --eval-every 0 "${keep[@]}"
bad_case dim_text '--dim' "'abc'|[1, " -- --dim abc "${keep[@]}"
bad_case dim_logistic_zero '--dim' "$int|[1, " -- "${logistic[@]}" --dim 0 "${keep[@]}"
bad_case zeta_negative '--zeta' '>= 0' -- --zeta -1 "${keep[@]}"
bad_case sigma_inf '--sigma' '>= 0' -- --sigma inf "${keep[@]}"
bad_case condition_small '--condition' '>= 1' -- --preset conditioned --condition 0.5 "${keep[@]}"
bad_case samples_per_peer_zero '--samples-per-peer' "$int|[1, " -- "${logistic[@]}" --samples-per-peer 0 "${keep[@]}"
bad_case separation_text '--separation' "'far'|>= 0" -- "${logistic[@]}" --separation far "${keep[@]}"
bad_case label_skew_big '--label-skew' '[0, 1]' -- "${logistic[@]}" --label-skew 1.5 "${keep[@]}"
bad_case data_dim_negative '--data-dim' "$int|[0, " -- "${file[@]}" --data-dim -1 "${keep[@]}"
bad_case fail_rate_big '--fail-rate' '[0, 1]' -- --fail-rate 1.5 "${keep[@]}"
bad_case target_zero '--target' '> 0' -- --target 0 "${keep[@]}"
bad_case target_text '--target' "'close'|> 0" -- --target 1e-3 --target close "${keep[@]}"
bad_case seed_negative '--seed' "'-1'|[0, 18446744073709551615]" -- --seed -1 "${keep[@]}"
bad_case seed_big '--seed' "[0, 18446744073709551615]" -- --seed 18446744073709551616 "${keep[@]}"
bad_case trials_text '--trials' "'two'|[1, " -- --trials two "${keep[@]}"
bad_case steps_twice '--steps' '2' -- --steps 5 --steps 6 "${keep[@]}"
bad_case lr_no_value '--lr' 'missing' -- "${keep[@]}" --lr

# Names that are not one of the accepted ones.
bad_case objective '--objective' "'linear'|quadratic|logistic" -- --objective linear "${keep[@]}"
bad_case preset '--preset' "'flat'|epfl|conditioned" -- --preset flat "${keep[@]}"
bad_case split '--split' "'sorted'|random|label-sorted" -- "${file[@]}" --split sorted "${keep[@]}"
bad_case lr_schedule '--lr-schedule' "'cosine'|constant|inverse|step" -- --lr-schedule cosine "${keep[@]}"
bad_case protocol '--protocol' "'nope'|allreduce|moshpit|gossip|pushsum" -- --protocol nope "${keep[@]}"
bad_case failure '--failure' 'sometimes|transient|permanent' -- --failure sometimes "${keep[@]}"
bad_case on_failure '--on-failure' 'partial|abort|survivors' -- --on-failure partial "${keep[@]}"
bad_case topology '--topology' 'star|ring|random-regular:K|file:PATH' -- --protocol gossip --topology star "${keep[@]}"

# Flags that do not apply to the chosen objective, data, schedule or protocol.
bad_case foreign_preset '--preset' '--objective quadratic' -- "${logistic[@]}" --preset conditioned "${keep[@]}"
bad_case foreign_zeta '--zeta' '--objective quadratic' -- "${logistic[@]}" --zeta 2 "${keep[@]}"
bad_case foreign_sigma '--sigma' '--objective quadratic' -- "${file[@]}" --sigma 0.1 "${keep[@]}"
bad_case foreign_condition '--condition' '--preset conditioned' -- --condition 10 "${keep[@]}"
bad_case foreign_data '--data' '--objective logistic' -- --data "$data/train.svm" "${keep[@]}"
bad_case foreign_dim '--dim' '--data' -- "${file[@]}" --dim 5 "${keep[@]}"
bad_case foreign_data_dim '--data-dim' '--data' -- "${logistic[@]}" --data-dim 4 "${keep[@]}"
bad_case foreign_split '--split' '--data' -- "${logistic[@]}" --split label-sorted "${keep[@]}"
bad_case foreign_split_quadratic '--split' '--data' -- --split label-sorted "${keep[@]}"
bad_case foreign_test_data '--test-data' '--data' -- "${logistic[@]}" --test-data "$data/test.svm" "${keep[@]}"
bad_case foreign_test_data_quadratic '--test-data' '--data' -- --test-data "$data/test.svm" "${keep[@]}"
bad_case foreign_samples '--samples-per-peer' 'synthetic|--data' -- "${file[@]}" --samples-per-peer 5 "${keep[@]}"
bad_case foreign_separation '--separation' 'synthetic' -- --separation 2 "${keep[@]}"
bad_case foreign_label_skew '--label-skew' 'synthetic|--data' -- "${file[@]}" --label-skew 0.5 "${keep[@]}"
bad_case foreign_decay_steps '--lr-decay-steps' 'inverse|step' -- --lr-decay-steps 50 "${keep[@]}"
bad_case foreign_decay_factor '--lr-decay-factor' '--lr-schedule step' -- --lr-schedule inverse --lr-decay-factor 0.3 "${keep[@]}"
bad_case foreign_grid '--grid' 'gossip|--topology' -- --protocol gossip --grid 2x1 "${keep[@]}"
bad_case foreign_topology '--topology' 'moshpit|--grid' -- --protocol moshpit --topology ring "${keep[@]}"
bad_case foreign_group_size '--group-size' 'allreduce' -- --group-size 4 "${keep[@]}"

# LIBSVM files that cannot be used, for --data and --test-data.
bad_case data_missing '--data' 'no-such.svm|cannot read' -- "${logistic[@]}" --data "$data/no-such.svm" "${keep[@]}"
bad_case data_folder '--data' 'a-folder|directory' -- "${logistic[@]}" --data "$data/a-folder" "${keep[@]}"
bad_case data_malformed '--data' "malformed.svm|line 3|'1:x'|idx:val" -- "${logistic[@]}" --data "$data/malformed.svm" "${keep[@]}"
bad_case data_unordered '--data' 'unordered.svm|line 2|does not increase' -- "${logistic[@]}" --data "$data/unordered.svm" "${keep[@]}"
bad_case data_index0 '--data' 'line 2|below 1' -- "${logistic[@]}" --data "$data/index0.svm" "${keep[@]}"
bad_case data_label '--data' "line 2|'yes'|not a number" -- "${logistic[@]}" --data "$data/label.svm" "${keep[@]}"
bad_case data_empty '--data' 'empty.svm|no samples' -- "${logistic[@]}" --data "$data/empty.svm" "${keep[@]}"
bad_case data_one_sample '--data' 'one-sample.svm|2 peers' -- "${logistic[@]}" --data "$data/one-sample.svm" "${keep[@]}"
bad_case data_hessian '--data' "GB|Newton's Hessian|--dry-run" -- "${logistic[@]}" --data "$data/hessian.svm" "${keep[@]}"
bad_case data_dim_small '--data' 'line 2|index 4|exceeds|2' -- "${file[@]}" --data-dim 2 "${keep[@]}"
bad_case test_data_missing '--test-data' 'no-such.svm|cannot read' -- "${file[@]}" --test-data "$data/no-such.svm" "${keep[@]}"
bad_case test_data_malformed '--test-data' "malformed.svm|line 3|'1:x'" -- "${file[@]}" --test-data "$data/malformed.svm" "${keep[@]}"
bad_case test_data_wide '--test-data' 'wide.svm|line 3|index 9|4' -- "${file[@]}" --test-data "$data/wide.svm" "${keep[@]}"

# Unknown flags and stray words; --out that cannot be written.
bad_case unknown_flag '--bogus' '--help' -- --bogus 3 "${keep[@]}"
bad_case stray_word "'stray'" 'unexpected argument' -- stray "${keep[@]}"
bad_case out_missing_dir '--out' 'no-such-dir|does not exist' -- --out no-such-dir/run.h5
bad_case out_exists '--out' 'existing.h5|--overwrite' -- --out existing.h5
bad_case out_folder '--out' '.|folder' -- --out . --overwrite

# --config files: one missing, four with a bad line.
bad_case config_missing '--config' 'missing.ini' -- --config "$conf/missing.ini" "${keep[@]}"
bad_config config_bad_value '--steps' '-5|[0, ' 'steps = -5\n'
bad_config config_bad_type '--lr' "'fast'|> 0" 'lr = fast\n'
bad_config config_foreign '--preset' '--objective quadratic' 'objective = logistic\npreset = conditioned\n'
# A misspelt key must not be ignored silently: the run would use the default.
bad_config config_unknown_key '--config|--stpes' 'stpes' 'objective = logistic\nstpes = 10\n'

# ---- good runs: every objective, data source, split, schedule, a few protocols -----
# "steps S local-steps H eval-every E" as avbench check expects them.
sgd() { echo "--complete 1 --trials $1 --steps $2 --local-steps $3 --eval-every $4"; }
good_run quad_epfl "$(sgd 1 60 1 10)" -- --steps 60 --zeta 2 --lr 0.05
attr_is quad_epfl 'f["optimum"].attrs["method"]' ldlt
good_run quad_conditioned "$(sgd 2 31 3 4)" -- --preset conditioned --condition 10 --sigma 0.5 --batch 2 \
  --momentum 0.5 --lr-schedule inverse --lr-decay-steps 20 --protocol moshpit --fail-rate 0.2 --local-steps 3 \
  --steps 31 --eval-every 4 --trials 2
good_run quad_gossip_step "$(sgd 2 50 2 5)" -- --protocol gossip --fail-rate 0.3 --failure permanent \
  --lr-schedule step --lr-decay-steps 10 --lr-decay-factor 0.5 --local-steps 2 --steps 50 --eval-every 5 --trials 2
good_run quad_pushsum "$(sgd 1 20 1 3)" -- --protocol pushsum --steps 20 --eval-every 3
good_run quad_churn "$(sgd 2 30 2 5)" -- --protocol gossip --failure churn --fail-rate 0.3 --join-rate 0.5 \
  --detection-timeout 0.2 --momentum 0.5 --local-steps 2 --steps 30 --eval-every 5 --trials 2
# A row every step: a joiner's load shows in the row before its first round (seed 0
# has joiners in both trials).
good_run churn_every_step "$(sgd 2 30 3 1)" -- --protocol gossip --failure churn --fail-rate 0.3 --join-rate 0.5 \
  --local-steps 3 --steps 30 --eval-every 1 --trials 2
# Swarm with geometric local steps and a simulated step cost (charged under SMPI
# only): a peer's rounds no longer follow step / H, so the round column is not checked.
good_run swarm_geometric "--complete 1 --trials 2 --steps 30 --eval-every 10" -- --protocol swarm --mode non-blocking \
  --quantizer lattice --local-steps 3 --local-steps-dist geometric --step-flops 1e6 --steps 30 --eval-every 10 --trials 2
# Every target reached: a complete trial may stop before --steps.
good_run quad_stop "$(sgd 2 200 1 10)" -- --lr 0.5 --target 1e-2 --target 1e-4 --stop-at-target --steps 200 --trials 2
attr_is quad_stop 'int(trial_columns(f, 0, ["step"])["step"][-1]) < 200' True
good_run quad_zero_steps "$(sgd 1 0 1 10)" -- --steps 0
good_run logistic_synthetic "$(sgd 2 40 2 10)" -- --objective logistic --dim 5 --samples-per-peer 30 \
  --separation 2 --label-skew 0.5 --protocol random-groups --group-size 2 --local-steps 2 --steps 40 --trials 2 \
  --lr 0.2
attr_is logistic_synthetic 'f["optimum"].attrs["method"], f["optimum"].attrs["test_set"]' "('newton', 'synthetic-held-out')"
good_run libsvm_random "$(sgd 1 60 1 10)" -- "${file[@]}" --steps 60 --lr 0.2 --batch 3
attr_is libsvm_random 'f["optimum/x"].shape, f["optimum"].attrs["test_set"]' "((4,), 'train')"
good_run libsvm_sorted "$(sgd 2 45 3 6)" -- "${file[@]}" --split label-sorted --test-data "$data/test.svm" \
  --data-dim 6 --protocol gossip --fail-rate 0.1 --local-steps 3 --steps 45 --eval-every 6 --trials 2 --lr 0.3 \
  --target 0.5 --target 1e-2 --seed 7
attr_is libsvm_sorted 'f["optimum/x"].shape, f["optimum"].attrs["test_set"]' "((6,), 'file')"
attr_is libsvm_sorted 'f["config"].attrs["split"], f["config"].attrs["target"]' "('label-sorted', '0.5,0.01')"
# Multinomial logistic regression on the first 200 Fashion-MNIST images (installed by
# scripts/install-deps.sh), accuracy on its t10k images: L-BFGS's optimum, 10 x 785 values.
fashion=/usr/share/datasets/fashion-mnist
good_run softmax_fashion "$(sgd 2 30 1 10)" -- --objective softmax --data "$fashion/train-images-idx3-ubyte.gz" \
  --data-limit 200 --test-data "$fashion/t10k-images-idx3-ubyte.gz" --split label-sorted --l2 0.01 --steps 30 \
  --lr 0.1 --batch 16 --trials 2
attr_is softmax_fashion 'f["optimum"].attrs["method"], f["optimum"].attrs["test_set"], f["optimum/x"].shape' \
  "('lbfgs', 'file', (7850,))"
attr_is softmax_fashion '[f["config"].attrs[k] for k in ("objective", "data-limit", "l2", "split")]' \
  "['softmax', '200', '0.01', 'label-sorted']"
# It learns: the relative gap falls by half, the accuracy rises above chance (0.1).
attr_is softmax_fashion '[bool(c["relative_gap"][-1] < 0.5 and c["accuracy"][-1] > 0.3)
  for c in all_trial_columns(f)]' "[True, True]"
# The MLP (784-16-10) on the same images: no x* (method none, x* = 0 the start, f* = 0,
# so relative_gap is f(x)/f(x_0)); 16 x 785 + 10 x 17 values.
good_run mlp_fashion "$(sgd 2 30 1 10)" -- --objective mlp --hidden 16 --data "$fashion/train-images-idx3-ubyte.gz" \
  --data-limit 200 --test-data "$fashion/t10k-images-idx3-ubyte.gz" --split dirichlet --dirichlet-alpha 0.3 \
  --l2 0.01 --steps 30 --lr 0.1 --batch 16 --trials 2
attr_is mlp_fashion '(f["optimum"].attrs["method"], f["optimum"].attrs["loss"], float(abs(f["optimum/x"][:]).max()),
  f["optimum/x"].shape)' "('none', 0.0, 0.0, (12730,))"
attr_is mlp_fashion '[f["config"].attrs[k] for k in ("objective", "hidden", "l2", "split", "dirichlet-alpha")]' \
  "['mlp', '16', '0.01', 'dirichlet', '0.3']"
attr_is mlp_fashion '[bool(c["relative_gap"][0] == 1 and c["relative_gap"][-1] < 0.7 and c["accuracy"][-1] > 0.3)
  for c in all_trial_columns(f)]' "[True, True]"
no_temp_files

# ---- good --config -------------------------------------------------------------------
printf '# a comment\nobjective = logistic\ndim = 4\nsamples-per-peer = 30\nsteps = 60\neval-every = 6\nlr = 0.1\ntrials = 2\nprotocol = gossip\nfail-rate = 0.1\n' \
  >"$conf/good.ini"
if good_run config_good "$(sgd 2 60 1 6)" -- --config "$conf/good.ini"; then
  attr_is config_good '[f["config"].attrs[k] for k in ("objective", "dim", "steps", "protocol", "fail-rate")]' \
    "['logistic', '4', '60', 'gossip', '0.1']"
fi

# ---- the /config text of a trace replays its run ---------------------------------------
# Each replay reads every option back from the text, defaults included: a synthetic
# logistic run from a --config file, moshpit under failures with momentum and an
# inverse schedule, a LIBSVM run with a label-sorted split, a test file and
# targets of its own, and a run stopped at its targets.
replay_config replay_config_good "$work/config_good.h5" "$logs/config_good.out"
replay_config replay_conditioned "$work/quad_conditioned.h5" "$logs/quad_conditioned.out"
replay_config replay_libsvm "$work/libsvm_sorted.h5" "$logs/libsvm_sorted.out"
replay_config replay_stop "$work/quad_stop.h5" "$logs/quad_stop.out"

# ---- numerics ---------------------------------------------------------------------------
# Large scales are solved to a relative tolerance (before: an absolute 1e-10 made
# both abort, one error line per rank and MPI_ABORT's banner, exit 1).
good_run quad_zeta_large "$(sgd 1 20 1 10)" -- --zeta 1e6 --steps 20
good_run quad_condition_large "$(sgd 1 20 1 10)" -- --preset conditioned --condition 1e16 --steps 20
# A problem whose numbers overflow is bad input: one line, exit 2, on every engine.
bad_case zeta_overflow '--zeta' 'double precision|smaller value' -- --zeta 1e300 "${keep[@]}"
# diverged_case TAG LR_NEEDLE DIVERGED_NEEDLE -- ARGS...: a run whose --lr is
# above the stable bound: exit 0 and exactly two warning lines, the unstable --lr
# before the run (containing LR_NEEDLE), then the first diverged trial (containing
# DIVERGED_NEEDLE); the trace valid, every trial diverged before the last step; the
# table marks them ('diverged at step', no nan) and its mean and +- se rows, which
# have no trial to average, show '–' in every cell (not 0, which reads as a result).
diverged_case() {
  local tag=$1 lr_needle=$2 div_needle=$3
  shift 4
  run_app "$tag" "$@" --out "$tag.h5"  # not --quiet: the rows are checked
  local lines first second
  lines=$(grep -c "^$APP: warning:" "$ERR" || true)
  first=$(grep "^$APP: warning:" "$ERR" | sed -n 1p || true)
  second=$(grep "^$APP: warning:" "$ERR" | sed -n 2p || true)
  if [ "$RC" -eq 0 ] && [ "$lines" -eq 2 ] && printf '%s\n' "$first" | grep -Fq -- "$lr_needle" &&
     printf '%s\n' "$second" | grep -Fq -- "$div_needle"; then
    ok "$tag: exit 0, \"$first\", \"$second\""
  else
    bad "$tag: $APP $*: exit code $RC (expected 0), $lines warning line(s) (expected 2: '$lr_needle', then '$div_needle')"
    show_logs
  fi
  check_trace "$work/$tag.h5" --kind sgd --peers 2 --trials 2 --complete 1 --steps 200
  attr_is "$tag" '[trial_info(f, k)["diverged"] for k in (0, 1)], list(f["summary/diverged"][()]), int(trial_columns(f, 0, ["step"])["step"][-1]) < 200' \
    '([1, 1], [1, 1], True)'
  if grep -q 'nan' "$OUT" || ! grep -q 'diverged at step' "$OUT"; then
    bad "$tag: the table shows nan, or no 'diverged at step' row"
    show_logs
  else
    ok "$tag: the table marks the trials diverged, no nan"
  fi
  local means
  means=$(grep -E '^# +(mean|± se) ' "$OUT" || true)
  if [ "$(printf '%s\n' "$means" | grep -c .)" -eq 2 ] && ! printf '%s\n' "$means" | grep -q '[0-9]' &&
     [ "$(printf '%s\n' "$means" | sed -n 1p | grep -o '–' | wc -l)" -eq 7 ]; then
    ok "$tag: the mean and ± se rows show – in their 7 cells"
  else
    bad "$tag: the mean and ± se rows are not all –: $means"
  fi
}
# SGD that diverges, marked diverged in the trace (schema v5) and the table, with
# one warning line (after the one about --lr). The model overflows between two
# evaluations: the trial stops at the first that is not finite.
diverged_case diverged '--lr: 1e+03 is above 2(1 + momentum)/L = 1.6' 'the model became NaN or infinite by step 100' \
  -- --lr 1000 --steps 200 --eval-every 100 --trials 2
# A finite model whose gap passes 1e6 times the widest gap between x_0 and the
# peers' own optima has diverged too (here: relative gap 3.94e6, which the header
# states): it stops there rather than ending at a relative gap of 1e35 (lr 2 on the
# pooled curvature 1.25 of 2 peers grows the gap 2.25-fold a step).
diverged_case diverged_gap '--lr: 2 is above 2(1 + momentum)/L = 1.6' \
  "its relative gap reached 1.11e+07, above this problem's limit 3.94e+06, by step 20" -- --lr 2 --steps 200 --trials 2
attr_is diverged_gap '(lambda t: (bool(t["relative_gap"][-1] > 3.94e6 >= t["relative_gap"][-2]), int(t["step"][-1])))(trial_columns(f, 0))' '(True, 20)'
if grep -q '^# a trial diverges when its model is not finite or its relative gap exceeds 3.94e+06 ' "$OUT"; then
  ok "diverged_gap: the header states the limit"
else
  bad "diverged_gap: no header line stating the limit 3.94e+06"
fi
# Above the bound but too short to diverge: the warning alone.
warn_case unstable_lr '--lr: 1.7 is above 2(1 + momentum)/L = 1.6, where L = 1.25 is the pooled quadratic'"'"'s curvature (allreduce every step): expect the run to diverge' \
  -- --lr 1.7 --steps 5
good_run not_diverged "$(sgd 1 20 1 10)" -- --steps 20
attr_is not_diverged 'trial_info(f, 0)["diverged"], int(f.attrs["schema_version"])' '(0, 9)'
# One trial: its mean, but no standard error ('–' in every cell, not 0, which
# reads as certainty); a quadratic measures no accuracy: '–' for its mean, not nan.
mean=$(grep -E '^# +mean ' "$logs/not_diverged.out" | sed 's/^# *mean *//' || true)
se=$(grep -E '^# ± se ' "$logs/not_diverged.out" | sed 's/^# ± se *//' || true)
if [ "$(echo $mean | awk '{ print NF, $5 }')" = "7 –" ] && [ "$(echo $mean | grep -o '[0-9]' | wc -l)" -gt 0 ] &&
   [ "$(echo $se)" = "– – – – – – –" ]; then
  ok "not_diverged: one trial: mean '$(echo $mean)', ± se all –"
else
  bad "not_diverged: one trial's mean '$mean' (accuracy not –), or ± se '$se' not all –"
fi
if [ "$ENGINE" = smpi ]; then
  warn_case warn_step_stragglers '--stragglers: has no effect without --step-flops' -- --stragglers 0.5 --steps 5
else
  warn_case warn_step_flops '--step-flops: acts only under SMPI' -- --step-flops 1e6 --steps 5
fi

# ---- --overwrite replaces an existing trace -------------------------------------------
overwrite_case --steps 10 -- --kind sgd --peers 2 --trials 1 --complete 1 --steps 10
no_temp_files

launched_check
finish
