#!/bin/sh
# score_engine.sh: the score stage, the logprob gap and refit end to end
# through the native engine (the llama backend): a rollout scored by the
# same weights in fp32 has a gap of fp32 rounding (not exactly 0: the score
# is another batch shape), a bf16 rollout scored in fp32 a real one; the
# smollm2-135m preset scored by itself; refit per rollout from host memory.
#   score_engine.sh BENCHCTL WORK_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
bc_test_workdir "$2"
SRC=$3

# The number after "KEY": in FILE's n-th (1-based) per-iteration value, or "null".
nth() { grep -E "\"$1\": (-?[0-9]|null)" "$3" | sed -n "$2p" | sed 's/.*": //; s/,$//'; }
# Fails unless GOT is a number below (or, with ">", above) BOUND.
below() { awk -v g="$2" -v b="$3" 'BEGIN { if (g !~ /^-?[0-9]/) exit 1; exit !(g < b) }' || fail "$1 is $2, not below $3"; }
above() { awk -v g="$2" -v b="$3" 'BEGIN { if (g !~ /^-?[0-9]/) exit 1; exit !(g > b) }' || fail "$1 is $2, not above $3"; }

cat >engine.cfg <<CFG
backend = { name = "llama"; settings = { checkpoint = "$SRC/tests/llama/golden/qwen2_gqa4"; threads = 2;
                                         stop_at_eos = true; }; };
precisions = [ "fp32" ];
sampling = { temperature = 0.9; top_p = 0.95; seed = 3; };
matrix = { batch_sizes = [2]; samples_per_prompt = [2]; prompt_lengths = [8]; response_lengths = [12]; };
run = { warmup = 0; iterations = 2; quiet_check = "off"; };
score = { precision = "fp32"; };
reporters = ( { name = "json"; settings = { path = "fp32.json"; }; } );
CFG

# --- fp32 scored by itself: the gap is fp32 rounding
expect 0 fp32 run engine.cfg
for it in 1 2; do
    below "fp32 logprob_gap_max[$it]" "$(nth logprob_gap_max "$it" fp32.json)" 1e-4
    below "fp32 kl_k3[$it]" "$(nth kl_k3 "$it" fp32.json)" 1e-8
    above "fp32 score_ms[$it]" "$(nth score_ms "$it" fp32.json)" 0
done
has fp32.json '"precision": "fp32",'

# --- a bf16 rollout scored in fp32: the train-inference mismatch of bf16 weights
expect 0 bf16 run engine.cfg --set 'precisions=["bf16"]' --set 'reporters.[0].settings.path="bf16.json"'
for it in 1 2; do
    above "bf16 logprob_gap_mean[$it]" "$(nth logprob_gap_mean "$it" bf16.json)" 3e-4
    above "bf16 kl_k3[$it]" "$(nth kl_k3 "$it" bf16.json)" 0
done

# --- a preset's synthetic weights scored by themselves
expect 0 preset run engine.cfg --set 'backend.settings.checkpoint=""' --set 'backend.settings.model="smollm2-135m"' \
    --set 'matrix.batch_sizes=[1]' --set 'matrix.samples_per_prompt=[1]' --set 'matrix.prompt_lengths=[4]' \
    --set 'matrix.response_lengths=[4]' --set 'run.iterations=1' --set 'reporters.[0].settings.path="preset.json"'
below "preset logprob_gap_max" "$(nth logprob_gap_max 1 preset.json)" 1e-4

# --- refit every rollout from host memory: timed, bytes moved
expect 0 refit run engine.cfg --set 'run.refit="per_rollout"' --set 'backend.settings.refit_source="host"' \
    --set 'reporters.[0].settings.path="refit.json"'
for it in 1 2; do
    above "refit_ms[$it]" "$(nth refit_ms "$it" refit.json)" 0
    above "refit_bytes[$it]" "$(nth refit_bytes "$it" refit.json)" 0
done
# without a refit source the engine refuses refit, naming the setting
expect 3 norefit run engine.cfg --set 'run.refit="per_rollout"' --set 'reporters.[0].settings.path="norefit.json"'
has norefit.json 'refit_source'

# a scorer of another vocabulary is refused before the first case, in one line
expect 2 vocab run engine.cfg --set 'score.settings.checkpoint=""' --set 'score.settings.model="smollm2-135m"'
grep -q 'score: the scorer (.llama., smollm2-135m.*) has 49152 token ids, the rollout.s backend .llama. (.*) 160: a scorer scores the rollout.s own token ids' vocab.err ||
    { fail "vocab: no refusal naming both vocabularies"; cat vocab.err; }
[ "$(grep -c . vocab.err)" -le 2 ] || { fail "vocab: more than one line"; cat vocab.err; }

bc_test_finish score_engine
