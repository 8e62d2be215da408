#!/usr/bin/env python3
"""make_logprob_golden.py: writes logprobs.txt beside three golden checkpoints (tests/opt/golden/preln,
tests/llama/golden/qwen2_gqa4, tests/llama/golden/llama_gqa_llama3): for fixed rows of prompt + response
token ids, the log-probability transformers gives each response token, log_softmax(logits) at temperature
1 gathered at the token, each row run alone (no padding) in fp32. tests/engine/test_score.c checks the
engine's score path and its rollout log-probabilities against them.

The rows are ragged on purpose (prompts of 5, 9 and 3 tokens; responses of 12, 7 and 10), drawn from a
seeded numpy generator over the model's vocabulary, so the engine's left-padded batch must give each row
what the row gives alone.

Then a greedy rollout of GREEDY_TOKENS tokens from row 0's prompt, as the engine's default rollout runs it
(EOS never chosen: its logit masked for the choice only, like min_new_tokens), with each chosen token's
log-probability under the unmasked log_softmax: the rollout's own log-probabilities, checked directly.

Format (text): '#' comment lines, then "rows N", then per row
  row <prompt_len> <response_len>
  prompt <ids>
  response <ids>
  logprobs <response_len floats, %.9g>
then
  greedy <n>
  response <ids>
  logprobs <n floats>

Usage: <peers venv>/bin/python tools/golden/make_logprob_golden.py (torch, transformers, numpy; reads the
checkpoints the other scripts wrote). Every run writes the same bytes with the pinned versions.
"""
import os

import numpy as np
import torch
from transformers import AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = ["tests/opt/golden/preln", "tests/llama/golden/qwen2_gqa4", "tests/llama/golden/llama_gqa_llama3"]
SHAPES = [(5, 12), (9, 7), (3, 10)]  # (prompt, response) tokens per row
GREEDY_TOKENS = 10


def main():
    torch.manual_seed(0)
    for rel in MODELS:
        d = os.path.join(ROOT, rel)
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
        V = model.config.vocab_size
        rng = np.random.default_rng(20260)
        lines = ["# log_softmax(logits) at T=1 of each response token, transformers %s, torch %s, fp32, row by row"
                 % (__import__("transformers").__version__, torch.__version__), "rows %d" % len(SHAPES)]
        for pl, rl in SHAPES:
            ids = rng.integers(0, V, size=pl + rl).tolist()
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].double()
            lp = torch.log_softmax(logits, dim=-1)
            # position pl - 1 + t predicts response token t (ids[pl + t])
            got = [lp[pl - 1 + t, ids[pl + t]].item() for t in range(rl)]
            lines.append("row %d %d" % (pl, rl))
            lines.append("prompt " + " ".join(map(str, ids[:pl])))
            lines.append("response " + " ".join(map(str, ids[pl:])))
            lines.append("logprobs " + " ".join("%.9g" % v for v in got))
        ids = [int(x) for x in lines[3].split()[1:]]  # row 0's prompt
        eos = model.config.eos_token_id
        toks, lps = [], []
        for _ in range(GREEDY_TOKENS):
            with torch.no_grad():
                last = model(torch.tensor([ids])).logits[0, -1].double()
            lp = torch.log_softmax(last, dim=-1)
            pick = last.clone()
            if eos is not None and 0 <= eos < V:
                pick[eos] = -float("inf")
            tok = int(torch.argmax(pick).item())
            toks.append(tok)
            lps.append(lp[tok].item())
            ids.append(tok)
        lines.append("greedy %d" % GREEDY_TOKENS)
        lines.append("response " + " ".join(map(str, toks)))
        lines.append("logprobs " + " ".join("%.9g" % v for v in lps))
        with open(os.path.join(d, "logprobs.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print(rel, "greedy logprobs", " ".join("%.3f" % v for v in lps))


if __name__ == "__main__":
    main()
