#!/bin/sh
# llama.sh: the llama backend end to end through benchctl: it is listed, a
# golden Qwen2 and Mistral checkpoint and a synthetic preset run (static and
# continuous batching, the paged KV layout, shared prefill, fp32 / fp16 /
# bf16 / int8), and what the family cannot run is refused before the first
# case with one line: device = "cuda", a sliding window narrower than the
# case, a LoRA adapter.
#   llama.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
BENCHCTL=$1
SRC=$2
WORK=$3
G=$SRC/tests/llama/golden
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
unset BENCHCTL_PLUGIN_PATH
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
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

refused "device cuda" 'the llama family has no CUDA device yet' --set 'backend.settings.device="cuda"'
refused "sliding window" 'sliding_window 32 is smaller than the case.s 38 positions' \
    --set "backend.settings.checkpoint=\"$G/mistral_hd16\"" --set 'matrix.prompt_lengths=[32]'
refused "lora" 'the llama family takes no LoRA adapter yet' --set 'backend.settings.lora_rank=4'

[ $failures -eq 0 ] && echo "llama.sh: all passed"
exit $((failures > 0))
