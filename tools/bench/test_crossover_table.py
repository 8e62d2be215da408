#!/usr/bin/env python3
"""test_crossover_table.py: checks tools/bench/crossover_table.py with the
standard library (ctest: pyworker_crossover_table), on a step.txt written
here in bench_kernels' format:
- every column (model, family, dtype) with its load average before and after;
- x1 -> 64 is 64 x t(1) / t(64), the knee the first M above 1.5 t(1), the
  path ratio t(16) / t(8) on the avx512 families and t(8) / t(4) on avx2,
  and the first many-row M that beats the few-row path in chunks (or none);
- 1 -> 2 threads at M = 1 and at the largest M;
- the header from machine.txt and the bandwidth JSONs; no rows: exit 1.
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crossover_table  # noqa: E402

ROWS = (1, 2, 4, 8, 16, 32, 64)


def step_lines(model, fam, dt, ms_of, threads=(1, 2), load=("1.00 0.90 0.80", "1.10 0.95 0.82")):
    lines = ["# load %s before %s %s %s" % (load[0], model, fam, dt)]
    for th in threads:
        for m in ROWS:
            lines.append("step %s %-11s %-8s M=%d threads=%d: %9.3f ms  %7.1f GB/s" % (model, fam, dt, m, th,
                                                                                      ms_of(m, th), 10.0))
    lines.append("# load %s after" % load[1])
    return lines


def flat_then_compute(m, th):
    """10 ms up to 8 rows (a weight stream), then 1 ms a row; 2 threads 1.6x faster."""
    return (10.0 if m <= 8 else 10.0 + (m - 8) * 1.0) / (1.6 if th == 2 else 1.0)


def avx2_ms(m, th):
    return {1: 20.0, 2: 20.0, 4: 21.0, 8: 19.0, 16: 31.0, 32: 45.0, 64: 80.0}[m] / (1.5 if th == 2 else 1.0)


class CrossoverTable(unittest.TestCase):
    def test_parse_and_figures(self):
        lines = step_lines("125m", "avx512", "float32", flat_then_compute) + step_lines("125m", "avx2", "bfloat16", avx2_ms)
        cols = crossover_table.parse(lines)
        self.assertEqual(list(cols), [("125m", "avx512", "float32"), ("125m", "avx2", "bfloat16")])
        c = cols[("125m", "avx512", "float32")]
        self.assertEqual(c["load"], ["1.00 0.90 0.80", "1.10 0.95 0.82"])
        self.assertAlmostEqual(c["t"][(16, 1)], 18.0)
        x64, knee, path, over = crossover_table.column_figures(c["t"], "avx512", 1, list(ROWS))
        self.assertAlmostEqual(x64, 64 * 10.0 / 66.0, places=3)
        self.assertEqual(knee, 16)  # 18 ms > 15 ms
        self.assertEqual(path[:2], (8, 16))
        self.assertAlmostEqual(path[2], 18.0 / 10.0)
        self.assertEqual(over, 16)  # 18 ms < 2 x 10 ms
        x64, knee, path, over = crossover_table.column_figures(cols[("125m", "avx2", "bfloat16")]["t"], "avx2", 1,
                                                               list(ROWS))
        self.assertEqual(path[:2], (4, 8))  # avx2's column path starts at 8 rows
        self.assertAlmostEqual(path[2], 19.0 / 21.0)
        self.assertEqual(knee, 16)  # 31 > 1.5 x 20
        self.assertEqual(over, 8)  # 19 < 2 x 21
        # a many-row path that never beats the few-row one in chunks
        slow = {(m, 1): (5.0 if m <= 8 else 3.0 * m) for m in ROWS}
        self.assertIsNone(crossover_table.column_figures(slow, "avx512", 1, list(ROWS))[3])

    def test_tables_and_main(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "step.txt"), "w") as f:
            f.write("\n".join(step_lines("qwen0.5b", "avx512_bf16", "bfloat16", flat_then_compute)) + "\n")
        with open(os.path.join(d, "machine.txt"), "w") as f:
            f.write("date_utc: 2026-12-02T01:50:00Z\nisa flags: avx2 avx512f avx512_bf16\n")
        with open(os.path.join(d, "bandwidth_before.json"), "w") as f:
            json.dump({"results": [{"threads": 1, "best_gb_per_s": 20.0}, {"threads": 2, "best_gb_per_s": 30.5}]}, f)
        out = os.path.join(d, "table.md")
        with open(out, "w") as f:
            stdout, sys.stdout = sys.stdout, f
            try:
                rc = crossover_table.main([d])
            finally:
                sys.stdout = stdout
        self.assertEqual(rc, 0)
        text = open(out).read()
        self.assertIn("    date_utc: 2026-12-02T01:50:00Z", text)
        self.assertIn("read bandwidth before (best pass): 1 thread 20.0 GB/s, 2 threads 30.5 GB/s", text)
        self.assertIn("**qwen0.5b, 1 thread**", text)
        self.assertIn("**qwen0.5b, 2 threads**", text)
        self.assertIn("| rows | avx512_bf16 bfloat16 |", text)
        self.assertIn("| 16 | 18.00 |", text)
        self.assertIn("| 1 -> 2 thr, M=1 | 1.60 |", text)
        self.assertIn("| 1 -> 2 thr, M=64 | 1.60 |", text)
        self.assertIn("| path | 8->16: 1.80 |", text)
        self.assertIn("| overtakes | 16 |", text)
        self.assertIn("| load | 1.00 0.90 0.80 / 1.10 0.95 0.82 |", text)
        # no step lines: exit 1
        with open(os.path.join(d, "step.txt"), "w") as f:
            f.write("# load 1 1 1 before 125m amx bfloat16\n")
        with open(os.devnull, "w") as null:
            stdout, sys.stdout = sys.stdout, null
            try:
                self.assertEqual(crossover_table.main([d]), 1)
            finally:
                sys.stdout = stdout


if __name__ == "__main__":
    unittest.main()
