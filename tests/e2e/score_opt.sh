#!/bin/sh
# score_opt.sh: the score stage on the OPT engine's golden preln checkpoint
# (tests/opt/golden/preln), sampled rows: an fp32 rollout scored by the same
# backend in fp32 has no gap (the train-inference mismatch of the fp32
# kernels: float rounding between the decode and the prefill paths), and
# scored in bf16 a gap well above that; the rollout's lengths give the
# RL-named fields.
#   score_opt.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
CK=$2/tests/opt/golden/preln
bc_test_workdir "$3"
unset BENCHCTL_PLUGIN_PATH

# every per-iteration value of KEY in FILE
values() { grep -E "\"$1\": (-?[0-9]|null)" "$2" | sed 's/.*": //; s/,$//'; }
# Fails unless every value of KEY in FILE is a number in [LO, HI].
within() { # FILE KEY LO HI
    v=$(values "$2" "$1")
    [ -n "$v" ] || { fail "$1: no $2"; return; }
    echo "$v" | awk -v lo="$3" -v hi="$4" '!/^-?[0-9]/ || $1 < lo || $1 > hi { bad = 1 } END { exit bad }' ||
        fail "$1: $2 is $(echo "$v" | tr '\n' ' '), expected [$3, $4]"
}

cat >opt.cfg <<CFG
backend = { name = "opt"; settings = { checkpoint = "$CK"; threads = 1; }; };
precisions = [ "fp32" ];
matrix = { batch_sizes = [2]; samples_per_prompt = [2]; prompt_lengths = [4]; response_lengths = [6]; };
sampling = { temperature = 1.0; seed = 7; };
run = { warmup = 1; iterations = 2; quiet_check = "off"; };
score = { };
reporters = ( { name = "json"; settings = { path = "fp32.json"; }; } );
CFG

expect 0 fp32 run opt.cfg
within fp32.json logprob_gap_max 0 1e-4
within fp32.json logprob_gap_mean 0 1e-5
within fp32.json kl_k3 0 1e-9
within fp32.json importance_ratio_min 0.9999 1
within fp32.json importance_ratio_max 1 1.0001
within fp32.json score_ms 0 1e9
within fp32.json response_length/mean 6 6
within fp32.json response_length/clip_ratio 0 1
has fp32.json '"precision": "fp32",'

expect 0 bf16 run opt.cfg --set 'score.precision="bf16"' --set 'reporters.[0].settings.path="bf16.json"'
within bf16.json logprob_gap_mean 1e-4 1
within bf16.json logprob_gap_max 1e-3 10
within bf16.json kl_k3 1e-8 1
has bf16.json '"precision": "bf16",'

bc_test_finish score_opt
