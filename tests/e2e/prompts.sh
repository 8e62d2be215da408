#!/bin/sh
# prompts.sh: text prompt sets end to end. `benchctl prompts` must print the
# ids Hugging Face tokenizers gave (tests/tokenizer/golden/prompts_ids.txt,
# made by tools/golden/make_tokenizer_golden.py) from either tokenizer form,
# and name the file and line of a bad prompt; `benchctl run` with the OPT
# engine's prompts_text (a golden checkpoint plus the golden tokenizer) must
# report the prompts' real widths, median and padding, ragged and bucketed.
#   prompts.sh BENCHCTL SOURCE_DIR WORK_DIR
set -u
. "$(dirname "$0")/../lib/testlib.sh"
BENCHCTL=$1
SRC=$2
WORK=$3
G=$SRC/tests/tokenizer/golden
bc_test_workdir "$WORK"
unset BENCHCTL_PLUGIN_PATH

for form in json_pairs json_strings vocab_merges; do
    "$BENCHCTL" prompts "$G/prompts.jsonl" --checkpoint "$G/$form" >ids.txt 2>ids.err ||
        { fail "prompts with $form exited non-zero"; cat ids.err; }
    cmp -s ids.txt "$G/prompts_ids.txt" || { fail "prompts with $form: ids differ from tokenizers'"; diff ids.txt "$G/prompts_ids.txt" | head; }
done
grep -q "9 prompts, 127 tokens; per prompt min 5, p50 14, max 28 (BOS 2 first)" ids.err || { fail "prompts: summary"; cat ids.err; }
# the Split pre-tokenizer (Llama-3 with its BOS, id 0 there; Qwen2 without one), special tokens in the text
for form in llama3:0 qwen2:-1; do
    dir=${form%%:*}
    "$BENCHCTL" prompts "$G/$dir/prompts.jsonl" --checkpoint "$G/$dir" --bos "${form#*:}" >ids.txt 2>ids.err ||
        { fail "prompts with $dir exited non-zero"; cat ids.err; }
    cmp -s ids.txt "$G/$dir/prompts_ids.txt" || { fail "prompts with $dir: ids differ from tokenizers'"; diff ids.txt "$G/$dir/prompts_ids.txt" | head; }
done

"$BENCHCTL" prompts "$G/prompts.jsonl" >/dev/null 2>nock.err
[ $? -eq 2 ] || fail "prompts without --checkpoint was not a usage error"
printf '{"text": "ok"}\n{"txt": "no"}\n' >bad.jsonl
"$BENCHCTL" prompts bad.jsonl --checkpoint "$G/json_pairs" >/dev/null 2>bad.err
[ $? -eq 2 ] || fail "prompts on a bad line did not exit 2"
grep -q 'bad.jsonl:2: no field "text"' bad.err || { fail "prompts: the error does not name file and line"; cat bad.err; }
"$BENCHCTL" prompts "$G/prompts.jsonl" --checkpoint "$SRC/tests/opt/golden/preln" >/dev/null 2>notok.err
[ $? -eq 2 ] || fail "prompts with a checkpoint without tokenizer did not exit 2"
grep -q "neither tokenizer.json nor vocab.json" notok.err || { fail "prompts: no tokenizer error"; cat notok.err; }

# a checkpoint with a tokenizer: the golden preln model plus the golden tokenizer
mkdir ckpt && ln -s "$SRC/tests/opt/golden/preln/config.json" "$SRC/tests/opt/golden/preln/model.safetensors" ckpt/ &&
    cp "$G/json_pairs/tokenizer.json" ckpt/ || fail "checkpoint set-up"
set_ck="backend.settings.checkpoint=\"$WORK/ckpt\""
set_pt="backend.settings.prompts_text=\"$G/prompts.jsonl\""
"$BENCHCTL" run "$SRC/tests/e2e/prompts_text.cfg" --set "$set_ck" --set "$set_pt" -v >run.out 2>run.err ||
    { fail "run with prompts_text exited non-zero"; cat run.err; }
# the first three prompts have 20, 14 and 25 tokens
grep -Eq '"prompt_width_tokens": *25' out.json || fail "ragged: width is not 25"
grep -Eq '"prompt_min_tokens": *14' out.json || fail "ragged: shortest is not 14"
grep -Eq '"prompt_p50_tokens": *20,' out.json || fail "ragged: median is not 20"
grep -Eq '"prompt_pad_tokens": *16,' out.json || fail "ragged: padding is not 16 slots (3 x 25 - 59)"
grep -q "prompts_text: 9 prompts fit; this batch: 14..25 tokens (p50 20), padded to 25, 16 of 75 slots padding" run.err ||
    { fail "ragged: no prompts line"; grep prompts run.err; }
# bucket 16 (width 16): the prompts of 1..16 tokens are 14, 6, 16, 8, 5, 5
"$BENCHCTL" run "$SRC/tests/e2e/prompts_text.cfg" --set "$set_ck" --set "$set_pt" \
    --set 'backend.settings.prompts_fit="bucket"' --set 'matrix.prompt_lengths=[16]' -v >bucket.out 2>bucket.err ||
    { fail "run with prompts_fit = bucket exited non-zero"; cat bucket.err; }
grep -Eq '"prompt_width_tokens": *16' out.json || fail "bucket: width is not 16"
grep -Eq '"prompt_min_tokens": *6' out.json || fail "bucket: shortest is not 6"
grep -Eq '"prompt_max_tokens": *16' out.json || fail "bucket: longest is not 16"
grep -Eq '"prompt_p50_tokens": *14,' out.json || fail "bucket: median is not 14"
grep -Eq '"prompt_pad_tokens": *12,' out.json || fail "bucket: padding is not 12 slots (3 x 16 - 36)"
# synthetic prompts of the case's length: no padding
"$BENCHCTL" run "$SRC/tests/e2e/prompts_text.cfg" --set "$set_ck" --set 'matrix.prompt_lengths=[8]' >syn.out 2>syn.err ||
    { fail "run with synthetic prompts exited non-zero"; cat syn.err; }
grep -Eq '"prompt_p50_tokens": *8,' out.json || fail "synthetic: median is not 8"
grep -Eq '"prompt_pad_tokens": *0,' out.json || fail "synthetic: padding is not 0"
# a bucket nothing falls in is refused before the run, naming the file
"$BENCHCTL" run "$SRC/tests/e2e/prompts_text.cfg" --set "$set_ck" --set "$set_pt" \
    --set 'backend.settings.prompts_fit="bucket"' --set 'matrix.prompt_lengths=[4]' >empty.out 2>empty.err
[ $? -eq 2 ] || fail "an empty bucket was not refused with exit 2"
grep -q "no prompt of 1..4 tokens" empty.err || { fail "empty bucket: message"; cat empty.err; }
# prompts_text through a Llama-3 style tokenizer.json: the engine reads it as `benchctl prompts` does
mkdir ckpt3 && ln -s "$SRC/tests/opt/golden/preln/config.json" "$SRC/tests/opt/golden/preln/model.safetensors" ckpt3/ &&
    cp "$G/llama3/tokenizer.json" ckpt3/ || fail "llama3 checkpoint set-up"
"$BENCHCTL" run "$SRC/tests/e2e/prompts_text.cfg" --set "backend.settings.checkpoint=\"$WORK/ckpt3\"" \
    --set "backend.settings.prompts_text=\"$G/llama3/prompts.jsonl\"" -v \
    >l3.out 2>l3.err || { fail "run with a llama3 tokenizer exited non-zero"; cat l3.err; }
grep -q "prompts_text: 15 prompts fit" l3.err || { fail "llama3: no prompts line"; grep prompts l3.err; }
# prompts_text without a checkpoint
"$BENCHCTL" validate "$SRC/tests/e2e/prompts_text.cfg" --set "$set_pt" >/dev/null 2>nockpt.err
[ $? -eq 2 ] || fail "prompts_text without a checkpoint was not refused"
grep -q "prompts_text needs a checkpoint" nockpt.err || { fail "no-checkpoint message"; cat nockpt.err; }

bc_test_finish prompts
