#!/bin/sh
# score.sh: the score stage, the logprob gap, refit and the RL-named fields
# end to end through the fixture backend (tests/fixtures/testbackend.c,
# whose scorer shifts token t's log-probability by score_shift x (1 + t %
# 2)): the exact gap of a known shift and a zero gap, refit per_rollout and
# per_case with their NaN pattern, the header's scorer and memcpy bound,
# the '/' names through every reporter, compare, report and --resume, the
# refusals (no hook, bad config) and the bad values the hooks hand back,
# and a run with run.isolation = "process".
#   score.sh BENCHCTL WORK_DIR FIXTURE_PLUGIN_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
bc_test_workdir "$2"
BENCHCTL_PLUGIN_PATH=$3
export BENCHCTL_PLUGIN_PATH

# The number after "KEY": in FILE's n-th (1-based) per-iteration value, or "null".
nth() { grep -E "\"$1\": (-?[0-9]|null)" "$3" | sed -n "$2p" | sed 's/.*": //; s/,$//'; }
# Fails unless the value is a number within TOL of WANT.
near() { # NAME GOT WANT TOL
    awk -v g="$2" -v w="$3" -v t="$4" 'BEGIN { if (g !~ /^-?[0-9]/) exit 1; d = g - w; if (d < 0) d = -d; exit !(d <= t) }' ||
        fail "$1 is $2, expected $3 (within $4)"
}

cat >score.cfg <<'CFG'
backend = { name = "testbackend"; settings = { expand_us = 20; generate_us = 1; post_us = 10; eos_every = 2;
                                               report_steps = true; case_log = "rollout.log"; }; };
precisions = [ "testfp32" ];
matrix = { batch_sizes = [2]; samples_per_prompt = [1]; prompt_lengths = [8]; response_lengths = [4]; };
run = { warmup = 1; iterations = 3; quiet_check = "off"; refit = "per_case"; };
score = { precision = "testbf16"; settings = { score_shift = 0.1; case_log = "scorer.log"; }; };
reporters = ( { name = "console"; }, { name = "json"; settings = { path = "score.json"; }; },
              { name = "csv"; settings = { path = "score.csv"; }; }, { name = "jsonl"; settings = { path = "score.jsonl"; }; },
              { name = "markdown"; settings = { path = "score.md"; }; } );
CFG

# --- a known shift: rows of 4 and 2 tokens, shifts 0.1, 0.2, 0.1, 0.2 (and 0.1, 0.2)
expect 0 shift run score.cfg
for it in 1 2 3; do
    near "logprob_gap_mean[$it]" "$(nth logprob_gap_mean "$it" score.json)" 0.15 1e-6
    near "logprob_gap_max[$it]" "$(nth logprob_gap_max "$it" score.json)" 0.2 1e-6
    # k3: mean of e^-s - 1 + s over the tokens' shifts
    near "kl_k3[$it]" "$(nth kl_k3 "$it" score.json)" 0.0117840887 1e-6
    near "importance_ratio_min[$it]" "$(nth importance_ratio_min "$it" score.json)" 0.8187307531 1e-6
    near "importance_ratio_mean[$it]" "$(nth importance_ratio_mean "$it" score.json)" 0.8617840711 1e-6
    near "importance_ratio_max[$it]" "$(nth importance_ratio_max "$it" score.json)" 0.9048374180 1e-6
    near "response_length/mean[$it]" "$(nth response_length/mean "$it" score.json)" 3 0
    near "response_length/min[$it]" "$(nth response_length/min "$it" score.json)" 2 0
    near "response_length/max[$it]" "$(nth response_length/max "$it" score.json)" 4 0
    near "response_length/clip_ratio[$it]" "$(nth response_length/clip_ratio "$it" score.json)" 0.5 0
    # the fixture keeps no per-row schedule: no slowest row (test_rowlat has one)
    [ "$(nth slowest_row/response_length "$it" score.json)" = null ] || fail "slowest_row/response_length[$it] is not null"
    # 2 rows x (8 prompt + 4 or 2 response) scored tokens
    sms=$(nth score_ms "$it" score.json)
    want=$(awk -v m="$sms" 'BEGIN { printf "%.6f", 22 / (m / 1000) }')
    near "score_tokens_per_second[$it]" "$(nth score_tokens_per_second "$it" score.json)" "$want" \
        "$(awk -v w="$want" 'BEGIN { print w * 1e-6 }')"
done
# per_case: the refit before the first measured rollout only
[ "$(grep -Ec '"refit_ms": [0-9]' score.json)" -eq 1 ] || fail "per_case: refit_ms measured other than once"
[ "$(grep -Ec '"refit_ms": null' score.json)" -eq 2 ] || fail "per_case: refit_ms not null in the other 2 iterations"
[ "$(grep -c '^refit' rollout.log)" -eq 1 ] || fail "per_case: $(grep -c '^refit' rollout.log) refits, expected 1"
near refit_bytes "$(nth refit_bytes 1 score.json)" 1048576 0
grep -Eq '"refit_bound_share": [0-9]' score.json || fail "refit_bound_share not measured"
# rollout_step_ms = refit_ms + total_ms + score_ms in the first iteration, total_ms + score_ms after
for it in 1 2; do
    r=$(nth refit_ms "$it" score.json); [ "$r" = null ] && r=0
    want=$(awk -v r="$r" -v t="$(nth total_ms "$it" score.json)" -v s="$(nth score_ms "$it" score.json)" \
        'BEGIN { printf "%.9f", r + t + s }')
    near "rollout_step_ms[$it]" "$(nth rollout_step_ms "$it" score.json)" "$want" 1e-6
done
# the scorer's own case: the rollout's shape in the score precision
has scorer.log "begin 0 testbf16"
has rollout.log "begin 0 testfp32"
# the header: the scorer, the refit policy, the memcpy bound
has score.json '"scorer": {'
has score.json '"backend": "testbackend",'
has score.json '"precision": "testbf16",'
has score.json '"refit": "per_case",'
grep -Eq '"memcpy_gb_per_s": [0-9]' score.json || fail "score.json: no memcpy_gb_per_s"
# descriptors: the gap is lower-is-better, the ratios neither
grep -A3 '"name": "logprob_gap_mean"' score.json | grep -q '"better": "lower"' || fail "logprob_gap_mean is not lower is better"
grep -A3 '"name": "importance_ratio_mean"' score.json | grep -q '"better": "neither"' ||
    fail "importance_ratio_mean is not neither"
# '/' through the other reporters
head -1 score.csv | grep -q 'response_length/mean_p50' || fail "score.csv: no response_length/mean column"
head -1 score.csv | grep -q 'timing_per_token_ms/gen_mean' || fail "score.csv: no timing_per_token_ms/gen column"
grep -q '"response_length/mean":3' score.jsonl || fail "score.jsonl: no response_length/mean of 3"
[ -s score.md ] || fail "score.md is empty"
expect 0 html report score.json -o score.html
has score.html 'response_length/clip_ratio'
has score.html 'logprob_gap_mean'
has shift.out 'response_length/mean'
has shift.out 'gap_mean'
expect 0 replay report score.json --reporter json -o replay.json
near "replay response_length/mean" "$(nth response_length/mean 1 replay.json)" 3 0
near "replay logprob_gap_mean" "$(nth logprob_gap_mean 1 replay.json)" 0.15 1e-6
# the header read back: the scorer, the refit policy, the bound
has replay.json '"precision": "testbf16",'
has replay.json '"refit": "per_case",'
[ "$(grep -o '"memcpy_gb_per_s": [0-9.e+-]*' replay.json)" = "$(grep -o '"memcpy_gb_per_s": [0-9.e+-]*' score.json)" ] ||
    fail "replay.json: memcpy_gb_per_s differs from score.json's"
# compare: the gap fields are metrics, lower is better; a '/' name is a metric too
expect 0 cmp compare score.json score.json --metric logprob_gap_mean,kl_k3,response_length/mean,timing_per_token_ms/gen
has cmp.out "logprob_gap_mean (lower is better)"
has cmp.out "kl_k3 (lower is better)"
has cmp.out "response_length/mean"
has cmp.out "timing_per_token_ms/gen (lower is better)"
# --resume from the journal: every case taken, with its '/' fields, as they were
cp score.json first.json
expect 0 resumed run score.cfg --resume score.jsonl
for f in response_length/mean logprob_gap_max timing_per_token_ms/gen refit_ms; do
    for it in 1 2 3; do
        [ "$(nth "$f" "$it" score.json)" = "$(nth "$f" "$it" first.json)" ] || fail "resumed: $f[$it] changed"
    done
done

# --- zero gap: the scorer agrees exactly; per_rollout refits every rollout, warmup included
rm -f rollout.log
expect 0 zero run score.cfg --set score.settings.score_shift=0.0 --set 'run.refit="per_rollout"' \
    --set 'reporters.[1].settings.path="zero.json"'
for it in 1 2 3; do
    for f in logprob_gap_mean logprob_gap_max kl_k3; do near "zero $f[$it]" "$(nth $f "$it" zero.json)" 0 0; done
    for f in importance_ratio_min importance_ratio_mean importance_ratio_max; do
        near "zero $f[$it]" "$(nth $f "$it" zero.json)" 1 0
    done
done
[ "$(grep -Ec '"refit_ms": [0-9]' zero.json)" -eq 3 ] || fail "per_rollout: refit_ms not in every measured iteration"
[ "$(grep -c '^refit' rollout.log)" -eq 4 ] || fail "per_rollout: $(grep -c '^refit' rollout.log) refits, expected 4"
has zero.json '"refit": "per_rollout",'
# no logprobs kept: the gap is unknown, the score stage still timed
expect 0 nolp run score.cfg --set backend.settings.keep_logprobs=false --set 'reporters.[1].settings.path="nolp.json"'
[ "$(grep -Ec '"logprob_gap_mean": null' nolp.json)" -eq 3 ] || fail "keep_logprobs false: the gap is not null"
grep -Eq '"score_ms": [0-9]' nolp.json || fail "keep_logprobs false: score_ms not measured"
# neither score nor refit: the fields are null, the RL names still there
cat >plain.cfg <<'CFG'
backend = { name = "testbackend"; settings = { generate_us = 1; report_steps = true; }; };
precisions = [ "testfp32" ];
matrix = { batch_sizes = [2]; samples_per_prompt = [2]; prompt_lengths = [4]; response_lengths = [6]; };
run = { warmup = 0; iterations = 2; quiet_check = "off"; };
reporters = ( { name = "json"; settings = { path = "plain.json"; }; } );
CFG
expect 0 plain run plain.cfg
[ "$(grep -Ec '"(score_ms|refit_ms|rollout_step_ms|logprob_gap_mean)": null' plain.json)" -eq 8 ] ||
    fail "plain: the score and refit fields are not null"
has plain.json '"scorer": null,'
has plain.json '"refit": "off",'
has plain.json '"memcpy_gb_per_s": null'
expect 0 plain_replay report plain.json --reporter json -o plain_replay.json
has plain_replay.json '"scorer": null,'
has plain_replay.json '"memcpy_gb_per_s": null'
near "plain response_length/clip_ratio" "$(nth response_length/clip_ratio 1 plain.json)" 1 0
# timing_per_token_ms/gen = generation_ms / 24 tokens
near "plain timing_per_token_ms/gen" "$(nth timing_per_token_ms/gen 1 plain.json)" \
    "$(awk -v g="$(nth generation_ms 1 plain.json)" 'BEGIN { printf "%.9f", g / 24 }')" 1e-6

# --- isolation: the same gap in a child process per case
expect 0 isolated run score.cfg --set 'run.isolation="process"' --set 'reporters.[1].settings.path="isolated.json"'
near "isolated logprob_gap_mean" "$(nth logprob_gap_mean 2 isolated.json)" 0.15 1e-6
near "isolated kl_k3" "$(nth kl_k3 3 isolated.json)" 0.0117840887 1e-6
[ "$(grep -Ec '"refit_ms": [0-9]' isolated.json)" -eq 1 ] || fail "isolated per_case: refit_ms measured other than once"

# --- validate and plan name the scorer
expect 0 validate validate score.cfg
has validate.out "score.cfg: scorer testbackend (backend testbackend, precision testbf16)"
has validate.out "score.cfg: refit per_case"
expect 0 plan plan score.cfg
has plan.out "scorer testbackend (backend testbackend, precision testbf16): at most weights_MiB"
has plan.out "refit per_case"

# --- refusals before the first case, one line naming the plugin
expect 2 norollout run score.cfg --set 'backend.name="testplain"' --set 'score.backend="testbackend"'
has norollout.err "backend 'testplain' has no read_rollout hook"
lacks norollout.err "case 0"
expect 2 noscore run score.cfg --set 'score.backend="testplain"'
has noscore.err "score: backend 'testplain' has no score hook"
expect 2 norefit run plain.cfg --set 'backend.name="testplain"' --set 'run.refit="per_rollout"'
has norefit.err "run.refit: backend 'testplain'"
has norefit.err "has no refit hook"
expect 2 badrefit run plain.cfg --set 'run.refit="sometimes"'
has badrefit.err 'run.refit: must be "off", "per_rollout" or "per_case" (got "sometimes")'
expect 2 badkey run score.cfg --set 'score.teacher="x"'
has badkey.err "score.teacher"
expect 2 badprecision run score.cfg --set 'score.precision=3'
has badprecision.err "score.precision: must be a precision plugin's name"
expect 2 badsetting run score.cfg --set 'score.settings.no_such_setting=1'
has badsetting.err "no_such_setting"
expect 2 nobackend run score.cfg --set 'score.backend="no_such_backend"'
has nobackend.err "no_such_backend"

# --- bad values from the hooks fail the case, naming the hook and the row
for bad in rows:read_rollout:"rows is 3, the case has 2" response_length:read_rollout:"row 1: response length 5" \
    token_id:read_rollout:"row 0: response token 0 is id 50272" logprob:read_rollout:"row 0: response token 0 has log-probability 0.5" \
    refit_bytes:refit:"source_bytes -7"; do
    v=${bad%%:*}; rest=${bad#*:}; hook=${rest%%:*}; msg=${rest#*:}
    expect 3 "bad_$v" run score.cfg --set "backend.settings.bad_value=\"$v\"" --set 'reporters.[1].settings.path="bad.json"'
    has bad.json "\"message\": \"$hook: $msg"
done
expect 3 bad_score run score.cfg --set 'score.settings.bad_value="score_logprob"' --set 'reporters.[1].settings.path="bad.json"'
has bad.json '"message": "score: row 0: response token 0 has log-probability nan, not a finite number in [-700, 0]"'

bc_test_finish score
