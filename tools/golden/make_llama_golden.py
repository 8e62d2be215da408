#!/usr/bin/env python3
"""make_llama_golden.py: writes the Llama-family golden fixtures in tests/llama/golden/
with Hugging Face transformers (torch, CPU), so the C tests can check benchctl's
Llama / Qwen2 / Mistral engine against the reference without Python.

For each tiny, randomly initialised, seeded model it saves
  <out>/<model>/config.json, generation_config.json, model.safetensors (save_pretrained, F32)
  <out>/<model>/golden.bin   (tools/golden/README.md: the format and the prompt cases; a model
                             without a pad id has its prompts padded with eos, as generate() does)
and also
  <out>/llama_gqa_llama3_v4/   the same weights as llama_gqa_llama3 with config.json in the
                               transformers 4.x spelling (top-level rope_theta + rope_scaling);
                               its golden data is llama_gqa_llama3/golden.bin
  <out>/llama_gqa_llama3_lora/ a PEFT LoRA adapter on llama_gqa_llama3 (q/k/v/o/gate/up/down)
                               and golden.bin of the merged model (merge_and_unload)
  <out>/rope_inv_freq.txt      inv_freq vectors computed by transformers' own RoPE code
  <out>/kernels_ref.txt        inputs and outputs of transformers' RoPE (its rotary embedding and
                               apply_rotary_pos_emb), LlamaRMSNorm and silu(gate) * up
  <out>/SUMMARY.json           versions, logit scales, weight-rounding errors, the LoRA's effect

Positions: transformers' forward numbers positions 0..T-1 whatever the mask,
while generate() numbers the real tokens (cumsum(mask) - 1, pads 0). The
golden forward passes those position_ids explicitly, so prefill, decode and
generate() agree on a left-padded row (each real token's position counts the
real tokens before it), which is what benchctl's engine does.

Usage: tools/golden/.venv/bin/python tools/golden/make_llama_golden.py [--out tests/llama/golden]
(needs torch, transformers, safetensors, numpy and peft as requirements.txt pins; the peers'
venv has all but peft, which PYTHONPATH can add). Every run writes the same bytes.
"""
import argparse
import copy
import json
import os
import shutil
import sys

import numpy as np
import torch
from transformers import (GenerationConfig, LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRMSNorm, LlamaRotaryEmbedding, apply_rotary_pos_emb

from make_golden import DECODE_STEPS, MAX_NEW_TOKENS, NUM_RETURN, write_golden

HERE = os.path.dirname(os.path.abspath(__file__))
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_RANK, LORA_ALPHA = 4, 8

# name: (config class, model class, config kwargs, generation_config kwargs)
MODELS = {
    # Multi-head (Hkv == H), tied lm_head, default RoPE, pad id 0.
    "llama_mha": (LlamaConfig, LlamaForCausalLM,
                  dict(vocab_size=160, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=4, intermediate_size=64, max_position_embeddings=64,
                       rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                       pad_token_id=0, bos_token_id=1, eos_token_id=2),
                  dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # Grouped-query ratio 2, untied, llama3 RoPE scaling with original context 8
    # (so every position past 2 sees scaled frequencies), pad == eos.
    "llama_gqa_llama3": (LlamaConfig, LlamaForCausalLM,
                         dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                              rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
                              rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                               "original_max_position_embeddings": 8},
                              pad_token_id=2, bos_token_id=1, eos_token_id=2),
                         dict(pad_token_id=2, bos_token_id=1, eos_token_id=2)),
    # Qwen2: grouped-query ratio 4, q/k/v biases, tied; a sliding_window that
    # use_sliding_window false switches off; eos a list in generation_config.json.
    "qwen2_gqa4": (Qwen2Config, Qwen2ForCausalLM,
                   dict(vocab_size=160, hidden_size=64, num_hidden_layers=2, num_attention_heads=8,
                        num_key_value_heads=2, intermediate_size=96, max_position_embeddings=64,
                        rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False,
                        sliding_window=4096, max_window_layers=2,
                        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                        pad_token_id=1, bos_token_id=2, eos_token_id=2),
                   dict(pad_token_id=1, bos_token_id=2, eos_token_id=[2, 1])),
    # Mistral: grouped-query ratio 2, head_dim 16 != hidden / heads = 12,
    # sliding_window 32 (larger than any tested position), untied.
    "mistral_hd16": (MistralConfig, MistralForCausalLM,
                     dict(vocab_size=128, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=16, intermediate_size=96, max_position_embeddings=64,
                          rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=32,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                          pad_token_id=0, bos_token_id=1, eos_token_id=2),
                     dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # Llama with attention_bias true (q/k/v/o biases), grouped-query ratio 3
    # (not a power of two, like SmolLM2's 9 / 3), no pad id (like Llama 3: the
    # padded prompts are padded with eos, as generate() then does).
    "llama_gqa3_bias": (LlamaConfig, LlamaForCausalLM,
                        dict(vocab_size=96, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                             num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                             rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=True,
                             rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
                             pad_token_id=None, bos_token_id=1, eos_token_id=2),
                        dict(bos_token_id=1, eos_token_id=2)),
}


def randomize(model, seed):
    """Every parameter re-initialised (seeded) so each code path matters, as
    make_golden.py does for OPT: linear weights N(0, 1/in), biases N(0, 0.2^2),
    RMSNorm weights 1 + N(0, 0.2^2), embeddings (and an untied lm_head) N(0, 0.5^2)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_tokens" in name or name == "lm_head.weight":
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            else:
                raise RuntimeError(f"unexpected parameter {name}")


def prompt_cases(vocab, pad_id, seed):
    """make_golden.py's cases, padded with the model's pad id: (name, ids, mask)."""
    g = torch.Generator().manual_seed(seed)
    single = torch.randint(3, vocab, (1, 7), generator=g)
    lens = [5, 8, 3]
    T = max(lens)
    ids = torch.full((len(lens), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(lens), T), dtype=torch.long)
    for b, n in enumerate(lens):
        ids[b, T - n:] = torch.randint(3, vocab, (n,), generator=g)
        mask[b, T - n:] = 1
    return [("single", single, torch.ones_like(single)), ("padded", ids, mask)]


def positions(mask):
    """generate()'s position ids: real tokens counted from 0, pads 0."""
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)


@torch.no_grad()
def golden_case(model, name, ids, mask):
    """make_golden.py's golden_case with explicit position ids (module docstring)."""
    B, T = ids.shape
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions(mask), use_cache=True)
    prefill = out.logits.float()
    past = out.past_key_values
    tok = prefill[:, -1].argmax(-1)
    dec_ids, dec_logits = [], []
    m = mask
    for _ in range(DECODE_STEPS):
        pos = m.sum(-1, keepdim=True)  # the new token's position: the real tokens before it
        m = torch.cat([m, torch.ones((B, 1), dtype=m.dtype)], dim=1)
        o = model(input_ids=tok[:, None], attention_mask=m, position_ids=pos, past_key_values=past, use_cache=True)
        past = o.past_key_values
        dec_ids.append(tok)
        dec_logits.append(o.logits[:, -1].float())
        tok = o.logits[:, -1].argmax(-1)
    dec_ids = torch.stack(dec_ids, dim=1)        # [B, K]
    dec_logits = torch.stack(dec_logits, dim=0)  # [K, B, V]

    ids_x = ids.repeat_interleave(NUM_RETURN, dim=0)
    mask_x = mask.repeat_interleave(NUM_RETURN, dim=0)
    gen = model.generate(input_ids=ids_x, attention_mask=mask_x, do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                         min_new_tokens=MAX_NEW_TOKENS,
                         pad_token_id=model.config.pad_token_id if model.config.pad_token_id is not None
                         else model.config.eos_token_id)
    gen_new = gen[:, T:]
    assert gen_new.shape == (B * NUM_RETURN, MAX_NEW_TOKENS), gen_new.shape
    k = min(DECODE_STEPS, MAX_NEW_TOKENS)
    assert torch.equal(gen_new[::NUM_RETURN, :k], dec_ids[:, :k]), (name, gen_new, dec_ids)

    i32 = lambda t: t.to(torch.int32).numpy()
    f32 = lambda t: t.to(torch.float32).numpy()
    return [
        (f"{name}.input_ids", i32(ids)),
        (f"{name}.attention_mask", i32(mask)),
        (f"{name}.prefill_logits", f32(prefill)),
        (f"{name}.decode_input_ids", i32(dec_ids)),
        (f"{name}.decode_logits", f32(dec_logits)),
        (f"{name}.num_return_sequences", np.array([NUM_RETURN], dtype=np.int32)),
        (f"{name}.generate_tokens", i32(gen_new)),
    ]


def rel_change(ref, other, mask):
    m = mask.bool()
    return float((ref[m] - other[m]).abs().max() / ref[m].abs().max())


@torch.no_grad()
def prefill_logits(model, cases):
    return {n: model(input_ids=i, attention_mask=m, position_ids=positions(m)).logits for n, i, m in cases}


@torch.no_grad()
def reduced_precision_error(model_cls, model, cases):
    """Prefill-logit error when only the weights are rounded to fp16 / bf16 (README.md, tolerances)."""
    ref = prefill_logits(model, cases)
    res = {}
    for dt in (torch.float16, torch.bfloat16):
        rounded = model_cls(model.config).eval()
        rounded.load_state_dict({k: v.to(dt).float() for k, v in model.state_dict().items()})
        got = prefill_logits(rounded, cases)
        res[str(dt)] = max(rel_change(ref[n], got[n], m) for n, _, m in cases)
    return res


def build(name, seed):
    cfg_cls, model_cls, kw, gen_kw = MODELS[name]
    cfg = cfg_cls(**kw, attention_dropout=0.0)
    cfg._attn_implementation = "eager"
    model = model_cls(cfg).eval()
    randomize(model, 1000 + seed)
    model.generation_config = GenerationConfig(**gen_kw)
    return model, model_cls


def write_v4_spelling(src, dst):
    """A copy of src whose config.json says RoPE as transformers 4.x wrote it:
    top-level rope_theta, rope_scaling {rope_type, factor, ...} (null when default)."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for f in ("model.safetensors", "generation_config.json"):
        shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    with open(os.path.join(src, "config.json")) as f:
        c = json.load(f)
    rp = c.pop("rope_parameters")
    c["rope_theta"] = rp.pop("rope_theta")
    c["rope_scaling"] = rp if rp.get("rope_type", "default") != "default" else None
    c["transformers_version"] = "4.46.0"  # a version that wrote this spelling
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


def write_lora(out, base_name, cases, summary):
    import peft
    base_dir = os.path.join(out, base_name)
    cls = MODELS[base_name][1]
    base = cls.from_pretrained(base_dir, dtype=torch.float32).eval()
    base.config._attn_implementation = "eager"
    base_logits = prefill_logits(base, cases)
    cfg = peft.LoraConfig(r=LORA_RANK, lora_alpha=LORA_ALPHA, target_modules=LORA_TARGETS, lora_dropout=0.0,
                          bias="none")
    model = peft.get_peft_model(base, cfg)
    g = torch.Generator().manual_seed(3001)
    n_lora = 0
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "lora_A" in pname:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
                n_lora += 1
            elif "lora_B" in pname:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
                n_lora += 1
    assert n_lora == 2 * len(LORA_TARGETS) * base.config.num_hidden_layers, n_lora
    d = os.path.join(out, base_name + "_lora")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model.save_pretrained(d, safe_serialization=True)
    os.remove(os.path.join(d, "README.md"))  # PEFT's model card template
    with open(os.path.join(d, "adapter_config.json")) as f:
        acfg = json.load(f)
    acfg["base_model_name_or_path"] = "tests/llama/golden/" + base_name  # not this machine's path
    acfg["target_modules"] = sorted(acfg["target_modules"])  # PEFT keeps a set: its order varies run to run
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(acfg, f, indent=2, sort_keys=True)
        f.write("\n")
    merged = model.merge_and_unload().eval()
    arrays = []
    for cname, ids, mask in cases:
        arrays += golden_case(merged, cname, ids, mask)
    write_golden(os.path.join(d, "golden.bin"), arrays)
    got = prefill_logits(merged, cases)
    moved = max(rel_change(base_logits[n], got[n], m) for n, _, m in cases)
    summary[base_name + "_lora"] = {"peft": peft.__version__, "rank": LORA_RANK, "alpha": LORA_ALPHA,
                                    "targets": LORA_TARGETS, "logit_change_rel": moved}


def rope_line(label, cfg):
    """One line of rope_inv_freq.txt from transformers' RoPE init for cfg."""
    rp = cfg.rope_parameters
    rtype = rp.get("rope_type", "default")
    if rtype == "default":
        inv, scale = LlamaRotaryEmbedding.compute_default_rope_parameters(cfg)
    else:
        inv, scale = ROPE_INIT_FUNCTIONS[rtype](cfg, "cpu")
    assert scale == 1.0, scale
    D = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    fields = [label, rtype, repr(float(rp["rope_theta"])), str(D)]
    if rtype == "llama3":
        fields += [repr(float(rp["factor"])), repr(float(rp["low_freq_factor"])), repr(float(rp["high_freq_factor"])),
                   str(int(rp["original_max_position_embeddings"]))]
    else:
        fields += ["0", "0", "0", "0"]
    inv = inv.to(torch.float32).numpy()
    fields.append(str(len(inv)))
    fields += [np.format_float_scientific(v, unique=True) for v in inv]  # shortest round-trip repr of the float32
    return " ".join(fields)


def write_rope(out, models):
    lines = ["# rope_inv_freq.txt: inverse RoPE frequencies computed by transformers' own code",
             "# (LlamaRotaryEmbedding.compute_default_rope_parameters, ROPE_INIT_FUNCTIONS[\"llama3\"]),",
             "# written by tools/golden/make_llama_golden.py. One case per line:",
             "# label rope_type rope_theta head_dim factor low_freq_factor high_freq_factor"
             " original_max_position_embeddings n inv_freq[0..n-1]",
             "# (the four scaling fields are 0 for rope_type default; values are float32, shortest round-trip)"]
    for name, model in models.items():
        lines.append(rope_line(name, model.config))
        # transformers' model uses the same vector (its rotary embedding's buffer)
        inv = model.model.rotary_emb.inv_freq.float().numpy()
        assert lines[-1].split()[9:] == [np.format_float_scientific(v, unique=True) for v in inv], name
    # Llama-3.2-1B's RoPE (its config.json: rope_theta 500000, head_dim 64, llama3 factor 32, 1, 4, 8192)
    big = LlamaConfig(hidden_size=2048, num_attention_heads=32, head_dim=64, max_position_embeddings=131072,
                      rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192})
    lines.append(rope_line("llama3.2-1b", big))
    lines.append(rope_line("qwen2.5-0.5b", Qwen2Config(hidden_size=896, num_attention_heads=14,
                                                       rope_parameters={"rope_type": "default",
                                                                        "rope_theta": 1000000.0})))
    with open(os.path.join(out, "rope_inv_freq.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def fmt_array(name, a):
    a = np.ascontiguousarray(a).reshape(-1)
    if a.dtype.kind == "i":
        vals = [str(int(v)) for v in a]
    else:
        vals = [np.format_float_scientific(v, unique=True) for v in a.astype(np.float32)]
    return " ".join([name, str(len(vals))] + vals)


@torch.no_grad()
def write_kernel_refs(out, models):
    """kernels_ref.txt: the row kernels' cases as transformers computes them."""
    g = torch.Generator().manual_seed(4001)
    lines = ["# kernels_ref.txt: transformers' own RoPE, RMSNorm and SiLU-times-gate on seeded inputs,",
             "# written by tools/golden/make_llama_golden.py. One array a line: name n values (float32,",
             "# shortest round-trip; int arrays as integers). RoPE of model M: rope.M.dims = T H Hkv D,",
             "# rope.M.pos [T], q_in/q_out [T, H, D], k_in/k_out [T, Hkv, D] (the model's own rotary",
             "# embedding and apply_rotary_pos_emb). rms.*: x [N, C], w [C], eps [1], y [N, C] (LlamaRMSNorm).",
             "# silu.*: gate, up, y [N, F] with y = silu(gate) * up (LlamaMLP's act_fn(gate) * up)."]
    for name in ("llama_gqa_llama3", "mistral_hd16"):
        m = models[name]
        c = m.config
        T, H, Hkv, D = 3, c.num_attention_heads, c.num_key_value_heads, c.head_dim
        pos = torch.tensor([[0, 7, 13]])
        q = torch.randn((1, H, T, D), generator=g)  # transformers' layout [B, heads, T, D]
        k = torch.randn((1, Hkv, T, D), generator=g)
        cos, sin = m.model.rotary_emb(q, pos)
        qo, ko = apply_rotary_pos_emb(q, k, cos, sin)
        tr = lambda t: t[0].transpose(0, 1).numpy()  # -> [T, heads, D]
        p = f"rope.{name}."
        lines += [fmt_array(p + "dims", np.array([T, H, Hkv, D])), fmt_array(p + "pos", pos[0].numpy()),
                  fmt_array(p + "q_in", tr(q)), fmt_array(p + "q_out", tr(qo)),
                  fmt_array(p + "k_in", tr(k)), fmt_array(p + "k_out", tr(ko))]
    N, C = 3, 45
    norm = LlamaRMSNorm(C, eps=1e-5)
    norm.weight.copy_(1.0 + 0.2 * torch.randn((C,), generator=g))
    x = torch.randn((N, C), generator=g) * 3.0
    lines += [fmt_array("rms.dims", np.array([N, C])), fmt_array("rms.x", x.numpy()),
              fmt_array("rms.w", norm.weight.numpy()), fmt_array("rms.eps", np.array([1e-5], dtype=np.float32)),
              fmt_array("rms.y", norm(x).numpy())]
    N, F = 2, 37
    gate = torch.randn((N, F), generator=g) * 6.0
    up = torch.randn((N, F), generator=g)
    lines += [fmt_array("silu.dims", np.array([N, F])), fmt_array("silu.gate", gate.numpy()),
              fmt_array("silu.up", up.numpy()), fmt_array("silu.y", (torch.nn.functional.silu(gate) * up).numpy())]
    with open(os.path.join(out, "kernels_ref.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "llama", "golden"))
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    summary, models, all_cases = {}, {}, {}
    for seed, name in enumerate(MODELS, start=1):
        model, model_cls = build(name, seed)
        models[name] = model
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        model.save_pretrained(d, safe_serialization=True)
        pad = model.config.pad_token_id
        cases = prompt_cases(model.config.vocab_size, model.config.eos_token_id if pad is None else pad, 2000 + seed)
        all_cases[name] = cases
        arrays = []
        for cname, ids, mask in cases:
            arrays += golden_case(model, cname, ids, mask)
        write_golden(os.path.join(d, "golden.bin"), arrays)
        # The saved checkpoint reloads to the same logits (tied heads saved once, names right).
        again = model_cls.from_pretrained(d, dtype=torch.float32).eval()
        again.config._attn_implementation = "eager"
        ref, got = prefill_logits(model, cases), prefill_logits(again, cases)
        assert all(torch.equal(ref[n], got[n]) for n in ref), name
        summary[name] = {"weight_rounding_rel_err": reduced_precision_error(model_cls, model, cases),
                         "logit_scale": float(max(np.abs(a).max() for n, a in arrays if n.endswith("_logits")))}

    # The 4.x spelling: transformers 5 must read it to the same RoPE and logits.
    src, dst = os.path.join(args.out, "llama_gqa_llama3"), os.path.join(args.out, "llama_gqa_llama3_v4")
    write_v4_spelling(src, dst)
    v4 = LlamaForCausalLM.from_pretrained(dst, dtype=torch.float32).eval()
    v4.config._attn_implementation = "eager"
    assert v4.config.rope_parameters == models["llama_gqa_llama3"].config.rope_parameters, v4.config.rope_parameters
    ref = prefill_logits(models["llama_gqa_llama3"], all_cases["llama_gqa_llama3"])
    got = prefill_logits(v4, all_cases["llama_gqa_llama3"])
    assert all(torch.equal(ref[n], got[n]) for n in ref), "4.x spelling reads differently"

    write_lora(args.out, "llama_gqa_llama3", all_cases["llama_gqa_llama3"], summary)
    write_rope(args.out, models)
    write_kernel_refs(args.out, models)

    # How much the llama3 scaling matters at the tested positions: the same
    # weights with plain RoPE move the logits by this much of their scale.
    plain_cfg = copy.deepcopy(models["llama_gqa_llama3"].config)
    plain_cfg.rope_parameters = {"rope_type": "default", "rope_theta": 500000.0}
    plain = LlamaForCausalLM(plain_cfg).eval()
    plain.load_state_dict(models["llama_gqa_llama3"].state_dict())
    cases = all_cases["llama_gqa_llama3"]
    p = prefill_logits(plain, cases)
    summary["llama_gqa_llama3"]["logit_change_without_llama3_scaling_rel"] = max(
        rel_change(ref[n], p[n], m) for n, _, m in cases)

    with open(os.path.join(args.out, "SUMMARY.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                   "models": summary}, f, indent=2, sort_keys=True)
        f.write("\n")
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
