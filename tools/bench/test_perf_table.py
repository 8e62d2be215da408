#!/usr/bin/env python3
"""test_perf_table.py: checks tools/bench/perf_table.py with the standard
library (ctest: pyworker_perf_table):
- OPT-125m's parameter count is the published 125,239,296 and the decode-step
  read bytes are derived from it;
- each case's engine comes from its backend label, else from the run's
  backend (a worker's from the last word of its command), CT2's compute type
  from its settings;
- the decode step is (generation_ms - prefill_forward_ms) / num_decode_forwards.
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


class PerfTable(unittest.TestCase):
    def test_opt125m_sizes(self):
        self.assertEqual(perf_table.opt_param_count(), 125239296)
        self.assertEqual(perf_table.opt_decode_read_bytes(1), 125239296 - 2050 * 768 + 768 + 768)
        self.assertEqual(perf_table.opt_decode_read_bytes(4), 4 * perf_table.opt_decode_read_bytes(1))

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


if __name__ == "__main__":
    unittest.main()
