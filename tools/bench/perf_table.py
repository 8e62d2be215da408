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
  step/bound    B=1, S=1 rows only: step ms / bandwidth bound, where
                bound ms = weight bytes a decode step reads / read bandwidth.
                Weight bytes: every layer's weights and biases, the final
                layer norm, one token and one position row, and the tied
                embedding matrix once as lm_head (opt_decode_read_bytes),
                at 4 B (fp32), 2 B (bf16) or 1 B (int8, approximate: CT2 keeps
                biases and norms in fp32). Bandwidth: the best 2-thread pass
                over every bandwidth JSON given (the fastest the machine was
                seen to read), so the bound is the tightest measured one.

Usage:
  perf_table.py --bandwidth bw1.json [--bandwidth bw2.json] [--threads 2]
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


def rows_from(path):
    with open(path) as f:
        doc = json.load(f)
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


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bandwidth", action="append", default=[], help="bandwidth probe JSON; repeatable")
    ap.add_argument("--threads", type=int, default=2, help="thread count whose bandwidth sets the bound")
    ap.add_argument("--markdown", help="also write the table here")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()

    rows = []
    for path in args.reports:
        rows += rows_from(path)[1]
    gbs = best_bandwidth(args.bandwidth, args.threads) if args.bandwidth else None

    def ref(engine, dtype, shape):
        for r in rows:
            if r["engine"] == engine and r["dtype"] == dtype and r["shape"] == shape and r["ok"]:
                return r["tps"]
        return None

    order = {"benchctl": 0, "HF": 1, "CT2": 2}
    dorder = {"float32": 0, "bfloat16": 1, "int8": 2}
    rows.sort(key=lambda r: (-r["shape"][0] * r["shape"][1], r["shape"], dorder.get(r["dtype"], 9),
                             order.get(r["engine"], 9)))

    lines = []
    if gbs:
        lines.append("Bandwidth bound: best %d-thread read %.1f GB/s; decode-step weight bytes fp32 %.1f MB, "
                     "bf16 %.1f MB -> bound %.2f ms (fp32), %.2f ms (bf16)."
                     % (args.threads, gbs, opt_decode_read_bytes(4) / 1e6,
                        opt_decode_read_bytes(2) / 1e6,
                        opt_decode_read_bytes(4) / (gbs * 1e9) * 1e3,
                        opt_decode_read_bytes(2) / (gbs * 1e9) * 1e3))
        lines.append("")
    lines.append("| engine | dtype | B x S, P->R | tok/s | tok/s range | step ms | fwd ms | vs HF | vs CT2 "
                 "| vs CT2 best | step/bound | note |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        B, S, P, R = r["shape"]
        hf = ref("HF", r["dtype"], r["shape"])
        ct = ref("CT2", r["dtype"], r["shape"])
        vs_hf = r["tps"] / hf if (r["ok"] and hf and r["tps"]) else None
        vs_ct = r["tps"] / ct if (r["ok"] and ct and r["tps"]) else None
        ct_all = [x["tps"] for x in rows if x["engine"] == "CT2" and x["shape"] == r["shape"] and x["ok"]
                  and x["tps"]]
        vs_ct_best = r["tps"] / max(ct_all) if (r["ok"] and ct_all and r["tps"]) else None
        ratio = None
        if B == 1 and S == 1 and gbs and r["step"] and r["dtype"] in ELEM_BYTES:
            bound_ms = opt_decode_read_bytes(ELEM_BYTES[r["dtype"]]) / (gbs * 1e9) * 1e3
            ratio = r["step"] / bound_ms
        rng = "%.1f-%.1f" % (r["tps_min"], r["tps_max"]) if r["ok"] and r["tps_min"] is not None else "-"
        lines.append("| %s | %s | %dx%d, %d->%d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["engine"], r["dtype"], B, S, P, R,
            fmt(r["tps"] if r["ok"] else None, ".1f"), rng, fmt(r["step"], ".2f"), fmt(r["fwd"], ".2f"),
            fmt(vs_hf, ".2f"), fmt(vs_ct, ".2f"), fmt(vs_ct_best, ".2f"), fmt(ratio, ".2f"),
            r["note"].replace("|", "/")))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
