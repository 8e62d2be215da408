#!/bin/sh
# llama_text.sh: text prompts through the llama backend end to end, against
# transformers (tests/llama/golden/llama_text, made by
# tools/golden/make_llama_text_golden.py: a tiny Llama checkpoint with a
# Llama-3 style tokenizer.json, its prompts as text, the ids transformers'
# tokenizer gives them and generate()'s greedy tokens on one left-padded
# batch). `benchctl prompts` on the checkpoint must print transformers' ids
# (--bos 0, its bos_token_id), and `benchctl run` with prompts_text (BOS
# from config.json) must generate generate()'s tokens row for row, static
# and continuous.
#   llama_text.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
WORK=$3
G=$SRC/tests/llama/golden/llama_text
bc_test_workdir "$WORK"
unset BENCHCTL_PLUGIN_PATH

"$BENCHCTL" prompts "$G/prompts.jsonl" --checkpoint "$G" --bos 0 >ids.txt 2>ids.err ||
    { fail "prompts exited non-zero"; cat ids.err; }
cmp -s ids.txt "$G/prompts_ids.txt" || { fail "prompts: ids differ from transformers'"; diff ids.txt "$G/prompts_ids.txt" | head; }

n=$(grep -c . "$G/prompts_ids.txt")
cat >text.cfg <<CFG
backend = { name = "llama"; settings = { checkpoint = "$G"; prompts_text = "$G/prompts.jsonl";
                                         save_tokens = "tokens.txt"; threads = 2; }; };
precisions = [ "fp32" ];
cache_policies = [ "retain" ];
matrix = { batch_sizes = [$n]; samples_per_prompt = [1]; response_lengths = [8]; };
sampling = { temperature = 0.0; top_p = 1.0; top_k = 0; seed = 1; };
run = { warmup = 0; iterations = 1; };
reporters = ( { name = "json"; settings = { path = "out.json"; }; } );
CFG
for batching in static continuous; do
    rm -f tokens.txt
    "$BENCHCTL" run text.cfg --set "backend.settings.batching=\"$batching\"" -v >run.out 2>run.err ||
        { fail "$batching run exited non-zero"; cat run.err; continue; }
    grep -q "prompts_text: $n prompts fit; this batch: 5..33 tokens" run.err ||
        { fail "$batching: no prompts line"; grep prompts run.err; }
    cmp -s tokens.txt "$G/generate_tokens.txt" ||
        { fail "$batching: tokens differ from generate()'s"; diff tokens.txt "$G/generate_tokens.txt" | head; }
done

bc_test_finish llama_text
