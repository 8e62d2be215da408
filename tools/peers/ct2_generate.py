#!/usr/bin/env python3
"""ct2_generate.py: CTranslate2 `Generator.generate_batch` on CPU, as a peer
row for docs/performance.md, writing benchctl's JSON report schema
(peerjson.py).

The model is the same random OPT-125m-shaped model hf_generate.py builds
(transformers' initialisation, same seed), saved with save_pretrained to a
temporary directory and converted with ctranslate2.converters.
TransformersConverter (float32 weights; the compute type is chosen when the
model is loaded). There is no tokenizer to download, so the converter is
given a synthetic one: OPT's four special tokens (<s> <pad> </s> <unk> at
ids 0-3) and "t<id>" for every other id, so token strings map 1:1 to ids.

Precisions: fp32 -> compute_type float32, bf16 -> bfloat16, int8 -> int8 (a
reference row). The compute type CTranslate2 actually runs is recorded in
each case's message; a compute type it refuses on this CPU makes that case
"failed" with CTranslate2's own message, and the run goes on.

One iteration, as benchctl's rollout:
  prompt expansion  each prompt's token list repeated S times, grouped by
                    prompt (p0s0, p0s1, ...): greedy search returns one
                    hypothesis per input, so samples are rows;
  generation        generate_batch(beam_size=1 (greedy), min_length =
                    max_length = R, include_prompt_in_result=False: the
                    prompt is forwarded at once as the prefill);
  post processing   token ids, attention mask over prompt + response and the
                    response start index.

How the decode figures are measured: CTranslate2 has no per-forward hook, so
every iteration also runs the same rows with min_length = max_length = 1
(prefill plus one token), untimed in generation_ms:
  first_token_ms   that 1-token generate_batch;
  decode_step_ms   (generation_ms - first_token_ms) / (R - 1), wall, which
                   includes CTranslate2's per-step work (greedy pick, cache).
prefill_forward_ms, decode_forward_ms and num_decode_forwards stay null.

Usage:
  ct2_generate.py --out ct2.json [--precision fp32 --precision bf16
                  --precision int8] [--shape 4,4,128,128 --shape 1,1,128,128]
                  [--threads 2] [--warmup 1] [--iterations 3] [--seed 1234]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peerjson  # noqa: E402

COMPUTE_TYPE = {"fp32": "float32", "bf16": "bfloat16", "int8": "int8"}
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def token_name(i):
    return SPECIALS[i] if i < len(SPECIALS) else "t%d" % i


class SyntheticOPTTokenizer:
    """What TransformersConverter's OPT loader reads from a tokenizer."""

    bos_token = "</s>"
    eos_token = "</s>"
    unk_token = "<unk>"
    pad_token = "<pad>"

    def __init__(self, vocab_size):
        self.vocab_size = vocab_size

    def get_vocab(self):
        return {token_name(i): i for i in range(self.vocab_size)}


def convert_model(seed, workdir):
    """Builds the random OPT-125m-shaped model, converts it; returns the
    CTranslate2 model directory and the parameter bytes (fp32)."""
    import torch
    import transformers
    from ctranslate2.converters import TransformersConverter

    transformers.logging.set_verbosity_error()
    torch.manual_seed(seed)
    model = transformers.OPTForCausalLM(transformers.OPTConfig(**peerjson.OPT125M))
    model.tie_weights()
    model = model.eval()
    hf_dir = os.path.join(workdir, "hf")
    model.save_pretrained(hf_dir)
    del model

    class Converter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return SyntheticOPTTokenizer(peerjson.OPT125M["vocab_size"])

    out = Converter(hf_dir).convert(os.path.join(workdir, "ct2"), force=True)
    shutil.rmtree(hf_dir, ignore_errors=True)
    return out


def run_case(ctranslate2, model_dir, threads, index, precision, shape, warmup, iterations, seed):
    B, S, P, R = shape
    try:
        gen = ctranslate2.Generator(model_dir, device="cpu", compute_type=COMPUTE_TYPE[precision],
                                    intra_threads=threads, inter_threads=1)
    except Exception as e:  # e.g. bfloat16 on a CPU backend
        return peerjson.case_object(index, precision, B, S, P, R, None, [], None, 0.0, status="failed",
                                    message="compute_type %s: %s" % (COMPUTE_TYPE[precision], e))
    prompts = [[token_name(t) for t in row]
               for row in peerjson.synthetic_prompts(B, P, peerjson.OPT125M["vocab_size"], seed)]
    vocab_index = {token_name(i): i for i in range(peerjson.OPT125M["vocab_size"])}
    opts = dict(beam_size=1, include_prompt_in_result=False, max_batch_size=0)
    records = []
    returned = None
    case_t0 = time.perf_counter()
    for it in range(warmup + iterations):
        if it == warmup:
            peerjson.reset_peak_rss()
        t0 = time.perf_counter()
        rows = [p for p in prompts for _ in range(S)]
        t1 = time.perf_counter()
        results = gen.generate_batch(rows, min_length=R, max_length=R, **opts)
        t2 = time.perf_counter()
        ids = [[vocab_index[t] for t in r.sequences[0]] for r in results]
        mask = [[1] * (P + len(r)) for r in ids]
        response_start = P
        t3 = time.perf_counter()
        lens = {len(r) for r in ids}
        if lens != {R} or len(ids) != B * S or len(mask[0]) != P + R or response_start != P:
            raise RuntimeError("generate_batch returned lengths %s for %d rows, wanted %d x %d"
                               % (sorted(lens), len(ids), B * S, R))
        returned = R
        f0 = time.perf_counter()
        gen.generate_batch(rows, min_length=1, max_length=1, **opts)
        f1 = time.perf_counter()
        if it < warmup:
            continue
        gen_ms, first_ms = (t2 - t1) * 1e3, (f1 - f0) * 1e3
        records.append(peerjson.profile_record(
            prompt_expansion_ms=(t1 - t0) * 1e3,
            generation_ms=gen_ms,
            post_processing_ms=(t3 - t2) * 1e3,
            num_generated_tokens=B * S * returned,
            decode_step_ms=(gen_ms - first_ms) / (R - 1) if R > 1 else None,
            first_token_ms=first_ms,
        ))
    wall_ms = (time.perf_counter() - case_t0) * 1e3
    rss = peerjson.peak_rss_bytes()
    case = peerjson.case_object(index, precision, B, S, P, R, returned, records,
                                peak_memory_mb=rss / 2**20 if rss else None, wall_ms=wall_ms,
                                peak_rss_bytes=rss,
                                message="compute_type requested %s, ran %s"
                                % (COMPUTE_TYPE[precision], gen.compute_type))
    case["extended"]["ct2_compute_type"] = gen.compute_type
    del gen
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    peerjson.add_common_args(ap, precisions=("fp32", "bf16", "int8"))
    ap.add_argument("--workdir", help="where to put the converted model (default: a temporary directory, removed)")
    args = ap.parse_args()
    peerjson.fill_defaults(args)
    if args.precision == ["fp32", "bf16"] and "--precision" not in sys.argv:
        args.precision = ["fp32", "bf16", "int8"]

    import ctranslate2

    start = peerjson.utc_now()
    load0 = os.getloadavg()
    workdir = args.workdir or tempfile.mkdtemp(prefix="ct2-opt125m-")
    cases = []
    try:
        print("ct2_generate: converting the random OPT-125m-shaped model ...", file=sys.stderr, flush=True)
        model_dir = convert_model(args.seed, workdir)
        for precision in args.precision:
            for shape in args.shape:
                idx = len(cases)
                print("ct2_generate: %s B=%d S=%d P=%d R=%d ..." % ((precision,) + shape),
                      file=sys.stderr, flush=True)
                try:
                    case = run_case(ctranslate2, model_dir, args.threads, idx, precision, shape,
                                    args.warmup, args.iterations, args.seed)
                except Exception as e:  # a failed case is reported, the run goes on
                    B, S, P, R = shape
                    case = peerjson.case_object(idx, precision, B, S, P, R, None, [], None, 0.0,
                                                status="failed", message="%s: %s" % (type(e).__name__, e))
                tps = case["summary"]["tokens_per_second"]["mean"]
                print("ct2_generate:   %s, %s tokens/s %s" % (case["status"], "%.1f" % tps if tps else "-",
                                                             case["message"]), file=sys.stderr, flush=True)
                cases.append(case)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    peer = {
        "engine": "ctranslate2",
        "engine_version": "ctranslate2 %s" % ctranslate2.__version__,
        "script": "tools/peers/ct2_generate.py",
        "threads": args.threads,
        "intra_threads": args.threads,
        "inter_threads": 1,
        "cpu_compute_types": sorted(ctranslate2.get_supported_compute_types("cpu")),
        "seed": args.seed,
        "weights": "random (transformers OPT init, std 0.02), OPT-125m shape, converted from float32",
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg(),
        "method": {
            "prefill_forward_ms": "not measured (null): CTranslate2 exposes no per-forward timing",
            "first_token_ms": "a separate generate_batch of the same rows with max_length 1, each iteration",
            "decode_step_ms": "(generation_ms - first_token_ms) / (R-1), wall",
            "prompt_expansion": "each prompt's tokens repeated S times (greedy returns one hypothesis)",
            "peak_memory_mb": "process VmHWM after reset (/proc/self/clear_refs 5) at the end of warmup",
        },
    }
    doc = peerjson.run_document("ct2_generate", "facebook/opt-125m shape (random weights)", args.precision,
                                args.warmup, args.iterations, cases, peer, start)
    peerjson.write_atomic(args.out, doc)
    # A precision CTranslate2 cannot run here is a finding, not a script
    # failure; any other failure is.
    failed = [c for c in cases if c["status"] != "ok" and not c["message"].startswith("compute_type ")]
    for c in failed:
        print("ct2_generate: case %d failed: %s" % (c["index"], c["message"]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
