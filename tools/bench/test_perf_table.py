#!/usr/bin/env python3
"""test_perf_table.py: checks tools/bench/perf_table.py with the standard
library (ctest: pyworker_perf_table):
- OPT-125m's parameter count is the published 125,239,296 and the decode-step
  read bytes are derived from it; the KV cache bytes and attention flops of a
  decode step count each prompt's tokens once and R/2 generated tokens per row;
- each case's engine comes from its backend label, else from the run's
  backend (a worker's from the last word of its command), CT2's compute type
  from its settings;
- the decode step is (generation_ms - prefill_forward_ms) / num_decode_forwards;
- prefill GFLOP/s counts the layers' weights per prompt token and the lm_head
  on each prompt's last position only;
- the targets table, from small fixture reports and probe JSONs: a
  target met, one not met with the bound that applies, a missing row;
- a peer's ISA comes from the ISA variables in its `env` setting; benchctl's
  avx2 family is compared with the peers held to AVX2 (target 3 too, which
  then names them and gives the native comparison), every other family with
  the native peers, and the avx2 family falls back to the native peers where
  no AVX2 row was run; a peer held to AVX2 gets the avx2 FMA peak;
- OpenVINO's rows (the openvino worker) are engine OV, sorted after HF, and
  benchctl's rows get "vs OV" against OV's row of the same precision and
  shape (none where OV has no such row).
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_table  # noqa: E402


def report(backend, settings, dtype, gens):
    profiles = [{"generation_ms": g, "prefill_forward_ms": 20.0, "decode_forward_ms": g - 25.0,
                 "num_decode_forwards": 127} for g in gens]
    case = {"batch_size": 1, "samples_per_prompt": 1, "prompt_length": 128, "requested_response_length": 128,
            "dtype": dtype, "status": "ok", "profiles": profiles,
            "summary": {"tokens_per_second": {"p50": 128 / 1.3}},
            "extended": {"stats": {"tokens_per_second": {"min": 128 / 1.31, "max": 128 / 1.29}}}}
    return {"backend": backend, "backend_settings": settings, "cases": [case]}


def rows(doc):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return perf_table.rows_from(path)[1]


def write(d, name, doc):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def bench_report(kernels, dtype, B, S, step_ms, prefill_ms=1000.0, tps=None):
    """A benchctl report with one case: 128 -> 128 tokens, every iteration
    with the given decode step and prefill."""
    g = prefill_ms + 127 * step_ms
    profiles = [{"generation_ms": g, "prefill_forward_ms": prefill_ms, "decode_forward_ms": 127 * step_ms,
                 "num_decode_forwards": 127, "prefill_tokens_per_second": B * S * 128 / (prefill_ms / 1e3)}] * 3
    case = {"batch_size": B, "samples_per_prompt": S, "prompt_length": 128, "requested_response_length": 128,
            "dtype": dtype, "status": "ok", "profiles": profiles,
            "summary": {"tokens_per_second": {"p50": tps or B * S * 128 / (g / 1e3)}}}
    return {"backend": "opt", "backend_settings": {"model": "125m"}, "environment": {"cpu": {"kernels": kernels}},
            "cases": [case]}


AVX2_ENV = "ATEN_CPU_CAPABILITY=avx2 CT2_FORCE_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2"


def ct2_report(compute_type, env, B, S, tps):
    """A CTranslate2 worker report with one case of B x S rows at tps tok/s."""
    doc = bench_report(None, "float32", B, S, 10.0, tps=tps)
    doc.update(backend="worker", backend_settings={"command": "tools/peers-worker ctranslate2", "env": env,
                                                   "compute_type": compute_type})
    doc["cases"][0]["backend"] = "worker"  # as benchctl reports a case of its one backend
    del doc["environment"]
    return doc


class PerfTable(unittest.TestCase):
    def test_opt125m_sizes(self):
        self.assertEqual(perf_table.opt_param_count(), 125239296)
        self.assertEqual(perf_table.opt_decode_read_bytes(1), 125239296 - 2050 * 768 + 768 + 768)
        self.assertEqual(perf_table.opt_decode_read_bytes(4), 4 * perf_table.opt_decode_read_bytes(1))

    def test_kv_cache_and_attention(self):
        # 16 prompts x 4 samples, 128 -> 128: 16 x 128 prompt tokens + 64 rows x 64 generated on average
        self.assertEqual(perf_table.opt_decode_kv_tokens((16, 4, 128, 128)), 16 * 128 + 64 * 64)
        self.assertEqual(perf_table.opt_decode_kv_bytes((16, 4, 128, 128), 4), 2 * 12 * 768 * 4 * 6144)
        self.assertEqual(perf_table.opt_decode_kv_bytes((1, 1, 128, 128), 2), 2 * 12 * 768 * 2 * 192)
        # one row: 192 keys on average, 12 layers x 768 x (score + V sum) x 2 flops
        self.assertEqual(perf_table.opt_decode_attention_flops((1, 1, 128, 128)), 4 * 12 * 768 * 192)
        r = {"dtype": "int8", "shape": (4, 4, 128, 128), "cfg": perf_table.OPT125M, "kernels": "avx2"}
        bw_ms, fma_ms = perf_table.row_bounds(r, 50.0, {"avx2": 100.0})
        # int8 weights (1 B) with an fp32 cache (4 B)
        self.assertAlmostEqual(bw_ms, (perf_table.opt_decode_read_bytes(1)
                                       + 2 * 12 * 768 * 4 * (4 * 128 + 16 * 64)) / 50e9 * 1e3)
        self.assertAlmostEqual(fma_ms, (2 * 16 * perf_table.opt_decode_read_bytes(1)
                                        + 4 * 12 * 768 * 16 * 192) / 100e9 * 1e3)

    def test_engines_and_step(self):
        r = rows(report("opt", {"model": "125m"}, "bfloat16", (1290.0, 1300.0, 1310.0)))[0]
        self.assertEqual((r["engine"], r["dtype"]), ("benchctl", "bfloat16"))
        self.assertAlmostEqual(r["step"], (1300.0 - 20.0) / 127)
        self.assertAlmostEqual(r["fwd"], (1300.0 - 25.0) / 127)
        hf = rows(report("worker", {"command": "tools/peers-worker transformers"}, "float32", (1300.0,)))[0]
        self.assertEqual(hf["engine"], "HF")
        ct = rows(report("worker", {"command": "tools/peers-worker  ctranslate2", "compute_type": "int8_float32"},
                         "float32", (1300.0,)))[0]
        self.assertEqual((ct["engine"], ct["dtype"], ct["note"]), ("CT2", "int8", "compute int8_float32"))

    def test_labels_of_a_run_over_backends(self):
        doc = report("opt", {"model": "125m"}, "float32", (1300.0,))
        doc["cases"] = [dict(doc["cases"][0], backend=b) for b in ("native", "transformers", "ctranslate2", "x")]
        self.assertEqual([r["engine"] for r in rows(doc)], ["benchctl", "HF", "CT2", "x"])


    def test_qwen2_shape(self):
        # Qwen2.5-0.5B as the llama backend reports it; per layer by hand: q 896^2 + 896, k and v
        # 896 x 128 + 128 each (2 KV heads of 64), o 896^2, gate/up/down 3 x 896 x 4864, 2 norms
        shape = {"family": "llama", "parameters": 494032768, "layers": 24, "hidden_size": 896, "heads": 14,
                 "ffn_size": 4864, "vocab_size": 151936, "max_positions": 32768}
        doc = {"model_shape": shape, "backend_settings": {"model": "qwen2.5-0.5b"}}
        name, cfg = perf_table.model_of(doc)
        self.assertEqual(name, "qwen2.5-0.5b")
        layer = (896 * 896 + 896) + 2 * (896 * 128 + 128) + 896 * 896 + 3 * 896 * 4864 + 2 * 896
        self.assertEqual(perf_table.llama_embedding_reads(cfg), (1, 24 * layer))  # tied
        self.assertEqual(24 * layer + 151936 * 896 + 896, 494032768)
        self.assertEqual(perf_table.decode_read_bytes(2, cfg), 2 * (24 * layer + 896 + 151936 * 896 + 896))
        self.assertEqual(perf_table.decode_kv_bytes((1, 1, 128, 64), 4, cfg), 2 * 24 * 128 * 4 * (128 + 32))
        self.assertAlmostEqual(perf_table.prefill_flops(128, 128, cfg), 2.0 * (24 * layer * 128 + 151936 * 896))
        # untied: one more V x H table, not read by a decode step
        untied = dict(shape, parameters=494032768 + 151936 * 896)
        _, cfg2 = perf_table.model_of(dict(doc, model_shape=untied))
        self.assertEqual(perf_table.llama_embedding_reads(cfg2), (2, 24 * layer))
        self.assertEqual(perf_table.decode_read_bytes(1, cfg2), perf_table.decode_read_bytes(1, cfg))
        # target 7 against the peers of the same shape: benchctl fp32 at 1.5x CT2 float32 (met), 1.1x HF (met)
        def llama(doc):
            doc.update(model_shape=shape)
            doc["backend_settings"]["model"] = "qwen2.5-0.5b"
            return doc
        with tempfile.TemporaryDirectory() as d:
            hf = bench_report(None, "float32", 1, 1, 10.0, tps=10.0)
            hf.update(backend="worker", backend_settings={"command": "tools/peers-worker transformers"})
            del hf["environment"]
            native = llama(bench_report("avx512_bf16", "float32", 1, 1, 80.0, tps=11.0))
            native["backend"] = native["cases"][0]["backend"] = "llama"  # labelled benchctl
            paths = [write(d, "n.json", native),
                     write(d, "c.json", llama(ct2_report("", "", 1, 1, 11.0 / 1.5))),
                     write(d, "h.json", llama(hf))]
            rs = []
            for path in paths:
                rs += perf_table.rows_from(path)[1]
            perf_table.add_metrics(rs, 20.0, {})
            got = {t[0]: (t[5], t[7]) for t in perf_table.targets(rs) if t[0].startswith("7.")}
        self.assertEqual(got["7. benchctl fp32 / CT2 float32 tok/s"], ("1.50", True))
        self.assertEqual(got["7. benchctl fp32 / HF fp32 tok/s"], ("1.10", True))
        self.assertEqual(got["7. benchctl int8 / CT2 int8 tok/s"] if "7. benchctl int8 / CT2 int8 tok/s" in got
                         else None, None)  # benchctl ran no int8: no line
        self.assertNotIn("7. benchctl w8a8 / CT2 int8 tok/s", got)  # nor w8a8
        # w8a8 at 1.3x CT2 int8 (int8_float32): its own line, met
        with tempfile.TemporaryDirectory() as d:
            w8 = llama(bench_report("avx512_bf16", "w8a8", 1, 1, 20.0, tps=13.0))
            w8["backend"] = w8["cases"][0]["backend"] = "llama"
            paths = [write(d, "w.json", w8), write(d, "c8.json", llama(ct2_report("int8", "", 1, 1, 10.0)))]
            rs = []
            for path in paths:
                rs += perf_table.rows_from(path)[1]
            perf_table.add_metrics(rs, 20.0, {})
            got = {t[0]: (t[4], t[5], t[7]) for t in perf_table.targets(rs) if t[0].startswith("7.")}
        self.assertEqual(got["7. benchctl w8a8 / CT2 int8 tok/s"], ("w8a8", "1.30", True))

    def test_prefill_flops(self):
        # OPT-125m's layers: 12 x (4 x (768^2 + 768) + 2 x 768 x 3072 + 3072 + 768 + 4 x 768)
        layers = 12 * (4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 4 * 768)
        self.assertEqual(layers, 85054464)
        # 2 prompts of 128 tokens: every token through the layers, the lm_head on 2 positions
        self.assertAlmostEqual(perf_table.opt_prefill_flops(256, 128), 2.0 * (layers * 256 + 50272 * 768 * 2))

    def test_targets(self):
        # bandwidth 50 GB/s: B=1 bound 9.89 ms fp32, 4.95 ms bf16; avx512 FMA peak 100 GFLOP/s
        bw = {"tool": "bandwidth", "results": [{"threads": 2, "best_gb_per_s": 50.0}]}
        fp = {"tool": "fmapeak", "results": [{"kernel": "avx512", "threads": 2, "best_gflop_per_s": 100.0}]}
        one = (1, 1, 128, 128)
        bound32 = (perf_table.opt_decode_read_bytes(4) + perf_table.opt_decode_kv_bytes(one, 4)) / 50e9 * 1e3
        bound16 = (perf_table.opt_decode_read_bytes(2) + perf_table.opt_decode_kv_bytes(one, 2)) / 50e9 * 1e3
        # 16 rows, fp32: FMA bound (2 x 16 x 123.7 M + attention) / 100 GFLOP/s = 40.1 ms
        fma16 = (2 * 16 * perf_table.opt_decode_read_bytes(1)
                 + perf_table.opt_decode_attention_flops((4, 4, 128, 128))) / 100e9 * 1e3
        with tempfile.TemporaryDirectory() as d:
            reports = [
                write(d, "f32.json", bench_report("avx512", "float32", 1, 1, 1.2 * bound32, tps=100.0)),  # met
                write(d, "bf16.json", bench_report("avx512", "bfloat16", 1, 1, 1.5 * bound16, tps=150.0)),  # not
                # 16 rows, fp32, prefill at 80% of the peak
                write(d, "f32_16.json", bench_report(
                    "avx512", "float32", 4, 4, 1.1 * fma16,
                    prefill_ms=perf_table.opt_prefill_flops(2048, 128) / (0.8 * 100e9) * 1e3)),
            ]
            args = ["--bandwidth", write(d, "bw.json", bw), "--fmapeak", write(d, "fp.json", fp),
                    "--markdown", os.path.join(d, "t.md")] + reports
            with open(os.devnull, "w") as null:
                old, sys.stdout = sys.stdout, null
                try:
                    self.assertEqual(perf_table.main(args), 0)
                finally:
                    sys.stdout = old
            with open(os.path.join(d, "t.md")) as f:
                text = f.read()
            rows = []
            for p in reports:
                rows += perf_table.rows_from(p)[1]
        perf_table.add_metrics(rows, 50.0, {"avx512": 100.0})
        got = {(t[0], t[3], t[4]): t for t in perf_table.targets(rows)}
        t1 = got[("1. B=1 step / bandwidth bound", "1x1, 128->128", "float32")]
        self.assertEqual((t1[5], t1[7], t1[8]), ("1.20", True, ""))
        t1 = got[("1. B=1 step / bandwidth bound", "1x1, 128->128", "bfloat16")]
        self.assertEqual((t1[5], t1[7], t1[8]), ("1.50", False, "bandwidth"))
        # bf16 / fp32 = 1.5 < 1.6; the bounds allow 2x, so nothing but the engine stops it
        t2 = got[("2. bf16 / fp32 tok/s", "1x1, 128->128", "bfloat16")]
        self.assertEqual((t2[5], t2[7], t2[8]), ("1.50", False, "neither"))
        t4 = got[("4. step / max(bw, FMA) bound", "4x4, 128->128", "float32")]
        self.assertEqual((t4[5], t4[7]), ("1.10", True))
        t4 = got[("4. prefill share of FMA peak", "4x4, 128->128", "float32")]
        self.assertEqual((t4[5], t4[7]), ("0.80", True))
        t4 = got[("4. step / max(bw, FMA) bound", "4x4, 128->128", "bfloat16")]
        self.assertEqual((t4[5], t4[7]), ("no row", False))
        # int8 never ran here: no int8 lines at all (a bf16 row missing at 16 rows is a line, above)
        self.assertNotIn(("6. int8 / bf16 tok/s", "1x1, 128->128", "int8"), got)
        self.assertNotIn(("4. step / max(bw, FMA) bound", "4x4, 128->128", "int8"), got)
        # no CT2 report: the comparison is a line that says so, not met
        t3 = got[("3. benchctl fp32 / CT2 float32 tok/s", "1x1, 128->128", "float32")]
        self.assertEqual((t3[5], t3[7]), ("no row", False))
        self.assertIn("| 1. B=1 step / bandwidth bound | avx512 | 125m | 1x1, 128->128 | bfloat16 | 1.50 | <= 1.25 "
                      "| **not met** | bandwidth |", text)
        f32_16 = [r for r in rows if r["shape"][0] == 4][0]
        self.assertAlmostEqual(f32_16["prefill_share"], 0.8)

    def test_b1_paired_lines(self):
        # bench_b1_bound's summary lines become target 1's paired lines; its round lines are skipped
        out = ("bench_b1_bound: qwen2.5-0.5b, 2 threads; 24 rounds per precision, ...\n"
               "  round  1: step    53.00 ms (median of 16), probe    49.00 ms ( 40.5 GB/s, median of 6) -> 1.082\n"
               "b1 qwen2.5-0.5b fp32 avx512_bf16 threads=2 prompt=128 steps=16: step/probe median 1.085 "
               "(min 1.029, max 1.344) over 24 rounds; step 53.10 ms, probe 48.84 ms (40.6 GB/s of 1984.5 MB, "
               "read kernel avx512)\n"
               "b1 qwen2.5-0.5b int8 avx512_bf16 threads=2 prompt=128 steps=16: step/probe median 1.300 "
               "(min 0.911, max 1.376) over 24 rounds; step 15.04 ms, probe 12.82 ms (39.4 GB/s of 504.5 MB, "
               "read kernel avx512)\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "b1.txt")
            with open(path, "w") as f:
                f.write(out)
            b1 = perf_table.b1_results([path])
            empty = os.path.join(d, "empty.txt")
            with open(empty, "w") as f:
                f.write("bench_b1_bound: rollout: no memory\n")
            with self.assertRaises(ValueError):
                perf_table.b1_results([empty])
        self.assertEqual([(e["dtype"], e["shape"], e["rounds"]) for e in b1],
                         [("float32", (1, 1, 128, 16), 24), ("int8", (1, 1, 128, 16), 24)])
        got = {t[4]: t for t in perf_table.targets([], b1)}
        self.assertEqual(got["float32"][:8], ("1p. B=1 step / read of its weights, paired", "avx512_bf16",
                                              "qwen2.5-0.5b", "1x1, 128->16", "float32", "1.08", "<= 1.25", True))
        self.assertEqual(got["float32"][8], "min 1.03, max 1.34 over 24 rounds")
        self.assertEqual((got["int8"][5], got["int8"][7]), ("1.30", False))
        self.assertEqual(got["int8"][8], "bandwidth; min 0.91, max 1.38 over 24 rounds")
        # line 1 of the same model and precision names the paired figure
        shape = {"family": "llama", "parameters": 494032768, "layers": 24, "hidden_size": 896, "heads": 14,
                 "ffn_size": 4864, "vocab_size": 151936, "max_positions": 32768}
        native = bench_report("avx512_bf16", "float32", 1, 1, 80.0, tps=11.0)
        native.update(backend="llama", model_shape=shape, backend_settings={"model": "qwen2.5-0.5b"})
        native["cases"][0]["backend"] = "llama"
        with tempfile.TemporaryDirectory() as d:
            rows = perf_table.rows_from(write(d, "q.json", native))[1]
        perf_table.add_metrics(rows, 40.0, {})
        t1 = [t for t in perf_table.targets(rows, b1) if t[0].startswith("1. ")]
        self.assertEqual([(t[4], t[8]) for t in t1], [("float32", "bandwidth; paired (1p): 1.08")])

    def test_peer_isa(self):
        self.assertEqual(perf_table.peer_isa(""), "native")
        self.assertEqual(perf_table.peer_isa(None), "native")
        self.assertEqual(perf_table.peer_isa("OMP_NUM_THREADS=2"), "native")
        self.assertEqual(perf_table.peer_isa("OMP_NUM_THREADS=2 " + AVX2_ENV), "avx2")
        self.assertEqual(perf_table.peer_isa("CT2_FORCE_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX512"), "avx2+avx512")
        r = rows(ct2_report("int8", "MKL_ENABLE_INSTRUCTIONS=AVX2", 1, 1, 50.0))[0]
        self.assertEqual((r["engine"], r["dtype"], r["isa"], r["family"]), ("CT2", "int8", "avx2", "avx2"))
        # a matrix that varies env: the case's own backend_settings win
        doc = ct2_report("", AVX2_ENV, 1, 1, 50.0)
        doc["cases"][0]["backend_settings"] = {"env": ""}
        self.assertEqual(rows(doc)[0]["isa"], "native")
        # a run over several backends: the run's settings are one backend's, not the case's
        doc = ct2_report("", AVX2_ENV, 1, 1, 50.0)
        doc["cases"][0]["backend"] = "ctranslate2"
        self.assertEqual(rows(doc)[0]["isa"], "native")
        self.assertEqual(rows(report("opt", {"model": "125m"}, "float32", (1300.0,)))[0]["isa"], None)

    def test_peers_matched_by_isa(self):
        one, sixteen = (1, 1, 128, 128), (4, 4, 128, 128)
        docs = [
            bench_report("avx2", "float32", 1, 1, 10.0, tps=100.0),
            bench_report("avx2", "int8", 1, 1, 5.0, tps=120.0),
            bench_report("avx512", "float32", 1, 1, 10.0, tps=150.0),
            bench_report("avx2", "float32", 4, 4, 30.0, tps=400.0),
            # CT2 natively and held to AVX2 at B=1; natively only at 16 rows
            ct2_report("", "", 1, 1, 90.0),
            ct2_report("", AVX2_ENV, 1, 1, 75.0),
            ct2_report("int8", "", 1, 1, 125.0),
            ct2_report("int8", AVX2_ENV, 1, 1, 110.0),
            ct2_report("", "", 4, 4, 300.0),
            # 64 rows: CT2 float32 held to AVX2, int8 natively only
            bench_report("avx2", "int8", 16, 4, 100.0, tps=250.0),
            ct2_report("", AVX2_ENV, 16, 4, 200.0),
            ct2_report("int8", "", 16, 4, 260.0),
        ]
        rs = []
        for doc in docs:
            rs += rows(doc)
        peaks = {"avx2": 100.0, "avx512": 200.0}
        perf_table.add_metrics(rs, 50.0, peaks)

        def row(engine, fam, dtype, shape):
            return [r for r in rs if r["engine"] == engine and r["family"] == fam and r["dtype"] == dtype
                    and r["shape"] == shape][0]
        # avx2 family against CT2 held to AVX2 (not the native 90 and 125 tok/s)
        self.assertAlmostEqual(row("benchctl", "avx2", "float32", one)["vs_ct2"], 100.0 / 75.0)
        self.assertAlmostEqual(row("benchctl", "avx2", "int8", one)["vs_ct2"], 120.0 / 110.0)
        self.assertAlmostEqual(row("benchctl", "avx2", "float32", one)["vs_ct2_int8"], 100.0 / 110.0)
        self.assertAlmostEqual(row("benchctl", "avx2", "int8", one)["vs_ct2_best"], 120.0 / 110.0)
        # the avx512 family against the native CT2
        self.assertAlmostEqual(row("benchctl", "avx512", "float32", one)["vs_ct2"], 150.0 / 90.0)
        self.assertAlmostEqual(row("benchctl", "avx512", "float32", one)["vs_ct2_best"], 150.0 / 125.0)
        # no CT2 held to AVX2 at 16 rows: the native one
        self.assertAlmostEqual(row("benchctl", "avx2", "float32", sixteen)["vs_ct2"], 400.0 / 300.0)
        # CT2's best: each compute type's row chosen alone (the native int8, no AVX2 one)
        self.assertAlmostEqual(row("benchctl", "avx2", "int8", (16, 4, 128, 128))["vs_ct2_best"], 250.0 / 260.0)
        # the peers among themselves, ISA by ISA
        self.assertAlmostEqual(row("CT2", "avx2", "int8", one)["vs_fp32"], 110.0 / 75.0)
        self.assertAlmostEqual(row("CT2", "native", "int8", one)["vs_fp32"], 125.0 / 90.0)
        # a peer held to AVX2 is held to the avx2 FMA peak, a native one to the fastest
        flops = 2 * perf_table.opt_decode_read_bytes(1) + perf_table.opt_decode_attention_flops(one)
        self.assertAlmostEqual(row("CT2", "avx2", "float32", one)["fma_ms"], flops / 100e9 * 1e3)
        self.assertAlmostEqual(row("CT2", "native", "float32", one)["fma_ms"], flops / 200e9 * 1e3)

        got = {(t[0], t[1], t[3], t[4]): t for t in perf_table.targets(rs)}
        held = "3. benchctl fp32 / CT2 float32 (CT2 held to avx2) tok/s"
        t3 = got[(held, "avx2", "1x1, 128->128", "float32")]
        # 1.33 >= 1.2 against CT2 on AVX2; 1.11 against the native CT2, for information
        self.assertEqual((t3[5], t3[7], t3[8]), ("1.33", True, "against native CT2: 1.11"))
        t3 = got[("3. benchctl int8 / CT2 int8 (CT2 held to avx2) tok/s", "avx2", "1x1, 128->128", "int8")]
        self.assertEqual((t3[5], t3[7]), ("1.09", True))
        self.assertIn("against native CT2: 0.96", t3[8])
        t3 = got[("3. benchctl best / CT2 best (CT2 held to avx2) tok/s", "avx2", "1x1, 128->128", "int8")]
        self.assertEqual(t3[5], "1.09")
        t3 = got[("3. benchctl fp32 / CT2 float32 tok/s", "avx512", "1x1, 128->128", "float32")]
        self.assertEqual((t3[5], t3[7], t3[8]), ("1.67", True, ""))
        self.assertNotIn((held, "avx512", "1x1, 128->128", "float32"), got)
        t3 = got[("3. benchctl fp32 / CT2 float32 tok/s", "avx2", "4x4, 128->128", "float32")]
        self.assertEqual(t3[5], "1.33")
        self.assertNotIn((held, "avx2", "4x4, 128->128", "float32"), got)
        # the kernels column names the peers' ISA
        text = "\n".join(perf_table.main_table(rs))
        self.assertIn("| CT2 | avx2 | 125m | float32 | 1x1, 128->128 | 75.0 |", text)
        self.assertIn("| CT2 | native | 125m | float32 | 1x1, 128->128 | 90.0 |", text)

    def test_openvino_rows(self):
        def ov_report(dtype, B, S, tps):
            doc = bench_report(None, dtype, B, S, 10.0, tps=tps)
            doc.update(backend="worker", backend_settings={"command": "tools/peers-worker openvino", "env": ""})
            doc["cases"][0]["backend"] = "worker"
            del doc["environment"]
            return doc
        one, sixteen = (1, 1, 128, 128), (4, 4, 128, 128)
        docs = [bench_report("avx512_bf16", "bfloat16", 1, 1, 5.0, tps=130.0),
                bench_report("avx512_bf16", "bfloat16", 4, 4, 12.0, tps=400.0),
                bench_report("avx512_bf16", "int8", 4, 4, 12.0, tps=420.0),
                ov_report("float32", 1, 1, 40.0), ov_report("bfloat16", 1, 1, 65.0),
                ov_report("bfloat16", 4, 4, 200.0)]
        rs = []
        for doc in docs:
            rs += rows(doc)
        perf_table.add_metrics(rs, 50.0, {"avx512": 200.0, "avx512_bf16": 300.0})

        def row(engine, dtype, shape):
            return [r for r in rs if r["engine"] == engine and r["dtype"] == dtype and r["shape"] == shape][0]
        self.assertEqual(row("OV", "float32", one)["family"], "native")
        self.assertAlmostEqual(row("benchctl", "bfloat16", one)["vs_ov"], 130.0 / 65.0)
        self.assertAlmostEqual(row("benchctl", "bfloat16", sixteen)["vs_ov"], 400.0 / 200.0)
        self.assertIsNone(row("benchctl", "int8", sixteen)["vs_ov"])  # OV ran no int8
        self.assertAlmostEqual(row("OV", "bfloat16", one)["vs_fp32"], 65.0 / 40.0)
        lines = perf_table.main_table(rs)
        self.assertIn("| vs HF | vs OV | vs CT2 |", lines[0])
        self.assertEqual(len(lines[0].split("|")), len(lines[1].split("|")))
        bench = [x for x in lines if x.startswith("| benchctl | avx512_bf16 | 125m | bfloat16 | 1x1")][0]
        self.assertEqual(len(bench.split("|")), len(lines[0].split("|")))
        self.assertIn("| 2.00 |", bench)
        self.assertIn("| OV | native | 125m | bfloat16 | 1x1, 128->128 | 65.0 |", "\n".join(lines))
        out = os.path.join(tempfile.mkdtemp(), "t.md")
        paths = [write(os.path.dirname(out), "r%d.json" % i, d) for i, d in enumerate(docs)]
        with open(os.devnull, "w") as null:
            stdout, sys.stdout = sys.stdout, null
            try:
                perf_table.main(["--markdown", out] + paths)
            finally:
                sys.stdout = stdout
        with open(out) as f:
            engines = [x.split("|")[1].strip() for x in f.read().splitlines() if x.startswith("| ") and "125m" in x]
        self.assertLess(engines.index("benchctl"), engines.index("OV"))


if __name__ == "__main__":
    unittest.main()
