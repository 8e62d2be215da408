#!/usr/bin/env python3
"""perf_table.py: reads benchctl's JSON reports of the native engine and of
the peers (the `worker` backend running transformers, CTranslate2 or
OpenVINO, docs/pyworkers.md) and the bandwidth and FMA-peak probes' JSON, and prints
two tables (markdown) for docs/performance.md: every row measured, and the
targets, met or not. Standard library only.

Columns of the first table, per engine x kernel family x precision x shape
(B = prompts, S = samples per prompt, P -> R = prompt -> response tokens):
  kernels       the kernel family benchctl ran (environment.cpu.kernels:
                avx512_bf16, avx512, avx2, portable); for a peer, the ISA its
                libraries were held to (peer_isa: "avx2" for a run with
                ATEN_CPU_CAPABILITY, CT2_FORCE_CPU_ISA, MKL_ENABLE_INSTRUCTIONS
                or ONEDNN_MAX_CPU_ISA set to AVX2 in the worker's `env`
                setting, backend_settings.env), else "native" (what they pick
                on this CPU).
  model         the shape of the row: its report's model_shape, an OPT one
                (the opt backend; the peers by default run OPT-125m) or a
                Llama-family one (the llama backend and the peers with a
                Llama-family `model`: the same name, compared with each other).
  tok/s         generated tokens per second, the median (p50) over the
                measured iterations: num_generated_tokens / generation time.
                The median, not the mean, because the benchmark machine is
                shared and one disturbed iteration would move a mean of 3.
  tok/s range   min - max over the measured iterations: how noisy the run was.
  step ms       wall time of one decode step, median over iterations:
                (generation_ms - prefill_forward_ms) / num_decode_forwards,
                from each engine's own profile (for a worker, the engine's
                generation and prefill with the worker's stage times).
  fwd ms        decode forward only, per step: decode_forward_ms /
                num_decode_forwards (CT2: its per-token callback's steps,
                forward and pick together).
  bound ms      the fastest a decode step over the row's B x S rows could be:
                max(bandwidth bound, FMA bound), with "bw" or "fma" saying
                which is larger.
                  bandwidth bound = bytes a decode step reads / read
                bandwidth. Weight bytes: every layer's weights and biases, the
                final layer norm, one token and one position row, and the tied
                embedding matrix once as lm_head (opt_decode_read_bytes),
                at 4 B (fp32), 2 B (bf16) or 1 B (int8, approximate: biases,
                norms and scales are fp32). KV cache bytes: K and V of every
                layer for the cached tokens an average step reads at least
                (opt_decode_kv_bytes): each prompt's P tokens once (its
                samples share them) and each row's generated tokens, R/2 on
                average over the R-1 decode steps, at the cache's element size
                (bf16 2 B; fp32 and int8 4 B: the OPT engine keeps an int8
                model's cache in fp32). At B=1 the cache is about 3% of the
                bytes; at 64 rows of 128 -> 128 it is about as large as fp32
                weights.
                Bandwidth: the best --threads pass over every bandwidth JSON
                given (the fastest the machine was seen to read), so the bound
                is the tightest measured one.
                  FMA bound = (2 x rows x weight elements (one multiply-add per
                weight and row; the biases and norms counted too, < 0.1%) +
                attention's flops (opt_decode_attention_flops: each row's
                query against its P + R/2 keys, scores and the sum of V)) /
                the FMA peak (tools/bandwidth/fmapeak.c, best --threads pass)
                of the kernel family the row ran (row_fma_peak): benchctl's
                environment.cpu.kernels (avx512_bf16 counts its dpbf16 peak for
                bf16 weights and its fp32 FMA peak otherwise); for the peers,
                the family of their ISA when held to one (avx2), else the
                fastest fp32 FMA family the probe measured.
  step/bound    step ms / bound ms.
  prefill GFLOP/s  opt_prefill_flops / prefill_forward_ms, median over
                iterations: 2 x the decoder layers' weights per prompt token
                plus the lm_head on each prompt's last position (the engine
                computes no other position's logits at prefill); attention's
                own products left out.
  of peak       prefill GFLOP/s / the FMA peak of the row's family (as above).
  vs fp32       tok/s over the same engine's, family's, model's and shape's
                fp32 row (bf16 and int8 rows).
  vs bf16       the same over the bf16 row (int8 rows).
  vs HF, vs OV, vs CT2 tok/s divided by the HF / OpenVINO / CT2 row of the
                same precision and shape (OPT-125m or the Llama shape the
                peers ran; CT2's int8 row is its int8 compute type)
                and of the matching ISA (peer_row): the avx2 family (and a
                peer held to AVX2) against the peers held to AVX2, every other
                family against the native peers; the native peer's row where
                no AVX2 one was run.
  vs CT2 int8   tok/s divided by CT2's int8 row of the same shape (and ISA).
  vs CT2 best   tok/s divided by the fastest CT2 row of the same shape, any
                compute type (CTranslate2 may lack a precision on a CPU), each
                compute type's row matched by ISA as above (peer_best).

The second table, the targets (targets()), has one line per target,
kernel family, model, shape and precision where the target names them: the
measured value, the threshold, met or not, and for a target not met the
bound that applies (limit_of): for a step/bound target the bound it is held
to; for a speed target, "bandwidth" or "FMA" when the decode step the
target asks for (the step x measured / threshold) is below that bound, else
"neither" (the bounds allow it: the engine is what is short). A row the
target needs that is missing or failed is a line saying "no row", not met
(but a precision the model never ran at all has no lines).
  1. B=1 decode step / bandwidth bound <= 1.25, fp32 and bf16;
  2. bf16 / fp32 tok/s >= 1.6 at B=1 and >= 1.0 at 16 rows;
  3. benchctl fp32 / CT2 float32 tok/s >= 1.2, benchctl int8 / CT2 int8
     >= 1.0, and benchctl's fastest precision / CT2's fastest >= 1.0, at
     every shape (OPT-125m), against CT2 on the family's ISA as for "vs CT2"
     (the line says "CT2 held to avx2" when that is the row compared with;
     its last column then gives the ratio against the native CT2 too, for
     information);
  4. at 16 rows and more, step / max(bw, FMA) bound <= 1.3 and prefill
     >= 60% of the FMA peak, every precision;
  5. each bigger model's fp32 and bf16 rows at B=1 and 16 rows exist;
  6. int8 / bf16 tok/s >= 1.6 at B=1;
  7. a Llama-family shape against its peers of the same shape (native ISA),
     every shape: fp32 / CT2 float32 and int8 / CT2 int8 >= 1.2 (and w8a8 /
     CT2 int8 >= 1.2 where w8a8 ran: the same arithmetic as CT2's int8), fp32
     / HF fp32 and bf16 / HF bf16 >= 1.0 (target 1 then has int8's line too).
  1p. with --b1 FILE (tools/bench/bench_b1_bound's output): target 1 once
     more, from the B=1 step paired in time with read passes over the
     model's own weights (the median ratio of its rounds, their min and max
     in the notes), one line per precision it ran; on a machine whose
     bandwidth moves between minutes this is the line that decides target 1
     (docs/performance.md, "B=1 against the bound, paired").

Usage:
  perf_table.py --bandwidth bw1.json [--bandwidth bw2.json] [--fmapeak fp.json] [--threads 2]
             [--b1 b1.txt] [--markdown out.md] report.json [report.json ...]
"""

import argparse
import json
import math
import re
import shlex
import sys

ELEM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "w8a8": 1}
# The KV cache's element size per precision (the engine's eng_kv_dtype:
# int8 weights keep an fp32 cache).
KV_ELEM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 4, "w8a8": 4}

# OPT-125m's shape (facebook/opt-125m config.json).
OPT125M = dict(vocab_size=50272, hidden_size=768, num_hidden_layers=12, ffn_dim=3072,
               max_position_embeddings=2048)


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


def opt_decode_kv_tokens(shape):
    """Cached tokens an average decode step of shape (B prompts, S samples,
    P prompt tokens, R response tokens) reads at least, over all its rows:
    each prompt's P tokens once (its S samples share them) and each row's
    generated ones: i of them at decode step i (1 .. R-1), R/2 on average."""
    B, S, P, R = shape
    return B * P + B * S * R / 2.0


def opt_decode_kv_bytes(shape, kv_elem_bytes, cfg=OPT125M):
    """K and V bytes of every layer for opt_decode_kv_tokens(shape)."""
    return 2.0 * cfg["num_hidden_layers"] * cfg["hidden_size"] * kv_elem_bytes * opt_decode_kv_tokens(shape)


def opt_decode_attention_flops(shape, cfg=OPT125M):
    """Attention's flops in an average decode step: each of the B x S rows'
    queries against its P + R/2 keys, per layer and hidden unit one
    multiply-add for the score and one for the sum of V (2 x 2 flops)."""
    B, S, P, R = shape
    return 4.0 * cfg["num_hidden_layers"] * cfg["hidden_size"] * B * S * (P + R / 2.0)


# The Llama family (benchctl's `llama` backend and the workers' Llama-family
# shapes, docs/llama.md): model_shape has no KV head count, so the presets'
# (plugins/llama/llama_config.c) by name; another model counts every head
# (an upper bound on its KV cache).
LLAMA_KV_HEADS = {"qwen2.5-0.5b": 2, "qwen2.5-1.5b": 2, "llama-3.2-1b": 8, "smollm2-135m": 3}


def llama_embedding_reads(cfg):
    """(V x H matrices the model holds: 1 tied, 2 untied; its layer
    parameters without the embeddings and the final norm). From the report's
    parameter count: the no-bias count says whether lm_head is tied (the
    q/k/v/o biases are far smaller than V x H)."""
    V, H, L, F = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["ffn_dim"]
    kv = cfg["kv_heads"] * (H // cfg["heads"])
    no_bias = V * H + L * (2 * H * H + 2 * H * kv + 3 * H * F + 2 * H) + H
    tables = 2 if cfg["parameters"] - no_bias >= V * H else 1
    return tables, cfg["parameters"] - tables * V * H - H


def param_count(cfg=OPT125M):
    """Parameters of the model (OPT: opt_param_count; Llama: the report's)."""
    return cfg["parameters"] if cfg.get("family") == "llama" else opt_param_count(cfg)


def decode_read_bytes(elem_bytes, cfg=OPT125M):
    """Weight bytes one B=1 decode step must read (OPT: opt_decode_read_bytes;
    Llama: every layer's weights and biases, the final norm, lm_head once
    (the tied embedding or its own) and one embedding row)."""
    if cfg.get("family") != "llama":
        return opt_decode_read_bytes(elem_bytes, cfg)
    V, H = cfg["vocab_size"], cfg["hidden_size"]
    _, layers = llama_embedding_reads(cfg)
    return (layers + H + V * H + H) * elem_bytes


def decode_kv_bytes(shape, kv_elem_bytes, cfg=OPT125M):
    """K and V bytes of every layer for opt_decode_kv_tokens(shape): hidden
    wide for OPT, KV heads x head_dim wide for Llama."""
    if cfg.get("family") != "llama":
        return opt_decode_kv_bytes(shape, kv_elem_bytes, cfg)
    kv = cfg["kv_heads"] * (cfg["hidden_size"] // cfg["heads"])
    return 2.0 * cfg["num_hidden_layers"] * kv * kv_elem_bytes * opt_decode_kv_tokens(shape)


def prefill_flops(tokens, prompt_length, cfg=OPT125M):
    """opt_prefill_flops for OPT; for Llama the same count: 2 x the layers'
    weights per token plus lm_head on each prompt's last position."""
    if cfg.get("family") != "llama":
        return opt_prefill_flops(tokens, prompt_length, cfg)
    V, H = cfg["vocab_size"], cfg["hidden_size"]
    _, layers = llama_embedding_reads(cfg)
    prompts = tokens / prompt_length if prompt_length else 0
    return 2.0 * (layers * tokens + V * H * prompts)


def median(xs):
    xs = sorted(x for x in xs if x is not None and math.isfinite(x))
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


WORKER_ENGINES = {"transformers": "HF", "ctranslate2": "CT2", "deepspeed": "DS", "openvino": "OV"}


LABELS = dict(WORKER_ENGINES, native="benchctl", opt="benchctl", llama="benchctl")


def engine_of(doc, case):
    """benchctl, or the engine a worker backend ran, as HF / CT2 / DS / OV: from
    the case's backend label (a run over several backends, configs/peers.cfg),
    else from the run's one backend (a worker's engine is the last word of its
    command, e.g. "tools/peers-worker transformers")."""
    label = case.get("backend")
    if label in LABELS:
        return LABELS[label]
    if label and label != "worker":
        return label
    if doc.get("backend") != "worker":
        return "benchctl"
    words = shlex.split((doc.get("backend_settings") or {}).get("command") or "")
    return WORKER_ENGINES.get(words[-1], words[-1]) if words else "worker"


# What holds each peer library to an ISA (docs/performance.md): PyTorch's ATen
# kernels, CTranslate2's own, oneMKL's and oneDNN's dispatch.
ISA_VARIABLES = ("ATEN_CPU_CAPABILITY", "CT2_FORCE_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


def peer_isa(env):
    """The ISA a worker's `env` setting ("KEY=VALUE ...") holds its
    libraries to: the value of the ISA_VARIABLES it sets, lower case ("avx2";
    several different values joined with "+"), or "native" when it sets none
    (the libraries pick the CPU's best)."""
    values = set()
    for word in shlex.split(env or ""):
        key, _, value = word.partition("=")
        if key in ISA_VARIABLES and value:
            values.add(value.lower())
    return "+".join(sorted(values)) if values else "native"


def comparison_isa(r):
    """The peers' ISA row r is compared with: its own for a peer; "avx2" for
    benchctl's avx2 family (what an AVX2-only CPU runs), else "native"."""
    if r["engine"] == "benchctl":
        return "avx2" if r["family"] == "avx2" else "native"
    return r["isa"]


def step_ms(profiles):
    """Median per-iteration decode-step wall time (see the module doc)."""
    vals = []
    for p in profiles:
        g, pf, n = p.get("generation_ms"), p.get("prefill_forward_ms"), p.get("num_decode_forwards")
        if g is not None and pf is not None and n:
            vals.append((g - pf) / n)
        elif p.get("decode_forward_ms") is not None and n:
            vals.append(p["decode_forward_ms"] / n)
    return median(vals)


def fwd_ms(profiles):
    return median([p["decode_forward_ms"] / p["num_decode_forwards"] for p in profiles
                 if p.get("decode_forward_ms") is not None and p.get("num_decode_forwards")])


def prefill_tokens(p, case):
    """Prompt tokens one iteration prefilled: prefill_tokens_per_second x
    prefill_forward_ms when the profile has them (a shared prefill runs each
    prompt once), else rows x prompt length."""
    tps, ms = p.get("prefill_tokens_per_second"), p.get("prefill_forward_ms")
    if tps and ms:
        return tps * ms / 1e3
    return case["batch_size"] * case["samples_per_prompt"] * case["prompt_length"]


def opt_prefill_flops(tokens, prompt_length, cfg=OPT125M):
    """Multiply-add flops of a prefill of `tokens` prompt tokens (prompts of
    prompt_length): 2 x the decoder layers' weights (non-embedding: q, k, v,
    out, fc1, fc2 and their biases and norms) per token, plus the lm_head
    (2 x vocab x hidden) on each prompt's last position only, as the OPT
    engine computes it (plugins/opt/opt_model.c, ENG_LOGITS_LAST). Attention's
    score and value products are left out (at 128 tokens, about 4% of the
    layers' flops for OPT-125m)."""
    V, H = cfg["vocab_size"], cfg["hidden_size"]
    layers = opt_param_count(cfg) - V * H - (cfg["max_position_embeddings"] + 2) * H - 2 * H
    prompts = tokens / prompt_length if prompt_length else 0
    return 2.0 * (layers * tokens + V * H * prompts)


def model_of(doc):
    """(short name, shape for param_count) of a report: its model_shape (an
    OPT or a Llama-family one), else OPT-125m."""
    shape = doc.get("model_shape") or {}
    if not shape.get("hidden_size"):
        return "125m", OPT125M
    cfg = dict(vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
               num_hidden_layers=shape["layers"], ffn_dim=shape["ffn_size"],
               max_position_embeddings=shape["max_positions"])
    name = ((doc.get("backend_settings") or {}).get("model") or doc.get("model") or "?")
    if shape.get("family") == "llama":
        cfg.update(family="llama", parameters=shape["parameters"], heads=shape["heads"],
                   kv_heads=LLAMA_KV_HEADS.get(name, shape["heads"]))
    return name, cfg


def rows_from(path):
    with open(path) as f:
        doc = json.load(f)
    model, cfg = model_of(doc)
    kernels = ((doc.get("environment") or {}).get("cpu") or {}).get("kernels")
    settings = doc.get("backend_settings") or {}
    out = []
    for c in doc.get("cases", []):
        engine = engine_of(doc, c)
        # the case's env where the matrix varies it (its backend_settings), else
        # the run's, unless the case's backend is another one than the run's
        # (a run over several backends reports one backend's settings: no ISA
        # can be told for the others, native)
        case_settings = c.get("backend_settings") or {}
        env = case_settings["env"] if "env" in case_settings else \
            (settings.get("env") if c.get("backend") in (None, doc.get("backend")) else None)
        isa = peer_isa(env)
        dtype = c.get("dtype") or c.get("precision")
        profiles = c.get("profiles") or []
        tps = (c.get("summary") or {}).get("tokens_per_second") or {}
        tps_stats = ((c.get("extended") or {}).get("stats") or {}).get("tokens_per_second") or {}
        note = ""
        ct = (doc.get("backend_settings") or {}).get("compute_type")
        if engine == "CT2" and ct:  # the compute type overrides the precision
            dtype, note = ct.split("_")[0], "compute %s" % ct
        if c.get("status") != "ok":
            note = "%s: %s" % (c.get("status"), (c.get("message") or "").split(", but")[0])
        out.append({
            "engine": engine,
            "model": model,
            "cfg": cfg,
            "kernels": kernels,
            "dtype": dtype,
            "shape": (c["batch_size"], c["samples_per_prompt"], c["prompt_length"], c["requested_response_length"]),
            "ok": c.get("status") == "ok",
            "tps": tps.get("p50"),
            "tps_min": tps_stats.get("min"),
            "tps_max": tps_stats.get("max"),
            "family": kernels if engine == "benchctl" else isa,
            "isa": None if engine == "benchctl" else isa,
            "step": step_ms(profiles) if profiles else None,
            "prefill_ms": median([p.get("prefill_forward_ms") for p in profiles]),
            "prefill_tokens": median([prefill_tokens(p, c) for p in profiles]),
            "fwd": fwd_ms(profiles) if profiles else None,
            "note": note,
            "file": path,
        })
    return doc, out


def best_bandwidth(paths, threads):
    best = None
    for path in paths:
        with open(path) as f:
            bw = json.load(f)
        for r in bw.get("results", []):
            if r.get("threads") == threads and (best is None or r["best_gb_per_s"] > best):
                best = r["best_gb_per_s"]
    return best


def fma_peaks(paths, threads):
    """{kernel family: best GFLOP/s at threads} over every fmapeak JSON."""
    best = {}
    for path in paths:
        with open(path) as f:
            fp = json.load(f)
        for r in fp.get("results", []):
            if r.get("threads") == threads and r["best_gflop_per_s"] > best.get(r["kernel"], 0):
                best[r["kernel"]] = r["best_gflop_per_s"]
    return best


def row_fma_peak(r, peaks):
    """The FMA peak (GFLOP/s) of the kernel family row r ran (see the module doc), or None."""
    k = r["kernels"] or (r.get("isa") if r.get("isa") != "native" else None)
    if k == "avx512_bf16" and r["dtype"] != "bfloat16":
        k = "avx512"
    if k:
        return peaks.get(k)
    fp32 = [peaks[f] for f in ("avx512", "avx2") if f in peaks]
    return max(fp32) if fp32 else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def ratio(a, b):
    return a / b if (a and b) else None


def row_bounds(r, gbs, peaks):
    """(bandwidth bound ms, FMA bound ms) of one decode step of row r (None where unknown)."""
    if r["dtype"] not in ELEM_BYTES:
        return None, None
    B, S = r["shape"][:2]
    read = decode_read_bytes(ELEM_BYTES[r["dtype"]], r["cfg"]) + \
        decode_kv_bytes(r["shape"], KV_ELEM_BYTES[r["dtype"]], r["cfg"])
    bw_ms = read / (gbs * 1e9) * 1e3 if gbs else None
    peak = row_fma_peak(r, peaks)
    flops = 2.0 * B * S * decode_read_bytes(1, r["cfg"]) + opt_decode_attention_flops(r["shape"], r["cfg"])
    fma_ms = flops / (peak * 1e9) * 1e3 if peak else None
    return bw_ms, fma_ms


def peer_row(rows, engine, model, shape, dtype, isa):
    """The measured row (ok, with tok/s) of peer `engine` at model, shape and
    dtype run on `isa`, else the native one (no restricted run of it), else
    None."""
    def on(want):
        for x in rows:
            if (x["engine"] == engine and x["isa"] == want and x["dtype"] == dtype and x["shape"] == shape
                    and x["model"] == model and x["ok"] and x["tps"]):
                return x
        return None
    return on(isa) or (on("native") if isa != "native" else None)


def peer_best(rows, engine, model, shape, isa):
    """The fastest of peer `engine`'s rows at model and shape, each dtype's
    row chosen as peer_row chooses it (on `isa`, else native), or None."""
    dtypes = {x["dtype"] for x in rows if x["engine"] == engine and x["shape"] == shape and x["model"] == model}
    xs = [x for x in (peer_row(rows, engine, model, shape, d, isa) for d in sorted(dtypes)) if x]
    return max(xs, key=lambda x: x["tps"]) if xs else None


def add_metrics(rows, gbs, peaks):
    """Adds to every row its bound, step/bound, prefill GFLOP/s and share of
    the FMA peak, and the tok/s ratios of the table (see the module doc)."""
    def find(r, engine, dtype, same_family=True):
        for x in rows:
            if (x["engine"] == engine and x["dtype"] == dtype and x["shape"] == r["shape"] and x["ok"]
                    and x["model"] == r["model"] and (not same_family or x["family"] == r["family"])):
                return x
        return None

    def tps_of(x):
        return x["tps"] if x else None

    def ct2_best(r):
        return peer_best(rows, "CT2", r["model"], r["shape"], comparison_isa(r))

    for r in rows:
        ok = r["ok"] and r["tps"]
        bw_ms, fma_ms = row_bounds(r, gbs, peaks)
        r["bw_ms"], r["fma_ms"] = bw_ms, fma_ms
        known = [(v, n) for v, n in ((bw_ms, "bw"), (fma_ms, "fma")) if v is not None]
        r["bound_ms"], r["limit"] = max(known) if known else (None, "")
        r["step_bound"] = ratio(r["step"], r["bound_ms"])
        peak = row_fma_peak(r, peaks)
        flops = prefill_flops(r["prefill_tokens"], r["shape"][2], r["cfg"]) if r["prefill_tokens"] else None
        r["prefill_gflops"] = flops / (r["prefill_ms"] * 1e6) if (flops and r["prefill_ms"]) else None
        r["prefill_share"] = ratio(r["prefill_gflops"], peak)
        same = r["model"] == "125m" or r["cfg"].get("family") == "llama"  # the peers run OPT-125m or a Llama shape
        r["vs_fp32"] = ratio(r["tps"], tps_of(find(r, r["engine"], "float32"))) if ok and r["dtype"] != "float32" else None
        r["vs_bf16"] = ratio(r["tps"], tps_of(find(r, r["engine"], "bfloat16"))) if ok and r["dtype"] == "int8" else None
        isa = comparison_isa(r)
        r["vs_hf"] = ratio(r["tps"], tps_of(peer_row(rows, "HF", r["model"], r["shape"], r["dtype"], isa))) \
            if ok and same else None
        r["vs_ov"] = ratio(r["tps"], tps_of(peer_row(rows, "OV", r["model"], r["shape"], r["dtype"], isa))) \
            if ok and same else None
        r["vs_ct2"] = ratio(r["tps"], tps_of(peer_row(rows, "CT2", r["model"], r["shape"], r["dtype"], isa))) \
            if ok and same else None
        r["vs_ct2_int8"] = ratio(r["tps"], tps_of(peer_row(rows, "CT2", r["model"], r["shape"], "int8", isa))) \
            if ok and same else None
        r["vs_ct2_best"] = ratio(r["tps"], tps_of(ct2_best(r))) if ok and same else None


def shape_name(shape):
    B, S, P, R = shape
    return "%dx%d, %d->%d" % (B, S, P, R)


def main_table(rows):
    lines = ["| engine | kernels | model | dtype | B x S, P->R | tok/s | tok/s range | step ms | fwd ms | bound ms "
             "| step/bound | prefill GFLOP/s | of peak | vs fp32 | vs bf16 | vs HF | vs OV | vs CT2 | vs CT2 int8 "
             "| vs CT2 best | note |",
             "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        rng = "%.1f-%.1f" % (r["tps_min"], r["tps_max"]) if r["ok"] and r["tps_min"] is not None else "-"
        lines.append("| %s |" % " | ".join([
            r["engine"], r["family"] or "-", r["model"], r["dtype"], shape_name(r["shape"]),
            fmt(r["tps"] if r["ok"] else None, ".1f"), rng, fmt(r["step"], ".2f"), fmt(r["fwd"], ".2f"),
            "-" if r["bound_ms"] is None else "%.2f %s" % (r["bound_ms"], r["limit"]), fmt(r["step_bound"], ".2f"),
            fmt(r["prefill_gflops"], ".1f"), "-" if r["prefill_share"] is None else "%.0f%%" % (100 * r["prefill_share"]),
            fmt(r["vs_fp32"], ".2f"), fmt(r["vs_bf16"], ".2f"), fmt(r["vs_hf"], ".2f"), fmt(r["vs_ov"], ".2f"),
            fmt(r["vs_ct2"], ".2f"),
            fmt(r["vs_ct2_int8"], ".2f"), fmt(r["vs_ct2_best"], ".2f"), r["note"].replace("|", "/")]))
    return lines


def limit_of(r, value, threshold):
    """Which bound keeps row r from a tok/s (or step) target it misses by
    threshold / value: "bandwidth" or "FMA" when the step the target asks
    for, r's step x value / threshold, is below that bound, else "neither"
    (the bounds allow it; the engine is what is short)."""
    if r is None or not r["step"] or not value:
        return "?"
    needed = r["step"] * value / threshold
    for bound, name in ((r.get("bw_ms"), "bandwidth"), (r.get("fma_ms"), "FMA")):
        if bound is not None and needed < bound:
            return name
    return "neither"


B1_LINE = re.compile(r"^b1 (\S+) (fp32|bf16|int8) (\S+) threads=(\d+) prompt=(\d+) steps=(\d+): "
                     r"step/probe median ([0-9.]+) \(min ([0-9.]+), max ([0-9.]+)\) over (\d+) rounds")
B1_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "int8": "int8"}


def b1_results(paths):
    """bench_b1_bound's summary lines (tools/bench/bench_b1_bound.c) in the
    files at paths: one dict per line (model, dtype, family, threads, shape
    (1, 1, prompt, steps), ratio, lo, hi, rounds); other lines are skipped. A
    file without one such line is an error, so a failed run is not read as
    none."""
    out = []
    for path in paths:
        found = 0
        with open(path) as f:
            for text in f:
                m = B1_LINE.match(text)
                if not m:
                    continue
                found += 1
                out.append({"model": m.group(1), "dtype": B1_DTYPES[m.group(2)], "family": m.group(3),
                            "threads": int(m.group(4)), "shape": (1, 1, int(m.group(5)), int(m.group(6))),
                            "ratio": float(m.group(7)), "lo": float(m.group(8)), "hi": float(m.group(9)),
                            "rounds": int(m.group(10))})
        if not found:
            raise ValueError("%s: no bench_b1_bound summary line (\"b1 MODEL DTYPE ...: step/probe median ...\")" % path)
    return out


def targets(rows, b1=()):
    """The targets (docs/performance.md, "The targets"), one line per target, kernel family, model, shape
    and dtype where that applies: (target, family, model, shape, dtype,
    value text, threshold text, met, limit). A missing row is a line that
    says so (not met), unless the model never ran that precision at all
    (run_performance.sh runs OPT-1.3b without int8). Ratios of tok/s unless the target says step. The
    rows carry add_metrics' figures."""
    out = []
    bench = [r for r in rows if r["engine"] == "benchctl"]
    fams = sorted({r["family"] or "-" for r in bench})
    models = sorted({r["model"] for r in bench}, key=lambda m: param_count(next(
        r["cfg"] for r in bench if r["model"] == m)))
    shapes = sorted({r["shape"] for r in bench}, key=lambda s: (s[0] * s[1], s))

    def get(engine, fam, model, shape, dtype):
        for r in rows:
            if (r["engine"] == engine and (fam is None or (r["family"] or "-") == fam) and r["model"] == model
                    and r["shape"] == shape and r["dtype"] == dtype):
                return r
        return None

    ran = {(r["model"], r["dtype"]) for r in bench}  # a precision a model never ran is no target of it
    b1_of = {(e["model"], e["dtype"]): e for e in b1}  # target 1's paired figure, named on line 1 too

    def line(t, fam, model, shape, dtype, value, op, threshold, r, spec=".2f", limit=None, info=""):
        """One line; info (text for the reader, e.g. another comparison) goes
        to the last column after the bound that applies."""
        if value is None and (model, dtype) not in ran:
            return
        if value is None:
            out.append((t, fam, model, shape_name(shape), dtype, "no row", "%s %s" % (op, threshold), False,
                        "; ".join(x for x in ("?", info) if x)))
            return
        met = value <= threshold if op == "<=" else value >= threshold
        if limit is None:
            limit = "" if met else limit_of(r, value, threshold)
        out.append((t, fam, model, shape_name(shape), dtype, format(value, spec), "%s %s" % (op, threshold), met,
                    "; ".join(x for x in ("" if met else limit, info) if x)))

    def ok(r):
        return r if (r and r["ok"] and r["tps"]) else None

    for fam in fams:
        for model in models:
            for shape in shapes:
                rows_n = shape[0] * shape[1]
                f32, b16, i8, w8 = (get("benchctl", fam, model, shape, d)
                                    for d in ("float32", "bfloat16", "int8", "w8a8"))
                if not (f32 or b16 or i8 or w8):
                    continue
                llama = next(r["cfg"] for r in bench if r["model"] == model).get("family") == "llama"
                if rows_n == 1:  # 1: B=1 step within 1.25x the bandwidth bound (a Llama shape: int8 too)
                    for r, d in ((f32, "float32"), (b16, "bfloat16")) + (((i8, "int8"),) if llama else ()):
                        paired = b1_of.get((model, d))
                        line("1. B=1 step / bandwidth bound", fam, model, shape, d,
                             ratio(r["step"], r["bw_ms"]) if ok(r) else None, "<=", 1.25, r,
                             limit="bandwidth" if ok(r) and r["bw_ms"] and (r["fma_ms"] or 0) <= r["bw_ms"] else "FMA",
                             info="paired (1p): %.2f" % paired["ratio"] if paired else "")
                if rows_n in (1, 16):  # 2: bf16 over fp32
                    thr = 1.6 if rows_n == 1 else 1.0
                    v = ratio(ok(b16) and b16["tps"], ok(f32) and f32["tps"])
                    line("2. bf16 / fp32 tok/s", fam, model, shape, "bfloat16", v, ">=", thr, b16)
                if model == "125m":  # 3: against CTranslate2 (the peers run OPT-125m) on the family's ISA
                    isa = "avx2" if fam == "avx2" else "native"
                    mine = [r for r in (f32, b16, i8) if ok(r)]
                    best = max(mine, key=lambda r: r["tps"]) if mine else None

                    def ct2_rows(on):  # CT2's float32, int8 and fastest rows on ISA `on` (or native)
                        return (peer_row(rows, "CT2", model, shape, "float32", on),
                                peer_row(rows, "CT2", model, shape, "int8", on), peer_best(rows, "CT2", model, shape, on))
                    for what, r, dtype, thr, theirs, native in zip(
                            ("fp32 / CT2 float32", "int8 / CT2 int8", "best / CT2 best"), (f32, i8, best),
                            ("float32", "int8", best and best["dtype"]), (1.2, 1.0, 1.0), ct2_rows(isa),
                            ct2_rows("native")):
                        if what.startswith("best") and not (best and theirs):
                            continue
                        name, info = "3. benchctl %s tok/s" % what, ""
                        if theirs and theirs["isa"] != "native":  # say so, and give the native comparison too
                            name = "3. benchctl %s (CT2 held to %s) tok/s" % (what, theirs["isa"])
                            if native and ok(r):
                                info = "against native CT2: %.2f" % (r["tps"] / native["tps"])
                        line(name, fam, model, shape, dtype, ratio(ok(r) and r["tps"], theirs and theirs["tps"]),
                             ">=", thr, r, info=info)
                if rows_n >= 16:  # 4: large batches near max(bw, FMA) bound; prefill near the FMA peak
                    for r, d in ((f32, "float32"), (b16, "bfloat16"), (i8, "int8")):
                        line("4. step / max(bw, FMA) bound", fam, model, shape, d,
                             r["step_bound"] if ok(r) else None, "<=", 1.3, r,
                             limit=("bandwidth" if r and r["limit"] == "bw" else "FMA"))
                        line("4. prefill share of FMA peak", fam, model, shape, d,
                             r["prefill_share"] if ok(r) else None, ">=", 0.6, r, limit="neither")
                if llama:  # 7: a Llama shape against its peers at every shape, on the native ISA
                    # w8a8 (int8 weights and activations) is CT2 int8's arithmetic (int8_float32
                    # quantizes the activations too): its line when the run has w8a8 rows
                    for what, r, engine, dtype, thr in (
                            ("fp32 / CT2 float32", f32, "CT2", "float32", 1.2), ("int8 / CT2 int8", i8, "CT2", "int8", 1.2),
                            ("w8a8 / CT2 int8", w8, "CT2", "int8", 1.2),
                            ("fp32 / HF fp32", f32, "HF", "float32", 1.0), ("bf16 / HF bf16", b16, "HF", "bfloat16", 1.0)):
                        if r is None and what.startswith("w8a8"):
                            continue
                        theirs = peer_row(rows, engine, model, shape, dtype, "native")
                        line("7. benchctl %s tok/s" % what, fam, model, shape, r["dtype"] if r else dtype,
                             ratio(ok(r) and r["tps"], theirs and theirs["tps"]), ">=", thr, r,
                             info="" if theirs else "no %s row" % engine)
                if not llama and model != "125m" and rows_n in (1, 16):  # 5: the bigger model in the table
                    for r, d in ((f32, "float32"), (b16, "bfloat16")):
                        line("5. OPT-%s in the table, tok/s" % model, fam, model, shape, d,
                             r["tps"] if ok(r) else None, ">", 0, r, spec=".1f", limit="-")
                if rows_n == 1:  # 6: int8 over bf16 at B=1
                    line("6. int8 / bf16 tok/s", fam, model, shape, "int8",
                         ratio(ok(i8) and i8["tps"], ok(b16) and b16["tps"]), ">=", 1.6, i8)
    for e in b1:  # 1p: the same step paired in time with reads of its own weights (bench_b1_bound)
        value = e["ratio"]
        out.append(("1p. B=1 step / read of its weights, paired", e["family"], e["model"], shape_name(e["shape"]),
                    e["dtype"], "%.2f" % value, "<= 1.25", value <= 1.25,
                    "; ".join(x for x in ("" if value <= 1.25 else "bandwidth",
                                          "min %.2f, max %.2f over %d rounds" % (e["lo"], e["hi"], e["rounds"])) if x)))
    return out


def targets_table(lines_in):
    lines = ["| target | kernels | model | B x S, P->R | dtype | measured | threshold | met | not met: the bound "
             "that applies; notes |", "|---|---|---|---|---|---:|---|---|---|"]
    for t, fam, model, shape, dtype, value, thr, met, limit in lines_in:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            t, fam, model, shape, dtype, value, thr, "met" if met else "**not met**", limit))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bandwidth", action="append", default=[], help="bandwidth probe JSON; repeatable")
    ap.add_argument("--fmapeak", action="append", default=[], help="FMA-peak probe JSON; repeatable")
    ap.add_argument("--threads", type=int, default=2, help="thread count whose bandwidth and FMA peak set the bound")
    ap.add_argument("--markdown", help="also write the tables here")
    ap.add_argument("--b1", action="append", default=[],
                    help="bench_b1_bound's output (target 1's paired line); repeatable")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args(argv)

    rows = []
    for path in args.reports:
        rows += rows_from(path)[1]
    gbs = best_bandwidth(args.bandwidth, args.threads) if args.bandwidth else None
    peaks = fma_peaks(args.fmapeak, args.threads)

    order = {"benchctl": 0, "HF": 1, "OV": 2, "CT2": 3}
    dorder = {"float32": 0, "bfloat16": 1, "int8": 2}
    rows.sort(key=lambda r: (param_count(r["cfg"]), -r["shape"][0] * r["shape"][1], r["shape"],
                             order.get(r["engine"], 9), r["family"] or "", dorder.get(r["dtype"], 9)))
    add_metrics(rows, gbs, peaks)

    lines = []
    if gbs and any(r["cfg"].get("family") != "llama" for r in rows):
        lines.append("Bandwidth bound: best %d-thread read %.1f GB/s; OPT-125m decode-step weight bytes fp32 %.1f MB, "
                     "bf16 %.1f MB -> %.2f ms (fp32), %.2f ms (bf16), plus the KV cache's bytes per shape "
                     "(B=1, 128 -> 128: fp32 %.1f MB, bf16 %.1f MB)."
                     % (args.threads, gbs, opt_decode_read_bytes(4) / 1e6,
                        opt_decode_read_bytes(2) / 1e6,
                        opt_decode_read_bytes(4) / (gbs * 1e9) * 1e3,
                        opt_decode_read_bytes(2) / (gbs * 1e9) * 1e3,
                        opt_decode_kv_bytes((1, 1, 128, 128), 4) / 1e6,
                        opt_decode_kv_bytes((1, 1, 128, 128), 2) / 1e6))
    llama_models = {r["model"]: r["cfg"] for r in rows if r["cfg"].get("family") == "llama"}
    for name, cfg in sorted(llama_models.items()) if gbs else ():
        lines.append("Bandwidth bound: best %d-thread read %.1f GB/s; " % (args.threads, gbs) + "%s decode-step weight bytes fp32 %.1f MB, bf16 %.1f MB, int8 %.1f MB -> %.2f, %.2f, %.2f ms "
                     "at %.1f GB/s, plus the KV cache's (B=1, 128 -> 64: fp32 %.2f MB)."
                     % (name, decode_read_bytes(4, cfg) / 1e6, decode_read_bytes(2, cfg) / 1e6,
                        decode_read_bytes(1, cfg) / 1e6, decode_read_bytes(4, cfg) / (gbs * 1e6),
                        decode_read_bytes(2, cfg) / (gbs * 1e6), decode_read_bytes(1, cfg) / (gbs * 1e6), gbs,
                        decode_kv_bytes((1, 1, 128, 64), 4, cfg) / 1e6))
    if peaks:
        lines.append("FMA peak (%d threads): %s." % (args.threads, ", ".join(
            "%s %.1f GFLOP/s" % (k, v) for k, v in sorted(peaks.items()))))
    if gbs or peaks:
        lines.append("")
    lines += main_table(rows)
    lines += ["", "The targets (docs/performance.md):", ""]
    try:
        b1 = b1_results(args.b1)
    except (OSError, ValueError) as e:
        sys.stderr.write("perf_table: --b1: %s\n" % e)
        return 2
    lines += targets_table(targets(rows, b1))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
