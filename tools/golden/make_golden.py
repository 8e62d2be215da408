#!/usr/bin/env python3
"""make_golden.py: writes the OPT golden fixtures in tests/opt/golden/ with
Hugging Face transformers (torch, CPU), so the C tests can check benchctl's OPT
engine against the reference without Python.

For each tiny, randomly initialised, seeded OPT model it saves
  <out>/<model>/config.json + model.safetensors   (save_pretrained)
  <out>/<model>/golden.bin                       (see README.md for the format)
and, for preln, preln_sharded/ (sharded safetensors) and preln-bin/ (the same
weights as a PyTorch pytorch_model.bin, written like transformers 4's
save_pretrained(safe_serialization=False):
torch.save(model.state_dict()); its golden data is preln/golden.bin).
and golden.bin holds, for each prompt case (one unpadded prompt; a left-padded
batch of three prompts of different lengths):
  prefill logits, the logits of several KV-cached decode steps, and the greedy
  tokens of generate() with prompt expansion (num_return_sequences > 1).

Usage: tools/golden/.venv/bin/python tools/golden/make_golden.py [--out tests/opt/golden] [--only preln-bin]
(--only preln-bin rebuilds the seeded preln model and writes just preln-bin/.)
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np
import torch
from transformers import OPTConfig, OPTForCausalLM

GOLDEN_MAGIC = b"BCGOLDEN"
GOLDEN_VERSION = 1
DTYPE_F32, DTYPE_I32 = 0, 1

DECODE_STEPS = 4     # K: decode steps whose logits are saved
MAX_NEW_TOKENS = 6   # N: tokens generate() makes per row
NUM_RETURN = 3       # R: samples per prompt (prompt expansion)

# name: (OPTConfig kwargs, storage dtype, save as OPTModel ("decoder.*" names)?)
MODELS = {
    # (a) pre-LN, like 125m / 1.3b; fp32; also written sharded.
    "preln": (dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128, vocab_size=1000,
                   max_position_embeddings=64, word_embed_proj_dim=64, do_layer_norm_before=True),
              torch.float32, False),
    # (b) post-LN with project_in/out (P != C), like 350m; stored as F16 under "decoder.*" names.
    "postln_proj": (dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128, vocab_size=1000,
                         max_position_embeddings=64, word_embed_proj_dim=32, do_layer_norm_before=False),
                    torch.float16, True),
    # (c) head_dim 80, like 2.7b; stored as BF16.
    "hd80": (dict(hidden_size=160, num_hidden_layers=2, num_attention_heads=2, ffn_dim=256, vocab_size=512,
                  max_position_embeddings=64, word_embed_proj_dim=160, do_layer_norm_before=True),
             torch.bfloat16, False),
}


def write_golden(path, arrays):
    """arrays: list of (name, np.ndarray of float32 or int32)."""
    with open(path, "wb") as f:
        f.write(GOLDEN_MAGIC)
        f.write(struct.pack("<II", GOLDEN_VERSION, len(arrays)))
        for name, a in arrays:
            a = np.ascontiguousarray(a)
            if a.dtype == np.float32:
                code = DTYPE_F32
            elif a.dtype == np.int32:
                code = DTYPE_I32
            else:
                raise TypeError(f"{name}: dtype {a.dtype}")
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)))
            f.write(nb)
            f.write(struct.pack("<II", code, a.ndim))
            f.write(struct.pack(f"<{a.ndim}q", *a.shape))
            f.write(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())


def randomize(model, seed):
    """Re-initialises every parameter so that each code path matters: biases
    and layer-norm parameters non-zero, linear weights ~N(0, 1/in) so
    activations keep their scale, embeddings ~N(0, 0.5^2) so logits spread over
    a few units (greedy choices are clear, not near-ties)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_tokens" in name or "embed_positions" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif "layer_norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            else:
                raise RuntimeError(f"unexpected parameter {name}")


def prompt_cases(vocab, seed):
    """(name, input_ids [B, T], attention_mask [B, T]) with ids in [3, vocab)."""
    g = torch.Generator().manual_seed(seed)
    single = torch.randint(3, vocab, (1, 7), generator=g)
    lens = [5, 8, 3]
    T = max(lens)
    ids = torch.full((len(lens), T), 1, dtype=torch.long)  # pad id 1
    mask = torch.zeros((len(lens), T), dtype=torch.long)
    for b, n in enumerate(lens):
        ids[b, T - n:] = torch.randint(3, vocab, (n,), generator=g)
        mask[b, T - n:] = 1
    return [("single", single, torch.ones_like(single)), ("padded", ids, mask)]


@torch.no_grad()
def golden_case(model, name, ids, mask):
    B, T = ids.shape
    out = model(input_ids=ids, attention_mask=mask, use_cache=True)
    prefill = out.logits.float()  # [B, T, V]
    past = out.past_key_values
    tok = prefill[:, -1].argmax(-1)  # [B]
    dec_ids, dec_logits = [], []
    m = mask
    for _ in range(DECODE_STEPS):
        m = torch.cat([m, torch.ones((B, 1), dtype=m.dtype)], dim=1)
        o = model(input_ids=tok[:, None], attention_mask=m, past_key_values=past, use_cache=True)
        past = o.past_key_values
        dec_ids.append(tok)
        dec_logits.append(o.logits[:, -1].float())
        tok = o.logits[:, -1].argmax(-1)
    dec_ids = torch.stack(dec_ids, dim=1)          # [B, K]
    dec_logits = torch.stack(dec_logits, dim=0)    # [K, B, V]

    # generate(): greedy, EOS suppressed by min_new_tokens == max_new_tokens;
    # rows expanded p0s0, p0s1, ... exactly as generate's num_return_sequences
    # (which greedy decoding refuses, so the expansion is done here the same way).
    ids_x = ids.repeat_interleave(NUM_RETURN, dim=0)
    mask_x = mask.repeat_interleave(NUM_RETURN, dim=0)
    gen = model.generate(input_ids=ids_x, attention_mask=mask_x, do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                         min_new_tokens=MAX_NEW_TOKENS, pad_token_id=model.config.pad_token_id)
    gen_new = gen[:, T:]  # [B * R, N]
    assert gen_new.shape == (B * NUM_RETURN, MAX_NEW_TOKENS), gen_new.shape
    # Greedy generate must agree with the manual decode loop.
    k = min(DECODE_STEPS, MAX_NEW_TOKENS)
    assert torch.equal(gen_new[::NUM_RETURN, :k], dec_ids[:, :k]), (gen_new, dec_ids)

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


def logit_stats(ref, other, mask):
    """max |ref - other| over real positions, relative to max |ref|."""
    m = mask.bool()
    r, o = ref[m], other[m]
    return float((r - o).abs().max() / r.abs().max())


@torch.no_grad()
def reduced_precision_error(model, cases):
    """Relative prefill-logit error when the model's weights are rounded to
    fp16 / bf16 and computed in fp32: the part of the reduced-precision error
    that comes from weight storage alone (README.md, tolerances)."""
    res = {}
    ref = {n: model(input_ids=i, attention_mask=m).logits for n, i, m in cases}
    for dt in (torch.float16, torch.bfloat16):
        rounded = OPTForCausalLM(model.config).eval()
        rounded.load_state_dict({k: v.to(dt).float() for k, v in model.state_dict().items()})
        res[str(dt)] = max(logit_stats(ref[n], rounded(input_ids=i, attention_mask=m).logits, m) for n, i, m in cases)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "opt", "golden"))
    ap.add_argument("--only", choices=["preln-bin"], help="write only this fixture")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    summary = {}
    for seed, (name, (cfg_kw, store_dtype, as_base)) in enumerate(MODELS.items(), start=1):
        cfg = OPTConfig(**cfg_kw, activation_function="relu", pad_token_id=1, bos_token_id=2, eos_token_id=2,
                        dropout=0.0, attention_dropout=0.0, layerdrop=0.0)
        cfg._attn_implementation = "eager"
        model = OPTForCausalLM(cfg).eval()
        randomize(model, 1000 + seed)
        # Round the weights to the storage dtype first, so the golden logits
        # (computed in fp32) are exactly those of the stored checkpoint.
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(store_dtype).float())
        if name == "preln":
            db = os.path.join(args.out, "preln-bin")
            shutil.rmtree(db, ignore_errors=True)
            os.makedirs(db)
            # transformers 5 no longer writes pytorch_model.bin, so torch.save the
            # state dict as transformers 4's save_pretrained(safe_serialization=False)
            # did: zip serialization, pickle protocol 2. model.state_dict() is an
            # OrderedDict with _metadata, and lm_head.weight shares embed_tokens'
            # storage, which exercises BUILD and a shared storage in the reader.
            model.config.save_pretrained(db)
            torch.save(model.state_dict(), os.path.join(db, "pytorch_model.bin"))
        if args.only:
            continue
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        to_save = model.model if as_base else model
        to_save.to(store_dtype).save_pretrained(d, safe_serialization=True)
        model.float()
        cases = prompt_cases(cfg.vocab_size, 2000 + seed)
        arrays = []
        for cname, ids, mask in cases:
            arrays += golden_case(model, cname, ids, mask)
        write_golden(os.path.join(d, "golden.bin"), arrays)
        err = reduced_precision_error(model, cases)
        summary[name] = {"store_dtype": str(store_dtype), "weight_rounding_rel_err": err,
                         "logit_scale": float(max(np.abs(a).max() for n, a in arrays if n.endswith("_logits")))}
        if name == "preln":
            ds = os.path.join(args.out, "preln_sharded")
            shutil.rmtree(ds, ignore_errors=True)
            os.makedirs(ds)
            model.save_pretrained(ds, safe_serialization=True, max_shard_size="200KB")
            assert os.path.exists(os.path.join(ds, "model.safetensors.index.json")), "not sharded"
    if args.only:
        return
    with open(os.path.join(args.out, "SUMMARY.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                   "models": summary}, f, indent=2, sort_keys=True)
        f.write("\n")
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
