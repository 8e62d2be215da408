#!/bin/sh
# llama.sh: the llama backend end to end through benchctl: it is listed, a
# golden Qwen2 and Mistral checkpoint and a synthetic preset run (static and
# continuous batching, the paged KV layout, shared prefill, fp32 / fp16 /
# bf16 / int8), LoRA (the PEFT adapter of llama_gqa_llama3_lora fused around
# every generate, its times logged at -vv and in the JSON profile as
# lora_fuse_ms / lora_unfuse_ms; a synthetic adapter on every module with
# restore; lora_mode = "unfused", which fuses nothing), and what the family
# cannot run is refused before the first case with one line: device =
# "cuda", a sliding window narrower than the case, a LoRA target or adapter
# of another family's modules, a LoRA adapter at int8 (as the OPT backend).
#   llama.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
BENCHCTL=$1
SRC=$2
WORK=$3
G=$SRC/tests/llama/golden
. "$(dirname "$0")/../lib/testlib.sh"
bc_test_workdir "$WORK"
unset BENCHCTL_PLUGIN_PATH
cat >llama.cfg <<CFG
backend = { name = "llama"; settings = { checkpoint = "$G/qwen2_gqa4"; threads = 2; }; };
precisions = [ "fp32" ];
cache_policies = [ "retain" ];
matrix = { batch_sizes = [2]; samples_per_prompt = [3]; prompt_lengths = [8]; response_lengths = [6]; };
sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1; };
run = { warmup = 0; iterations = 1; };
reporters = ( { name = "console"; } );
CFG
# refused: one line, exit 2, nothing run
refused() { # WHAT PATTERN ARGS...
    what=$1 pattern=$2
    shift 2
    "$BENCHCTL" run llama.cfg "$@" >ref.out 2>ref.err
    rc=$?
    [ $rc -eq 2 ] || fail "$what: exit $rc, want 2"
    grep -q "$pattern" ref.err || { fail "$what: no line '$pattern'"; cat ref.err; }
    [ "$(grep -c . ref.err)" -le 2 ] || { fail "$what: more than one line (and a hint)"; cat ref.err; }
}

"$BENCHCTL" plugins >plugins.out 2>&1 || fail "benchctl plugins exited non-zero"
grep -q '^backend *llama ' plugins.out || { fail "benchctl plugins does not list llama"; cat plugins.out; }

"$BENCHCTL" run llama.cfg --set 'precisions=["fp32","fp16","bf16","int8"]' >run.out 2>run.err ||
    { fail "qwen2_gqa4 static run exited non-zero"; cat run.err; }
grep -q '4 cases: 4 ok' run.err || { fail "qwen2_gqa4: not 4 cases ok"; cat run.err; }
"$BENCHCTL" run llama.cfg --set 'backend.settings.batching="continuous"' --set 'backend.settings.batch_capacity=4' \
    --set 'backend.settings.kv_layout="paged"' --set 'backend.settings.shared_prefill=true' \
    --set 'backend.settings.response_lengths="uniform"' >cont.out 2>cont.err ||
    { fail "qwen2_gqa4 continuous, paged run exited non-zero"; cat cont.err; }
"$BENCHCTL" run llama.cfg --set "backend.settings.checkpoint=\"$G/mistral_hd16\"" >mis.out 2>mis.err ||
    { fail "mistral_hd16 (sliding_window 32, 14 positions) exited non-zero"; cat mis.err; }
"$BENCHCTL" run llama.cfg --set 'backend.settings.checkpoint=""' --set 'backend.settings.model="smollm2-135m"' \
    --set 'matrix.batch_sizes=[1]' --set 'matrix.samples_per_prompt=[1]' --set 'precisions=["bf16"]' \
    >syn.out 2>syn.err || { fail "smollm2-135m synthetic run exited non-zero"; cat syn.err; }
grep -q 'smollm2-135m (synthetic weights' syn.out || { fail "smollm2-135m: the model is not named"; cat syn.out; }
# a preset has no pad id: rows that finish early (drawn lengths, a static
# batch) feed the forward a valid filler id, not -1
"$BENCHCTL" run llama.cfg --set 'backend.settings.checkpoint=""' --set 'backend.settings.model="smollm2-135m"' \
    --set 'matrix.batch_sizes=[2]' --set 'matrix.samples_per_prompt=[2]' --set 'precisions=["bf16"]' \
    --set 'matrix.response_lengths=[12]' --set 'backend.settings.response_lengths="lognormal"' \
    --set 'backend.settings.response_length_mean=6.0' >ragged.out 2>ragged.err ||
    { fail "smollm2-135m static batch with drawn lengths exited non-zero"; cat ragged.err; }

refused "device cuda" 'the llama family has no CUDA device yet' --set 'backend.settings.device="cuda"'
refused "sliding window" 'sliding_window 32 is smaller than the case.s 38 positions' \
    --set "backend.settings.checkpoint=\"$G/mistral_hd16\"" --set 'matrix.prompt_lengths=[32]'
refused "lora target" '"fc1" is not a module of a llama layer' --set 'backend.settings.lora_rank=4' \
    --set 'backend.settings.lora_targets="q_proj,fc1"'
refused "OPT adapter" 'target_modules\[[0-9]*\] is not one of q_proj, k_proj, v_proj, o_proj, gate_proj' \
    --set "backend.settings.lora_adapter=\"$SRC/tests/opt/golden/preln_lora\""
refused "int8 + LoRA" 'llama: precision int8 (int8): a LoRA adapter is not fused into int8 weights' \
    --set 'backend.settings.lora_rank=4' --set 'precisions=["int8"]'
refused "int8 + unfused LoRA" 'a LoRA adapter is not fused into int8 weights' --set 'backend.settings.lora_rank=4' \
    --set 'backend.settings.lora_mode="unfused"' --set 'precisions=["int8"]'

# LoRA: the JSON profile's lora_fuse_ms and lora_unfuse_ms
sed 's|reporters = .*|reporters = ( { name = "json"; settings = { path = "out.json"; }; } );|' llama.cfg >lora.cfg
# lora_times WHAT positive|null: every profile's lora_fuse_ms and lora_unfuse_ms
lora_times() {
    for f in lora_fuse_ms lora_unfuse_ms; do
        v=$(sed -n "s/^ *\"$f\": \([^{][^,]*\),*\$/\1/p" out.json)
        [ -n "$v" ] || { fail "$1: no $f in the profile"; continue; }
        echo "$v" | awk -v want="$2" '
            want == "null" && $0 != "null" { bad = 1 }
            want == "positive" && ($0 !~ /^[0-9.eE+-]+$/ || $0 + 0 <= 0) { bad = 1 }
            END { exit bad }' || fail "$1: $f is not $2: $v"
    done
}
"$BENCHCTL" run lora.cfg --set "backend.settings.checkpoint=\"$G/llama_gqa_llama3\"" \
    --set "backend.settings.lora_adapter=\"$G/llama_gqa_llama3_lora\"" -vv >peft.out 2>peft.err ||
    { fail "llama_gqa_llama3 + lora_adapter exited non-zero"; cat peft.err; }
[ "$(grep -c 'llama: debug: lora: rank 4, fuse [0-9.]* ms, unfuse [0-9.]* ms' peft.err)" -eq 1 ] ||
    { fail "lora_adapter: expected one fuse/unfuse line (1 iteration, no warmup)"; grep lora peft.err; }
lora_times lora_adapter positive
"$BENCHCTL" run lora.cfg --set 'backend.settings.lora_rank=8' --set 'backend.settings.lora_targets="all"' \
    --set 'backend.settings.lora_unfuse="restore"' -vv >syn.out 2>syn.err ||
    { fail "qwen2_gqa4 + lora_rank exited non-zero"; cat syn.err; }
grep -q 'llama: debug: lora: rank 8' syn.err || fail "lora_rank: no fuse/unfuse line"
lora_times lora_rank positive
"$BENCHCTL" run lora.cfg --set 'backend.settings.lora_rank=8' --set 'backend.settings.lora_targets="all"' \
    --set 'backend.settings.lora_mode="unfused"' -vv >unf.out 2>unf.err ||
    { fail "qwen2_gqa4 + lora_mode = unfused exited non-zero"; cat unf.err; }
grep -q 'llama: debug: lora:' unf.err && fail "unfused: the adapter was fused"
lora_times "lora_mode = unfused" null

bc_test_finish llama.sh
