"""peerjson: writes a peer engine's measurements in benchctl's JSON report schema.

Shared by tools/peers/hf_generate.py and tools/peers/ct2_generate.py so their
output reads like `benchctl run`'s json reporter (docs/reporters.md):

  top level: schema_version, model, dtype, device, warmup, iterations,
             temperature, top_p, release_inference_cache, cases, plus run
             metadata (backend, cpu_model, hostname, start_time, precisions,
             fields, ...) and a "peer" block saying which engine ran and how
             each figure was measured.
  per case:  index, batch_size, samples_per_prompt, prompt_length,
             requested_response_length, returned_response_length,
             peak_memory_mb, summary, profiles, precision, dtype,
             cache_policy, release_inference_cache, status, message, extended.

Statistics follow benchctl's definitions: p50 is the interpolated median,
p95 the nearest rank sorted[max(0, ceil(0.95 n) - 1)], stddev the population
one. Fields an engine cannot measure are null, never invented. Times are
milliseconds; tokens_per_second = num_generated_tokens / (generation_ms / 1000),
as benchctl's runner computes it.

Peers add two per-iteration fields benchctl does not have: decode_step_ms,
the wall time of one decode step, and first_token_ms, the wall time from the
start of generation to the first generated token (prefill plus one token
pick), each measured as the engine's script says in peer.method.
"""

import datetime
import json
import math
import os
import platform
import socket
import tempfile

SCHEMA_VERSION = 1

# benchctl's bc_field columns, in order, then the peers' extra column.
FIELDS = [
    "prompt_expansion_ms",
    "generation_ms",
    "post_processing_ms",
    "total_ms",
    "tokens_per_second",
    "num_generated_tokens",
    "prefill_forward_ms",
    "decode_forward_ms",
    "generation_overhead_ms",
    "num_decode_forwards",
    "cache_acquire_ms",
    "cache_release_ms",
    "decode_step_ms",
    "first_token_ms",
]

# benchctl precision plugin name -> dtype name written in reports.
PRECISION_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "int8": "int8"}


def _finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def stats(values):
    """Summary of one field over iterations; None entries are skipped.
    All None when no iteration measured it."""
    xs = sorted(float(v) for v in values if _finite(v))
    n = len(xs)
    if n == 0:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "min": None, "max": None, "stddev": None}
    mean = sum(xs) / n
    p50 = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    p95 = xs[max(0, math.ceil(0.95 * n) - 1)]
    stddev = math.sqrt(sum((x - mean) ** 2 for x in xs) / n)
    return {"n": n, "mean": mean, "p50": p50, "p95": p95, "min": xs[0], "max": xs[-1], "stddev": stddev}


def profile_record(prompt_expansion_ms, generation_ms, post_processing_ms, num_generated_tokens,
                   prefill_forward_ms=None, decode_forward_ms=None, num_decode_forwards=None,
                   decode_step_ms=None, first_token_ms=None):
    """One measured iteration, with benchctl's derived fields computed the way
    its runner computes them."""
    total_ms = prompt_expansion_ms + generation_ms + post_processing_ms
    overhead = None
    if _finite(prefill_forward_ms) and _finite(decode_forward_ms):
        overhead = generation_ms - prefill_forward_ms - decode_forward_ms
    return {
        "prompt_expansion_ms": prompt_expansion_ms,
        "generation_ms": generation_ms,
        "post_processing_ms": post_processing_ms,
        "total_ms": total_ms,
        "tokens_per_second": num_generated_tokens / (generation_ms / 1000.0) if generation_ms > 0 else None,
        "num_generated_tokens": num_generated_tokens,
        "prefill_forward_ms": prefill_forward_ms,
        "decode_forward_ms": decode_forward_ms,
        "generation_overhead_ms": overhead,
        "num_decode_forwards": num_decode_forwards,
        "cache_acquire_ms": None,
        "cache_release_ms": None,
        "decode_step_ms": decode_step_ms,
        "first_token_ms": first_token_ms,
    }


def case_object(index, precision, batch_size, samples_per_prompt, prompt_length, response_length,
                returned_response_length, records, peak_memory_mb, wall_ms, weights_bytes=None,
                peak_rss_bytes=None, status="ok", message=""):
    """One case in the json reporter's shape."""
    st = {f: stats([r.get(f) for r in records]) for f in FIELDS}
    summary = {}
    for f in FIELDS:
        if f.endswith("_ms"):
            summary[f] = {"mean": st[f]["mean"], "p50": st[f]["p50"], "p95": st[f]["p95"]}
        elif f == "tokens_per_second":
            summary[f] = {"mean": st[f]["mean"], "p50": st[f]["p50"]}
    profiles = []
    for r in records:
        p = {f: r.get(f) for f in FIELDS}
        p.update({
            "batch_size": batch_size,
            "num_samples_per_prompt": samples_per_prompt,
            "prompt_length": prompt_length,
            "response_length": returned_response_length,
        })
        profiles.append(p)
    return {
        "index": index,
        "batch_size": batch_size,
        "samples_per_prompt": samples_per_prompt,
        "prompt_length": prompt_length,
        "requested_response_length": response_length,
        "returned_response_length": returned_response_length,
        "peak_memory_mb": peak_memory_mb,
        "summary": summary,
        "profiles": profiles,
        "precision": precision,
        "dtype": PRECISION_DTYPE.get(precision, precision),
        "cache_policy": "retain",
        "release_inference_cache": False,
        "status": status,
        "message": message,
        "extended": {
            "n_iterations": len(records),
            "wall_ms": wall_ms,
            "effective_batch": batch_size * samples_per_prompt,
            "stats": st,
            "memory": {
                "weights_bytes": weights_bytes,
                "kv_cache_bytes": None,
                "workspace_bytes": None,
                "host_peak_bytes": None,
                "device_peak_bytes": None,
                "device_total_bytes": None,
                "peak_rss_bytes": peak_rss_bytes,
                "device_free_before_bytes": None,
                "device_free_after_bytes": None,
            },
        },
    }


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_document(backend, model, precisions, warmup, iterations, cases, peer, start_time):
    """The whole report. peer: {engine, engine_version, threads, method{...}, ...}."""
    dtypes = []
    for p in precisions:  # requested order, once each
        if PRECISION_DTYPE.get(p, p) not in dtypes:
            dtypes.append(PRECISION_DTYPE.get(p, p))
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model,
        "dtype": dtypes[0] if len(dtypes) == 1 else None,
        "dtypes": dtypes,
        "device": "cpu",
        "warmup": warmup,
        "iterations": iterations,
        "temperature": 0.0,
        "top_p": 1.0,
        "release_inference_cache": False,
        "backend": backend,
        "cpu_model": cpu_model(),
        "hostname": socket.gethostname(),
        "start_time": start_time,
        "sampling": {"temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": peer.get("seed")},
        "precisions": list(precisions),
        "cache_policies": ["retain"],
        "fields": FIELDS,
        "peer": peer,
        "cases": cases,
    }


def write_atomic(path, doc):
    """Writes doc as JSON to path through a temporary file and a rename."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".peer-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --- process memory: peak RSS with a reset, as benchctl's runner does -------

def reset_peak_rss():
    """Resets the process's VmHWM (Linux >= 4.0). Returns False if it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def parse_shape(text):
    """'B,S,P,R' -> (batch, samples_per_prompt, prompt_length, response_length)."""
    parts = [int(x) for x in text.split(",")]
    if len(parts) != 4 or min(parts) < 1:
        raise ValueError("a shape is B,S,P,R with four positive integers, got %r" % text)
    return tuple(parts)


def synthetic_prompts(batch_size, prompt_length, vocab_size, seed):
    """Exact-length prompts as benchctl makes them: ids uniform in [3, vocab),
    seeded; returns a list of lists of ints. (benchctl's generator differs, so
    the ids differ; the speed of a dense model does not depend on them.)"""
    import random
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab_size) for _ in range(prompt_length)] for _ in range(batch_size)]


# OPT-125m's shape (facebook/opt-125m config.json).
OPT125M = dict(vocab_size=50272, hidden_size=768, num_hidden_layers=12, ffn_dim=3072,
               num_attention_heads=12, max_position_embeddings=2048, word_embed_proj_dim=768,
               do_layer_norm_before=True, activation_function="relu", pad_token_id=1,
               bos_token_id=2, eos_token_id=2, enable_bias=True, layer_norm_elementwise_affine=True)


def opt_param_count(cfg=OPT125M):
    """Parameters of the OPT decoder with lm_head tied (counted once)."""
    V, H, L, F, P = (cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["ffn_dim"],
                     cfg["max_position_embeddings"])
    per_layer = 4 * (H * H + H) + (H * F + F) + (F * H + H) + 2 * 2 * H  # q,k,v,o; fc1; fc2; 2 LN
    return V * H + (P + 2) * H + L * per_layer + 2 * H  # embed, positions (+2 offset), layers, final LN


def opt_decode_read_bytes(elem_bytes, cfg=OPT125M):
    """Weight bytes one B=1 decode step must read: every layer's weights and
    biases, the final LN, and the (tied) embedding matrix once, as lm_head.
    The token embedding lookup reads one row and positions one row: counted."""
    V, H = cfg["vocab_size"], cfg["hidden_size"]
    n = opt_param_count(cfg) - V * H - (cfg["max_position_embeddings"] + 2) * H  # drop full tables
    n += V * H + 2 * H  # lm_head (the tied matrix, read once) + one token row + one position row
    return n * elem_bytes


def add_common_args(ap, precisions=("fp32", "bf16")):
    ap.add_argument("--precision", action="append", choices=list(precisions),
                    help="benchctl precision name; repeatable (default: fp32 and bf16)")
    ap.add_argument("--shape", action="append", type=parse_shape,
                    help="B,S,P,R: batch, samples per prompt, prompt and response length; repeatable "
                         "(default: 4,4,128,128 and 1,1,128,128)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", required=True, help="JSON report path")


def fill_defaults(args):
    if not args.precision:
        args.precision = ["fp32", "bf16"]
    if not args.shape:
        args.shape = [(4, 4, 128, 128), (1, 1, 128, 128)]
    if args.threads < 1 or args.warmup < 0 or args.iterations < 1:
        raise SystemExit("threads and iterations must be >= 1, warmup >= 0")
