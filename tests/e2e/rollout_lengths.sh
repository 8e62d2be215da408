#!/bin/sh
# rollout_lengths.sh: configs/rollout_lengths.cfg (static, continuous and
# continuous + paged, as three labelled backends) validates, and runs scaled
# down (2 prompts x 2 samples, 8-token prompts, responses up to 16) with one
# measured iteration: three ok cases, each with its schedule in the JSON.
#   rollout_lengths.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
BENCHCTL=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
unset BENCHCTL_PLUGIN_PATH
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
CFG="$SRC/configs/rollout_lengths.cfg"
"$BENCHCTL" validate "$CFG" >validate.out 2>&1 || { fail "validate"; cat validate.out; }
set -- --set 'matrix.batch_sizes=[2]' --set 'matrix.prompt_lengths=[8]' --set 'matrix.response_lengths=[16]' \
    --set run.warmup=0 --set run.iterations=1 --reporter json --set 'reporters.[0].settings.path="out.json"'
for i in 0 1 2; do
    set -- "$@" --set "backends.[$i].settings.response_length_mean=6.0"
done
"$BENCHCTL" run "$CFG" "$@" --set 'backends.[1].settings.batch_capacity=2' \
    --set 'backends.[2].settings.batch_capacity=2' >run.out 2>run.err || { fail "run exited non-zero"; cat run.err; }
grep -q "3 cases: 3 ok" run.err || fail "expected 3 ok cases"
[ "$(grep -o '"step_active_rows"' out.json | wc -l)" -eq 3 ] || fail "out.json: expected a schedule in each case"
[ "$failures" -eq 0 ] && echo "rollout_lengths.sh: ok"
[ "$failures" -eq 0 ]
