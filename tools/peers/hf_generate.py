#!/usr/bin/env python3
"""hf_generate.py: Hugging Face transformers `generate` on CPU, as a peer row
for docs/performance.md, writing benchctl's JSON report schema (peerjson.py).

The model is OPT-125m's shape (facebook/opt-125m's config: hidden 768, 12
layers, 12 heads, ffn 3072, vocab 50272, 2048 positions, pre-LN, tied
lm_head) with random weights from transformers' own initialisation: weights
cannot be downloaded here, and a dense model's speed does not depend on their
values. EOS is suppressed until the requested length (min_new_tokens =
max_new_tokens), so every row generates exactly R tokens.

One iteration, as benchctl's rollout:
  prompt expansion  each prompt row repeated S times, grouped by prompt
                    (p0s0, p0s1, ...), like generate's own expansion;
                    transformers refuses greedy generate with
                    num_return_sequences > 1, so the rows are expanded here
                    and generate gets B*S rows, which is what it would do.
  generation        model.generate(greedy, use_cache=True, min_new_tokens =
                    max_new_tokens = R) under torch.inference_mode().
  post processing   attention mask over prompt + response and the response
                    start index.

How the decode figures are measured: a forward pre-hook and a forward hook on
the model time every forward call generate makes (perf_counter). The first
call is the prefill (B*S x P tokens); the R-1 others are decode steps.
  prefill_forward_ms   the first forward;
  decode_forward_ms    the sum of the other forwards; num_decode_forwards R-1;
  decode_step_ms       wall time per decode step: (end of generate - end of
                       the prefill forward) / (R - 1), which includes
                       generate's own per-step work (logits processors,
                       argmax, cache bookkeeping) as well as the forward;
  first_token_ms       start of generate to the end of the prefill forward.

Usage:
  hf_generate.py --out hf.json [--precision fp32 --precision bf16]
                 [--shape 4,4,128,128 --shape 1,1,128,128] [--threads 2]
                 [--warmup 1] [--iterations 3] [--seed 1234]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peerjson  # noqa: E402


class ForwardTimer:
    """Times each forward call of a module through hooks."""

    def __init__(self, module):
        self.starts, self.ends = [], []
        self._h = [module.register_forward_pre_hook(self._pre), module.register_forward_hook(self._post)]

    def _pre(self, _module, _inputs):
        self.starts.append(time.perf_counter())

    def _post(self, _module, _inputs, _outputs):
        self.ends.append(time.perf_counter())

    def clear(self):
        self.starts.clear()
        self.ends.clear()

    def remove(self):
        for h in self._h:
            h.remove()


def build_model(torch, transformers, dtype, seed):
    torch.manual_seed(seed)
    cfg = transformers.OPTConfig(**peerjson.OPT125M)
    model = transformers.OPTForCausalLM(cfg)
    model.tie_weights()
    model = model.to(dtype).eval()
    # Keep generate from warning about / filling a generation config we override.
    model.generation_config.pad_token_id = cfg.pad_token_id
    model.generation_config.eos_token_id = cfg.eos_token_id
    model.generation_config.bos_token_id = cfg.bos_token_id
    return model


def run_case(torch, model, index, precision, shape, warmup, iterations, seed):
    B, S, P, R = shape
    prompts = torch.tensor(peerjson.synthetic_prompts(B, P, peerjson.OPT125M["vocab_size"], seed),
                           dtype=torch.long)
    mask = torch.ones_like(prompts)
    timer = ForwardTimer(model)
    records = []
    returned = None
    case_t0 = time.perf_counter()
    try:
        for it in range(warmup + iterations):
            if it == warmup:
                peerjson.reset_peak_rss()
            timer.clear()
            with torch.inference_mode():
                t0 = time.perf_counter()
                ids = prompts.repeat_interleave(S, dim=0)
                am = mask.repeat_interleave(S, dim=0)
                t1 = time.perf_counter()
                out = model.generate(input_ids=ids, attention_mask=am, do_sample=False, num_beams=1,
                                     min_new_tokens=R, max_new_tokens=R, use_cache=True)
                t2 = time.perf_counter()
                response = out[:, P:]
                full_mask = torch.cat([am, torch.ones_like(response)], dim=1)
                response_start = P
                t3 = time.perf_counter()
            returned = int(response.shape[1])
            if returned != R or full_mask.shape[1] != P + R or response_start != P:
                raise RuntimeError("generate returned %d tokens per row, wanted %d" % (returned, R))
            n_fwd = len(timer.ends)
            if n_fwd != R or len(timer.starts) != R:
                raise RuntimeError("expected %d forward calls, hooks saw %d" % (R, n_fwd))
            fwd_ms = [(e - s) * 1e3 for s, e in zip(timer.starts, timer.ends)]
            if it < warmup:
                continue
            records.append(peerjson.profile_record(
                prompt_expansion_ms=(t1 - t0) * 1e3,
                generation_ms=(t2 - t1) * 1e3,
                post_processing_ms=(t3 - t2) * 1e3,
                num_generated_tokens=B * S * returned,
                prefill_forward_ms=fwd_ms[0],
                decode_forward_ms=sum(fwd_ms[1:]),
                num_decode_forwards=n_fwd - 1,
                decode_step_ms=(t2 - timer.ends[0]) * 1e3 / (R - 1) if R > 1 else None,
                first_token_ms=(timer.ends[0] - t1) * 1e3,
            ))
    finally:
        timer.remove()
    wall_ms = (time.perf_counter() - case_t0) * 1e3
    rss = peerjson.peak_rss_bytes()
    weights_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return peerjson.case_object(index, precision, B, S, P, R, returned, records,
                                peak_memory_mb=rss / 2**20 if rss else None, wall_ms=wall_ms,
                                weights_bytes=weights_bytes, peak_rss_bytes=rss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    peerjson.add_common_args(ap)
    args = ap.parse_args()
    peerjson.fill_defaults(args)

    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    start = peerjson.utc_now()
    load0 = os.getloadavg()

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    cases = []
    for precision in args.precision:
        model = build_model(torch, transformers, dtypes[precision], args.seed)
        for shape in args.shape:
            idx = len(cases)
            print("hf_generate: %s B=%d S=%d P=%d R=%d ..." % ((precision,) + shape), file=sys.stderr, flush=True)
            try:
                case = run_case(torch, model, idx, precision, shape, args.warmup, args.iterations, args.seed)
            except Exception as e:  # a failed case is reported, the run goes on
                B, S, P, R = shape
                case = peerjson.case_object(idx, precision, B, S, P, R, None, [], None, 0.0,
                                            status="failed", message="%s: %s" % (type(e).__name__, e))
            tps = case["summary"]["tokens_per_second"]["mean"]
            print("hf_generate:   %s, %s tokens/s" % (case["status"], "%.1f" % tps if tps else "-"),
                  file=sys.stderr, flush=True)
            cases.append(case)
        del model

    peer = {
        "engine": "hf-transformers",
        "engine_version": "transformers %s, torch %s" % (transformers.__version__, torch.__version__),
        "script": "tools/peers/hf_generate.py",
        "threads": args.threads,
        "torch_num_threads": torch.get_num_threads(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "seed": args.seed,
        "weights": "random (transformers OPT init, std 0.02), OPT-125m shape",
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg(),
        "method": {
            "prefill_forward_ms": "forward hooks: the first forward call of generate",
            "decode_forward_ms": "forward hooks: sum of the R-1 later forward calls",
            "decode_step_ms": "(end of generate - end of prefill forward) / (R-1), wall",
            "first_token_ms": "start of generate to the end of the prefill forward, wall",
            "prompt_expansion": "repeat_interleave(S) before generate (greedy generate refuses "
                                "num_return_sequences > 1)",
            "peak_memory_mb": "process VmHWM after reset (/proc/self/clear_refs 5) at the end of warmup",
        },
    }
    doc = peerjson.run_document("hf_generate", "facebook/opt-125m shape (random weights)", args.precision,
                                args.warmup, args.iterations, cases, peer, start)
    peerjson.write_atomic(args.out, doc)
    failed = sum(c["status"] != "ok" for c in cases)
    for c in cases:
        if c["status"] != "ok":
            print("hf_generate: case %d failed: %s" % (c["index"], c["message"]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
