#!/usr/bin/env bash
# Hostile input, systematically: every flag of averaging_bench or sgd_bench with
# values out of range, malformed, empty and huge; unreadable and malformed
# --config, --topology file: and --data files; --out into a read-only folder, onto
# a full file system, onto a folder, and empty. Every case must end like any bad
# input (cli_common.sh's bad_case): one "APP: error: --flag: ..." line naming the
# problem, exit code 2, no run header, the working folder unchanged and the
# existing trace kept bit for bit. The full file system is not bad input: that
# run starts, then must end non-zero with one line naming --out, leaving no file.
#
#   tests/scripts/test_hostile.sh BINARY ENGINE [SECTION...]
#     ENGINE: mpi (mpirun) or smpi (smpirun.sh)
#     SECTION: flags files out (default: all three), or one of the slices below,
#     for the runs that repeat C++ code another run checks case by case (the
#     sanitizer build, and SMPI):
#       flagsample   flags, but a value of a flag read by a shared option type
#                    (integer, seed, real, the --target list, the word list) once
#                    per type and value; every other case kept
#       filesample   files, but one unreadable and one malformed file per file
#                    flag, and the empty --config
#       outfull      of out, only the full file system (the run that starts, then
#                    fails to save)
#
# docs/reliability.md lists every case with its tag (the first word of each
# "ok:"/"FAIL:" line names the case: APP's flag and the kind of value).
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/cli_common.sh"

[ $# -ge 2 ] || die "usage: test_hostile.sh BINARY mpi|smpi [flags] [files] [out]"
APP_NAME=$(basename "$1")
cli_init "$APP_NAME" "$1" "$2"
shift 2
SECTIONS=${*:-flags files out}
[[ " $SECTIONS " =~ ^(" "(flags|flagsample|files|filesample|out|outfull))+" "$ ]] ||
  die "unknown section in: $SECTIONS"
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
started=$(now)

# Data files for sgd_bench (a small valid LIBSVM file: 8 samples, 3 features).
printf '+1 1:0.5 3:1\n-1 2:1\n+1 1:1 2:0.5\n-1 3:0.25\n+1 1:0.75\n-1 2:0.5 3:1\n+1 1:1 3:0.5\n-1 2:0.75\n' \
  >"$conf/good.svm"
# A small valid IDX pair for --objective softmax: 4 images of 2 x 2 pixels, labels 0 1 0 1.
idx_header() { printf "\x00\x00\x08\x$(printf %02x "$1")\x00\x00\x00\x$(printf %02x "$2")"; }
{ idx_header 3 4; printf '\x00\x00\x00\x02\x00\x00\x00\x02'; printf '\x10%.0s' $(seq 16); } \
  >"$conf/good-images-idx3-ubyte"
{ idx_header 1 4; printf '\x00\x01\x00\x01'; } >"$conf/good-labels-idx1-ubyte"

# hcase: bad_case, but under SMPI a case with an empty argument or one with a
# blank is skipped (and counted): SimGrid's smpirun drops empty arguments and
# splits at blanks, so the program would get another command line than the case
# means. The Open MPI run covers them (same parsing code).
# In the slices (flagsample, filesample), a case another run checks with the
# same C++ code is left out (and counted): SAMPLE_KEY, set by int_flag, real_flag
# and word_flag, names the conversion and the value; FILE_SAMPLE lists the files
# cases filesample keeps.
SKIPPED_EMPTY=0 SAMPLED_OUT=0 SAMPLE_KEY=""
declare -A SAMPLED=()
FILE_SAMPLE=" config.folder config.garbage topology.folder topology.garbage data.folder data.garbage test_data.folder
  test_data.garbage availability.folder availability.garbage "
declare -A HOSTILE_FLAGS=()  # every flag a case was written for (run or left to another run)
hcase() {
  local a after=0 blank=0 named
  IFS='|' read -r -a named <<<"$2"
  for a in "${named[@]}"; do [[ $a != --* ]] || HOSTILE_FLAGS[$a]=1; done
  for a in "$@"; do
    [ "$after" = 1 ] && [[ -z "$a" || "$a" =~ [[:space:]] ]] && blank=1
    [ "$a" = -- ] && after=1
  done
  if [ "$ENGINE" = smpi ] && [ "$blank" = 1 ]; then
    SKIPPED_EMPTY=$((SKIPPED_EMPTY + 1))
    return
  fi
  if [ "$IN_FLAGS" = 1 ] && ! want flags && [ -n "$SAMPLE_KEY" ]; then
    if [ -n "${SAMPLED[$SAMPLE_KEY]:-}" ]; then
      SAMPLED_OUT=$((SAMPLED_OUT + 1))
      return
    fi
    SAMPLED[$SAMPLE_KEY]=$1
  fi
  if [ "$IN_FILES" = 1 ] && want filesample && ! want files && [[ "$FILE_SAMPLE" != *" $1 "* ]]; then
    SAMPLED_OUT=$((SAMPLED_OUT + 1))
    return
  fi
  bad_case "$@"
}
IN_FLAGS=0 IN_FILES=0

# The refusals that also run through mpirun (cli_common.sh: the others run on the
# sequential engine, the same parsing code): one of each kind.
LAUNCHED="dim.empty dim.space protocol.unknown config.garbage topology.garbage data.garbage out.read_only out.folder"

# ---- the trace every case must leave alone ------------------------------------------
if [ "$APP" = averaging_bench ]; then
  run_app good --trials 1 --rounds 3 --dim 2 --out existing.h5 --quiet
else
  run_app good --trials 1 --steps 20 --out existing.h5 --quiet
fi
[ "$RC" -eq 0 ] || { show_logs; die "good run: exit code $RC; no trace to protect"; }
keep=(--out existing.h5 --overwrite)
HUGE=99999999999999999999  # above 2^64

# try_values CONVERSION FLAG ACCEPTED [CONTEXT...]: FLAG given each of the caller's
# `values` (kind -> value, a local of int_flag or real_flag that bash's dynamic scope
# shows here) on the CONTEXT, each refused naming ACCEPTED; SAMPLE_KEY is
# CONVERSION.kind, the shared conversion code and the kind of value it meets.
try_values() {
  local conversion=$1 flag=$2 accepted=$3 v
  shift 3
  for v in "${!values[@]}"; do
    SAMPLE_KEY="$conversion.$v"
    hcase "${flag#--}.$v" "$flag" "$accepted" -- "$@" "$flag" "${values[$v]}" "${keep[@]}"
  done
  SAMPLE_KEY=""
}

# int_flag FLAG MIN MAX ABOVE [CONTEXT...]: FLAG takes an integer in [MIN, MAX];
# ABOVE is the first value above MAX. CONTEXT makes the flag apply (its protocol).
int_flag() {
  local flag=$1 min=$2 max=$3 above=$4
  shift 4
  local accepted="[$min, $max]"
  local -A values=([text]=abc [real]=1.5 [hex]=0x10 [exponent]=1e3 [empty]='' [huge]=$HUGE [neg_huge]=-$HUGE
    [above]=$above)
  # Blanks and thousands separators go through the same conversion for every
  # flag: tried on one flag of each app, to keep the test short.
  if [ "$flag" = --dim ]; then values[space]=' 7' values[comma]='1,000'; fi
  [ "$min" = 0 ] && [ "$flag" != --seed ] && values[below]=-1
  [ "$min" -gt 0 ] 2>/dev/null && values[below]=$((min - 1))
  local conversion=integer
  [ "$flag" = --seed ] && conversion=seed
  try_values "$conversion" "$flag" "$accepted" "$@"
}

# real_flag FLAG ACCEPTED OUT_OF_RANGE [CONTEXT...]: FLAG takes a number described
# as ACCEPTED ("[0, 1]", "> 0"...); OUT_OF_RANGE is one finite value outside it.
real_flag() {
  local flag=$1 accepted=$2 out=$3
  shift 3
  local -A values=([text]=abc [empty]='' [nan]=nan [overflow]=1e400 [neg_overflow]=-1e400 [range]=$out)
  if [ "$flag" = --fail-rate ]; then values[space]=' 1' values[comma]='0,5' values[inf]=inf values[hex_nan]=0x1p2000; fi
  local conversion=real
  [ "$flag" = --target ] && conversion=reals  # a list: its own option type
  try_values "$conversion" "$flag" "$accepted" "$@"
}

# word_flag FLAG NEEDLES [CONTEXT...]: FLAG takes one of some words; an empty and an
# unknown value must be refused naming the accepted ones (NEEDLES).
word_flag() {
  local flag=$1 needles=$2
  shift 2
  local name=${flag#--}
  # Only the flags of the shared word-list option share their code; --protocol,
  # --quantizer, --on-failure and --topology each have a parser of their own.
  local shared=word
  case "$flag" in --protocol | --quantizer | --on-failure | --topology) shared="" ;; esac
  SAMPLE_KEY=${shared:+$shared.empty}
  hcase "$name.empty" "$flag" "$needles" -- "$@" "$flag" '' "${keep[@]}"
  SAMPLE_KEY=${shared:+$shared.unknown}
  hcase "$name.unknown" "$flag" "$needles" -- "$@" "$flag" NOPE "${keep[@]}"
  SAMPLE_KEY=""
}

# range_case FLAG ACCEPTED VALUE [CONTEXT...]: one value of FLAG outside ACCEPTED.
# For the flags whose conversion int_flag or real_flag already tries in full on
# another flag (the same code): one case each, so that every flag has its own.
range_case() {
  local flag=$1 accepted=$2 value=$3
  shift 3
  hcase "${flag#--}.range" "$flag" "$accepted" -- "$@" "$flag" "$value" "${keep[@]}"
}

# ---- flags ------------------------------------------------------------------------
if want flags || want flagsample; then
  say "section flags"
  IN_FLAGS=1
  # The protocol flags (apps/common/protocol_flags.cpp) are the same code in both
  # apps: averaging_bench gets all of their cases, sgd_bench a sample.
  if [ "$APP" = averaging_bench ]; then
    int_flag --dim 1 1073741824 1073741825
    int_flag --rounds 0 1073741824 1073741825
    int_flag --trials 1 1073741824 1073741825
    int_flag --seed 0 18446744073709551615 18446744073709551616
    int_flag --group-size 2 1073741824 1073741825 --protocol random-groups
    int_flag --min-group-size 2 1073741824 1073741825 --protocol moshpit
    int_flag --lattice-q 2 4294967295 4294967296 --protocol gossip --quantizer lattice
    int_flag --model-dim 0 134217728 134217729
    int_flag --peers 0 16777216 16777217 --engine sequential
    int_flag --threads 0 1024 1025 --engine sequential --peers 4
    real_flag --fail-rate '[0, 1]' 1.01
    real_flag --join-rate '[0, 1]' -0.1 --failure churn --fail-rate 0.1
    real_flag --stragglers '[0, 1]' 2
    real_flag --straggler-slowdown '>= 1' 0.5
    real_flag --detection-timeout '>= 0' -1
    real_flag --lattice-eps '> 0' 0 --protocol gossip --quantizer lattice
    real_flag --compute-flops '>= 0' -1
    real_flag --target '> 0' 0
    hcase target.inf --target '> 0' -- --target inf "${keep[@]}"
    hcase target.underflow --target '> 0' -- --target 1e-400 "${keep[@]}"
    word_flag --protocol 'allreduce|moshpit|gossip'
    word_flag --engine 'mpi|sequential'
    word_flag --failure 'transient|permanent|churn'
    word_flag --on-failure 'survivors|abort|partial'
    word_flag --collective 'ring|doubling|tree|butterfly|mpi' --protocol allreduce
    word_flag --groups 'view|comm' --protocol moshpit
    word_flag --placement 'random|rank' --protocol moshpit
    word_flag --key-update 'axis|chunk' --protocol moshpit
    word_flag --weights 'uniform|metropolis' --protocol gossip
    word_flag --alive-weights 'renormalize|metropolis' --protocol gossip
    word_flag --mode 'blocking|non-blocking' --protocol swarm
    word_flag --clock 'round|poisson' --protocol swarm
    word_flag --quantizer 'none|fp16|stochastic:B|lattice' --protocol gossip
    word_flag --topology 'ring|torus|file:PATH' --protocol gossip
    # The waiting policies and CHOCO's step.
    word_flag --wait 'all|quorum|deadline' --protocol moshpit
    range_case --quorum '(0, 1]' 0 --protocol moshpit --wait quorum
    range_case --deadline-k '>= 0' -1 --protocol moshpit --wait deadline
    range_case --deadline-floor '>= 0' -1 --protocol moshpit --wait deadline
    range_case --gamma '(0, 1]' 1.5 --protocol choco
    range_case --straggler-sigma '[0, 4]' 5
    range_case --round-timeout 'no limit' -1
    range_case --progress-every '[0, 86400]' 86401
    # The simulated platform: under SMPI, or on the sequential engine (a real MPI
    # refuses any platform flag: it runs on the machines it has).
    sequential=()
    [ "$ENGINE" = smpi ] || sequential=(--engine sequential --peers 4)
    hcase platform.unknown --platform 'cluster|cloud|geo' -- "${sequential[@]}" --platform NOPE "${keep[@]}"
    range_case --regions '[0, 16777216]' 16777217 "${sequential[@]}" --platform geo
    range_case --link-bandwidth '> 0' 0 "${sequential[@]}"
    range_case --link-latency '> 0' 0 "${sequential[@]}"
    range_case --backbone-bandwidth '> 0' -1 "${sequential[@]}"
    range_case --backbone-latency '> 0' 0 "${sequential[@]}"
    range_case --host-speed '> 0' 0 "${sequential[@]}"
    range_case --wan-latency '> 0' 0 "${sequential[@]}" --platform geo
    range_case --wan-bandwidth '> 0' 0 "${sequential[@]}" --platform geo
    range_case --speed-sigma '[0, 10]' 11 "${sequential[@]}" --platform cloud
    range_case --bw-sigma '[0, 10]' 11 "${sequential[@]}" --platform cloud
    range_case --speed-seed '[0, 18446744073709551615]' -1 "${sequential[@]}" --platform cloud --speed-sigma 1
    hcase protocol.long --protocol 'allreduce|moshpit' -- --protocol "$(printf 'x%.0s' $(seq 5000))" "${keep[@]}"
    # Structured values: a grid's sides, a topology's or quantizer's parameter.
    for v in '' x 2x 0x2 -2x2 2x1.5 "${HUGE}x2" 65536x65536 2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2; do
      hcase "grid.'$v'" --grid '' -- --protocol moshpit --grid "$v" "${keep[@]}"
    done
    for v in file: random-regular: random-regular:abc random-regular:-1 random-regular:1.5 "random-regular:$HUGE" \
      ring:2; do
      hcase "topology.'$v'" --topology '' -- --protocol gossip --topology "$v" "${keep[@]}"
    done
    for v in stochastic: stochastic:0 stochastic:abc stochastic:1.5 "stochastic:$HUGE" stochastic:-3; do
      hcase "quantizer.'$v'" --quantizer '1..16' -- --protocol gossip --quantizer "$v" "${keep[@]}"
    done
    # Combinations that can never work: no group can reach --min-group-size; a
    # lattice step that rounds all of the N(0, 1) data to one point.
    hcase min-group-size.group --min-group-size '[2, 2]' -- --protocol random-groups --group-size 2 \
      --min-group-size 3 "${keep[@]}"
    hcase min-group-size.peers --min-group-size '2 peers|[2, 2]' -- --protocol random-groups --min-group-size 3 \
      "${keep[@]}"
    hcase min-group-size.grid --min-group-size 'grid 2x2|[2, 2]' -- --protocol moshpit --min-group-size 3 "${keep[@]}"
    # sgp-paper's graphs number floor(log2(N - 1)): none on the 2 peers cases run on.
    hcase sgp-paper.peers --protocol 'sgp-paper: 2 peers|>= 3' -- --protocol sgp-paper "${keep[@]}"
    hcase collective.mpi-view --collective '--groups comm' -- --protocol moshpit --collective mpi "${keep[@]}"
    hcase lattice-eps.huge --lattice-eps 'same lattice point|(0, 16)' -- --protocol gossip --quantizer lattice \
      --lattice-eps 16 "${keep[@]}"
    # --model-dim: below --dim; with a quantizer; on a protocol that cannot pad.
    hcase model-dim.dim --model-dim 'from --dim (4)' -- --dim 4 --model-dim 3 "${keep[@]}"
    hcase model-dim.quantizer --model-dim 'quantizer none' -- --protocol gossip --quantizer fp16 --model-dim 100 \
      "${keep[@]}"
    hcase model-dim.protocol --model-dim 'does not apply to --protocol choco' -- --protocol choco --model-dim 100 \
      "${keep[@]}"
    # The all-reduces have no reference to decode a lattice against.
    for p in allreduce random-groups moshpit; do
      hcase "quantizer.lattice.$p" --quantizer 'fp16|uniform8' -- --protocol "$p" --quantizer lattice "${keep[@]}"
    done
    word_flag --quantizer 'none|fp16|stochastic:B' --protocol moshpit
    # Quantized all-reduces exist for some collectives only; the library's one carries doubles.
    hcase collective.quantized-groups --collective 'auto, butterfly' -- --protocol moshpit --quantizer fp16 \
      --collective ring "${keep[@]}"
    hcase collective.quantized-allreduce --collective 'auto, ring, doubling, tree' -- --protocol allreduce \
      --quantizer fp16 --collective butterfly "${keep[@]}"
    hcase model-dim.collective-mpi --model-dim 'collective mpi' -- --protocol moshpit --groups comm \
      --collective mpi --model-dim 100 "${keep[@]}"
  else
    int_flag --dim 1 16777216 16777217
    int_flag --data-dim 0 16777216 16777217 --objective logistic --data "$conf/good.svm"
    int_flag --samples-per-peer 1 16777216 16777217 --objective logistic
    int_flag --steps 0 2147483647 2147483648
    int_flag --local-steps 1 2147483647 2147483648
    int_flag --batch 1 16777216 16777217
    int_flag --lr-decay-steps 1 2147483647 2147483648 --lr-schedule inverse
    int_flag --eval-every 1 2147483647 2147483648
    int_flag --fragments 1 16777216 16777217 --outer-optimizer sgd --local-steps 2
    int_flag --trials 1 1073741824 1073741825
    int_flag --seed 0 18446744073709551615 18446744073709551616
    real_flag --condition '>= 1' 0.5 --preset conditioned
    real_flag --zeta '>= 0' -1
    real_flag --sigma '>= 0' -1
    real_flag --separation '>= 0' -1 --objective logistic
    real_flag --label-skew '[0, 1]' 1.5 --objective logistic
    real_flag --step-flops '>= 0' -1
    real_flag --lr '> 0' -1
    real_flag --lr-decay-factor '(0, 1]' 0 --lr-schedule step
    real_flag --momentum '[0, 1)' 1
    real_flag --outer-lr '> 0' 0 --outer-optimizer sgd --local-steps 2
    real_flag --outer-momentum '[0, 1)' 1 --outer-optimizer nesterov --local-steps 2
    real_flag --target '> 0' 0
    real_flag --fail-rate '[0, 1]' 1.01
    word_flag --objective 'quadratic|logistic'
    word_flag --preset 'epfl|conditioned'
    word_flag --split 'random|label-sorted|dirichlet' --objective logistic --data "$conf/good.svm"
    word_flag --local-steps-dist 'fixed|geometric' --protocol swarm
    word_flag --lr-schedule 'constant|inverse|step'
    word_flag --outer-optimizer 'none|sgd|nesterov'
    word_flag --outer-mix 'models|pseudo-gradients' --outer-optimizer sgd --local-steps 2
    hcase outer-mix.none --outer-mix 'applies only to --outer-optimizer' -- --outer-mix pseudo-gradients "${keep[@]}"
    word_flag --protocol 'allreduce|moshpit|gossip'
    int_flag --data-limit 0 2147483647 2147483648 --objective logistic --data "$conf/good.svm"
    real_flag --l2 '>= 0' -1 --objective softmax --data "$conf/good-images-idx3-ubyte"
    int_flag --hidden 1 65536 65537 --objective mlp --data "$conf/good-images-idx3-ubyte"
    real_flag --dirichlet-alpha '> 0' 0 --objective logistic --data "$conf/good.svm" --split dirichlet
    hcase dirichlet-alpha.random --dirichlet-alpha 'applies only to --split dirichlet' -- --objective logistic \
      --data "$conf/good.svm" --dirichlet-alpha 2 "${keep[@]}"
    hcase hidden.softmax --hidden 'applies only to --objective mlp' -- --objective softmax \
      --data "$conf/good-images-idx3-ubyte" --hidden 8 "${keep[@]}"
    hcase objective.mlp-data --objective 'needs --data' -- --objective mlp "${keep[@]}"
    hcase objective.softmax-data --objective 'needs --data' -- --objective softmax "${keep[@]}"
    hcase data-limit.peers --data-limit 'cannot be split across 2 peers' -- --objective softmax \
      --data "$conf/good-images-idx3-ubyte" --data-limit 1 "${keep[@]}"
    hcase l2.logistic --l2 'applies only to --objective softmax' -- --objective logistic --l2 1 "${keep[@]}"
    hcase data-limit.synthetic --data-limit 'applies only to' -- --objective logistic --data-limit 5 "${keep[@]}"
    hcase data.empty --data '' -- --objective logistic --data '' "${keep[@]}"
    hcase test_data.empty --test-data '' -- --objective logistic --data "$conf/good.svm" --test-data '' "${keep[@]}"
  fi
  # Simulated time that cannot be represented: refused up front, naming the flag
  # and its accepted range (before: SimGrid's deadlock message, exit 0, no trace;
  # on Open MPI detection_time = inf in the trace). Flops take simulated time
  # under SMPI only: those cases run there.
  if [ "$APP" = averaging_bench ]; then flops=--compute-flops; else flops=--step-flops; fi
  hcase simtime.detection --detection-timeout '1e+09 s|[0, ' -- --detection-timeout 1e308 --fail-rate 0.5 "${keep[@]}"
  hcase simtime.detection_sum --detection-timeout '1e+09 s|[0, ' -- --detection-timeout 1e7 --fail-rate 0.5 \
    --trials 200 "${keep[@]}"
  if [ "$ENGINE" = smpi ]; then
    hcase simtime.flops "$flops" '1e+09 s|[0, ' -- "$flops" 1e308 --stragglers 0.5 "${keep[@]}"
    hcase simtime.slowdown --straggler-slowdown '1e+09 s|[1, ' -- "$flops" 1e9 --stragglers 0.5 \
      --straggler-slowdown 1e300 "${keep[@]}"
  fi
  # Sizes that parse but cannot fit: refused by the run's estimate of the memory the
  # peers on this machine need (src/run/estimate.cpp), before
  # anything is allocated, rather than std::bad_alloc or the OOM killer mid-run.
  mem_gb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1e6 }' /proc/meminfo)
  if [ "$APP" = averaging_bench ]; then memory_case=(--dim 1073741824) need=137; else
    memory_case=(--objective logistic --dim 100000) need=320; fi
  if [ "$mem_gb" -lt "$need" ]; then
    hcase dim.memory --dim 'memory' -- "${memory_case[@]}" "${keep[@]}"
  else
    say "dim.memory: SKIPPED: this machine has $mem_gb GB, enough for ${memory_case[*]} ($need GB)"
  fi
  # On/off flags take no value but true or false (and CLI11's synonyms): every
  # switch the program lists.
  while IFS=$'\t' read -r f kind _; do
    [ "$kind" = switch ] || continue
    hcase "${f#--}.value" "$f" '{true, false}' -- "$f=maybe" --out existing.h5
  done < <(timeout -k 10 120 "${LAUNCH[@]}" "$BIN" --list-flags </dev/null)
  hcase config.empty_name --config '' -- --config '' "${keep[@]}"
  IN_FLAGS=0
fi

# ---- files: --config, --topology file:, --data, --test-data ----------------------
# Unreadable: a folder in place of the file (root reads any file), and a file
# without read permission when not root. Then empty files, binary garbage, NUL
# bytes, truncated and malformed lines.
garbage() { printf '\x89HDF\r\n\x1a\n\x00\x00\xff\xfe\x7f\x01binary\x00\x9c\xe2\x28\xa1'; }
# hconfig NAME FLAG_RE NEEDLES TEXT: the case config.NAME, a --config file holding
# TEXT (printf %b: escapes such as \n and \x00 are read) with ${keep[@]}.
hconfig() {
  local name=$1 flag_re=$2 needles=$3 text=$4
  printf '%b' "$text" >"$conf/$name.ini"
  hcase "config.$name" "$flag_re" "$needles" -- --config "$conf/$name.ini" "${keep[@]}"
}

unreadable_cases() {  # FLAG_RE NEEDLES PREFIX_ARGS... -- : runs FLAG on a folder and a mode-000 file
  local tag=$1 flag_re=$2 build=$3
  shift 3
  mkdir -p "$conf/a-folder"
  hcase "$tag.folder" "$flag_re" '' -- "$@" "$($build "$conf/a-folder")" "${keep[@]}"
  if [ "$(id -u)" -ne 0 ]; then
    printf 'x\n' >"$conf/no-read"
    chmod 000 "$conf/no-read"
    hcase "$tag.mode000" "$flag_re" '' -- "$@" "$($build "$conf/no-read")" "${keep[@]}"
  else
    say "$tag.mode000: skipped as root (root reads a mode-000 file; the folder case stands in)"
  fi
}
plain() { printf '%s' "$1"; }
as_topology() { printf 'file:%s' "$1"; }

if want files || want filesample; then
  say "section files"
  IN_FILES=1
  unreadable_cases config --config plain --config
  garbage >"$conf/garbage.ini"
  hcase config.garbage '--config' '' -- --config "$conf/garbage.ini" "${keep[@]}"
  hconfig nul '--config|--rounds|--steps' '' 'rounds = 3\x00\n'
  hconfig truncated '--trials' '[1, ' 'trials =\n'
  hconfig bare_key '--trials' '[1, ' 'trials\n'
  hconfig open_section '--config|--other' '' '[other\ntrials = 2\n'
  hconfig section '--config|--other' 'other' '[other]\ntrials = 2\n'
  hconfig twice '--trials|--config' '' 'trials = 2\ntrials = 3\n'
  # The same key in other spellings CLI11 reads as the same option: before, the
  # first was kept and the others dropped without a word (or, in one order, refused).
  printf 'trials = 2\n"trials" = 3\n' >"$conf/twice-quoted.ini"
  printf '"trials" = 2\ntrials = 3\n' >"$conf/twice-quoted-first.ini"
  printf 'trials = 2\nseed = 1\ntrials = 3\n' >"$conf/twice-apart.ini"
  printf "trials = 2\nseed = 1\n'trials' = 3\n" >"$conf/twice-single-quoted.ini"
  printf 'trials = 2\nseed = 1\n--trials = 3\n' >"$conf/twice-dashed.ini"
  for t in quoted quoted-first apart single-quoted dashed; do
    hcase "config.twice_$t" '--trials' '' -- --config "$conf/twice-$t.ini" "${keep[@]}"
  done
  # Also when the command line gives the option too (and so CLI11 reads neither line).
  hcase config.twice_overridden '--trials' 'more than once' -- --config "$conf/twice-quoted.ini" --trials 1 \
    "${keep[@]}"
  # CLI11 folds neither case nor '_': such a key is not an option, and is refused as one.
  hconfig twice_case '--config' 'TRIALS' 'trials = 2\nTRIALS = 3\n'
  hconfig long_line '--trials' '[1, ' "trials = $(printf '9%.0s' $(seq 100000))\n"
  hconfig crlf '--trials' '[1, ' 'trials = 0\r\n'
  # An empty file holds no options: the run uses the defaults (not refused).
  : >"$conf/empty.ini"
  if [ "$APP" = averaging_bench ]; then short=(--rounds 1 --trials 1); else short=(--steps 1); fi
  run_app config.empty --config "$conf/empty.ini" "${short[@]}" --quiet
  if [ "$RC" -eq 0 ]; then ok "config.empty: an empty --config file is no options: exit 0"; else
    bad "config.empty: exit code $RC"; show_logs; fi

  if [ "$APP" = averaging_bench ]; then
    gossip=(--protocol gossip --topology)
    unreadable_cases topology --topology as_topology "${gossip[@]}"
    : >"$conf/empty.edges"
    garbage >"$conf/garbage.edges"
    printf '0\n' >"$conf/truncated.edges"
    printf '0 5\n' >"$conf/range.edges"
    printf '0 0\n' >"$conf/loop.edges"
    printf -- '-1 0\n' >"$conf/negative.edges"
    printf '0 %s\n' "$HUGE" >"$conf/huge.edges"
    printf '0 1.5\n' >"$conf/real.edges"
    printf '0 1 2\n' >"$conf/three.edges"
    printf '0 1\x00\n' >"$conf/nul.edges"
    for t in empty garbage truncated range loop negative huge real three nul; do
      hcase "topology.$t" --topology "$t.edges" -- "${gossip[@]}" "file:$conf/$t.edges" "${keep[@]}"
    done
    unreadable_cases availability --availability plain --availability
    garbage >"$conf/garbage.csv"
    printf 'peer,down,up\n0,5,3\n' >"$conf/negative.csv"
    printf 'peer,down,up\n0,1,5\n0,3,7\n' >"$conf/overlapping.csv"
    for t in garbage negative overlapping; do
      hcase "availability.$t" --availability "$t.csv" -- --availability "$conf/$t.csv" "${keep[@]}"
    done
  else
    logistic=(--objective logistic)
    unreadable_cases data --data plain "${logistic[@]}" --data
    unreadable_cases test_data --test-data plain "${logistic[@]}" --data "$conf/good.svm" --test-data
    garbage >"$conf/garbage.svm"
    printf '+1 1:1\n-1 3:\n' >"$conf/truncated.svm"
    printf '+1 1:1\n-1 1:1e400\n' >"$conf/overflow.svm"
    printf '+1 1:1\n-1 1:nan\n' >"$conf/nan.svm"
    printf '+1 1:1\nnan 1:1\n' >"$conf/nan-label.svm"
    printf '+1 1:1\n-1 99999999999:1\n' >"$conf/huge-index.svm"
    printf '+1 1:1\n-1 2147483648:1\n' >"$conf/int-index.svm"
    printf '+1 1:1\n-1 16777217:1\n' >"$conf/wide-index.svm"
    printf '+1 1:1\n-1 -2:1\n' >"$conf/negative-index.svm"
    printf '+1 1:1\x00\n-1 2:1\n' >"$conf/nul.svm"
    for t in garbage truncated overflow nan nan-label huge-index int-index wide-index negative-index nul; do
      hcase "data.$t" --data "$t.svm" -- "${logistic[@]}" --data "$conf/$t.svm" "${keep[@]}"
    done
    hcase test_data.garbage --test-data garbage.svm -- "${logistic[@]}" --data "$conf/good.svm" \
      --test-data "$conf/garbage.svm" "${keep[@]}"
    # IDX images (--objective softmax): each in a folder of its own, beside its labels file.
    idx_case() {  # idx_case NAME NEEDLES IMAGES_WRITER LABELS_WRITER
      mkdir -p "$conf/$1"
      $3 >"$conf/$1/x-images-idx3-ubyte"
      $4 >"$conf/$1/x-labels-idx1-ubyte"
      hcase "data.idx-$1" --data "$2" -- --objective softmax --data "$conf/$1/x-images-idx3-ubyte" "${keep[@]}"
    }
    good_images() { cat "$conf/good-images-idx3-ubyte"; }
    good_labels() { cat "$conf/good-labels-idx1-ubyte"; }
    short_images() { head -c 25 "$conf/good-images-idx3-ubyte"; }
    three_labels() { idx_header 1 3; printf '\x00\x01\x00'; }
    one_class() { idx_header 1 4; printf '\x03\x03\x03\x03'; }
    idx_case magic 'not an IDX images file (magic 0x' garbage good_labels
    idx_case truncated 'truncated' short_images good_labels
    idx_case count 'holds 3 labels for 4 images' good_images three_labels
    idx_case labels-magic 'not an IDX labels file' good_images good_images
    idx_case one-class 'every label is 3' good_images one_class
    idx_case no-labels 'its labels file|ends inside its header' good_images true
    corrupt_gzip() { printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not deflate data at all'; }
    idx_case gzip 'cannot read the file (' corrupt_gzip good_labels
    hcase data.idx-name --data 'images-idx3' -- --objective softmax --data "$conf/good.svm" "${keep[@]}"
    mkdir -p "$conf/wide"
    { idx_header 3 4; printf '\x00\x00\x00\x01\x00\x00\x00\x02'; printf '\x10%.0s' $(seq 8); } \
      >"$conf/wide/t-images-idx3-ubyte"
    good_labels >"$conf/wide/t-labels-idx1-ubyte"
    hcase test_data.idx-size --test-data 'images of 2 pixels' -- --objective softmax \
      --data "$conf/good-images-idx3-ubyte" --test-data "$conf/wide/t-images-idx3-ubyte" "${keep[@]}"
  fi
  IN_FILES=0
fi

# ---- --out ----------------------------------------------------------------------------
# mount_or_skip TAG DIR MOUNT_ARGS...: mounts (as root); says why a case is skipped.
MOUNTED=()
unmount_all() {
  local d
  for d in "${MOUNTED[@]}"; do umount "$d" 2>/dev/null || umount -l "$d" 2>/dev/null || true; done
  MOUNTED=()
}
avb_cleanup_hooks+=(unmount_all)
mount_or_skip() {
  local tag=$1 dir=$2
  shift 2
  if [ "$(id -u)" -ne 0 ]; then
    say "$tag: SKIPPED: needs root to mount ($*)"
    return 1
  fi
  local why
  if ! why=$(mount "$@" "$dir" 2>&1); then
    say "$tag: SKIPPED: mount refused: $why"
    return 1
  fi
  MOUNTED+=("$dir")
}

if want out; then
  say "section out"
  if [ "$APP" = averaging_bench ]; then short=(--rounds 2 --trials 1); else short=(--steps 2); fi
  hcase out.empty --out "''|file name" -- --out '' "${short[@]}"
  hcase out.folder --out 'folder' -- --out . --overwrite "${short[@]}"
  hcase out.trailing_slash --out 'folder|file name' -- --out existing.h5/ --overwrite "${short[@]}"
  hcase out.file_as_folder --out 'existing.h5|not a folder' -- --out existing.h5/run.h5 "${short[@]}"
  hcase out.long_name --out 'too long' -- --out "$(printf 'n%.0s' $(seq 300)).h5" "${short[@]}"
  hcase out.exists --out 'existing.h5|--overwrite' -- --out existing.h5 "${short[@]}"
  # --summary FILE: the same destination check, and never the --out path.
  hcase summary.exists --summary "already exists|--overwrite" -- --summary existing.h5 "${short[@]}"
  hcase summary.no_folder --summary "does not exist" -- --summary nope/s.csv "${short[@]}"
  hcase summary.is_out --summary "--out" -- --summary run.h5 --out run.h5 "${short[@]}"

  # What is not a regular file: a FIFO, a socket, a link to a character device.
  # Refused with and without --overwrite (before, --overwrite replaced any of
  # them with the trace: as root even /dev/full); each stays what it was.
  mkfifo "$work/fifo.h5"
  "$AVB_PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$work/socket.h5"
  ln -s /dev/null "$work/device.h5"
  for t in fifo socket device; do
    hcase "out.$t" --out "$t.h5|not a regular file" -- --out "$t.h5" "${short[@]}"
    hcase "out.${t}_overwrite" --out "$t.h5|not a regular file" -- --out "$t.h5" --overwrite "${short[@]}"
  done
  if [ -p "$work/fifo.h5" ] && [ -S "$work/socket.h5" ] && [ "$(readlink "$work/device.h5")" = /dev/null ]; then
    ok "out.special: the FIFO, the socket and the link to /dev/null are unchanged"
  else
    bad "out.special: a FIFO, socket or device link was replaced"
  fi
  rm -f "$work/fifo.h5" "$work/socket.h5" "$work/device.h5"

  # A read-only folder: a read-only bind mount as root (permissions do not stop
  # root), mode 555 otherwise. The earlier trace inside must survive --overwrite.
  ro=$work/ro
  mkdir -p "$SCRATCH/ro-src"
  cp "$work/existing.h5" "$SCRATCH/ro-src/existing.h5"
  mkdir -p "$ro"
  if [ "$(id -u)" -ne 0 ]; then
    cp "$work/existing.h5" "$ro/existing.h5"
    chmod 555 "$ro"
    ro_ready=1
  elif mount_or_skip out.read_only "$ro" --bind "$SCRATCH/ro-src"; then
    if mount -o remount,bind,ro "$ro" 2>/dev/null; then ro_ready=1; else
      say "out.read_only: SKIPPED: remount read-only refused"; ro_ready=0; fi
  else
    ro_ready=0
  fi
  if [ "$ro_ready" = 1 ]; then
    hcase out.read_only --out 'not writable' -- --out ro/run.h5 "${short[@]}"
    hcase out.read_only_overwrite --out 'not writable' -- --out ro/existing.h5 --overwrite "${short[@]}"
    hcase summary.read_only --summary 'not writable' -- --summary ro/s.csv "${short[@]}"
  fi
  [ "$(id -u)" -ne 0 ] && chmod 755 "$ro"
  unmount_all
  rm -rf "$ro"
fi

if want out || want outfull; then
  want out || say "section outfull"

  # A full file system: a 256 KiB tmpfs holding an earlier trace, and a run whose
  # trace needs more. Not bad input: the run starts, and must then end non-zero
  # with one error line naming --out and the full disk; nothing new may be left
  # (neither the final name nor the hidden temporary file), and the earlier trace
  # keeps its SHA-256.
  full=$SCRATCH/full
  mkdir -p "$full"
  if mount_or_skip out.full "$full" -t tmpfs -o size=256k tmpfs; then
    cp "$work/existing.h5" "$full/run.h5"
    before=$(sha256sum "$full/run.h5" | cut -d' ' -f1)
    if [ "$APP" = averaging_bench ]; then
      big=(--rounds 400 --trials 30 --dim 2)
    else
      big=(--steps 4000 --eval-every 1 --trials 10)
    fi
    set +e
    (cd "$work" && timeout -k 10 120 "${LAUNCH[@]}" "$BIN" "${big[@]}" --out "$full/run.h5" --overwrite --quiet) \
      >"$logs/full.out" 2>"$logs/full.err" </dev/null
    RC=$?
    set -e
    OUT=$logs/full.out ERR=$logs/full.err
    problems=()
    [ "$RC" -eq 1 ] || problems+=("exit code $RC, expected 1 (an error, not bad input, not a crash)")
    lines=$(grep -v '^\[' "$ERR" | grep -c "^$APP: error" || true)
    [ "$lines" -eq 1 ] || problems+=("$lines '$APP: error' lines on stderr, expected 1")
    grep -v '^\[' "$ERR" | grep "^$APP: error" | grep -q -- '--out' || problems+=("the error line does not name --out")
    grep -v '^\[' "$ERR" | grep "^$APP: error" | grep -qi 'space' || problems+=("the error line does not say the disk is full")
    left=$(cd "$full" && ls -A | grep -vx run.h5 || true)
    [ -z "$left" ] || problems+=("files left on the full file system: $left")
    [ "$(sha256sum "$full/run.h5" | cut -d' ' -f1)" = "$before" ] || problems+=("the earlier trace changed")
    if [ ${#problems[@]} -eq 0 ]; then
      ok "out.full: exit $RC, \"$(grep -v '^\[' "$ERR" | grep "^$APP: error")\", nothing left, earlier trace kept"
    else
      bad "out.full: a run onto a full file system"
      for p in "${problems[@]}"; do echo "    - $p" >&2; done
      show_logs
    fi
    unmount_all
  fi
fi

# Every flag the program lists (--list-flags) that takes a value has cases in this
# script, so a flag added to the program without them fails here by name; checked
# by the runs of every section (a case counts when it is written, run or left to
# another run). Switches and CLI11's own flags take no value to refuse. sgd_bench's
# flags declared exactly as averaging_bench's (same kind and accepted values: the
# same code) are averaging_bench's cases (its run beside this one, same folder).
if { want flags || want flagsample; } && { want files || want filesample; } && want out; then
  list_flags() {
    timeout -k 10 120 "${LAUNCH[@]}" "$1" --list-flags 2>"$logs/flags.err" </dev/null ||
      die "$1 --list-flags failed: $(head -3 "$logs/flags.err")"
  }
  declare -A SAME_AS_AVERAGING=()
  if [ "$APP" = sgd_bench ]; then
    program_arg AVERAGING_BIN "$(dirname "$BIN")/averaging_bench" "averaging_bench beside sgd_bench"
    while IFS=$'\t' read -r flag kind accepted _; do
      SAME_AS_AVERAGING["$flag"$'\t'"$kind"$'\t'"$accepted"]=1
    done < <(list_flags "$AVERAGING_BIN")
  fi
  uncovered=()
  while IFS=$'\t' read -r flag kind accepted _; do
    [[ $flag == --* ]] || continue
    case "$kind" in switch | builtin) continue ;; esac
    [ -z "${HOSTILE_FLAGS[$flag]:-}" ] || continue
    [ -z "${SAME_AS_AVERAGING["$flag"$'\t'"$kind"$'\t'"$accepted"]:-}" ] || continue
    uncovered+=("$flag ($kind)")
  done < <(list_flags "$BIN")
  if [ ${#uncovered[@]} -eq 0 ]; then
    ok "every flag of $APP --list-flags that takes a value has hostile cases (${#HOSTILE_FLAGS[@]} flags here)"
  else
    bad "flags of $APP --list-flags without a hostile case in test_hostile.sh: ${uncovered[*]}"
  fi
fi

[ "$SAMPLED_OUT" -eq 0 ] || say "slices $SECTIONS: $SAMPLED_OUT case(s) left to the runs that check them one by one (same C++ code)"
[ "$SKIPPED_EMPTY" -eq 0 ] || say "SKIPPED under SMPI: $SKIPPED_EMPTY case(s) with an empty argument or a blank (smpirun drops or splits them)"
say "$(elapsed "$started") s"
launched_check
finish
