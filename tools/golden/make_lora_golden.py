#!/usr/bin/env python3
"""make_lora_golden.py: golden data for the OPT engine's LoRA (engine/weights/lora.c).

Wraps the golden preln model (tests/opt/golden/preln, made by make_golden.py)
in a PEFT LoRA adapter (rank 4, alpha 8, every module the engine can target:
q_proj, k_proj, v_proj, out_proj, fc1, fc2), gives the adapter seeded random
weights (PEFT starts lora_B at zero, which would make merging a no-op), and
writes tests/opt/golden/preln_lora/:

  adapter_config.json, adapter_model.safetensors   PEFT's save_pretrained
  golden.bin   the merged model's (merge_and_unload) outputs on make_golden.py's
               prompt cases, in its format (tools/golden/README.md)
  SUMMARY.json versions, and how far the adapter moves the logits

tests/opt/test_golden.c loads the preln checkpoint, fuses the adapter with
opt_lora_fuse and checks the logits and greedy tokens against golden.bin.

Run:  tools/golden/.venv/bin/python tools/golden/make_lora_golden.py
(needs torch, transformers, safetensors, numpy as requirements.txt pins, and peft)
"""
import json
import os
import shutil

import numpy as np
import peft
import torch
from transformers import OPTForCausalLM

from make_golden import golden_case, prompt_cases, write_golden

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "tests", "opt", "golden")
TARGETS = ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    base = OPTForCausalLM.from_pretrained(os.path.join(GOLDEN, "preln"), torch_dtype=torch.float32).eval()
    base.config._attn_implementation = "eager"
    cases = prompt_cases(base.config.vocab_size, 2001)  # make_golden.py's preln cases
    with torch.no_grad():
        base_logits = {n: base(input_ids=i, attention_mask=m).logits for n, i, m in cases}
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS, lora_dropout=0.0, bias="none")
    model = peft.get_peft_model(base, cfg)
    g = torch.Generator().manual_seed(3001)
    n_lora = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
                n_lora += 1
            elif "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
                n_lora += 1
    assert n_lora == 2 * len(TARGETS) * base.config.num_hidden_layers, n_lora
    d = os.path.join(GOLDEN, "preln_lora")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model.save_pretrained(d, safe_serialization=True)
    os.remove(os.path.join(d, "README.md"))  # PEFT's model card template
    with open(os.path.join(d, "adapter_config.json")) as f:
        acfg = json.load(f)
    acfg["base_model_name_or_path"] = "tests/opt/golden/preln"  # not this machine's path
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(acfg, f, indent=2, sort_keys=True)
        f.write("\n")
    merged = model.merge_and_unload().eval()
    arrays = []
    moved = 0.0
    for cname, ids, mask in cases:
        arrays += golden_case(merged, cname, ids, mask)
        with torch.no_grad():
            lm = merged(input_ids=ids, attention_mask=mask).logits
        m = mask.bool()
        moved = max(moved, float((lm - base_logits[cname])[m].abs().max() / base_logits[cname][m].abs().max()))
    write_golden(os.path.join(d, "golden.bin"), arrays)
    with open(os.path.join(d, "SUMMARY.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                   "peft": peft.__version__, "rank": 4, "alpha": 8, "targets": TARGETS,
                   "logit_change_rel": moved}, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"preln_lora: adapter + golden.bin; the adapter moves the logits by {moved:.3g} of their scale")


if __name__ == "__main__":
    main()
