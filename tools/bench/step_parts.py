#!/usr/bin/env python3
"""step_parts.py: where a decode step's time goes, part by part, each part
against its own bound (docs/performance.md, "A decode step, part by part").
Standard library only; reads what tools/bench/step_parts.sh wrote.

For each case (kernel family x precision x shape) step_parts.sh profiled two
rollouts with `perf record -e cpu-clock`: one of R response tokens and one of
2, the same prefill. A symbol's decode samples are its samples in the long
rollout minus those in the short one, so the prefill, the weight synthesis
and the start-up cancel. Symbols fall into three parts by name (PARTS):
  linear     the GEMM kernels (column tiles, panel packing, x's transposition,
             the direct path's row tiles);
  attention  scores, softmax and the sum of V (attend, attend_split,
             attend_group and their parts);
  rest       everything else the engine runs in a step (layer norms,
             sampling, the pool, the KV cache's stores).
Kernel-mode samples are left out: they are mostly the first touch of the KV
cache's pages, which the profiled rollouts (no warmup) pay in their decode
steps and a measured iteration, reusing the retained cache, does not.
Each part's share of the decode samples times the case's decode step (ms,
perf_table.step_ms: from the profiled run itself, or from a quiet run's JSON
given with --steps) is the part's time per step.

Bounds per step, from the bandwidth and FMA-peak probes (perf_table's):
  linear     max(weight bytes / bandwidth, 2 x rows x weights / FMA peak)
  attention  max(KV cache bytes / bandwidth, attention flops / FMA peak)
  serial     linear bound + attention bound: the fastest a step could be
             with each part at its own limit, one after the other (as the
             engine runs them);
  max        max(all bytes / bandwidth, all flops / FMA peak): perf_table's
             bound (target 4 of docs/performance.md), which needs the parts' memory
             reads and FMAs overlapped.

Usage: step_parts.py PROFILE_DIR --bandwidth B.json --fmapeak F.json
                     [--steps RUN_DIR] [--threads N]
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_table  # noqa: E402

# (part, regular expression matched at the start of a symbol), first match wins
PARTS = [
    ("linear", r"(col_tile|col_pack|eng_linear|eng_cols_|row_(f32|bf16|f16|i8)_|linear_|tile_|panel_chunk|store_rows?\b|pack_x)"),
    ("attention", r"(score|vsum|softmax|attend|eng_attend|attention_worker)"),
]


def part_of(symbol):
    for name, pattern in PARTS:
        if re.match(pattern, symbol):
            return name
    return "rest"


def perf_samples(path):
    """{symbol: samples} of one perf.data (perf report -n --sort symbol),
    user-mode symbols only."""
    out = subprocess.run(["perf", "report", "-i", path, "-n", "--sort", "symbol", "--stdio"],
                         capture_output=True, text=True, check=True).stdout
    return parse_report(out)


def parse_report(text):
    samples = {}
    for line in text.splitlines():
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+\[(.)\]\s+(\S+)", line)
        if m and m.group(2) != "k":
            samples[m.group(3)] = samples.get(m.group(3), 0) + int(m.group(1))
    return samples


def decode_parts(long_run, short_run):
    """{part: decode samples}: long_run's samples minus short_run's, per part
    (a part's difference below zero counts as zero)."""
    parts = {"linear": 0, "attention": 0, "rest": 0}
    for sym in set(long_run) | set(short_run):
        parts[part_of(sym)] += long_run.get(sym, 0) - short_run.get(sym, 0)
    return {k: max(v, 0) for k, v in parts.items()}


def part_bounds(r, gbs, peak):
    """(linear bound, attention bound, serial bound, max bound) in ms for one
    decode step of row r (perf_table's row dict)."""
    B, S = r["shape"][:2]
    cfg = r["cfg"]
    w_bytes = perf_table.opt_decode_read_bytes(perf_table.ELEM_BYTES[r["dtype"]], cfg)
    w_flops = 2.0 * B * S * perf_table.opt_decode_read_bytes(1, cfg)
    kv_bytes = perf_table.opt_decode_kv_bytes(r["shape"], perf_table.KV_ELEM_BYTES[r["dtype"]], cfg)
    a_flops = perf_table.opt_decode_attention_flops(r["shape"], cfg)
    bw = gbs * 1e9 / 1e3  # bytes per ms
    fl = peak * 1e9 / 1e3  # flops per ms
    linear = max(w_bytes / bw, w_flops / fl)
    attention = max(kv_bytes / bw, a_flops / fl)
    whole = max((w_bytes + kv_bytes) / bw, (w_flops + a_flops) / fl)
    return linear, attention, linear + attention, whole


def row_key(r):
    return (r["kernels"], r["dtype"], r["shape"], r["model"])


def quiet_steps(steps_dir):
    """{row_key: decode step (ms)} of a run_performance.sh directory's
    measured benchctl rows, read once."""
    steps = {}
    for path in glob.glob(os.path.join(steps_dir, "benchctl_*.json")):
        for x in perf_table.rows_from(path)[1]:
            if x["ok"]:
                steps[row_key(x)] = x["step"]
    return steps


def table(cases, gbs, peaks):
    """Markdown lines: one row per case dict {row, parts, step}."""
    out = ["| kernels | dtype | rows | step ms | linear ms / bound | attention ms / bound | rest ms "
           "| serial bound ms | step / serial | max bound ms | step / max |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        r, parts, step = c["row"], c["parts"], c["step"]
        total = sum(parts.values())
        peak = perf_table.row_fma_peak(r, peaks)
        if not (total and step and gbs and peak):
            continue
        lb, ab, serial, whole = part_bounds(r, gbs, peak)
        ms = {k: step * v / total for k, v in parts.items()}
        B, S = r["shape"][:2]
        out.append("| %s | %s | %d | %.2f | %.2f / %.2f (%.2fx) | %.2f / %.2f (%.2fx) | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            r["kernels"], r["dtype"], B * S, step, ms["linear"], lb, ms["linear"] / lb, ms["attention"], ab,
            ms["attention"] / ab, ms["rest"], serial, step / serial, whole, step / whole))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile_dir")
    ap.add_argument("--bandwidth", action="append", default=[], required=True)
    ap.add_argument("--fmapeak", action="append", default=[], required=True)
    ap.add_argument("--steps", help="a run_performance.sh output directory: take the decode steps from it")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    gbs = perf_table.best_bandwidth(a.bandwidth, a.threads)
    peaks = perf_table.fma_peaks(a.fmapeak, a.threads)
    steps = quiet_steps(a.steps) if a.steps else None
    cases = []
    for long_data in sorted(glob.glob(os.path.join(a.profile_dir, "*_long.data"))):
        tag = long_data[:-len("_long.data")]
        _, rows = perf_table.rows_from(tag + "_long.json")
        if not rows or not rows[0]["ok"]:
            print("step_parts: %s: no measured case, left out" % tag, file=sys.stderr)
            continue
        r = rows[0]
        step = steps.get(row_key(r)) if steps is not None else r["step"]
        if step is None:
            print("step_parts: %s: no decode step for this case%s, left out" %
                  (tag, " in " + a.steps if steps is not None else ""), file=sys.stderr)
            continue
        parts = decode_parts(perf_samples(long_data), perf_samples(tag + "_short.data"))
        cases.append({"row": r, "parts": parts, "step": step})
    print("\n".join(table(cases, gbs, peaks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
