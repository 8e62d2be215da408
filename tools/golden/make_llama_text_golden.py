#!/usr/bin/env python3
"""make_llama_text_golden.py: writes tests/llama/golden/llama_text/, a tiny Llama
checkpoint with a Llama-3 style tokenizer.json, so tests/e2e/llama_text.sh can run
text prompts through benchctl's llama engine end to end and check them against
transformers.

It writes
  config.json, generation_config.json, model.safetensors   a seeded LlamaForCausalLM
      (save_pretrained, F32) whose vocabulary is the tokenizer's, BOS <|begin_of_text|>,
      EOS <|end_of_text|>, no pad id (generate() pads with EOS)
  tokenizer.json        tests/tokenizer/golden/llama3/tokenizer.json (trained locally
                        with the `tokenizers` package on the Llama-3 Split pattern), as is
  prompts.jsonl         the first N_PROMPTS prompts of tests/tokenizer/golden/llama3/
  prompts_ids.txt       each prompt's ids as transformers' tokenizer gives them
                        (PreTrainedTokenizerFast on tokenizer.json, special tokens in the
                        text recognised), BOS first, one line a prompt
  generate_tokens.txt   generate()'s greedy tokens for the prompts in one left-padded batch,
                        exactly N_NEW each (min_new_tokens = max_new_tokens, so EOS is held
                        back as benchctl's stop_at_eos = false does), one line a row

Usage: $(tools/peers-venv) tools/golden/make_llama_text_golden.py [--out tests/llama/golden/llama_text]
Every run writes the same bytes.
"""
import argparse
import json
import os
import shutil

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOK = os.path.join(ROOT, "tests", "tokenizer", "golden", "llama3")
N_PROMPTS = 6
N_NEW = 8
SEED = 4242


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "llama", "golden", "llama_text"))
    args = ap.parse_args()
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copyfile(os.path.join(TOK, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(out, "tokenizer.json"))
    bos = tok.convert_tokens_to_ids("<|begin_of_text|>")
    eos = tok.convert_tokens_to_ids("<|end_of_text|>")
    with open(os.path.join(TOK, "prompts.jsonl")) as f:
        lines = [ln for ln in f if ln.strip()][:N_PROMPTS]
    with open(os.path.join(out, "prompts.jsonl"), "w") as f:
        f.writelines(lines)
    texts = [json.loads(ln)["text"] for ln in lines]
    ids = [[bos] + tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    with open(os.path.join(out, "prompts_ids.txt"), "w") as f:
        for row in ids:
            f.write(" ".join(str(i) for i in row) + "\n")

    vocab = (len(tok) + 63) // 64 * 64
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=bos,
                      eos_token_id=eos, pad_token_id=None)
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # weights large enough that greedy tokens are not near ties
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.1)
    model.config._attn_implementation = "eager"
    model.save_pretrained(out, safe_serialization=True)

    width = max(len(r) for r in ids)
    input_ids = torch.tensor([[eos] * (width - len(r)) + r for r in ids])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in ids])
    with torch.no_grad():
        gen = model.generate(input_ids=input_ids, attention_mask=mask, do_sample=False, max_new_tokens=N_NEW,
                             min_new_tokens=N_NEW, pad_token_id=eos)
    with open(os.path.join(out, "generate_tokens.txt"), "w") as f:
        for row in gen[:, width:].tolist():
            f.write(" ".join(str(i) for i in row) + "\n")
    print(f"{out}: V {vocab}, BOS {bos}, EOS {eos}, {len(ids)} prompts of {min(map(len, ids))}..{width} tokens")


if __name__ == "__main__":
    main()
