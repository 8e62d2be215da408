#!/usr/bin/env python3
"""perf_table.py: reads benchctl's JSON reports of the native engine and of
the peers (the `worker` backend running transformers or CTranslate2,
docs/pyworkers.md) and the bandwidth probe's JSON, and prints one side-by-side
table (markdown) for docs/performance.md. Standard library only.

Columns, per engine x precision x shape (B = prompts, S = samples per
prompt, P -> R = prompt -> response tokens):
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
  vs HF, vs CT2 tok/s divided by the HF / CT2 row of the same precision and
                shape ("-" where that row is missing or failed).
  vs CT2 best   tok/s divided by the fastest CT2 row of the same shape, any
                compute type (CTranslate2 may lack a precision on a CPU).
  model         the OPT shape of the row (benchctl's model_shape; the peers
                run OPT-125m).
  bound ms      the fastest a decode step over the row's B x S rows could be:
                max(bandwidth bound, FMA bound), with "bw" or "fma" saying
                which is larger.
                  bandwidth bound = weight bytes a decode step reads / read
                bandwidth. Weight bytes: every layer's weights and biases, the
                final layer norm, one token and one position row, and the tied
                embedding matrix once as lm_head (opt_decode_read_bytes),
                at 4 B (fp32), 2 B (bf16) or 1 B (int8, approximate: biases,
                norms and scales are fp32). The KV cache's reads are left out.
                Bandwidth: the best --threads pass over every bandwidth JSON
                given (the fastest the machine was seen to read), so the bound
                is the tightest measured one.
                  FMA bound = 2 x rows x weight elements (one multiply-add per
                weight and row; the biases and norms counted too, < 0.1%) /
                the FMA peak (tools/bandwidth/fmapeak.c, best --threads pass)
                of the kernel family the row ran: benchctl's
                environment.cpu.kernels (avx512_bf16 counts its dpbf16 peak for
                bf16 weights and its fp32 FMA peak otherwise); for the peers,
                the fastest fp32 FMA family the probe measured.
  step/bound    step ms / bound ms.

Usage:
  perf_table.py --bandwidth bw1.json [--bandwidth bw2.json] [--fmapeak fp.json] [--threads 2]
             [--markdown out.md] report.json [report.json ...]
"""

import argparse
import json
import math
import shlex
import sys

ELEM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}

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


def median(xs):
    xs = sorted(x for x in xs if x is not None and math.isfinite(x))
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


WORKER_ENGINES = {"transformers": "HF", "ctranslate2": "CT2", "deepspeed": "DS"}


LABELS = dict(WORKER_ENGINES, native="benchctl", opt="benchctl")


def engine_of(doc, case):
    """benchctl, or the engine a worker backend ran, as HF / CT2 / DS: from
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


def model_of(doc):
    """(short name, shape for opt_param_count) of a report: benchctl's model_shape, else OPT-125m."""
    shape = doc.get("model_shape") or {}
    if not shape.get("hidden_size"):
        return "125m", OPT125M
    cfg = dict(vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
               num_hidden_layers=shape["layers"], ffn_dim=shape["ffn_size"],
               max_position_embeddings=shape["max_positions"])
    name = ((doc.get("backend_settings") or {}).get("model") or doc.get("model") or "?")
    return name, cfg


def rows_from(path):
    with open(path) as f:
        doc = json.load(f)
    model, cfg = model_of(doc)
    kernels = ((doc.get("environment") or {}).get("cpu") or {}).get("kernels")
    out = []
    for c in doc.get("cases", []):
        engine = engine_of(doc, c)
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
            "step": step_ms(profiles) if profiles else None,
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
    k = r["kernels"]
    if k == "avx512_bf16" and r["dtype"] != "bfloat16":
        k = "avx512"
    if k:
        return peaks.get(k)
    fp32 = [peaks[f] for f in ("avx512", "avx2") if f in peaks]
    return max(fp32) if fp32 else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bandwidth", action="append", default=[], help="bandwidth probe JSON; repeatable")
    ap.add_argument("--fmapeak", action="append", default=[], help="FMA-peak probe JSON; repeatable")
    ap.add_argument("--threads", type=int, default=2, help="thread count whose bandwidth and FMA peak set the bound")
    ap.add_argument("--markdown", help="also write the table here")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()

    rows = []
    for path in args.reports:
        rows += rows_from(path)[1]
    gbs = best_bandwidth(args.bandwidth, args.threads) if args.bandwidth else None
    peaks = fma_peaks(args.fmapeak, args.threads)

    def ref(engine, dtype, shape):
        for r in rows:
            if r["engine"] == engine and r["dtype"] == dtype and r["shape"] == shape and r["ok"] and r["model"] == "125m":
                return r["tps"]
        return None

    order = {"benchctl": 0, "HF": 1, "CT2": 2}
    dorder = {"float32": 0, "bfloat16": 1, "int8": 2}
    rows.sort(key=lambda r: (opt_param_count(r["cfg"]), -r["shape"][0] * r["shape"][1], r["shape"],
                             dorder.get(r["dtype"], 9), order.get(r["engine"], 9)))

    lines = []
    if gbs:
        lines.append("Bandwidth bound: best %d-thread read %.1f GB/s; OPT-125m decode-step weight bytes fp32 %.1f MB, "
                     "bf16 %.1f MB -> bound %.2f ms (fp32), %.2f ms (bf16)."
                     % (args.threads, gbs, opt_decode_read_bytes(4) / 1e6,
                        opt_decode_read_bytes(2) / 1e6,
                        opt_decode_read_bytes(4) / (gbs * 1e9) * 1e3,
                        opt_decode_read_bytes(2) / (gbs * 1e9) * 1e3))
    if peaks:
        lines.append("FMA peak (%d threads): %s." % (args.threads, ", ".join(
            "%s %.1f GFLOP/s" % (k, v) for k, v in sorted(peaks.items()))))
    if gbs or peaks:
        lines.append("")
    lines.append("| engine | model | dtype | B x S, P->R | tok/s | tok/s range | step ms | fwd ms | vs HF | vs CT2 "
                 "| vs CT2 best | bound ms | step/bound | note |")
    lines.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        B, S, P, R = r["shape"]
        same = r["model"] == "125m"  # the peers run OPT-125m
        hf = ref("HF", r["dtype"], r["shape"]) if same else None
        ct = ref("CT2", r["dtype"], r["shape"]) if same else None
        vs_hf = r["tps"] / hf if (r["ok"] and hf and r["tps"]) else None
        vs_ct = r["tps"] / ct if (r["ok"] and ct and r["tps"]) else None
        ct_all = [x["tps"] for x in rows if x["engine"] == "CT2" and x["shape"] == r["shape"] and x["ok"]
                  and x["tps"] and same]
        vs_ct_best = r["tps"] / max(ct_all) if (r["ok"] and ct_all and r["tps"]) else None
        ratio = bound_ms = None
        limit = ""
        if r["dtype"] in ELEM_BYTES:
            bw_ms = (opt_decode_read_bytes(ELEM_BYTES[r["dtype"]], r["cfg"]) / (gbs * 1e9) * 1e3
                     if gbs else None)
            peak = row_fma_peak(r, peaks)
            fma_ms = (2.0 * B * S * opt_decode_read_bytes(1, r["cfg"]) / (peak * 1e9) * 1e3
                      if peak else None)
            known = [(v, n) for v, n in ((bw_ms, "bw"), (fma_ms, "fma")) if v is not None]
            if known:
                bound_ms, limit = max(known)
                ratio = r["step"] / bound_ms if r["step"] else None
        rng = "%.1f-%.1f" % (r["tps_min"], r["tps_max"]) if r["ok"] and r["tps_min"] is not None else "-"
        lines.append("| %s | %s | %s | %dx%d, %d->%d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["engine"], r["model"], r["dtype"], B, S, P, R,
            fmt(r["tps"] if r["ok"] else None, ".1f"), rng, fmt(r["step"], ".2f"), fmt(r["fwd"], ".2f"),
            fmt(vs_hf, ".2f"), fmt(vs_ct, ".2f"), fmt(vs_ct_best, ".2f"),
            "-" if bound_ms is None else "%.2f %s" % (bound_ms, limit), fmt(ratio, ".2f"),
            r["note"].replace("|", "/")))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
