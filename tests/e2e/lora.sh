#!/bin/sh
# lora.sh: the OPT engine's LoRA actor end to end: the PEFT adapter of
# tests/opt/golden/preln_lora fused around every generate of the golden preln
# checkpoint (the times logged at -vv, and in the JSON profile as lora_fuse_ms
# and lora_unfuse_ms: positive with an adapter, null without), a synthetic
# adapter with restore, lora_mode = "unfused" (no fuse, so no fuse times;
# refused on CUDA), and contradicting or bad settings refused before the run.
#   lora.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
WORK=$3
G=$SRC/tests/opt/golden
bc_test_workdir "$WORK"
unset BENCHCTL_PLUGIN_PATH
# profile_values FIELD: the profile values of FIELD in out.json, one a line
# (the stats' objects of the same name left out)
profile_values() { sed -n "s/^ *\"$1\": \([^{][^,]*\),*\$/\1/p" out.json; }
# lora_times WHAT positive|null: every profile's lora_fuse_ms and
# lora_unfuse_ms are positive numbers, or null
lora_times() {
    for f in lora_fuse_ms lora_unfuse_ms; do
        v=$(profile_values $f)
        [ -n "$v" ] || { fail "$1: no $f in the profile"; continue; }
        echo "$v" | awk -v want="$2" '
            want == "null" && $0 != "null" { bad = 1 }
            want == "positive" && ($0 !~ /^[0-9.eE+-]+$/ || $0 + 0 <= 0) { bad = 1 }
            END { exit bad }' || fail "$1: $f is not $2: $v"
    done
}
CFG=$SRC/tests/e2e/prompts_text.cfg
ck="backend.settings.checkpoint=\"$G/preln\""

"$BENCHCTL" run "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' \
    --set "backend.settings.lora_adapter=\"$G/preln_lora\"" -vv >peft.out 2>peft.err ||
    { fail "run with lora_adapter exited non-zero"; cat peft.err; }
[ "$(grep -c 'opt: debug: lora: rank 4, fuse [0-9.]* ms, unfuse [0-9.]* ms' peft.err)" -eq 1 ] ||
    { fail "lora_adapter: expected one fuse/unfuse line (1 iteration, no warmup)"; grep lora peft.err; }
lora_times lora_adapter positive
"$BENCHCTL" run "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' --set 'backend.settings.lora_rank=8' \
    --set 'backend.settings.lora_targets="all"' --set 'backend.settings.lora_unfuse="restore"' -vv >syn.out 2>syn.err ||
    { fail "run with lora_rank exited non-zero"; cat syn.err; }
grep -q 'opt: debug: lora: rank 8' syn.err || fail "lora_rank: no fuse/unfuse line"
lora_times lora_rank positive
"$BENCHCTL" run "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' --set 'run.iterations=2' >none.out 2>none.err ||
    { fail "run without an adapter exited non-zero"; cat none.err; }
lora_times "no adapter" null
[ "$(profile_values lora_fuse_ms | wc -l)" -eq 2 ] || fail "no adapter: expected two profiles"
"$BENCHCTL" run "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' --set 'backend.settings.lora_rank=8' \
    --set 'backend.settings.lora_mode="unfused"' -vv >unf.out 2>unf.err ||
    { fail "run with lora_mode = unfused exited non-zero"; cat unf.err; }
grep -q 'opt: debug: lora:' unf.err && fail "unfused: the adapter was fused"
lora_times unfused null
"$BENCHCTL" validate "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' --set 'backend.settings.lora_rank=8' \
    --set 'backend.settings.lora_mode="unfused"' --set 'backend.settings.device="cuda"' >cuda.out 2>cuda.err
[ $? -eq 2 ] || fail "lora_mode = unfused on CUDA was not refused"
grep -qi 'cuda' cuda.err || { fail "unfused on CUDA: message"; cat cuda.err; }
"$BENCHCTL" validate "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' --set 'backend.settings.lora_rank=8' \
    --set "backend.settings.lora_adapter=\"$G/preln_lora\"" >both.out 2>both.err
[ $? -eq 2 ] || fail "lora_adapter with lora_rank was not refused"
grep -q "lora_adapter and lora_rank both set" both.err || { fail "both: message"; cat both.err; }
"$BENCHCTL" validate "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' --set 'backend.settings.lora_rank=8' \
    --set 'backend.settings.lora_targets="q_proj,lm_head"' >tgt.out 2>tgt.err
[ $? -eq 2 ] || fail "a bad lora_targets was not refused"
grep -q '"lm_head" is not a module' tgt.err || { fail "lora_targets: message"; cat tgt.err; }
"$BENCHCTL" validate "$CFG" --set "$ck" --set 'matrix.prompt_lengths=[8]' \
    --set "backend.settings.lora_adapter=\"$G/preln\"" >noad.out 2>noad.err
[ $? -eq 2 ] || fail "a directory without adapter_config.json was not refused"
grep -q "adapter_config.json" noad.err || { fail "no adapter: message"; cat noad.err; }

bc_test_finish lora
