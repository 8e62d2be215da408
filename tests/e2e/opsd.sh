#!/bin/sh
# opsd.sh: configs/opsd.cfg (the OPSD loop: the student rolls out, the
# teacher scores, refit per rollout) cut down with --set to the llama
# backend's smollm2-135m preset on tiny shapes, one iteration: the report
# has the scorer, the refit policy and the memcpy bound in its header, and
# per iteration the score, the gap, the refit and the RL-named fields,
# consistent with each other (rollout_step_ms is the sum of its stages).
# Then the gap on the llama engine through benchctl: an fp32 rollout scored
# by its own weights in fp32 has a gap of fp32 rounding only (at most
# ZERO_GAP_MAX), a bf16 rollout scored in fp32 has one (its mean above
# BF16_GAP_MIN); the measured values are printed.
#   opsd.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
BENCHCTL=$1
SRC=$2
. "$(dirname "$0")/../lib/testlib.sh"
bc_test_workdir "$3"
unset BENCHCTL_PLUGIN_PATH

# an fp32 rollout's log-probabilities against the fp32 score of its tokens:
# the decode step's logits and the scoring forward's differ by fp32 rounding
# (tests/engine/test_score.c bounds the engine's own at 2e-5)
ZERO_GAP_MAX=1e-4
# weights rounded to bf16 move the logits by ~1e-2 of their scale
BF16_GAP_MIN=1e-4

# The number after "KEY": in FILE's n-th (1-based) per-iteration value, or "null".
nth() { grep -E "\"$1\": (-?[0-9]|null)" "$3" | sed -n "$2p" | sed 's/.*": //; s/,$//'; }
# Fails unless GOT is a number and the awk condition COND (on g) holds.
holds() { # NAME GOT COND
    awk -v g="$2" "BEGIN { if (g !~ /^-?[0-9]/) exit 1; exit !($3) }" || fail "$1 is $2, expected $3"
}

# the config cut down: 2 cases (fp32 and int8 student, avx2 kernels), 1 x 2
# rows, prompts of 8, responses of at most 8 drawn around 5, no warmup
tiny() { # JSON ARGS...
    json=$1
    shift
    "$BENCHCTL" run "$SRC/configs/opsd.cfg" \
        --set 'backend.settings.model="smollm2-135m"' --set 'score.settings.model="smollm2-135m"' \
        --set 'backend.settings.response_length_mean=5.0' --set 'precisions=["fp32","int8"]' \
        --set 'matrix.backend_settings.kernels=["avx2"]' --set 'matrix.batch_sizes=[1]' \
        --set 'matrix.samples_per_prompt=[2]' --set 'matrix.prompt_lengths=[8]' --set 'matrix.response_lengths=[8]' \
        --set 'run.warmup=0' --set 'run.iterations=1' --set 'run.quiet_check="off"' \
        --set "reporters.[1].settings.path=\"$json\"" "$@"
}

# --- the config, cut down: every case runs and reports each stage
# the teacher of other weights than the student's and the refit's (weights_seed 1 and 1 + 1)
tiny opsd.json --set 'score.settings.weights_seed=3' >opsd.out 2>opsd.err || { fail "opsd.cfg cut down exited non-zero"; bc_test_show opsd.err; }
has opsd.err '2 cases: 2 ok'
has opsd.json '"scorer": {'
has opsd.json '"backend": "llama",'
has opsd.json '"precision": "bf16",'
has opsd.json '"refit": "per_rollout",'
grep -Eq '"memcpy_gb_per_s": [0-9]' opsd.json || fail "opsd.json: no memcpy_gb_per_s"
has opsd.json '"kernels": "avx2"'
has opsd.json '"shared_prefill": true'
for it in 1 2; do
    for f in score_ms score_tokens_per_second refit_ms refit_bytes refit_gb_per_s refit_bound_share rollout_step_ms \
        generation_ms total_ms timing_per_token_ms/gen slowest_row/generation_ms; do
        holds "$f[$it]" "$(nth "$f" "$it" opsd.json)" 'g > 0'
    done
    # a teacher of other weights (weights_seed 3): a gap, and k3 > 0
    holds "logprob_gap_mean[$it]" "$(nth logprob_gap_mean "$it" opsd.json)" 'g > 0'
    holds "kl_k3[$it]" "$(nth kl_k3 "$it" opsd.json)" 'g > 0'
    gmean=$(nth logprob_gap_mean "$it" opsd.json)
    holds "logprob_gap_max[$it]" "$(nth logprob_gap_max "$it" opsd.json)" "g >= $gmean"
    rmin=$(nth importance_ratio_min "$it" opsd.json)
    rmean=$(nth importance_ratio_mean "$it" opsd.json)
    holds "importance_ratio_min[$it]" "$rmin" 'g > 0'
    holds "importance_ratio_mean[$it]" "$rmean" "g >= $rmin"
    holds "importance_ratio_max[$it]" "$(nth importance_ratio_max "$it" opsd.json)" "g >= $rmean"
    # the lengths drawn around 5, clamped at the case's 8
    lmin=$(nth response_length/min "$it" opsd.json)
    lmean=$(nth response_length/mean "$it" opsd.json)
    holds "response_length/min[$it]" "$lmin" 'g >= 1'
    holds "response_length/mean[$it]" "$lmean" "g >= $lmin"
    holds "response_length/max[$it]" "$(nth response_length/max "$it" opsd.json)" "g >= $lmean && g <= 8"
    holds "response_length/clip_ratio[$it]" "$(nth response_length/clip_ratio "$it" opsd.json)" 'g >= 0 && g <= 1'
    holds "slowest_row/response_length[$it]" "$(nth slowest_row/response_length "$it" opsd.json)" 'g >= 1 && g <= 8'
    # rollout_step_ms = refit_ms + total_ms + score_ms
    want=$(awk -v r="$(nth refit_ms "$it" opsd.json)" -v t="$(nth total_ms "$it" opsd.json)" \
        -v s="$(nth score_ms "$it" opsd.json)" 'BEGIN { printf "%.9f", r + t + s }')
    holds "rollout_step_ms[$it]" "$(nth rollout_step_ms "$it" opsd.json)" "g - $want <= 1e-6 && $want - g <= 1e-6"
done
# the console names the stages
has opsd.out 'gap_mean'
has opsd.out 'response_length/mean'

# --- the zero gap and a gap that must not be: the student scored by its own
# weights in fp32 (same preset and weights_seed), no refit, sampled at T=1:
# case 0 an fp32 rollout (fp32 rounding only), case 1 a bf16 one
tiny gap.json --set 'precisions=["fp32","bf16"]' --set 'score.precision="fp32"' --set 'score.settings.weights_seed=1' \
    --set 'run.refit="off"' >gap.out 2>gap.err || { fail "the gap run exited non-zero"; bc_test_show gap.err; }
zmax=$(nth logprob_gap_max 1 gap.json)
echo "fp32 rollout scored by itself in fp32: logprob_gap_max $zmax (at most $ZERO_GAP_MAX)"
holds "zero gap logprob_gap_max" "$zmax" "g >= 0 && g <= $ZERO_GAP_MAX"
bmean=$(nth logprob_gap_mean 2 gap.json)
echo "bf16 rollout scored by its fp32 weights: logprob_gap_mean $bmean (above $BF16_GAP_MIN)"
holds "bf16 gap logprob_gap_mean" "$bmean" "g > $BF16_GAP_MIN"
[ "$(nth refit_ms 1 gap.json)" = null ] || fail "the gap run: refit off, refit_ms not null"
has gap.json '"precision": "fp32",'

bc_test_finish opsd
