#!/usr/bin/env python3
"""test_step_parts.py: checks tools/bench/step_parts.py with the standard
library (ctest: pyworker_step_parts):
- perf report lines are read into samples per user-mode symbol, kernel-mode
  symbols left out;
- symbols fall into linear, attention and rest by name;
- decode samples are the long rollout's minus the short one's, per part;
- each part's bound is the larger of its bytes over the bandwidth and its
  flops over the FMA peak, by hand for an OPT-125m 16-row step;
- the table's times are the parts' shares of the step.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_table  # noqa: E402
import step_parts  # noqa: E402

REPORT = """# Samples: 1K of event 'cpu-clock'
#
# Overhead  Samples  Symbol
# ........  .......  ......
#
    60.00%      600  [.] col_tile_16x24
    10.00%      100  [.] col_pack_row
    10.00%      100  [.] score_group_avx512
     5.00%       50  [k] clear_page_erms
     5.00%       50  [.] layernorm_forward
    10.00%      100  [.] row_bf16_4
"""


class StepParts(unittest.TestCase):
    def test_report_lines(self):
        s = step_parts.parse_report(REPORT)
        self.assertEqual(s, {"col_tile_16x24": 600, "col_pack_row": 100, "score_group_avx512": 100,
                             "layernorm_forward": 50, "row_bf16_4": 100})

    def test_part_of(self):
        for sym in ("col_tile_32x12_w", "col_pack_row", "eng_linear_cols", "eng_cols_transpose_8x8",
                    "row_i8_2", "linear_avx2", "tile_f32_4_4", "eng_linear_row.constprop.0", "store_rows.isra.0",
                    "panel_chunk", "linear_cols_by_group"):
            self.assertEqual(step_parts.part_of(sym), "linear", sym)
        for sym in ("score_avx2", "vsum_group_avx512", "softmax_avx512", "attend_split_avx2",
                    "eng_attend_group_run", "attention_worker"):
            self.assertEqual(step_parts.part_of(sym), "attention", sym)
        for sym in ("layernorm_forward", "eng_sample", "worker_main", "f32_to_bf16_avx512",
                    "eng_rollout_sample_row"):
            self.assertEqual(step_parts.part_of(sym), "rest", sym)

    def test_decode_parts(self):
        long_run = {"col_tile_16x24": 900, "score_avx2": 300, "eng_sample": 40, "fill_chunk": 500}
        short_run = {"col_tile_16x24": 100, "score_avx2": 20, "fill_chunk": 510}
        # fill_chunk (weight synthesis) cancels; its -10 lowers rest to 30
        self.assertEqual(step_parts.decode_parts(long_run, short_run),
                         {"linear": 800, "attention": 280, "rest": 30})

    def test_bounds_by_hand(self):
        r = {"shape": (4, 4, 128, 128), "cfg": perf_table.OPT125M, "dtype": "float32"}
        gbs, peak = 32.0, 100.0
        lin, att, serial, whole = step_parts.part_bounds(r, gbs, peak)
        w = perf_table.opt_decode_read_bytes(1)  # weights read by a step, in elements
        kv = 2 * 12 * 768 * 4 * (4 * 128 + 16 * 64)  # K and V, 12 layers, fp32, tokens read
        flops = 4 * 12 * 768 * 16 * (128 + 64)
        # fp32 at 16 rows on these probes: linear is FMA-bound (32 w flops at
        # 100 GFLOP/s against 4 w bytes at 32 GB/s), attention bandwidth-bound
        self.assertAlmostEqual(lin, 32 * w / 100e6, places=6)
        self.assertAlmostEqual(att, kv / 32e6, places=6)
        self.assertGreater(att, flops / 100e6)
        self.assertAlmostEqual(serial, lin + att, places=9)
        self.assertAlmostEqual(whole, max((4 * w + kv) / 32e6, (32 * w + flops) / 100e6), places=6)
        # one part compute-bound, the other memory-bound: overlapped they are faster
        self.assertLess(whole, serial)

    def test_table_shares(self):
        r = {"shape": (4, 4, 128, 128), "cfg": perf_table.OPT125M, "dtype": "float32", "kernels": "avx2",
             "model": "125m"}
        lines = step_parts.table([{"row": r, "parts": {"linear": 75, "attention": 20, "rest": 5}, "step": 40.0}],
                                 32.0, {"avx2": 200.0})
        self.assertEqual(len(lines), 3)
        cells = [c.strip() for c in lines[2].strip("|").split("|")]
        self.assertEqual(cells[:4], ["avx2", "float32", "16", "40.00"])
        self.assertTrue(cells[4].startswith("30.00 / "), cells[4])
        self.assertTrue(cells[5].startswith("8.00 / "), cells[5])
        self.assertEqual(cells[6], "2.00")


if __name__ == "__main__":
    unittest.main()
