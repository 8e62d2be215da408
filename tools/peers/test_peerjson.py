#!/usr/bin/env python3
"""test_peerjson.py: checks tools/peers/peerjson.py and compare.py without
torch or CTranslate2 (standard library only):
  python3 tools/peers/test_peerjson.py
- statistics use benchctl's definitions (the seed's reference: 1..20 gives
  mean 10.5, p50 10.5, p95 19);
- OPT-125m's parameter count is the published 125,239,296 and the decode-step
  read bytes are derived from it;
- a report in benchctl's own shape (no peer block, no decode_step_ms) gets its
  decode step from prefill_forward_ms and num_decode_forwards in compare.py.
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import peerjson  # noqa: E402


class Stats(unittest.TestCase):
    def test_seed_reference(self):
        s = peerjson.stats(range(1, 21))
        self.assertEqual((s["n"], s["mean"], s["p50"], s["p95"], s["min"], s["max"]), (20, 10.5, 10.5, 19, 1, 20))

    def test_odd_and_nulls(self):
        s = peerjson.stats([3.0, None, 1.0, 2.0])
        self.assertEqual((s["n"], s["p50"], s["p95"]), (3, 2.0, 3.0))
        self.assertAlmostEqual(s["stddev"], (2.0 / 3.0) ** 0.5)

    def test_empty_is_null(self):
        self.assertIsNone(peerjson.stats([None])["mean"])


class Sizes(unittest.TestCase):
    def test_opt125m(self):
        self.assertEqual(peerjson.opt_param_count(), 125239296)
        # all parameters, minus the position table but its one read row, plus
        # the token's embedding row (read for the lookup besides lm_head's read)
        self.assertEqual(peerjson.opt_decode_read_bytes(1), 125239296 - 2050 * 768 + 768 + 768)
        self.assertEqual(peerjson.opt_decode_read_bytes(4), 4 * peerjson.opt_decode_read_bytes(1))


class Records(unittest.TestCase):
    def test_derived_fields(self):
        r = peerjson.profile_record(1.0, 1000.0, 2.0, 512, prefill_forward_ms=100.0, decode_forward_ms=800.0,
                                    num_decode_forwards=127)
        self.assertEqual(r["total_ms"], 1003.0)
        self.assertEqual(r["tokens_per_second"], 512.0)
        self.assertEqual(r["generation_overhead_ms"], 100.0)
        self.assertIsNone(peerjson.profile_record(0, 10.0, 0, 1)["generation_overhead_ms"])


class CompareBenchctlShape(unittest.TestCase):
    def test_step_from_prefill(self):
        recs = [peerjson.profile_record(0.1, g, 0.1, 128, prefill_forward_ms=20.0, decode_forward_ms=g - 25.0,
                                        num_decode_forwards=127) for g in (1290.0, 1300.0, 1310.0)]
        case = peerjson.case_object(0, "bf16", 1, 1, 128, 128, 128, recs, 10.0, 5000.0)
        for p in case["profiles"]:  # benchctl's reports have neither peer column
            del p["decode_step_ms"], p["first_token_ms"]
        doc = {"model": "m", "backend": "opt", "cases": [case]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "benchctl.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            _, rows = compare.rows_from(path)
        self.assertEqual(rows[0]["engine"], "benchctl")
        self.assertEqual(rows[0]["dtype"], "bfloat16")
        self.assertAlmostEqual(rows[0]["step"], (1300.0 - 20.0) / 127)
        self.assertAlmostEqual(rows[0]["tps"], 128 / 1.3)


if __name__ == "__main__":
    unittest.main()
